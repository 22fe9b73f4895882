package warden_test

// Attacks on the issue-13 change to the human stage (asks decided on the final call,
// Approved carries a digest, Call.Unauthorized, equal S1 returns) and on Bind's
// snapshot and identity comparison. A test that FAILS on the commit it was written
// against demonstrates a problem (its comment says which); a test that passes pins
// behaviour an attack tried and could not break.

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/spectext"
)

// resumeOK resumes and fails the test on an error.
func resumeOK(t *testing.T, g *warden.Guard, pd warden.PendingDecision, a warden.Answer) warden.Outcome {
	t.Helper()
	out, err := g.Resume(context.Background(), pd, a, owner(pd))
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	return out
}

// pendingOf calls and requires a pending decision.
func pendingOf(t *testing.T, g *warden.Guard, tool, args string) warden.PendingDecision {
	t.Helper()
	out := call(t, g, tool, args)
	if out.Pending == nil {
		t.Fatalf("%s %s: got %+v, want a pending decision", tool, args, viewOf(out))
	}
	return *out.Pending
}

// Found by an attack on this change, and fixed. REFERENCE 7: "The question is about the call as it will run: the tool and
// the args", and an approval "authorizes exactly that call". Approved.Digest and
// PendingDecision.Digest cover the arguments only, and sameQuestion compares the
// pending decision's Tool with itself (the resumed call's tool is read from it). A
// checkpoint edited to name another tool, with the same arguments, carries the
// person's approval to that tool: they approved reading a file, and the file is
// deleted.
func TestAttack_EditedToolRedirectsTheApproval(t *testing.T) {
	t.Run("check-in on both tools", func(t *testing.T) {
		var reads, deletes probe
		read, del := reads.tool("read_file"), deletes.tool("delete_file")
		read.CheckIn, del.CheckIn = &warden.CheckIn{}, &warden.CheckIn{}
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true}, read, del)
		pd := pendingOf(t, g, "read_file", `{"path":"/srv/payroll.db"}`)
		shown := pd.Digest // what the person approved: "Run read_file with these arguments?"
		pd.Tool = "delete_file"
		out, err := g.Resume(context.Background(), pd, warden.Approved{By: "alice", Digest: shown}, owner(pd))
		if deletes.runs() != 0 || out.Executed {
			t.Errorf("an approval of read_file ran delete_file: %+v err %v, delete runs %d", viewOf(out), err, deletes.runs())
		}
	})
	t.Run("a middleware that asks about every tool", func(t *testing.T) {
		var reads, deletes probe
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("approve", "Allow this call?")}}, reads.tool("read_file"), deletes.tool("delete_file"))
		pd := pendingOf(t, g, "read_file", `{"path":"/srv/payroll.db"}`)
		shown := pd.Digest
		pd.Tool = "delete_file"
		out, err := g.Resume(context.Background(), pd, warden.Approved{By: "alice", Digest: shown}, warden.Caller{})
		if deletes.runs() != 0 || out.Executed {
			t.Errorf("an approval of read_file ran delete_file: %+v err %v, delete runs %d", viewOf(out), err, deletes.runs())
		}
	})
}

