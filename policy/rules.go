package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fnmatch"
	"github.com/wardenhq/warden/shell"
)

// Mode is a rule policy's global mode.
type Mode string

// The three modes. A mode outside this set is a construction error, never a silent
// fallback to rules.
const (
	ModeAllowAll Mode = "allow_all" // allow at once, no shell check
	ModeDenyAll  Mode = "deny_all"  // deny at once
	ModeRules    Mode = "rules"     // evaluate the rules (the default)
)

// The target families. The gateway judges an MCP resources/read as a call to
// "resource:<server>" (the configured upstream server's name) with the arguments
// {"uri": <the uri>}, and a prompts/get as a call to "prompt:<governed prompt name>" with
// the prompt's arguments. A rule or match key made of a family prefix and "*"
// ("resource:*", "prompt:*") is that family's key: it applies to every target whose
// canonical name starts with the prefix. No other key holding "*" is a family: "deploy*"
// names the tool "deploy*" exactly.
const (
	ResourcePrefix = "resource:"
	PromptPrefix   = "prompt:"
)

// The two family keys.
const (
	resourceFamily = ResourcePrefix + "*"
	promptFamily   = PromptPrefix + "*"
)

// familyOf returns the family key of a canonical target name, or "" when it belongs to
// no family. It does not allocate.
func familyOf(canonical string) string {
	switch {
	case strings.HasPrefix(canonical, ResourcePrefix):
		return resourceFamily
	case strings.HasPrefix(canonical, PromptPrefix):
		return promptFamily
	}
	return ""
}

// emptyFamilyName reports, for a canonical key that is a family prefix with nothing
// after the colon ("resource:", "prompt:"), what it fails to name and how to write it.
func emptyFamilyName(key string) (what, fix string, bad bool) {
	switch key {
	case ResourcePrefix:
		return "no server", `write "resource:<server>" for one server's resources, or "resource:*" for every resource`, true
	case PromptPrefix:
		return "no prompt", `write "prompt:<name>" for one prompt, or "prompt:*" for every prompt`, true
	}
	return "", "", false
}

// RuleConfig configures a rule policy. Rule maps are keyed by tool name (aliases and case
// are normalized), by "*" for every tool, or by a family key ("resource:*", "prompt:*",
// see [ResourcePrefix]) for every target of that family, and hold glob patterns. The zero
// value is a rules-mode policy with no rules: it denies everything.
type RuleConfig struct {
	// Mode is ModeRules when empty.
	Mode Mode
	// Deny, Allow and Escalate are evaluated in that order; the first matching pattern in
	// each list decides. Each list is the tool's own patterns, then (for a target in a
	// family) the family key's patterns, then the "*" patterns. A key that is a family
	// prefix alone ("resource:", "prompt:") is a construction error.
	Deny, Allow, Escalate map[string][]string
	// Aliases adds tool-key aliases (key => canonical name) to the built-in ones. Neither
	// side may be "*" or a family key.
	Aliases map[string]string
	// Match gives a tool an explicit match template such as "{env} {service}": each
	// {name} is replaced by that argument's value (missing => empty). A family key gives
	// every member of the family without a template of its own that template.
	Match map[string]string
	// OnEscalate, when set, answers escalations inline. When nil, an escalation is an
	// [warden.Ask] decision that a front end puts to a person, or refuses with
	// [warden.EscalationFault] when it has nobody to ask.
	OnEscalate EscalationHandler
	// Shell sets how the bash check reads commands. Its zero value is the strictest:
	// git's command-running configuration (git -c, --config-env, config writes, ...)
	// is refused; set Shell.AllowGitConfig only for a policy that means to allow it
	// (see package shell).
	Shell shell.Options
}

// Escalation is what an [EscalationHandler] is asked about.
type Escalation struct {
	Tool      string // canonical tool name
	Action    string // the "action" argument, or ""
	Args      warden.Args
	RuleID    string // the escalate pattern that matched
	Rationale string // "escalate by rule: <pattern>"
}

