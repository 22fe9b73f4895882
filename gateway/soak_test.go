package gateway_test

// The soak: many client sessions over streamable HTTP calling an echo tool for a long
// time, each call with a deadline, on both fronts built on the go-sdk's streamable
// HTTP server:
//
//	bareproxy  SDK client -> streamable HTTP -> in-process SDK server whose echo
//	           forwards over stdio to a pool of faultserver processes (no Warden code
//	           on the path)
//	governed   SDK client -> streamable HTTP -> Gateway.MCPHandler (bearer auth,
//	           policy, audit journal to SQLite) -> stdio -> faultserver
//
// Every call must be answered, with its own text, before its deadline. A call that is
// not fails the test, and its first occurrence per front writes, before the client
// gives up on it, the goroutine profile (debug=2) of the whole test process (client,
// HTTP server, gateway or proxy) to a file, with the trace of every call then in
// flight: when the client sent the POST, when the server received it, wrote and
// flushed the answer and returned, when the client got the response's headers and
// read the answer. The trace and the profile say on which side the answer stopped.
//
// Below HTTP, on the stdio leg to the fault servers, every connection remembers the
// ids and methods of its last 256 messages (the gateway's in upstream's transport,
// see upstream.StdioWireLogs; the bare proxy's in a recorder around the SDK's
// CommandTransport), and every fault server its own (faultserver -wire-dump). At
// the first miss the dump file gets both, and the test logs, for each call written
// to a server over half the call timeout before and not answered, whether the
// server received it and sent a response, and whether a response with its id was
// read back and handed to the SDK. (A fault server still starting when it is
// signalled for its log is killed by the signal: only at a miss.)
//
//	WARDEN_SOAK=short go test -run TestSoak -v -count=1 ./gateway/   # 25 s per front
//	WARDEN_SOAK=10m   go test -run TestSoak -v -count=1 -timeout 30m ./gateway/
//
// The value of WARDEN_SOAK is the duration per front ("short" = 25s); without it the
// test is skipped. WARDEN_SOAK_CONC sets the number of sessions (default 16);
// WARDEN_SOAK_IDLE the idle connections the client keeps (default 4 per session; 0
// for Go's default of 2, so connections churn); WARDEN_SOAK_TIMEOUT the deadline of
// one call (default 10s, ten thousand times a normal call's latency);
// WARDEN_SOAK_DUMP the directory of the profile files (default: the system's
// temporary directory, so the file outlives the test); WARDEN_SOAK_SERVER_ARGS
// more arguments of every fault server (e.g. -blocking-stdin, which lets a fault
// server stall in the Go 1.26 runtime as internal/repro/stwsyscall shows: the
// gateway's stdio connections must still answer every call, by their ping).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/upstream"
)

const soakToken = "soak-token-0123456789abcdef"

// soakSettings are the soak's knobs, read from the environment.
type soakSettings struct {
	perFront time.Duration
	conc     int
	timeout  time.Duration
	dumpDir  string
	// serverArgs are appended to every fault server's arguments.
	serverArgs []string
	// idle is the client transport's MaxIdleConnsPerHost: by default 4 per
	// session, so connections are reused; Go's default (2 per host, what an SDK
	// client gets from http.DefaultClient) makes the sessions open and close
	// connections all the time.
	idle int
}