// Found by an attack on this change, and fixed. Guard's doc: "the human stage then puts one question (every link's ask in
// link order, a carried escalation, the check-in) to a person", and Resume: "the
// approval answers the question only when it is the same question". sameQuestion
// compares kind, tool and asker names only, so a resume under a policy whose question
// has a part the person never saw (a check-in added to the tool, an escalation for
// another reason, a middleware asking something else) is answered by the old approval:
// the tool runs and nobody was asked that question.
func TestAttack_ApprovalAnswersAQuestionThePersonNeverSaw(t *testing.T) {
	t.Run("check-in added to an asked call", func(t *testing.T) {
		var p1, p2 probe
		g1 := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Revision: "r1", Middleware: []*warden.Middleware{askMW("approve", "Send?")}}, p1.tool("email"))
		pd := pendingOf(t, g1, "email", `{"to":"x@y.z"}`)
		if pd.Question != "Send?" {
			t.Fatalf("question %q", pd.Question)
		}
		tool := p2.tool("email")
		tool.CheckIn = &warden.CheckIn{Question: "This mails outside the company. Run it?"}
		g2 := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Revision: "r2", Middleware: []*warden.Middleware{askMW("approve", "Send?")}}, tool)
		if fresh := call(t, g2, "email", `{"to":"x@y.z"}`); fresh.Pending == nil || !strings.Contains(fresh.Pending.Question, "This mails outside") {
			t.Fatalf("r2 asks %+v", fresh.Pending)
		}
		out := resumeOK(t, g2, pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()})
		if p2.runs() != 0 || out.Executed {
			t.Errorf("r2's check-in was never put to anyone, yet the tool ran: %+v", viewOf(out))
		}
	})
	t.Run("check-in added to an escalated call", func(t *testing.T) {
		esc := always("limits", warden.Decision{Effect: warden.Ask, RuleID: "amount", Rationale: "amount over 100"})
		var p1, p2 probe
		g1 := mustBind(t, warden.Config{CanPause: true, Revision: "r1", Checkers: []warden.Checker{esc}}, p1.tool("refund"))
		pd := pendingOf(t, g1, "refund", `{"amount":500}`)
		tool := p2.tool("refund")
		tool.CheckIn = &warden.CheckIn{Question: "Refunds now need the finance lead. Run it?"}
		g2 := mustBind(t, warden.Config{CanPause: true, Revision: "r2", Checkers: []warden.Checker{esc}}, tool)
		out := resumeOK(t, g2, pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()})
		if p2.runs() != 0 || out.Executed {
			t.Errorf("r2's check-in was never put to anyone, yet the tool ran: %+v", viewOf(out))
		}
	})
	t.Run("escalation for another reason", func(t *testing.T) {
		var p1, p2 probe
		g1 := mustBind(t, warden.Config{CanPause: true, Revision: "r1", Checkers: []warden.Checker{
			always("limits", warden.Decision{Effect: warden.Ask, RuleID: "amount", Rationale: "amount over 100"}),
		}}, p1.tool("refund"))
		pd := pendingOf(t, g1, "refund", `{"amount":500}`)
		g2 := mustBind(t, warden.Config{CanPause: true, Revision: "r2", Checkers: []warden.Checker{
			always("fraud", warden.Decision{Effect: warden.Ask, RuleID: "fraud", Rationale: "the account was flagged for fraud"}),
		}}, p2.tool("refund"))
		out := resumeOK(t, g2, pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()})
		if p2.runs() != 0 || out.Executed {
			t.Errorf("an approval of %q answered %q: %+v", pd.Question, "the account was flagged for fraud", viewOf(out))
		}
	})
}

// Found by an attack on this change, and fixed. Guard's doc: "An approval runs exactly the arguments the person was shown,
// once". When the resumed pipeline reaches no question at all, the approval is never
// compared with anything: the call runs with whatever arguments the pipeline now
// produces, and the outcome (ApprovedBy) and the decision.made event say the person
// approved it. Two ways there: a checkpoint whose Original alone was edited (Args and
// Digest left as the person saw them, so every digest check passes), and a
// non-deterministic transform that asks only the first time.
func TestAttack_ApprovalThatAnswersNothingStillRunsOtherArgs(t *testing.T) {
	over100 := &warden.Middleware{Name: "approve", OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
		if amountOf(c.Args) > 100 {
			return warden.AskPerson("Refund more than 100?", "")
		}
		return warden.AllowCall()
	}}
	t.Run("edited Original", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{over100}}, p.tool("refund"))
		pd := pendingOf(t, g, "refund", `{"amount":500,"to":"customer"}`)
		shown, approval := pd.Digest, pd.ApprovalDigest()
		pd.Original = A(`{"amount":90,"to":"mallory"}`)
		out := resumeOK(t, g, pd, warden.Approved{By: "alice", Digest: approval})
		if p.runs() != 0 && p.last().Digest() != shown {
			t.Errorf("alice approved %s; the tool ran %s (outcome ApprovedBy %q)", shown, js(p.last()), out.ApprovedBy)
		}
		if out.Executed && out.ApprovedBy != "" && out.Args.Digest() != shown {
			t.Errorf("the outcome says %q approved the %s that ran, which they never saw", out.ApprovedBy, js(out.Args))
		}
	})
	t.Run("non-deterministic transform", func(t *testing.T) {
		var p probe
		n := 0
		drift := &warden.Middleware{Name: "drift", OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
			n++
			if n == 1 {
				return warden.AskPerson("Pay 100?", "")
			}
			return warden.TransformCall(c.Args.With("amount", 99999), "second thoughts")
		}}
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{drift}}, p.tool("pay"))
		pd := pendingOf(t, g, "pay", `{"amount":100}`)
		out := resumeOK(t, g, pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()})
		if p.runs() != 0 && p.last().Digest() != pd.Digest {
			t.Errorf("alice approved %s; the tool ran %s (outcome ApprovedBy %q)", js(pd.Args), js(p.last()), out.ApprovedBy)
		}
	})
}

