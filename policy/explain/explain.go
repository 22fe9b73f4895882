// Package explain decides one call against a policy the way the pipeline asks a
// checker, and keeps the account of it: every request the policy was asked, which one
// decided, each layer's answer and trace, what happened to each declared capability,
// and what the model would read. It is what `warden check`, `warden test`'s failure
// output and the Claude Code hook show; it is its own package so that the account is
// computed and rendered once, not per command.
package explain

import (
	"context"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// Call is one call to decide.
type Call struct {
	Tool         string
	Args         warden.Args
	Role         string              // "" means the policy's active_role
	Capabilities []warden.Capability // what the tool declares, in order, without repeats
}

// Report is the outcome of one call, with everything an explanation shows.
type Report struct {
	Tool     string
	Decision warden.Decision // the combined answer
	Revision string
	// HasConditions is true when the policy has conditions; a check where none matched
	// has no conditions layer in its trace.
	HasConditions bool
	// Checks lists every request the policy was asked, in order.
	Checks []Step
	// Decided is the index in Checks of the answer that won, or -1 when the policy was
	// not asked at all (a skill activation the policy does not gate).
	Decided int
	// Capabilities says, for each capability the tool declares, whether it was asked.
	Capabilities []CapStatus
}

// Step is one request the policy was asked and its answer.
type Step struct {
	Capability warden.Capability
	Decision   warden.Decision
	Trace      policy.Trace
}

// CapStatus is what happened to one declared capability.
type CapStatus struct {
	Capability warden.Capability
	Step       int    // index in Report.Checks, or -1 when not asked
	Why        string // why it was not asked
}

// notGated is the answer for a skill activation when the policy does not govern
// skill_read: the pipeline's skill gate runs only for a checker that governs it.
const notGated = "the policy does not govern skill_read, so skill activations are not gated"

// Evaluate decides c the way the pipeline asks a checker: tool_call, then each
// declared capability the policy governs, stopping at the first refusal
// (warden.CheckCall). A skill target ("skill:<id>") is asked as one skill_read request
// instead. The policy is asked again through Policy.Explain for each request to record
// its trace; a policy loaded from a file has no escalation handler, so both answers are
// the same.
func Evaluate(ctx context.Context, pol *policy.Policy, c Call) Report {
	r := Report{Tool: c.Tool, Revision: pol.Revision(), Decided: -1, HasConditions: pol.Conditions() != nil}
	role := c.Role
	if role == "" {
		role = pol.ActiveRole()
	}
	req := warden.Request{Target: c.Tool, Args: c.Args, Actor: role}

	if _, ok := warden.SkillIDFromTarget(c.Tool); ok {
		if !pol.Governs(warden.CapSkillRead) {
			r.Decision = warden.Decision{Effect: warden.Allow, Rationale: notGated}
			return r
		}
		req.Capability = warden.CapSkillRead
		d, t := pol.Explain(ctx, req)
		r.Checks = []Step{{Capability: warden.CapSkillRead, Decision: d, Trace: t}}
		r.Decision, r.Decided = d, 0
		return r
	}

	visit := func(asked warden.Request, d warden.Decision) {
		_, t := pol.Explain(ctx, asked)
		r.Checks = append(r.Checks, Step{Capability: asked.Capability, Decision: d, Trace: t})
	}
	r.Decision = warden.CheckCall(ctx, pol, req, c.Capabilities, visit)
	// The answer that decided is the first one CheckCall's answer is (a later one
	// equal to it never replaced it, since only an answer that outranks replaces).
	r.Decided = decidedBy(r.Checks, r.Decision)
	for _, c := range c.Capabilities {
		st := CapStatus{Capability: c, Step: -1}
		for i, s := range r.Checks {
			if s.Capability == c {
				st.Step = i
			}
		}
		if st.Step < 0 {
			if warden.CheckerGoverns(pol, c) {
				st.Why = "an earlier check refused the call"
			} else {
				st.Why = "the policy does not govern " + string(c)
			}
		}
		r.Capabilities = append(r.Capabilities, st)
	}
	return r
}

// decidedBy is the index of the first check whose answer is d (the arguments aside:
// CheckCall's answer carries the replacement the checks made), or -1.
func decidedBy(checks []Step, d warden.Decision) int {
	d.Args = nil
	for i, s := range checks {
		got := s.Decision
		got.Args = nil
		if got == d {
			return i
		}
	}
	return -1
}

// ModelText is what the model would read: for a refusal the decision's model text, for
// allow and ask the decision's own TellLLM (usually empty).
func (r Report) ModelText() string {
	switch r.Decision.Effect {
	case warden.Allow, warden.Ask:
		return r.Decision.TellLLM
	}
	return r.Decision.ModelText(r.Tool)
}
