package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/sqlite" // registers sqlite://
)

// The tests start the fault server (./internal/faultserver) as a real child
// process by its bare name, as the transport policy requires: it is built once per
// test binary and its directory is put first on PATH.
var faultServerPath sync.Once

func needFaultServer(t testing.TB) {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/faultserver")
	faultServerPath.Do(func() {
		os.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	})
}

func faultServer(name string, args ...string) ServerConfig {
	return ServerConfig{Name: name, Command: "faultserver", Args: args}
}

func faultPolicy(maxConns int) *TransportPolicy {
	return &TransportPolicy{AllowCommands: true, Commands: []string{"faultserver"}, MaxConnectionsPerServer: maxConns}
}

func openPinStore(t *testing.T) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newUpstream returns a Server whose Close is checked at the end of the test: no
// child process may be left, not even a zombie.
func newUpstream(t *testing.T, cfg ServerConfig, opts Options) *Server {
	t.Helper()
	needFaultServer(t)
	if opts.Pins == nil {
		opts.Pins = openPinStore(t)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(mcptest.KeysOnce(t, slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	u, err := New(cfg, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pids := u.livePIDs()
		if err := u.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, pid := range pids {
			if processAlive(pid) {
				t.Errorf("pid %d still exists after Close", pid)
			}
		}
		if n := len(u.livePIDs()); n != 0 {
			t.Errorf("%d connections left after Close", n)
		}
	})
	return u
}

type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// processAlive reports whether pid exists, zombies included (signal 0 reaches an
// unreaped child too).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	mcptest.WaitFor(t, 10*time.Second, fmt.Sprintf("pid %d is gone", pid), func() bool { return !processAlive(pid) })
}

// testClock is a clock for the restart backoff ([Options.Now]) that moves only when
// the test says so: a test steps past a backoff instead of sleeping through it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func textOf(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if r == nil || len(r.Content) == 0 {
		t.Fatalf("result without content: %+v", r)
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", r.Content[0])
	}
	return tc.Text
}