// Found by an attack on this change, and fixed. Call.Unauthorized: "the fault text promises that this will not change during
// this run, and this keeps the promise". A resume cannot carry it: neither Resume nor
// [warden.Caller] has a place for the run's unauthorized targets, so a call that was
// pending when its checker faulted later in the run is approved, the recovered checker
// is asked again, and the tool runs. (Agent runs with parallel tool calls, the gateway.)
// This test looks for a Caller.Unauthorized field by reflection so that it compiles
// before and after a fix.
func TestAttack_ResumeForgetsTheRunsUnauthorizedTargets(t *testing.T) {
	var p probe
	esc := always("crm-policy", warden.Decision{Effect: warden.Ask, RuleID: "crm", Rationale: "customer data"})
	g := mustBind(t, warden.Config{CanPause: true, Checkers: []warden.Checker{esc}}, p.tool("crm"))
	bob := warden.Identity{Principal: "bob"}
	out, err := g.Call(context.Background(), warden.Call{ID: "c1", Tool: "crm", Args: A(`{}`), Identity: bob, Session: "s1"})
	if err != nil || out.Pending == nil {
		t.Fatalf("want pending, got %+v %v", viewOf(out), err)
	}
	pd := *out.Pending
	// Later in the run the checker faulted for crm: the run now lists it.
	unauthorized := []string{"crm"}
	if again, _ := g.Call(context.Background(), warden.Call{Tool: "crm", Args: A(`{}`), Identity: bob, Session: "s1", Unauthorized: unauthorized}); again.Status != warden.StatusRefused {
		t.Fatalf("a listed tool was not refused: %+v", viewOf(again))
	}
	who := warden.Caller{Identity: bob, Session: "s1"}
	f := reflect.ValueOf(&who).Elem().FieldByName("Unauthorized")
	if f.IsValid() {
		f.Set(reflect.ValueOf(unauthorized))
	}
	out, err = g.Resume(context.Background(), pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()}, who)
	if p.runs() != 0 || out.Executed {
		t.Errorf("crm ran on a resume after its authorization faulted in this run (Caller.Unauthorized exists: %v): %+v err %v", f.IsValid(), viewOf(out), err)
	}
	if !f.IsValid() {
		t.Errorf("warden.Caller has no Unauthorized field: a resume cannot keep the run's fault refusals")
	}
}

// governsPanics is a synchronous checker whose Governs panics.
type governsPanics struct{ sync bool }

func (governsPanics) Check(context.Context, warden.Request) (warden.Decision, error) {
	return warden.Decision{Effect: warden.Allow}, nil
}
func (governsPanics) Governs(warden.Capability) bool { panic("governs exploded") }
func (g governsPanics) Synchronous() bool            { return g.sync }
func (governsPanics) Name() string                   { return "governs-panics" }

