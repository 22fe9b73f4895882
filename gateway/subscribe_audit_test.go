package gateway_test

// The audit of resources/subscribe and resources/unsubscribe, and the re-judging of
// the sessions' subscriptions on a reload, against the conformance fixture as a real
// stdio upstream (see subscribe_test.go).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

// subAuditPolicy is subPolicy with bob denied watching the static text.
const subAuditPolicy = subPolicy + `conditions:
  - id: no-static-for-bob
    when: 'tool == "resource:conf" && string(args.uri) == "test://static-text" && identity.principal == "bob"'
    effect: deny
    rationale: bob does not watch the static text
  - id: halt-on-request
    when: 'tool == "mcp__conf__warden_test_update_resource" && string(args.uri) == "test://halt"'
    effect: halt
    reason: test:halt
    tell_llm: "Stopped."
`

// subWantRecords checks the audit records of tool for principal, oldest first:
// how many, and the fields of the newest that a subscription record sets.
func subWantRecords(t *testing.T, e *gwEnv, tool, principal string, n int, want store.CallRecord) store.CallRecord {
	t.Helper()
	recs := e.calls(t, tool, principal)
	if len(recs) != n {
		t.Fatalf("%d audit records of %s for %s, want %d: %+v", len(recs), tool, principal, n, recs)
	}
	if n == 0 {
		return store.CallRecord{}
	}
	got := recs[n-1]
	if got.Tool != tool || got.Identity.Principal != principal || got.Status != want.Status || got.Stage != want.Stage ||
		got.Executed != want.Executed || got.Effect != want.Effect || got.RuleID != want.RuleID || got.Reason != want.Reason ||
		string(got.Args) != string(want.Args) || got.ArgsDigest == "" || got.Revision == "" || got.CallID == "" ||
		(want.Session != "" && got.Session != want.Session) {
		t.Errorf("audit of %s for %s:\n got %+v\nwant %+v", tool, principal, got, want)
	}
	return got
}

func TestGatewaySubscribeAudit(t *testing.T) {
	e := subStartWith(t, subAuditPolicy, "-test-tools")
	a := e.connect(t, gwReaderToken, nil)
	b := e.connect(t, gwBobToken, nil)
	w := e.connect(t, gwWriterToken, nil)
	const sub, unsub = "subscribe:resource:conf", "unsubscribe:resource:conf"
	watchedArgs := `{"uri":"test://watched-resource"}`

	// Allowed: held, and recorded as ran for the session.
	if err := subSubscribe(t, a, subWatched); err != nil {
		t.Fatalf("A subscribes to %s: %v", subWatched, err)
	}
	subWantRecords(t, e, sub, "reader-agent", 1, store.CallRecord{Status: warden.StatusRan, Executed: true, RuleID: "reader.allowlist", Args: []byte(watchedArgs), Session: a.ID()})

	// Denied by a condition: answered as a URI nobody serves, recorded with the rule.
	subWantNotFound(t, "bob subscribes to the static text", subSubscribe(t, b, subStatic), subStatic)
	subWantRecords(t, e, sub, "bob", 1, store.CallRecord{
		Status: warden.StatusRefused, Stage: warden.StagePermission, Effect: "deny", RuleID: "no-static-for-bob",
		Args: []byte(`{"uri":"test://static-text"}`), Session: b.ID(),
	})

	// Hidden from the role: recorded at lookup, with why.
	subWantNotFound(t, "writer subscribes", subSubscribe(t, w, subWatched), subWatched)
	subWantRecords(t, e, sub, "writer-agent", 1, store.CallRecord{
		Status: warden.StatusRefused, Stage: warden.StageLookup, Reason: `resources hidden from the caller: not allowed to role "writer"`,
		Args: []byte(watchedArgs), Session: w.ID(),
	})

	// A template URI not in normal form: refused with why, recorded at validation.
	odd := "test://template/%2E%2E/data"
	err := subSubscribe(t, a, odd)
	werr := subWireError(t, "A subscribes to "+odd, err)
	wantText := "The resource URI test://template/%2E%2E/data is not in normal form: %2E is the percent-encoding of '.', which is written as itself. Nothing was subscribed."
	if werr.Code != gateway.CodeRefused || werr.Message != wantText {
		t.Errorf("A subscribes to %s: error %d %q\nwant %d %q", odd, werr.Code, werr.Message, gateway.CodeRefused, wantText)
	}
	subWantRecords(t, e, sub, "reader-agent", 2, store.CallRecord{
		Status: warden.StatusRefused, Stage: warden.StageValidation,
		Reason: "resource URI not in normal form: %2E is the percent-encoding of '.', which is written as itself",
		Args:   []byte(`{"uri":"test://template/%2E%2E/data"}`), Session: a.ID(),
	})

	// A URI nobody serves is not recorded, as a read of it is not.
	subWantNotFound(t, "A subscribes to a URI nobody serves", subSubscribe(t, a, "test://nowhere"), "test://nowhere")
	subWantRecords(t, e, sub, "reader-agent", 2, store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageValidation,
		Reason: "resource URI not in normal form: %2E is the percent-encoding of '.', which is written as itself",
		Args:   []byte(`{"uri":"test://template/%2E%2E/data"}`)})

	// An unsubscribe that ends a subscription is recorded; one of a URI the session
	// does not watch is not.
	subUnsubscribe(t, a, subWatched)
	subWantRecords(t, e, unsub, "reader-agent", 1, store.CallRecord{Status: warden.StatusRan, Executed: true, Args: []byte(watchedArgs), Session: a.ID()})
	subUnsubscribe(t, a, subWatched)
	subUnsubscribe(t, b, subStatic)
	subWantRecords(t, e, unsub, "reader-agent", 1, store.CallRecord{Status: warden.StatusRan, Executed: true, Args: []byte(watchedArgs)})
	subWantRecords(t, e, unsub, "bob", 0, store.CallRecord{})

	// A halted session: refused with the halt's text, recorded at the gate.
	gwWant(t, gwCall(t, a, subUpdate, map[string]any{"uri": "test://halt"}), true, "Stopped.")
	werr = subWireError(t, "A subscribes in a halted session", subSubscribe(t, a, subWatched))
	if werr.Code != gateway.CodeRefused || werr.Message != "This session is halted; nothing more is served in it." {
		t.Errorf("A subscribes in a halted session: error %d %q", werr.Code, werr.Message)
	}
	subWantRecords(t, e, sub, "reader-agent", 3, store.CallRecord{
		Status: warden.StatusRefused, Stage: warden.StageGate, Reason: "session halted: every call after a halt is refused",
		Args: []byte(watchedArgs), Session: a.ID(),
	})
	if n := len(e.calls(t, "*subscribe:*", "")); n != 6 {
		t.Errorf("%d subscription records in all, want 6", n)
	}
}

