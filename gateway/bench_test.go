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
//	gateway/governed    SDK client -> streamable HTTP -> Gateway.MCPHandler (bearer
//	                    auth, role policy + CEL condition, audit journal to SQLite in
//	                    t.TempDir with the default synchronous=FULL) -> stdio ->
//	                    faultserver
//	gateway/syncnormal  gateway/governed with the store's sync=normal (no fsync per
//	                    commit), to show what the audit log's durability costs
//
// Concurrency: conc8 runs 8 goroutines, each with its own client session, so every
// path may use 8 upstream processes: direct/stdio has 8 sessions (8 processes), the
// proxies a pool of 8, the gateway max_connections_per_server: 8. Allocation counts
// are the whole test process's: the client, and the proxy or gateway for the HTTP
// paths; the faultserver processes are not counted. As `warden serve` does, the GC
// target is raised to 400% while measuring unless GOGC is set.
//
//	go test -run '^$' -bench 'Direct|Gateway' -benchtime 2000x -count 5 ./mcp/
//	WARDEN_BENCH=1 go test -run TestGatewayOverhead -v -count=1 ./mcp/
//
// TestGatewayOverhead checks the targets (gateway p50 <= 1.6x direct/stdio p50;
// gateway conc8 throughput >= 60% of direct/stdio) and fails on a miss only when
// WARDEN_BENCH_STRICT=1.

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
	"slices"
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
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4 * benchConc // each session also holds its standalone SSE stream
	tb.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		tr.CloseIdleConnections()
	})
	c := benchClient()
	out := make([]*mcp.ClientSession, benchConc)
	for i := range out {
		cs, err := mcptest.ConnectHTTP(tb, c, srv.URL+path, benchToken, tr, 0)
		if err != nil {
			tb.Fatal(err)
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
store: %s
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

// startGateway runs a Gateway behind its HTTP front; syncMode is the store's sync DSN
// option ("" for the default, FULL).
func startGateway(tb testing.TB, name, syncMode string) *benchTarget {
	tb.Helper()
	needBenchServer(tb)
	dir := tb.TempDir()
	dsn := "sqlite://audit.db"
	if syncMode != "" {
		dsn += "?sync=" + syncMode
	}
	data := fmt.Appendf(nil, benchGatewayConfig, dsn, benchConc, inbox.HashToken(benchToken))
	file := mcptest.WriteFile(tb, dir, "gateway.yaml", data)
	mcptest.WriteFile(tb, dir, "policy.yaml", []byte(benchPolicy))
	cfg, err := gateway.ParseFile(file, data, func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	st, err := store.Open(context.Background(), cfg.Store)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	gw, err := gateway.New(cfg, &gateway.Options{Store: st})
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
	bt := &benchTarget{name: name, tool: "mcp__bench__echo", sessions: httpSessions(tb, mux, cfg.Path)}
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

func benchTargets() []struct {
	name  string
	start func(testing.TB) *benchTarget
} {
	return []struct {
		name  string
		start func(testing.TB) *benchTarget
	}{
		{"direct/stdio", startDirectStdio},
		{"direct/http", startDirectHTTP},
		{"gateway/bareproxy", startBareProxy},
		{"gateway/governed", func(tb testing.TB) *benchTarget { return startGateway(tb, "gateway/governed", "") }},
		{"gateway/syncnormal", func(tb testing.TB) *benchTarget { return startGateway(tb, "gateway/syncnormal", "normal") }},
	}
}

func benchVariant(b *testing.B, start func(testing.TB) *benchTarget) {
	benchGC(b)
	bt := start(b)
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
	for _, v := range benchTargets() {
		if name, ok := strings.CutPrefix(v.name, "direct/"); ok {
			b.Run(name, func(b *testing.B) { benchVariant(b, v.start) })
		}
	}
}

func BenchmarkGateway(b *testing.B) {
	for _, v := range benchTargets() {
		if name, ok := strings.CutPrefix(v.name, "gateway/"); ok {
			b.Run(name, func(b *testing.B) { benchVariant(b, v.start) })
		}
	}
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}

// TestGatewayOverhead measures every path in one run: 2000 sequential calls each,
// interleaved call by call (rotating the order), then benchConc-concurrent throughput
// for 5s each, in 1s slices rotating between the paths.
func TestGatewayOverhead(t *testing.T) {
	if os.Getenv("WARDEN_BENCH") != "1" {
		t.Skip("set WARDEN_BENCH=1 to measure the gateway's overhead")
	}
	const (
		seqCalls = 2000
		slices5  = 5
		slice    = time.Second
	)
	benchGC(t)
	var targets []*benchTarget
	for _, v := range benchTargets() {
		targets = append(targets, v.start(t))
	}
	direct, governed := targets[0], targets[3]
	ctx := context.Background()

	lat := make([][]time.Duration, len(targets))
	for i := range seqCalls {
		for k := range targets {
			j := (i + k) % len(targets)
			start := time.Now()
			if err := targets[j].call(ctx, 0); err != nil {
				t.Fatal(err)
			}
			lat[j] = append(lat[j], time.Since(start))
		}
	}
	p50 := make([]time.Duration, len(targets))
	t.Logf("sequential, %d calls each (interleaved):", seqCalls)
	for j, bt := range targets {
		slices.Sort(lat[j])
		p50[j] = percentile(lat[j], 0.50)
		t.Logf("  %-20s p50 %8s  p90 %8s  p99 %8s  (%.2fx direct/stdio p50)", bt.name,
			p50[j].Round(time.Microsecond), percentile(lat[j], 0.90).Round(time.Microsecond),
			percentile(lat[j], 0.99).Round(time.Microsecond), float64(p50[j])/float64(p50[0]))
	}

	calls := make([]int64, len(targets))
	elapsed := make([]time.Duration, len(targets))
	for r := range slices5 {
		for k := range targets {
			j := (r + k) % len(targets)
			start := time.Now()
			n, err := targets[j].runConc(0, start.Add(slice))
			if err != nil {
				t.Fatal(err)
			}
			calls[j] += n
			elapsed[j] += time.Since(start)
		}
	}
	tput := make([]float64, len(targets))
	t.Logf("%d concurrent, %s each (%d slices):", benchConc, slices5*slice, slices5)
	for j, bt := range targets {
		tput[j] = float64(calls[j]) / elapsed[j].Seconds()
		t.Logf("  %-20s %8.0f calls/s  (%3.0f%% of direct/stdio)", bt.name, tput[j], 100*tput[j]/tput[0])
	}

	p50Ratio := float64(p50[3]) / float64(p50[0])
	tputRatio := tput[3] / tput[0]
	t.Logf("%s vs %s: p50 ratio %.2fx (target <= 1.6x), conc%d throughput %.0f%% (target >= 60%%)",
		governed.name, direct.name, p50Ratio, benchConc, 100*tputRatio)
	if os.Getenv("WARDEN_BENCH_STRICT") == "1" {
		if p50Ratio > 1.6 {
			t.Errorf("gateway p50 is %.2fx direct (%s vs %s); target <= 1.6x", p50Ratio, p50[3], p50[0])
		}
		if tputRatio < 0.6 {
			t.Errorf("gateway conc%d throughput is %.0f%% of direct; target >= 60%%", benchConc, 100*tputRatio)
		}
	}
}
