package warden_test

// Human decisions (REFERENCE 7): escalate, ask and check-in share one mechanism; a
// pending decision is plain JSON that resumes on another Guard; an approval authorizes
// exactly one call.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/spectext"
	"github.com/wardenhq/warden/policy"
)

var argsEqual = cmp.Comparer(warden.Args.Equal)

func escalateBash(t *testing.T) *policy.RulePolicy {
	return mustRules(t, policy.RuleConfig{
		Allow:    map[string][]string{"bash": {"echo *"}},
		Deny:     map[string][]string{"bash": {"rm *"}},
		Escalate: map[string][]string{"bash": {"*"}},
	})
}

func TestHuman_EscalationWithoutHandlerOrPause(t *testing.T) {
	tests := []struct {
		name      string
		checker   warden.Checker
		tool      string
		args      string
		rationale string
	}{
		{"rule policy", escalateBash(t), "bash", `{"command":"cargo build"}`,
			"Permission escalation required for bash.: escalate by rule: *. No escalation handler configured."},
		{"checker with action", always("review", warden.Decision{Effect: warden.Ask, RuleID: "review", Rationale: "deploys need review"}), "deploy", `{"action":"ship","env":"prod"}`,
			"Permission escalation required for deploy.ship: deploys need review. No escalation handler configured."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			g := mustBind(t, warden.Config{Checkers: []warden.Checker{tt.checker}}, p.tool(tt.tool))
			out := call(t, g, tt.tool, tt.args)
			checkView(t, out, refusedAt(warden.StageHuman, "[permission denied: "+tt.rationale+"]"))
			if out.Decision.Rationale != tt.rationale || !strings.HasSuffix(out.Decision.Rationale, "No escalation handler configured.") {
				t.Errorf("rationale %q, want %q", out.Decision.Rationale, tt.rationale)
			}
			if !out.Decision.Fault {
				t.Error("an escalation nobody can answer is a fault, not a verdict")
			}
			if p.runs() != 0 {
				t.Errorf("tool ran %d times", p.runs())
			}
		})
	}
}

func TestHuman_EscalationPausesAndResumes(t *testing.T) {
	rec := &warden.Recorder{}
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{escalateBash(t)}, CanPause: true, Revision: "rev-1", Sinks: []warden.Sink{rec}}, p.tool("bash"))
	out, err := g.Call(context.Background(), warden.Call{ID: "c1", Tool: "bash", Args: A(`{"command":"cargo build"}`), Identity: warden.Identity{Principal: "dev"}, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != warden.StatusPending || out.Stage != warden.StageHuman || out.Executed || out.Pending == nil {
		t.Fatalf("got %+v, want pending at human", viewOf(out))
	}
	pd := out.Pending
	if pd.Kind != warden.KindEscalate || pd.Tool != "bash" || js(pd.Args) != `{"command":"cargo build"}` ||
		pd.Digest != A(`{"command":"cargo build"}`).Digest() || pd.Revision != "rev-1" || pd.Escalation == nil ||
		pd.Identity.Principal != "dev" || pd.CallID != "c1" || pd.Session != "s" {
		t.Errorf("pending %+v", pd)
	}
	if !strings.Contains(pd.Question, "escalate by rule: *") {
		t.Errorf("question %q does not say why", pd.Question)
	}
	if p.runs() != 0 {
		t.Fatalf("tool ran before the decision")
	}
	out, err = g.Resume(context.Background(), *pd, warden.Approved{By: "alice", Note: "fine", Digest: pd.ApprovalDigest()}, owner(*pd))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != warden.StatusRan || p.runs() != 1 || js(p.last()) != `{"command":"cargo build"}` {
		t.Errorf("after approval: %+v runs %d", viewOf(out), p.runs())
	}
	made := rec.Named(warden.EventDecisionMade)
	if len(made) != 1 || !made[0].Approved || made[0].By != "alice" || made[0].DecisionKind != "escalate" {
		t.Errorf("decision.made events %+v", made)
	}
	if pend := rec.Named(warden.EventDecisionPending); len(pend) != 1 || pend[0].Digest != pd.Digest {
		t.Errorf("decision.pending events %+v", pend)
	}
}

// askPipeline: "first" transforms, "second" asks. Counters count the links' calls.
type askPipeline struct {
	first, second atomic.Int64
	p             probe
}

func (ap *askPipeline) config(checkers ...warden.Checker) warden.Config {
	first := &warden.Middleware{Name: "first", OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
		ap.first.Add(1)
		return warden.TransformCall(c.Args.With("to", "ops@example.com"), "route to ops")
	}}
	second := &warden.Middleware{Name: "second", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
		ap.second.Add(1)
		return warden.AskPerson("Send this to ops?", "external recipient")
	}}
	return warden.Config{Checkers: checkers, Ungoverned: len(checkers) == 0, Middleware: []*warden.Middleware{first, second}, CanPause: true}
}