// An upstream that takes no subscriptions: the subscribe fails, says why, and is
// recorded as failed and not sent.
func TestGatewaySubscribeUpstreamRefuses(t *testing.T) {
	e := subStartWith(t, subPolicy, "-no-subscribe")
	a := e.connect(t, gwReaderToken, nil)
	err := subSubscribe(t, a, subWatched)
	werr := subWireError(t, "subscribe", err)
	const why = `server "conf": the server does not offer resource subscriptions`
	if werr.Code != gateway.CodeRefused || werr.Message != "Subscribing failed: "+why {
		t.Errorf("subscribe: error %d %q, want %d %q", werr.Code, werr.Message, gateway.CodeRefused, "Subscribing failed: "+why)
	}
	subWantRecords(t, e, "subscribe:resource:conf", "reader-agent", 1, store.CallRecord{
		Status: warden.StatusFailed, Stage: warden.StageExecute, RuleID: "reader.allowlist", Reason: "upstream subscribe failed: " + why,
		Args: []byte(`{"uri":"test://watched-resource"}`), Session: a.ID(),
	})
}

// A reload re-judges every session's subscriptions under the new policy: those it
// no longer allows end (the session gets no more updates, the upstream subscription
// ends with the last session that wanted it, the end is audited and counted in the
// log), the others are kept.
func TestGatewayReloadEndsSubscriptions(t *testing.T) {
	e := subStart(t)
	aUpdates, bUpdates := make(subUpdates, 10), make(subUpdates, 10)
	a := e.connect(t, gwReaderToken, aUpdates.options())
	b := e.connect(t, gwBobToken, bUpdates.options())
	// w declares no roots: its calls share the one connection (max 1) that holds the
	// subscriptions, which a call of another client class would close.
	w := e.connect(t, gwWriterToken, noRoots())
	for _, uri := range []string{subWatched, subStatic} {
		if err := subSubscribe(t, a, uri); err != nil {
			t.Fatalf("A subscribes to %s: %v", uri, err)
		}
	}
	if err := subSubscribe(t, b, subWatched); err != nil {
		t.Fatalf("B subscribes to %s: %v", subWatched, err)
	}
	subTrigger(t, w, subWatched, 1)
	aUpdates.next(t, "A", subWatched)
	bUpdates.next(t, "B", subWatched)

	reload := func(policy string) {
		t.Helper()
		c := *e.cfg
		c.Policy = mcptest.WriteFile(t, e.dir, fmt.Sprintf("policy-%d.yaml", time.Now().UnixNano()), []byte(policy))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.gw.Reload(ctx, &c); err != nil {
			t.Fatalf("Reload: %v", err)
		}
	}
	// A reload that changes nothing for the subscriptions keeps them all.
	reload(subPolicy + "# the same policy, another revision\n")
	if n := e.log.Count("resource subscriptions re-judged after a reload", "held=3", "dropped=0"); n != 1 {
		t.Errorf("%d log lines say the reload kept the 3 subscriptions, want 1", n)
	}

	// The new policy denies reader-agent (A) both resources; bob (B) keeps reading.
	reload(subPolicy + `conditions:
  - id: reader-agent-stops
    when: 'tool == "resource:conf" && identity.principal == "reader-agent"'
    effect: deny
    rationale: reader-agent no longer reads the conf resources
`)
	if n := e.log.Count("resource subscriptions re-judged after a reload", "held=3", "dropped=2"); n != 1 {
		t.Errorf("%d log lines say the reload dropped 2 of 3 subscriptions, want 1", n)
	}
	// The static text had A only: its upstream subscription ended.
	e.log.WaitCount(t, time.Minute, 1, subLogged("unsubscribed", subStatic)...)
	if n := e.log.Count(subLogged("unsubscribed", subWatched)...); n != 0 {
		t.Errorf("the upstream subscription to %s ended (%d), but B still wants it", subWatched, n)
	}
	subTrigger(t, w, subWatched, 1)
	bUpdates.next(t, "B", subWatched)
	aUpdates.none(t, "A", a)
	subTrigger(t, w, subStatic, 0)
	aUpdates.none(t, "A", a)

	// Each end is audited as a refused subscription of A's session, with the rule.
	recs := e.calls(t, "subscribe:resource:conf", "reader-agent")
	if len(recs) != 4 {
		t.Fatalf("%d subscription records of reader-agent, want 4 (2 subscribes, 2 ended): %+v", len(recs), recs)
	}
	for i, uri := range []string{subStatic, subWatched} {
		rec := recs[2+i]
		if rec.Status != warden.StatusRefused || rec.Stage != warden.StagePermission || rec.Effect != "deny" || rec.RuleID != "reader-agent-stops" ||
			rec.Reason != "re-judged after a reload: reader-agent no longer reads the conf resources" || rec.Executed ||
			string(rec.Args) != fmt.Sprintf(`{"uri":%q}`, uri) || rec.Session != a.ID() {
			t.Errorf("record of the end of A's subscription to %s: %+v", uri, rec)
		}
	}
	if recs := e.calls(t, "subscribe:resource:conf", "bob"); len(recs) != 1 {
		t.Errorf("bob has %d subscription records, want 1 (nothing of his ended): %+v", len(recs), recs)
	}

	// A may not subscribe again; B's unsubscribe ends the upstream subscription.
	subWantNotFound(t, "A subscribes after the reload", subSubscribe(t, a, subWatched), subWatched)
	subUnsubscribe(t, b, subWatched)
	e.log.WaitCount(t, time.Minute, 1, subLogged("unsubscribed", subWatched)...)
	// A's unsubscribe of what the reload ended changes nothing and is not recorded.
	subUnsubscribe(t, a, subWatched)
	if recs := e.calls(t, "unsubscribe:resource:conf", "reader-agent"); len(recs) != 0 {
		t.Errorf("A's unsubscribe after the reload was recorded: %+v", recs)
	}
	subTrigger(t, w, subWatched, 0)
}

