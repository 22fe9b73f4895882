package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// RunReplicas runs the cases in which two stores (as two replicas would) share one
// database. newDSN must return the DSN of a new, empty database each time; open opens
// each replica's store on it (both replicas read one clock, as replicas whose clocks are
// in sync do).
func RunReplicas(t *testing.T, newDSN func(t *testing.T) string, open Opener) {
	t.Run("Replicas/Audit", func(t *testing.T) {
		dsn := newDSN(t)
		clk := &clock{}
		a, b := open(t, dsn, clk.Now), open(t, dsn, clk.Now)
		const workers, perWorker = 8, 100
		ctx := ctxFor(t)
		var wg sync.WaitGroup
		for w := range workers {
			s := a
			if w%2 == 1 {
				s = b
			}
			wg.Go(func() {
				for i := range perWorker {
					ref, err := s.BeginCall(ctx, store.CallRecord{CallID: fmt.Sprintf("w%d-%d", w, i), Tool: "t", Executed: true})
					if err == nil {
						err = s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan})
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, s := range []store.Store{a, b} {
			recs := query(t, s, store.CallFilter{})
			if len(recs) != workers*perWorker {
				t.Fatalf("%d records, want %d", len(recs), workers*perWorker)
			}
			mustVerifyOK(t, s, 2*workers*perWorker)
		}
	})

	t.Run("Replicas/Deferred", func(t *testing.T) {
		// Deferred completions of two replicas interleave with each other's intents:
		// the chain stays linear and every completion commits once.
		dsn := newDSN(t)
		clk := &clock{}
		a, b := open(t, dsn, clk.Now), open(t, dsn, clk.Now)
		const workers, perWorker = 8, 100
		ctx := ctxFor(t)
		out := newOutcomes()
		var wg sync.WaitGroup
		for w := range workers {
			s := a
			if w%2 == 1 {
				s = b
			}
			wg.Go(func() {
				for i := range perWorker {
					name := fmt.Sprintf("w%d-%d", w, i)
					ref, err := s.BeginCall(ctx, store.CallRecord{CallID: name, Tool: "t", Executed: true})
					if err == nil {
						err = s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan}, out.done(name))
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		check(t, a.Flush(ctx))
		check(t, b.Flush(ctx))
		for w := range workers {
			for i := range perWorker {
				out.want(t, fmt.Sprintf("w%d-%d", w, i), nil)
			}
		}
		for _, s := range []store.Store{a, b} {
			recs := query(t, s, store.CallFilter{Status: warden.StatusRan})
			if len(recs) != workers*perWorker {
				t.Fatalf("%d completed records, want %d", len(recs), workers*perWorker)
			}
			mustVerifyOK(t, s, 2*workers*perWorker)
		}
	})

	t.Run("Replicas/WaitWakesOnOtherReplica", func(t *testing.T) {
		dsn := newDSN(t)
		clk := &clock{}
		a, b := open(t, dsn, clk.Now), open(t, dsn, clk.Now)
		p := newPending(t, a, samplePending())
		lag := waitWhile(t, a, clk, p.ID, func() { approve(t, b, p.ID, store.Verdict{By: "replica-b"}) }, "replica-b")
		if lag > 1500*time.Millisecond {
			t.Errorf("the waiter woke %v after the other replica decided, want within about a second", lag)
		}
	})

	t.Run("Replicas/ConsumeOnce", func(t *testing.T) {
		dsn := newDSN(t)
		clk := &clock{}
		a, b := open(t, dsn, clk.Now), open(t, dsn, clk.Now)
		p := newPending(t, a, samplePending())
		approve(t, b, p.ID, store.Verdict{By: "bob"})
		ctx := ctxFor(t)
		wins := race(8, func(i int) bool {
			_, ok, err := []store.Store{a, b}[i%2].ConsumeApproval(ctx, p.Digest, "")
			if err != nil {
				t.Error(err)
			}
			return ok
		})
		if wins != 1 {
			t.Errorf("%d consumers in two replicas got the once approval, want exactly 1", wins)
		}
	})

	t.Run("Replicas/ClaimCheckpointOnce", func(t *testing.T) {
		dsn := newDSN(t)
		clk := &clock{}
		a, b := open(t, dsn, clk.Now), open(t, dsn, clk.Now)
		ctx := ctxFor(t)
		for round := range 20 {
			id := fmt.Sprintf("ckpt-%d", round)
			if err := a.PutCheckpoint(ctx, id, []byte("checkpoint")); err != nil {
				t.Fatal(err)
			}
			wins := race(8, func(i int) bool {
				_, err := []store.Store{a, b}[i%2].ClaimCheckpoint(ctx, id, []byte("claim"))
				if err != nil && !errors.Is(err, store.ErrAlreadyClaimed) {
					t.Error(err)
				}
				return err == nil
			})
			if wins != 1 {
				t.Fatalf("round %d: %d claimers in two replicas claimed the checkpoint, want exactly 1", round, wins)
			}
		}
	})
}

// waitWhile waits for decision id on s (whose clock is clk) while decide runs, checks
// who decided, and returns how long after decide returned the waiter woke.
func waitWhile(t *testing.T, s store.Store, clk *clock, id string, decide func(), by string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	type result struct {
		p   store.Pending
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	read := clk.nextRead()
	go func() {
		p, err := s.WaitDecision(ctx, id)
		done <- result{p, err, time.Now()}
	}()
	// The waiter reads the clock once it has read the decision: from then on it waits,
	// and the decision must wake it.
	awaitRead(t, read, "WaitDecision")
	decide()
	decided := time.Now()
	r := <-done
	if r.err != nil {
		t.Fatalf("WaitDecision: %v", r.err)
	}
	if r.p.State != store.StateApproved || r.p.DecidedBy != by {
		t.Fatalf("WaitDecision returned %+v, want approved by %s", r.p, by)
	}
	return max(0, r.at.Sub(decided))
}
