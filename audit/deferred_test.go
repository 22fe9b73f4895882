package audit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store"
)

// flakyLater is a store whose deferred writes fail as told: the first failBefore
// attempts fail without reaching the store; the first failAfter attempts that reach
// it are committed but reported failed (an ambiguous commit).
type flakyLater struct {
	store.Store
	mu                    sync.Mutex
	failBefore, failAfter int
	attempts              int
}

var errFlaky = errors.New("disk hiccup")

func (f *flakyLater) EndCallLater(ctx context.Context, ref store.CallRef, c store.Completion, done func(error)) error {
	f.mu.Lock()
	f.attempts++
	before, after := f.failBefore > 0, f.failBefore == 0 && f.failAfter > 0
	if before {
		f.failBefore--
	} else if after {
		f.failAfter--
	}
	f.mu.Unlock()
	if before {
		go done(errFlaky) // as the store's goroutine would
		return nil
	}
	if after {
		return f.Store.EndCallLater(ctx, ref, c, func(err error) {
			if err != nil {
				panic("the inner commit failed: " + err.Error())
			}
			done(errFlaky)
		})
	}
	return f.Store.EndCallLater(ctx, ref, c, done)
}

func (f *flakyLater) tries() int { f.mu.Lock(); defer f.mu.Unlock(); return f.attempts }

// logBuffer collects a journal's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func deferredJournal(s store.Store, lb *logBuffer) *audit.Journal {
	return audit.NewJournal(s, &audit.Options{Deferred: true, Logger: slog.New(slog.NewTextHandler(lb, nil))})
}

func flushWithin(t *testing.T, j *audit.Journal, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := j.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// TestDeferredCompletion: with Deferred, End and Record return before their commit;
// after Flush the completion and the record are in the log, the chain verifies.
func TestDeferredCompletion(t *testing.T) {
	forEachStore(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		var lb logBuffer
		j := deferredJournal(s, &lb)
		var runs atomicCounter
		g := newGuard(t, j, countingTool("ping", &runs))
		ctx := context.Background()
		if o, err := g.Call(ctx, warden.Call{ID: "ran-1", Tool: "ping", Args: warden.MustParseArgs(`{"n":1}`)}); err != nil || o.Status != warden.StatusRan {
			t.Fatalf("call: %s %v", o.Status, err)
		}
		if o, _ := g.Call(ctx, warden.Call{ID: "unknown-tool", Tool: "nope"}); o.Status != warden.StatusRefused {
			t.Fatalf("call of an unknown tool: %s", o.Status)
		}
		flushWithin(t, j, 30*time.Second)
		calls, err := s.QueryCalls(ctx, store.CallFilter{})
		if err != nil || len(calls) != 2 {
			t.Fatalf("QueryCalls: %+v %v", calls, err)
		}
		if c := calls[0]; c.CallID != "ran-1" || c.Status != warden.StatusRan || c.Unknown || !c.Executed {
			t.Errorf("the call that ran: %+v", c)
		}
		if c := calls[1]; c.CallID != "unknown-tool" || c.Status != warden.StatusRefused {
			t.Errorf("the refused call: %+v", c)
		}
		verifyOK(t, s)
		if lb.String() != "" {
			t.Errorf("nothing failed, yet the journal logged:\n%s", lb.String())
		}
	})
}

// TestDeferredRetried: a deferred completion whose commit fails is retried until it
// is durable, and Flush waits for it; an attempt that committed although it was
// reported failed is recognised on the next attempt (already completed), so the
// call has exactly one completion.
func TestDeferredRetried(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		failBefore, failAfter int
		tries                 int
	}{
		{"failed before the store", 3, 0, 4},
		{"committed but reported failed", 0, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, sqliteDSN(t))
			f := &flakyLater{Store: s, failBefore: tc.failBefore, failAfter: tc.failAfter}
			var lb logBuffer
			j := deferredJournal(f, &lb)
			var runs atomicCounter
			g := newGuard(t, j, countingTool("ping", &runs))
			ctx := context.Background()
			if o, err := g.Call(ctx, warden.Call{ID: "c1", Tool: "ping"}); err != nil || o.Status != warden.StatusRan {
				t.Fatalf("call: %s %v", o.Status, err)
			}
			flushWithin(t, j, 30*time.Second)
			// The store reports the failure it delivered (already handled by the
			// journal's retry) to one Flush, or else to Close.
			_ = s.Flush(ctx)
			if got := f.tries(); got != tc.tries {
				t.Errorf("%d attempts, want %d", got, tc.tries)
			}
			calls, err := s.QueryCalls(ctx, store.CallFilter{})
			if err != nil || len(calls) != 1 || calls[0].Status != warden.StatusRan || calls[0].Unknown {
				t.Fatalf("after the retries: %+v %v; want one call that ran", calls, err)
			}
			rep := verifyOK(t, s)
			if rep.Entries != 2 {
				t.Errorf("%d entries, want 2 (intent, one completion)", rep.Entries)
			}
			log := lb.String()
			if !strings.Contains(log, "retrying") || !strings.Contains(log, "durable after retries") || !strings.Contains(log, errFlaky.Error()) {
				t.Errorf("the journal's log does not tell the story:\n%s", log)
			}
		})
	}
}