func soakFromEnv(t *testing.T) soakSettings {
	mode := os.Getenv("WARDEN_SOAK")
	if mode == "" {
		t.Skip("set WARDEN_SOAK=short (25s per front) or WARDEN_SOAK=<duration> (e.g. 10m) to run the streamable HTTP soak")
	}
	s := soakSettings{conc: 16, timeout: 10 * time.Second, dumpDir: os.Getenv("WARDEN_SOAK_DUMP"), serverArgs: strings.Fields(os.Getenv("WARDEN_SOAK_SERVER_ARGS"))}
	if mode == "short" {
		s.perFront = 25 * time.Second
	} else {
		d, err := time.ParseDuration(mode)
		if err != nil || d <= 0 {
			t.Fatalf("WARDEN_SOAK=%q: want short or a positive Go duration such as 10m", mode)
		}
		s.perFront = d
	}
	if v := os.Getenv("WARDEN_SOAK_CONC"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WARDEN_SOAK_CONC=%q: want a positive number of sessions", v)
		}
		s.conc = n
	}
	if v := os.Getenv("WARDEN_SOAK_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("WARDEN_SOAK_TIMEOUT=%q: want a positive Go duration such as 10s", v)
		}
		s.timeout = d
	}
	s.idle = 4 * s.conc
	if v := os.Getenv("WARDEN_SOAK_IDLE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("WARDEN_SOAK_IDLE=%q: want the number of idle connections the client keeps (0: Go's default, 2)", v)
		}
		s.idle = n
	}
	if s.dumpDir == "" {
		s.dumpDir = os.TempDir()
	}
	return s
}

func TestSoak(t *testing.T) {
	s := soakFromEnv(t)
	soakServer(t)
	for _, front := range []struct {
		name  string
		start func(*testing.T, soakSettings, *soakProbe) *soakTarget
	}{
		{"bareproxy", startSoakBareProxy},
		{"governed", startSoakGateway},
	} {
		t.Run(front.name, func(t *testing.T) {
			probe := &soakProbe{}
			r := front.start(t, s, probe).run(s, probe)
			t.Logf("%s: %d sessions for %s: %d calls answered (%.0f/s), %d errors, %d unanswered within %s, slowest answer %s",
				front.name, s.conc, r.elapsed.Round(time.Millisecond), r.answered, float64(r.answered)/r.elapsed.Seconds(),
				r.errors, r.unanswered, s.timeout, r.slowest.Round(time.Microsecond))
			for _, c := range r.unansweredCalls {
				t.Errorf("%s: %s", front.name, c)
			}
			if r.wireVerdict != "" {
				t.Logf("%s: the upstream stdio leg at the first miss:\n%s", front.name, r.wireVerdict)
			}
			if r.unanswered > 0 {
				t.Errorf("%s: %d of %d calls got no answer within %s; goroutine profile and traces at the first: %s (%v)",
					front.name, r.unanswered, r.answered+r.errors+r.unanswered, s.timeout, r.dumpFile, r.dumpErr)
			}
			if r.errors > 0 {
				t.Errorf("%s: %d calls were answered with an error (first: %v)", front.name, r.errors, r.firstErr)
			}
			if r.answered == 0 {
				t.Errorf("%s: no call was answered", front.name)
			}
		})
	}
}

