package gateway_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

// failingLater fails the first n deferred completions' attempts without reaching the
// store, as a commit that failed would.
type failingLater struct {
	store.Store
	mu sync.Mutex
	n  int
}

func (f *failingLater) EndCallLater(ctx context.Context, ref store.CallRef, c store.Completion, done func(error)) error {
	f.mu.Lock()
	fail := f.n > 0
	if fail {
		f.n--
	}
	f.mu.Unlock()
	if fail {
		go done(errors.New("disk hiccup"))
		return nil
	}
	return f.Store.EndCallLater(ctx, ref, c, done)
}

// attack17Gateway starts a gateway on the default setup whose store is wrap(the
// store opened from storeDSN, relative to the test directory), served on stdio.
func attack17Gateway(t *testing.T, storeDSN string, wrap func(store.Store) store.Store) (*gwEnv, store.Store, string) {
	t.Helper()
	mcptest.PeersOnPATH(t, "./internal/faultserver", "./examples/gateway/notes-server")
	dir := t.TempDir()
	mcptest.WriteFile(t, dir, "policy.yaml", []byte(gwPolicy))
	data := []byte("policy: policy.yaml\nstore: " + storeDSN + "\n" + gwDefaultTransport +
		strings.ReplaceAll(gwDefaultServers, "@DIR@", dir) + gwDefaultIdentities)
	file := mcptest.WriteFile(t, dir, "gateway.yaml", data)
	cfg, err := gateway.ParseFile(file, data, gwGetenv)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &gwEnv{dir: dir, cfg: cfg, log: &mcptest.LogBuffer{}, events: &gwEvents{}}
	e.log.LogOnFailure(t, "gateway log")
	e.st = wrap(st)
	gw, err := gateway.New(cfg, &gateway.Options{Store: e.st, Logger: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug})), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	e.gw = gw
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := gw.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	return e, st, filepath.Join(dir, "warden.db")
}

// TestAttack17CloseWaitsForRetriedCompletions: a completion whose first commits fail
// is being retried when the gateway closes; Close waits until it is durable, so a
// store closed right after holds the call as ran, not as started with an unknown
// outcome.
func TestAttack17CloseWaitsForRetriedCompletions(t *testing.T) {
	e, st, path := attack17Gateway(t, "sqlite://warden.db", func(s store.Store) store.Store { return &failingLater{Store: s, n: 4} })
	cs := e.connectStdio(t, nil)
	if res := gwCall(t, cs, "mcp__fault__echo", map[string]any{"text": "hi"}); res.IsError {
		t.Fatalf("echo: %s", mcptest.ResultText(res))
	}
	cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.gw.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_ = st.Close() // reports the failed attempts the journal retried
	again, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	calls, err := again.QueryCalls(ctx, store.CallFilter{})
	if err != nil || len(calls) != 1 || calls[0].Status != warden.StatusRan || calls[0].Unknown {
		t.Fatalf("after Close: %+v %v; want the call that ran, completed", calls, err)
	}
}

// TestAttack17StalledStoreRefusesWithinTheTimeout: while another process holds the
// database's write lock, /readyz says the store cannot record calls and a call is
// refused, not run, saying it could not be recorded, each within about the write
// timeout.
func TestAttack17StalledStoreRefusesWithinTheTimeout(t *testing.T) {
	const limit = 300 * time.Millisecond
	e, _, path := attack17Gateway(t, "sqlite://warden.db?write_timeout=300ms", func(s store.Store) store.Store { return s })
	mux := http.NewServeMux()
	mux.Handle("/readyz", e.gw.HealthHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cs := e.connectStdio(t, nil)
	if res := gwCall(t, cs, "mcp__fault__echo", map[string]any{"text": "before"}); res.IsError {
		t.Fatalf("echo: %s", mcptest.ResultText(res))
	}

	// The lock waits for a write of the gateway's own that may be under way (the
	// completion of the call above is committed after its answer).
	other, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	const bound = limit + 2*time.Second // the slack of a loaded machine

	start := time.Now()
	resp, err := srv.Client().Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "cannot record calls") || took > bound {
		t.Errorf("/readyz with the database locked: %d %s after %v", resp.StatusCode, body, took)
	}
	start = time.Now()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "mcp__fault__echo", Arguments: map[string]any{"text": "locked"}})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if text := mcptest.ResultText(res); !res.IsError || !strings.Contains(text, "could not be recorded") || took > bound {
		t.Errorf("a call with the database locked: %q (error %v) after %v; want a refusal saying it could not be recorded", text, res.IsError, took)
	}
	lock.Rollback()
}