// Found by an attack (older than this change), and fixed. Guard: "Every stage fails closed: an error, a panic
// or a timeout is a refusal". checkCall and the skill gate call Checker.Governs through
// CheckerGoverns outside any recover (safeCheck covers only Check): a Governs that
// panics escapes Guard.Call for a synchronous checker, and crashes the process for one
// the Guard runs on its own goroutine (see TestAttack_GovernsPanicOnAGoroutine).
func TestAttack_GovernsPanicEscapesTheGuard(t *testing.T) {
	tryCall := func(g *warden.Guard, c warden.Call) (out warden.Outcome, panicked any) {
		defer func() { panicked = recover() }()
		out, _ = g.Call(context.Background(), c)
		return out, nil
	}
	t.Run("declared capability", func(t *testing.T) {
		var p probe
		tool := p.tool("fetch")
		tool.Capabilities = []warden.Capability{warden.CapExternalNet}
		g := mustBind(t, warden.Config{Checkers: []warden.Checker{governsPanics{sync: true}}}, tool)
		out, r := tryCall(g, warden.Call{Tool: "fetch", Args: A(`{}`)})
		if r != nil {
			t.Fatalf("panic escaped Guard.Call: %v", r)
		}
		if out.Status != warden.StatusRefused || p.runs() != 0 {
			t.Errorf("got %+v, want a fault refusal", viewOf(out))
		}
	})
	t.Run("skill gate", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Checkers: []warden.Checker{governsPanics{sync: true}}}, p.tool(warden.ReadSkillTool))
		out, r := tryCall(g, warden.Call{Tool: warden.ReadSkillTool, Args: A(`{"id":"payroll"}`)})
		if r != nil {
			t.Fatalf("panic escaped Guard.Call: %v", r)
		}
		if out.Status != warden.StatusRefused || p.runs() != 0 {
			t.Errorf("got %+v, want a fault refusal", viewOf(out))
		}
	})
}

// Found by an attack (older than this change), and fixed: the goroutine case of the test above: it runs in a
// child process, because the panic kills the process that hosts the Guard.
func TestAttack_GovernsPanicOnAGoroutine(t *testing.T) {
	if os.Getenv("WARDEN_ATTACK_CHILD") == "1" {
		var p probe
		tool := p.tool("fetch")
		tool.Capabilities = []warden.Capability{warden.CapExternalNet}
		g := mustBind(t, warden.Config{Checkers: []warden.Checker{governsPanics{sync: false}}}, tool)
		out, err := g.Call(context.Background(), warden.Call{Tool: "fetch", Args: A(`{}`)})
		if err != nil || out.Status != warden.StatusRefused {
			t.Fatalf("got %+v %v, want a fault refusal", viewOf(out), err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttack_GovernsPanicOnAGoroutine$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WARDEN_ATTACK_CHILD=1")
	outb, err := cmd.CombinedOutput()
	if err != nil {
		first, _, _ := strings.Cut(string(outb), "\n\ngoroutine")
		t.Errorf("the process hosting the Guard died: %v\n%s", err, first)
	}
}

// Found by an attack on this change, and fixed. REFERENCE 9: "Handler lists are snapshotted; caller-owned configuration is
// never mutated", and Bind's doc: "a caller that edits one after Bind changes nothing
// bound". Guard.Tools and Guard.Tool return the plan's own Capabilities slice (the
// registry's copy, which the pipeline reads): anyone holding the Guard (an agent
// building its menu, an MCP front listing tools) can overwrite a declared capability
// in place, and the checker governing it is no longer asked. Registry.Tools shares it
// too.
func TestAttack_ToolsListingAliasesThePlan(t *testing.T) {
	var p probe
	tool := p.tool("fetch")
	tool.Capabilities = []warden.Capability{warden.CapExternalNet}
	noNet := &syncChecker{checker{name: "no-net", caps: []warden.Capability{warden.CapExternalNet}, fn: func(_ context.Context, r warden.Request) (warden.Decision, error) {
		if r.Capability == warden.CapExternalNet {
			return warden.Decision{Effect: warden.Deny, RuleID: "net", Rationale: "no network"}, nil
		}
		return warden.Decision{Effect: warden.Allow}, nil
	}}}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{noNet}}, tool)
	if out := call(t, g, "fetch", `{}`); out.Status != warden.StatusRefused {
		t.Fatalf("before: %+v", viewOf(out))
	}
	listed := g.Tools()
	listed[0].Capabilities[0] = warden.CapMemoryRead // a caller "tidies" the listing
	if one, _ := g.Tool("fetch"); len(one.Capabilities) > 0 {
		one.Capabilities[0] = warden.CapMemoryRead
	}
	out := call(t, g, "fetch", `{}`)
	if out.Status != warden.StatusRefused || p.runs() != 0 {
		t.Errorf("editing Guard.Tools() dropped the external_net check: %+v, runs %d", viewOf(out), p.runs())
	}
}

// nanLimit is a value-type checker holding a float; NaN != NaN.
type nanLimit struct{ max float64 }

func (nanLimit) Check(context.Context, warden.Request) (warden.Decision, error) {
	return warden.Decision{Effect: warden.Allow}, nil
}
func (nanLimit) Governs(warden.Capability) bool { return false }

// Found by an attack (small), and fixed. The issue: idempotent re-bind must "never fail for the identical
// value". sameValue decides comparable types by == alone, and a comparable value that
// holds a NaN is not == to itself: re-binding the very same Config is ErrPlanConflict.
func TestAttack_RebindOfTheIdenticalConfigHoldingNaN(t *testing.T) {
	cfg := warden.Config{Checkers: []warden.Checker{nanLimit{max: math.NaN()}}}
	r := &warden.Registry{}
	var p probe
	if err := r.Register(p.tool("t")); err != nil {
		t.Fatal(err)
	}
	g1, err := r.Bind(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := r.Bind(cfg)
	if err != nil || g2 != g1 {
		t.Errorf("re-binding the identical Config: guard %p (first %p), err %v", g2, g1, err)
	}
}

// ---- Attacks that held. ----

// HELD. A middleware that asks only on the resume (the first pass had only an S1
// escalation): the approval answered another question (its askers differ), so the call
// is refused with the no-pause text and nothing runs.
func TestAttack_Held_AskOnlyOnTheResumeIsNotAnswered(t *testing.T) {
	var p probe
	n := 0
	late := &warden.Middleware{Name: "late", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
		n++
		if n > 1 {
			return warden.AskPerson("Also this?", "")
		}
		return warden.AllowCall()
	}}
	esc := always("limits", warden.Decision{Effect: warden.Ask, RuleID: "amount", Rationale: "amount over 100"})
	g := mustBind(t, warden.Config{CanPause: true, Checkers: []warden.Checker{esc}, Middleware: []*warden.Middleware{late}}, p.tool("refund"))
	pd := pendingOf(t, g, "refund", `{"amount":500}`)
	if pd.Kind != warden.KindEscalate || len(pd.Asks) != 0 {
		t.Fatalf("pending %+v", pd)
	}
	out := resumeOK(t, g, pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()})
	checkView(t, out, refusedAt(warden.StageMiddleware, spectext.NoPauseText("late", "Also this?")))
	if p.runs() != 0 {
		t.Errorf("runs %d", p.runs())
	}
}

