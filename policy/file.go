package policy

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fileerr"
	"github.com/wardenhq/warden/internal/yamlstrict"
	"github.com/wardenhq/warden/shell"
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
		return nil, &warden.ConfigError{File: path, Msg: "cannot read policy file: " + fileerr.Text(err), Hint: "check the path and its permissions"}
	}
	return Parse(path, data, opts)
}

// LoadShadowFile reads and compiles a shadow (candidate) policy file (see
// [ParseShadow]).
func LoadShadowFile(path string, opts *LoadOptions) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &warden.ConfigError{File: path, Msg: "cannot read shadow policy file: " + fileerr.Text(err), Hint: "check the path and its permissions"}
	}
	return ParseShadow(path, data, opts)
}

// Parse compiles a policy file's contents; name is used in errors. The file is validated
// strictly: unknown keys, duplicate keys, wrong types, empty or malformed patterns, an
// unknown mode or preset, an active role not in roles, a condition that does not compile,
// YAML aliases, and more than one YAML document are errors. Every error is a
// *[warden.ConfigError] (joined with [errors.Join] when there are several) that names
// the file, line and column and says how to fix it.
//
// The returned policy is the enforcing part of the file: its rules and conditions
// marked `enforce: false` (shadow items) are left out of it, exactly as if they were
// not in the file, so they never change its decisions nor its revision. When the file
// has shadow items, [Policy.Shadow] is the whole file with those items enforcing. A
// file whose top level says `enforce: false` is a shadow policy and is refused here
// (load it with [ParseShadow]): a file meant to be evaluated only never becomes the
// enforcing policy.
func Parse(name string, data []byte, opts *LoadOptions) (*Policy, error) {
	return parse(name, data, opts, false)
}

// ParseShadow compiles a file to be evaluated as a shadow policy only (the gateway's
// shadow_policy, a candidate for the next enforcing policy): every rule and condition
// counts, `enforce: false` or not, and the top level may say `enforce: false`. It
// validates the file as strictly as [Parse]. The result must never be used as the
// enforcing policy; its [Policy.Shadow] is nil.
func ParseShadow(name string, data []byte, opts *LoadOptions) (*Policy, error) {
	return parse(name, data, opts, true)
}

func parse(name string, data []byte, opts *LoadOptions, shadowOnly bool) (*Policy, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	// StringKeys: a rule, role, alias or skill key is a name, and a key YAML reads as a
	// number, boolean or null (123:, true:, ~:) is refused rather than taken as its text.
	d := &fileDecoder{yamlstrict.Decoder{File: name, StringKeys: true}}
	if len(data) > maxFileSize {
		d.Fail(nil, "policy files are small; split generated rules or remove data", "policy file is %d bytes, over the %d-byte limit", len(data), maxFileSize)
		return nil, d.Err()
	}
	root := d.Document(data, policyDoc)
	if root == nil {
		return nil, d.Err()
	}
	f := d.decodeFile(root)
	if len(d.Errs) > 0 {
		return nil, d.Err()
	}
	if f.shadowFile && !shadowOnly {
		d.Errs = append(d.Errs, shadowFileError{yamlstrict.Located(name, f.enforceNode, "this file is a shadow policy (enforce: false) and cannot be loaded as the enforcing policy", "load it as a shadow policy (shadow_policy in gateway.yaml) to see what it would decide, or remove `enforce: false` to enforce it")})
		return nil, d.Err()
	}
	// The whole file first (shadow items enforcing): it reports every problem of every
	// item; then, when some items are shadow, the enforcing part alone.
	full := d.build(f, opts, true)
	if len(d.Errs) > 0 {
		return nil, d.Err()
	}
	full.source = name
	p := full
	if !shadowOnly && f.hasShadow() {
		if p = d.build(f, opts, false); len(d.Errs) > 0 {
			return nil, d.Err()
		}
		p.source = name
		p.shadow = full
	}
	p.warnings = d.lint(f, full)
	return p, nil
}

// ErrShadowFile is what [Parse] reports (errors.Is) for a file whose top level says
// `enforce: false`: it is a shadow policy, to be loaded with [ParseShadow]. The error
// itself is a *[warden.ConfigError] at the enforce key.
var ErrShadowFile = errors.New("policy: a shadow policy file cannot be the enforcing policy")

type shadowFileError struct{ *warden.ConfigError }

func (e shadowFileError) Unwrap() error        { return e.ConfigError }
func (e shadowFileError) Is(target error) bool { return target == ErrShadowFile }

// maxFileSize bounds what Parse reads: a policy is configuration, not data.
const maxFileSize = 1 << 20

