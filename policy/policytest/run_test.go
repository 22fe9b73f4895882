package policytest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// checkTool decides a call's tool_call request with the policy itself and names the
// rule in its detail.
func checkTool(ctx context.Context, pol *policy.Policy, c Call) Outcome {
	d, err := pol.Check(ctx, warden.Request{Target: c.Tool, Args: c.Args, Capability: warden.CapToolCall})
	if err != nil {
		d = warden.Decision{Effect: warden.Deny, RuleID: "error"}
	}
	return Outcome{Decision: d, Detail: func(w io.Writer) error {
		_, err := io.WriteString(w, "    decided by "+d.RuleID+"\n")
		return err
	}}
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Run reports each file (ok, or its FAIL lines with the Decider's detail), skips an
// unusable one after handing its errors over, and ends with the summary line.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.yaml", "version: 1\nrules:\n  deny:\n    bash: [\"rm *\"]\n  allow:\n    bash: [\"ls\"]\n")
	ok := write(t, dir, "ok_test.yaml", "policy: p.yaml\ncases:\n  - {name: ls, tool: bash, args: {command: ls}, expect: allow}\n  - {name: rm, tool: bash, args: {command: rm x}, expect: deny, rule_id: \"rm *\"}\n")
	bad := write(t, dir, "bad_test.yaml", "policy: p.yaml\ncases:\n  - {name: rm, tool: bash, args: {command: rm x}, expect: allow}\n")
	broken := write(t, dir, "broken_test.yaml", "policy: p.yaml\ncases: []\n")

	var out strings.Builder
	var unusable []string
	sum, err := Run(context.Background(), []string{ok, broken, bad}, checkTool, &out, &Options{
		Unusable: func(file string, err error) { unusable = append(unusable, file+": "+err.Error()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum != (Summary{Passed: 2, Failed: 1, Unusable: 1}) {
		t.Errorf("summary %+v", sum)
	}
	want := "ok " + ok + ": 2 cases\n" +
		"FAIL " + bad + ": rm: expected allow, got deny rule rm *\n    decided by rm *\n" +
		"2 passed, 1 failed\n"
	if out.String() != want {
		t.Errorf("report\n got %q\nwant %q", out.String(), want)
	}
	if len(unusable) != 1 || !strings.HasPrefix(unusable[0], broken+": ") || !strings.Contains(unusable[0], "cases is empty") {
		t.Errorf("unusable %q", unusable)
	}

	// An ended context stops before the next case.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out.Reset()
	if _, err := Run(ctx, []string{ok}, checkTool, &out, nil); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "interrupted: ") {
		t.Errorf("cancelled: %v", err)
	}
}

// Parse resolves the policy against the test file's directory and keeps the cases in
// order with what they expect.
func TestParse(t *testing.T) {
	tf, err := Parse("dir/x_test.yaml", []byte("policy: p.yaml\ncases:\n  - {name: a, tool: skill:refunds, role: support, expect: escalate, rule_id: \"\"}\n  - {name: b, tool: t, capabilities: [user_data, user_data], expect: deny}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tf.Path != "dir/x_test.yaml" || tf.Policy != filepath.Join("dir", "p.yaml") || len(tf.Cases) != 2 {
		t.Fatalf("file %+v", tf)
	}
	a, b := tf.Cases[0], tf.Cases[1]
	if a.Name != "a" || a.Call.Tool != "skill:refunds" || a.Call.Role != "support" || a.Expect != warden.Ask || !a.HasRuleID || a.RuleID != "" {
		t.Errorf("case a %+v", a)
	}
	if b.HasRuleID || len(b.Call.Capabilities) != 1 || b.Call.Capabilities[0] != warden.CapUserData {
		t.Errorf("case b %+v", b)
	}
	if _, err := Parse("x.yaml", []byte("policy: p.yaml\ncases:\n  - {name: a, tool: skill:x, capabilities: [user_data], expect: deny}\n")); err == nil || !strings.Contains(err.Error(), "declares no capabilities") {
		t.Errorf("skill with capabilities: %v", err)
	}
}
