package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wardenhq/warden/store"
)

// Waiters wakes the goroutines of this process that wait for a decision. The zero value
// is ready to use and safe for concurrent use.
type Waiters struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{} // guarded by mu
}

// Add registers interest in decision id. The channel receives (at most one buffered
// value) when [Waiters.Notify] is called for id; remove must be called when done.
func (w *Waiters) Add(id string) (wake <-chan struct{}, remove func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[string]map[chan struct{}]struct{})
	}
	if w.m[id] == nil {
		w.m[id] = make(map[chan struct{}]struct{})
	}
	w.m[id][ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.m[id], ch)
		if len(w.m[id]) == 0 {
			delete(w.m, id)
		}
		w.mu.Unlock()
	}
}

// Notify wakes every waiter of id. It never blocks.
func (w *Waiters) Notify(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.m[id] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// NotifyAll wakes every waiter, for when notifications may have been missed (a
// listener that reconnected).
func (w *Waiters) NotifyAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, chans := range w.m {
		for ch := range chans {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// WaitOptions tunes [Wait]'s polling: the first re-read after Min, then doubling up to
// Max. A wake-up re-reads at once and restarts at Min.
type WaitOptions struct {
	Min, Max time.Duration
	Now      func() time.Time
}

// Wait re-reads decision id with get until it is decided, and returns it. It returns
// store.ErrExpired when the decision expires first, ctx.Err() when ctx ends, and get's
// errors (including store.ErrNotFound) as they are. wake is an early wake-up (from
// Waiters or a database notification); it must have been registered before Wait is
// called so no notification falls between the first read and the first sleep.
func Wait(ctx context.Context, id string, get func(context.Context, string) (store.Pending, error), wake <-chan struct{}, o WaitOptions) (store.Pending, error) {
	delay := o.Min
	for {
		p, err := get(ctx, id)
		if err != nil {
			return store.Pending{}, err
		}
		now := o.Now()
		switch p.State {
		case store.StateApproved, store.StateDeclined:
			return p, nil
		case store.StateExpired:
			return store.Pending{}, fmt.Errorf("%w: %s expired at %s", store.ErrExpired, id, p.Expires.Format(time.RFC3339))
		}
		sleep := delay
		if !p.Expires.IsZero() {
			if left := p.Expires.Sub(now); left < sleep {
				sleep = max(left, time.Millisecond)
			}
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return store.Pending{}, ctx.Err()
		case <-wake:
			t.Stop()
			delay = o.Min
		case <-t.C:
			delay = min(delay*2, o.Max)
		}
	}
}