// A reload that removes a token client ends the subscriptions of its sessions.
func TestGatewayReloadEndsSubscriptionsOfRemovedClients(t *testing.T) {
	e := subStart(t)
	bUpdates := make(subUpdates, 10)
	b := e.connect(t, gwBobToken, bUpdates.options())
	if err := subSubscribe(t, b, subWatched); err != nil {
		t.Fatalf("B subscribes: %v", err)
	}
	c := *e.cfg
	c.Clients = nil
	for _, cl := range e.cfg.Clients {
		if cl.Principal != "bob" {
			c.Clients = append(c.Clients, cl)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.gw.Reload(ctx, &c); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if n := e.log.Count("resource subscriptions re-judged after a reload", "held=1", "dropped=1"); n != 1 {
		t.Errorf("%d log lines say the reload dropped the 1 subscription, want 1", n)
	}
	e.log.WaitCount(t, time.Minute, 1, subLogged("unsubscribed", subWatched)...)
	rec := e.lastCall(t, "subscribe:resource:conf", "bob")
	if rec.Status != warden.StatusRefused || rec.Stage != warden.StageLookup || rec.Reason != "re-judged after a reload: this client's token is no longer configured" {
		t.Errorf("record of the end of B's subscription: %+v", rec)
	}
	w := e.connect(t, gwWriterToken, nil)
	subTrigger(t, w, subWatched, 0)
	bUpdates.none(t, "B", w)
}