func callPID(t *testing.T, u *Server) int {
	t.Helper()
	r, err := u.Call(context.Background(), "pid", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(textOf(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func discover(t *testing.T, u *Server) ([]Tool, []ToolProblem) {
	t.Helper()
	tools, problems, err := u.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tools, problems
}

func toolNames(tools []Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

var okRemoteTools = []string{"crash", "echo", "fail", "getenv", "hang", "pid", "progress", "slow"}

func TestUpstreamDiscoverPrefixAndPagination(t *testing.T) {
	t.Parallel()
	prefix := "fs."
	for _, tc := range []struct {
		name   string
		cfg    ServerConfig
		prefix string
	}{
		{"default prefix", faultServer("faulty", "-pagesize", "2"), "mcp__faulty__"},
		{"configured prefix", func() ServerConfig { c := faultServer("faulty", "-pagesize", "3"); c.Prefix = &prefix; return c }(), "fs."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &warden.Recorder{}
			u := newUpstream(t, tc.cfg, Options{Policy: faultPolicy(0), Sink: rec})
			tools, problems := discover(t, u)
			if len(problems) != 0 {
				t.Fatalf("problems: %v", problems)
			}
			var want []string
			for _, n := range okRemoteTools {
				want = append(want, tc.prefix+n)
			}
			if got := toolNames(tools); !slices.Equal(got, want) {
				t.Fatalf("tools %v, want %v (every page followed)", got, want)
			}
			for _, tool := range tools {
				if tool.Server != "faulty" || tool.Name != tc.prefix+tool.Remote || tool.Tool == nil || tool.Quarantined {
					t.Errorf("tool %+v", tool)
				}
				if !strings.HasPrefix(tool.Hash, "sha256:") || !json.Valid(tool.InputSchema) {
					t.Errorf("tool %s: hash %q schema %s", tool.Name, tool.Hash, tool.InputSchema)
				}
			}
			if got := toolNames(u.Tools()); !slices.Equal(got, want) {
				t.Errorf("Tools() %v", got)
			}
			if len(rec.Events()) != 0 {
				t.Errorf("events on first use: %+v", rec.Events())
			}
			r, err := u.Call(context.Background(), "echo", json.RawMessage(`{"text":"hi"}`), nil)
			if err != nil || textOf(t, r) != "hi" || r.IsError {
				t.Fatalf("echo: %v %+v", err, r)
			}
			if _, err := u.Call(context.Background(), "echo", json.RawMessage(`["not an object"]`), nil); err == nil {
				t.Error("non-object arguments were sent")
			}
			if _, err := u.Call(context.Background(), tc.prefix+"echo", nil, nil); err == nil {
				t.Error("a governed name was accepted as the remote name")
			}
		})
	}
}

func TestUpstreamBadSchemasRefused(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, faultServer("bad", "-mode", "badschemas"), Options{Policy: faultPolicy(0)})
	tools, problems := discover(t, u)
	want := []string{}
	for _, n := range okRemoteTools {
		want = append(want, "mcp__bad__"+n)
	}
	if got := toolNames(tools); !slices.Equal(got, want) {
		t.Errorf("served %v, want only the good tools %v", got, want)
	}
	got := map[string]string{}
	for _, p := range problems {
		if p.Server != "bad" {
			t.Errorf("problem %+v: server", p)
		}
		got[p.Tool] = p.Problem
	}
	wantProblems := map[string]string{
		"mcp__bad__noschema":     "input schema is missing",
		"mcp__bad__stringschema": "input schema is not an object schema",
		"mcp__bad__badref":       "input schema does not compile: ",
		"mcp__bad__bad name":     `tool name "bad name" is not a valid tool name`,
		"mcp__bad__twice":        `duplicate tool name: "twice" is listed 2 times`,
	}
	if len(got) != len(wantProblems) || len(problems) != len(wantProblems) || len(u.Problems()) != len(problems) {
		t.Errorf("problems %v", problems)
	}
	for tool, prefix := range wantProblems {
		if !strings.HasPrefix(got[tool], prefix) {
			t.Errorf("problem of %s = %q, want prefix %q", tool, got[tool], prefix)
		}
	}
	// The gateway is still here and the good tools work.
	if r, err := u.Call(context.Background(), "echo", json.RawMessage(`{"text":"alive"}`), nil); err != nil || textOf(t, r) != "alive" {
		t.Fatalf("echo after bad schemas: %v", err)
	}
	if _, err := u.Call(context.Background(), "noschema", nil, nil); err == nil {
		t.Error("a refused tool was called")
	}
}

func TestUpstreamTransportDeniedStartsNothing(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "started")
	for _, tc := range []struct {
		name   string
		policy *TransportPolicy
		want   string
	}{
		{"nil policy", nil, "MCP command transport is disabled (allow_commands=false). Blocked command: 'faultserver'"},
		{"not in allowlist", &TransportPolicy{AllowCommands: true, Commands: []string{"node"}}, "Command 'faultserver' not in allowlist. Allowed: ['node']"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &warden.Recorder{}
			u := newUpstream(t, faultServer("denied", "-marker", marker), Options{Policy: tc.policy, Sink: rec})
			tools, problems, err := u.Discover(context.Background())
			var d *DeniedError
			if !errors.As(err, &d) || d.Message != tc.want || d.Server != "denied" {
				t.Fatalf("err %v, want DeniedError %q", err, tc.want)
			}
			if tools != nil || problems != nil || len(u.Tools()) != 0 {
				t.Errorf("tools %v problems %v after a denial", tools, problems)
			}
			if evs := rec.Named(warden.EventTransportDenied); len(evs) != 1 {
				t.Errorf("denial events %+v", rec.Events())
			}
			if _, err := u.Call(context.Background(), "echo", nil, nil); err == nil {
				t.Error("a call went through a denied server")
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the server was started: %v", err)
			}
			if u.starts.Load() != 0 || len(u.livePIDs()) != 0 {
				t.Error("a connection was started")
			}
		})
	}
}

func TestUpstreamNoPinStoreRefuses(t *testing.T) {
	t.Parallel()
	needFaultServer(t)
	marker := filepath.Join(t.TempDir(), "started")
	u, err := New(faultServer("nopins", "-marker", marker), &Options{Policy: faultPolicy(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close(context.Background())
	if _, _, err := u.Discover(context.Background()); err == nil || !strings.Contains(err.Error(), "no pin store") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("started without a pin store")
	}
}

func TestNewUpstreamValidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		opts Options
	}{
		{"bad server", ServerConfig{Name: "x y", Command: "a"}, Options{}},
		{"bad policy", faultServer("a"), Options{Policy: &TransportPolicy{MaxConnectionsPerServer: -1}}},
		{"negative timeout", faultServer("a"), Options{CallTimeout: -1}},
		{"backoff min above max", faultServer("a"), Options{BackoffMin: time.Minute, BackoffMax: time.Second}},
		{"managed header", ServerConfig{Name: "a", URL: "https://x", Headers: map[string]string{"mcp-session-id": "1"}}, Options{}},
		{"header with newline", ServerConfig{Name: "a", URL: "https://x", Headers: map[string]string{"X-A": "1\r\nX-B: 2"}}, Options{}},
		{"bad header name", ServerConfig{Name: "a", URL: "https://x", Headers: map[string]string{"X A": "1"}}, Options{}},
	} {
		if _, err := New(tc.cfg, &tc.opts); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func TestUpstreamIsErrorIsAResult(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, faultServer("f"), Options{Policy: faultPolicy(0)})
	discover(t, u)
	r, err := u.Call(context.Background(), "fail", json.RawMessage(`{"text":"it broke"}`), nil)
	if err != nil {
		t.Fatalf("isError became a Go error: %v", err)
	}
	if !r.IsError || textOf(t, r) != "it broke" {
		t.Fatalf("result %+v", r)
	}
	// The connection stays in use: the next call reuses the same process.
	pid := callPID(t, u)
	if pid2 := callPID(t, u); pid2 != pid || u.starts.Load() != 1 {
		t.Errorf("pids %d %d, starts %d: the idle connection was not reused", pid, pid2, u.starts.Load())
	}
}

func TestUpstreamCrashBackoffAndRestart(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	u := newUpstream(t, faultServer("crashy"), Options{Policy: faultPolicy(0), BackoffMin: time.Hour, BackoffMax: 2 * time.Hour, Now: clock.Now})
	discover(t, u)
	pid1 := callPID(t, u)

	_, err := u.Call(context.Background(), "crash", nil, nil)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "failed on the connection") {
		t.Fatalf("crash: %v", err)
	}
	waitGone(t, pid1) // reaped, not a zombie

	// In backoff: fail fast, saying so.
	start := time.Now()
	_, err = u.Call(context.Background(), "pid", nil, nil)
	if !errors.Is(err, ErrServerRestarting) || !strings.Contains(err.Error(), "after a failure") || !strings.Contains(err.Error(), "next start is in") {
		t.Fatalf("call during backoff: %v", err)
	}
	if time.Since(start) > 100*time.Millisecond {
		t.Errorf("the call in backoff took %s", time.Since(start))
	}

	// After the backoff a new process serves the call.
	clock.Advance(time.Hour)
	pid2 := callPID(t, u)
	if pid2 == pid1 {
		t.Fatalf("same pid %d after a crash", pid2)
	}
	u.mu.Lock()
	failures := u.failures
	u.mu.Unlock()
	if failures != 0 {
		t.Errorf("backoff not reset after a successful call: %d failures", failures)
	}
}

func TestUpstreamDieOnStart(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, faultServer("dead", "-mode", "die-on-start"), Options{Policy: faultPolicy(0), BackoffMin: time.Second})
	if _, _, err := u.Discover(context.Background()); err == nil || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("discover: %v", err)
	}
	if _, _, err := u.Discover(context.Background()); !errors.Is(err, ErrServerRestarting) {
		t.Fatalf("second discover: %v, want fail fast in backoff", err)
	}
	if u.starts.Load() != 1 || len(u.Tools()) != 0 {
		t.Errorf("starts %d tools %v", u.starts.Load(), u.Tools())
	}
}