// fileDecoder decodes a policy file; the schema lives here, the strict YAML reading in
// yamlstrict.
type fileDecoder struct {
	yamlstrict.Decoder
}

// policyDoc words the document-level errors for policy files.
var policyDoc = yamlstrict.Doc{
	Name:      "policy file",
	Plural:    "policy files",
	EmptyHint: "start with `version: 1` and define rules, a preset, roles or conditions",
	BlankHint: "start with `version: 1`",
	MultiHint: "a policy file holds exactly one document; remove the '---' separator and what follows, or split it into files",
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
	ruleListNodes          map[string]*yaml.Node            // list => its mapping of tools
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
	costLimit              uint64
	costLimitNode          *yaml.Node
	shell                  shell.Options
	shellNode              *yaml.Node
	// shadowRules marks, per rule list, the keys written as a mapping with
	// `enforce: false`; condShadow marks the conditions with `enforce: false`. The
	// rule maps and conditions above hold every item, shadow or not.
	shadowRules map[string]map[string]bool
	condShadow  []bool
	// shadowFile is true for a file whose top level says `enforce: false`: every item
	// is shadow, and the file cannot be loaded as the enforcing policy.
	shadowFile  bool
	enforceNode *yaml.Node
}

// hasShadow reports whether some rule or condition is marked `enforce: false`.
func (f *policyFile) hasShadow() bool {
	for _, m := range f.shadowRules {
		if len(m) > 0 {
			return true
		}
	}
	return slices.Contains(f.condShadow, true)
}

// rules returns list's rules, with or without the shadow ones.
func (f *policyFile) rules(list string, withShadow bool) map[string][]string {
	var m map[string][]string
	switch list {
	case "deny":
		m = f.deny
	case "allow":
		m = f.allow
	default:
		m = f.escalate
	}
	shadow := f.shadowRules[list]
	if withShadow || len(shadow) == 0 {
		return m
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		if !shadow[k] {
			out[k] = v
		}
	}
	return out
}

var topKeys = []string{"version", "description", "enforce", "mode", "preset", "aliases", "match", "rules", "roles", "active_role", "capabilities", "skills", "conditions", "condition_cost_limit", "shell"}

// TopLevelKeys returns the keys a policy file may have at its top level (a new slice
// each call). warden validate uses it to tell a policy file from a gateway config.
func TopLevelKeys() []string { return slices.Clone(topKeys) }

func (d *fileDecoder) decodeFile(root *yaml.Node) *policyFile {
	f := &policyFile{ruleNodes: map[string]map[string]*yaml.Node{}, ruleListNodes: map[string]*yaml.Node{}, shadowRules: map[string]map[string]bool{}}
	entries, ok := d.Mapping(root, "the top level")
	if !ok {
		return f
	}
	for _, e := range entries {
		switch e.Key {
		case "version":
			f.version = e.Value
			if e.Value.Kind != yaml.ScalarNode || e.Value.ShortTag() != "!!int" || e.Value.Value != "1" {
				d.Fail(e.Value, "write `version: 1`", "unsupported version %q", e.Value.Value)
			}
		case "description":
			d.Str(e.Value, "description")
		case "enforce":
			if b, ok := d.Bool(e.Value, "enforce"); ok {
				f.shadowFile, f.enforceNode = !b, e.Value
			}
		case "mode":
			if s, ok := d.Str(e.Value, "mode"); ok {
				f.mode, f.modeNode = s, e.Value
				switch Mode(s) {
				case ModeAllowAll, ModeDenyAll, ModeRules:
				default:
					d.Fail(e.Value, "use allow_all, deny_all or rules", "unknown mode %q", s)
				}
			}
		case "preset":
			if s, ok := d.Str(e.Value, "preset"); ok {
				f.preset, f.presetNode = s, e.Value
				if _, err := PresetRules(s); err != nil {
					d.Fail(e.Value, "use read_only, safe, allow_all or deny_all", "unknown preset %q", s)
				}
			}
		case "aliases":
			f.aliases, f.aliasesNode = d.StrMap(e.Value, "aliases"), e.Value
		case "match":
			f.match, f.matchNode = d.StrMap(e.Value, "match"), e.Value
			d.checkFamilyKeys(e.Value, "match")
		case "rules":
			f.rulesNode = e.Value
			d.decodeRules(e.Value, f)
		case "roles":
			f.rolesNode = e.Value
			f.roles, _ = d.StrListMap(e.Value, "roles")
		case "active_role":
			if s, ok := d.Str(e.Value, "active_role"); ok {
				f.activeRole, f.activeNode = s, e.Value
			}
		case "capabilities":
			f.capsNode = e.Value
			f.caps, f.capsNodes = d.StrListMap(e.Value, "capabilities")
		case "skills":
			f.skillsNode = e.Value
			f.skills, f.skillNodes = d.StrListMap(e.Value, "skills")
		case "conditions":
			f.condsNode = e.Value
			d.decodeConditions(e.Value, f)
		case "condition_cost_limit":
			if v, ok := d.Int(e.Value, "condition_cost_limit", 1); ok {
				f.costLimit, f.costLimitNode = uint64(v), e.Value
			}
		case "shell":
			f.shellNode = e.Value
			d.decodeShell(e.Value, f)
		default:
			d.Fail(e.KeyNode, "allowed keys: "+strings.Join(topKeys, ", ")+yamlstrict.Suggest(e.Key, topKeys), "unknown key %q", e.Key)
		}
	}
	if f.version == nil {
		d.Fail(root, "add `version: 1` at the top of the file", "missing version")
	}
	return f
}

