// Package yamlargs reads a tool call's arguments written as a YAML mapping, as the
// agent configuration (a scripted reply's calls) and policy test files write them.
//
// It is its own package because both formats must read arguments the same way (a
// number as written, keys in order), and package yamlstrict, which reads the YAML
// itself, knows nothing of tool calls.
package yamlargs

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/yamlstrict"
)

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// Args converts the YAML mapping n to warden.Args, keeping the key order: strings stay
// strings, numbers stay numbers (as written when the text is a JSON number), booleans
// and null are themselves, nested mappings and lists are objects and arrays. Every
// problem is recorded in d; where names n in messages.
func Args(d *yamlstrict.Decoder, n *yaml.Node, where string) warden.Args {
	var a warden.Args
	kvs, _ := d.Mapping(n, where)
	for _, kv := range kvs {
		a = a.With(kv.Key, value(d, kv.Value, where+"."+kv.Key))
	}
	return a
}

func value(d *yamlstrict.Decoder, n *yaml.Node, where string) any {
	switch n.Kind {
	case yaml.MappingNode:
		return Args(d, n, where)
	case yaml.SequenceNode:
		out := []any{}
		for i, c := range n.Content {
			out = append(out, value(d, c, fmt.Sprintf("%s[%d]", where, i)))
		}
		return out
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!timestamp": // a date is text to a tool
			return n.Value
		case "!!null":
			return nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				d.Fail(n, "write true or false", "%s: %v", where, err)
			}
			return b
		case "!!int", "!!float":
			if jsonNumber.MatchString(n.Value) {
				return json.Number(n.Value)
			}
			var f any
			if err := n.Decode(&f); err == nil {
				switch v := f.(type) {
				case int:
					return json.Number(strconv.Itoa(v))
				case int64:
					return json.Number(strconv.FormatInt(v, 10))
				case uint64:
					return json.Number(strconv.FormatUint(v, 10))
				case float64:
					if !math.IsInf(v, 0) && !math.IsNaN(v) {
						return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
					}
				}
			}
			d.Fail(n, "write a decimal number, or quote it to make it a string", "%s: %q is not a JSON number", where, n.Value)
			return nil
		}
	}
	d.Fail(n, "use a string, number, boolean, null, mapping or list", "%s: unsupported value %s", where, n.ShortTag())
	return nil
}