// EscalationAnswer is an escalation handler's answer: Approve allows the call with its
// arguments unchanged, or with Args when Args is non-nil (the replacement is judged again
// by the second security pass). Approve false declines.
type EscalationAnswer struct {
	Approve bool
	Args    *warden.Args
}

// EscalationHandler answers an escalation programmatically. An error denies (fail closed).
type EscalationHandler func(ctx context.Context, e Escalation) (EscalationAnswer, error)

// builtinAliases are the tool-key aliases every rule policy knows.
var builtinAliases = map[string]string{
	"bash_tool":    "bash",
	"reader_tool":  "reader",
	"editor_tool":  "editor",
	"search_tool":  "search",
	"context_tool": "context",
}

// RulePolicy is a compiled rule policy: allow/deny/escalate globs per tool, a shell check
// for bash, and a global mode. It is a [warden.Checker] that governs only tool dispatch.
// Safe for concurrent use; immutable after [NewRules].
type RulePolicy struct {
	mode       Mode
	aliases    map[string]string
	tools      map[string]*toolRules // canonical tool => its rules, its family's, then "*" rules
	star       *toolRules            // rules for tools with none of their own and no family
	resources  *toolRules            // "resource:*" then "*" rules, for resources with none of their own
	prompts    *toolRules            // "prompt:*" then "*" rules, for prompts with none of their own
	templates  map[string]template
	onEscalate EscalationHandler
	cfg        RuleConfig // canonical copy, for revision hashing and explain
}

type rule struct {
	pattern   string
	glob      fnmatch.Pattern
	rationale string // precomputed "<verb> by rule: <pattern>"
}

type toolRules struct {
	deny, allow, escalate []rule
}

// NewRules validates and compiles cfg. The maps in cfg are copied; later changes to them
// do not affect the policy. It returns an error for an unknown mode, an empty tool key, a
// key that is a family prefix alone ("resource:", "prompt:"), an alias that maps to
// nothing or involves "*" or a family key, or a bad match template.
func NewRules(cfg RuleConfig) (*RulePolicy, error) {
	mode := cfg.Mode
	if mode == "" {
		mode = ModeRules
	}
	switch mode {
	case ModeAllowAll, ModeDenyAll, ModeRules:
	default:
		return nil, fmt.Errorf("unknown mode %q: use allow_all, deny_all or rules", string(cfg.Mode))
	}
	p := &RulePolicy{
		mode:       mode,
		aliases:    maps.Clone(builtinAliases),
		tools:      map[string]*toolRules{},
		templates:  map[string]template{},
		onEscalate: cfg.OnEscalate,
	}
	for k, v := range cfg.Aliases {
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.ToLower(strings.TrimSpace(v))
		if k == "" || v == "" {
			return nil, fmt.Errorf("alias %q => %q: alias names must not be empty", k, v)
		}
		if k == "*" || v == "*" {
			return nil, errors.New(`alias: "*" cannot be aliased`)
		}
		if isFamilyKey(k) || isFamilyKey(v) {
			return nil, fmt.Errorf("alias %q => %q: the family keys %q and %q cannot be aliased", k, v, resourceFamily, promptFamily)
		}
		p.aliases[k] = v
	}
	canon := RuleConfig{Mode: mode, Aliases: maps.Clone(cfg.Aliases), OnEscalate: cfg.OnEscalate, Shell: cfg.Shell}
	var err error
	if canon.Deny, err = p.canonicalRules("deny", cfg.Deny); err != nil {
		return nil, err
	}
	if canon.Allow, err = p.canonicalRules("allow", cfg.Allow); err != nil {
		return nil, err
	}
	if canon.Escalate, err = p.canonicalRules("escalate", cfg.Escalate); err != nil {
		return nil, err
	}
	if len(cfg.Match) > 0 {
		canon.Match = map[string]string{}
	}
	for tool, tmpl := range cfg.Match {
		key := p.Canonical(tool)
		if key == "" || key == "*" {
			return nil, fmt.Errorf("match template for %q: name a tool", tool)
		}
		if what, fix, bad := emptyFamilyName(key); bad {
			return nil, fmt.Errorf("match template for %q: the key names %s: %s", tool, what, fix)
		}
		t, err := parseTemplate(tmpl)
		if err != nil {
			return nil, fmt.Errorf("match template for %q: %w", tool, err)
		}
		p.templates[key] = t
		canon.Match[key] = tmpl
	}
	p.cfg = canon

	p.star = canon.combined("")
	p.resources = canon.combined(resourceFamily)
	p.prompts = canon.combined(promptFamily)
	names := map[string]bool{}
	for _, m := range []map[string][]string{canon.Deny, canon.Allow, canon.Escalate} {
		for k := range m {
			if k != "*" && !isFamilyKey(k) {
				names[k] = true
			}
		}
	}
	for name := range names {
		p.tools[name] = canon.combined(name)
	}
	return p, nil
}

