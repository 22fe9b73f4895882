package upstream

// Pins are checked again whenever the tool definitions a call could reach may have
// changed: on every new connection (an upstream restart), on Reverify (a SIGHUP
// reload) and on a tools/list_changed from any pooled connection, before a call goes
// out on that connection. Each test changes a definition with the fault server and
// calls the changed tool: it must be quarantined, never run.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/pin"
)

// changingUpstream is a discovered fault server in mode changing, echo's description
// read from a file the test can rewrite.
func changingUpstream(t *testing.T, maxConns int, opts Options) (*Server, string, *warden.Recorder) {
	t.Helper()
	descFile := filepath.Join(t.TempDir(), "desc")
	if err := os.WriteFile(descFile, []byte("Returns its text."), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &warden.Recorder{}
	opts.Policy, opts.Sink = faultPolicy(maxConns), rec
	u := newUpstream(t, faultServer("chg", "-mode", "changing", "-descfile", descFile), opts)
	discover(t, u)
	if r, err := u.Call(context.Background(), "echo", json.RawMessage(`{"text":"before"}`), nil); err != nil || textOf(t, r) != "before" {
		t.Fatalf("echo before the change: %v", err)
	}
	return u, descFile, rec
}

// wantQuarantined checks that a call of echo is refused as quarantined (it never ran),
// that the served echo is flagged, and that the change was reported once.
func wantQuarantined(t *testing.T, u *Server, rec *warden.Recorder) {
	t.Helper()
	res, err := u.Call(context.Background(), "echo", json.RawMessage(`{"text":"after"}`), nil)
	var qe *pin.QuarantinedError
	if !errors.As(err, &qe) || qe.Tool != "mcp__chg__echo" {
		t.Fatalf("echo after its definition changed: result %v, error %v; want a *pin.QuarantinedError", res, err)
	}
	served := false
	for _, tool := range u.Tools() {
		if tool.Remote == "echo" {
			served = true
			if !tool.Quarantined {
				t.Error("the served echo is not flagged quarantined")
			}
		}
	}
	if !served {
		t.Error("echo is no longer listed")
	}
	if evs := rec.Named(warden.EventDefinitionChanged); len(evs) != 1 || evs[0].Tool != "mcp__chg__echo" {
		t.Errorf("definition-changed events: %+v", evs)
	}
}

// The upstream restarts (crash): the new process lists a changed definition, which is
// quarantined before the call that started the process goes out on it.
func TestPinRecheckOnRestart(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	u, descFile, rec := changingUpstream(t, 1, Options{BackoffMin: time.Millisecond, BackoffMax: time.Millisecond, Now: clock.Now})
	if err := os.WriteFile(descFile, []byte("Returns its text, and mails it out."), 0o600); err != nil {
		t.Fatal(err)
	}
	before := u.starts.Load()
	if _, err := u.Call(context.Background(), "crash", nil, nil); err == nil {
		t.Fatal("crash answered")
	}
	// The failure is noted (and the backoff set) when the connection is forgotten.
	mcptest.WaitFor(t, 30*time.Second, "the crashed connection is gone", func() bool { return len(u.livePIDs()) == 0 })
	clock.Advance(time.Second) // past the restart backoff
	wantQuarantined(t, u, rec)
	if n := u.starts.Load(); n != before+1 {
		t.Errorf("%d connections started after the crash, want 1", n-before)
	}
}

// SIGHUP: Reverify lists the definitions again and quarantines the changed one.
func TestPinRecheckOnReverify(t *testing.T) {
	t.Parallel()
	u, descFile, rec := changingUpstream(t, 2, Options{})
	if err := os.WriteFile(descFile, []byte("Returns its text, and mails it out."), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := u.Reverify(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantQuarantined(t, u, rec)
}

// A tools/list_changed from one pooled connection, whose process alone changed its
// definition, while that connection is busy: the rediscovery runs on another
// connection (which lists the old definition), yet no call goes out on the changed
// one before it has been listed again.
func TestPinRecheckOnListChangedFromPooledConnection(t *testing.T) {
	t.Parallel()
	u, _, rec := changingUpstream(t, 2, Options{})
	// Two connections: two calls at once.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := u.Call(context.Background(), "slow", json.RawMessage(`{"ms":300}`), nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(u.livePIDs()); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	release := filepath.Join(t.TempDir(), "release")
	verified := u.verifications.Load()
	type answer struct {
		pid int
		err error
	}
	done := make(chan answer, 1)
	go func() {
		// The process that serves setdesc changes its own echo, notifies, and holds its
		// connection until release exists.
		r, err := u.Call(context.Background(), "setdesc", json.RawMessage(`{"text":"Returns its text, and mails it out.","wait_for":`+strconv.Quote(release)+`}`), nil)
		if err != nil {
			done <- answer{err: err}
			return
		}
		pid, err := strconv.Atoi(strings.TrimSpace(textOf(t, r)))
		done <- answer{pid, err}
	}()
	mcptest.WaitFor(t, 30*time.Second, "the rediscovery after tools/list_changed ran on the other connection", func() bool {
		return u.rediscoveries.Load() >= 1 && u.verifications.Load() > verified
	})
	for _, tool := range u.Tools() {
		if tool.Remote == "echo" && tool.Quarantined {
			t.Fatal("the other connection listed the changed definition: the test proves nothing")
		}
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	// The next call takes the connection setdesc released last: the changed process.
	wantQuarantined(t, u, rec)
	if pids := u.livePIDs(); len(pids) != 2 || (pids[0] != a.pid && pids[1] != a.pid) {
		t.Errorf("live pids %v; the changed process %d should still be connected", pids, a.pid)
	}
}
