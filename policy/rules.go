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

// RuleConfig configures a rule policy. Rule maps are keyed by tool name (aliases and case
// are normalized, "*" applies to every tool) and hold glob patterns. The zero value is a
// rules-mode policy with no rules: it denies everything.
type RuleConfig struct {
	// Mode is ModeRules when empty.
	Mode Mode
	// Deny, Allow and Escalate are evaluated in that order; the first matching pattern in
	// each list decides. Each list is the tool's own patterns, then the "*" patterns.
	Deny, Allow, Escalate map[string][]string
	// Aliases adds tool-key aliases (key => canonical name) to the built-in ones.
	Aliases map[string]string
	// Match gives a tool an explicit match template such as "{env} {service}": each
	// {name} is replaced by that argument's value (missing => empty).
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
	tools      map[string]*toolRules // canonical tool => its rules followed by "*" rules
	star       *toolRules            // rules for tools with none of their own
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
// do not affect the policy. It returns an error for an unknown mode, an empty tool key, an
// alias that maps to nothing, or a bad match template.
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
		t, err := parseTemplate(tmpl)
		if err != nil {
			return nil, fmt.Errorf("match template for %q: %w", tool, err)
		}
		p.templates[key] = t
		canon.Match[key] = tmpl
	}
	p.cfg = canon

	p.star = &toolRules{
		deny:     compileRules("denied", canon.Deny["*"]),
		allow:    compileRules("allowed", canon.Allow["*"]),
		escalate: compileRules("escalate", canon.Escalate["*"]),
	}
	names := map[string]bool{}
	for _, m := range []map[string][]string{canon.Deny, canon.Allow, canon.Escalate} {
		for k := range m {
			if k != "*" {
				names[k] = true
			}
		}
	}
	for name := range names {
		p.tools[name] = &toolRules{
			deny:     compileRules("denied", append(slices.Clip(canon.Deny[name]), canon.Deny["*"]...)),
			allow:    compileRules("allowed", append(slices.Clip(canon.Allow[name]), canon.Allow["*"]...)),
			escalate: compileRules("escalate", append(slices.Clip(canon.Escalate[name]), canon.Escalate["*"]...)),
		}
	}
	return p, nil
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

// MayAllow reports whether some call to tool could be allowed or escalated: false under
// deny_all and for a tool whose own deny list holds "*" or that has no allow or escalate
// pattern at all. Front ends use it to hide tools the model could never call.
func (p *RulePolicy) MayAllow(tool string) bool {
	switch p.mode {
	case ModeAllowAll:
		return true
	case ModeDenyAll:
		return false
	}
	r := p.tools[p.Canonical(tool)]
	if r == nil {
		r = p.star
	}
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