// A call past CallTimeout is cancelled and its connection discarded: an upstream that
// does not answer in time is not trusted with the next call.
func TestUpstreamHangIsBoundedAndDiscarded(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, faultServer("hung"), Options{Policy: faultPolicy(0), CallTimeout: 300 * time.Millisecond})
	discover(t, u)
	pid1 := callPID(t, u)
	start := time.Now()
	_, err := u.Call(context.Background(), "hang", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("hang returned after %s", d)
	}
	waitGone(t, pid1) // the connection was discarded and its process killed
	if pid2 := callPID(t, u); pid2 == pid1 {
		t.Fatal("the hung connection was reused")
	}
}

// A call its caller cancels is cancelled upstream (notifications/cancelled, which the
// tool sees), and the process, which still answers a ping, serves the next call.
func TestUpstreamCancelKeepsTheProcess(t *testing.T) {
	t.Parallel()
	var logs mcptest.LogBuffer
	u := newUpstream(t, faultServer("cancel"), Options{Policy: faultPolicy(1), Logger: slog.New(mcptest.KeysOnce(t, slog.NewTextHandler(&logs, nil)))})
	discover(t, u)
	pid1 := callPID(t, u)
	for i := 1; i <= 2; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 1)
		go func() {
			_, err := u.Call(ctx, "slow", json.RawMessage(`{"ms":60000}`), nil)
			errs <- err
		}()
		logs.WaitCount(t, 30*time.Second, i, "slow: sleeping 60000ms")
		cancel()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v, want context.Canceled", err)
		}
		logs.WaitCount(t, 30*time.Second, i, "slow: cancelled after")
		// With one connection allowed, the next call waits for the ping and then reuses
		// the same process.
		if pid2 := callPID(t, u); pid2 != pid1 {
			t.Fatalf("after cancelled call %d the pid is %d, want the same process %d", i, pid2, pid1)
		}
	}
	if n := logs.Count("closing the connection"); n != 0 {
		t.Errorf("a connection was closed after a cancel:\n%s", logs.String())
	}
}

