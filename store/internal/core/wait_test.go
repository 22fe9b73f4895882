package core

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/store"
)

// pendingAt is a decision source for Wait: get reads the decision as a store would at
// the bubble's time, and records when it was read.
type pendingAt struct {
	mu     sync.Mutex
	p      store.Pending
	reads  []time.Time
	onRead func(n int, p *store.Pending) // called under mu with the number of the read
}

func (s *pendingAt) get(_ context.Context, id string) (store.Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.p.ID {
		return store.Pending{}, store.ErrNotFound
	}
	s.reads = append(s.reads, time.Now())
	if s.onRead != nil {
		s.onRead(len(s.reads), &s.p)
	}
	return View(s.p, time.Now()), nil
}

func (s *pendingAt) set(f func(*store.Pending)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.p)
}

func (s *pendingAt) readTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.reads...)
}

var waitOpts = WaitOptions{Min: 50 * time.Millisecond, Max: time.Second, Now: time.Now}

// TestWaitPollsWithBackoff: without wake-ups Wait re-reads after Min, doubling up to Max.
func TestWaitPollsWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &pendingAt{p: store.Pending{ID: "apv_1", State: store.StatePending}}
		src.onRead = func(n int, p *store.Pending) {
			if n == 8 {
				p.State = store.StateApproved // decided just before the eighth read
			}
		}
		if _, err := Wait(t.Context(), "apv_1", src.get, nil, waitOpts); err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond, 350 * time.Millisecond,
			750 * time.Millisecond, 1550 * time.Millisecond, 2550 * time.Millisecond, 3550 * time.Millisecond}
		got := src.readTimes()
		if len(got) != len(want) {
			t.Fatalf("%d reads, want %d", len(got), len(want))
		}
		for i, at := range got {
			if d := at.Sub(start); d != want[i] {
				t.Errorf("read %d at +%v, want +%v", i, d, want[i])
			}
		}
	})
}

// TestWaitWakeRereadsAtOnce: a wake-up re-reads immediately and restarts the backoff.
func TestWaitWakeRereadsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &pendingAt{p: store.Pending{ID: "apv_1", State: store.StatePending}}
		wake := make(chan struct{}, 1)
		done := make(chan store.Pending, 1)
		go func() {
			p, err := Wait(t.Context(), "apv_1", src.get, wake, WaitOptions{Min: time.Second, Max: time.Second, Now: time.Now})
			if err != nil {
				t.Error(err)
			}
			done <- p
		}()
		synctest.Wait() // the waiter has read once and sleeps until +1s
		src.set(func(p *store.Pending) { p.State = store.StateApproved; p.DecidedBy = "bob" })
		wake <- struct{}{}
		p := <-done
		if p.DecidedBy != "bob" {
			t.Errorf("Wait returned %+v", p)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Wait returned %v after the start, want at the wake-up (no time passed)", took)
		}
		if n := len(src.readTimes()); n != 2 {
			t.Errorf("%d reads, want 2 (the first, and the one the wake-up caused)", n)
		}
	})
}

// TestWaitContext: the context ending ends the wait at once.
func TestWaitContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &pendingAt{p: store.Pending{ID: "apv_1", State: store.StatePending}}
		ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := Wait(ctx, "apv_1", src.get, nil, waitOpts)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait: %v, want DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 700*time.Millisecond {
			t.Errorf("Wait ended %v after the start, want at the deadline (700ms)", took)
		}
	})
}
