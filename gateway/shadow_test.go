package gateway_test

// Shadow policies at the gateway, over the wire: a shadow deny lets the call run and
// is recorded (event and audit record), a shadow never loosens, a candidate file
// (shadow_policy) is evaluated beside the policy's own shadow items and reloaded with
// it, and a shadow that cannot decide is a recorded fault that changes nothing.

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store"
)

// gwShadowItems are shadow conditions added to gwPolicy.
const gwShadowItems = `  - id: shadow-no-todo
    when: 'tool == "mcp__notes__write_note" && args.name == "todo"'
    effect: deny
    rationale: todo notes will be refused
    enforce: false
  - id: shadow-allow-secrets
    when: 'tool == "mcp__notes__write_note" && string(args.name).startsWith("secret")'
    effect: allow
    enforce: false
  - id: shadow-broken
    when: 'tool == "mcp__notes__write_note" && args.name == "broken" && args.missing > 5'
    effect: deny
    enforce: false
`

func shadowRevision(t *testing.T, src string) string {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Shadow() == nil {
		t.Fatal("no shadow items")
	}
	return p.Shadow().Revision()
}

func shadowEvents(e *gwEnv) []warden.Event { return e.events.named(warden.EventShadow) }

func TestShadowDenyLetsTheCallRun(t *testing.T) {
	src := gwPolicy + gwShadowItems
	e := gwStart(t, gwSetup{policy: src})
	// The enforcing part is the file without its shadow items: same revision.
	if got, want := e.gw.Revision(), parse(t, gwPolicy).Revision(); got != want {
		t.Fatalf("enforcing revision %s, want the revision of the policy without shadow items %s", got, want)
	}
	shadowRev := shadowRevision(t, src)
	w := e.connect(t, gwWriterToken, nil)

	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "todo", "text": "buy milk"}), false, `Wrote note "todo" (8 bytes).`)
	rec := e.lastCall(t, "mcp__notes__write_note", "writer-agent")
	if rec.Status != warden.StatusRan || !rec.Executed || rec.Revision != e.gw.Revision() || rec.Effect != "" {
		t.Fatalf("record %+v: want a call that ran under the enforcing revision", rec)
	}
	want := []store.ShadowVerdict{{Source: "policy", Effect: "would deny", Enforced: "allow", RuleID: "shadow-no-todo", Rationale: "todo notes will be refused", Revision: shadowRev}}
	if diff := cmp.Diff(want, rec.Shadow); diff != "" {
		t.Fatalf("audit record's verdicts (-want +got):\n%s", diff)
	}
	evs := shadowEvents(e)
	if len(evs) != 1 {
		t.Fatalf("%d shadow events, want 1: %+v", len(evs), evs)
	}
	ev := evs[0]
	if ev.Tool != "mcp__notes__write_note" || ev.Identity.Principal != "writer-agent" || ev.CallID != rec.CallID ||
		ev.Checker != "policy" || ev.Effect != warden.Deny || ev.Outcome != "would deny" || ev.Detail != "allow" ||
		ev.RuleID != "shadow-no-todo" || ev.Rationale != "todo notes will be refused" || ev.Revision != shadowRev ||
		ev.Capability != warden.CapToolCall || ev.Target != "mcp__notes__write_note" || ev.Error != "" || !ev.Start.IsZero() || ev.Time.IsZero() {
		t.Fatalf("shadow event %+v", ev)
	}

	// A call the shadow agrees with leaves no verdict.
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "plain", "text": "x"}), false, `Wrote note "plain" (1 bytes).`)
	if rec := e.lastCall(t, "mcp__notes__write_note", "writer-agent"); rec.Shadow != nil || len(shadowEvents(e)) != 1 {
		t.Fatalf("a call without a stricter shadow answer got verdicts %+v", rec.Shadow)
	}

	// The metrics count the verdict, beside the two calls that ran.
	srv := httptest.NewServer(e.gw.MetricsHandler())
	defer srv.Close()
	fams := scrapeMetrics(t, srv.URL)
	wantValues(t, fams, "warden_shadow_verdicts_total", map[string]float64{"outcome=would deny,source=policy,tool=mcp__notes__write_note": 1})
	if got := values(fams, "warden_calls_total")["stage=execute,status=ran,tool=mcp__notes__write_note"]; got != 2 {
		t.Errorf("warden_calls_total of the writes that ran = %v, want 2 (a shadow changes no call)", got)
	}
}

