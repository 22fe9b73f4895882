package warden_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
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

// quickChecker is Synchronous and Interruptible and answers allow at once.
type quickChecker struct{}

func (quickChecker) Check(context.Context, warden.Request) (warden.Decision, error) {
	return warden.Decision{Effect: warden.Allow, RuleID: "quick"}, nil
}
func (quickChecker) Governs(warden.Capability) bool { return false }
func (quickChecker) Synchronous() bool              { return true }
func (quickChecker) Interruptible() bool            { return true }

func TestInterruptibleCheckerRunsUnderDeadline(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    warden.Checker
		rule string
	}{
		{"late allow is a fault", &lateChecker{}, "checker.fault"},
		{"own fault stands", faultChecker{}, "cond"},
		{"an answer in time counts", quickChecker{}, "quick"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// In a synctest bubble the deadline is exact, not raced against the wall clock.
			synctest.Test(t, func(t *testing.T) {
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
				var mu sync.Mutex
				var checks []warden.Event
				sink := warden.SinkFunc(func(_ context.Context, e warden.Event) {
					if e.Name == warden.EventPermissionCheck {
						mu.Lock()
						checks = append(checks, e)
						mu.Unlock()
					}
				})
				g, err := reg.Bind(warden.Config{Checkers: []warden.Checker{tt.c}, CheckTimeout: 10 * time.Millisecond, Sinks: []warden.Sink{sink}})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				out, err := g.Call(context.Background(), warden.Call{ID: "1", Tool: "lookup"})
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); tt.rule != "quick" && d != 10*time.Millisecond {
					t.Errorf("the call took %v; a checker past its deadline is abandoned at CheckTimeout (10ms)", d)
				}
				// One check, one record, one event, and it is the answer that counted:
				// a late answer is never recorded or announced.
				mu.Lock()
				defer mu.Unlock()
				if len(out.Checks) != 1 || out.Checks[0].Decision.RuleID != tt.rule {
					t.Errorf("checks %+v, want one by %s", out.Checks, tt.rule)
				}
				if len(checks) != 1 || checks[0].RuleID != tt.rule {
					t.Errorf("permission events %+v, want one by %s", checks, tt.rule)
				}
				if tt.rule == "quick" {
					if !out.Executed || runs != 1 {
						t.Errorf("an answer in time: status %s executed %v", out.Status, out.Executed)
					}
					return
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
		})
	}
}
