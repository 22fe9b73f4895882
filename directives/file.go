package directives

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
)

// maxPackSize bounds what ParsePack reads: a pack is configuration, not data.
const maxPackSize = 1 << 20

// LoadPack reads and parses a directives pack file (see [ParsePack]).
func LoadPack(path string) (*Pack, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		return nil, &warden.ConfigError{File: path, Msg: "cannot read directives pack: " + msg, Hint: "check the path and its permissions"}
	}
	return ParsePack(path, data)
}

// ParsePack parses a directives pack; name is the file name used in errors. The format:
//
//	name: <pack name>            # optional string
//	roles:                       # required mapping, role => settings
//	  <role>:
//	    authority:     [strings] # prompt directives (each optional)
//	    boundaries:    [strings]
//	    escalations:   [strings]
//	    model:         string    # role configuration (each optional)
//	    effort:        string
//	    default_modes: [strings]
//	    modes_allow:   [strings]
//	    active:        bool
//
// Parsing is strict: an unknown or duplicate key, a value of the wrong type, an empty
// string in a list, a YAML anchor or alias, or more than one YAML document is an error.
// Every error is a *[warden.ConfigError] naming file, line and column with a hint; when
// there are several they are joined with [errors.Join]. The text is never interpreted:
// directives are not parsed into rules.
func ParsePack(name string, data []byte) (*Pack, error) {
	d := &packDecoder{file: name}
	if len(data) > maxPackSize {
		d.fail(nil, "a directives pack is short prose; split it into several packs", "directives pack is %d bytes, over the %d-byte limit", len(data), maxPackSize)
		return nil, d.err()
	}
	root := d.document(data)
	if root == nil {
		return nil, d.err()
	}
	p := d.pack(root)
	if len(d.errs) > 0 {
		return nil, d.err()
	}
	return p, nil
}

type packDecoder struct {
	file string
	errs []error
}

func (d *packDecoder) err() error { return errors.Join(d.errs...) }

func (d *packDecoder) fail(n *yaml.Node, hint, format string, args ...any) {
	e := &warden.ConfigError{File: d.file, Msg: fmt.Sprintf(format, args...), Hint: hint}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// document decodes exactly one YAML document and returns its root node, or nil after
// recording why not.
func (d *packDecoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			d.errs = append(d.errs, &warden.ConfigError{File: d.file, Line: 1, Column: 1, Msg: "directives pack is empty", Hint: "start with `name:` and a `roles:` mapping"})
			return nil
		}
		e := &warden.ConfigError{File: d.file, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: "), Hint: "fix the YAML syntax"}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Column = firstTabColumn(data, e.Line)
		}
		d.errs = append(d.errs, e)
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
		d.errs = append(d.errs, &warden.ConfigError{File: d.file, Line: line, Column: col, Msg: "more than one YAML document", Hint: "a directives pack holds exactly one document; remove the '---' separator and what follows, or split it into files"})
		return nil
	}
	if len(doc.Content) == 0 {
		d.fail(&doc, "start with `name:` and a `roles:` mapping", "directives pack is empty")
		return nil
	}
	root := doc.Content[0]
	if !d.noAliases(root) {
		return nil
	}
	return root
}

// firstTabColumn returns the 1-based column of the first tab on a line (YAML forbids
// tabs in indentation, the commonest syntax error), or 0.
func firstTabColumn(data []byte, line int) int {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return 0
	}
	if i := strings.IndexByte(lines[line-1], '\t'); i >= 0 {
		return i + 1
	}
	return 0
}

func (d *packDecoder) noAliases(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.fail(n, "write the value out in full", "YAML anchors and aliases are not allowed in directives packs")
		return false
	}
	for _, c := range n.Content {
		if !d.noAliases(c) {
			return false
		}
	}
	return true
}

// entry is one mapping entry with its nodes.
type entry struct {
	key   string
	kNode *yaml.Node
	value *yaml.Node
}

// mapping returns the entries of a mapping node, reporting a non-mapping and duplicate
// keys. where names the value in messages.
func (d *packDecoder) mapping(n *yaml.Node, where, hint string) ([]entry, bool) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, hint, "%s must be a mapping, got %s", where, kindName(n))
		return nil, false
	}
	var out []entry
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.fail(k, "use a plain string key", "%s: keys must be strings, got %s", where, kindName(k))
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			d.fail(k, fmt.Sprintf("remove one of them; the first is at line %d", prev.Line), "duplicate key %q in %s", k.Value, where)
			continue
		}
		seen[k.Value] = k
		out = append(out, entry{key: k.Value, kNode: k, value: v})
	}
	return out, true
}

