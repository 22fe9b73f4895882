package mcp_test

// Progress pass-through, with real processes: the fault server's progress tool sends
// notifications/progress with the request's token while it serves a call; the
// Upstream hands those of the call in flight to the call's hook, and the gateway
// sends them on to the calling client with the client's own token.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/mcp"
	"github.com/wardenhq/warden/store"
)

// progressLog records progress notifications, in the order they arrive.
type progressLog struct {
	mu   sync.Mutex
	list []sdk.ProgressNotificationParams
}

func (l *progressLog) add(p *sdk.ProgressNotificationParams) {
	l.mu.Lock()
	l.list = append(l.list, *p)
	l.mu.Unlock()
}

func (l *progressLog) all() []sdk.ProgressNotificationParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sdk.ProgressNotificationParams(nil), l.list...)
}

func (l *progressLog) len() int { return len(l.all()) }

// clientOptions is an SDK client's options recording every progress notification.
func (l *progressLog) clientOptions() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			l.add(req.Params)
		},
	}
}

// wantSteps checks that got is exactly the fault server's n steps, in order, each
// with token.
func wantSteps(t *testing.T, got []sdk.ProgressNotificationParams, n int, token any) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d progress notifications, want %d: %+v", len(got), n, got)
	}
	for i, p := range got {
		step := i + 1
		if p.ProgressToken != token || p.Progress != float64(step) || p.Total != float64(n) || p.Message != fmt.Sprintf("step %d of %d", step, n) {
			t.Errorf("notification %d: %+v, want token %v, progress %d of %d", i, p, token, step, n)
		}
	}
}

// progressUpstream starts an Upstream of the fault server (built and put on PATH)
// logging at debug level into log, and discovers it.
func progressUpstream(t *testing.T, log *mcptest.LogBuffer) *mcp.Upstream {
	t.Helper()
	mcptest.PeersOnPATH(t, "./mcp/internal/faultserver")
	return discoveredUpstream(t, log, mcp.ServerConfig{Name: "fault", Command: "faultserver"},
		&mcp.TransportPolicy{AllowCommands: true, Commands: []string{"faultserver"}})
}

// discoveredUpstream returns a discovered Upstream of cfg, logging at debug level
// into log, closed when t ends.
func discoveredUpstream(t *testing.T, log *mcptest.LogBuffer, cfg mcp.ServerConfig, policy *mcp.TransportPolicy) *mcp.Upstream {
	t.Helper()
	log.LogOnFailure(t, "upstream log")
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "pins.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u, err := mcp.NewUpstream(cfg, mcp.UpstreamOptions{
		Policy: policy,
		Pins:   st,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := u.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := u.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	return u
}

func callProgress(t *testing.T, u *mcp.Upstream, args string, opts *mcp.CallOptions) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := u.Call(ctx, "progress", json.RawMessage(args), opts)
	if err != nil {
		t.Fatalf("progress %s: %v", args, err)
	}
	return mcptest.ResultText(res)
}

// The Upstream hands a call's progress notifications to its hook, in order, before
// Call returns; notifications with another token, or with no call in flight, are
// dropped and logged; a call without a hook sends no token.
func TestUpstreamProgress(t *testing.T) {
	log := &mcptest.LogBuffer{}
	u := progressUpstream(t, log)

	for round := range 3 { // the same pooled connection serves every round
		var got progressLog
		var returned, late atomic.Bool
		opts := &mcp.CallOptions{Progress: func(ctx context.Context, p *sdk.ProgressNotificationParams) {
			if returned.Load() {
				late.Store(true)
			}
			if ctx.Err() != nil {
				t.Errorf("the hook's context has ended: %v", ctx.Err())
			}
			got.add(p)
		}}
		if text := callProgress(t, u, `{"n":5,"stray":true,"late":true}`, opts); text != "sent 5" {
			t.Fatalf("round %d: result %q", round, text)
		}
		returned.Store(true)
		list := got.all()
		if len(list) == 0 {
			t.Fatalf("round %d: no progress notification reached the hook", round)
		}
		token, ok := list[0].ProgressToken.(string)
		if !ok || !strings.HasPrefix(token, "warden-") {
			t.Fatalf("round %d: the upstream got the token %#v, want one of the Upstream's own", round, list[0].ProgressToken)
		}
		wantSteps(t, list, 5, token)

		// The late notification (100ms after the answer) finds no call in flight.
		mcptest.WaitFor(t, 10*time.Second, "the late notification is dropped", func() bool {
			return log.Count("progress notification dropped: no call asking for progress") == round+1
		})
		if late.Load() || got.len() != 5 {
			t.Errorf("round %d: the hook ran after Call returned (%d notifications)", round, got.len())
		}
	}
	if n := log.Count("progress notification dropped: its token is not the call's"); n != 6 {
		t.Errorf("%d stray notifications logged as dropped, want 6 (2 a round)", n)
	}

	// No hook: no token is sent, so the upstream sends nothing.
	if text := callProgress(t, u, `{"n":3}`, nil); text != "no progress token" {
		t.Errorf("without a hook: %q", text)
	}
	if text := callProgress(t, u, `{"n":3}`, &mcp.CallOptions{}); text != "no progress token" {
		t.Errorf("with a nil hook: %q", text)
	}

	// A slow hook never stalls the connection: what does not fit its queue is
	// dropped, the rest arrives in order, and the call ends about when the hook has
	// seen what was queued.
	var got progressLog
	slow := &mcp.CallOptions{Progress: func(_ context.Context, p *sdk.ProgressNotificationParams) {
		time.Sleep(20 * time.Millisecond)
		got.add(p)
	}}
	start := time.Now()
	if text := callProgress(t, u, `{"n":200}`, slow); text != "sent 200" {
		t.Fatalf("slow hook: result %q", text)
	}
	took := time.Since(start)
	list := got.all()
	if len(list) == 0 || len(list) >= 200 {
		t.Errorf("slow hook saw %d of 200 notifications; want some, the rest dropped", len(list))
	}
	for i := 1; i < len(list); i++ {
		if list[i].Progress <= list[i-1].Progress {
			t.Errorf("out of order: %v after %v", list[i].Progress, list[i-1].Progress)
		}
	}
	if took > 3*time.Second {
		t.Errorf("the call with a slow hook took %s (200 notifications at 20ms would be 4s)", took)
	}
	if log.Count("progress notifications dropped: the call's queue was full") != 1 {
		t.Errorf("the drops were not logged")
	}
	t.Logf("slow hook: %d of 200 notifications seen, call took %s", len(list), took)
}