// HELD. A non-deterministic transform that still asks on the resume but produces other
// arguments: the approval is refused with the mismatch text.
func TestAttack_Held_DriftingArgsOnResumeAreRefused(t *testing.T) {
	var p probe
	n := 0
	drift := &warden.Middleware{Name: "drift", OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
		n++
		return warden.TransformCall(c.Args.With("amount", 100*n), "drift")
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{drift, askMW("approve", "Pay?")}}, p.tool("pay"))
	pd := pendingOf(t, g, "pay", `{"amount":1}`)
	out := resumeOK(t, g, pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()})
	checkView(t, out, refusedAt(warden.StageHuman, spectext.ApprovalMismatchText))
	if p.runs() != 0 {
		t.Errorf("runs %d", p.runs())
	}
}

// HELD. Edits to Kind, Asks and Middleware, and nil/empty Asks: the approval answers
// only the question the pipeline asks again, so an edit either changes nothing (nil
// Asks with the same Middleware) or is refused; an unknown kind is an error.
func TestAttack_Held_EditedQuestionShape(t *testing.T) {
	mws := []*warden.Middleware{askMW("a1", "First?"), askMW("a2", "Second?")}
	tests := []struct {
		name string
		edit func(*warden.PendingDecision)
		runs int
	}{
		{"unchanged", func(*warden.PendingDecision) {}, 1},
		{"asks dropped, first asker kept in Middleware", func(p *warden.PendingDecision) { p.Asks = nil }, 0},
		{"asks emptied, Middleware emptied", func(p *warden.PendingDecision) { p.Asks, p.Middleware = []warden.MiddlewareAsk{}, "" }, 0},
		{"askers reordered", func(p *warden.PendingDecision) { p.Asks[0], p.Asks[1] = p.Asks[1], p.Asks[0] }, 0},
		{"kind escalate", func(p *warden.PendingDecision) { p.Kind = warden.KindEscalate }, 0},
		{"kind checkin", func(p *warden.PendingDecision) { p.Kind = warden.KindCheckIn }, 0},
		{"escalation invented", func(p *warden.PendingDecision) {
			p.Escalation = &warden.Decision{Effect: warden.Ask, Rationale: "x"}
		}, 1}, // recomputed, never trusted: harmless
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: mws}, p.tool("email"))
			pd := pendingOf(t, g, "email", `{"to":"x"}`)
			tt.edit(&pd)
			out, err := g.Resume(context.Background(), pd, warden.Approved{By: "a", Digest: pd.ApprovalDigest()}, owner(pd))
			if err != nil || p.runs() != tt.runs || out.Executed != (tt.runs == 1) {
				t.Errorf("got %+v err %v runs %d, want runs %d", viewOf(out), err, p.runs(), tt.runs)
			}
		})
	}
	t.Run("unknown kind", func(t *testing.T) {
		var p probe
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: mws}, p.tool("email"))
		pd := pendingOf(t, g, "email", `{"to":"x"}`)
		pd.Kind = "approve-everything"
		if _, err := g.Resume(context.Background(), pd, warden.Approved{By: "a", Digest: pd.ApprovalDigest()}, owner(pd)); err == nil || p.runs() != 0 {
			t.Errorf("err %v runs %d", err, p.runs())
		}
	})
}