var ruleKeys = []string{"deny", "allow", "escalate"}

var shellKeys = []string{"allow_git_config"}

// decodeShell reads the shell: mapping, the bash check's settings.
func (d *fileDecoder) decodeShell(n *yaml.Node, f *policyFile) {
	entries, ok := d.Mapping(n, "shell")
	if !ok {
		return
	}
	for _, e := range entries {
		switch e.Key {
		case "allow_git_config":
			if v, ok := d.Bool(e.Value, "shell.allow_git_config"); ok {
				f.shell.AllowGitConfig = v
			}
		default:
			d.Fail(e.KeyNode, "shell holds allow_git_config"+yamlstrict.Suggest(e.Key, shellKeys), "unknown key %q in shell", e.Key)
		}
	}
}

func (d *fileDecoder) decodeRules(n *yaml.Node, f *policyFile) {
	entries, ok := d.Mapping(n, "rules")
	if !ok {
		return
	}
	for _, e := range entries {
		lists, nodes, shadow := d.decodeRuleList(e.Value, "rules."+e.Key)
		switch e.Key {
		case "deny":
			f.deny = lists
		case "allow":
			f.allow = lists
		case "escalate":
			f.escalate = lists
		default:
			d.Fail(e.KeyNode, "rules holds deny, allow and escalate"+yamlstrict.Suggest(e.Key, ruleKeys), "unknown key %q in rules", e.Key)
			continue
		}
		f.ruleNodes[e.Key] = nodes
		f.shadowRules[e.Key] = shadow
		f.ruleListNodes[e.Key] = e.Value
		d.checkFamilyKeys(e.Value, "rules."+e.Key)
		for tool, pats := range lists {
			for i, p := range pats {
				d.checkPattern(nodes[tool].Content[i], tool, p)
			}
		}
	}
}

var ruleEntryKeys = []string{"patterns", "enforce"}

// decodeRuleList reads one rule list (rules.deny, rules.allow, rules.escalate): each
// key holds a list of patterns, or a mapping {patterns: [...], enforce: bool}. It
// returns the patterns and the node of each key's pattern list, and the keys whose
// mapping says `enforce: false` (shadow rules).
func (d *fileDecoder) decodeRuleList(n *yaml.Node, where string) (map[string][]string, map[string]*yaml.Node, map[string]bool) {
	entries, ok := d.Mapping(n, where)
	if !ok {
		return nil, nil, nil
	}
	out := map[string][]string{}
	nodes := map[string]*yaml.Node{}
	shadow := map[string]bool{}
	for _, e := range entries {
		at, val := where+"."+e.Key, e.Value
		if val.Kind == yaml.MappingNode {
			kvs, _ := d.Mapping(val, at)
			var pats *yaml.Node
			enforce, good := true, true
			for _, kv := range kvs {
				switch kv.Key {
				case "patterns":
					pats = kv.Value
				case "enforce":
					if b, ok := d.Bool(kv.Value, at+".enforce"); ok {
						enforce = b
					} else {
						good = false
					}
				default:
					d.Fail(kv.KeyNode, "a rule entry holds patterns and enforce"+yamlstrict.Suggest(kv.Key, ruleEntryKeys), "unknown key %q in %s", kv.Key, at)
					good = false
				}
			}
			if pats == nil {
				d.Fail(val, "add `patterns: [\"...\"]`, or write the patterns as a plain list", "%s: missing patterns", at)
				continue
			}
			if !good {
				continue
			}
			val, at = pats, at+".patterns"
			if !enforce {
				shadow[e.Key] = true
			}
		}
		l, ok := d.StrList(val, at)
		if ok {
			out[e.Key] = l
			nodes[e.Key] = val
		}
	}
	return out, nodes, shadow
}

