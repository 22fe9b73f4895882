package warden_test

import (
	"context"
	"testing"

	"github.com/wardenhq/warden"
)

// TestAlloc_GuardCall is the allocation budget of the common path, so that it cannot
// regress silently: an allowed call through a role policy and a rule policy, two
// pass-through middleware links and an event sink (the BenchmarkPipeline setup) costs
// one allocation (the outcome's check and ledger backing), with flat or nested
// arguments, and with result-side links that keep the result.
func TestAlloc_GuardCall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	keep := &warden.Middleware{Name: "keep", OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome { return warden.KeepResult() }}
	tests := []struct {
		name   string
		inline bool
		args   warden.Args
		extra  []*warden.Middleware
		budget float64
	}{
		{"flat arguments", false, A(`{"action":"get","id":"42"}`), nil, 1},
		{"flat arguments, synchronous checkers", true, A(`{"action":"get","id":"42"}`), nil, 1},
		{"nested arrays and objects", true, A(`{"action":"get","id":"42","tags":["a",["b",{"c":[1,2]}]],"filter":{"in":["x","y"]}}`), nil, 1},
		{"result-side link keeps the result", true, A(`{"action":"get","id":"42"}`), []*warden.Middleware{keep}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := benchGuardWith(t, false, warden.SinkFunc(func(context.Context, warden.Event) {}), tt.inline, tt.extra...)
			ctx := context.Background()
			c := warden.Call{ID: "alloc", Tool: "lookup", Args: tt.args}
			if out, err := g.Call(ctx, c); err != nil || out.Status != warden.StatusRan {
				t.Fatalf("the call does not run: %+v %v", viewOf(out), err)
			}
			got := testing.AllocsPerRun(500, func() {
				if out, err := g.Call(ctx, c); err != nil || !out.Executed {
					panic("not executed")
				}
			})
			if got > tt.budget {
				t.Errorf("Guard.Call: %.1f allocs per call, budget %.0f", got, tt.budget)
			}
		})
	}
}