// HELD. An S1 escalation and a later ask are one decision of kind escalate that names
// the asker; approving it runs the call once; the same approval on a guard whose
// escalation is gone (S2 allows the transformed call) is answered as an ask-only
// question and refused (another question), not silently used.
func TestAttack_Held_EscalationPlusAsk(t *testing.T) {
	var p probe
	esc := always("limits", warden.Decision{Effect: warden.Ask, RuleID: "amount", Rationale: "amount over 100"})
	cfg := warden.Config{CanPause: true, Checkers: []warden.Checker{esc}, Middleware: []*warden.Middleware{askMW("approve", "Refund?")}}
	g := mustBind(t, cfg, p.tool("refund"))
	pd := pendingOf(t, g, "refund", `{"amount":500}`)
	if pd.Kind != warden.KindEscalate || pd.Middleware != "approve" || len(pd.Asks) != 1 {
		t.Fatalf("pending %+v", pd)
	}
	out := resumeOK(t, g, pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()})
	if !out.Executed || p.runs() != 1 {
		t.Fatalf("got %+v runs %d", viewOf(out), p.runs())
	}
	var p2 probe
	g2 := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("approve", "Refund?")}}, p2.tool("refund"))
	out = resumeOK(t, g2, pd, warden.Approved{By: "alice", Digest: pd.ApprovalDigest()})
	checkView(t, out, refusedAt(warden.StageMiddleware, spectext.NoPauseText("approve", "Refund?")))
	if p2.runs() != 0 {
		t.Errorf("runs %d", p2.runs())
	}
}

// HELD. Degenerate pending decisions do not panic and run nothing: the zero value, an
// unknown tool (approved and declined), a digest-only approval of the zero value.
func TestAttack_Held_DegeneratePendingDecisions(t *testing.T) {
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true}, p.tool("t"))
	if _, err := g.Resume(context.Background(), warden.PendingDecision{}, warden.Approved{By: "a", Digest: ""}, owner(warden.PendingDecision{})); err == nil {
		t.Errorf("zero pending decision resumed")
	}
	zero := warden.PendingDecision{Kind: warden.KindCheckIn, Tool: "nope"}
	zero.Digest = zero.Args.Digest()
	out, err := g.Resume(context.Background(), zero, warden.Approved{By: "a", Digest: zero.ApprovalDigest()}, owner(zero))
	if err != nil || out.Status != warden.StatusRefused || out.Stage != warden.StageLookup {
		t.Errorf("unknown tool approved: %+v %v", viewOf(out), err)
	}
	out, err = g.Resume(context.Background(), zero, warden.Declined{By: "a"}, owner(zero))
	if err != nil || out.Status != warden.StatusRefused {
		t.Errorf("unknown tool declined: %+v %v", viewOf(out), err)
	}
	// A check-in decision for a tool without a check-in: no question, the call runs as
	// a fresh call would (and the arguments are the ones approved).
	zero.Tool = "t"
	if out := resumeOK(t, g, zero, warden.Approved{By: "a", Digest: zero.ApprovalDigest()}); !out.Executed || p.runs() != 1 {
		t.Errorf("got %+v", viewOf(out))
	}
	if p.runs() != 0 && p.last().Digest() != zero.Digest {
		t.Errorf("ran %s", js(p.last()))
	}
}