// An upstream that does not answer the ping after a cancelled call within CancelGrace
// is closed, its process killed, and the next call starts another.
func TestUpstreamCancelGraceEnds(t *testing.T) {
	t.Parallel()
	var logs mcptest.LogBuffer
	u := newUpstream(t, faultServer("deaf", "-no-pong"), Options{Policy: faultPolicy(1), CancelGrace: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	discover(t, u)
	pid1 := callPID(t, u)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := u.Call(ctx, "slow", json.RawMessage(`{"ms":60000}`), nil)
		errs <- err
	}()
	logs.WaitCount(t, 30*time.Second, 1, "slow: sleeping 60000ms")
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	logs.WaitCount(t, 30*time.Second, 1, "upstream did not answer a ping after a cancelled call; closing the connection", "grace=300ms")
	waitGone(t, pid1)
	if pid2 := callPID(t, u); pid2 == pid1 {
		t.Fatal("the connection that did not answer the ping was reused")
	}
}

func TestUpstreamPoolBound(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, faultServer("pool"), Options{Policy: faultPolicy(2)})
	discover(t, u)

	type span struct {
		pid        int
		start, end int64
	}
	var (
		mu    sync.Mutex
		spans []span
		wg    sync.WaitGroup
		maxPr atomic.Int64
	)
	slow := func() {
		defer wg.Done()
		r, err := u.Call(context.Background(), "slow", json.RawMessage(`{"ms":700}`), nil)
		if err != nil {
			t.Error(err)
			return
		}
		var s span
		if _, err := fmt.Sscan(textOf(t, r), &s.pid, &s.start, &s.end); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		spans = append(spans, s)
		mu.Unlock()
	}
	busy := func() int {
		u.mu.Lock()
		defer u.mu.Unlock()
		n := 0
		for c := range u.live {
			if c.busy {
				n++
			}
		}
		return n
	}
	stop := make(chan struct{})
	go func() { // watch the number of processes while the calls run
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				if n := int64(len(u.livePIDs())); n > maxPr.Load() {
					maxPr.Store(n)
				}
			}
		}
	}()

	wg.Add(2)
	go slow()
	go slow()
	mcptest.WaitFor(t, 5*time.Second, "two calls run at once", func() bool { return busy() >= 2 })
	// A third call waits for a free connection, bounded by its context.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	_, err := u.Call(ctx, "echo", json.RawMessage(`{"text":"x"}`), nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for a free connection") {
		t.Fatalf("third call: %v", err)
	}
	wg.Add(1)
	go slow() // waits, then runs on a freed connection
	wg.Wait()
	close(stop)

	if len(spans) != 3 {
		t.Fatalf("spans %v", spans)
	}
	for _, s := range spans {
		overlap := 0
		for _, o := range spans {
			if o.start <= s.start && s.start < o.end {
				overlap++
			}
		}
		if overlap > 2 {
			t.Errorf("%d calls ran at once upstream: %v", overlap, spans)
		}
	}
	if m := maxPr.Load(); m > 2 {
		t.Errorf("%d upstream processes at once, want at most 2", m)
	}
	if s := u.starts.Load(); s != 2 {
		t.Errorf("%d processes started, want 2 (idle connections reused)", s)
	}
}

