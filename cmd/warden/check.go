package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/policy/explain"
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
		err = explain.WriteJSON(w, r, o.explain)
	default:
		err = explain.WritePlain(w, "", r)
		if err == nil && o.explain {
			err = explain.WriteExplain(w, "", r)
		}
	}
	if err != nil {
		return internalError(fmt.Errorf("writing the result: %w", err))
	}
	return silentExit(effectExitCode(r.Decision.Effect))
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

// evaluateCall decides c with explain.Evaluate (the way the pipeline asks a checker).
func evaluateCall(ctx context.Context, pol *policy.Policy, c callSpec) explain.Report {
	return explain.Evaluate(ctx, pol, explain.Call{Tool: c.tool, Args: c.args, Role: c.role, Capabilities: c.capabilities})
}
