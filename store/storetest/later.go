package storetest

// The cases of deferred audit writes (EndCallLater, RecordCallLater), Flush and
// CheckWrite.

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

// outcomes collects what the done callbacks of deferred writes receive.
type outcomes struct {
	mu  sync.Mutex
	got map[string][]error
	all chan struct{} // receives once per callback
}

func newOutcomes() *outcomes {
	return &outcomes{got: map[string][]error{}, all: make(chan struct{}, 1<<16)}
}

// done returns the callback of the write named name. It never blocks.
func (o *outcomes) done(name string) func(error) {
	return func(err error) {
		o.mu.Lock()
		o.got[name] = append(o.got[name], err)
		o.mu.Unlock()
		o.all <- struct{}{}
	}
}

// await waits until n callbacks have been called. The bound only keeps a broken store
// from hanging the suite.
func (o *outcomes) await(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for range n {
		select {
		case <-o.all:
		case <-deadline:
			t.Fatalf("%s: done was not called within a minute", what)
		}
	}
}

// count is how many times the callback of name was called.
func (o *outcomes) count(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.got[name])
}

// want checks that the callback of name was called exactly once, with an error
// matching want (nil: no error).
func (o *outcomes) want(t *testing.T, name string, want error) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	errs := o.got[name]
	if len(errs) != 1 {
		t.Fatalf("%s: done called %d times (%v), want exactly once", name, len(errs), errs)
	}
	if (want == nil) != (errs[0] == nil) || !errors.Is(errs[0], want) {
		t.Fatalf("%s: done got %v, want %v", name, errs[0], want)
	}
}

func testLaterRoundTrip(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	out := newOutcomes()
	ref, err := s.BeginCall(ctx, store.CallRecord{CallID: "c1", Tool: "shell", Executed: true, Stage: warden.StageExecute})
	check(t, err)
	check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan, ResultSize: 7, Duration: time.Second}, out.done("end")))
	check(t, s.RecordCallLater(ctx, store.CallRecord{CallID: "c2", Tool: "rm", Status: warden.StatusRefused, RuleID: "no-rm"}, out.done("record")))
	check(t, s.Flush(ctx))
	// Flush returned: both are committed, and their done was called (from the store).
	out.want(t, "end", nil)
	out.want(t, "record", nil)
	got := query(t, s, store.CallFilter{})
	if len(got) != 2 {
		t.Fatalf("%d records after Flush, want 2", len(got))
	}
	if r := got[0]; r.Seq != ref.Seq || r.Status != warden.StatusRan || r.Unknown || r.ResultSize != 7 || r.Duration != time.Second {
		t.Errorf("the completed call reads %+v, want ran, 7 bytes, 1s", r)
	}
	if r := got[1]; r.CallID != "c2" || r.Status != warden.StatusRefused || r.RuleID != "no-rm" || r.Seq != ref.Seq+2 {
		t.Errorf("the recorded call reads %+v, want c2 refused by no-rm at seq %d", r, ref.Seq+2)
	}
	mustVerifyOK(t, s, 3)
	if err := s.Flush(ctx); err != nil {
		t.Errorf("Flush with nothing queued: %v", err)
	}
}

// QueryCalls and VerifyAudit see the deferred writes this Store queued, without a
// Flush first.
func testLaterReadYourWrites(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "t", Executed: true})
	check(t, err)
	check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusFailed}, nil))
	if got := query(t, s, store.CallFilter{}); len(got) != 1 || got[0].Status != warden.StatusFailed {
		t.Fatalf("QueryCalls right after EndCallLater: %+v, want the completed call", got)
	}
	check(t, s.RecordCallLater(ctx, store.CallRecord{Tool: "r", Status: warden.StatusHalted}, nil))
	mustVerifyOK(t, s, 3)
}