// A url server's progress reaches the hook too (the SDK's streamable connection
// cannot be wrapped to count what it reads, so Call waits for a quiet moment).
func TestUpstreamProgressURL(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "http-progress", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "progress"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct {
		N int `json:"n"`
	}) (*sdk.CallToolResult, any, error) {
		for i := 1; i <= in.N; i++ {
			err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: float64(in.N), Message: fmt.Sprintf("step %d of %d", i, in.N),
			})
			if err != nil {
				return nil, nil, err
			}
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("sent %d", in.N)}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close) // after the Upstream's Close (cleanups run last first)
	u := discoveredUpstream(t, &mcptest.LogBuffer{}, mcp.ServerConfig{Name: "web", URL: hs.URL},
		&mcp.TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}})
	for range 5 {
		var got progressLog
		text := callProgress(t, u, `{"n":10}`, &mcp.CallOptions{Progress: func(_ context.Context, p *sdk.ProgressNotificationParams) { got.add(p) }})
		if text != "sent 10" {
			t.Fatalf("result %q", text)
		}
		list := got.all()
		if len(list) == 0 {
			t.Fatal("no progress notification reached the hook")
		}
		wantSteps(t, list, 10, list[0].ProgressToken)
	}
}

// sseRecorder keeps the body of every HTTP response a client reads, in order, so a
// test can see what the gateway wrote on each stream and in which order.
type sseRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	resp []*bytes.Buffer
}

func (r *sseRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	buf := &bytes.Buffer{}
	r.mu.Lock()
	r.resp = append(r.resp, buf)
	r.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, lockedWriter{&r.mu, buf}), resp.Body}
	return resp, nil
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// stream returns, in order, the JSON-RPC messages of the response body holding the
// answer to the tools/call whose result text is text.
func (r *sseRecorder) stream(t *testing.T, text string) []map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, buf := range r.resp {
		var msgs []map[string]any
		found := false
		sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) != nil {
				continue
			}
			msgs = append(msgs, m)
			found = found || (m["result"] != nil && strings.Contains(data, text))
		}
		if found {
			return msgs
		}
	}
	t.Fatalf("no response stream holds the result %q", text)
	return nil
}

// progressPolicy is the gateway tests' policy with the fault server's progress tool in
// the writer role (the reader role does not have it).
var progressPolicy = strings.Replace(gwPolicy, "mcp__fault__pid]", "mcp__fault__pid, mcp__fault__progress]", 1)

// callWithToken calls the gateway's progress tool on cs, with token as the progress
// token unless it is nil.
func callWithToken(t *testing.T, cs *sdk.ClientSession, token any, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	params := &sdk.CallToolParams{Name: "mcp__fault__progress", Arguments: args}
	if token != nil {
		params.SetProgressToken(token)
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("call with progress token %v: %v", token, err)
	}
	return res
}

