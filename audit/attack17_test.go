package audit_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// downLater is a store whose deferred records fail (as a full disk or a database that
// is down would, quickly) while down is set, and pass through otherwise.
type downLater struct {
	store.Store
	down atomic.Bool
}

func (d *downLater) RecordCallLater(ctx context.Context, r store.CallRecord, done func(error)) error {
	if d.down.Load() {
		go done(errFlaky) // as the store's goroutine would
		return nil
	}
	return d.Store.RecordCallLater(ctx, r, done)
}

// TestDeferredBacklogBounded: while every deferred write fails, the entries being
// retried are bounded: once that many wait, Record waits too (and gives up with its
// ctx), instead of the journal holding and retrying one more entry per call without
// end. Once the store is back, every entry taken is durable and nothing was dropped.
func TestDeferredBacklogBounded(t *testing.T) {
	s := openStore(t, sqliteDSN(t))
	d := &downLater{Store: s}
	d.down.Store(true)
	var lb logBuffer
	j := deferredJournal(d, &lb)
	const tries = 20000
	taken := 0
	var blocked error
	for i := range tries {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := j.Record(ctx, warden.Call{ID: fmt.Sprint("r", i), Tool: "t"}, warden.Outcome{Tool: "t", Status: warden.StatusRefused})
		cancel()
		if err != nil {
			blocked = err
			break
		}
		taken++
	}
	if blocked == nil {
		t.Fatalf("%d deferred entries taken while every commit fails: the retry backlog has no bound", taken)
	}
	if !errors.Is(blocked, context.DeadlineExceeded) {
		t.Fatalf("Record with the backlog full: %v, want it to wait until its ctx ends", blocked)
	}
	d.down.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := j.Flush(ctx); err != nil {
		t.Fatalf("Flush once the store is back: %v", err)
	}
	calls, err := s.QueryCalls(ctx, store.CallFilter{})
	if err != nil || len(calls) != taken {
		t.Fatalf("%d calls recorded (%v), want the %d entries taken", len(calls), err, taken)
	}
}