// The answers EndCall gives reach done; a refused deferred write leaves no hole in the
// chain, and Flush reports it once.
func testLaterErrors(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	out := newOutcomes()
	check(t, s.EndCallLater(ctx, store.CallRef{Seq: 999}, store.Completion{Status: warden.StatusRan}, out.done("unknown")))
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "t", Executed: true})
	check(t, err)
	check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan}, out.done("first")))
	check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusFailed}, out.done("second")))
	check(t, s.RecordCallLater(ctx, store.CallRecord{Tool: "after", Status: warden.StatusRefused}, out.done("after")))
	err = s.Flush(ctx)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Flush after two refused deferred writes: %v, want an error wrapping the first (ErrNotFound)", err)
	}
	out.want(t, "unknown", store.ErrNotFound)
	out.want(t, "first", nil)
	out.want(t, "second", store.ErrAlreadyCompleted)
	out.want(t, "after", nil)
	check(t, s.Flush(ctx)) // reported once
	if got := query(t, s, store.CallFilter{}); len(got) != 2 || got[0].Status != warden.StatusRan {
		t.Errorf("records: %+v, want the call ran (the first completion) and the refusal", got)
	}
	mustVerifyOK(t, s, 3)
	// EndCall on a call completed by EndCallLater is refused as a second completion.
	wantErr(t, "EndCall after EndCallLater", s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan}), store.ErrAlreadyCompleted)
}

// A deferred write that no other write follows is committed on its own, after the
// store's commit delay (milliseconds; the bound here only catches one that never is).
func testLaterAlone(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	out := newOutcomes()
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "t", Executed: true})
	check(t, err)
	check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan}, out.done("end")))
	out.await(t, 1, "a deferred completion followed by no other write")
	out.want(t, "end", nil)
	mustVerifyOK(t, s, 2)
}

// A deferred write does not depend on the context it was queued with.
func testLaterCanceledContext(t *testing.T, s *subject) {
	out := newOutcomes()
	ctx, cancel := context.WithCancel(ctxFor(t))
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "t", Executed: true})
	check(t, err)
	check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan}, out.done("end")))
	check(t, s.RecordCallLater(ctx, store.CallRecord{Tool: "r", Status: warden.StatusRefused}, out.done("record")))
	cancel()
	out.await(t, 2, "deferred writes whose context ended")
	out.want(t, "end", nil)
	out.want(t, "record", nil)
	if got := query(t, s, store.CallFilter{}); len(got) != 2 || got[0].Status != warden.StatusRan {
		t.Errorf("records: %+v, want both writes committed although their context ended", got)
	}
	// A context that ended before the call queues nothing.
	wantErr(t, "EndCallLater with an ended context", s.EndCallLater(ctx, ref, store.Completion{}, out.done("x")), context.Canceled)
	wantErr(t, "RecordCallLater with an ended context", s.RecordCallLater(ctx, store.CallRecord{Tool: "x"}, out.done("x")), context.Canceled)
	check(t, s.Flush(ctxFor(t)))
	if n := out.count("x"); n != 0 {
		t.Errorf("done of a write that was not queued was called %d times", n)
	}
	mustVerifyOK(t, s, 3)
}

// Close commits the deferred writes queued before it and calls their done; after
// Close the new methods return ErrClosed.
func testLaterClose(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	out := newOutcomes()
	const n = 20
	for i := range n {
		ref, err := s.BeginCall(ctx, store.CallRecord{CallID: fmt.Sprint("c", i), Tool: "t", Executed: true})
		check(t, err)
		check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan}, out.done(fmt.Sprint("end", i))))
	}
	check(t, s.RecordCallLater(ctx, store.CallRecord{Tool: "last", Status: warden.StatusRefused}, out.done("last")))
	check(t, s.Close())
	// Close returned: every done has been called.
	for i := range n {
		out.want(t, fmt.Sprint("end", i), nil)
	}
	out.want(t, "last", nil)
	wantErr(t, "EndCallLater after Close", s.EndCallLater(ctx, store.CallRef{Seq: 1}, store.Completion{}, out.done("closed")), store.ErrClosed)
	wantErr(t, "RecordCallLater after Close", s.RecordCallLater(ctx, store.CallRecord{Tool: "x"}, out.done("closed")), store.ErrClosed)
	wantErr(t, "Flush after Close", s.Flush(ctx), store.ErrClosed)
	wantErr(t, "CheckWrite after Close", s.CheckWrite(ctx), store.ErrClosed)
	if out.count("closed") != 0 {
		t.Errorf("done of a write refused after Close was called")
	}
	again := s.open(t, s.dsn, s.clock.Now)
	recs := query(t, again, store.CallFilter{})
	if len(recs) != n+1 {
		t.Fatalf("%d records after reopening, want %d", len(recs), n+1)
	}
	for _, r := range recs[:n] {
		if r.Status != warden.StatusRan || r.Unknown {
			t.Fatalf("call %s reads %s (unknown=%v) after Close: its deferred completion was lost", r.CallID, r.Status, r.Unknown)
		}
	}
	mustVerifyOK(t, again, 2*n+1)
}