// isFamilyKey reports whether a canonical key is "resource:*" or "prompt:*".
func isFamilyKey(key string) bool { return key == resourceFamily || key == promptFamily }

// combined compiles the lists a target with the canonical key name is judged by: its own
// patterns, then its family's (when it is in one), then the "*" patterns. A name of ""
// gives the "*" patterns alone; a family key gives the family's then the "*" patterns.
func (c *RuleConfig) combined(name string) *toolRules {
	var keys []string
	if name != "" && !isFamilyKey(name) {
		keys = append(keys, name)
	}
	if fam := familyOf(name); fam != "" {
		keys = append(keys, fam)
	}
	keys = append(keys, "*")
	list := func(m map[string][]string) []string {
		var out []string
		for _, k := range keys {
			out = append(out, m[k]...)
		}
		return out
	}
	return &toolRules{
		deny:     compileRules("denied", list(c.Deny)),
		allow:    compileRules("allowed", list(c.Allow)),
		escalate: compileRules("escalate", list(c.Escalate)),
	}
}

// rulesFor returns the compiled lists for a canonical target name.
func (p *RulePolicy) rulesFor(canonical string) *toolRules {
	if r := p.tools[canonical]; r != nil {
		return r
	}
	switch familyOf(canonical) {
	case resourceFamily:
		return p.resources
	case promptFamily:
		return p.prompts
	}
	return p.star
}

func compileRules(verb string, patterns []string) []rule {
	out := make([]rule, len(patterns))
	for i, pat := range patterns {
		out[i] = rule{pattern: pat, glob: fnmatch.Compile(pat), rationale: verb + " by rule: " + pat}
	}
	return out
}

