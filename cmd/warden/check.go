package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/policy/policytest"
)

// checkOptions are the flags of `warden check`.
type checkOptions struct {
	policy       string
	role         string
	tool         string
	args         string
	capabilities []string
	json         bool
	explain      bool
}

func newCheckCommand(stdout io.Writer) *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check --policy FILE --tool NAME [--args JSON] [--role R] [--capability CAP]...",
		Short: "Decide one tool call against a policy file",
		Long: `Check asks a policy file what would happen to one tool call, the way the
pipeline asks it: first whether the tool may be called at all (tool_call), then each
capability the tool declares (--capability) that the policy governs, stopping at the
first refusal. The strongest answer wins: halt > deny > ask > allow.

A tool named skill:<id> is a skill activation: it is checked as a skill_read request
for that skill, the way the read_skill tool is gated. A policy that does not govern
skill_read does not gate skills, so the activation is allowed.

The exit code is the verdict: 0 allow, 3 deny, 4 ask, 5 halt; 2 means bad usage or a
bad policy file, 1 an internal error.`,
		Example: `  warden check --policy examples/policies/safe.yaml --tool bash --args '{"command":"rm -rf /"}'
  warden check --policy support.yaml --role viewer --tool read_ticket --capability user_data --explain`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := newCheckProgram(o, stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.policy, "policy", "", "policy file (YAML)")
	f.StringVar(&o.role, "role", "", "active role (default: the policy's active_role)")
	f.StringVar(&o.tool, "tool", "", "tool name, or skill:<id> for a skill activation")
	f.StringVar(&o.args, "args", "{}", "tool arguments as a JSON object")
	f.StringArrayVar(&o.capabilities, "capability", nil, "a capability the tool declares: memory_read, memory_write, external_net or user_data (repeatable)")
	f.BoolVar(&o.json, "json", false, "print the decision as one JSON object")
	f.BoolVar(&o.explain, "explain", false, "explain which layer and rule decided, and how")
	_ = cmd.MarkFlagRequired("policy")
	_ = cmd.MarkFlagRequired("tool")
	return cmd
}

// checkProgram is one `warden check`: one call, decided against a policy file.
type checkProgram struct {
	noResources
	o    checkOptions
	call callSpec
	w    io.Writer
}

// newCheckProgram parses and checks the call the flags describe; the policy is read by
// Run.
func newCheckProgram(o checkOptions, w io.Writer) (*checkProgram, error) {
	args, err := warden.ParseArgs([]byte(o.args))
	if err != nil {
		return nil, usageErrorf("invalid --args: %s", strings.TrimPrefix(err.Error(), "arguments: "))
	}
	caps, err := policytest.ParseCapabilities(o.capabilities)
	if err != nil {
		return nil, usageErrorf("invalid --capability: %v", err)
	}
	c := callSpec{tool: o.tool, args: args, role: o.role, capabilities: caps}
	if err := c.validate(); err != nil {
		return nil, usageErrorf("invalid --tool: %v", err)
	}
	return &checkProgram{o: o, call: c, w: w}, nil
}

// Run decides the call and prints the result. The returned error carries the exit
// code: the verdict (0, 3, 4, 5), or 2 for a bad policy file.
func (p *checkProgram) Run(ctx context.Context) error {
	o, w := p.o, p.w
	pol, err := policy.LoadFile(o.policy, &policy.LoadOptions{Role: o.role})
	if err != nil {
		return configError(err)
	}
	r := evaluateCall(ctx, pol, p.call)
	switch {
	case o.json:
		err = writeJSON(w, r, o.explain)
	default:
		err = writePlain(w, "", r)
		if err == nil && o.explain {
			err = writeExplain(w, "", r)
		}
	}
	if err != nil {
		return internalError(fmt.Errorf("writing the result: %w", err))
	}
	return silentExit(effectExitCode(r.decision.Effect))
}

// callSpec is one call to decide, as `warden check` flags or a `warden test` case give it.
type callSpec struct {
	tool         string
	args         warden.Args
	role         string              // "" means the policy's active_role
	capabilities []warden.Capability // what the tool declares, in order, without repeats
}