func TestUpstreamListChangedFloodCoalesced(t *testing.T) {
	t.Parallel()
	var changed atomic.Int64
	var running, overlapped atomic.Int64
	// The consumer is slow: every OnToolsChanged waits until the test releases it, so
	// the whole flood piles up while the first one runs.
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseAll() // before the cleanup's Close, which waits for the worker
	var floodOver atomic.Bool
	settled := make(chan struct{})
	var settleOnce sync.Once
	var u *Server
	u = newUpstream(t, faultServer("flood", "-mode", "changing"), Options{
		Policy: faultPolicy(0),
		OnToolsChanged: func(server string) {
			if running.Add(1) > 1 {
				overlapped.Add(1)
			}
			if server != "flood" {
				t.Errorf("OnToolsChanged(%q)", server)
			}
			<-release
			changed.Add(1)
			running.Add(-1)
			// Once the flood is over nothing queues work any more; with none queued now,
			// the worker goes idle after this call.
			if floodOver.Load() && len(u.rediscover) == 0 && len(u.changed) == 0 {
				settleOnce.Do(func() { close(settled) })
			}
		},
	})
	discover(t, u)
	// The flood answers only once the client has handled all 1000 notifications.
	if r, err := u.Call(context.Background(), "flood", json.RawMessage(`{"n":1000}`), nil); err != nil || r.IsError {
		t.Fatalf("flood: %v %+v", err, r)
	}
	floodOver.Store(true)
	releaseAll()
	select {
	case <-settled:
	case <-time.After(15 * time.Second):
		t.Fatalf("not settled: %d rediscoveries, %d OnToolsChanged", u.rediscoveries.Load(), changed.Load())
	}
	n := u.rediscoveries.Load()
	t.Logf("1000 notifications -> %d rediscoveries, %d OnToolsChanged", n, changed.Load())
	// At most one rediscovery runs and one is queued: the first one's OnToolsChanged
	// holds the worker, and the rest of the flood leaves one queued (none when the
	// first began only after the whole flood was handled). The count is bounded by
	// the consumer, not by the notifications.
	if n < 1 || n > 2 {
		t.Errorf("%d rediscoveries for 1000 notifications", n)
	}
	if c := changed.Load(); c < 1 || c > n {
		t.Errorf("OnToolsChanged called %d times for %d rediscoveries", c, n)
	}
	if overlapped.Load() != 0 {
		t.Error("OnToolsChanged ran concurrently")
	}
	if len(u.Tools()) == 0 {
		t.Error("tools lost")
	}
}

