package warden_test

import (
	"context"
	"testing"
	"time"

	"github.com/wardenhq/warden"
)

// lateChecker is Synchronous and Interruptible, but answers allow only after its
// context is done: the Guard must run it under the checker deadline and never count
// that late answer.
type lateChecker struct{ sawDeadline bool }

func (c *lateChecker) Check(ctx context.Context, _ warden.Request) (warden.Decision, error) {
	_, c.sawDeadline = ctx.Deadline()
	<-ctx.Done()
	return warden.Decision{Effect: warden.Allow, RuleID: "late"}, nil
}
func (*lateChecker) Governs(warden.Capability) bool { return false }
func (*lateChecker) Synchronous() bool              { return true }
func (*lateChecker) Interruptible() bool            { return true }

// faultChecker is Synchronous and Interruptible and, once its context is done, gives
// its own fault denial: that one stands, since it says what ran out.
type faultChecker struct{}

func (faultChecker) Check(ctx context.Context, _ warden.Request) (warden.Decision, error) {
	<-ctx.Done()
	return warden.Decision{Effect: warden.Deny, RuleID: "cond", Rationale: "permission-checker threw: condition 'cond' did not finish before its deadline", Fault: true}, nil
}
func (faultChecker) Governs(warden.Capability) bool { return false }
func (faultChecker) Synchronous() bool              { return true }
func (faultChecker) Interruptible() bool            { return true }

func TestInterruptibleCheckerRunsUnderDeadline(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    warden.Checker
		rule string
	}{
		{"late allow is a fault", &lateChecker{}, "checker.fault"},
		{"own fault stands", faultChecker{}, "cond"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs := 0
			var reg warden.Registry
			if err := reg.Register(warden.Executable{
				Tool: warden.Tool{Name: "lookup"},
				Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
					runs++
					return "ok", nil
				},
			}); err != nil {
				t.Fatal(err)
			}
			g, err := reg.Bind(warden.Config{Checkers: []warden.Checker{tt.c}, CheckTimeout: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			out, err := g.Call(context.Background(), warden.Call{ID: "1", Tool: "lookup"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Executed || runs != 0 || out.Status != warden.StatusRefused {
				t.Fatalf("status %s executed %v, want refused", out.Status, out.Executed)
			}
			if out.Decision.RuleID != tt.rule || !out.Decision.Fault {
				t.Errorf("decision %+v, want a fault by %s", out.Decision, tt.rule)
			}
			if out.ModelText != warden.UnauthorizedText("lookup") && tt.rule == "checker.fault" {
				t.Errorf("model reads %q", out.ModelText)
			}
			if lc, ok := tt.c.(*lateChecker); ok && !lc.sawDeadline {
				t.Errorf("the checker's context had no deadline")
			}
		})
	}
}