// Many goroutines mix BeginCall and EndCallLater; every completion commits, once,
// and the chain verifies.
func testLaterConcurrent(t *testing.T, s *subject) {
	workers, perWorker := 16, 200
	if testing.Short() {
		perWorker = 25
	}
	ctx := ctxFor(t)
	out := newOutcomes()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				name := fmt.Sprintf("w%d-%d", w, i)
				ref, err := s.BeginCall(ctx, store.CallRecord{CallID: name, Tool: "t", Executed: true})
				if err == nil {
					err = s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan, ResultSize: i}, out.done(name))
				}
				if err == nil && i%10 == 9 {
					err = s.RecordCallLater(ctx, store.CallRecord{CallID: name + "-r", Tool: "r", Status: warden.StatusRefused}, out.done(name+"-r"))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check(t, s.Flush(ctx))
	records := perWorker / 10
	total := workers * (perWorker + records)
	out.mu.Lock()
	for name, errs := range out.got {
		if len(errs) != 1 || errs[0] != nil {
			t.Errorf("%s: done got %v, want one nil", name, errs)
		}
	}
	if len(out.got) != total {
		t.Errorf("%d writes answered, want %d", len(out.got), total)
	}
	out.mu.Unlock()
	recs := query(t, s, store.CallFilter{})
	if len(recs) != total {
		t.Fatalf("%d records, want %d", len(recs), total)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.CallID] {
			t.Fatalf("call %s recorded twice", r.CallID)
		}
		seen[r.CallID] = true
		if want := warden.StatusRan; r.Tool == "t" && (r.Status != want || r.Unknown) {
			t.Fatalf("call %s reads %s, want ran", r.CallID, r.Status)
		}
	}
	mustVerifyOK(t, s, int64(workers*(2*perWorker+records)))
}

func testCheckWrite(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	check(t, s.CheckWrite(ctx))
	// The probe is outside the audit log.
	mustVerifyOK(t, s, 0)
	if n := len(query(t, s, store.CallFilter{})); n != 0 {
		t.Errorf("CheckWrite left %d audit records", n)
	}
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "t", Executed: true})
	check(t, err)
	// A verdict about an entry is not a failure of the store.
	wantErr(t, "EndCall of an unknown ref", s.EndCall(ctx, store.CallRef{Seq: 999}, store.Completion{}), store.ErrNotFound)
	check(t, s.CheckWrite(ctx))
	check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan}, nil))
	check(t, s.CheckWrite(ctx)) // commits the deferred completion with the probe
	mustVerifyOK(t, s, 2)
}

// CheckWrite fails while the most recent audit write failed and none has succeeded
// since, although its probe is written.
func (o Options) checkWriteAfterAuditFailure(t *testing.T, s *subject) {
	if o.RefuseAudit == nil {
		t.Skip("no storetest.Options.RefuseAudit: this case needs one")
	}
	ctx := ctxFor(t)
	refuse := func(on bool) {
		t.Helper()
		check(t, o.RefuseAudit(ctx, s.dsn, on))
	}
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "t", Executed: true})
	check(t, err)
	check(t, s.CheckWrite(ctx))

	refuse(true)
	if _, err := s.BeginCall(ctx, store.CallRecord{Tool: "refused", Executed: true}); err == nil {
		t.Fatal("BeginCall succeeded while the database refuses audit entries")
	}
	err = s.CheckWrite(ctx)
	if err == nil {
		t.Fatal("CheckWrite succeeded after an audit write failed, with none succeeding since")
	}
	// A write outside the audit log succeeding proves nothing about audit writes.
	check(t, s.PutCheckpoint(ctx, "cp", []byte("x")))
	if err := s.CheckWrite(ctx); err == nil {
		t.Fatal("CheckWrite succeeded after a checkpoint write, with no audit write succeeding")
	}
	out := newOutcomes()
	check(t, s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan}, out.done("end")))
	if err := s.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded although the deferred completion was refused")
	}
	if err := s.CheckWrite(ctx); err == nil {
		t.Fatal("CheckWrite succeeded after a deferred audit write failed")
	}
	out.mu.Lock()
	if errs := out.got["end"]; len(errs) != 1 || errs[0] == nil {
		t.Errorf("the refused completion's done got %v, want one error", errs)
	}
	out.mu.Unlock()

	refuse(false)
	check(t, s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan}))
	check(t, s.CheckWrite(ctx))
	mustVerifyOK(t, s, 2)
}
