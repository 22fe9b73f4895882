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