func kindName(n *yaml.Node) string {
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

func (d *packDecoder) str(n *yaml.Node, where string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.fail(n, "quote it to make it a string", "%s must be a string, got %s", where, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *packDecoder) boolean(n *yaml.Node, where string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.fail(n, "write true or false", "%s must be a boolean, got %s", where, kindName(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.fail(n, "write true or false", "%s must be a boolean: %v", where, err)
		return false, false
	}
	return b, true
}

// strList decodes a list of non-empty strings.
func (d *packDecoder) strList(n *yaml.Node, where string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, `write a list such as ["a", "b"] or one "- item" per line; use [] for none`, "%s must be a list of strings, got %s", where, kindName(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, item := range n.Content {
		at := fmt.Sprintf("%s[%d]", where, i)
		s, good := d.str(item, at)
		if good && strings.TrimSpace(s) == "" {
			d.fail(item, "remove the empty item", "%s is empty", at)
			good = false
		}
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

var (
	topKeys  = []string{"name", "roles"}
	roleKeys = []string{"authority", "boundaries", "escalations", "model", "effort", "default_modes", "modes_allow", "active"}
)

func (d *packDecoder) pack(root *yaml.Node) *Pack {
	p := &Pack{Directives: map[string]RolePromptDirectives{}, Configs: map[string]RoleConfig{}}
	entries, ok := d.mapping(root, "the top level", "write `name: <pack>` and a `roles:` mapping")
	if !ok {
		return p
	}
	var rolesNode *yaml.Node
	for _, e := range entries {
		switch e.key {
		case "name":
			if s, ok := d.str(e.value, "name"); ok {
				p.Name = s
			}
		case "roles":
			rolesNode = e.value
		default:
			d.fail(e.kNode, "allowed keys: "+strings.Join(topKeys, ", ")+suggest(e.key, topKeys), "unknown key %q", e.key)
		}
	}
	if rolesNode == nil {
		d.fail(root, "add a `roles:` mapping with one entry per role", "missing roles")
		return p
	}
	roles, ok := d.mapping(rolesNode, "roles", "write one `<role>:` entry per role")
	if !ok {
		return p
	}
	for _, r := range roles {
		if strings.TrimSpace(r.key) == "" {
			d.fail(r.kNode, "give the role a name", "roles: a role name is empty")
			continue
		}
		dir, cfg := d.role(r.key, r.value)
		p.Directives[r.key] = dir
		p.Configs[r.key] = cfg
	}
	return p
}

func (d *packDecoder) role(name string, n *yaml.Node) (RolePromptDirectives, RoleConfig) {
	var dir RolePromptDirectives
	var cfg RoleConfig
	where := "roles." + name
	entries, ok := d.mapping(n, where, "write the role's settings as `key: value` lines; use `"+name+": {}` for a role with none")
	if !ok {
		return dir, cfg
	}
	for _, e := range entries {
		at := where + "." + e.key
		switch e.key {
		case "authority":
			dir.Authority, _ = d.strList(e.value, at)
		case "boundaries":
			dir.Boundaries, _ = d.strList(e.value, at)
		case "escalations":
			dir.Escalations, _ = d.strList(e.value, at)
		case "model":
			cfg.Model, _ = d.str(e.value, at)
		case "effort":
			cfg.Effort, _ = d.str(e.value, at)
		case "default_modes":
			cfg.DefaultModes, _ = d.strList(e.value, at)
		case "modes_allow":
			cfg.ModesAllow, _ = d.strList(e.value, at)
		case "active":
			if b, ok := d.boolean(e.value, at); ok {
				cfg.Active = &b
			}
		default:
			d.fail(e.kNode, "allowed keys: "+strings.Join(roleKeys, ", ")+suggest(e.key, roleKeys), "unknown key %q in %s", e.key, where)
		}
	}
	return dir, cfg
}

// suggest returns "; did you mean "x"?" for the closest known key within two edits.
func suggest(key string, known []string) string {
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