func (ap *askPipeline) tool() warden.Executable { return ap.p.tool("email") }

// owner is the caller a pending decision names, for tests about what Resume does with
// the decision itself (the identity check has its own tests).
func owner(p warden.PendingDecision) warden.Caller {
	return warden.Caller{Identity: p.Identity, Session: p.Session}
}

func pendingAsk(t *testing.T, g *warden.Guard) warden.PendingDecision {
	t.Helper()
	out := call(t, g, "email", `{"to":"someone@else.com","body":"hi"}`)
	if out.Status != warden.StatusPending || out.Stage != warden.StageMiddleware || out.Pending == nil {
		t.Fatalf("got %+v, want pending at middleware", viewOf(out))
	}
	return *out.Pending
}

func TestHuman_AskApprovedRunsTransformedArgsOnce(t *testing.T) {
	var ap askPipeline
	g := mustBind(t, ap.config(), ap.tool())
	pd := pendingAsk(t, g)
	want := warden.PendingDecision{Kind: warden.KindAsk, Question: "Send this to ops?", Detail: "external recipient", Middleware: "second",
		Tool: "email", Args: A(`{"to":"ops@example.com","body":"hi"}`), Original: A(`{"to":"someone@else.com","body":"hi"}`)}
	got := warden.PendingDecision{Kind: pd.Kind, Question: pd.Question, Detail: pd.Detail, Middleware: pd.Middleware, Tool: pd.Tool, Args: pd.Args, Original: pd.Original}
	if d := cmp.Diff(want, got, argsEqual); d != "" {
		t.Errorf("pending (-want +got):\n%s", d)
	}
	if ap.p.runs() != 0 {
		t.Fatal("tool ran before the decision")
	}
	out, err := g.Resume(context.Background(), pd, warden.Approved{By: "bob", Digest: pd.ApprovalDigest()}, owner(pd))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != warden.StatusRan || ap.p.runs() != 1 || js(ap.p.last()) != `{"to":"ops@example.com","body":"hi"}` {
		t.Errorf("after approval: %+v runs %d args %s", viewOf(out), ap.p.runs(), js(ap.p.last()))
	}
	// A resume judges the call again from the proposed arguments: the links before the
	// ask run once more (they are how the approved arguments came about), the ask is
	// answered by the approval and does not ask again.
	if out.ApprovedBy != "bob" {
		t.Errorf("ApprovedBy %q, want bob", out.ApprovedBy)
	}
	if ap.first.Load() != 2 || ap.second.Load() != 2 {
		t.Errorf("links ran first=%d second=%d; want each twice (call, then resume)", ap.first.Load(), ap.second.Load())
	}
	var rows []string
	for _, r := range out.Ledger {
		rows = append(rows, r.Middleware+":"+r.Outcome+":"+r.Why)
	}
	if d := cmp.Diff([]string{"first:allow:" + rows[0][len("first:allow:"):], "second:ask:Send this to ops?"}, rows); d != "" {
		t.Errorf("resumed ledger (-want +got):\n%s", d)
	}
}

func TestHuman_Declined(t *testing.T) {
	for _, tt := range []struct{ note, want string }{
		{"not this one", "declined by human: not this one"},
		{"", "declined by human"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			var ap askPipeline
			g := mustBind(t, ap.config(), ap.tool())
			pd := pendingAsk(t, g)
			out, err := g.Resume(context.Background(), pd, warden.Declined{By: "bob", Note: tt.note}, owner(pd))
			if err != nil {
				t.Fatal(err)
			}
			checkView(t, out, refusedAt(warden.StageHuman, tt.want))
			if ap.p.runs() != 0 {
				t.Errorf("tool ran %d times after a decline", ap.p.runs())
			}
		})
	}
}

