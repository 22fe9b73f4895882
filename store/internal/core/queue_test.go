package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/store"
)

// recorder is a Queue's commit: it records each batch (its live ops' args) and when it
// ran, and answers each op with fail[arg] (nil when absent). When hold is set, each
// commit first waits for a value (or its close).
type recorder struct {
	mu      sync.Mutex
	batches [][]string
	at      []time.Time
	fail    map[string]error // read-only once the queue runs
	hold    chan struct{}
}

func (r *recorder) commit(batch []*Op[string]) {
	if r.hold != nil {
		<-r.hold
	}
	live := Live(batch)
	var names []string
	for _, o := range live {
		names = append(names, o.Arg)
	}
	r.mu.Lock()
	r.batches = append(r.batches, names)
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	for _, o := range live {
		o.Answer(r.fail[o.Arg])
	}
}

func (r *recorder) got() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for _, b := range r.batches {
		parts = append(parts, "["+strings.Join(b, " ")+"]")
	}
	return strings.Join(parts, "")
}

// results collects what the callbacks of deferred ops receive.
type results struct {
	mu  sync.Mutex
	got map[string][]error
}

func (r *results) then(name string) func(error) {
	return func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.got == nil {
			r.got = map[string][]error{}
		}
		r.got[name] = append(r.got[name], err)
	}
}

// want checks that name's callback was called exactly once, with an error matching
// want (nil: no error).
func (r *results) want(t *testing.T, name string, want error) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.got[name]
	if len(errs) != 1 {
		t.Fatalf("%s: callback called %d times (%v), want once", name, len(errs), errs)
	}
	if (want == nil) != (errs[0] == nil) || !errors.Is(errs[0], want) {
		t.Fatalf("%s: callback got %v, want %v", name, errs[0], want)
	}
}

func later(t *testing.T, q *Queue[string], r *results, name string) {
	t.Helper()
	if err := q.Later(context.Background(), name, true, r.then(name)); err != nil {
		t.Fatalf("Later(%s): %v", name, err)
	}
}

// A deferred op alone waits exactly the delay for company, then commits alone.
func TestDeferredAloneCommitsAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		q := StartQueue(QueueOptions{MaxBatch: 8, Delay: 2 * time.Millisecond}, rec.commit)
		defer q.Close()
		var res results
		start := time.Now()
		later(t, q, &res, "c1")
		synctest.Wait()
		if got := rec.got(); got != "" {
			t.Fatalf("committed %s before the delay", got)
		}
		time.Sleep(2*time.Millisecond - time.Nanosecond) // the bubble's clock: no real wait
		synctest.Wait()
		if got := rec.got(); got != "" {
			t.Fatalf("committed %s before the delay", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := rec.got(); got != "[c1]" {
			t.Fatalf("batches %s, want [c1]", got)
		}
		if took := rec.at[0].Sub(start); took != 2*time.Millisecond {
			t.Errorf("committed after %v, want the delay, 2ms", took)
		}
		res.want(t, "c1", nil)
	})
}

// A write somebody waits for ends the wait at once and shares the deferred ops' commit.
func TestDeferredJoinsNextWaitedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		q := StartQueue(QueueOptions{MaxBatch: 8, Delay: time.Hour}, rec.commit)
		defer q.Close()
		var res results
		start := time.Now()
		later(t, q, &res, "end1")
		later(t, q, &res, "end2")
		synctest.Wait()
		if err := q.Do(context.Background(), "begin3"); err != nil {
			t.Fatal(err)
		}
		if got := rec.got(); got != "[end1 end2 begin3]" {
			t.Fatalf("batches %s, want one: [end1 end2 begin3]", got)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("the waited write took %v, want no delay", took)
		}
		res.want(t, "end1", nil)
		res.want(t, "end2", nil)
	})
}

// A full batch of deferred ops commits without waiting for the delay.
func TestDeferredFullBatchCommitsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		q := StartQueue(QueueOptions{MaxBatch: 3, Delay: time.Hour}, rec.commit)
		defer q.Close()
		var res results
		start := time.Now()
		for i := range 3 {
			later(t, q, &res, fmt.Sprint("e", i))
		}
		synctest.Wait()
		if got := rec.got(); got != "[e0 e1 e2]" {
			t.Fatalf("batches %s, want [e0 e1 e2]", got)
		}
		if took := rec.at[0].Sub(start); took != 0 {
			t.Errorf("a full batch waited %v", took)
		}
	})
}

