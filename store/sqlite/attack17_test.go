package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/sqlite"
)

// TestWriteTimeoutCountsTheQueue: the write timeout bounds a write from when it is
// made, not from when its batch starts. Another process holds the write lock; a
// backlog of deferred writes fills the queue (each batch of them fails only after the
// timeout); a BeginCall made then fails with the write timeout's error within about
// one timeout, instead of waiting behind every batch of the backlog first.
func TestWriteTimeoutCountsTheQueue(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "warden.db")
	const limit = 400 * time.Millisecond
	s, err := sqlite.Open(ctx, path, &sqlite.Options{WriteTimeout: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.BeginTx(ctx, nil) // takes the write lock now
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()

	// Four batches' worth (the queue holds 4*256): failing them one batch after the
	// other takes about four timeouts.
	const backlog = 4 * 256
	failed := make(chan error, backlog)
	for i := range backlog {
		if err := s.RecordCallLater(ctx, store.CallRecord{CallID: fmt.Sprint("r", i), Tool: "t", Status: warden.StatusRefused},
			func(err error) { failed <- err }); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	_, err = s.BeginCall(ctx, store.CallRecord{CallID: "late", Tool: "t", Executed: true})
	took := time.Since(start)
	if !errors.Is(err, store.ErrWriteTimeout) {
		t.Fatalf("BeginCall behind a stalled backlog: %v, want the write timeout's error", err)
	}
	if took > 2*limit+500*time.Millisecond {
		t.Errorf("BeginCall behind a stalled backlog failed after %v; want within about the write timeout (%v)", took, limit)
	}
	lock.Rollback()
	for range backlog {
		<-failed
	}
	_ = s.Flush(ctx) // the deferred failures, reported
	recs, err := s.QueryCalls(ctx, store.CallFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.CallID == "late" {
			t.Errorf("the BeginCall that failed was recorded: %+v", r)
		}
	}
}