// A shadow allow beside an enforcing deny records nothing, and the call is refused
// exactly as without it.
func TestShadowNeverLoosens(t *testing.T) {
	e := gwStart(t, gwSetup{
		policy: gwPolicy + gwShadowItems,
		extra:  "shadow_policy: candidate.yaml\n",
		files:  map[string]string{"candidate.yaml": "version: 1\nenforce: false\nmode: allow_all\n"},
	})
	w := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "secret-plan", "text": "x"}), true,
		"Notes named secret* are written by people only. Choose another name.")
	rec := e.lastCall(t, "mcp__notes__write_note", "writer-agent")
	if rec.Status != warden.StatusRefused || rec.Executed || rec.RuleID != "no-secret-notes" || rec.Shadow != nil {
		t.Fatalf("record %+v", rec)
	}
	if evs := shadowEvents(e); len(evs) != 0 {
		t.Fatalf("shadow events %+v", evs)
	}
}

// The candidate is evaluated whole beside the policy and its own shadow items; each
// verdict names its source; a reload reads the candidate again.
func TestShadowCandidateFile(t *testing.T) {
	const candidate = `version: 1
enforce: false
rules:
  deny: {mcp__notes__write_note: ["*todo*"]}
  allow: {"*": ["*"]}
`
	src := gwPolicy + gwShadowItems
	e := gwStart(t, gwSetup{policy: src, extra: "shadow_policy: candidate.yaml\n", files: map[string]string{"candidate.yaml": candidate}})
	cand, err := policy.ParseShadow("c.yaml", []byte(candidate), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "todo", "text": "buy milk"}), false, `Wrote note "todo" (8 bytes).`)
	want := []store.ShadowVerdict{
		{Source: "policy", Effect: "would deny", Enforced: "allow", RuleID: "shadow-no-todo", Rationale: "todo notes will be refused", Revision: shadowRevision(t, src)},
		{Source: "shadow_policy", Effect: "would deny", Enforced: "allow", RuleID: "*todo*", Rationale: "denied by rule: *todo*", Revision: cand.Revision()},
	}
	if diff := cmp.Diff(want, e.lastCall(t, "mcp__notes__write_note", "writer-agent").Shadow); diff != "" {
		t.Fatalf("verdicts (-want +got):\n%s", diff)
	}
	if evs := shadowEvents(e); len(evs) != 2 || evs[0].Checker != "policy" || evs[1].Checker != "shadow_policy" || evs[1].Revision != cand.Revision() {
		t.Fatalf("shadow events %+v", evs)
	}
	// The reader role is the candidate's too (it defines no roles).
	r := e.connect(t, gwReaderToken, nil)
	gwWant(t, gwCall(t, r, "mcp__notes__read_note", map[string]any{"name": "todo"}), false, "buy milk")
	if rec := e.lastCall(t, "mcp__notes__read_note", "reader-agent"); rec.Shadow != nil {
		t.Fatalf("read verdicts %+v", rec.Shadow)
	}

	// Reloaded with the policy: the candidate now escalates what it denied (and
	// allows nothing else; an allow comes before an escalation).
	next := "version: 1\nenforce: false\nrules:\n  escalate: {mcp__notes__write_note: [\"*todo*\"]}\n  allow: {mcp__notes__read_note: [\"*\"]}\n"
	if err := os.WriteFile(filepath.Join(e.dir, "candidate.yaml"), []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.gw.Reload(ctx, e.cfg); err != nil {
		t.Fatal(err)
	}
	nextCand, err := policy.ParseShadow("c.yaml", []byte(next), nil)
	if err != nil {
		t.Fatal(err)
	}
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "todo-list", "text": "x"}), false, `Wrote note "todo-list" (1 bytes).`)
	want = []store.ShadowVerdict{{Source: "shadow_policy", Effect: "would ask", Enforced: "allow", RuleID: "*todo*", Rationale: "escalate by rule: *todo*", Revision: nextCand.Revision()}}
	if diff := cmp.Diff(want, e.lastCall(t, "mcp__notes__write_note", "writer-agent").Shadow); diff != "" {
		t.Fatalf("verdicts after the reload (-want +got):\n%s", diff)
	}

	// A candidate that does not load fails the reload; the one in force stays.
	if err := os.WriteFile(filepath.Join(e.dir, "candidate.yaml"), []byte("version: 1\nrulez: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = e.gw.Reload(ctx, e.cfg)
	if err == nil || !strings.Contains(err.Error(), `candidate.yaml:2:1: unknown key "rulez"`) {
		t.Fatalf("Reload with a broken candidate: %v", err)
	}
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "todo-again", "text": "x"}), false, `Wrote note "todo-again" (1 bytes).`)
	if v := e.lastCall(t, "mcp__notes__write_note", "writer-agent").Shadow; len(v) != 1 || v[0].Revision != nextCand.Revision() {
		t.Fatalf("verdicts after a failed reload %+v", v)
	}
}