// checkFamilyKeys refuses, at the key, a rule or match key that is a family prefix with
// nothing after the colon ("resource:", "prompt:"): it would name no target, and the
// family itself is "resource:*" or "prompt:*".
func (d *fileDecoder) checkFamilyKeys(m *yaml.Node, where string) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if what, fix, bad := emptyFamilyName(strings.ToLower(strings.TrimSpace(k.Value))); bad {
			d.Fail(k, fix, "key %q in %s names %s", k.Value, where, what)
		}
	}
}

// checkPattern refuses patterns that can never do what their author meant.
func (d *fileDecoder) checkPattern(n *yaml.Node, tool, p string) {
	switch {
	case p == "":
		d.Fail(n, `remove it, or use "*" to match everything`, "empty pattern for %q matches only an empty string", tool)
	case strings.TrimSpace(p) != p:
		d.Fail(n, "remove the leading or trailing whitespace", "pattern %q for %q has leading or trailing whitespace", p, tool)
	case strings.ToLower(tool) == "bash" || strings.ToLower(tool) == "bash_tool":
		if strings.Contains(p, "  ") || strings.ContainsAny(p, "\t\n") {
			d.Fail(n, "bash commands are normalized to single spaces; write one space between words", "bash pattern %q can never match a normalized command", p)
		}
	}
}

var condKeys = []string{"id", "when", "effect", "reason", "rationale", "tell_llm", "enforce"}

func (d *fileDecoder) decodeConditions(n *yaml.Node, f *policyFile) {
	if n.Kind != yaml.SequenceNode {
		d.Fail(n, "write conditions as a list of `- id: ...` entries", "conditions must be a list, got %s", yamlstrict.KindName(n))
		return
	}
	for i, item := range n.Content {
		where := fmt.Sprintf("conditions[%d]", i)
		entries, ok := d.Mapping(item, where)
		if !ok {
			continue
		}
		var c Condition
		var whenNode *yaml.Node
		hasEffect, shadow := false, false
		for _, e := range entries {
			if e.Key == "enforce" {
				if b, ok := d.Bool(e.Value, where+".enforce"); ok {
					shadow = !b
				}
				continue
			}
			s, ok := d.Str(e.Value, where+"."+e.Key)
			if !ok {
				continue
			}
			switch e.Key {
			case "id":
				c.ID = s
			case "when":
				c.When, whenNode = s, e.Value
			case "effect":
				eff, err := warden.ParseEffect(s)
				if err != nil {
					d.Fail(e.Value, "use allow, deny, escalate or halt", "%s: unknown effect %q", where, s)
				}
				c.Effect, hasEffect = eff, true
			case "reason":
				c.Reason = s
			case "rationale":
				c.Rationale = s
			case "tell_llm":
				c.TellLLM = s
			default:
				d.Fail(e.KeyNode, "a condition holds "+strings.Join(condKeys, ", ")+yamlstrict.Suggest(e.Key, condKeys), "unknown key %q in %s", e.Key, where)
			}
		}
		if c.ID == "" {
			d.Fail(item, "give every condition a unique id", "%s: missing id", where)
		}
		if whenNode == nil {
			d.Fail(item, "add a CEL expression such as `when: 'tool == \"refund\"'`", "%s: missing when", where)
			whenNode = item
		}
		if !hasEffect {
			d.Fail(item, "add `effect: deny` (or allow, escalate, halt)", "%s: missing effect", where)
		}
		f.conditions = append(f.conditions, c)
		f.condNodes = append(f.condNodes, whenNode)
		f.condShadow = append(f.condShadow, shadow)
	}
}