func (p *RulePolicy) canonicalRules(list string, in map[string][]string) (map[string][]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	// Several keys may name one tool (bash, bash_tool, Bash): merge them in a fixed
	// order, the canonical spelling first, so the evaluation order never depends on map
	// iteration.
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ca, cb := p.Canonical(a) == a, p.Canonical(b) == b
		if ca != cb {
			if ca {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	out := make(map[string][]string, len(in))
	for _, k := range keys {
		key := p.Canonical(k)
		if key == "" {
			return nil, fmt.Errorf("%s rules: empty tool name (use \"*\" for every tool)", list)
		}
		if what, fix, bad := emptyFamilyName(key); bad {
			return nil, fmt.Errorf("%s rules: key %q names %s: %s", list, k, what, fix)
		}
		out[key] = append(out[key], in[k]...)
	}
	for k, v := range out {
		if len(v) == 0 {
			delete(out, k) // an empty list means nothing; it must not change the revision
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Canonical returns the canonical rule key for a tool name: lower-cased, then mapped
// through the aliases (bash_tool => bash, ...).
func (p *RulePolicy) Canonical(tool string) string {
	t := lowerASCIIFast(strings.TrimSpace(tool))
	if a, ok := p.aliases[t]; ok {
		return a
	}
	return t
}

// lowerASCIIFast lower-cases s, returning s itself when it has no upper-case letters.
func lowerASCIIFast(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}

// Mode returns the policy's mode.
func (p *RulePolicy) Mode() Mode { return p.mode }

// Config returns a copy of the canonical configuration (keys canonicalized).
func (p *RulePolicy) Config() RuleConfig {
	c := p.cfg
	c.Deny, c.Allow, c.Escalate = cloneRules(c.Deny), cloneRules(c.Allow), cloneRules(c.Escalate)
	c.Aliases, c.Match = maps.Clone(c.Aliases), maps.Clone(c.Match)
	return c
}

func cloneRules(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

// Governs reports false for every capability: a rule policy judges tool dispatch only.
func (p *RulePolicy) Governs(warden.Capability) bool { return false }

// Check judges a tool_call request. A request about any other capability is denied: a
// rule policy is never asked about one by Warden's front ends, and a misrouted question
// does not get a yes. An escalation with an [EscalationHandler] is answered inline;
// without one the decision is [warden.Ask].
func (p *RulePolicy) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	if req.Capability != warden.CapToolCall {
		return warden.Decision{Effect: warden.Deny, RuleID: "rules.capability", Rationale: "a rule policy judges only tool_call requests, not '" + string(req.Capability) + "'"}, nil
	}
	d := p.evaluate(req.Target, req.Args, nil)
	if d.Effect == warden.Ask && p.onEscalate != nil {
		return p.escalate(ctx, req.Target, req.Args, d), nil
	}
	return d, nil
}

func (p *RulePolicy) escalate(ctx context.Context, tool string, args warden.Args, d warden.Decision) (out warden.Decision) {
	canonical := p.Canonical(tool)
	action, _ := args.String("action")
	defer func() {
		if r := recover(); r != nil {
			out = escalationError(d, fmt.Errorf("panic: %v", r))
		}
	}()
	ans, err := p.onEscalate(ctx, Escalation{Tool: canonical, Action: action, Args: args, RuleID: d.RuleID, Rationale: d.Rationale})
	if err != nil {
		return escalationError(d, err)
	}
	if !ans.Approve {
		return warden.Decision{
			Effect:    warden.Deny,
			RuleID:    d.RuleID,
			Rationale: "Permission escalation for " + canonical + "." + action + " was declined: " + d.Rationale,
		}
	}
	return warden.Decision{Effect: warden.Allow, RuleID: d.RuleID, Rationale: "escalation approved by handler: " + d.Rationale, Args: ans.Args}
}

func escalationError(d warden.Decision, err error) warden.Decision {
	return warden.Decision{
		Effect:    warden.Deny,
		RuleID:    d.RuleID,
		Rationale: "escalation handler failed (evaluator error): " + err.Error(),
		Fault:     true,
	}
}

// MayAllow reports whether some call to tool could be allowed or escalated. It reads the
// same combined lists a call is judged by (the tool's own, its family's, then "*"): it is
// false under deny_all, when the combined deny list holds the pattern "*" (deny is
// checked before allow, so every call would be denied, whichever list the "*" is in: a
// family deny "*" hides every member of the family, even one with an allow of its own),
// and when the combined allow and escalate lists are empty. Front ends use it to hide
// tools the model could never call.
func (p *RulePolicy) MayAllow(tool string) bool {
	switch p.mode {
	case ModeAllowAll:
		return true
	case ModeDenyAll:
		return false
	}
	r := p.rulesFor(p.Canonical(tool))
	for _, d := range r.deny {
		if d.pattern == "*" {
			return false
		}
	}
	return len(r.allow)+len(r.escalate) > 0
}

// IsAllowed is [RulePolicy.MayAllow]: the policy's [warden.VisibilityChecker] answer,
// so that a Guard checking with it hides the tools no call could be allowed to run.
func (p *RulePolicy) IsAllowed(tool string) bool { return p.MayAllow(tool) }

var _ warden.VisibilityChecker = (*RulePolicy)(nil)

// Synchronous reports whether the policy decides without blocking: true unless an
// escalation handler is set (a handler may wait on a person or a service).
func (p *RulePolicy) Synchronous() bool { return p.onEscalate == nil }
