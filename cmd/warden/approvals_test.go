package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store"
)

// TestApprovalsGolden pins a whole approvals session on every store: list, show (plain
// and JSON), approve, a second decision, a session approval, decline with $USER,
// expired and unknown IDs, and bad flags.
func TestApprovalsGolden(t *testing.T) {
	for _, ts := range testStores() {
		t.Run(ts.name, func(t *testing.T) {
			f := populate(t, ts.dsn(t))
			t.Setenv("USER", "dana")
			got := session(t, f, [][]string{
				{"approvals", "list"},
				{"approvals", "list", "--json"},
				{"approvals", "show", f.deploy},
				{"approvals", "show", f.deploy, "--json"},
				{"approvals", "approve", f.deploy, "--by", "ann", "--note", "ok for today"},
				{"approvals", "approve", f.deploy, "--by", "bob"},
				{"approvals", "decline", f.deploy, "--by", "bob"},
				{"approvals", "approve", f.email, "--by", "carol", "--scope", "session", "--ttl", "30m"},
				{"approvals", "decline", f.staging, "--note", "not now"},
				{"approvals", "approve", f.expired, "--by", "ann"},
				{"approvals", "decline", f.expired, "--by", "ann"},
				{"approvals", "approve", "apv_nosuchapproval", "--by", "ann"},
				{"approvals", "show", "apv_nosuchapproval"},
				{"approvals", "approve", f.dev, "--by", "ann", "--scope", "forever"},
				{"approvals", "approve", f.dev, "--by", "ann", "--scope", "session"},
				{"approvals", "approve", f.dev, "--by", "ann", "--ttl", "10m"},
				{"approvals", "approve", f.dev, "--by", "ann", "--scope", "session", "--ttl", "-1m"},
				{"approvals", "approve", f.dev, "--by", " "},
				{"approvals", "approve"},
				{"approvals", "approve", f.dev, f.email},
				{"approvals"},
				{"approvals", "list"},
				{"approvals", "list", "--all"},
				{"approvals", "show", f.deploy},
				{"approvals", "show", f.email, "--json"},
			})
			golden(t, "approvals-session", got)
		})
	}
}

// TestApprovalsEmpty checks the messages of an empty list.
func TestApprovalsEmpty(t *testing.T) {
	dsn := testStores()[0].dsn(t)
	s, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	t.Setenv("WARDEN_STORE", dsn)
	for args, want := range map[string]string{
		"approvals list":        "No approvals are waiting.\n",
		"approvals list --all":  "No approvals.\n",
		"approvals list --json": "",
		"audit":                 "No calls match.\n",
		"audit --json":          "",
		"audit verify":          "OK: 0 entries checked; the chain is intact.\n",
	} {
		r := runWarden(t, strings.Fields(args)...)
		if r.code != 0 || r.stdout != want || r.stderr != "" {
			t.Errorf("warden %s: exit %d, stdout %q, stderr %q; want exit 0, %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
}

// TestApproveThenResume is the round trip the CLI exists for: a call pends, a person
// approves it from the command line, and the waiting process sees the decision,
// consumes the approval for exactly that call, resumes it, and the audit log says who
// approved. A second resume finds nothing to consume.
func TestApproveThenResume(t *testing.T) {
	for _, ts := range testStores() {
		t.Run(ts.name, func(t *testing.T) {
			ctx := context.Background()
			f := populate(t, ts.dsn(t))
			s, err := store.Open(ctx, f.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			g := fixtureGuard(t, audit.NewJournal(s, nil))

			woken := make(chan store.Pending, 1)
			var wg sync.WaitGroup
			wg.Go(func() {
				p, err := s.WaitDecision(ctx, f.deploy)
				if err != nil {
					t.Errorf("WaitDecision: %v", err)
				}
				woken <- p
			})
			if r := f.run(t, "approvals", "approve", f.deploy, "--by", "ann"); r.code != 0 {
				t.Fatalf("approve: exit %d: %s", r.code, r.stderr)
			}
			wg.Wait()
			p := <-woken
			if p.State != store.StateApproved || p.DecidedBy != "ann" {
				t.Fatalf("waiter saw %s by %q", p.State, p.DecidedBy)
			}
			var pd warden.PendingDecision
			if err := json.Unmarshal(p.Decision, &pd); err != nil {
				t.Fatal(err)
			}
			// An approval for other arguments authorizes nothing.
			other := warden.MustParseArgs(`{"env":"prod","version":"6.6.6"}`).Digest()
			if _, ok, err := s.ConsumeApproval(ctx, other, p.Session); err != nil || ok {
				t.Fatalf("ConsumeApproval(other digest) = %v, %v; want nothing", ok, err)
			}
			got, ok, err := s.ConsumeApproval(ctx, pd.Digest, pd.Session)
			if err != nil || !ok || got.ID != f.deploy {
				t.Fatalf("ConsumeApproval = %v, %v, %v", got.ID, ok, err)
			}
			out, err := g.Resume(ctx, pd, warden.Approved{By: p.DecidedBy, Digest: pd.ApprovalDigest()}, warden.Caller{Identity: pd.Identity, Session: pd.Session})
			if err != nil || out.Status != warden.StatusRan || !out.Executed {
				t.Fatalf("Resume: %s %v %s", out.Status, err, out.ModelText)
			}
			if _, ok, err := s.ConsumeApproval(ctx, pd.Digest, pd.Session); err != nil || ok {
				t.Fatalf("second ConsumeApproval = %v, %v; a once approval is consumed", ok, err)
			}
			calls, err := s.QueryCalls(ctx, store.CallFilter{Status: warden.StatusRan, ToolGlob: "deploy"})
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 || calls[0].ApprovedBy != "ann" || calls[0].CallID != "call-03" {
				t.Fatalf("audit of the resumed call: %+v", calls)
			}
			r := f.run(t, "approvals", "show", f.deploy)
			if !strings.Contains(r.stdout, "Consumed:     yes") {
				t.Errorf("show after use does not say consumed:\n%s", r.stdout)
			}
		})
	}
}

// TestApproveNeedsName: a decision records who made it, so with neither --by nor
// $USER nothing is decided.
func TestApproveNeedsName(t *testing.T) {
	f := populate(t, testStores()[0].dsn(t))
	t.Setenv("USER", "")
	for _, verb := range []string{"approve", "decline"} {
		r := f.run(t, "approvals", verb, f.deploy)
		if r.code != 2 || !strings.Contains(r.stderr, "say who decides with --by NAME ($USER is not set)") {
			t.Errorf("%s without a name: exit %d, stderr %q", verb, r.code, r.stderr)
		}
	}
	t.Setenv("USER", "erin")
	if r := f.run(t, "approvals", "decline", f.deploy); r.code != 0 || r.stdout != "declined "+f.deploy+" (deploy) by erin\n" {
		t.Errorf("decline with $USER: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
