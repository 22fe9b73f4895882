package policy

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

// LoadOptions adjust how a policy file is loaded. The zero value is ready to use.
type LoadOptions struct {
	// Role, when set, selects the active role instead of the file's active_role.
	Role string
}

// LoadFile reads and compiles a policy file (see [Parse]).
func LoadFile(path string, opts *LoadOptions) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &warden.ConfigError{File: path, Msg: "cannot read policy file: " + errText(err), Hint: "check the path and its permissions"}
	}
	return Parse(path, data, opts)
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse compiles a policy file's contents; name is used in errors. The file is validated
// strictly: unknown keys, duplicate keys, wrong types, empty or malformed patterns, an
// unknown mode or preset, an active role not in roles, a condition that does not compile,
// YAML aliases, and more than one YAML document are errors. Every error is a
// *[warden.ConfigError] (joined with [errors.Join] when there are several) that names
// the file, line and column and says how to fix it.
func Parse(name string, data []byte, opts *LoadOptions) (*Policy, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	d := &fileDecoder{file: name}
	if len(data) > maxFileSize {
		d.fail(nil, "policy files are small; split generated rules or remove data", "policy file is %d bytes, over the %d-byte limit", len(data), maxFileSize)
		return nil, d.err()
	}
	root := d.document(data)
	if root == nil {
		return nil, d.err()
	}
	f := d.decodeFile(root)
	if len(d.errs) > 0 {
		return nil, d.err()
	}
	p := d.build(f, opts)
	if len(d.errs) > 0 {
		return nil, d.err()
	}
	p.source = name
	return p, nil
}

// maxFileSize bounds what Parse reads: a policy is configuration, not data.
const maxFileSize = 1 << 20

type fileDecoder struct {
	file string
	errs []error
}

func (d *fileDecoder) err() error { return errors.Join(d.errs...) }

func (d *fileDecoder) fail(n *yaml.Node, hint, format string, args ...any) {
	e := &warden.ConfigError{File: d.file, Msg: fmt.Sprintf(format, args...), Hint: hint}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func (d *fileDecoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			d.errs = append(d.errs, &warden.ConfigError{File: d.file, Line: 1, Column: 1, Msg: "policy file is empty", Hint: "start with `version: 1` and define rules, a preset, roles or conditions"})
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
		d.errs = append(d.errs, &warden.ConfigError{File: d.file, Line: line, Column: col, Msg: "more than one YAML document", Hint: "a policy file holds exactly one document; remove the '---' separator and what follows, or split it into files"})
		return nil
	}
	if len(doc.Content) == 0 {
		d.fail(&doc, "start with `version: 1`", "policy file is empty")
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

func (d *fileDecoder) noAliases(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.fail(n, "write the value out in full", "YAML anchors and aliases are not allowed in policy files")
		return false
	}
	for _, c := range n.Content {
		if !d.noAliases(c) {
			return false
		}
	}
	return true
}

// kv is one mapping entry with its nodes.
type kv struct {
	key   string
	kNode *yaml.Node
	value *yaml.Node
}

// mapping returns the entries of a mapping node, reporting a non-mapping or duplicate
// keys. where names the value for messages ("the top level", "rules", ...).
func (d *fileDecoder) mapping(n *yaml.Node, where string) ([]kv, bool) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, "write it as `key: value` lines", "%s must be a mapping, got %s", where, kindName(n))
		return nil, false
	}
	var out []kv
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k, "use a plain string key", "%s: keys must be strings", where)
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			d.fail(k, fmt.Sprintf("remove one of them; the first is at line %d", prev.Line), "duplicate key %q in %s", k.Value, where)
			continue
		}
		seen[k.Value] = k
		out = append(out, kv{key: k.Value, kNode: k, value: v})
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