// soakServer builds the fault server, copies it into a directory of t's own and puts
// that directory first on PATH until t ends: the gateway's transport policy accepts
// only bare command names.
func soakServer(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(mcptest.BuildBinary(t, "./internal/faultserver"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "faultserver"), data, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// soakTarget is one front: its client sessions and the echo tool's name there.
type soakTarget struct {
	name     string
	tool     string
	sessions []*mcp.ClientSession
	// args are the arguments of the call tagged tag; nil: {"text": tag}, which the
	// echo tool answers and the probe follows the call by.
	args func(tag string) map[string]any
}

type soakResult struct {
	answered, errors, unanswered int64
	firstErr                     error
	slowest                      time.Duration
	elapsed                      time.Duration
	// unansweredCalls describes each unanswered call with its trace; dumpFile is
	// the file the first one's profile went to ("" if writing it failed: dumpErr).
	unansweredCalls []string
	dumpFile        string
	dumpErr         error
	// wireVerdict says, from the stdio wire logs, what became of the calls
	// outstanding on the upstream stdio leg at the first miss.
	wireVerdict string
}

// run calls the echo tool from one goroutine per session until s.perFront has
// passed; each goroutine makes at least one call.
func (st *soakTarget) run(s soakSettings, probe *soakProbe) soakResult {
	var (
		r                 soakResult
		mu                sync.Mutex // guards r's counts and lists
		errOnce, dumpOnce sync.Once
		wg                sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(s.perFront)
	for i, cs := range st.sessions {
		wg.Go(func() {
			for n := 0; n == 0 || time.Now().Before(deadline); n++ {
				tag := fmt.Sprintf("soak/%s/s%d/n%d", st.name, i, n)
				tr := probe.begin(tag, cs.ID())
				ctx, cancel := context.WithCancel(context.Background())
				// At the deadline: first the profile, while every goroutine of the
				// call still stands where it stopped; then the cancellation.
				var timedOut atomic.Bool
				timer := time.AfterFunc(s.timeout, func() {
					timedOut.Store(true)
					tr.note("client: no answer after %s", s.timeout)
					dumpOnce.Do(func() {
						file, verdict, err := probe.dump(s, st.name, tr)
						mu.Lock()
						r.dumpFile, r.wireVerdict, r.dumpErr = file, verdict, err
						mu.Unlock()
					})
					cancel()
				})
				began := time.Now()
				args := map[string]any{"text": tag}
				if st.args != nil {
					args = st.args(tag)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: st.tool, Arguments: args})
				took := time.Since(began)
				timer.Stop()
				cancel()
				mu.Lock()
				switch {
				case err != nil && timedOut.Load():
					r.unanswered++
					r.unansweredCalls = append(r.unansweredCalls, fmt.Sprintf("call %s (JSON-RPC id %s, session %s) got no answer within %s (then: %v); its trace:\n%s",
						tag, tr.rpcID(), cs.ID(), s.timeout, err, tr.String()))
				case err != nil:
					r.errors++
					errOnce.Do(func() { r.firstErr = fmt.Errorf("call %s: %w", tag, err) })
				default:
					if got := soakText(res); res.IsError || got != tag {
						r.errors++
						errOnce.Do(func() { r.firstErr = fmt.Errorf("call %s: answered %q (tool error %v)", tag, got, res.IsError) })
					} else {
						r.answered++
					}
				}
				r.slowest = max(r.slowest, took)
				mu.Unlock()
				probe.end(tag)
			}
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	return r
}

func soakText(res *mcp.CallToolResult) string {
	if len(res.Content) != 1 {
		return fmt.Sprintf("<%d contents>", len(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("<%T>", res.Content[0])
}

// soakSessions serves h (through the probe's server side) and connects conc client
// sessions to url+path whose HTTP traffic passes through the probe's client side.
func soakSessions(t *testing.T, s soakSettings, probe *soakProbe, h http.Handler, path string) []*mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(probe.server(h))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = s.idle
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		tr.CloseIdleConnections()
	})
	c := mcp.NewClient(&mcp.Implementation{Name: "warden-soak", Version: "1"}, nil)
	out := make([]*mcp.ClientSession, s.conc)
	for i := range out {
		cs, err := mcptest.ConnectHTTP(t, c, srv.URL+path, soakToken, probe.client(tr), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = cs
	}
	return out
}

func startSoakBareProxy(t *testing.T, s soakSettings, probe *soakProbe) *soakTarget {
	c := mcp.NewClient(&mcp.Implementation{Name: "warden-soak-proxy", Version: "1"}, nil)
	idle := make(chan *mcp.ClientSession, s.conc)
	wire := &soakWire{}
	probe.wire, probe.wireDir = wire.logs, soakWireDir(t, s)
	for range s.conc {
		cs, err := c.Connect(context.Background(), wire.transport(exec.Command("faultserver", append([]string{"-wire-dump", probe.wireDir}, s.serverArgs...)...)), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		idle <- cs
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "soak-proxy", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tr := probe.lookup(req.Params.Arguments)
			tr.note("proxy: tool handler entered")
			cs := <-idle
			defer func() { idle <- cs }()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
			tr.note("proxy: upstream answered (err %v); handler returns", err)
			return res, err
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return &soakTarget{name: "bareproxy", tool: "echo", sessions: soakSessions(t, s, probe, h, "/mcp")}
}

const soakPolicy = `version: 1
roles:
  agent: [mcp__soak__echo]
active_role: agent
conditions:
  - id: no-forbidden-text
    when: 'tool == "mcp__soak__echo" && string(args.text).contains("forbidden")'
    effect: deny
    rationale: the soak never sends forbidden text
`

const soakGatewayConfig = `policy: policy.yaml
store: sqlite://audit.db
transport:
  allow_commands: true
  commands: [faultserver]
  max_connections_per_server: %d
servers:
  soak:
    command: faultserver
    args: [-wire-dump, %s%s]
listen: 127.0.0.1:0
clients:
  - principal: soak-agent
    role: agent
    token_sha256: %s
`

func startSoakGateway(t *testing.T, s soakSettings, probe *soakProbe) *soakTarget {
	dir := t.TempDir()
	probe.wire, probe.wireDir = upstream.StdioWireLogs, soakWireDir(t, s)
	var extra strings.Builder
	for _, a := range s.serverArgs {
		extra.WriteString(", " + strconv.Quote(a))
	}
	data := fmt.Appendf(nil, soakGatewayConfig, s.conc, strconv.Quote(probe.wireDir), extra.String(), inbox.HashToken(soakToken))
	mux, path := serveGatewayConfig(t, dir, data, soakPolicy, nil)
	return &soakTarget{name: "governed", tool: "mcp__soak__echo", sessions: soakSessions(t, s, probe, mux, path)}
}

// soakProbe follows every call in flight by its tag (the echo text, unique per call)
// on both sides of HTTP: the client's transport and the server's handler.
type soakProbe struct {
	calls sync.Map // tag -> *soakTrace
	keep  bool     // keep the traces of finished calls (for the probe's own test)
	// wire, when set, returns the wire logs of the front's stdio connections to
	// its fault servers, which write their own to wireDir (faultserver -wire-dump).
	wire    func() []upstream.WireLog
	wireDir string
}

// soakTrace is what was seen of one call, in order.
type soakTrace struct {
	tag, session string
	start        time.Time

	mu      sync.Mutex
	id      string
	events  []string
	changed chan struct{} // closed (and replaced) by every note
}

func (p *soakProbe) begin(tag, session string) *soakTrace {
	tr := &soakTrace{tag: tag, session: session, start: time.Now()}
	p.calls.Store(tag, tr)
	return tr
}

func (p *soakProbe) end(tag string) {
	if !p.keep {
		p.calls.Delete(tag)
	}
}

// trace returns the trace of the call tagged tag (nil if none is kept).
func (p *soakProbe) trace(tag string) *soakTrace {
	if v, ok := p.calls.Load(tag); ok {
		return v.(*soakTrace)
	}
	return nil
}

// lookup returns the trace of the call whose arguments are args (nil when the call
// is not followed: then notes are dropped).
func (p *soakProbe) lookup(args any) *soakTrace {
	var text string
	switch a := args.(type) {
	case json.RawMessage:
		var in struct {
			Text string `json:"text"`
		}
		json.Unmarshal(a, &in)
		text = in.Text
	case map[string]any:
		text, _ = a["text"].(string)
	}
	return p.trace(text)
}

// fromBody returns the trace of the tools/call a JSON-RPC POST body carries, and
// the request's id.
func (p *soakProbe) fromBody(body []byte) (*soakTrace, string) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return nil, ""
	}
	return p.lookup(msg.Params.Arguments), string(msg.ID)
}

func (tr *soakTrace) note(format string, args ...any) {
	if tr == nil {
		return
	}
	line := fmt.Sprintf("%10.3fms  ", float64(time.Since(tr.start).Microseconds())/1000) + fmt.Sprintf(format, args...)
	tr.mu.Lock()
	tr.events = append(tr.events, line)
	if tr.changed != nil {
		close(tr.changed)
		tr.changed = nil
	}
	tr.mu.Unlock()
}

// await waits until the trace holds a line with each of parts, woken by every note;
// it reports false when timeout passes first.
func (tr *soakTrace) await(timeout time.Duration, parts ...string) bool {
	expired := time.After(timeout)
	for {
		tr.mu.Lock()
		all := true
		for _, p := range parts {
			all = all && slices.ContainsFunc(tr.events, func(e string) bool { return strings.Contains(e, p) })
		}
		if tr.changed == nil {
			tr.changed = make(chan struct{})
		}
		changed := tr.changed
		tr.mu.Unlock()
		if all {
			return true
		}
		select {
		case <-changed:
		case <-expired:
			return false
		}
	}
}

func (tr *soakTrace) rpcID() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.id
}

func (tr *soakTrace) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "  call %s, JSON-RPC id %s, session %s, started %s\n", tr.tag, tr.id, tr.session, tr.start.Format(time.RFC3339Nano))
	for _, e := range tr.events {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	return b.String()
}

// dump writes the traces of every call in flight, the goroutine profile of the
// process and, when the front has a stdio leg to follow, its wire logs and the
// fault servers' own, to a new file in s.dumpDir, and returns its name and the
// verdict of the wire logs.
func (p *soakProbe) dump(s soakSettings, front string, first *soakTrace) (string, string, error) {
	f, err := os.CreateTemp(s.dumpDir, "warden-soak-"+front+"-*.txt")
	if err != nil {
		return "", "", fmt.Errorf("writing the goroutine profile: %w", err)
	}
	fmt.Fprintf(f, "Warden soak, front %s, %s: call %s (JSON-RPC id %s, session %s) got no answer.\n\nCalls in flight:\n",
		front, time.Now().UTC().Format(time.RFC3339Nano), first.tag, first.rpcID(), first.session)
	var traces []*soakTrace
	p.calls.Range(func(_, v any) bool {
		traces = append(traces, v.(*soakTrace))
		return true
	})
	slices.SortFunc(traces, func(a, b *soakTrace) int { return a.start.Compare(b.start) })
	for _, tr := range traces {
		io.WriteString(f, tr.String())
	}
	io.WriteString(f, "\nGoroutines (debug=2):\n")
	err = pprof.Lookup("goroutine").WriteTo(f, 2)
	var verdict string
	if p.wire != nil {
		verdict = p.dumpWire(f, s.timeout)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", verdict, fmt.Errorf("writing the goroutine profile to %s: %w", f.Name(), err)
	}
	return f.Name(), verdict, nil
}

// dumpWire writes the wire logs of the front's stdio connections to w, asks every
// fault server for its own (SIGUSR1, see faultserver -wire-dump) and copies them
// in, and returns what the logs say of each call written to a server at least
// timeout/2 ago and not answered: written or not, answer read back or not, and
// what the fault server received and sent with that id.
func (p *soakProbe) dumpWire(w io.Writer, timeout time.Duration) string {
	logs := p.wire()
	now := time.Now()
	for _, l := range logs {
		if err := syscall.Kill(l.PID, syscall.SIGUSR1); err != nil {
			fmt.Fprintf(w, "\nsignalling fault server %d for its wire log: %v\n", l.PID, err)
		}
	}
	var verdict strings.Builder
	for _, l := range logs {
		for _, e := range l.Outstanding() {
			if now.Sub(e.At) < timeout/2 {
				continue // a call still well within its time
			}
			fmt.Fprintf(&verdict, "  %s (%s before the dump)\n", l.Trace(e.ID), now.Sub(e.At).Round(time.Millisecond))
		}
	}
	if verdict.Len() == 0 {
		verdict.WriteString("  no call written to a server over half the call timeout ago is without its response read back (an answer that was read and lost, or a call never written)\n")
	}
	fmt.Fprintf(w, "\nStdio wire logs (%d connections):\n", len(logs))
	for _, l := range logs {
		io.WriteString(w, l.String())
	}
	// The servers write their logs on the signal; they are small and quick.
	for _, l := range logs {
		name := filepath.Join(p.wireDir, fmt.Sprintf("faultserver-%d.wire.txt", l.PID))
		var data []byte
		for wait := time.Now().Add(3 * time.Second); ; {
			var err error
			if data, err = os.ReadFile(name); err == nil || time.Now().After(wait) {
				break
			}
			time.Sleep(10 * time.Millisecond) // polling another process's file: no event to wait on
		}
		if data == nil {
			fmt.Fprintf(&verdict, "  fault server %d wrote no wire log to %s within 3s\n", l.PID, name)
			continue
		}
		fmt.Fprintf(w, "\nFault server %d's own wire log (%s):\n%s", l.PID, name, data)
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "<- no response sent") && !strings.Contains(line, "subscriptions/listen") {
				fmt.Fprintf(&verdict, "  fault server %d: %s\n", l.PID, strings.TrimSpace(line))
			}
		}
		for _, e := range l.Outstanding() {
			if now.Sub(e.At) < timeout/2 {
				continue
			}
			id := fmt.Sprintf(" id=%v ", e.ID.Raw())
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line+" ", id) {
					fmt.Fprintf(&verdict, "  fault server %d on id %v: %s\n", l.PID, e.ID.Raw(), strings.TrimSpace(line))
				}
			}
		}
	}
	return verdict.String()
}

