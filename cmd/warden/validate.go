package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/errlines"

	"github.com/wardenhq/warden/policy"
)

func newValidateCommand(stdout, stderr io.Writer) *cobra.Command {
	var role string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Validate policy files and gateway configs",
		Long: `Validate loads each policy file strictly and prints its revision, or every
problem found, each located by file, line and column with a hint. The exit code is 2
when any file is invalid.

A file whose top level is a mapping with no version key, none of a policy file's keys
and at least one of a gateway config's (policy, servers, listen, clients, ...) is a
gateway config: it is checked as warden serve -c FILE checks it before starting
anything (the config, the token_env variables it names, the policy file it names and
the roles it gives clients), and validate prints what it checked and whether the
transport policy admits each server. Nothing is started, no store is opened and no
connection is made, so a server's tools are not discovered. --role applies to policy
files only.

For a valid file it also prints each condition's estimated worst-case cost against
its cost limit (the estimate assumes every string, list and map in the arguments is
as large as the gateway's 4 MiB body limit), and warns, on stderr and located like
errors, about rules that can never match and conditions that miss some names of a
tool. Warnings do not change the exit code.`,
		RunE: func(cmd *cobra.Command, files []string) error {
			p, err := newValidateProgram(files, role, stdout, stderr)
			return execute(cmd.Context(), p, err)
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "active role to select (default: each file's active_role)")
	return cmd
}

// validateProgram is one `warden validate`: policy files loaded and reported on.
type validateProgram struct {
	noResources
	files          []string
	role           string
	stdout, stderr io.Writer
}

// newValidateProgram checks that there are files to validate.
func newValidateProgram(files []string, role string, stdout, stderr io.Writer) (*validateProgram, error) {
	if len(files) == 0 {
		return nil, usageErrorf("name at least one policy file")
	}
	return &validateProgram{files: files, role: role, stdout: stdout, stderr: stderr}, nil
}

// Run loads each file and prints "<file>: ok (revision sha256:...)" and its
// conditions' cost estimates to stdout, and its warnings to stderr, or the file's errors
// to stderr, one per line. It returns an exit-2 error when any file is invalid;
// warnings alone never fail it.
func (p *validateProgram) Run(ctx context.Context) error {
	files, role, stdout, stderr := p.files, p.role, p.stdout, p.stderr
	invalid := false
	for _, file := range files {
		if isGatewayConfig(file) {
			ok, err := p.validateGateway(ctx, file)
			if err != nil {
				return internalError(err)
			}
			invalid = invalid || !ok
			continue
		}
		pol, err := policy.LoadFile(file, &policy.LoadOptions{Role: role})
		kind := ""
		if errors.Is(err, policy.ErrShadowFile) {
			// A shadow policy is valid as one: it is checked as the gateway loads it.
			pol, err = policy.LoadShadowFile(file, &policy.LoadOptions{Role: role})
			kind = "shadow policy, "
		}
		if err != nil {
			invalid = true
			errlines.Write(stderr, err)
			continue
		}
		if _, err := fmt.Fprintf(stdout, "%s: ok (%srevision %s)\n", file, kind, pol.Revision()); err != nil {
			return internalError(err)
		}
		if sh := pol.Shadow(); sh != nil {
			if _, err := fmt.Fprintf(stdout, "  shadow items (enforce: false): evaluated beside it, never enforced (shadow revision %s)\n", sh.Revision()); err != nil {
				return internalError(err)
			}
		}
		if err := writePolicyNotes(stdout, stderr, pol); err != nil {
			return internalError(err)
		}
	}
	if invalid {
		return silentExit(exitUsage)
	}
	return nil
}

// writePolicyNotes prints a valid policy's condition cost estimates to stdout and its
// warnings to stderr.
func writePolicyNotes(stdout, stderr io.Writer, pol *policy.Policy) error {
	if err := writeCostEstimates(stdout, pol.Conditions()); err != nil {
		return err
	}
	for _, w := range pol.Warnings() {
		w.Msg = "warning: " + w.Msg
		if _, err := fmt.Fprintln(stderr, w.Error()); err != nil {
			return err
		}
	}
	return nil
}

// writeCostEstimates prints one line per condition: its worst-case cost under the 4 MiB
// assumption and the limit it runs under; a worst case over the limit says what happens
// then.
func writeCostEstimates(w io.Writer, conds *policy.Conditions) error {
	if conds == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  condition cost estimates (worst case, assuming every string, list and map in the arguments is up to %d MiB, the gateway's body limit):\n", policy.EstimateArgBytes>>20)
	for _, e := range conds.CostEstimates() {
		est := strconv.FormatUint(e.Max, 10)
		if e.Max == math.MaxUint64 {
			est = "unbounded"
		}
		fmt.Fprintf(&b, "    %s: %s (limit %d)", e.ID, est, e.Limit)
		if e.Exceeds() {
			b.WriteString(": calls with arguments large enough to reach the limit are refused")
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