// HELD. Approved.Digest is required and must equal the pending decision's: an empty or
// other digest is an error wrapping ErrApprovalMismatch and nothing runs; a pending
// decision whose Args do not match its Digest is an error.
func TestAttack_Held_DigestIsRequired(t *testing.T) {
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("approve", "Send?")}}, p.tool("email"))
	pd := pendingOf(t, g, "email", `{"to":"x"}`)
	for _, d := range []string{"", A(`{"to":"y"}`).Digest(), strings.ToUpper(pd.Digest)} {
		if _, err := g.Resume(context.Background(), pd, &warden.Approved{By: "a", Digest: d}, owner(pd)); !errors.Is(err, warden.ErrApprovalMismatch) {
			t.Errorf("digest %q: err %v", d, err)
		}
	}
	forged := pd
	forged.Args = A(`{"to":"mallory"}`)
	if _, err := g.Resume(context.Background(), forged, warden.Approved{By: "a", Digest: forged.ApprovalDigest()}, owner(forged)); err == nil {
		t.Errorf("Args edited without the digest: resumed")
	}
	if p.runs() != 0 {
		t.Errorf("runs %d", p.runs())
	}
}

// HELD. Unauthorized with odd targets: an empty entry and a skill target do not refuse
// the tool of that name; "read_skill" itself refuses the tool; a skill entry matches
// only the exact target.
func TestAttack_Held_UnauthorizedOddTargets(t *testing.T) {
	var p probe
	skills := &syncChecker{checker{name: "skills", caps: []warden.Capability{warden.CapSkillRead}, fn: func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{Effect: warden.Allow}, nil
	}}}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{skills}}, p.tool(warden.ReadSkillTool), p.tool("t"))
	do := func(tool, args string, un ...string) warden.Outcome {
		out, err := g.Call(context.Background(), warden.Call{Tool: tool, Args: A(args), Unauthorized: un})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := do("t", `{}`, "", warden.SkillTarget("t")); out.Status != warden.StatusRan {
		t.Errorf("odd entries refused t: %+v", viewOf(out))
	}
	if out := do(warden.ReadSkillTool, `{"id":"x"}`, warden.ReadSkillTool); out.Status != warden.StatusRefused || out.Stage != warden.StagePermission {
		t.Errorf("read_skill listed: %+v", viewOf(out))
	}
	if out := do(warden.ReadSkillTool, `{"id":"x"}`, warden.SkillTarget("X")); out.Status != warden.StatusRan {
		t.Errorf("skill:X refused skill:x: %+v", viewOf(out))
	}
	if out := do(warden.ReadSkillTool, `{}`, warden.SkillTarget("")); out.Status != warden.StatusRefused || out.Stage != warden.StageSkill {
		t.Errorf("missing id with skill: listed: %+v", viewOf(out))
	}
}

// HELD. An S1 checker returning arguments equal to its input but in another key order
// IS a replacement (order is part of Args.Equal) and forces S2; returning an equal copy
// is not.
func TestAttack_Held_ReorderedS1ReturnIsAReplacement(t *testing.T) {
	var p probe
	reorder := newSync("reorder", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		a := A(`{"b":2,"a":1}`)
		return warden.Decision{Effect: warden.Allow, Args: &a}, nil
	})
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{reorder}}, p.tool("t"))
	out := call(t, g, "t", `{"a":1,"b":2}`)
	if out.Status != warden.StatusRan || js(p.last()) != `{"b":2,"a":1}` {
		t.Fatalf("got %+v ran %s", viewOf(out), js(p.last()))
	}
	s2 := 0
	for _, c := range out.Checks {
		if c.Pass == "s2" {
			s2++
		}
	}
	if s2 != 1 {
		t.Errorf("S2 checks %d, want 1", s2)
	}
}