// client wraps next so every tools/call POST and its response are noted in the
// call's trace.
func (p *soakProbe) client(next http.RoundTripper) http.RoundTripper {
	return soakClientRT{p: p, next: next}
}

type soakClientRT struct {
	p    *soakProbe
	next http.RoundTripper
}

func (rt soakClientRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return rt.next.RoundTrip(r)
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, err
	}
	data, _ := io.ReadAll(body)
	tr, id := rt.p.fromBody(data)
	if tr == nil {
		return rt.next.RoundTrip(r)
	}
	tr.mu.Lock()
	tr.id = id
	tr.mu.Unlock()
	tr.note("client: POST sent (session %s)", r.Header.Get("Mcp-Session-Id"))
	resp, err := rt.next.RoundTrip(r)
	if err != nil {
		tr.note("client: POST failed: %v", err)
		return nil, err
	}
	tr.note("client: response headers: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	resp.Body = &soakClientBody{ReadCloser: resp.Body, tr: tr}
	return resp, nil
}

// soakClientBody notes when the client reads the answer, the end of the body, and
// its closing.
type soakClientBody struct {
	io.ReadCloser
	tr       *soakTrace
	seen     []byte
	answered bool
}

func (b *soakClientBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.answered && n > 0 {
		b.seen = append(b.seen, p[:n]...)
		if bytes.Contains(b.seen, []byte(b.tr.tag)) {
			b.answered = true
			b.tr.note("client: read the answer from the body (%d bytes so far)", len(b.seen))
		}
	}
	if err != nil {
		b.tr.note("client: body read ended: %v", err)
	}
	return n, err
}