func TestHuman_ResumeRequiresADecision(t *testing.T) {
	var ap askPipeline
	g := mustBind(t, ap.config(), ap.tool())
	pd := pendingAsk(t, g)
	for name, a := range map[string]warden.Answer{
		"nil":          nil,
		"nil approved": (*warden.Approved)(nil),
		"nil declined": (*warden.Declined)(nil),
	} {
		out, err := g.Resume(context.Background(), pd, a, owner(pd))
		var dre *warden.DecisionRequiredError
		if !errors.As(err, &dre) {
			t.Errorf("%s: error %v, want *DecisionRequiredError", name, err)
		}
		if out.Executed || ap.p.runs() != 0 {
			t.Errorf("%s: something ran", name)
		}
	}
	// The same pending decision is still usable, through a pointer too.
	out, err := g.Resume(context.Background(), pd, &warden.Approved{By: "bob", Digest: pd.ApprovalDigest()}, owner(pd))
	if err != nil || out.Status != warden.StatusRan || ap.p.runs() != 1 {
		t.Errorf("resume after a refused answer: %+v %v runs %d", viewOf(out), err, ap.p.runs())
	}
}

// REFERENCE section 7: "When several links ask, one pending decision carries every
// question (in link order, each with its middleware name); one approval answers all of
// them for that call."
func TestHuman_SeveralAsksAreOneDecision(t *testing.T) {
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("legal", "Legal ok?"), askMW("finance", "Finance ok?")}}, p.tool("wire"))
	out := call(t, g, "wire", `{"amount":100}`)
	if out.Pending == nil {
		t.Fatalf("got %+v, want one pending decision", viewOf(out))
	}
	pd := *out.Pending
	wantAsks := []warden.MiddlewareAsk{{Middleware: "legal", Question: "Legal ok?", Detail: "detail of legal"}, {Middleware: "finance", Question: "Finance ok?", Detail: "detail of finance"}}
	if d := cmp.Diff(wantAsks, pd.Asks); d != "" {
		t.Errorf("asks (-want +got):\n%s", d)
	}
	if pd.Kind != warden.KindAsk || pd.Middleware != "legal" || pd.Question != "middleware 'legal' asks: Legal ok?\nmiddleware 'finance' asks: Finance ok?" {
		t.Errorf("pending kind %q middleware %q question %q", pd.Kind, pd.Middleware, pd.Question)
	}
	out, err := g.Resume(context.Background(), pd, warden.Approved{By: "a", Digest: pd.ApprovalDigest()}, owner(pd))
	if err != nil {
		t.Fatal(err)
	}
	checkView(t, out, view{Status: warden.StatusRan, Stage: warden.StageExecute, Executed: true, ModelText: `ran {"amount":100}`})
	if p.runs() != 1 {
		t.Errorf("tool ran %d times, want once", p.runs())
	}
	// An approval of one link's question does not answer a chain that now asks more.
	one := pd
	one.Asks = one.Asks[:1]
	if out, err := g.Resume(context.Background(), one, warden.Approved{By: "a", Digest: one.ApprovalDigest()}, owner(one)); err != nil || out.Executed {
		t.Errorf("an approval of legal's ask alone ran the call: %+v %v", viewOf(out), err)
	} else {
		checkView(t, out, refusedAt(warden.StageMiddleware, "middleware 'legal' asked a person to decide, and there is no pause here to carry that ask: Legal ok?"))
	}
}

func TestHuman_AskWithoutPause(t *testing.T) {
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{askMW("legal", "Legal ok?")}}, p.tool("wire"))
	out := call(t, g, "wire", `{}`)
	checkView(t, out, refusedAt(warden.StageMiddleware, "middleware 'legal' asked a person to decide, and there is no pause here to carry that ask: Legal ok?"))
}