// TestDeferredFlushDeadline: a completion that cannot be committed keeps Flush waiting
// until its ctx ends, and Flush says how many entries are not durable; once the store
// is closed the entry is given up (logged) and Flush returns.
func TestDeferredFlushDeadline(t *testing.T) {
	s, err := store.Open(context.Background(), sqliteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	f := &flakyLater{Store: s, failBefore: 1 << 30}
	var lb logBuffer
	j := deferredJournal(f, &lb)
	var runs atomicCounter
	g := newGuard(t, j, countingTool("ping", &runs))
	if o, err := g.Call(context.Background(), warden.Call{ID: "c1", Tool: "ping"}); err != nil || o.Status != warden.StatusRan {
		t.Fatalf("call: %s %v", o.Status, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err = j.Flush(ctx)
	cancel()
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 deferred entry not yet durable") {
		t.Fatalf("Flush of a store that fails every commit: %v", err)
	}
	// Closed: the next attempt reaches a closed store (which refuses at once) and gives up.
	f.mu.Lock()
	f.failBefore = 0
	f.mu.Unlock()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := j.Flush(flushCtx); err == nil || !strings.Contains(err.Error(), "1 deferred entry could not be recorded") {
		t.Errorf("Flush after the store closed: %v, want the given-up entry counted", err)
	}
	if err := j.Flush(flushCtx); err != nil {
		t.Errorf("a second Flush reports the given-up entry again: %v", err)
	}
	if !strings.Contains(lb.String(), "the store closed before a deferred entry was durable") {
		t.Errorf("giving up is not logged:\n%s", lb.String())
	}
}

// TestDeferredRefused: an entry the store refuses (no such intent) is not retried.
func TestDeferredRefused(t *testing.T) {
	s := openStore(t, sqliteDSN(t))
	var lb logBuffer
	j := deferredJournal(s, &lb)
	if err := j.End(context.Background(), 999, warden.Call{}, warden.Outcome{Status: warden.StatusRan}); err != nil {
		t.Fatalf("End of an unknown ref must queue: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := j.Flush(ctx); err == nil || !strings.Contains(err.Error(), "1 deferred entry could not be recorded") {
		t.Errorf("Flush after a refused entry: %v", err)
	}
	_ = s.Flush(ctx) // the refusal, which the journal logged, is reported once more here
	if !strings.Contains(lb.String(), "the store refused a deferred entry") {
		t.Errorf("the refusal is not logged:\n%s", lb.String())
	}
}

// TestDeferredWithShares: Flush of a journal waits for the deferred entries of the
// journals made from it by With.
func TestDeferredWithShares(t *testing.T) {
	s := openStore(t, sqliteDSN(t))
	f := &flakyLater{Store: s, failBefore: 2}
	var lb logBuffer
	base := deferredJournal(f, &lb)
	rev := base.With(&audit.Options{Deferred: true, RedactArgs: true})
	var runs atomicCounter
	g := newGuard(t, rev, countingTool("ping", &runs))
	if o, err := g.Call(context.Background(), warden.Call{ID: "c1", Tool: "ping", Args: warden.MustParseArgs(`{"secret":"x"}`)}); err != nil || o.Status != warden.StatusRan {
		t.Fatalf("call: %s %v", o.Status, err)
	}
	flushWithin(t, base, 30*time.Second)
	calls, err := s.QueryCalls(context.Background(), store.CallFilter{})
	if err != nil || len(calls) != 1 || calls[0].Status != warden.StatusRan || calls[0].Args != nil {
		t.Fatalf("after the base journal's Flush: %+v %v; want the call that ran, arguments redacted", calls, err)
	}
}