func (b *soakClientBody) Close() error {
	b.tr.note("client: body closed")
	return b.ReadCloser.Close()
}

// server wraps h so every tools/call POST is noted in its call's trace: received,
// answer written and flushed, handler returned.
func (p *soakProbe) server(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		tr, _ := p.fromBody(data)
		if tr == nil {
			h.ServeHTTP(w, r)
			return
		}
		tr.note("server: POST received")
		sw := &soakServerWriter{ResponseWriter: w, tr: tr}
		h.ServeHTTP(sw, r)
		tr.note("server: handler returned (request context: %v)", r.Context().Err())
	})
}

type soakServerWriter struct {
	http.ResponseWriter
	tr       *soakTrace
	written  bool // the answer was written
	flushed  bool // and flushed after that
	seenBody []byte
}

func (w *soakServerWriter) WriteHeader(code int) {
	w.tr.note("server: WriteHeader %d %s", code, w.Header().Get("Content-Type"))
	w.ResponseWriter.WriteHeader(code)
}

func (w *soakServerWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if !w.written {
		w.seenBody = append(w.seenBody, p[:n]...)
		if bytes.Contains(w.seenBody, []byte(w.tr.tag)) {
			w.written = true
			w.tr.note("server: answer written (%d bytes, err %v)", len(w.seenBody), err)
		}
	}
	return n, err
}

