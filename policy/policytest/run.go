// Package policytest is the policy test file (`*_test.yaml`: a policy and the calls
// with the verdict each must get) and the runner `warden test` is: strict decoding with
// located errors, the policy loaded once per role the cases use, the cases run in order
// and reported.
//
// It is its own package because the test-file format is a second language users write,
// next to the policy language, with its own exact errors; and a program or a CI step
// that embeds Warden can run a repository's policy tests without the CLI. It imports
// policy, never the other way round. How a case is decided is given to Run (a Decider):
// the CLI decides it exactly as `warden check` does and explains a failure the same way.
package policytest

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// Decider decides one case's call against the policy loaded for the case's role.
type Decider func(ctx context.Context, pol *policy.Policy, c Call) Outcome

// Outcome is a Decider's answer for one call.
type Outcome struct {
	Decision warden.Decision
	// Detail, when not nil, writes what explains the decision; Run prints it under the
	// FAIL line of a failing case. Its error is ignored: Run writes to a buffer.
	Detail func(w io.Writer) error
}

// Options are Run's optional parts; nil means all defaults.
type Options struct {
	// Unusable receives, in order, the error of each file that cannot be used (its own
	// located errors, or the policy's, joined with errors.Join); nil drops them (the
	// Summary still counts the file).
	Unusable func(file string, err error)
}

// Summary counts what Run did.
type Summary struct {
	Passed, Failed int
	// Unusable is the number of files that could not be used; their cases did not run.
	Unusable int
}

// Run runs every test file in order and writes the report to w: for a file whose cases
// all pass "ok <file>: N cases", else one "FAIL <file>: <case>: expected ..., got ..."
// line per failing case followed by its Outcome's Detail, each file's lines written at
// once; the last line is "N passed, N failed". A file that cannot be used goes to
// opts.Unusable and the next file runs. The error is not nil only when ctx ended between
// cases ("interrupted: ...") or writing to w failed; the Summary then counts what ran.
func Run(ctx context.Context, files []string, decide Decider, w io.Writer, opts *Options) (Summary, error) {
	if opts == nil {
		opts = &Options{}
	}
	var sum Summary
	for _, file := range files {
		tf, err := Load(file)
		if err == nil {
			err = tf.loadPolicies()
		}
		if err != nil {
			sum.Unusable++
			if opts.Unusable != nil {
				opts.Unusable(file, err)
			}
			continue
		}
		var out bytes.Buffer // one file's report, written at once
		for _, tc := range tf.Cases {
			if err := ctx.Err(); err != nil {
				return sum, fmt.Errorf("interrupted: %w", err)
			}
			o := decide(ctx, tf.policies[tc.Call.Role], tc.Call)
			if tc.passes(o.Decision) {
				sum.Passed++
				continue
			}
			sum.Failed++
			fmt.Fprintf(&out, "FAIL %s: %s: expected %s, got %s rule %s\n", file, tc.Name, tc.expectation(), o.Decision.Effect, orDash(o.Decision.RuleID))
			if o.Detail != nil {
				_ = o.Detail(&out) // a bytes.Buffer does not fail
			}
		}
		if out.Len() == 0 {
			fmt.Fprintf(&out, "ok %s: %d cases\n", file, len(tf.Cases))
		}
		if _, err := w.Write(out.Bytes()); err != nil {
			return sum, err
		}
	}
	if _, err := fmt.Fprintf(w, "%d passed, %d failed\n", sum.Passed, sum.Failed); err != nil {
		return sum, err
	}
	return sum, nil
}

// passes reports whether d is the verdict the case expects.
func (tc Case) passes(d warden.Decision) bool {
	return d.Effect == tc.Expect && (!tc.HasRuleID || d.RuleID == tc.RuleID)
}

func (tc Case) expectation() string {
	if tc.HasRuleID {
		return tc.Expect.String() + " rule " + orDash(tc.RuleID)
	}
	return tc.Expect.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
