package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/store"
)

// TestApprovalsAndAuditShowWhatRuns: `warden approvals list|show` and `warden audit`,
// plain and --json, never write a control, bidi or invisible character as itself
// (an ESC [ sequence would recolour or clear the terminal, a U+202E reorders the
// command that will run), and never cut an argument.
func TestApprovalsAndAuditShowWhatRuns(t *testing.T) {
	dsn := testStores()[0].dsn(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	long := "echo " + strings.Repeat("harmless-", 100_000/9) + "; rm -rf / --no-preserve-root"
	rawArgs := "{\"cmd\":\"rm -rf \u202e/ #yrotcerid-pmt/.\",\"ansi\":\"\\u001b[2J\\u001b[31mred\",\"zw\":\"r\u200dm\",\"nul\":\"a\\u0000b\",\"long\":" +
		mustJSON(t, long) + "}"
	args, err := warden.ParseArgs([]byte(rawArgs))
	if err != nil {
		t.Fatal(err)
	}
	argsJSON, _ := args.MarshalJSON()
	decision, _ := json.Marshal(warden.PendingDecision{Kind: warden.KindAsk, Tool: "ba\u202esh", Args: args, Digest: args.Digest()})
	p, err := s.CreatePending(ctx, store.Pending{
		Kind: warden.KindAsk, Question: "Run\x1b[8m hidden\x1b[0m \u202eetadpu?", Detail: "line one\rover",
		Tool: "ba\u202esh", Args: argsJSON, Digest: "sha256:" + strings.Repeat("ab", 32), Session: "s\u2066",
		Identity: warden.Identity{Principal: "agent\u200b7"}, Expires: time.Now().Add(time.Hour), Decision: decision,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordCall(ctx, store.CallRecord{CallID: "c-1", Tool: "ba\u202esh", Args: argsJSON, ArgsDigest: args.Digest(),
		RuleID: "r\x1b[31m", Identity: warden.Identity{Principal: "agent\u200b7"}, Status: warden.StatusRan}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	t.Setenv("WARDEN_STORE", dsn)

	for _, cmd := range [][]string{
		{"approvals", "list"}, {"approvals", "list", "--json"}, {"approvals", "show", p.ID}, {"approvals", "show", p.ID, "--json"},
		{"audit"}, {"audit", "--json"},
	} {
		r := runWarden(t, cmd...)
		where := strings.Join(cmd, " ")
		if r.code != 0 {
			t.Errorf("warden %s: exit %d: %s", where, r.code, r.stderr)
			continue
		}
		for i, c := range r.stdout {
			if c != '\n' && display.Unsafe(c) {
				t.Errorf("warden %s: writes %U as itself near %q", where, c, r.stdout[max(0, i-40):i])
				break
			}
		}
		if !strings.Contains(r.stdout, `ba\u202esh`) {
			t.Errorf("warden %s: the tool's override is not shown as \\u202e", where)
		}
		if strings.HasSuffix(where, "--json") {
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if !json.Valid([]byte(line)) {
					t.Errorf("warden %s: a line is not JSON: %.200s", where, line)
				}
			}
		}
	}

	show := runWarden(t, "approvals", "show", p.ID).stdout
	for _, want := range []string{
		"Tool:         ba\\u202esh\n",
		"Question:     Run\\u001b[8m hidden\\u001b[0m \\u202eetadpu?\n",
		"Detail:       line one\\u000dover\n",
		"Principal:    agent\\u200b7\n",
		"Session:      s\\u2066\n",
		"Digest:       sha256:" + strings.Repeat("ab", 32) + "\n",
		"Args digest:  " + args.Digest() + "\n",
		`"cmd": "rm -rf \u202e/ #yrotcerid-pmt/."`,
		`"ansi": "\u001b[2J\u001b[31mred"`,
		`"zw": "r\u200dm"`,
		`"nul": "a\u0000b"`,
		`"long": ` + mustJSON(t, long), // whole: its dangerous end included
	} {
		if !strings.Contains(show, want) {
			t.Errorf("approvals show lacks %q", want)
		}
	}
	// The JSON output decodes to exactly the stored arguments.
	var got struct{ Args json.RawMessage }
	if err := json.Unmarshal([]byte(runWarden(t, "approvals", "show", p.ID, "--json").stdout), &got); err != nil {
		t.Fatal(err)
	}
	back, err := warden.ParseArgs(got.Args)
	if err != nil || back.Digest() != args.Digest() {
		t.Errorf("--json arguments do not decode to what runs (digest %s, want %s; %v)", back.Digest(), args.Digest(), err)
	}
	list := runWarden(t, "approvals", "list").stdout
	if !strings.Contains(list, `Run\u001b[8m hidden\u001b[0m \u202eetadpu?`) || !strings.Contains(list, `agent\u200b7`) {
		t.Errorf("approvals list does not escape the question and principal:\n%s", list)
	}
	if a := runWarden(t, "audit").stdout; !strings.Contains(a, `r\u001b[31m`) {
		t.Errorf("audit does not escape the rule ID:\n%s", a)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
