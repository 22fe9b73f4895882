package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/errlines"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/policy/explain"
	"github.com/wardenhq/warden/policy/policytest"
)

func newTestCommand(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "test FILE...",
		Short: "Run policy test files",
		Long: `Test runs policy test files: YAML files that name a policy and list calls with the
verdict each must get. Each case is decided exactly like 'warden check' decides it.

  policy: safe.yaml            # relative to the test file's directory
  cases:
    - name: rm is denied
      tool: bash
      args: {command: "rm -rf /"}
      expect: deny             # allow, deny, ask (or escalate), halt
      rule_id: "rm *"          # optional: the rule that must decide
    - name: viewers may not read customer data
      tool: read_ticket
      role: viewer             # optional: the active role
      capabilities: [user_data]
      expect: deny
    - name: payroll skill is hidden from support
      tool: skill:payroll      # a skill activation, checked as skill_read
      role: support
      expect: deny

Test files are decoded strictly: unknown keys, duplicate keys, anchors and aliases
are errors. The exit code is 0 when every case passes, 1 when one fails, and 2 when a
test file or the policy it names cannot be used.`,
		RunE: func(cmd *cobra.Command, files []string) error {
			p, err := newTestProgram(files, stdout, stderr)
			return execute(cmd.Context(), p, err)
		},
	}
}

// testProgram is one `warden test`: policy test files run in order by policytest.
type testProgram struct {
	noResources
	files          []string
	stdout, stderr io.Writer
}

// newTestProgram checks that there are files to run.
func newTestProgram(files []string, stdout, stderr io.Writer) (*testProgram, error) {
	if len(files) == 0 {
		return nil, usageErrorf("name at least one test file")
	}
	return &testProgram{files: files, stdout: stdout, stderr: stderr}, nil
}

// Run runs every test file in order (see policytest.Run for the explain.Report), each case
// decided as `warden check` decides it and a failure explained as `warden check
// --explain` explains it; a test file that cannot be used prints its errors to stderr.
// The error carries the exit code: 2 when any file could not be used, else 1 when any
// case failed.
func (p *testProgram) Run(ctx context.Context) error {
	sum, err := policytest.Run(ctx, p.files, decideCase, p.stdout, &policytest.Options{
		Unusable: func(_ string, err error) { errlines.Write(p.stderr, err) },
	})
	switch {
	case err != nil:
		return internalError(err)
	case sum.Unusable > 0:
		return silentExit(exitUsage)
	case sum.Failed > 0:
		return silentExit(exitInternal)
	}
	return nil
}

// decideCase is the policytest.Decider of `warden test`: evaluateCall, and for the
// detail of a failure the verdict and its explanation, indented.
func decideCase(ctx context.Context, pol *policy.Policy, c policytest.Call) policytest.Outcome {
	r := evaluateCall(ctx, pol, callSpec{tool: c.Tool, args: c.Args, role: c.Role, capabilities: c.Capabilities})
	return policytest.Outcome{Decision: r.Decision, Detail: func(w io.Writer) error {
		if err := explain.WritePlain(w, "    ", r); err != nil {
			return err
		}
		return explain.WriteExplain(w, "    ", r)
	}}
}
