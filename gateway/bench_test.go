package gateway_test

// Gateway overhead: the same MCP client calling one echo tool through several paths,
// in one process and one run.
//
//	direct/stdio        SDK client -> stdio (CommandTransport) -> faultserver
//	direct/http         SDK client -> streamable HTTP -> in-process SDK server (no hop
//	                    beyond HTTP: shows the HTTP transport's own cost)
//	gateway/bareproxy   SDK client -> streamable HTTP -> in-process SDK server whose
//	                    echo forwards over stdio to faultserver (no governance: the
//	                    floor for any HTTP-to-stdio proxy built on the SDK)
//	gateway/mcpproxy    SDK client -> streamable HTTP -> the npm package mcp-proxy
//	                    (Node.js, no governance) -> stdio -> faultserver; skipped
//	                    unless WARDEN_BENCH_MCP_PROXY names its program or mcp-proxy is
//	                    on PATH (scripts/bench-gateway.sh installs a pinned copy)
//	gateway/governed    SDK client -> streamable HTTP -> Gateway.MCPHandler, mounted as
//	                    `warden serve` mounts it (bearer auth, role policy + CEL
//	                    condition, audit journal to SQLite in t.TempDir with the
//	                    default synchronous=FULL) -> stdio -> faultserver
//	gateway/syncnormal  gateway/governed with the store's sync=normal (no fsync per
//	                    commit), to show what the audit log's durability costs
//	gateway/postgres    gateway/governed with the audit log in PostgreSQL (a fresh
//	                    schema of WARDEN_TEST_POSTGRES_DSN; skipped when it is unset)
//	gateway/auditoff    gateway/governed with a store that drops the audit log's
//	                    writes (pins and approvals still go to SQLite): what the
//	                    governance costs without the journal. A benchmark-only
//	                    configuration of this file, never one the product offers.
//
// Concurrency: conc8 runs 8 goroutines, each with its own client session, so every
// path may use 8 upstream processes: direct/stdio has 8 sessions (8 processes), the
// bare proxy a pool of 8, the gateway max_connections_per_server: 8; mcp-proxy
// multiplexes every session onto its one upstream process, as it is built to.
// Allocation counts are the whole test process's: the client, and the proxy or
// gateway for the in-process HTTP paths; the faultserver and mcp-proxy processes are
// not counted. As `warden serve` does, the GC target is raised to 400% while
// measuring unless GOGC is set.
//
//	go test -run '^$' -bench 'Direct|Gateway' -benchtime 2000x -count 5 ./gateway/
//	WARDEN_BENCH=1 go test -run TestGatewayOverhead -v -count=1 ./gateway/
//	bash scripts/bench-gateway.sh      # the table, the store benchmarks, the floor
//
// TestGatewayOverhead (bench_table_test.go) measures every path in interleaved rounds
// and prints the markdown table; it checks the targets (gateway p50 <= 1.6x
// direct/stdio p50; gateway conc8 throughput >= 60% of direct/stdio) and fails on a
// miss only when WARDEN_BENCH_STRICT=1.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/sqlite" // registers sqlite://
)

const (
	benchConc  = 8
	benchText  = "warden gateway benchmark payload 0123456789"
	benchToken = "bench-token-0123456789abcdef"
)

var benchArgs = json.RawMessage(`{"text":"` + benchText + `"}`)

// benchTarget is one path to the echo tool: benchConc client sessions (the
// sequential runs use the first) and the tool's name on that path.
type benchTarget struct {
	name     string
	tool     string
	sessions []*mcp.ClientSession
}

