package audit_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store"
)

// observed collects what Options.Observe is told, as "op:error" strings ("op:ok" for
// a durable write), in the order told.
type observed struct {
	mu  sync.Mutex
	ops []string
	neg bool // a negative duration was observed
}

func (o *observed) observe(op string, d time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	res := "ok"
	if err != nil {
		res = err.Error()
	}
	o.ops = append(o.ops, op+":"+res)
	if d < 0 {
		o.neg = true
	}
}

func (o *observed) got() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ops)
}

func (o *observed) check(t *testing.T, want []string) {
	t.Helper()
	if got := o.got(); !slices.Equal(got, want) {
		t.Errorf("observed writes:\n  %q\nwant:\n  %q", got, want)
	}
	if o.neg {
		t.Errorf("a negative duration was observed")
	}
}

// TestObserveWaited: a journal that waits for its writes tells Observe of each of
// them, an intent and its completion for a call that ran and one record for a call
// that did not.
func TestObserveWaited(t *testing.T) {
	forEachStore(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		var obs observed
		j := audit.NewJournal(s, &audit.Options{Observe: obs.observe})
		var runs atomicCounter
		g := newGuard(t, j, countingTool("ping", &runs))
		ctx := context.Background()
		if o, err := g.Call(ctx, warden.Call{ID: "ran", Tool: "ping"}); err != nil || o.Status != warden.StatusRan {
			t.Fatalf("call: %s %v", o.Status, err)
		}
		if o, _ := g.Call(ctx, warden.Call{ID: "unknown", Tool: "nope"}); o.Status != warden.StatusRefused {
			t.Fatalf("call of an unknown tool: %s", o.Status)
		}
		obs.check(t, []string{"begin:ok", "end:ok", "record:ok"})
	})
}

// TestObserveDeferred: a deferred entry is observed when the store answers it, once
// per attempt: a failed commit and the retry that made it durable are two
// observations, the second a success.
func TestObserveDeferred(t *testing.T) {
	s := openStore(t, sqliteDSN(t))
	f := &flakyLater{Store: s, failBefore: 2}
	var obs observed
	j := audit.NewJournal(f, &audit.Options{Deferred: true, Observe: obs.observe})
	var runs atomicCounter
	g := newGuard(t, j, countingTool("ping", &runs))
	ctx := context.Background()
	if o, err := g.Call(ctx, warden.Call{ID: "c1", Tool: "ping"}); err != nil || o.Status != warden.StatusRan {
		t.Fatalf("call: %s %v", o.Status, err)
	}
	flushWithin(t, j, 30*time.Second)
	obs.check(t, []string{"begin:ok", "end:" + errFlaky.Error(), "end:" + errFlaky.Error(), "end:ok"})

	// An ambiguous commit (durable, reported failed) is a failure, then a success: the
	// retry finds the completion already there.
	s2 := openStore(t, sqliteDSN(t))
	var obs2 observed
	j2 := audit.NewJournal(&flakyLater{Store: s2, failAfter: 1}, &audit.Options{Deferred: true, Observe: obs2.observe})
	g2 := newGuard(t, j2, countingTool("ping", &runs))
	if o, err := g2.Call(ctx, warden.Call{ID: "c2", Tool: "ping"}); err != nil || o.Status != warden.StatusRan {
		t.Fatalf("call: %s %v", o.Status, err)
	}
	flushWithin(t, j2, 30*time.Second)
	_ = s2.Flush(ctx) // the failure the store delivered, handled by the journal already
	obs2.check(t, []string{"begin:ok", "end:" + errFlaky.Error(), "end:ok"})
}

// TestObserveClosedStore: writes a closed store will not take are observed with its
// error, deferred or not.
func TestObserveClosedStore(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, sqliteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, deferred := range []bool{false, true} {
		t.Run(fmt.Sprintf("deferred=%t", deferred), func(t *testing.T) {
			var obs observed
			j := audit.NewJournal(s, &audit.Options{Deferred: deferred, Observe: obs.observe})
			var runs atomicCounter
			g := newGuard(t, j, countingTool("ping", &runs))
			o, _ := g.Call(ctx, warden.Call{ID: "c1", Tool: "ping"})
			if o.Status != warden.StatusRefused || o.RuleID != "journal" || runs.get() != 0 {
				t.Fatalf("a call on a closed store: %s rule %q, %d runs; want refused by the journal, not run", o.Status, o.RuleID, runs.get())
			}
			want := []string{"begin:" + store.ErrClosed.Error(), "record:" + store.ErrClosed.Error()}
			obs.check(t, want)
		})
	}
}
