package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wardenhq/warden"
)

// A shadow that errors, panics, answers nonsense or does not answer in time is a
// fault, never an answer; one that answers after its deadline is a fault too.
func TestShadowEvalFaults(t *testing.T) {
	old := shadowTimeout
	shadowTimeout = 20 * time.Millisecond
	t.Cleanup(func() { shadowTimeout = old })
	req := warden.Request{Capability: warden.CapToolCall, Target: "t"}
	cases := []struct {
		name  string
		check warden.CheckerFunc
		fault string
	}{
		{"error", func(context.Context, warden.Request) (warden.Decision, error) {
			return warden.Decision{Effect: warden.Allow}, errors.New("store down")
		}, "shadow policy failed: store down"},
		{"panic", func(context.Context, warden.Request) (warden.Decision, error) { panic("boom") }, "shadow policy panicked: boom"},
		{"invalid effect", func(context.Context, warden.Request) (warden.Decision, error) {
			return warden.Decision{Effect: warden.Effect(99)}, nil
		}, "shadow policy returned an invalid effect 99"},
		{"late", func(ctx context.Context, _ warden.Request) (warden.Decision, error) {
			<-ctx.Done()
			return warden.Decision{Effect: warden.Deny, RuleID: "late"}, nil
		}, "shadow policy did not answer within 20ms"},
		{"own fault", func(context.Context, warden.Request) (warden.Decision, error) {
			return warden.Decision{Effect: warden.Deny, RuleID: "c", Rationale: "condition 'c' could not be evaluated: x", Fault: true}, nil
		}, "condition 'c' could not be evaluated: x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The caller's context is already cancelled: the call happened, the shadow
			// is still asked under its own deadline.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, fault := evalShadow(ctx, c.check, req)
			if fault != c.fault {
				t.Fatalf("fault %q, want %q", fault, c.fault)
			}
		})
	}
	if d, fault := evalShadow(context.Background(), warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{Effect: warden.Ask, RuleID: "r"}, nil
	}), req); fault != "" || d.Effect != warden.Ask || d.RuleID != "r" {
		t.Fatalf("answer %+v, fault %q", d, fault)
	}
}

// fixedChecker answers by target.
type fixedChecker map[string]warden.Decision

func (f fixedChecker) Check(_ context.Context, r warden.Request) (warden.Decision, error) {
	if r.Target == "panic" {
		panic("shadow bug")
	}
	return f[r.Target], nil
}

func (fixedChecker) Governs(warden.Capability) bool { return false }

// Per source, one verdict: the strictest answer stricter than the enforcing one (the
// first among equals), else a fault; answers as strict as the enforcing one, or
// looser, are not verdicts.
func TestShadowVerdictSelection(t *testing.T) {
	rec := &warden.Recorder{}
	g := &Gateway{sink: rec}
	allow := warden.Decision{Effect: warden.Allow, RuleID: "ok"}
	ask := warden.Decision{Effect: warden.Ask, RuleID: "ask"}
	a := shadowSource{name: "policy", revision: "rev-a", checker: fixedChecker{
		"t1": {Effect: warden.Deny, RuleID: "c", Rationale: "condition 'c' could not be evaluated: x", Fault: true},
		"t2": {Effect: warden.Ask, RuleID: "a2"},
		"t3": {Effect: warden.Deny, RuleID: "d3", Reason: "why"},
		"t4": {Effect: warden.Deny, RuleID: "d4"},
	}}
	b := shadowSource{name: "shadow_policy", revision: "rev-b", checker: fixedChecker{
		"t1": {Effect: warden.Allow, RuleID: "loose"},
		"t2": {Effect: warden.Ask, RuleID: "same"},
		"t3": {Effect: warden.Allow},
		"t4": {Effect: warden.Allow},
	}}
	c := shadowSource{name: "third", revision: "rev-c", checker: fixedChecker{}}
	req := func(target string) warden.Request {
		return warden.Request{Capability: warden.CapToolCall, Target: target}
	}
	checks := []shadowCheck{
		{req: req("t1"), enforced: allow, shadows: []shadowSource{a, b}},
		{req: req("t2"), enforced: ask, shadows: []shadowSource{a, b}},
		{req: req("t3"), enforced: allow, shadows: []shadowSource{a, b}},
		{req: req("t4"), enforced: allow, shadows: []shadowSource{a, b}},
		{req: req("panic"), enforced: allow, shadows: []shadowSource{c}},
	}
	call := warden.Call{ID: "call-1", Tool: "t", Session: "s", Identity: warden.Identity{Principal: "ann"}}
	got := g.shadowVerdicts(context.Background(), checks, call)
	if len(got) != 2 {
		t.Fatalf("verdicts %+v", got)
	}
	if v := got[0]; v.Source != "policy" || v.Effect != "would deny" || v.Enforced != "allow" || v.RuleID != "d3" || v.Reason != "why" || v.Revision != "rev-a" {
		t.Errorf("first verdict %+v", v)
	}
	if v := got[1]; v.Source != "third" || v.Effect != "fault" || v.Enforced != "allow" || v.Rationale != "shadow policy panicked: shadow bug" || v.Revision != "rev-c" {
		t.Errorf("second verdict %+v", v)
	}
	evs := rec.Named(warden.EventShadow)
	if len(evs) != 2 || evs[0].CallID != "call-1" || evs[0].Session != "s" || evs[0].Identity.Principal != "ann" || evs[0].Target != "t3" ||
		evs[0].Outcome != "would deny" || evs[0].Detail != "allow" || evs[1].Error != "shadow policy panicked: shadow bug" {
		t.Errorf("events %+v", evs)
	}
	// A fault alone is the verdict; nothing stricter, nothing recorded.
	if got := g.shadowVerdicts(context.Background(), checks[:1], call); len(got) != 1 || got[0].Effect != "fault" || got[0].RuleID != "c" {
		t.Errorf("fault-only verdicts %+v", got)
	}
	if got := g.shadowVerdicts(context.Background(), checks[1:2], call); got != nil {
		t.Errorf("an ask beside an enforcing ask gave %+v", got)
	}
}
