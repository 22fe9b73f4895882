// Package yamlstrict decodes YAML configuration files strictly from their node trees.
//
// A [Decoder] collects every problem it finds as a located *[warden.ConfigError] (file,
// line, column, message and a hint on how to fix it) instead of stopping at the first
// one. It refuses more than one YAML document, anchors and aliases, duplicate mapping
// keys and values of the wrong type. What keys a file holds and what they mean is left
// to the caller: this package only reads mappings, strings and lists of strings.
package yamlstrict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
)

// Decoder collects the located errors found while decoding one file. The zero value
// with File set is ready to use; the other fields make it stricter.
type Decoder struct {
	// File names the file in every error.
	File string
	// Errs holds the errors found so far, in the order they were found.
	Errs []error

	// StringKeys refuses mapping keys that are YAML scalars but not strings (numbers,
	// booleans, null), naming what they are.
	StringKeys bool
	// ListHint, when set, replaces the hint given when a value that must be a list of
	// strings is not a list.
	ListHint string
	// NonBlankItems refuses list items that are empty or only whitespace.
	NonBlankItems bool
}

// Doc describes a kind of file for the messages [Decoder.Document] writes.
type Doc struct {
	// Name is what the file is, as in "policy file is empty".
	Name string
	// Plural names such files, as in "YAML anchors and aliases are not allowed in policy files".
	Plural string
	// EmptyHint says how to start an empty file.
	EmptyHint string
	// BlankHint is the hint for a document with no content; EmptyHint when empty.
	BlankHint string
	// MultiHint is the hint for a file holding more than one document.
	MultiHint string
	// TabHint, when set, replaces the hint for a syntax error on a line holding a tab.
	TabHint string
}

// Located returns a *warden.ConfigError in file at n's position (none when n is nil).
func Located(file string, n *yaml.Node, msg, hint string) *warden.ConfigError {
	e := &warden.ConfigError{File: file, Msg: msg, Hint: hint}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// Fail records an error at n's position (none when n is nil) with a message made from
// format and args, and hint.
func (d *Decoder) Fail(n *yaml.Node, hint, format string, args ...any) {
	d.Errs = append(d.Errs, Located(d.File, n, fmt.Sprintf(format, args...), hint))
}

// Err returns the errors found so far joined with [errors.Join], or nil.
func (d *Decoder) Err() error { return errors.Join(d.Errs...) }

// Document decodes exactly one YAML document and returns its root node, or nil after
// recording why not: the file is empty, is not valid YAML, holds a second document, or
// uses an anchor or alias.
func (d *Decoder) Document(data []byte, doc Doc) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var top yaml.Node
	if err := dec.Decode(&top); err != nil {
		if err == io.EOF {
			d.Errs = append(d.Errs, &warden.ConfigError{File: d.File, Line: 1, Column: 1, Msg: doc.Name + " is empty", Hint: doc.EmptyHint})
			return nil
		}
		e := &warden.ConfigError{File: d.File, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: "), Hint: "fix the YAML syntax"}
		e.Line, e.Column = ErrorPosition(data, err)
		if e.Column > 0 && doc.TabHint != "" {
			e.Hint = doc.TabHint
		}
		d.Errs = append(d.Errs, e)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		line, col := 0, 0
		if err == nil {
			line, col = extra.Line, extra.Column
			if len(extra.Content) > 0 {
				line, col = extra.Content[0].Line, extra.Content[0].Column
			}
		}
		d.Errs = append(d.Errs, &warden.ConfigError{File: d.File, Line: line, Column: col, Msg: "more than one YAML document", Hint: doc.MultiHint})
		return nil
	}
	if len(top.Content) == 0 {
		hint := doc.BlankHint
		if hint == "" {
			hint = doc.EmptyHint
		}
		d.Fail(&top, hint, "%s is empty", doc.Name)
		return nil
	}
	root := top.Content[0]
	if !d.noAliases(root, doc.Plural) {
		return nil
	}
	return root
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// ErrorPosition locates a YAML syntax error. The parser's errors carry a line but no
// column; when that line holds a tab (YAML forbids tabs in indentation, the commonest
// syntax error), the 1-based column of the first one is the position. Both are 0 when
// err names no line.
func ErrorPosition(data []byte, err error) (line, column int) {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, 0
	}
	line, _ = strconv.Atoi(m[1])
	lines := strings.Split(string(data), "\n")
	if line >= 1 && line <= len(lines) {
		if i := strings.IndexByte(lines[line-1], '\t'); i >= 0 {
			column = i + 1
		}
	}
	return line, column
}

func (d *Decoder) noAliases(n *yaml.Node, plural string) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.Fail(n, "write the value out in full", "YAML anchors and aliases are not allowed in %s", plural)
		return false
	}
	for _, c := range n.Content {
		if !d.noAliases(c, plural) {
			return false
		}
	}
	return true
}

// KV is one mapping entry with its nodes.
type KV struct {
	Key     string
	KeyNode *yaml.Node
	Value   *yaml.Node
}

// Mapping returns the entries of a mapping node in order, reporting a non-mapping and
// duplicate keys (which are left out). where names the value in messages ("the top
// level", "rules", ...). The result is false when n is not a mapping.
func (d *Decoder) Mapping(n *yaml.Node, where string) ([]KV, bool) {
	return d.MappingHint(n, where, "write it as `key: value` lines")
}