func (d *fileDecoder) str(n *yaml.Node, where string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.fail(n, "quote it to make it a string", "%s must be a string, got %s", where, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *fileDecoder) strList(n *yaml.Node, where string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, `write a list such as ["a", "b"] or one "- item" per line`, "%s must be a list of strings, got %s", where, kindName(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, item := range n.Content {
		s, good := d.str(item, fmt.Sprintf("%s[%d]", where, i))
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// strListMap decodes {key: [strings]}; positions of every pattern are kept for errors.
func (d *fileDecoder) strListMap(n *yaml.Node, where string) (map[string][]string, map[string]*yaml.Node) {
	entries, ok := d.mapping(n, where)
	if !ok {
		return nil, nil
	}
	out := map[string][]string{}
	nodes := map[string]*yaml.Node{}
	for _, e := range entries {
		l, ok := d.strList(e.value, where+"."+e.key)
		if ok {
			out[e.key] = l
			nodes[e.key] = e.value
		}
	}
	return out, nodes
}

func (d *fileDecoder) strMap(n *yaml.Node, where string) map[string]string {
	entries, ok := d.mapping(n, where)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, e := range entries {
		if s, ok := d.str(e.value, where+"."+e.key); ok {
			out[e.key] = s
		}
	}
	return out
}

// policyFile is the decoded document before compilation, with nodes for errors.
type policyFile struct {
	version                *yaml.Node
	mode, preset           string
	modeNode, presetNode   *yaml.Node
	aliases, match         map[string]string
	aliasesNode, matchNode *yaml.Node
	deny, allow, escalate  map[string][]string
	ruleNodes              map[string]map[string]*yaml.Node // list => tool => node
	rulesNode              *yaml.Node
	roles                  map[string][]string
	rolesNode              *yaml.Node
	activeRole             string
	activeNode             *yaml.Node
	caps, skills           map[string][]string
	capsNodes, skillNodes  map[string]*yaml.Node
	capsNode, skillsNode   *yaml.Node
	conditions             []Condition
	condNodes              []*yaml.Node // the `when` node of each
	condsNode              *yaml.Node
}

var topKeys = []string{"version", "description", "mode", "preset", "aliases", "match", "rules", "roles", "active_role", "capabilities", "skills", "conditions"}

func (d *fileDecoder) decodeFile(root *yaml.Node) *policyFile {
	f := &policyFile{ruleNodes: map[string]map[string]*yaml.Node{}}
	entries, ok := d.mapping(root, "the top level")
	if !ok {
		return f
	}
	for _, e := range entries {
		switch e.key {
		case "version":
			f.version = e.value
			if e.value.Kind != yaml.ScalarNode || e.value.ShortTag() != "!!int" || e.value.Value != "1" {
				d.fail(e.value, "write `version: 1`", "unsupported version %q", e.value.Value)
			}
		case "description":
			d.str(e.value, "description")
		case "mode":
			if s, ok := d.str(e.value, "mode"); ok {
				f.mode, f.modeNode = s, e.value
				switch Mode(s) {
				case ModeAllowAll, ModeDenyAll, ModeRules:
				default:
					d.fail(e.value, "use allow_all, deny_all or rules", "unknown mode %q", s)
				}
			}
		case "preset":
			if s, ok := d.str(e.value, "preset"); ok {
				f.preset, f.presetNode = s, e.value
				if _, err := PresetRules(s); err != nil {
					d.fail(e.value, "use read_only, safe, allow_all or deny_all", "unknown preset %q", s)
				}
			}
		case "aliases":
			f.aliases, f.aliasesNode = d.strMap(e.value, "aliases"), e.value
		case "match":
			f.match, f.matchNode = d.strMap(e.value, "match"), e.value
		case "rules":
			f.rulesNode = e.value
			d.decodeRules(e.value, f)
		case "roles":
			f.rolesNode = e.value
			f.roles, _ = d.strListMap(e.value, "roles")
		case "active_role":
			if s, ok := d.str(e.value, "active_role"); ok {
				f.activeRole, f.activeNode = s, e.value
			}
		case "capabilities":
			f.capsNode = e.value
			f.caps, f.capsNodes = d.strListMap(e.value, "capabilities")
		case "skills":
			f.skillsNode = e.value
			f.skills, f.skillNodes = d.strListMap(e.value, "skills")
		case "conditions":
			f.condsNode = e.value
			d.decodeConditions(e.value, f)
		default:
			d.fail(e.kNode, "allowed keys: "+strings.Join(topKeys, ", ")+suggest(e.key, topKeys), "unknown key %q", e.key)
		}
	}
	if f.version == nil {
		d.fail(root, "add `version: 1` at the top of the file", "missing version")
	}
	return f
}

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

var ruleKeys = []string{"deny", "allow", "escalate"}

func (d *fileDecoder) decodeRules(n *yaml.Node, f *policyFile) {
	entries, ok := d.mapping(n, "rules")
	if !ok {
		return
	}
	for _, e := range entries {
		lists, nodes := d.strListMap(e.value, "rules."+e.key)
		switch e.key {
		case "deny":
			f.deny = lists
		case "allow":
			f.allow = lists
		case "escalate":
			f.escalate = lists
		default:
			d.fail(e.kNode, "rules holds deny, allow and escalate"+suggest(e.key, ruleKeys), "unknown key %q in rules", e.key)
			continue
		}
		f.ruleNodes[e.key] = nodes
		for tool, pats := range lists {
			for i, p := range pats {
				d.checkPattern(nodes[tool].Content[i], tool, p)
			}
		}
	}
}

// checkPattern refuses patterns that can never do what their author meant.
func (d *fileDecoder) checkPattern(n *yaml.Node, tool, p string) {
	switch {
	case p == "":
		d.fail(n, `remove it, or use "*" to match everything`, "empty pattern for %q matches only an empty string", tool)
	case strings.TrimSpace(p) != p:
		d.fail(n, "remove the leading or trailing whitespace", "pattern %q for %q has leading or trailing whitespace", p, tool)
	case strings.ToLower(tool) == "bash" || strings.ToLower(tool) == "bash_tool":
		if strings.Contains(p, "  ") || strings.ContainsAny(p, "\t\n") {
			d.fail(n, "bash commands are normalized to single spaces; write one space between words", "bash pattern %q can never match a normalized command", p)
		}
	}
}

var condKeys = []string{"id", "when", "effect", "reason", "rationale", "tell_llm"}

func (d *fileDecoder) decodeConditions(n *yaml.Node, f *policyFile) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "write conditions as a list of `- id: ...` entries", "conditions must be a list, got %s", kindName(n))
		return
	}
	for i, item := range n.Content {
		where := fmt.Sprintf("conditions[%d]", i)
		entries, ok := d.mapping(item, where)
		if !ok {
			continue
		}
		var c Condition
		var whenNode *yaml.Node
		hasEffect := false
		for _, e := range entries {
			s, ok := d.str(e.value, where+"."+e.key)
			if !ok {
				continue
			}
			switch e.key {
			case "id":
				c.ID = s
			case "when":
				c.When, whenNode = s, e.value
			case "effect":
				eff, err := warden.ParseEffect(s)
				if err != nil {
					d.fail(e.value, "use allow, deny, escalate or halt", "%s: unknown effect %q", where, s)
				}
				c.Effect, hasEffect = eff, true
			case "reason":
				c.Reason = s
			case "rationale":
				c.Rationale = s
			case "tell_llm":
				c.TellLLM = s
			default:
				d.fail(e.kNode, "a condition holds "+strings.Join(condKeys, ", ")+suggest(e.key, condKeys), "unknown key %q in %s", e.key, where)
			}
		}
		if c.ID == "" {
			d.fail(item, "give every condition a unique id", "%s: missing id", where)
		}
		if whenNode == nil {
			d.fail(item, "add a CEL expression such as `when: 'tool == \"refund\"'`", "%s: missing when", where)
			whenNode = item
		}
		if !hasEffect {
			d.fail(item, "add `effect: deny` (or allow, escalate, halt)", "%s: missing effect", where)
		}
		f.conditions = append(f.conditions, c)
		f.condNodes = append(f.condNodes, whenNode)
	}
}

// build compiles the decoded file into a Policy, reporting semantic errors.
func (d *fileDecoder) build(f *policyFile, opts *LoadOptions) *Policy {
	var rules *RulePolicy
	hasRuleLayer := f.modeNode != nil || f.presetNode != nil || f.rulesNode != nil
	if !hasRuleLayer && (f.aliasesNode != nil || f.matchNode != nil) {
		n := f.aliasesNode
		if n == nil {
			n = f.matchNode
		}
		d.fail(n, "add rules, a preset or a mode; aliases and match only shape how rules match", "aliases and match apply to rules, and this file has none")
	}
	if hasRuleLayer {
		cfg := RuleConfig{Mode: Mode(f.mode)}
		if f.preset != "" {
			pre, _ := PresetRules(f.preset)
			if f.mode != "" && Mode(f.mode) != pre.Mode {
				d.fail(f.modeNode, "drop mode, or drop the preset", "mode %q conflicts with preset %q", f.mode, f.preset)
			}
			if pre.Mode != ModeRules && f.rulesNode != nil {
				d.fail(f.rulesNode, "a preset that is a mode ignores rules; use mode: rules with your rules instead", "preset %q has no rules to append to", f.preset)
			}
			cfg = pre
		}
		if cfg.Mode != ModeRules && cfg.Mode != "" && f.rulesNode != nil && f.preset == "" {
			d.fail(f.rulesNode, "remove the rules, or use mode: rules", "mode %s ignores rules", cfg.Mode)
		}
		cfg.Deny = appendRules(cfg.Deny, f.deny)
		cfg.Allow = appendRules(cfg.Allow, f.allow)
		cfg.Escalate = appendRules(cfg.Escalate, f.escalate)
		cfg.Aliases, cfg.Match = f.aliases, f.match
		r, err := NewRules(cfg)
		if err != nil {
			n := f.rulesNode
			if n == nil {
				n = f.modeNode
			}
			if f.matchNode != nil && strings.HasPrefix(err.Error(), "match template") {
				n = f.matchNode
			}
			if f.aliasesNode != nil && strings.HasPrefix(err.Error(), "alias") {
				n = f.aliasesNode
			}
			d.fail(n, "fix the rule configuration", "%s", err.Error())
		}
		rules = r
	}

	var roles *RolePolicy
	if f.rolesNode != nil {
		active := f.activeRole
		activeNode := f.activeNode
		if opts.Role != "" {
			active, activeNode = opts.Role, nil
		}
		rr := &RoleRules{}
		if f.capsNode != nil {
			rr.Capabilities = map[string][]warden.Capability{}
			for role, list := range f.caps {
				if _, ok := f.roles[role]; !ok {
					d.fail(keyNode(f.capsNode, role), "capabilities are granted to roles defined under roles", "capabilities name role %q, which is not defined in roles", role)
				}
				caps := make([]warden.Capability, 0, len(list))
				for i, c := range list {
					if !warden.Capability(c).IsToolCapability() {
						d.fail(f.capsNodes[role].Content[i], "use memory_read, memory_write, external_net or user_data", "unknown capability %q for role %q", c, role)
					}
					caps = append(caps, warden.Capability(c))
				}
				rr.Capabilities[role] = caps
			}
		}
		if f.skillsNode != nil {
			rr.Skills = f.skills
			for role := range f.skills {
				if _, ok := f.roles[role]; !ok {
					d.fail(keyNode(f.skillsNode, role), "skills are granted to roles defined under roles", "skills name role %q, which is not defined in roles", role)
				}
			}
		}
		switch {
		case active == "":
			d.fail(f.rolesNode, "add `active_role: <role>`, or select a role when loading", "roles are defined but no active_role is selected")
		case f.roles[active] == nil && !hasKey(f.rolesNode, active):
			d.fail(activeNode, "pick one of the roles defined under roles", "activeRole '%s' is not defined in roles. Available: %s", active, availableRoles(f.roles))
		}
		if len(d.errs) == 0 {
			r, err := FromRoles(f.roles, active, rr)
			if err != nil {
				d.fail(f.rolesNode, "fix the role configuration", "%s", err.Error())
			}
			roles = r
		}
	} else {
		for _, n := range []*yaml.Node{f.activeNode, f.capsNode, f.skillsNode} {
			if n != nil {
				d.fail(n, "define roles first", "active_role, capabilities and skills need roles")
				break
			}
		}
		if opts.Role != "" {
			d.errs = append(d.errs, &warden.ConfigError{File: d.file, Msg: fmt.Sprintf("role %q selected, but the policy defines no roles", opts.Role), Hint: "drop --role, or add roles to the policy"})
		}
	}

	var conds *Conditions
	if len(f.conditions) > 0 && len(d.errs) == 0 {
		c, err := CompileConditions(f.conditions)
		if err != nil {
			var ce *ConditionError
			n := f.condsNode
			if errors.As(err, &ce) {
				n = f.condNodes[ce.Index]
			}
			d.fail(n, "fix the CEL expression; variables: tool, args, role, identity, capability", "%s", err.Error())
		}
		conds = c
	}
	if len(d.errs) > 0 {
		return nil
	}
	p, err := New(rules, roles, conds)
	if err != nil {
		d.errs = append(d.errs, &warden.ConfigError{File: d.file, Line: 1, Column: 1, Msg: "policy decides nothing", Hint: "define rules, a preset, a mode, roles or conditions"})
		return nil
	}
	return p
}

func appendRules(base, extra map[string][]string) map[string][]string {
	if len(extra) == 0 {
		return base
	}
	out := map[string][]string{}
	for k, v := range base {
		out[k] = append([]string(nil), v...)
	}
	for k, v := range extra {
		out[k] = append(out[k], v...)
	}
	return out
}

func keyNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return m
}

func hasKey(m *yaml.Node, key string) bool {
	if m == nil || m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

func availableRoles(roles map[string][]string) string {
	names := make([]string, 0, len(roles))
	for k := range roles {
		names = append(names, k)
	}
	if len(names) == 0 {
		return "(none)"
	}
	sortStrings(names)
	return strings.Join(names, ", ")
}