func TestHuman_PendingRoundTripsAndResumesOnANewGuard(t *testing.T) {
	var ap1 askPipeline
	g1 := mustBind(t, ap1.config(allowChecker("c")), ap1.tool())
	pd := pendingAsk(t, g1)
	b, err := json.Marshal(pd)
	if err != nil {
		t.Fatal(err)
	}
	var back warden.PendingDecision
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if d := cmp.Diff(pd, back, argsEqual); d != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", d)
	}
	// A fresh process in spirit: new registry, new tool values, new middleware values.
	var ap2 askPipeline
	g2 := mustBind(t, ap2.config(allowChecker("c")), ap2.tool())
	out, err := g2.Resume(context.Background(), back, warden.Approved{By: "carol", Digest: back.ApprovalDigest()}, owner(back))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != warden.StatusRan || ap2.p.runs() != 1 || ap1.p.runs() != 0 {
		t.Errorf("resume on a new guard: %+v, runs new %d old %d", viewOf(out), ap2.p.runs(), ap1.p.runs())
	}
	if js(ap2.p.last()) != `{"to":"ops@example.com","body":"hi"}` {
		t.Errorf("tool saw %s, want the transformed args", js(ap2.p.last()))
	}
	if ap2.first.Load() != 1 || ap2.second.Load() != 1 {
		t.Errorf("the new guard's links ran first %d second %d times, want once each", ap2.first.Load(), ap2.second.Load())
	}
}

func TestHuman_TamperedArgsAreRefused(t *testing.T) {
	var ap askPipeline
	g := mustBind(t, ap.config(), ap.tool())
	pd := pendingAsk(t, g)
	pd.Args = pd.Args.With("to", "attacker@evil.example")
	out, err := g.Resume(context.Background(), pd, warden.Approved{By: "bob", Digest: pd.ApprovalDigest()}, owner(pd))
	if err == nil && out.Executed {
		t.Fatalf("a pending decision whose args no longer match its digest ran: %+v", viewOf(out))
	}
	if ap.p.runs() != 0 {
		t.Errorf("tool ran %d times", ap.p.runs())
	}
}

// A stored pending decision is data outside the guard's control. One whose args were
// rewritten together with their digest (or one forged outright) must still be judged
// by the policy before it runs: an approval never authorizes what a deny rule forbids.
func TestHuman_ForgedPendingIsStillJudged(t *testing.T) {
	tests := []struct {
		name   string
		forge  func(pd warden.PendingDecision) warden.PendingDecision
		cfg    func(t *testing.T) warden.Config
		create string
	}{
		{"escalation args and digest rewritten", func(pd warden.PendingDecision) warden.PendingDecision {
			pd.Args = A(`{"command":"rm -rf /"}`)
			pd.Digest = pd.Args.Digest()
			return pd
		}, func(t *testing.T) warden.Config {
			return warden.Config{Checkers: []warden.Checker{escalateBash(t)}, CanPause: true}
		}, `{"command":"cargo build"}`},
		{"forged from scratch", func(warden.PendingDecision) warden.PendingDecision {
			a := A(`{"command":"rm -rf /"}`)
			return warden.PendingDecision{Kind: warden.KindCheckIn, Tool: "bash", Args: a, Digest: a.Digest(), Original: a}
		}, func(t *testing.T) warden.Config {
			return warden.Config{Checkers: []warden.Checker{escalateBash(t)}, CanPause: true}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			g := mustBind(t, tt.cfg(t), p.tool("bash"))
			var pd warden.PendingDecision
			if tt.create != "" {
				out := call(t, g, "bash", tt.create)
				if out.Pending == nil {
					t.Fatalf("precondition: want a pending decision, got %+v", viewOf(out))
				}
				pd = *out.Pending
			}
			pd = tt.forge(pd)
			out, err := g.Resume(context.Background(), pd, warden.Approved{By: "mallory", Digest: pd.ApprovalDigest()}, owner(pd))
			if p.runs() != 0 || out.Executed {
				t.Errorf("Resume ran %s on a forged pending decision that policy denies (deny bash \"rm *\"): %+v err %v",
					js(pd.Args), viewOf(out), err)
			}
		})
	}
}