// A shadow condition that cannot be evaluated (a missing argument; a candidate's
// condition over its cost limit) is a recorded fault; the call runs as the enforcing
// policy decides.
func TestShadowFaultDoesNotAffectTheCall(t *testing.T) {
	const candidate = `version: 1
enforce: false
condition_cost_limit: 1
conditions:
  - id: expensive
    when: '[1, 2, 3, 4, 5].all(x, x > 0) && tool == "nothing"'
    effect: deny
`
	e := gwStart(t, gwSetup{policy: gwPolicy + gwShadowItems, extra: "shadow_policy: candidate.yaml\n", files: map[string]string{"candidate.yaml": candidate}})
	cand, err := policy.ParseShadow("c.yaml", []byte(candidate), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "broken", "text": "x"}), false, `Wrote note "broken" (1 bytes).`)
	rec := e.lastCall(t, "mcp__notes__write_note", "writer-agent")
	want := []store.ShadowVerdict{
		{Source: "policy", Effect: "fault", Enforced: "allow", RuleID: "shadow-broken", Rationale: "condition 'shadow-broken' could not be evaluated: no such key: missing", Revision: shadowRevision(t, gwPolicy+gwShadowItems)},
		{Source: "shadow_policy", Effect: "fault", Enforced: "allow", RuleID: "expensive", Rationale: "permission-checker threw: condition 'expensive' exceeded its cost limit of 1", Revision: cand.Revision()},
	}
	if diff := cmp.Diff(want, rec.Shadow); diff != "" {
		t.Fatalf("verdicts (-want +got):\n%s", diff)
	}
	if rec.Status != warden.StatusRan || !rec.Executed {
		t.Fatalf("record %+v", rec)
	}
	evs := shadowEvents(e)
	if len(evs) != 2 || evs[0].Outcome != "fault" || evs[0].Error != want[0].Rationale || evs[1].Error != want[1].Rationale {
		t.Fatalf("shadow events %+v", evs)
	}
}

func parse(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A shadow file named as the gateway's policy is refused at Start: a file meant to be
// evaluated only never becomes the enforcing policy.
func TestShadowFileRefusedAsThePolicy(t *testing.T) {
	dir := t.TempDir()
	pol := mcptest.WriteFile(t, dir, "policy.yaml", []byte("version: 1\nenforce: false\nmode: allow_all\n"))
	data := []byte("policy: policy.yaml\nstore: sqlite://warden.db\n" + gwDefaultIdentities)
	file := mcptest.WriteFile(t, dir, "gateway.yaml", data)
	cfg, err := gateway.ParseFile(file, data, gwGetenv)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	gw, err := gateway.New(cfg, &gateway.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		gw.Close(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = gw.Start(ctx)
	want := pol + ":2:10: this file is a shadow policy (enforce: false) and cannot be loaded as the enforcing policy (load it as a shadow policy (shadow_policy in gateway.yaml) to see what it would decide, or remove `enforce: false` to enforce it)"
	if err == nil || err.Error() != want {
		t.Fatalf("Start: %v\nwant %s", err, want)
	}
	if _, _, err := gateway.CheckPolicy(cfg); err == nil || err.Error() != want {
		t.Fatalf("CheckPolicy: %v", err)
	}
	if gw.Revision() != "" {
		t.Fatalf("revision %s in force", gw.Revision())
	}
}
