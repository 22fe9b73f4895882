package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/shell"
)

// Policy combines up to three layers: a rule layer ([RulePolicy]), a role layer
// ([RolePolicy]) and conditions ([Conditions]). Every layer that applies to a request is
// evaluated and the answers combine by precedence: halt > deny > ask > allow. A layer
// that panics is a deny. It is a [warden.Checker].
//
// Which layers apply: the rule layer to tool_call requests; the role layer to tool_call
// and to every capability it governs; conditions to every request the policy is asked.
// The policy governs what its role layer governs. A tool_call on which no layer has an
// opinion (only conditions, none matched) is denied.
//
// A Policy is immutable and safe for concurrent use.
type Policy struct {
	rules    *RulePolicy
	roles    *RolePolicy
	conds    *Conditions
	revision string
	source   string
	warnings []*warden.ConfigError
	// shadow is the file with its shadow items enforcing, or nil (see [Policy.Shadow]).
	shadow *Policy
}

// ErrDecidesNothing is returned when a policy has no layer at all.
var ErrDecidesNothing = errors.New("policy decides nothing: define rules, a preset, a mode, roles or conditions")

// New combines layers into a policy; nil layers are absent. At least one layer is
// required ([ErrDecidesNothing]).
func New(rules *RulePolicy, roles *RolePolicy, conds *Conditions) (*Policy, error) {
	if conds != nil && conds.Len() == 0 {
		conds = nil
	}
	if rules == nil && roles == nil && conds == nil {
		return nil, ErrDecidesNothing
	}
	p := &Policy{rules: rules, roles: roles, conds: conds}
	p.revision = p.computeRevision()
	return p, nil
}

// Rules returns the rule layer, or nil.
func (p *Policy) Rules() *RulePolicy { return p.rules }

// Roles returns the role layer, or nil.
func (p *Policy) Roles() *RolePolicy { return p.roles }

// Conditions returns the conditions, or nil.
func (p *Policy) Conditions() *Conditions { return p.conds }

// Warnings returns what [Parse] found valid but suspect in the file: rules that can never
// match and conditions that miss some names of a tool (see the package doc). Each names
// the file, line and column. They never change a decision. The slice is a copy.
func (p *Policy) Warnings() []*warden.ConfigError {
	out := make([]*warden.ConfigError, len(p.warnings))
	for i, w := range p.warnings {
		c := *w
		out[i] = &c
	}
	return out
}

// Shadow returns, for a policy parsed from a file that marks some rules or conditions
// `enforce: false`, the whole file with those items enforcing: what the policy would
// decide once they are enforced. It is evaluated beside the policy, never instead of
// it (the gateway records where it is stricter); nil when the file has no shadow items.
// The policy itself is the file without them ([Parse]).
//
// Each has its own revision: [Policy.Revision] covers the enforcing part alone (adding,
// editing or removing a shadow item does not change it, so approvals bound to it stay
// valid), and the shadow's covers the whole file as if every item enforced: it is the
// revision the file has once its `enforce: false` marks are removed.
func (p *Policy) Shadow() *Policy { return p.shadow }

// Source returns the file the policy was loaded from, or "".
func (p *Policy) Source() string { return p.source }

// Revision returns "sha256:" and the hex digest of the policy's canonical form: the same
// for the same meaning (key order, comments, aliases spelled differently and presets
// expanded or written out do not change it). The active role is not part of it.
func (p *Policy) Revision() string { return p.revision }

// ActiveRole returns the role layer's active role, or "".
func (p *Policy) ActiveRole() string {
	if p.roles == nil {
		return ""
	}
	return p.roles.ActiveRole()
}

// WithActiveRole returns the same policy evaluated for another role. It is an error when
// the policy has no role layer or the role is unknown.
func (p *Policy) WithActiveRole(role string) (*Policy, error) {
	if p.roles == nil {
		return nil, fmt.Errorf("policy has no roles; cannot select role '%s'", role)
	}
	r, err := p.roles.WithActiveRole(role)
	if err != nil {
		return nil, err
	}
	q := *p
	q.roles = r
	if p.shadow != nil {
		// The shadow holds the same roles: enforce marks apply to rules and conditions.
		if q.shadow, err = p.shadow.WithActiveRole(role); err != nil {
			return nil, err
		}
	}
	return &q, nil
}