// The governance page: "approve and the chain continues and the REAL tool runs", and "a
// person approves what the chain produced". With the chain [ask, transform], the person
// is asked about the transformed arguments, and approving runs exactly them, once.
func TestHuman_AskThenTransformRunsWhatThePersonApproved(t *testing.T) {
	var p probe
	after := transform("after", "round to the nearest hundred", func(a warden.Args) warden.Args { return a.With("amount", 200) })
	g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("approve", "Pay?"), after}}, p.tool("pay"))
	out := call(t, g, "pay", `{"amount":150}`)
	if out.Pending == nil {
		t.Fatalf("want pending, got %+v", viewOf(out))
	}
	pd := *out.Pending
	if js(pd.Args) != `{"amount":200}` || js(pd.Original) != `{"amount":150}` || pd.Middleware != "approve" || pd.Digest != A(`{"amount":200}`).Digest() {
		t.Errorf("the person is shown %s (original %s, middleware %q); want the arguments that will execute", js(pd.Args), js(pd.Original), pd.Middleware)
	}
	out, err := g.Resume(context.Background(), pd, warden.Approved{By: "a", Digest: pd.ApprovalDigest()}, owner(pd))
	if err != nil {
		t.Fatal(err)
	}
	checkView(t, out, view{Status: warden.StatusRan, Stage: warden.StageExecute, Executed: true, ModelText: `ran {"amount":200}`})
	if p.runs() != 1 || js(p.last()) != `{"amount":200}` {
		t.Errorf("tool ran %d times with %s", p.runs(), js(p.last()))
	}
}

// REFERENCE section 7: "the approval applies only if the final args have the same
// digest, otherwise the call is refused with the approval-mismatch text and nothing
// runs". A transform that answers differently on the resume makes other final args.
func TestHuman_ApprovalIsBoundToTheDigest(t *testing.T) {
	var p probe
	var n int
	after := transform("after", "late rewrite", func(a warden.Args) warden.Args { n++; return a.With("amount", 100*n) })
	g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("approve", "Pay 100?"), after}}, p.tool("pay"))
	out := call(t, g, "pay", `{"amount":1}`)
	if out.Pending == nil {
		t.Fatalf("want pending, got %+v", viewOf(out))
	}
	out, err := g.Resume(context.Background(), *out.Pending, warden.Approved{By: "a", Digest: out.Pending.ApprovalDigest()}, owner(*out.Pending))
	if err != nil {
		t.Fatal(err)
	}
	checkView(t, out, refusedAt(warden.StageHuman, spectext.ApprovalMismatchText))
	if out.Executed || p.runs() != 0 {
		t.Errorf("args changed after the approval and the call still ran: %+v", viewOf(out))
	}
}

// The issue "Seed parity": "A consistently edited checkpoint redirects an approval."
// An approval carries the digest the person was shown; a pending decision edited after
// that (args, original and digest together) is refused before anything runs, and the
// pending decision stays usable.
func TestHuman_ApprovedCarriesTheDigestThePersonSaw(t *testing.T) {
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("approve", "Pay?")}}, p.tool("pay"))
	out := call(t, g, "pay", `{"amount":100}`)
	if out.Pending == nil {
		t.Fatalf("want pending, got %+v", viewOf(out))
	}
	shown := *out.Pending
	edited := shown
	edited.Args, edited.Original = A(`{"amount":1000000}`), A(`{"amount":1000000}`)
	edited.Digest = edited.Args.Digest()
	for name, tt := range map[string]struct {
		pd     warden.PendingDecision
		digest string
		want   string
	}{
		"edited decision": {edited, shown.ApprovalDigest(), "warden: the approval does not match the pending decision: the person approved " + shown.ApprovalDigest() + ", but this pending decision is " + edited.ApprovalDigest() + ": it changed after they saw it, so show it to them again"},
		"no digest":       {shown, "", "warden: the approval does not match the pending decision: Approved.Digest is empty; set it to the ApprovalDigest of the decision the person was shown (this decision's is " + shown.ApprovalDigest() + ")"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := g.Resume(context.Background(), tt.pd, warden.Approved{By: "a", Digest: tt.digest}, owner(tt.pd))
			if !errors.Is(err, warden.ErrApprovalMismatch) || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			if out.Executed || p.runs() != 0 {
				t.Errorf("ran: %+v", viewOf(out))
			}
		})
	}
	out, err := g.Resume(context.Background(), shown, warden.Approved{By: "a", Digest: shown.ApprovalDigest()}, owner(shown))
	if err != nil || !out.Executed || p.runs() != 1 || js(p.last()) != `{"amount":100}` {
		t.Errorf("the pending decision is no longer usable after refused answers: %+v %v", viewOf(out), err)
	}
}

