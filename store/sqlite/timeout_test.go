package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/sqlite"
)

// TestWriteTimeoutOnLockedDatabase: another process holds the write lock for longer
// than the write timeout (BEGIN IMMEDIATE on a connection of its own; the busy timeout
// is the default 10s): writes fail once the write timeout passes, saying so, and
// succeed again once the lock is released.
func TestWriteTimeoutOnLockedDatabase(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "warden.db")
	const limit = 300 * time.Millisecond
	s, err := sqlite.Open(ctx, path, &sqlite.Options{WriteTimeout: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "before", Executed: true})
	if err != nil {
		t.Fatal(err)
	}

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

	isTimeout := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrWriteTimeout) || !strings.Contains(err.Error(), "did not answer within the write timeout of 300ms") ||
			!strings.Contains(err.Error(), "write_timeout=") {
			t.Fatalf("%s while another connection holds the write lock: %v; want the write timeout's error, naming 300ms and write_timeout=", what, err)
		}
	}
	wantTimeout := func(what string, err error, took time.Duration) {
		t.Helper()
		isTimeout(what, err)
		if took < limit || took > 3*time.Second {
			t.Errorf("%s failed after %v, want just after the write timeout (300ms), long before the busy timeout (10s)", what, took)
		}
	}
	start := time.Now()
	_, err = s.BeginCall(ctx, store.CallRecord{Tool: "locked", Executed: true})
	wantTimeout("BeginCall", err, time.Since(start))
	start = time.Now()
	err = s.PutCheckpoint(ctx, "cp", []byte("x"))
	wantTimeout("PutCheckpoint", err, time.Since(start))
	start = time.Now()
	err = s.CheckWrite(ctx)
	wantTimeout("CheckWrite", err, time.Since(start))
	done := make(chan error, 1)
	if err := s.EndCallLater(ctx, ref, store.Completion{Status: warden.StatusRan}, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	isTimeout("a deferred completion", <-done)

	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	// The probe succeeds at once, but the last audit write failed: CheckWrite says so
	// until an audit write succeeds.
	if err := s.CheckWrite(ctx); !errors.Is(err, store.ErrWriteTimeout) {
		t.Errorf("CheckWrite after the failed audit writes: %v, want their failure", err)
	}
	if err := s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan}); err != nil {
		t.Fatalf("EndCall once the lock is released: %v", err)
	}
	if err := s.CheckWrite(ctx); err != nil {
		t.Errorf("CheckWrite after a successful audit write: %v", err)
	}
	recs, err := s.QueryCalls(ctx, store.CallFilter{})
	if err != nil || len(recs) != 1 || recs[0].Status != warden.StatusRan {
		t.Fatalf("records %+v, %v; want only the call made before the lock, completed", recs, err)
	}
	rep, err := s.VerifyAudit(ctx)
	if err != nil || !rep.OK || rep.Entries != 2 {
		t.Errorf("VerifyAudit = %+v, %v; want OK with 2 entries", rep, err)
	}
}
