package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden/store"
)

// TestBatchFailureIsolation runs one batch in which an op writes and then fails: its
// write must not commit, the other ops must, and the chain must have no hole.
func TestBatchFailureIsolation(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "w.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	errBoom := errors.New("boom")
	appendOp := func(tool string) *op {
		e := store.RecordEntry(store.CallRecord{Tool: tool}, time.Now())
		return &op{Ctx: ctx, Done: make(chan error, 1), Arg: func(t *wtx) error { return t.appendEntry(&e) }}
	}
	failing := &op{Ctx: ctx, Done: make(chan error, 1), Arg: func(t *wtx) error {
		e := store.RecordEntry(store.CallRecord{Tool: "half-written"}, time.Now())
		if err := t.appendEntry(&e); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO checkpoints (id, data, updated) VALUES ('half', x'00', 0)`); err != nil {
			return err
		}
		return errBoom
	}}
	verdict := &op{Ctx: ctx, Done: make(chan error, 1), Arg: func(*wtx) error { return store.ErrNotFound }}
	canceledCtx, cancel := context.WithCancel(ctx)
	cancel()
	abandoned := appendOp("abandoned")
	abandoned.Ctx = canceledCtx

	batch := []*op{appendOp("a"), failing, appendOp("b"), verdict, abandoned, appendOp("c")}
	s.w.commit(batch) // the writer goroutine is idle: the test is the writer here
	want := []error{nil, errBoom, nil, store.ErrNotFound, context.Canceled, nil}
	for i, o := range batch {
		if err := <-o.Done; !errors.Is(err, want[i]) || (want[i] == nil && err != nil) {
			t.Errorf("op %d: %v, want %v", i, err, want[i])
		}
	}
	recs, err := s.QueryCalls(ctx, store.CallFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var tools string
	for _, r := range recs {
		tools += r.Tool
	}
	if tools != "abc" {
		t.Errorf("committed tools %q, want abc", tools)
	}
	if _, err := s.GetCheckpoint(ctx, "half"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the failed op's write was committed: %v", err)
	}
	rep, err := s.VerifyAudit(ctx)
	if err != nil || !rep.OK || rep.Entries != 3 {
		t.Errorf("VerifyAudit = %+v, %v; want OK with 3 entries", rep, err)
	}
}