func TestHuman_S1EscalationIsReplacedByS2(t *testing.T) {
	toCommand := func(cmd string) *warden.Middleware {
		return transform("rewrite", "rewrite the command", func(a warden.Args) warden.Args { return a.With("command", cmd) })
	}
	tests := []struct {
		name      string
		call      string
		rewriteTo string
		status    warden.Status
		stage     warden.Stage
		pendArgs  string
	}{
		{"S1 escalate, S2 allow: nobody is asked", "cargo build", "echo cargo build", warden.StatusRan, warden.StageExecute, ""},
		{"S1 allow, S2 escalate: asked about the final args", "echo hi", "cargo build", warden.StatusPending, warden.StageHuman, `{"command":"cargo build"}`},
		{"S1 escalate, S2 deny: refused", "cargo build", "rm -rf /tmp/x", warden.StatusRefused, warden.StageFinalCheck, ""},
		{"S1 escalate, S2 escalate: asked about the final args", "cargo build", "cargo test", warden.StatusPending, warden.StageHuman, `{"command":"cargo test"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &warden.Recorder{}
			var p probe
			g := mustBind(t, warden.Config{Checkers: []warden.Checker{escalateBash(t)}, Middleware: []*warden.Middleware{toCommand(tt.rewriteTo)},
				CanPause: true, Sinks: []warden.Sink{rec}}, p.tool("bash"))
			out := call(t, g, "bash", `{"command":"`+tt.call+`"}`)
			if out.Status != tt.status || out.Stage != tt.stage {
				t.Fatalf("got %+v, want %s at %s", viewOf(out), tt.status, tt.stage)
			}
			nPending := len(rec.Named(warden.EventDecisionPending))
			if tt.pendArgs == "" {
				if nPending != 0 || out.Pending != nil {
					t.Errorf("a person was asked (%d pending events)", nPending)
				}
				return
			}
			if out.Pending == nil || out.Pending.Kind != warden.KindEscalate || js(out.Pending.Args) != tt.pendArgs {
				t.Fatalf("pending %+v, want an escalation about %s", out.Pending, tt.pendArgs)
			}
			out, err := g.Resume(context.Background(), *out.Pending, warden.Approved{By: "a", Digest: out.Pending.ApprovalDigest()}, owner(*out.Pending))
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != warden.StatusRan || js(p.last()) != tt.pendArgs || p.runs() != 1 {
				t.Errorf("after approval: %+v ran %s (%d runs)", viewOf(out), js(p.last()), p.runs())
			}
		})
	}
}

func TestHuman_CheckIn(t *testing.T) {
	sendTool := func(p *probe, ci *warden.CheckIn) warden.Executable {
		x := p.tool("send_email")
		x.Description = "Sends an email on the user's behalf."
		x.CheckIn = ci
		return x
	}
	t.Run("evidence", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true}, sendTool(&p, &warden.CheckIn{Question: "Send it?"}))
		out, err := g.Call(context.Background(), warden.Call{Tool: "send_email", Args: A(`{"to":"a@b.c","subject":"Q3"}`),
			Context: []string{"user: email the Q3 numbers to a@b.c"}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Pending == nil || out.Pending.Kind != warden.KindCheckIn || out.Pending.Question != "Send it?" || out.Pending.Evidence == nil {
			t.Fatalf("got %+v pending %+v", viewOf(out), out.Pending)
		}
		want := warden.Evidence{
			Does:    "Sends an email on the user's behalf.",
			Args:    "{\n  \"subject\": \"Q3\",\n  \"to\": \"a@b.c\"\n}",
			Context: []string{"user: email the Q3 numbers to a@b.c"},
		}
		ev := *out.Pending.Evidence
		if ev.Does != want.Does || d(want.Context, ev.Context) != "" || !strings.Contains(ev.Args, `"to": "a@b.c"`) || !strings.Contains(ev.Args, `"subject": "Q3"`) {
			t.Errorf("evidence %+v, want %+v", ev, want)
		}
		if p.runs() != 0 {
			t.Fatal("tool ran before the check-in")
		}
	})
	t.Run("default question", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true}, sendTool(&p, &warden.CheckIn{}))
		out := call(t, g, "send_email", `{}`)
		if out.Pending == nil || out.Pending.Question != "Run send_email with these arguments?" {
			t.Errorf("pending %+v", out.Pending)
		}
	})
	t.Run("when false runs directly", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true}, sendTool(&p, &warden.CheckIn{When: func(a warden.Args) bool { _, ok := a.Get("cc"); return ok }}))
		if out := call(t, g, "send_email", `{"to":"x"}`); out.Status != warden.StatusRan {
			t.Errorf("got %+v, want ran", viewOf(out))
		}
		if out := call(t, g, "send_email", `{"to":"x","cc":"y"}`); out.Status != warden.StatusPending {
			t.Errorf("got %+v, want pending", viewOf(out))
		}
	})
	t.Run("panicking when asks", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true}, sendTool(&p, &warden.CheckIn{When: func(warden.Args) bool { panic("predicate bug") }}))
		out := call(t, g, "send_email", `{}`)
		if out.Status != warden.StatusPending || p.runs() != 0 {
			t.Errorf("got %+v, want pending (fail closed)", viewOf(out))
		}
	})
	t.Run("no pause refuses", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Ungoverned: true}, sendTool(&p, &warden.CheckIn{Question: "Send it?"}))
		out := call(t, g, "send_email", `{}`)
		checkView(t, out, refusedAt(warden.StageHuman, "Tool 'send_email' requires a check-in, and there is no pause here to carry it: Send it?"))
	})
	t.Run("approve runs once", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true}, sendTool(&p, &warden.CheckIn{}))
		out := call(t, g, "send_email", `{"to":"x"}`)
		out, err := g.Resume(context.Background(), *out.Pending, warden.Approved{By: "u", Digest: out.Pending.ApprovalDigest()}, owner(*out.Pending))
		if err != nil || out.Status != warden.StatusRan || p.runs() != 1 {
			t.Errorf("got %+v %v runs %d", viewOf(out), err, p.runs())
		}
	})
}

func d(a, b any) string { return cmp.Diff(a, b) }

func TestHuman_RevisionChangeRechecks(t *testing.T) {
	var ap1 askPipeline
	cfg1 := ap1.config(allowChecker("ok"))
	cfg1.Revision = "r1"
	g1 := mustBind(t, cfg1, ap1.tool())
	pd := pendingAsk(t, g1)
	if pd.Revision != "r1" {
		t.Fatalf("pending revision %q", pd.Revision)
	}
	var ap2 askPipeline
	cfg2 := ap2.config(always("lockdown", warden.Decision{Effect: warden.Deny, Rationale: "email is disabled"}))
	cfg2.Revision = "r2"
	g2 := mustBind(t, cfg2, ap2.tool())
	out, err := g2.Resume(context.Background(), pd, warden.Approved{By: "bob", Digest: pd.ApprovalDigest()}, owner(pd))
	if err != nil {
		t.Fatal(err)
	}
	if out.Executed || ap2.p.runs() != 0 || out.Status != warden.StatusRefused {
		t.Errorf("got %+v; a call approved under r1 must be judged again under r2", viewOf(out))
	}
	if out.ModelText != "[permission denied: email is disabled]" {
		t.Errorf("model text %q", out.ModelText)
	}
}

func TestHuman_RevisionChangeDoesNotReaskAnApprovedEscalation(t *testing.T) {
	var p1 probe
	g1 := mustBind(t, warden.Config{Checkers: []warden.Checker{escalateBash(t)}, CanPause: true, Revision: "r1"}, p1.tool("bash"))
	out := call(t, g1, "bash", `{"command":"cargo build"}`)
	if out.Pending == nil {
		t.Fatalf("want pending, got %+v", viewOf(out))
	}
	var p2 probe
	g2 := mustBind(t, warden.Config{Checkers: []warden.Checker{escalateBash(t)}, CanPause: true, Revision: "r2"}, p2.tool("bash"))
	out, err := g2.Resume(context.Background(), *out.Pending, warden.Approved{By: "a", Digest: out.Pending.ApprovalDigest()}, owner(*out.Pending))
	if err != nil || out.Status != warden.StatusRan || p2.runs() != 1 {
		t.Errorf("got %+v %v runs %d; the person approved exactly this call", viewOf(out), err, p2.runs())
	}
}

// A pending decision travels through storage. One edited to look like another kind of
// question, or to name another middleware, must not skip the refusing middleware after
// the ask: a resume runs the whole pipeline again.
func TestHuman_ForgedResumePositionDoesNotSkipMiddleware(t *testing.T) {
	dlp := &warden.Middleware{Name: "dlp", OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
		if v, _ := c.Args.String("body"); strings.Contains(v, "SSN") {
			return warden.DenyCall("personal data may not leave")
		}
		return warden.AllowCall()
	}}
	secret := A(`{"to":"x@y.z","body":"SSN 078-05-1120"}`)
	forgeArgs := func(p *warden.PendingDecision) {
		p.Args, p.Original, p.Digest = secret, secret, secret.Digest()
	}
	tests := []struct {
		name  string
		forge func(*warden.PendingDecision)
	}{
		{"arguments replaced", forgeArgs},
		{"and kind changed to a check-in", func(p *warden.PendingDecision) {
			forgeArgs(p)
			p.Kind, p.Middleware, p.Asks = warden.KindCheckIn, "", nil
		}},
		{"and middleware renamed to dlp", func(p *warden.PendingDecision) { forgeArgs(p); p.Middleware, p.Asks = "dlp", nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("approve", "Send?"), dlp}}, p.tool("email"))
			// "a later deny still denies, and then nobody is asked" (REFERENCE section 7).
			if out := call(t, g, "email", js(secret)); out.Pending != nil || out.Status != warden.StatusRefused || out.ModelText != "personal data may not leave" {
				t.Fatalf("an ask before a denying link: got %+v, want the denial and nobody asked", viewOf(out))
			}
			out := call(t, g, "email", `{"to":"x@y.z","body":"hello"}`)
			if out.Pending == nil || out.Pending.Middleware != "approve" {
				t.Fatalf("want a pending ask from middleware approve, got %+v %+v", viewOf(out), out.Pending)
			}
			pd := *out.Pending
			tt.forge(&pd)
			out, err := g.Resume(context.Background(), pd, warden.Approved{By: "a", Digest: pd.ApprovalDigest()}, owner(pd))
			if p.runs() != 0 || out.Executed {
				t.Errorf("the call ran past the dlp middleware: %+v err %v", viewOf(out), err)
			}
		})
	}
}

// A pending decision edited to name another principal cannot borrow that principal's
// rights: Resume refuses it before anything runs, and passes the caller's sequence.
func TestHuman_ResumeBindsTheCaller(t *testing.T) {
	var p probe
	var seen []warden.Step
	seqChecker := warden.CheckerFunc(func(_ context.Context, r warden.Request) (warden.Decision, error) {
		seen = r.Sequence
		return warden.Decision{Effect: warden.Allow}, nil
	})
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{seqChecker, escalateBash(t)}, CanPause: true}, p.tool("bash"))
	bob := warden.Identity{Principal: "bob"}
	out, err := g.Call(context.Background(), warden.Call{ID: "c1", Tool: "bash", Args: A(`{"command":"cargo build"}`), Identity: bob, Session: "s1"})
	if err != nil || out.Pending == nil {
		t.Fatalf("want pending, got %+v %v", viewOf(out), err)
	}
	forged := *out.Pending
	forged.Identity = warden.Identity{Principal: "admin"}
	if _, err := g.Resume(context.Background(), forged, warden.Approved{By: "a", Digest: forged.ApprovalDigest()}, warden.Caller{Identity: bob, Session: "s1"}); err == nil || p.runs() != 0 {
		t.Fatalf("forged identity resumed: err %v runs %d", err, p.runs())
	}
	seq := []warden.Step{{Tool: "reader", Args: A(`{"path":"/x"}`)}}
	out, err = g.Resume(context.Background(), *out.Pending, warden.Approved{By: "a", Digest: out.Pending.ApprovalDigest()}, warden.Caller{Identity: bob, Session: "s1", Sequence: seq})
	if err != nil || !out.Executed || p.runs() != 1 {
		t.Fatalf("honest resume: %+v %v runs %d", viewOf(out), err, p.runs())
	}
	if len(seen) != 1 || seen[0].Tool != "reader" {
		t.Errorf("checkers saw sequence %v on resume, want the caller's", seen)
	}
}
