package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store"
)

// shadowJournal records calls as the gateway does when shadow policies judged them:
// each call's verdicts go into its first entry (audit.WithShadow).
type shadowJournal struct {
	inner    *audit.Journal
	verdicts map[string][]store.ShadowVerdict // by call id
}

func (j shadowJournal) Begin(ctx context.Context, c warden.Call, o warden.Outcome) (warden.JournalRef, error) {
	return j.inner.Begin(audit.WithShadow(ctx, j.verdicts[c.ID]), c, o)
}

func (j shadowJournal) End(ctx context.Context, ref warden.JournalRef, c warden.Call, o warden.Outcome) error {
	return j.inner.End(ctx, ref, c, o)
}

func (j shadowJournal) Record(ctx context.Context, c warden.Call, o warden.Outcome) error {
	return j.inner.Record(audit.WithShadow(ctx, j.verdicts[c.ID]), c, o)
}

const (
	shadowRevA = "sha256:aaaa1111bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa7777bbbb8888"
	shadowRevB = "sha256:1234567890ab1234567890ab1234567890ab1234567890ab1234567890abcdef"
)

// populateShadow fills a new store through the fixture guard with calls, some with
// shadow verdicts: a shadow deny of a call that ran, a refused call without one, a
// call judged by two shadows, and a shadow fault.
func populateShadow(t *testing.T, dsn string) fixture {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	defer s.Close()
	g := fixtureGuard(t, shadowJournal{audit.NewJournal(s, nil), map[string][]store.ShadowVerdict{
		"call-s1": {{Source: "policy", Effect: "would deny", Enforced: "allow", RuleID: "no-readme", Rationale: "condition 'no-readme' matched", Revision: shadowRevA}},
		"call-s3": {
			{Source: "policy", Effect: "would ask", Enforced: "allow", RuleID: "go *", Rationale: "escalate by rule: go *", Revision: shadowRevA},
			{Source: "shadow_policy", Effect: "would halt", Enforced: "allow", RuleID: "no-tests", Reason: "ops:freeze", Rationale: "condition 'no-tests' matched", Revision: shadowRevB},
		},
		"call-s4": {{Source: "shadow_policy", Effect: "fault", Enforced: "allow", RuleID: "cost", Rationale: "permission-checker threw: condition 'cost' exceeded its cost limit of 1", Revision: shadowRevB}},
	}})
	ann := warden.Identity{Tenant: "acme", Principal: "ann"}
	bob := warden.Identity{Tenant: "acme", Principal: "bob"}
	A := warden.MustParseArgs
	for _, c := range []struct {
		call warden.Call
		want warden.Status
	}{
		{warden.Call{ID: "call-s1", Tool: "read_file", Args: A(`{"path":"README.md"}`), Identity: ann, Session: "s-1"}, warden.StatusRan},
		{warden.Call{ID: "call-s2", Tool: "bash", Args: A(`{"command":"rm -rf /"}`), Identity: bob, Session: "s-2"}, warden.StatusRefused},
		{warden.Call{ID: "call-s3", Tool: "bash", Args: A(`{"command":"go test ./..."}`), Identity: bob, Session: "s-2"}, warden.StatusRan},
		{warden.Call{ID: "call-s4", Tool: "read_file", Args: A(`{"path":"go.mod"}`), Identity: ann, Session: "s-1"}, warden.StatusRan},
	} {
		o, err := g.Call(ctx, c.call)
		if err != nil || o.Status != c.want {
			t.Fatalf("call %s: %s, %v", c.call.ID, o.Status, err)
		}
	}
	t.Setenv("WARDEN_STORE", dsn)
	return fixture{dsn: dsn, base: time.Now().UTC().Truncate(time.Second)}
}

// TestAuditShadowGolden pins `warden audit --shadow`, alone, with filters, with the
// limit and as JSON lines, on every store.
func TestAuditShadowGolden(t *testing.T) {
	for _, ts := range testStores() {
		t.Run(ts.name, func(t *testing.T) {
			f := populateShadow(t, ts.dsn(t))
			got := session(t, f, [][]string{
				{"audit", "--shadow"},
				{"audit", "--shadow", "--principal", "bob"},
				{"audit", "--shadow", "--tool", "wipe"},
				{"audit", "--shadow", "--limit", "1"},
				{"audit", "--shadow", "--json"},
				{"audit"},
			})
			golden(t, "audit-shadow", got)
		})
	}
}

// TestAuditShadowJSON checks the verdicts of --shadow --json field by field.
func TestAuditShadowJSON(t *testing.T) {
	f := populateShadow(t, testStores()[0].dsn(t))
	r := f.run(t, "audit", "--shadow", "--json", "--principal", "bob")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(lines), r.stdout)
	}
	var got struct {
		CallID string                `json:"call_id"`
		Status string                `json:"status"`
		Shadow []store.ShadowVerdict `json:"shadow"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.CallID != "call-s3" || got.Status != "ran" || len(got.Shadow) != 2 || got.Shadow[1].Reason != "ops:freeze" || got.Shadow[1].Revision != shadowRevB {
		t.Fatalf("%+v", got)
	}
}