// ifaceGate is a comparable type whose == panics when its field holds a func.
type ifaceGate struct {
	name string
	hook any
}

func (ifaceGate) Authorize(context.Context, warden.Invocation) (bool, error) { return true, nil }

// zeroGate is a zero-size type that cannot be compared.
type zeroGate struct{ _ [0]func() }

func (zeroGate) Authorize(context.Context, warden.Invocation) (bool, error) { return true, nil }

// HELD. sameValue: the identical Config is idempotent when a comparable value's == would
// panic (an interface field holding a func) and for a zero-size incomparable value;
// a separately built one, or a middleware edited after Bind, is a conflict; the bound
// guard does not see the caller's edit of a middleware.
func TestAttack_Held_RebindIdentity(t *testing.T) {
	bind := func(cfg warden.Config) (*warden.Registry, *warden.Guard) {
		r := &warden.Registry{}
		var p probe
		if err := r.Register(p.tool("t")); err != nil {
			t.Fatal(err)
		}
		g, err := r.Bind(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r, g
	}
	hook := func() {}
	cfg := warden.Config{Ungoverned: true, Gate: ifaceGate{name: "g", hook: hook}}
	r, g := bind(cfg)
	if g2, err := r.Bind(cfg); err != nil || g2 != g {
		t.Errorf("identical Config with a func in an interface field: %v", err)
	}
	if _, err := r.Bind(warden.Config{Ungoverned: true, Gate: ifaceGate{name: "g", hook: func() {}}}); !errors.Is(err, warden.ErrPlanConflict) {
		t.Errorf("separately built gate: err %v", err)
	}
	zr, zg := bind(warden.Config{Ungoverned: true, Gate: zeroGate{}})
	if g2, err := zr.Bind(warden.Config{Ungoverned: true, Gate: zeroGate{}}); err != nil || g2 != zg {
		t.Errorf("zero-size gate: %v", err)
	}

	var seen []string
	m := &warden.Middleware{Name: "m", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
		seen = append(seen, "bound")
		return warden.AllowCall()
	}}
	mcfg := warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{m}}
	mr, mg := bind(mcfg)
	m.OnToolCall = func(context.Context, warden.ToolCall) warden.CallOutcome {
		seen = append(seen, "edited")
		return warden.DenyCall("edited")
	}
	m.Tools = []string{"other"}
	if out := call(t, mg, "t", `{}`); out.Status != warden.StatusRan || len(seen) != 1 || seen[0] != "bound" {
		t.Errorf("the caller's edit reached the bound guard: %+v %v", viewOf(out), seen)
	}
	if _, err := mr.Bind(mcfg); !errors.Is(err, warden.ErrPlanConflict) {
		t.Errorf("re-bind with an edited middleware: err %v", err)
	}
}

// Found by an attack (low), and fixed. Guard's doc: the human stage puts "one question (every link's ask in
// link order, a carried escalation, the check-in)". Only one escalation is carried: the
// skill gate's escalation is dropped when a security pass already escalated, so the
// person approves "reading skills is reviewed" and is never told that this skill
// itself needs a person's decision (and a resume cannot notice that reason change).
func TestAttack_SkillGateEscalationIsNotShown(t *testing.T) {
	var p probe
	c := &syncChecker{checker{name: "skills", caps: []warden.Capability{warden.CapSkillRead}, fn: func(_ context.Context, r warden.Request) (warden.Decision, error) {
		if r.Capability == warden.CapSkillRead {
			return warden.Decision{Effect: warden.Ask, RuleID: "skill.payroll", Rationale: "the payroll skill needs HR"}, nil
		}
		return warden.Decision{Effect: warden.Ask, RuleID: "tool", Rationale: "reading skills is reviewed"}, nil
	}}}
	g := mustBind(t, warden.Config{CanPause: true, Checkers: []warden.Checker{c}}, p.tool(warden.ReadSkillTool))
	pd := pendingOf(t, g, warden.ReadSkillTool, `{"id":"payroll"}`)
	if !strings.Contains(pd.Question, "the payroll skill needs HR") {
		t.Errorf("question %q does not carry the skill gate's escalation", pd.Question)
	}
}