// A write somebody waits for never waits for the delay, alone or behind others.
func TestWaitedWriteNeverDelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		q := StartQueue(QueueOptions{MaxBatch: 8, Delay: time.Hour}, rec.commit)
		defer q.Close()
		start := time.Now()
		for i := range 3 {
			if err := q.Do(context.Background(), fmt.Sprint("w", i)); err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("waited writes took %v", took)
		}
		if got := rec.got(); got != "[w0][w1][w2]" {
			t.Errorf("batches %s", got)
		}
	})
}

// A deferred op does not depend on the context it was queued with.
func TestDeferredSurvivesCanceledContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		q := StartQueue(QueueOptions{MaxBatch: 8, Delay: time.Millisecond}, rec.commit)
		defer q.Close()
		var res results
		ctx, cancel := context.WithCancel(context.Background())
		if err := q.Later(ctx, "e", true, res.then("e")); err != nil {
			t.Fatal(err)
		}
		cancel()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := rec.got(); got != "[e]" {
			t.Fatalf("batches %s, want [e]: a deferred op whose context ended must still commit", got)
		}
		res.want(t, "e", nil)
		if err := q.Later(ctx, "x", true, res.then("x")); !errors.Is(err, context.Canceled) {
			t.Errorf("Later with an ended context: %v, want context.Canceled (and nothing queued)", err)
		}
	})
}

func TestFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		rec := &recorder{fail: map[string]error{"bad": boom, "bad2": boom}}
		q := StartQueue(QueueOptions{MaxBatch: 8, Delay: time.Hour}, rec.commit)
		defer q.Close()
		ctx := context.Background()
		if err := q.Flush(ctx); err != nil {
			t.Fatalf("Flush of an empty queue: %v", err)
		}
		if got := rec.got(); got != "" {
			t.Fatalf("Flush of an empty queue committed %s", got)
		}

		var res results
		start := time.Now()
		later(t, q, &res, "ok1")
		later(t, q, &res, "bad")
		later(t, q, &res, "bad2")
		if err := q.Barrier(ctx); err != nil {
			t.Fatalf("Barrier: %v (it reports no failure)", err)
		}
		if got := rec.got(); got != "[ok1 bad bad2]" {
			t.Fatalf("after Barrier: batches %s, want [ok1 bad bad2]", got)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Barrier waited %v for the delay", took)
		}
		res.want(t, "bad", boom)
		err := q.Flush(ctx)
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "2 deferred audit writes failed") {
			t.Fatalf("Flush after two failures: %v, want them counted, wrapping boom", err)
		}
		if err := q.Flush(ctx); err != nil {
			t.Fatalf("second Flush: %v, want nil (each failure is reported once)", err)
		}

		// A flush ends the batch before it: what is queued after it commits later.
		later(t, q, &res, "a")
		flushed := make(chan error, 1)
		go func() { flushed <- q.Flush(ctx) }()
		synctest.Wait()
		later(t, q, &res, "b") // queued after the flush
		if err := <-flushed; err != nil {
			t.Fatal(err)
		}
		if got := rec.got(); !strings.HasSuffix(got, "[a]") {
			t.Fatalf("batches %s, want [a] committed by the flush", got)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := rec.got(); !strings.HasSuffix(got, "[a][b]") {
			t.Fatalf("batches %s, want [b] after the delay", got)
		}
	})
}