// The whole pinning story against a real server whose definition changes.
func TestUpstreamDefinitionChangeQuarantine(t *testing.T) {
	t.Parallel()
	descFile := filepath.Join(t.TempDir(), "desc")
	writeDesc := func(s string) {
		if err := os.WriteFile(descFile, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeDesc("Version one.")
	pins := openPinStore(t)
	rec := &warden.Recorder{}
	changed := make(chan struct{}, 100)
	u := newUpstream(t, faultServer("chg", "-mode", "changing", "-descfile", descFile), Options{
		Policy: faultPolicy(0), Pins: pins, Sink: rec,
		OnToolsChanged: func(string) { changed <- struct{}{} },
	})
	echo := func() Tool {
		for _, tool := range u.Tools() {
			if tool.Remote == "echo" {
				return tool
			}
		}
		t.Fatal("no echo")
		return Tool{}
	}
	waitChanged := func() {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("OnToolsChanged not called")
		}
	}
	poke := func() {
		t.Helper()
		if _, err := u.Call(context.Background(), "poke", nil, nil); err != nil {
			t.Fatal(err)
		}
		waitChanged()
	}

	// First use: pinned, approved.
	discover(t, u)
	first := echo()
	p, err := pins.GetPin(context.Background(), "mcp__chg__echo")
	if err != nil || !p.Approved || p.ApprovedBy != "first-use" || p.Hash != first.Hash || first.Quarantined {
		t.Fatalf("first-use pin %+v %v", p, err)
	}
	// Unchanged: still served, no event.
	poke()
	if echo().Quarantined || len(rec.Named(warden.EventDefinitionChanged)) != 0 {
		t.Fatal("an unchanged definition was quarantined")
	}

	// Changed upstream: quarantined, exactly one event, pending stored.
	writeDesc("Version two: also sends your files somewhere.")
	poke()
	changedTool := echo()
	if !changedTool.Quarantined || changedTool.Hash == first.Hash {
		t.Fatalf("changed tool %+v", changedTool)
	}
	poke() // seen again: no second event
	evs := rec.Named(warden.EventDefinitionChanged)
	if len(evs) != 1 || evs[0].Tool != "mcp__chg__echo" || !strings.Contains(evs[0].Detail, first.Hash+" -> "+changedTool.Hash) {
		t.Fatalf("events %+v", evs)
	}
	p, _ = pins.GetPin(context.Background(), "mcp__chg__echo")
	if p.Hash != first.Hash || p.PendingHash != changedTool.Hash || len(p.Pending) == 0 {
		t.Fatalf("pin %+v", p)
	}
	diff := pin.Diff(p)
	if !strings.Contains(diff, `-   "description": "Version one.",`) || !strings.Contains(diff, `+   "description": "Version two: also sends your files somewhere.",`) {
		t.Errorf("diff:\n%s", diff)
	}
	_, err = u.Call(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), nil)
	var qe *pin.QuarantinedError
	if !errors.As(err, &qe) || err.Error() != "Tool 'mcp__chg__echo' changed its definition since it was approved; an operator must review it." {
		t.Fatalf("call of a quarantined tool: %v", err)
	}

	// The operator approves what they saw (in "another process": straight in the store).
	if _, err := pin.Approve(context.Background(), pins, "mcp__chg__echo", first.Hash, "alice"); !errors.Is(err, pin.ErrPendingHashMismatch) {
		t.Fatalf("approve with a wrong hash: %v", err)
	}
	if _, err := pin.Approve(context.Background(), pins, "mcp__chg__echo", changedTool.Hash, "alice"); err != nil {
		t.Fatal(err)
	}
	if !echo().Quarantined {
		t.Fatal("un-quarantined before Refresh")
	}
	if err := u.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitChanged()
	if echo().Quarantined {
		t.Fatal("still quarantined after approval and Refresh")
	}
	if r, err := u.Call(context.Background(), "echo", json.RawMessage(`{"text":"ok"}`), nil); err != nil || textOf(t, r) != "ok" {
		t.Fatalf("echo after approval: %v", err)
	}
	if len(rec.Named(warden.EventDefinitionChanged)) != 1 {
		t.Error("more definition events")
	}
}