// Governs reports whether the policy is asked about c: whatever its role layer governs.
func (p *Policy) Governs(c warden.Capability) bool {
	return p.roles != nil && p.roles.Governs(c)
}

// IsAllowed reports whether a tool may be shown to the model: the role layer allows it
// ([RolePolicy.IsAllowed], when there is one) and the rule layer could allow some call
// to it ([RulePolicy.MayAllow], when there is one). Conditions are not consulted: they
// judge calls. The call is still checked when it is made. It is the policy's
// [warden.VisibilityChecker] answer, which a [warden.Guard] uses to decide what to offer.
func (p *Policy) IsAllowed(tool string) bool {
	if p.roles != nil && !p.roles.IsAllowed(tool) {
		return false
	}
	return p.rules == nil || p.rules.MayAllow(tool)
}

var _ warden.VisibilityChecker = (*Policy)(nil)

// MayExercise reports whether the role layer (when there is one) lets the active role
// exercise the tool capability c ([RolePolicy.MayExercise]).
func (p *Policy) MayExercise(c warden.Capability) bool {
	return p.roles == nil || p.roles.MayExercise(c)
}

var _ warden.CapabilityVisibilityChecker = (*Policy)(nil)

// Check evaluates the request against every layer that applies.
func (p *Policy) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	return p.evaluate(ctx, req, nil), nil
}

// LayerResult is one layer's answer in a [Trace].
type LayerResult struct {
	Layer    string          `json:"layer"` // "rules", "roles" or "conditions"
	Decision warden.Decision `json:"decision"`
}

// Trace explains a [Policy.Explain] decision.
type Trace struct {
	Layers  []LayerResult `json:"layers"`
	Decider string        `json:"decider"` // the layer whose answer won, or "default"
	Rules   *Explanation  `json:"rules,omitempty"`
}

// Explain is [Policy.Check] with a trace of every layer's answer.
func (p *Policy) Explain(ctx context.Context, req warden.Request) (warden.Decision, Trace) {
	var t Trace
	d := p.evaluate(ctx, req, &t)
	return d, t
}

func (p *Policy) evaluate(ctx context.Context, req warden.Request, trace *Trace) warden.Decision {
	var best warden.Decision
	decider := ""
	consider := func(layer string, d warden.Decision) {
		if !d.Effect.Valid() {
			d = warden.Decision{Effect: warden.Deny, RuleID: layer + ".invalid", Rationale: fmt.Sprintf("layer '%s' returned an invalid effect", layer), Fault: true}
		}
		if trace != nil {
			trace.Layers = append(trace.Layers, LayerResult{Layer: layer, Decision: d})
		}
		if decider == "" || d.Effect.Outranks(best.Effect) {
			best, decider = d, layer
		}
	}
	if p.rules != nil && req.Capability == warden.CapToolCall {
		var ex *Explanation
		if trace != nil {
			ex = &Explanation{}
			trace.Rules = ex
		}
		consider("rules", guardLayer("rules", func() warden.Decision {
			d := p.rules.evaluate(req.Target, req.Args, ex)
			if d.Effect == warden.Ask && p.rules.onEscalate != nil {
				d = p.rules.escalate(ctx, req.Target, req.Args, d)
			}
			return d
		}))
	}
	if p.roles != nil && warden.CheckerGoverns(p.roles, req.Capability) {
		consider("roles", guardLayer("roles", func() warden.Decision { return p.roles.decide(req.Capability, req.Target) }))
	}
	if p.conds != nil {
		var d warden.Decision
		var ok bool
		func() {
			defer func() {
				if r := recover(); r != nil {
					d, ok = layerPanic("conditions", r), true
				}
			}()
			d, ok = p.conds.EvaluateContext(ctx, ConditionInput{Tool: req.Target, Args: req.Args, Role: p.ActiveRole(), Identity: req.Identity, Capability: req.Capability})
		}()
		if ok {
			consider("conditions", d)
		}
	}
	if decider == "" {
		decider, best = "default", warden.Decision{Effect: warden.Deny, RuleID: "default", Rationale: "no layer decided, default deny"}
	}
	if trace != nil {
		trace.Decider = decider
	}
	return best
}

func guardLayer(layer string, f func() warden.Decision) (d warden.Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = layerPanic(layer, r)
		}
	}()
	return f()
}

func layerPanic(layer string, r any) warden.Decision {
	return warden.Decision{Effect: warden.Deny, RuleID: layer + ".fault", Rationale: fmt.Sprintf("policy layer '%s' failed: %v", layer, r), Fault: true}
}

