package gateway_test

// Progress through the gateway, with real processes: the upstream's notifications for
// a call reach the client that made it, under the client's own progress token.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
)

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
func callWithToken(t *testing.T, cs *mcp.ClientSession, token any, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	params := &mcp.CallToolParams{Name: "mcp__fault__progress", Arguments: args}
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
	var withToken mcptest.ProgressLog
	rec := &sseRecorder{next: e.tr}
	c := mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, withToken.ClientOptions())
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
	mcptest.WantSteps(t, withToken.WaitLen(t, 5, 10*time.Second), 5, "client-token-1")
	if n := e.log.Count("progress notification dropped: its token is not the call's"); n != 2 {
		t.Errorf("%d stray notifications logged as dropped, want 2", n)
	}

	// A numeric token comes back as the same number, over the stdio front too.
	var stdioLog mcptest.ProgressLog
	s := e.connectStdio(t, stdioLog.ClientOptions())
	gwWant(t, callWithToken(t, s, 77, map[string]any{"n": 3}), false, "sent 3")
	mcptest.WantSteps(t, stdioLog.WaitLen(t, 3, 10*time.Second), 3, float64(77))

	// Two clients at once on two upstream connections: each gets its own.
	var a, b mcptest.ProgressLog
	ca := e.connect(t, gwWriterToken, a.ClientOptions())
	cb := e.connect(t, gwBobToken, b.ClientOptions())
	var (
		wg     sync.WaitGroup
		ra, rb *mcp.CallToolResult
		ea, eb error
	)
	call := func(cs *mcp.ClientSession, token string, n, ms int) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		params := &mcp.CallToolParams{Name: "mcp__fault__progress", Arguments: map[string]any{"n": n, "ms": ms}}
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
	mcptest.WantSteps(t, a.WaitLen(t, 20, 10*time.Second), 20, "a")
	mcptest.WantSteps(t, b.WaitLen(t, 15, 10*time.Second), 15, "b")

	// No token: the upstream is asked for no progress and the client gets none.
	var none mcptest.ProgressLog
	n := e.connect(t, gwWriterToken, none.ClientOptions())
	gwWant(t, callWithToken(t, n, nil, map[string]any{"n": 5}), false, "no progress token")

	// Refused by the policy: the reader's role lacks the tool, nothing runs upstream
	// and nothing is forwarded.
	var refused mcptest.ProgressLog
	rrec := &sseRecorder{next: e.tr}
	r, err := mcptest.ConnectHTTP(t, mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, refused.ClientOptions()), e.url, gwReaderToken, rrec, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	params := &mcp.CallToolParams{Name: "mcp__fault__progress", Arguments: map[string]any{"n": 5}}
	params.SetProgressToken("reader-token")
	if res, err := r.CallTool(rctx, params); err == nil || !strings.Contains(err.Error(), `unknown tool "mcp__fault__progress"`) {
		t.Errorf("the reader's call of a tool its role lacks: %v, %v; want the unknown-tool error", res, err)
	}
	rcancel()
	if rec := e.lastCall(t, "mcp__fault__progress", "reader-agent"); rec.Executed || rec.Status != warden.StatusRefused {
		t.Errorf("audit of the refused call: %+v", rec)
	}

	// The refused call's stream, read whole once the call returned, holds no progress.
	if n := rrec.count("notifications/progress"); n != 0 {
		t.Errorf("the refused client was sent %d progress notifications", n)
	}

	// Nothing else arrives: on each session, a last call with a token of its own is a
	// marker. A client handles what it reads in order, and every earlier stream was
	// read to its end before the marker's call began, so a stray delivery would be
	// handled before the marker: the marker must come right after what is expected.
	marker := func(cs *mcp.ClientSession, log *mcptest.ProgressLog, before int, token string) {
		t.Helper()
		gwWant(t, callWithToken(t, cs, token, map[string]any{"n": 1}), false, "sent 1")
		got := log.WaitLen(t, before+1, 10*time.Second)
		if len(got) != before+1 || got[before].ProgressToken != token {
			t.Errorf("%s: %d notifications before the marker, want %d: %+v", token, len(got)-1, before, got)
		}
	}
	marker(n, &none, 0, "marker-none")
	marker(w, &withToken, 5, "marker-w")
	marker(s, &stdioLog, 3, "marker-stdio")
	marker(ca, &a, 20, "marker-a")
	marker(cb, &b, 15, "marker-b")
	// The reader can call no tool with progress, so it gets no marker; its session's
	// streams were read to their end and checked above.
	if got := refused.All(); len(got) != 0 {
		t.Errorf("the refused client got %d notifications: %+v", len(got), got)
	}
}

// count returns how many JSON-RPC messages with method the recorded response bodies
// hold, as read so far.
func (r *sseRecorder) count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, buf := range r.resp {
		sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil && m["method"] == method {
				n++
			}
		}
	}
	return n
}
