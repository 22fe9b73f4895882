package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/pin"
)

// failingHTTPUpstream is a real go-sdk MCP server over streamable HTTP whose answers to
// tools/call fail the way an HTTP upstream can, chosen by mode ("" answers normally).
type failingHTTPUpstream struct {
	hs   *httptest.Server
	mu   sync.Mutex
	mode string
}

func (f *failingHTTPUpstream) set(mode string) {
	f.mu.Lock()
	f.mode = mode
	f.mu.Unlock()
}

func newFailingHTTPUpstream(t *testing.T) *failingHTTPUpstream {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "failing-http", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	f := &failingHTTPUpstream{}
	f.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		f.mu.Lock()
		mode := f.mode
		f.mu.Unlock()
		if r.Method != http.MethodPost || msg.Method != "tools/call" || mode == "" {
			h.ServeHTTP(w, r)
			return
		}
		switch mode {
		case "503":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case "500-jsonrpc":
			// An HTTP error whose body is a well-formed JSON-RPC error: still not an answer.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"proxy says no"}}`, msg.ID)
		case "malformed":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `}{ not json`)
		case "cut":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "4096")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[`, msg.ID)
		case "eof":
			// An event stream that ends before the call's response.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, ": working\n\n")
			w.(http.Flusher).Flush()
		default:
			panic("unknown mode " + mode)
		}
	}))
	t.Cleanup(func() {
		f.hs.CloseClientConnections()
		f.hs.Close()
	})
	return f
}

// TestUpstreamHTTPTransportFailures: every way an HTTP upstream's transport can fail a
// call (connection refused, an HTTP error status with or without a JSON-RPC body, a
// malformed or cut-off body, a stream that ends early) is a call error, never an
// answer, and the connection is treated as failed: it is not reused, and the next call
// waits out the restart backoff.
func TestUpstreamHTTPTransportFailures(t *testing.T) {
	t.Parallel()
	policy := &TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}}
	for _, mode := range []string{"refused", "503", "500-jsonrpc", "malformed", "cut", "eof"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newFailingHTTPUpstream(t)
			u := newUpstream(t, ServerConfig{Name: "web", URL: f.hs.URL + "/mcp"}, Options{Policy: policy, BackoffMin: time.Hour, BackoffMax: time.Hour})
			discover(t, u)
			if r, err := u.Call(context.Background(), "echo", json.RawMessage(`{"text":"fine"}`), nil); err != nil || textOf(t, r) != "fine" {
				t.Fatalf("a healthy call: %v", err)
			}
			if mode == "refused" {
				f.hs.CloseClientConnections()
				f.hs.Close()
			} else {
				f.set(mode)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := u.Call(ctx, "echo", json.RawMessage(`{"text":"lost"}`), nil)
			if err == nil {
				t.Fatalf("the failed call returned a result: %+v", res)
			}
			if upstreamAnswered(err) {
				t.Errorf("a transport failure taken for the upstream's answer: %v", err)
			}
			if !strings.Contains(err.Error(), "failed on the connection") {
				t.Errorf("error %q does not say the connection failed", err)
			}
			u.mu.Lock()
			idle, failures := len(u.idle), u.failures
			u.mu.Unlock()
			if idle != 0 || failures == 0 {
				t.Errorf("after the failure: %d idle connections, %d failures; want the connection dropped and the failure counted", idle, failures)
			}
			f.set("")
			_, err = u.Call(ctx, "echo", json.RawMessage(`{"text":"again"}`), nil)
			if !errors.Is(err, ErrServerRestarting) {
				t.Errorf("the next call: %v; want it to wait out the restart backoff (%v)", err, ErrServerRestarting)
			}
		})
	}
}

// TestUpstreamNotSent: every error of a call that failed before its request began to
// be sent wraps ErrNotSent (and keeps its message); an error after sending began never
// does. BeforeSend runs once a connection is held, and its refusal sends nothing.
func TestUpstreamNotSent(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, faultServer("f"), Options{Policy: faultPolicy(1), BackoffMin: time.Hour, BackoffMax: time.Hour})
	ctx := context.Background()
	if _, err := u.Call(ctx, "echo", nil, nil); !errors.Is(err, ErrNotSent) || !strings.Contains(err.Error(), "not discovered") {
		t.Errorf("a call before Discover: %v; want it not sent", err)
	}
	discover(t, u)
	for _, c := range []struct{ remote, args string }{{"nosuchtool", `{}`}, {"echo", `[1]`}} {
		if _, err := u.Call(ctx, c.remote, json.RawMessage(c.args), nil); !errors.Is(err, ErrNotSent) {
			t.Errorf("call %s %s: %v; want it not sent", c.remote, c.args, err)
		}
	}
	refused := errors.New("audit log down")
	var sends int
	_, err := u.Call(ctx, "echo", json.RawMessage(`{"text":"x"}`), &CallOptions{BeforeSend: func(context.Context) error { sends++; return refused }})
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, refused) || sends != 1 {
		t.Errorf("a refusing BeforeSend: %v (called %d times); want it not sent", err, sends)
	}
	r, err := u.Call(ctx, "echo", json.RawMessage(`{"text":"sent"}`), &CallOptions{BeforeSend: func(context.Context) error { sends++; return nil }})
	if err != nil || textOf(t, r) != "sent" || sends != 2 {
		t.Fatalf("a call after an accepting BeforeSend: %v (called %d times)", err, sends)
	}
	// The crash happens after the request was sent: not ErrNotSent.
	if _, err := u.Call(ctx, "crash", nil, nil); err == nil || errors.Is(err, ErrNotSent) {
		t.Errorf("a call that crashed the upstream: %v; want a failure that was sent", err)
	}
	// In the restart backoff nothing can be sent.
	_, err = u.Call(ctx, "echo", json.RawMessage(`{"text":"y"}`), &CallOptions{BeforeSend: func(context.Context) error { sends++; return nil }})
	if !errors.Is(err, ErrServerRestarting) || !errors.Is(err, ErrNotSent) || sends != 2 {
		t.Errorf("a call in the restart backoff: %v (BeforeSend called %d times); want it not sent", err, sends)
	}
	var qe *pin.QuarantinedError
	u.mu.Lock()
	for i := range u.tools {
		if u.tools[i].Remote == "pid" {
			u.tools[i].Quarantined = true
		}
	}
	u.mu.Unlock()
	if _, err := u.Call(ctx, "pid", nil, nil); !errors.As(err, &qe) || !errors.Is(err, ErrNotSent) || err.Error() != pin.QuarantineText("mcp__f__pid") {
		t.Errorf("a quarantined tool: %v; want a *pin.QuarantinedError, not sent, with its exact text", err)
	}
}