// canonical is the revision-hashed form of a policy.
type canonical struct {
	Version    int                   `json:"version"`
	Rules      *canonicalRules       `json:"rules,omitempty"`
	Roles      map[string][]string   `json:"roles,omitempty"`
	Caps       map[string][]string   `json:"capabilities,omitempty"`
	Skills     map[string][]string   `json:"skills,omitempty"`
	Conditions []canonicalConditions `json:"conditions,omitempty"`
	// CostLimit is set only when it is not the default, so that revisions of files
	// written before the limit existed do not change.
	CostLimit uint64 `json:"condition_cost_limit,omitempty"`
}

type canonicalRules struct {
	Mode     Mode                `json:"mode"`
	Deny     map[string][]string `json:"deny,omitempty"`
	Allow    map[string][]string `json:"allow,omitempty"`
	Escalate map[string][]string `json:"escalate,omitempty"`
	Match    map[string]string   `json:"match,omitempty"`
	Aliases  map[string]string   `json:"aliases,omitempty"`
	// Shell is present only when it differs from the strictest default, so revisions of
	// policies written before it existed do not change.
	Shell *canonicalShell `json:"shell,omitempty"`
}

type canonicalShell struct {
	AllowGitConfig bool `json:"allow_git_config,omitempty"`
}

type canonicalConditions struct {
	ID        string `json:"id"`
	When      string `json:"when"`
	Effect    string `json:"effect"`
	Reason    string `json:"reason,omitempty"`
	Rationale string `json:"rationale,omitempty"`
	TellLLM   string `json:"tell_llm,omitempty"`
}

func (p *Policy) computeRevision() string {
	c := canonical{Version: 1}
	if p.rules != nil {
		cfg := p.rules.cfg
		c.Rules = &canonicalRules{Mode: cfg.Mode, Deny: cfg.Deny, Allow: cfg.Allow, Escalate: cfg.Escalate, Match: cfg.Match}
		if cfg.Shell != (shell.Options{}) {
			c.Rules.Shell = &canonicalShell{AllowGitConfig: cfg.Shell.AllowGitConfig}
		}
		if cfg.Mode != ModeRules {
			c.Rules = &canonicalRules{Mode: cfg.Mode}
		}
		for k, v := range p.rules.aliases {
			if builtinAliases[k] != v {
				if c.Rules.Aliases == nil {
					c.Rules.Aliases = map[string]string{}
				}
				c.Rules.Aliases[k] = v
			}
		}
	}
	if p.roles != nil {
		roles, rr := p.roles.Definition()
		c.Roles = sortedSets(roles)
		if rr.Capabilities != nil {
			caps := map[string][]string{}
			for k, v := range rr.Capabilities {
				for _, x := range v {
					caps[k] = append(caps[k], string(x))
				}
				if caps[k] == nil {
					caps[k] = []string{}
				}
			}
			c.Caps = sortedSets(caps)
		}
		if rr.Skills != nil {
			c.Skills = sortedSets(rr.Skills)
		}
	}
	if p.conds != nil {
		for _, d := range p.conds.Definitions() {
			c.Conditions = append(c.Conditions, canonicalConditions{ID: d.ID, When: d.When, Effect: d.Effect.String(), Reason: d.Reason, Rationale: d.Rationale, TellLLM: d.TellLLM})
		}
		if p.conds.costLimit != DefaultConditionCostLimit {
			c.CostLimit = p.conds.costLimit
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic("policy: canonical form does not encode: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func sortedSets(m map[string][]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, v := range m {
		s := slices.Clone(v)
		sort.Strings(s)
		out[k] = slices.Compact(s)
		if out[k] == nil {
			out[k] = []string{}
		}
	}
	return out
}

// Synchronous reports whether every layer decides without blocking (see
// [RulePolicy.Synchronous]); CEL conditions are in-memory evaluations bounded by their
// cost limit and their context (see [Policy.Interruptible]).
func (p *Policy) Synchronous() bool { return p.rules == nil || p.rules.Synchronous() }

// Interruptible reports whether the policy has conditions: their cost grows with the
// arguments, and they stop, as a fault denial naming the condition, once the context
// of [Policy.Check] is done. A [warden.Guard] therefore calls such a policy inline but
// under its checker deadline ([warden.Interruptible]).
func (p *Policy) Interruptible() bool { return p.conds != nil }