// Later blocks while the queue is full, returns ctx.Err() when ctx ends first, and
// store.ErrClosed after Close; Close commits every queued op and calls its callback.
func TestBackpressureAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{hold: make(chan struct{})}
		q := StartQueue(QueueOptions{MaxBatch: 1, Delay: time.Hour}, rec.commit)
		var res results
		// One op in the held commit, four in the queue (4*MaxBatch): the queue is full.
		for i := range 5 {
			later(t, q, &res, fmt.Sprint("e", i))
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if err := q.Later(ctx, "over", true, res.then("over")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Later on a full queue: %v, want to block until ctx ends", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Later on a full queue returned after %v, want when ctx ended (1s)", took)
		}
		close(rec.hold)
		if _, err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if got := rec.got(); got != "[e0][e1][e2][e3][e4]" {
			t.Fatalf("batches %s, want all five committed by Close", got)
		}
		for i := range 5 {
			res.want(t, fmt.Sprint("e", i), nil)
		}
		if len(res.got["over"]) != 0 {
			t.Errorf("the op Later refused was answered: %v", res.got["over"])
		}
		if err := q.Later(context.Background(), "late", true, nil); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Later after Close: %v, want store.ErrClosed", err)
		}
		if err := q.Flush(context.Background()); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Flush after Close: %v, want store.ErrClosed", err)
		}
	})
}

// Close commits deferred ops at once (without the delay) and reports their failures.
func TestCloseCommitsDeferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		rec := &recorder{fail: map[string]error{"bad": boom}}
		q := StartQueue(QueueOptions{MaxBatch: 8, Delay: time.Hour}, rec.commit)
		var res results
		start := time.Now()
		later(t, q, &res, "a")
		later(t, q, &res, "bad")
		synctest.Wait()
		first, err := q.Close()
		if !first || !errors.Is(err, boom) {
			t.Fatalf("Close = %v, %v; want the first close, reporting boom", first, err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Close waited %v for the delay", took)
		}
		if got := rec.got(); got != "[a bad]" {
			t.Errorf("batches %s, want [a bad]", got)
		}
		res.want(t, "a", nil)
		res.want(t, "bad", boom)
		if first, err := q.Close(); first || err != nil {
			t.Errorf("second Close = %v, %v", first, err)
		}
	})
}

// AuditErr is the last audit write's failure, verdicts and non-audit writes aside.
func TestAuditErr(t *testing.T) {
	boom := errors.New("disk full")
	rec := &recorder{fail: map[string]error{
		"full": boom, "unknown": fmt.Errorf("%w: entry 9", store.ErrNotFound), "other": errors.New("pin refused"),
	}}
	q := StartQueue(QueueOptions{MaxBatch: 8}, rec.commit)
	defer q.Close()
	ctx := context.Background()
	steps := []struct {
		arg   string
		audit bool
		want  error
	}{
		{"ok", true, nil},
		{"full", true, boom},
		{"unknown", true, boom}, // a verdict says nothing of the database
		{"other", false, boom},  // nor does a write outside the audit log
		{"ok", false, boom},     // nor its success
		{"ok", true, nil},
	}
	for i, s := range steps {
		q.DoAudit(ctx, s.arg, s.audit)
		if got := q.AuditErr(); !errors.Is(got, s.want) || (s.want == nil) != (got == nil) {
			t.Fatalf("step %d (%s): AuditErr = %v, want %v", i, s.arg, got, s.want)
		}
	}
	// A deferred audit write counts as well.
	done := make(chan error, 1)
	if err := q.Later(ctx, "full", true, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	<-done
	if got := q.AuditErr(); !errors.Is(got, boom) {
		t.Errorf("after a failed deferred write: AuditErr = %v", got)
	}
	if err := q.Flush(ctx); !errors.Is(err, boom) {
		t.Errorf("Flush: %v, want boom", err)
	}
}

// Live never answers a deferred op, whose context never ends, and answers a waited op
// whose caller gave up with that caller's error.
func TestLive(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	gaveUp := &Op[string]{Ctx: canceled, Arg: "gave-up", Done: make(chan error, 1)}
	var deferredErr []error
	deferred := &Op[string]{Ctx: context.WithoutCancel(canceled), Arg: "deferred", deferred: true,
		then: func(err error) { deferredErr = append(deferredErr, err) }}
	live := Live([]*Op[string]{gaveUp, deferred})
	if len(live) != 1 || live[0] != deferred {
		t.Fatalf("Live kept %d ops, want the deferred one", len(live))
	}
	if err := <-gaveUp.Done; !errors.Is(err, context.Canceled) {
		t.Errorf("the op whose caller gave up got %v", err)
	}
	Answer(live, nil, nil)
	if !slices.Equal(deferredErr, []error{nil}) {
		t.Errorf("deferred op's callback got %v, want one nil", deferredErr)
	}
}