func (bt *benchTarget) call(ctx context.Context, i int) error {
	res, err := bt.sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: bt.tool, Arguments: benchArgs})
	if err != nil {
		return fmt.Errorf("%s: %w", bt.name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("%s: unexpected result %+v", bt.name, res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != benchText {
		return fmt.Errorf("%s: unexpected content %+v", bt.name, res.Content[0])
	}
	return nil
}

// warm makes a few calls on every session.
func (bt *benchTarget) warm(tb testing.TB) {
	tb.Helper()
	for i := range bt.sessions {
		for range 20 {
			if err := bt.call(context.Background(), i); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// runConc makes calls from benchConc goroutines, one session each, until n calls are
// claimed (n > 0) or the deadline passes (n == 0). It returns the calls made.
func (bt *benchTarget) runConc(n int64, deadline time.Time) (int64, error) {
	var (
		claimed, done atomic.Int64
		wg            sync.WaitGroup
		errOnce       sync.Once
		firstErr      error
	)
	for i := range bt.sessions {
		wg.Go(func() {
			for {
				if n > 0 && claimed.Add(1) > n {
					return
				}
				if n == 0 && !time.Now().Before(deadline) {
					return
				}
				if err := bt.call(context.Background(), i); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return done.Load(), firstErr
}

// needBenchServer builds the fault server, copies it into a directory of tb's own and
// puts that directory first on PATH until tb ends: the transport policy accepts only
// bare command names. (The copy keeps the run independent of the shared build
// directory, which other processes may clean up.)
func needBenchServer(tb testing.TB) {
	tb.Helper()
	data, err := os.ReadFile(mcptest.BuildBinary(tb, "./internal/faultserver"))
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "faultserver"), data, 0o700); err != nil {
		tb.Fatal(err)
	}
	tb.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// benchGC raises the GC target as `warden serve` does, unless GOGC is set.
func benchGC(tb testing.TB) {
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(400)
		tb.Cleanup(func() { debug.SetGCPercent(old) })
	}
}

func benchClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "warden-bench", Version: "1"}, nil)
}

func stdioSession(tb testing.TB, c *mcp.Client) *mcp.ClientSession {
	tb.Helper()
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command("faultserver")}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// httpSessions serves h and connects benchConc client sessions to url+path. Every
// HTTP path sends the token, so each pays the same client-side cost; only the gateway
// checks it.
func httpSessions(tb testing.TB, h http.Handler, path string) []*mcp.ClientSession {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return connectSessions(tb, srv.URL+path)
}

// connectSessions connects benchConc client sessions to the streamable HTTP endpoint
// url, sharing one HTTP transport; they are closed when tb ends.
func connectSessions(tb testing.TB, url string) []*mcp.ClientSession {
	tb.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4 * benchConc // each session also holds its standalone SSE stream
	tb.Cleanup(tr.CloseIdleConnections)
	c := benchClient()
	out := make([]*mcp.ClientSession, benchConc)
	for i := range out {
		cs, err := mcptest.ConnectHTTP(tb, c, url, benchToken, tr, 30*time.Second)
		if err != nil {
			tb.Fatalf("connecting to %s: %v", url, err)
		}
		out[i] = cs
	}
	return out
}

func startDirectStdio(tb testing.TB) *benchTarget {
	needBenchServer(tb)
	c := benchClient()
	bt := &benchTarget{name: "direct/stdio", tool: "echo"}
	for range benchConc {
		bt.sessions = append(bt.sessions, stdioSession(tb, c))
	}
	bt.warm(tb)
	return bt
}

type echoIn struct {
	Text string `json:"text"`
}

func startDirectHTTP(tb testing.TB) *benchTarget {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	bt := &benchTarget{name: "direct/http", tool: "echo", sessions: httpSessions(tb, h, "/mcp")}
	bt.warm(tb)
	return bt
}

func startBareProxy(tb testing.TB) *benchTarget {
	needBenchServer(tb)
	c := benchClient()
	// A LIFO pool, as the gateway's: sequential calls reuse the same warm process.
	var (
		mu   sync.Mutex
		idle []*mcp.ClientSession
		sem  = make(chan struct{}, benchConc)
	)
	for range benchConc {
		idle = append(idle, stdioSession(tb, c))
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-proxy", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sem <- struct{}{}
			mu.Lock()
			cs := idle[len(idle)-1]
			idle = idle[:len(idle)-1]
			mu.Unlock()
			defer func() {
				mu.Lock()
				idle = append(idle, cs)
				mu.Unlock()
				<-sem
			}()
			return cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	bt := &benchTarget{name: "gateway/bareproxy", tool: "echo", sessions: httpSessions(tb, h, "/mcp")}
	bt.warm(tb)
	return bt
}

const benchPolicy = `version: 1
roles:
  agent: [mcp__bench__echo, mcp__bench__slow]
active_role: agent
conditions:
  - id: no-forbidden-text
    when: 'tool == "mcp__bench__echo" && string(args.text).contains("forbidden")'
    effect: deny
    rationale: the benchmark never sends forbidden text
`

const benchGatewayConfig = `policy: policy.yaml
store: %q
transport:
  allow_commands: true
  commands: [faultserver]
  max_connections_per_server: %d
servers:
  bench:
    command: faultserver
listen: 127.0.0.1:0
clients:
  - principal: bench-agent
    role: agent
    token_sha256: %s
`

// serveGatewayConfig writes data as gateway.yaml and policy as policy.yaml in dir,
// opens the configured store (closed when tb ends; a non-nil wrap replaces the store
// the gateway is given) and starts the gateway. It returns a mux serving the MCP
// endpoint, and the endpoint's path.
func serveGatewayConfig(tb testing.TB, dir string, data []byte, policy string, wrap func(store.Store) store.Store) (*http.ServeMux, string) {
	tb.Helper()
	file := mcptest.WriteFile(tb, dir, "gateway.yaml", data)
	mcptest.WriteFile(tb, dir, "policy.yaml", []byte(policy))
	cfg, err := gateway.ParseFile(file, data, func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	st, err := store.Open(context.Background(), cfg.Store)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	var gst store.Store = st
	if wrap != nil {
		gst = wrap(st)
	}
	gw, err := gateway.New(cfg, &gateway.Options{Store: gst})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { gw.Close(context.Background()) })
	if err := gw.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := gw.Ready(); err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(cfg.Path, gw.MCPHandler())
	return mux, cfg.Path
}

// startGateway runs a Gateway behind its HTTP front, as `warden serve` mounts it,
// with its store at dsn ("" for SQLite in a temporary directory with the default
// synchronous=FULL). A non-nil wrap replaces the store the gateway is given (the
// audit-off variant); the store opened is closed when tb ends.
func startGateway(tb testing.TB, name, dsn string, wrap func(store.Store) store.Store) *benchTarget {
	tb.Helper()
	needBenchServer(tb)
	dir := tb.TempDir()
	if dsn == "" {
		dsn = "sqlite://audit.db"
	}
	data := fmt.Appendf(nil, benchGatewayConfig, dsn, benchConc, inbox.HashToken(benchToken))
	mux, path := serveGatewayConfig(tb, dir, data, benchPolicy, wrap)
	bt := &benchTarget{name: name, tool: "mcp__bench__echo", sessions: httpSessions(tb, mux, path)}
	// Fill the upstream pool: benchConc overlapping slow calls each hold a connection.
	var wg sync.WaitGroup
	for _, cs := range bt.sessions {
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__bench__slow", Arguments: map[string]any{"ms": 300}})
			if err != nil || res.IsError {
				tb.Errorf("warming the pool: %v %+v", err, res)
			}
		})
	}
	wg.Wait()
	bt.warm(tb)
	return bt
}

// benchPath is one measured path: its benchmark name, its row in the table, and how
// to start it.
type benchPath struct {
	name string // the benchmark's name: direct/... or gateway/...
	row  string // the row's label in TestGatewayOverhead's table
	// main marks a row of the table; the others are printed below it.
	main bool
	// unavailable says why the path cannot run here ("" when it can): a missing
	// optional peer or database. The benchmark skips, the table prints the reason.
	unavailable func() string
	start       func(testing.TB) *benchTarget
}

// benchPaths lists every path, direct/stdio (the reference) first.
func benchPaths() []benchPath {
	return []benchPath{
		{name: "direct/stdio", row: "direct stdio (reference)", main: true, start: startDirectStdio},
		{name: "gateway/bareproxy", row: "bare go-sdk proxy (no governance)", main: true, start: startBareProxy},
		{name: "gateway/mcpproxy", row: "npm `mcp-proxy` (no governance)", main: true, unavailable: mcpProxyUnavailable, start: startMCPProxy},
		{name: "gateway/governed", row: "warden serve, SQLite default (synchronous=FULL audit)", main: true,
			start: func(tb testing.TB) *benchTarget { return startGateway(tb, "gateway/governed", "", nil) }},
		{name: "gateway/postgres", row: "warden serve, PostgreSQL", main: true, unavailable: postgresUnavailable, start: startPostgresGateway},
		{name: "gateway/auditoff", row: "gateway with the audit off (benchmark only)", main: true, start: startAuditOffGateway},
		{name: "direct/http", row: "direct streamable HTTP, in-process SDK server", start: startDirectHTTP},
		{name: "gateway/syncnormal", row: "warden serve, SQLite sync=normal (no fsync per commit)",
			start: func(tb testing.TB) *benchTarget {
				return startGateway(tb, "gateway/syncnormal", "sqlite://audit.db?sync=normal", nil)
			}},
	}
}

func benchVariant(b *testing.B, p benchPath) {
	if p.unavailable != nil {
		if why := p.unavailable(); why != "" {
			b.Skip(why)
		}
	}
	benchGC(b)
	bt := p.start(b)
	b.Run("seq", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			if err := bt.call(ctx, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
	b.Run(fmt.Sprintf("conc%d", benchConc), func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		if _, err := bt.runConc(int64(b.N), time.Time{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
}

func BenchmarkDirect(b *testing.B) {
	for _, p := range benchPaths() {
		if name, ok := strings.CutPrefix(p.name, "direct/"); ok {
			b.Run(name, func(b *testing.B) { benchVariant(b, p) })
		}
	}
}

func BenchmarkGateway(b *testing.B) {
	for _, p := range benchPaths() {
		if name, ok := strings.CutPrefix(p.name, "gateway/"); ok {
			b.Run(name, func(b *testing.B) { benchVariant(b, p) })
		}
	}
}