// build compiles the decoded file into a Policy, reporting semantic errors: the whole
// file when withShadow is true, else the file without its shadow items.
func (d *fileDecoder) build(f *policyFile, opts *LoadOptions, withShadow bool) *Policy {
	var rules *RulePolicy
	hasRuleLayer := f.modeNode != nil || f.presetNode != nil || f.rulesNode != nil
	if !hasRuleLayer && (f.aliasesNode != nil || f.matchNode != nil) {
		n := f.aliasesNode
		if n == nil {
			n = f.matchNode
		}
		d.Fail(n, "add rules, a preset or a mode; aliases and match only shape how rules match", "aliases and match apply to rules, and this file has none")
	}
	if !hasRuleLayer && f.shellNode != nil {
		d.Fail(f.shellNode, "add rules, a preset or a mode; shell only shapes how bash commands are checked", "shell applies to rules, and this file has none")
	}
	if hasRuleLayer {
		cfg := RuleConfig{Mode: Mode(f.mode)}
		if f.preset != "" {
			pre, _ := PresetRules(f.preset)
			if f.mode != "" && Mode(f.mode) != pre.Mode {
				d.Fail(f.modeNode, "drop mode, or drop the preset", "mode %q conflicts with preset %q", f.mode, f.preset)
			}
			if pre.Mode != ModeRules && f.rulesNode != nil {
				d.Fail(f.rulesNode, "a preset that is a mode ignores rules; use mode: rules with your rules instead", "preset %q has no rules to append to", f.preset)
			}
			cfg = pre
		}
		if cfg.Mode != ModeRules && cfg.Mode != "" && f.rulesNode != nil && f.preset == "" {
			d.Fail(f.rulesNode, "remove the rules, or use mode: rules", "mode %s ignores rules", cfg.Mode)
		}
		cfg.Deny = appendRules(cfg.Deny, f.rules("deny", withShadow))
		cfg.Allow = appendRules(cfg.Allow, f.rules("allow", withShadow))
		cfg.Escalate = appendRules(cfg.Escalate, f.rules("escalate", withShadow))
		cfg.Aliases, cfg.Match, cfg.Shell = f.aliases, f.match, f.shell
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
			d.Fail(n, "fix the rule configuration", "%s", err.Error())
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
					d.Fail(keyNode(f.capsNode, role), "capabilities are granted to roles defined under roles", "capabilities name role %q, which is not defined in roles", role)
				}
				caps := make([]warden.Capability, 0, len(list))
				for i, c := range list {
					if !warden.Capability(c).IsToolCapability() {
						d.Fail(f.capsNodes[role].Content[i], "use memory_read, memory_write, external_net or user_data", "unknown capability %q for role %q", c, role)
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
					d.Fail(keyNode(f.skillsNode, role), "skills are granted to roles defined under roles", "skills name role %q, which is not defined in roles", role)
				}
			}
		}
		switch {
		case active == "":
			d.Fail(f.rolesNode, "add `active_role: <role>`, or select a role when loading", "roles are defined but no active_role is selected")
		case f.roles[active] == nil && !hasKey(f.rolesNode, active):
			d.Fail(activeNode, "pick one of the roles defined under roles", "activeRole '%s' is not defined in roles. Available: %s", active, availableRoles(f.roles))
		}
		if len(d.Errs) == 0 {
			r, err := FromRoles(f.roles, active, rr)
			if err != nil {
				d.Fail(f.rolesNode, "fix the role configuration", "%s", err.Error())
			}
			roles = r
		}
	} else {
		for _, n := range []*yaml.Node{f.activeNode, f.capsNode, f.skillsNode} {
			if n != nil {
				d.Fail(n, "define roles first", "active_role, capabilities and skills need roles")
				break
			}
		}
		if opts.Role != "" {
			d.Fail(nil, "drop --role, or add roles to the policy", "role %q selected, but the policy defines no roles", opts.Role)
		}
	}

	if f.costLimitNode != nil && len(f.conditions) == 0 {
		d.Fail(f.costLimitNode, "remove it, or add conditions", "condition_cost_limit applies to conditions, and this file has none")
	}
	// The conditions compiled, and the index in the file of each.
	var list []Condition
	var at []int
	for i, c := range f.conditions {
		if withShadow || !f.condShadow[i] {
			list, at = append(list, c), append(at, i)
		}
	}
	var conds *Conditions
	if len(list) > 0 && len(d.Errs) == 0 {
		c, err := CompileConditionsWith(list, &ConditionOptions{CostLimit: f.costLimit})
		if err != nil {
			var ce *ConditionError
			n := f.condsNode
			if errors.As(err, &ce) {
				n = f.condNodes[at[ce.Index]]
			}
			d.Fail(n, "fix the CEL expression; variables: tool, args, role, identity, capability", "%s", err.Error())
		}
		conds = c
	}
	if len(d.Errs) > 0 {
		return nil
	}
	p, err := New(rules, roles, conds)
	if err != nil {
		if !withShadow {
			d.Errs = append(d.Errs, &warden.ConfigError{File: d.File, Line: 1, Column: 1, Msg: "policy decides nothing once its shadow items (enforce: false) are set aside", Hint: "make some rule or condition enforcing, or mark the whole file `enforce: false` and load it as a shadow policy"})
			return nil
		}
		d.Errs = append(d.Errs, &warden.ConfigError{File: d.File, Line: 1, Column: 1, Msg: "policy decides nothing", Hint: "define rules, a preset, a mode, roles or conditions"})
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