func TestUpstreamEnvFilteredAndStderrLogged(t *testing.T) {
	t.Parallel()
	lines := &lineRecorder{}
	cfg := faultServer("envy")
	cfg.Env = map[string]string{"WARDEN_TEST_API_TOKEN": "s3cret", "WARDEN_TEST_PLAIN": "visible"}
	u := newUpstream(t, cfg, Options{Policy: faultPolicy(0), Logger: slog.New(lines)})
	discover(t, u)
	get := func(name string) string {
		r, err := u.Call(context.Background(), "getenv", json.RawMessage(`{"name":"`+name+`"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return textOf(t, r)
	}
	if got := get("WARDEN_TEST_API_TOKEN"); got != "false " {
		t.Errorf("secret reached the child: %q", got)
	}
	if got := get("WARDEN_TEST_PLAIN"); got != "true visible" {
		t.Errorf("plain variable: %q", got)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logged: %v", lines.all())
		}
	})
	mcptest.WaitFor(t, 5*time.Second, "the child's stderr is forwarded to the log", func() bool {
		return lines.hasPrefix("faultserver: starting mode=ok pid=")
	})
}

type lineRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *lineRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *lineRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *lineRecorder) WithGroup(string) slog.Handler            { return r }
func (r *lineRecorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "upstream stderr" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			r.mu.Lock()
			r.lines = append(r.lines, a.Value.String())
			r.mu.Unlock()
		}
		return true
	})
	return nil
}

func (r *lineRecorder) hasPrefix(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.lines, func(l string) bool { return strings.HasPrefix(l, s) })
}

func (r *lineRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

func TestUpstreamCloseKillsEverything(t *testing.T) {
	t.Parallel()
	needFaultServer(t)
	u, err := New(faultServer("closing"), &Options{Policy: faultPolicy(3), Pins: openPinStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close(context.Background()) }) // when the test fails early
	if _, _, err := u.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Two busy connections, one of them hung for good, and an idle one.
	errs := make(chan error, 2)
	sent := make(chan struct{}, 2)
	sending := &CallOptions{BeforeSend: func(context.Context) error { sent <- struct{}{}; return nil }}
	go func() { _, err := u.Call(context.Background(), "hang", nil, sending); errs <- err }()
	go func() {
		_, err := u.Call(context.Background(), "slow", json.RawMessage(`{"ms":60000}`), sending)
		errs <- err
	}()
	for range 2 { // both requests are on their way, each on a connection of its own
		select {
		case <-sent:
		case <-time.After(10 * time.Second):
			t.Fatalf("the two calls were not sent; live %v", u.livePIDs())
		}
	}
	callPID(t, u) // a third connection, idle after this call
	if n := len(u.livePIDs()); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
	pids := u.livePIDs()
	start := time.Now()
	if err := u.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %s", time.Since(start))
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Errorf("call in flight at Close: %v", err)
		}
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("pid %d survived Close", pid)
		}
	}
	if _, err := u.Call(context.Background(), "echo", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close: %v", err)
	}
	if err := u.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A url server: configured headers are sent, redirects are refused.
func TestUpstreamURLServer(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "http-upstream", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer T" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close) // after the Upstreams' Close (cleanups run last first)
	policy := &TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}}

	u := newUpstream(t, ServerConfig{Name: "web", URL: hs.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer T"}}, Options{Policy: policy})
	tools, _ := discover(t, u)
	if got := toolNames(tools); !slices.Equal(got, []string{"mcp__web__echo"}) {
		t.Fatalf("tools %v", got)
	}
	if r, err := u.Call(context.Background(), "echo", json.RawMessage(`{"text":"over http"}`), nil); err != nil || textOf(t, r) != "over http" {
		t.Fatalf("call: %v", err)
	}

	moved := newUpstream(t, ServerConfig{Name: "moved", URL: hs.URL + "/moved", Headers: map[string]string{"Authorization": "Bearer T"}}, Options{Policy: policy})
	if _, _, err := moved.Discover(context.Background()); err == nil {
		t.Fatal("a redirect was followed")
	}
}

// sdkGoroutines counts the goroutines running SDK or Server code.
func sdkGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "modelcontextprotocol/go-sdk") || strings.Contains(g, "mcp.(*Server)") || strings.Contains(g, "os/exec.(*Cmd)") {
			count++
		}
	}
	return count
}

// Not parallel: it counts goroutines. After crashes, a hang, a flood and Close, no
// goroutine of the SDK or of the Server is left.
func TestUpstreamLeavesNoGoroutines(t *testing.T) {
	needFaultServer(t)
	before := sdkGoroutines()
	func() {
		clock := newTestClock()
		u, err := New(faultServer("leak", "-mode", "changing"), &Options{
			Policy: faultPolicy(2), Pins: openPinStore(t), BackoffMin: time.Millisecond, CallTimeout: 200 * time.Millisecond,
			OnToolsChanged: func(string) {}, Now: clock.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close(context.Background())
		discover(t, u)
		u.Call(context.Background(), "crash", nil, nil)
		clock.Advance(time.Second) // past the backoff
		u.Call(context.Background(), "hang", nil, nil)
		clock.Advance(time.Second)
		u.Call(context.Background(), "flood", json.RawMessage(`{"n":50}`), nil)
		clock.Advance(time.Second)
		sent := make(chan struct{})
		go u.Call(context.Background(), "slow", json.RawMessage(`{"ms":10000}`), &CallOptions{BeforeSend: func(context.Context) error { close(sent); return nil }})
		select { // Close meets a call in flight
		case <-sent:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow call was never sent")
		}
	}()
	// Close has waited for every goroutine of the Server, and the SDK's Close for its
	// connection to go idle, but a goroutine that has done its last work may not have
	// returned yet, and nothing signals a goroutine's end: this is a poll, of the one
	// state that is only visible in the runtime.
	t.Cleanup(func() {
		if t.Failed() {
			buf := make([]byte, 1<<20)
			t.Logf("goroutines:\n%s", buf[:runtime.Stack(buf, true)])
		}
	})
	mcptest.WaitFor(t, 5*time.Second, fmt.Sprintf("no more than the %d SDK/Server goroutines from before are left after Close", before), func() bool {
		return sdkGoroutines() <= before
	})
}

// A server that sends malformed data (written by hand, not with the SDK) cannot crash
// the gateway: every bad answer is an error or a result, and the server stays usable.
func TestUpstreamSurvivesGarbage(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	u := newUpstream(t, faultServer("junky", "-mode", "garbage"), Options{Policy: faultPolicy(0), BackoffMin: time.Millisecond, BackoffMax: time.Millisecond, Now: clock.Now})
	tools, problems := discover(t, u)
	if got := toolNames(tools); !slices.Equal(got, []string{"mcp__junky__junk", "mcp__junky__ok"}) {
		t.Errorf("tools %v (problems %v)", got, problems)
	}
	if len(problems) != 1 || problems[0].Tool != "mcp__junky__arrayschema" || problems[0].Problem != "input schema is not an object schema" {
		t.Errorf("problems %v", problems)
	}
	for _, what := range []string{"nullcontent", "badtype", "notjson", "wrongid", "badobject", "badresult", "hugeline", "request", "notify", "unknown"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, err := u.Call(ctx, "junk", json.RawMessage(`{"what":"`+what+`"}`), nil)
		cancel()
		t.Logf("%s: result %v, err %v", what, r != nil, err)
		if err == nil && r == nil {
			t.Errorf("%s: neither result nor error", what)
		}
		clock.Advance(time.Second) // past the backoff
		ok, err := u.Call(context.Background(), "ok", nil, nil)
		if err != nil || textOf(t, ok) != "fine" {
			t.Fatalf("after %s: %v", what, err)
		}
	}
}

// A discovered server whose process dies is started again in the background. While it
// cannot start it is down: Health says why and Tools is empty, and OnToolsChanged
// tells of it; once it starts again its tools are served again, without a call.
func TestUpstreamDownAndBack(t *testing.T) {
	t.Parallel()
	block := filepath.Join(t.TempDir(), "block")
	changed := make(chan struct{}, 100)
	u := newUpstream(t, faultServer("flaky", "-fail-if-exists", block), Options{
		Policy: faultPolicy(1), BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
		OnToolsChanged: func(string) { changed <- struct{}{} },
	})
	discover(t, u)
	if err := u.Health(); err != nil || len(u.Tools()) == 0 {
		t.Fatalf("after discovery: health %v, %d tools", err, len(u.Tools()))
	}
	pid1 := callPID(t, u)
	if err := os.WriteFile(block, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Call(context.Background(), "crash", nil, nil); err == nil {
		t.Fatal("crash answered")
	}
	waitGone(t, pid1)
	mcptest.WaitFor(t, 30*time.Second, "the server is down", func() bool { return u.Health() != nil })
	if err := u.Health(); !strings.Contains(err.Error(), `server "flaky" is down: start failed`) {
		t.Errorf("health while down: %v", err)
	}
	if tools := u.Tools(); len(tools) != 0 {
		t.Errorf("a down server lists %d tools", len(tools))
	}
	waitSignal(t, changed, "OnToolsChanged when the server went down")

	if err := os.Remove(block); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, 30*time.Second, "the server is back", func() bool { return u.Health() == nil && len(u.Tools()) > 0 })
	waitSignal(t, changed, "OnToolsChanged when the server came back")
	if pid2 := callPID(t, u); pid2 == pid1 {
		t.Errorf("served by the dead process %d", pid1)
	}
}

// The process that replaces a dead one is listed as soon as it runs: a definition it
// changed is quarantined (and OnToolsChanged called) before any call reaches it.
func TestUpstreamReplacedProcessIsListed(t *testing.T) {
	t.Parallel()
	descFile := filepath.Join(t.TempDir(), "desc")
	if err := os.WriteFile(descFile, []byte("Version one."), 0o600); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 100)
	u := newUpstream(t, faultServer("replaced", "-mode", "changing", "-descfile", descFile), Options{
		Policy: faultPolicy(1), BackoffMin: 20 * time.Millisecond,
		OnToolsChanged: func(string) { changed <- struct{}{} },
	})
	tools, _ := discover(t, u)
	hash := func(tools []Tool) string {
		for _, tool := range tools {
			if tool.Remote == "echo" {
				return tool.Hash
			}
		}
		return ""
	}
	before := hash(tools)
	if err := os.WriteFile(descFile, []byte("Version two."), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Call(context.Background(), "crash", nil, nil); err == nil {
		t.Fatal("crash answered")
	}
	waitSignal(t, changed, "OnToolsChanged after the replacement process listed its tools")
	var echo Tool
	for _, tool := range u.Tools() {
		if tool.Remote == "echo" {
			echo = tool
		}
	}
	if echo.Hash == before || !echo.Quarantined {
		t.Errorf("echo after the replacement: hash %s (before %s), quarantined %t; want the new definition, quarantined", echo.Hash, before, echo.Quarantined)
	}
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30s", what)
	}
}
