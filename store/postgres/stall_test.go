package postgres_test

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/postgres"
)

// throughProxy returns a new proxy to the test server and the DSN of a fresh schema
// reached through it, with params added.
func throughProxy(t *testing.T, params map[string]string) (*proxy, string) {
	t.Helper()
	u, err := url.Parse(freshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := newProxy(t, host)
	u.Host = p.addr
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return p, u.String()
}

// TestStallFailsWithinWriteTimeout: a server that accepts connections and never
// answers fails every write once the write timeout (300ms, set by the DSN) passes,
// with an error that says so; writes resume at once when it answers again, after a
// stall on open connections and after an outage followed by a stall (reconnecting).
func TestStallFailsWithinWriteTimeout(t *testing.T) {
	p, dsn := throughProxy(t, map[string]string{"write_timeout": "300ms"}) // no connect_timeout
	ctx := t.Context()
	s, err := store.Open(ctx, dsn) // the DSN option must not reach the server
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	call := func() error {
		n++
		ref, err := s.BeginCall(ctx, store.CallRecord{CallID: fmt.Sprint("c", n), Tool: "t", Executed: true})
		if err != nil {
			return err
		}
		return s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan})
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	pend, err := s.CreatePending(ctx, store.Pending{Question: "q", Digest: "sha256:d"})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 3 * time.Second // the timeout, plus the slack of a loaded machine
	wantTimeout := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		took := time.Since(start)
		if !errors.Is(err, store.ErrWriteTimeout) || !strings.Contains(err.Error(), "within the write timeout of 300ms") ||
			!strings.Contains(err.Error(), "write_timeout=") {
			t.Fatalf("%s against a stalled server: %v; want the write timeout's error, naming 300ms and write_timeout=", what, err)
		}
		if took > bound {
			t.Errorf("%s against a stalled server failed after %v, want within %v", what, took, bound)
		}
	}
	beginFails := func() error {
		_, err := s.BeginCall(ctx, store.CallRecord{CallID: "stalled", Tool: "t", Executed: true})
		return err
	}
	resumesAtOnce := func() {
		t.Helper()
		start := time.Now()
		if err := call(); err != nil {
			t.Fatalf("the first call after the server answers again: %v", err)
		}
		if took := time.Since(start); took > bound {
			t.Errorf("the first call after the server answers again took %v", took)
		}
	}

	// Stalled on open connections.
	p.stall()
	wantTimeout("BeginCall", beginFails)
	wantTimeout("PutCheckpoint", func() error { return s.PutCheckpoint(ctx, "cp", []byte("x")) })
	wantTimeout("Decide", func() error {
		_, err := s.Decide(ctx, pend.ID, store.Verdict{Approve: true, By: "bob"})
		return err
	})
	wantTimeout("CheckWrite", func() error { return s.CheckWrite(ctx) })
	done := make(chan error, 1)
	if err := s.RecordCallLater(ctx, store.CallRecord{CallID: "stalled", Tool: "t"}, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	wantTimeout("a deferred record", func() error { return <-done })
	for i := range 4 { // more than the pool has connections
		wantTimeout(fmt.Sprint("BeginCall ", i), beginFails)
	}
	p.resume()
	resumesAtOnce()
	if err := s.CheckWrite(ctx); err != nil {
		t.Errorf("CheckWrite after the stall: %v", err)
	}

	// An outage, then a server that accepts connections and never answers.
	p.down()
	if err := beginFails(); err == nil {
		t.Fatal("BeginCall succeeded while the database was unreachable")
	}
	p.stall()
	p.up()
	wantTimeout("BeginCall after an outage", beginFails)
	wantTimeout("PutPin after an outage", func() error { return s.PutPin(ctx, store.Pin{Name: "tool", Hash: "h"}) })
	for i := range 6 { // more than the pool has connections
		wantTimeout(fmt.Sprint("BeginCall after an outage ", i), beginFails)
	}
	p.resume()
	resumesAtOnce()
	if _, err := s.Decide(ctx, pend.ID, store.Verdict{Approve: true, By: "bob"}); err != nil {
		t.Fatalf("Decide after the stall: %v", err)
	}

	recs, err := s.QueryCalls(ctx, store.CallFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.CallID == "stalled" {
			t.Errorf("a write that failed against the stalled server was recorded: %+v", r)
		}
	}
	if len(recs) != 3 {
		t.Errorf("%d calls recorded, want 3", len(recs))
	}
	rep, err := s.VerifyAudit(ctx)
	if err != nil || !rep.OK || rep.Entries != 6 {
		t.Errorf("VerifyAudit = %+v, %v; want OK with 6 entries", rep, err)
	}
}

// TestDSNOptions: write_timeout and commit_delay are the store's, checked like the
// SQLite DSN's, and never sent to the server.
func TestDSNOptions(t *testing.T) {
	dsn := freshSchema(t)
	for _, bad := range []string{"write_timeout=soon", "commit_delay=-1s"} {
		k, v, _ := strings.Cut(bad, "=")
		if _, err := postgres.Open(t.Context(), withParam(t, dsn, k, v), nil); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("Open with %s: %v, want an error naming %s", bad, err, k)
		}
	}
	s, err := postgres.Open(t.Context(), withParam(t, withParam(t, dsn, "commit_delay", "0"), "write_timeout", "2s"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.BeginCall(t.Context(), store.CallRecord{Tool: "t"}); err != nil {
		t.Fatal(err)
	}
}