// The gateway sends an upstream's progress notifications to the calling client, with
// the client's token, ahead of the result; a client without a token and a refused
// call get none.
func TestGatewayProgress(t *testing.T) {
	e := gwStart(t, gwSetup{policy: progressPolicy})

	// A writer over HTTP, whose response streams are recorded.
	var withToken progressLog
	rec := &sseRecorder{next: e.tr}
	c := sdk.NewClient(&sdk.Implementation{Name: "progress-test", Version: "1"}, withToken.clientOptions())
	w, err := mcptest.ConnectHTTP(t, c, e.url, gwWriterToken, rec, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res := callWithToken(t, w, "client-token-1", map[string]any{"n": 5, "ms": 10, "stray": true})
	gwWant(t, res, false, "sent 5")
	// On the wire: the five notifications, with the client's token, then the result.
	msgs := rec.stream(t, "sent 5")
	if len(msgs) != 6 {
		t.Fatalf("the call's stream holds %d messages, want 5 notifications and the result: %v", len(msgs), msgs)
	}
	for i, m := range msgs[:5] {
		p, _ := m["params"].(map[string]any)
		if m["method"] != "notifications/progress" || p["progressToken"] != "client-token-1" || p["progress"] != float64(i+1) {
			t.Errorf("message %d on the call's stream: %v", i, m)
		}
	}
	if msgs[5]["result"] == nil {
		t.Errorf("the last message on the call's stream is not the result: %v", msgs[5])
	}
	// The SDK client hands them to its handler after reading them.
	mcptest.WaitFor(t, 10*time.Second, "the client has handled 5 notifications", func() bool { return withToken.len() >= 5 })
	wantSteps(t, withToken.all(), 5, "client-token-1")
	if n := e.log.Count("progress notification dropped: its token is not the call's"); n != 2 {
		t.Errorf("%d stray notifications logged as dropped, want 2", n)
	}

	// A numeric token comes back as the same number, over the stdio front too.
	var stdioLog progressLog
	s := e.connectStdio(t, stdioLog.clientOptions())
	gwWant(t, callWithToken(t, s, 77, map[string]any{"n": 3}), false, "sent 3")
	mcptest.WaitFor(t, 10*time.Second, "the stdio client has handled 3 notifications", func() bool { return stdioLog.len() >= 3 })
	wantSteps(t, stdioLog.all(), 3, float64(77))

	// Two clients at once on two upstream connections: each gets its own.
	var a, b progressLog
	ca := e.connect(t, gwWriterToken, a.clientOptions())
	cb := e.connect(t, gwBobToken, b.clientOptions())
	var (
		wg     sync.WaitGroup
		ra, rb *sdk.CallToolResult
		ea, eb error
	)
	call := func(cs *sdk.ClientSession, token string, n, ms int) (*sdk.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		params := &sdk.CallToolParams{Name: "mcp__fault__progress", Arguments: map[string]any{"n": n, "ms": ms}}
		params.SetProgressToken(token)
		return cs.CallTool(ctx, params)
	}
	wg.Go(func() { ra, ea = call(ca, "a", 20, 5) })
	wg.Go(func() { rb, eb = call(cb, "b", 15, 7) })
	wg.Wait()
	if ea != nil || eb != nil {
		t.Fatalf("concurrent calls: %v, %v", ea, eb)
	}
	gwWant(t, ra, false, "sent 20")
	gwWant(t, rb, false, "sent 15")
	mcptest.WaitFor(t, 10*time.Second, "both clients have handled theirs", func() bool {
		if a.len() >= 20 && b.len() >= 15 {
			return true
		}
		t.Logf("a: %+v\nb: %+v", a.all(), b.all())
		return false
	})
	wantSteps(t, a.all(), 20, "a")
	wantSteps(t, b.all(), 15, "b")

	// No token: the upstream is asked for no progress and the client gets none.
	var none progressLog
	n := e.connect(t, gwWriterToken, none.clientOptions())
	gwWant(t, callWithToken(t, n, nil, map[string]any{"n": 5}), false, "no progress token")

	// Refused by the policy: the reader's role lacks the tool, nothing runs upstream
	// and nothing is forwarded.
	var refused progressLog
	r := e.connect(t, gwReaderToken, refused.clientOptions())
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	params := &sdk.CallToolParams{Name: "mcp__fault__progress", Arguments: map[string]any{"n": 5}}
	params.SetProgressToken("reader-token")
	if res, err := r.CallTool(rctx, params); err == nil || !strings.Contains(err.Error(), `unknown tool "mcp__fault__progress"`) {
		t.Errorf("the reader's call of a tool its role lacks: %v, %v; want the unknown-tool error", res, err)
	}
	rcancel()
	if rec := e.lastCall(t, "mcp__fault__progress", "reader-agent"); rec.Executed || rec.Status != warden.StatusRefused {
		t.Errorf("audit of the refused call: %+v", rec)
	}

	// Give stray deliveries time to arrive before concluding there are none.
	gwWant(t, gwCall(t, n, "mcp__fault__echo", map[string]any{"text": "sync"}), false, "sync")
	time.Sleep(300 * time.Millisecond)
	if got := none.all(); len(got) != 0 {
		t.Errorf("the client without a token got %d notifications: %+v", len(got), got)
	}
	if got := refused.all(); len(got) != 0 {
		t.Errorf("the refused client got %d notifications: %+v", len(got), got)
	}
	if withToken.len() != 5 || stdioLog.len() != 3 || a.len() != 20 || b.len() != 15 {
		t.Errorf("notifications received later: %d, %d, %d, %d", withToken.len(), stdioLog.len(), a.len(), b.len())
	}
}