// validate refuses calls that cannot be asked (policytest.Call.Validate).
func (c callSpec) validate() error {
	return policytest.Call{Tool: c.tool, Capabilities: c.capabilities}.Validate()
}

// report is the outcome of one call, with everything --explain shows.
type report struct {
	tool     string
	decision warden.Decision // the combined answer
	revision string
	// hasConditions is true when the policy has conditions; a check where none matched
	// has no conditions layer in its trace.
	hasConditions bool
	// checks lists every request the policy was asked, in order.
	checks []checkStep
	// decided is the index in checks of the answer that won, or -1 when the policy was
	// not asked at all (a skill activation the policy does not gate).
	decided int
	// capabilities says, for each capability the tool declares, whether it was asked.
	capabilities []capStatus
}

// checkStep is one request the policy was asked and its answer.
type checkStep struct {
	capability warden.Capability
	decision   warden.Decision
	trace      policy.Trace
}

// capStatus is what happened to one declared capability.
type capStatus struct {
	capability warden.Capability
	step       int    // index in report.checks, or -1 when not asked
	why        string // why it was not asked
}

// notGated is the answer for a skill activation when the policy does not govern
// skill_read: the pipeline's skill gate runs only for a checker that governs it.
const notGated = "the policy does not govern skill_read, so skill activations are not gated"

// evaluateCall decides c the way the pipeline asks a checker: tool_call, then each
// declared capability the policy governs, stopping at the first refusal
// (warden.CheckCall). A skill target ("skill:<id>") is asked as one skill_read request
// instead. The policy is asked again through Policy.Explain for each request to record
// its trace; a policy loaded from a file has no escalation handler, so both answers are
// the same.
func evaluateCall(ctx context.Context, pol *policy.Policy, c callSpec) report {
	r := report{tool: c.tool, revision: pol.Revision(), decided: -1, hasConditions: pol.Conditions() != nil}
	role := c.role
	if role == "" {
		role = pol.ActiveRole()
	}
	req := warden.Request{Target: c.tool, Args: c.args, Actor: role}

	if _, ok := warden.SkillIDFromTarget(c.tool); ok {
		if !pol.Governs(warden.CapSkillRead) {
			r.decision = warden.Decision{Effect: warden.Allow, Rationale: notGated}
			return r
		}
		req.Capability = warden.CapSkillRead
		d, t := pol.Explain(ctx, req)
		r.checks = []checkStep{{capability: warden.CapSkillRead, decision: d, trace: t}}
		r.decision, r.decided = d, 0
		return r
	}

	visit := func(asked warden.Request, d warden.Decision) {
		_, t := pol.Explain(ctx, asked)
		r.checks = append(r.checks, checkStep{capability: asked.Capability, decision: d, trace: t})
	}
	r.decision = warden.CheckCall(ctx, pol, req, c.capabilities, visit)
	// The answer that decided is the first one CheckCall's answer is (a later one
	// equal to it never replaced it, since only an answer that outranks replaces).
	r.decided = decidedBy(r.checks, r.decision)
	for _, c := range c.capabilities {
		st := capStatus{capability: c, step: -1}
		for i, s := range r.checks {
			if s.capability == c {
				st.step = i
			}
		}
		if st.step < 0 {
			if warden.CheckerGoverns(pol, c) {
				st.why = "an earlier check refused the call"
			} else {
				st.why = "the policy does not govern " + string(c)
			}
		}
		r.capabilities = append(r.capabilities, st)
	}
	return r
}

// decidedBy is the index of the first check whose answer is d (the arguments aside:
// CheckCall's answer carries the replacement the checks made), or -1.
func decidedBy(checks []checkStep, d warden.Decision) int {
	d.Args = nil
	for i, s := range checks {
		got := s.decision
		got.Args = nil
		if got == d {
			return i
		}
	}
	return -1
}

// modelText is what the model would read: for a refusal the decision's model text, for
// allow and ask the decision's own TellLLM (usually empty).
func (r report) modelText() string {
	switch r.decision.Effect {
	case warden.Allow, warden.Ask:
		return r.decision.TellLLM
	}
	return r.decision.ModelText(r.tool)
}