// MappingHint is [Decoder.Mapping] with the hint given when n is not a mapping.
func (d *Decoder) MappingHint(n *yaml.Node, where, hint string) ([]KV, bool) {
	if n.Kind != yaml.MappingNode {
		d.Fail(n, hint, "%s must be a mapping, got %s", where, KindName(n))
		return nil, false
	}
	var out []KV
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case d.StringKeys && k.Kind == yaml.ScalarNode && k.ShortTag() != "!!str":
			// 123:, true:, null: would otherwise become the names "123", "true", "null"
			// without the author having written a string.
			d.Fail(k, fmt.Sprintf("quote it to make it a string: %s:", strconv.Quote(k.Value)), "%s: keys must be strings, got %s", where, KindName(k))
			continue
		case d.StringKeys && k.Kind != yaml.ScalarNode:
			d.Fail(k, "use a plain string key", "%s: keys must be strings, got %s", where, KindName(k))
			continue
		case k.Kind != yaml.ScalarNode:
			d.Fail(k, "use a plain string key", "%s: keys must be strings", where)
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			d.Fail(k, fmt.Sprintf("remove one of them; the first is at line %d", prev.Line), "duplicate key %q in %s", k.Value, where)
			continue
		}
		seen[k.Value] = k
		out = append(out, KV{Key: k.Value, KeyNode: k, Value: v})
	}
	return out, true
}

// KindName names what a node is for messages: "a mapping", "a list", "a string",
// "a number", "a boolean", "null", "a scalar" or "an unsupported value".
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		}
		return "a scalar"
	}
	return "an unsupported value"
}

// Str returns a string value, reporting any other kind of value.
func (d *Decoder) Str(n *yaml.Node, where string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.Fail(n, "quote it to make it a string", "%s must be a string, got %s", where, KindName(n))
		return "", false
	}
	return n.Value, true
}

// NonEmpty is [Decoder.Str] that also refuses a blank string.
func (d *Decoder) NonEmpty(n *yaml.Node, where string) (string, bool) {
	s, ok := d.Str(n, where)
	if ok && strings.TrimSpace(s) == "" {
		d.Fail(n, "give it a value or leave the key out", "%s is empty", where)
		return "", false
	}
	return s, ok
}

// Bool returns a YAML boolean (true or false), reporting any other value, including
// the strings "yes" and "no".
func (d *Decoder) Bool(n *yaml.Node, where string) (bool, bool) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.Fail(n, "write true or false", "%s must be true or false, got %s", where, KindName(n))
		return false, false
	}
	return b, true
}

// Int returns a whole number of at least min, reporting any other value.
func (d *Decoder) Int(n *yaml.Node, where string, min int64) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.Fail(n, "write a whole number", "%s must be a whole number, got %s", where, KindName(n))
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil || v < min {
		d.Fail(n, fmt.Sprintf("write a whole number of at least %d", min), "%s: %s is out of range", where, n.Value)
		return 0, false
	}
	return v, true
}

// Known returns the entries of a mapping whose keys are in known, reporting the
// others as unknown keys (with a suggestion when one is close).
func (d *Decoder) Known(n *yaml.Node, where string, known []string) []KV {
	kvs, _ := d.Mapping(n, where)
	out := kvs[:0:0]
	for _, kv := range kvs {
		if !slices.Contains(known, kv.Key) {
			d.Fail(kv.KeyNode, "known keys in "+where+": "+strings.Join(known, ", ")+Suggest(kv.Key, known), "unknown key %q in %s", kv.Key, where)
			continue
		}
		out = append(out, kv)
	}
	return out
}

// StrList returns a list of strings, reporting a value that is not a list and every
// item that is not a string (or is blank, with [Decoder.NonBlankItems]). The list holds
// an entry for every item; the result is false when anything was reported.
func (d *Decoder) StrList(n *yaml.Node, where string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		hint := d.ListHint
		if hint == "" {
			hint = `write a list such as ["a", "b"] or one "- item" per line`
		}
		d.Fail(n, hint, "%s must be a list of strings, got %s", where, KindName(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, item := range n.Content {
		at := fmt.Sprintf("%s[%d]", where, i)
		s, good := d.Str(item, at)
		if good && d.NonBlankItems && strings.TrimSpace(s) == "" {
			d.Fail(item, "remove the empty item", "%s is empty", at)
			good = false
		}
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// StrListMap decodes {key: [strings]}, leaving out the keys whose list has a problem. The
// second map holds each kept key's list node, so that its items can be located.
func (d *Decoder) StrListMap(n *yaml.Node, where string) (map[string][]string, map[string]*yaml.Node) {
	entries, ok := d.Mapping(n, where)
	if !ok {
		return nil, nil
	}
	out := map[string][]string{}
	nodes := map[string]*yaml.Node{}
	for _, e := range entries {
		l, ok := d.StrList(e.Value, where+"."+e.Key)
		if ok {
			out[e.Key] = l
			nodes[e.Key] = e.Value
		}
	}
	return out, nodes
}

// StrMap decodes {key: string}, leaving out the keys whose value is not a string. It
// returns nil when n is not a mapping.
func (d *Decoder) StrMap(n *yaml.Node, where string) map[string]string {
	entries, ok := d.Mapping(n, where)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, e := range entries {
		if s, ok := d.Str(e.Value, where+"."+e.Key); ok {
			out[e.Key] = s
		}
	}
	return out
}

// Suggest returns `; did you mean "x"?` for the known key closest to key within two
// edits, or "" when none is that close. It is meant to end an unknown-key hint.
func Suggest(key string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if dist := editDistance(key, k); dist < bestD {
			best, bestD = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + strconv.Quote(best) + "?"
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
