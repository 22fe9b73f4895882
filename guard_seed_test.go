package warden_test

// Tests derived from the two source documents' sentences that the issue "Seed parity"
// found Warden did not hold. Each quotes the sentence it checks.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/schema"
)

// The issue: "A middleware ask also pauses before the second security pass and schema
// validation, so a person is asked to approve {"amount": "lots"}, which validation then
// refuses: a wasted human decision." REFERENCE step 7: a middleware ask is "recorded at
// step 3, decided here on the final args".
func TestSeed_AskIsDecidedAfterS2AndValidation(t *testing.T) {
	amount := warden.Executable{
		Tool: warden.Tool{Name: "refund", InputSchema: []byte(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`)},
	}
	t.Run("validation refuses before anyone is asked", func(t *testing.T) {
		var p probe
		tool := amount
		tool.Run = p.fn(nil)
		g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Schemas: schema.Compiler{}, Middleware: []*warden.Middleware{askMW("approve", "Refund?")}}, tool)
		out := call(t, g, "refund", `{"amount":"lots"}`)
		if out.Pending != nil || out.Status != warden.StatusRefused || out.Stage != warden.StageValidation {
			t.Fatalf("got %+v pending %v; want a validation refusal and nobody asked", viewOf(out), out.Pending)
		}
		if p.runs() != 0 {
			t.Errorf("tool ran %d times", p.runs())
		}
	})
	t.Run("S2 refuses what a later transform produced before anyone is asked", func(t *testing.T) {
		var p probe
		tool := amount
		tool.Run = p.fn(nil)
		noBig := always("limits", warden.Decision{Effect: warden.Allow})
		noBig.fn = func(_ context.Context, r warden.Request) (warden.Decision, error) {
			if amountOf(r.Args) > 1000 {
				return warden.Decision{Effect: warden.Deny, RuleID: "limit", Rationale: "over the limit"}, nil
			}
			return warden.Decision{Effect: warden.Allow}, nil
		}
		double := transform("double", "double it", func(a warden.Args) warden.Args {
			return a.With("amount", 2*amountOf(a))
		})
		g := mustBind(t, warden.Config{CanPause: true, Schemas: schema.Compiler{}, Checkers: []warden.Checker{noBig}, Middleware: []*warden.Middleware{askMW("approve", "Refund?"), double}}, tool)
		out := call(t, g, "refund", `{"amount":600}`)
		checkView(t, out, refusedAt(warden.StageFinalCheck, "[permission denied: over the limit]"))
		if out.Pending != nil || p.runs() != 0 {
			t.Errorf("pending %v, runs %d", out.Pending, p.runs())
		}
		// Within the limit, the person is asked about the doubled amount.
		out = call(t, g, "refund", `{"amount":400}`)
		if out.Pending == nil || js(out.Pending.Args) != `{"amount":800}` {
			t.Fatalf("got %+v, want a pending decision about {\"amount\":800}", viewOf(out))
		}
	})
}

// ADR D2: a security hook "may return replacement arguments". Returning the arguments
// it was given is not a replacement, and does not force a second pass.
func TestSeed_EqualReturnIsNotAReplacement(t *testing.T) {
	var p probe
	same := newSync("same", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		a := warden.MustParseArgs(js(r.Args)) // an equal copy, not the same value
		return warden.Decision{Effect: warden.Allow, Args: &a}, nil
	})
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{same}}, p.tool("t"))
	out := call(t, g, "t", `{"x":1}`)
	if out.Status != warden.StatusRan || same.count() != 1 {
		t.Fatalf("got %+v, checker asked %d times; want one pass", viewOf(out), same.count())
	}
	for _, c := range out.Checks {
		if c.Pass != "s1" {
			t.Errorf("check in pass %q: an equal return forced a second pass", c.Pass)
		}
	}
}

// The fault text reads "This will not change during this run — do not call it again".
// A run that lists the tool in Call.Unauthorized gets that refusal again, and no checker
// is asked (so a checker that recovered cannot make the text false).
func TestSeed_UnauthorizedIsNotAskedAgain(t *testing.T) {
	var p probe
	c := allowChecker("recovered")
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{c}}, p.tool("crm"), p.tool("other"))
	out, err := g.Call(context.Background(), warden.Call{Tool: "crm", Args: A(`{}`), Unauthorized: []string{"crm"}})
	if err != nil {
		t.Fatal(err)
	}
	checkView(t, out, refusedAt(warden.StagePermission, warden.UnauthorizedText("crm")))
	if !out.Decision.Fault || out.Decision.RuleID != "checker.fault" || c.count() != 0 || p.runs() != 0 {
		t.Errorf("decision %+v, checker asked %d times, runs %d", out.Decision, c.count(), p.runs())
	}
	// Another tool is asked about as usual.
	if out, _ := g.Call(context.Background(), warden.Call{Tool: "other", Args: A(`{}`), Unauthorized: []string{"crm"}}); out.Status != warden.StatusRan || c.count() == 0 {
		t.Errorf("other tool: %+v", viewOf(out))
	}

	// A skill whose check faulted is refused by the skill gate without asking.
	skills := &syncChecker{checker{name: "skills", caps: []warden.Capability{warden.CapSkillRead}, fn: func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{Effect: warden.Allow}, nil
	}}}
	var sp probe
	read := sp.tool(warden.ReadSkillTool)
	g = mustBind(t, warden.Config{Checkers: []warden.Checker{skills}}, read)
	out, err = g.Call(context.Background(), warden.Call{Tool: warden.ReadSkillTool, Args: A(`{"id":"payroll"}`), Unauthorized: []string{warden.SkillTarget("payroll")}})
	if err != nil {
		t.Fatal(err)
	}
	checkView(t, out, refusedAt(warden.StageSkill, warden.UnauthorizedText(warden.SkillTarget("payroll"))))
	if slices.ContainsFunc(skills.requests(), func(r warden.Request) bool { return r.Capability == warden.CapSkillRead }) || sp.runs() != 0 {
		t.Errorf("the skill gate asked %v, runs %d", skills.requests(), sp.runs())
	}
}

// amountOf reads the integer "amount" argument (0 when it is not a number).
func amountOf(a warden.Args) int {
	v, _ := a.Get("amount")
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}

// REFERENCE section 9: "Binding is idempotent for the same inputs". The issue found
// that binding the same Config twice failed when it held any func value, even
// Now: time.Now.
func TestSeed_RebindWithFuncValuesIsIdempotent(t *testing.T) {
	var p probe
	r := &warden.Registry{}
	if err := r.Register(p.tool("t")); err != nil {
		t.Fatal(err)
	}
	fn := warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{Effect: warden.Allow}, nil
	})
	gate := warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { return true, nil })
	mw := passThrough("mw", nil)
	cfg := warden.Config{Checkers: []warden.Checker{fn}, Gate: gate, Middleware: []*warden.Middleware{mw}, Now: time.Now}
	g1, err := r.Bind(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if g2, err := r.Bind(cfg); err != nil || g2 != g1 {
		t.Errorf("second Bind of the identical Config: %p, %v; want %p", g2, err, g1)
	}
	// Built separately from the same code: not provably the same input, so a conflict.
	other := cfg
	other.Checkers = []warden.Checker{warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{Effect: warden.Deny, Rationale: "no"}, nil
	})}
	if _, err := r.Bind(other); !errors.Is(err, warden.ErrPlanConflict) {
		t.Errorf("Bind with another CheckerFunc: %v, want ErrPlanConflict", err)
	}
	clock := cfg
	clock.Now = func() time.Time { return time.Unix(0, 0) }
	if _, err := r.Bind(clock); !errors.Is(err, warden.ErrPlanConflict) {
		t.Errorf("Bind with another clock: %v, want ErrPlanConflict", err)
	}
}

// REFERENCE section 9: "Handler lists are snapshotted; caller-owned configuration is
// never mutated." Editing a Middleware after Bind changes nothing bound, and binding
// the edited value again is a conflict.
func TestSeed_BindSnapshotsMiddlewareValues(t *testing.T) {
	var p probe
	r := &warden.Registry{}
	if err := r.Register(p.tool("t")); err != nil {
		t.Fatal(err)
	}
	mw := passThrough("mw", nil)
	cfg := warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{mw}}
	g, err := r.Bind(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mw.OnToolCall = func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.DenyCall("edited after Bind") }
	mw.Name = "edited"
	out := call(t, g, "t", `{}`)
	if out.Status != warden.StatusRan || len(out.Ledger) != 1 || out.Ledger[0].Middleware != "mw" {
		t.Errorf("the bound guard followed an edit of the caller's Middleware: %+v ledger %+v", viewOf(out), out.Ledger)
	}
	if _, err := r.Bind(cfg); !errors.Is(err, warden.ErrPlanConflict) {
		t.Errorf("re-Bind after editing the middleware: %v, want ErrPlanConflict", err)
	}
}

// UnauthorizedTarget names what the model was told will not change during the run,
// and nothing else.
func TestSeed_UnauthorizedTarget(t *testing.T) {
	var p probe
	down := newSync("down", func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{}, errors.New("authorizer down")
	})
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{down}}, p.tool("crm"))
	if target, ok := warden.UnauthorizedTarget(call(t, g, "crm", `{}`)); !ok || target != "crm" {
		t.Errorf("UnauthorizedTarget = %q, %v; want crm", target, ok)
	}
	deny := always("deny", warden.Decision{Effect: warden.Deny, Rationale: "no", Fault: true})
	g = mustBind(t, warden.Config{Checkers: []warden.Checker{deny}}, p.tool("crm"))
	if target, ok := warden.UnauthorizedTarget(call(t, g, "crm", `{}`)); ok {
		t.Errorf("a fault that did not promise anything: UnauthorizedTarget = %q", target)
	}
	skills := &syncChecker{checker{name: "skills", caps: []warden.Capability{warden.CapSkillRead}, fn: func(_ context.Context, r warden.Request) (warden.Decision, error) {
		if r.Capability == warden.CapSkillRead {
			return warden.Decision{}, errors.New("skill catalogue unavailable")
		}
		return warden.Decision{Effect: warden.Allow}, nil
	}}}
	g = mustBind(t, warden.Config{Checkers: []warden.Checker{skills}}, p.tool(warden.ReadSkillTool))
	if target, ok := warden.UnauthorizedTarget(call(t, g, warden.ReadSkillTool, `{"id":"payroll"}`)); !ok || target != "skill:payroll" {
		t.Errorf("skill gate fault: UnauthorizedTarget = %q, %v", target, ok)
	}
}

// panicName is a checker whose Name panics.
type panicName struct{ allowOnly }

func (panicName) Name() string { panic("no name") }

type allowOnly struct{}

func (allowOnly) Check(context.Context, warden.Request) (warden.Decision, error) {
	return warden.Decision{Effect: warden.Allow}, nil
}
func (allowOnly) Governs(warden.Capability) bool { return false }

// Fail closed at construction: a checker Bind cannot describe is refused, not a panic.
func TestSeed_BindRefusesAPanickingChecker(t *testing.T) {
	var p probe
	r := &warden.Registry{}
	if err := r.Register(p.tool("t")); err != nil {
		t.Fatal(err)
	}
	_, err := r.Bind(warden.Config{Checkers: []warden.Checker{allowOnly{}, panicName{}}})
	if err == nil || err.Error() != "warden: checker 1 panicked while Bind asked how to call it: no name" {
		t.Errorf("Bind: %v", err)
	}
}