func (w *soakServerWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	if w.written && !w.flushed {
		w.flushed = true
		w.tr.note("server: answer flushed")
	}
}

// Unwrap lets http.ResponseController reach the server's own writer.
func (w *soakServerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// soakWireDir makes the directory into which the fault servers of one front write
// their wire logs, under s.dumpDir so that it outlives the test; it is removed at
// the end of t when nothing was written into it.
func soakWireDir(t *testing.T, s soakSettings) string {
	t.Helper()
	dir, err := os.MkdirTemp(s.dumpDir, "warden-soak-wire-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) }) // fails, keeping it, when not empty
	return dir
}

// soakWire records, for the bare proxy, what upstream's stdio transport records for
// the gateway (see upstream.StdioWireLogs) over the SDK's CommandTransport: the last
// messages of each connection, as they pass its Write and Read. The SDK's reader
// is out of sight: a message is recorded read and delivered when Read returns it.
type soakWire struct {
	mu    sync.Mutex
	conns []*soakWireConn
}

func (w *soakWire) transport(cmd *exec.Cmd) mcp.Transport {
	return soakWireTransport{w: w, cmd: cmd}
}

func (w *soakWire) logs() []upstream.WireLog {
	w.mu.Lock()
	conns := slices.Clone(w.conns)
	w.mu.Unlock()
	logs := make([]upstream.WireLog, 0, len(conns))
	for _, c := range conns {
		logs = append(logs, c.snapshot())
	}
	return logs
}

type soakWireTransport struct {
	w   *soakWire
	cmd *exec.Cmd
}

func (t soakWireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := (&mcp.CommandTransport{Command: t.cmd}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &soakWireConn{Connection: conn, pid: t.cmd.Process.Pid, started: time.Now()}
	t.w.mu.Lock()
	t.w.conns = append(t.w.conns, c)
	t.w.mu.Unlock()
	return c, nil
}

type soakWireConn struct {
	mcp.Connection
	pid     int
	started time.Time

	mu      sync.Mutex
	next    int
	counts  [upstream.WireDelivered + 1]uint64
	entries [256]upstream.WireEntry
}

func (c *soakWireConn) record(msg jsonrpc.Message, stages ...upstream.WireStage) {
	e := upstream.WireEntry{At: time.Now()}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		e.ID, e.Method = m.ID, m.Method
	case *jsonrpc.Response:
		e.ID, e.Response, e.Error = m.ID, true, m.Error != nil
	}
	c.mu.Lock()
	for _, st := range stages {
		e.Stage = st
		c.entries[c.next%len(c.entries)] = e
		c.next++
		c.counts[st]++
	}
	c.mu.Unlock()
}

func (c *soakWireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.record(msg, upstream.WireWritten)
	err := c.Connection.Write(ctx, msg)
	if err != nil {
		c.record(msg, upstream.WireWriteFailed)
	}
	return err
}

func (c *soakWireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.record(msg, upstream.WireRead, upstream.WireDelivered)
	}
	return msg, err
}

func (c *soakWireConn) snapshot() upstream.WireLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := upstream.WireLog{PID: c.pid, Started: c.started, Counts: c.counts}
	n := min(c.next, len(c.entries))
	for i := c.next - n; i < c.next; i++ {
		l.Entries = append(l.Entries, c.entries[i%len(c.entries)])
	}
	return l
}
