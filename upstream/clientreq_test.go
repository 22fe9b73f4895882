//lint:file-ignore SA1019 the tests answer sampling, deprecated from protocol 2026-07-28 on, which the gateway routes for the session-based versions it speaks

package upstream

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

// confUpstream returns a discovered Server of the conformance fixture
// (internal/conformanceserver -stdio), which asks its client for sampling in
// test_sampling and for elicitation in test_elicitation, and answers with an error
// result when the client did not declare that capability: what a connection declared
// is seen in what the fixture answers. command, when not "", runs instead of the
// fixture (a script in the fixture's directory, which is put on PATH).
func confUpstream(t *testing.T, maxConns int, command string) *Server {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if command == "" {
		command = "conformanceserver"
	}
	cfg := ServerConfig{Name: "conf", Command: command, Args: []string{"-stdio"}}
	policy := &TransportPolicy{AllowCommands: true, Commands: []string{command}, MaxConnectionsPerServer: maxConns}
	u := newUpstream(t, cfg, Options{Policy: policy})
	if _, _, err := u.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return u
}

// sampleAnswer answers every sampling request with the text reply, keeping the
// prompts it was asked.
type sampleAnswer struct {
	reply string
	mu    sync.Mutex
	got   []*mcp.CreateMessageParams
	// during, when set, runs inside the answer (the call is in flight).
	during func()
}

func (s *sampleAnswer) answer(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	s.mu.Lock()
	s.got = append(s.got, p)
	s.mu.Unlock()
	if s.during != nil {
		s.during()
	}
	return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: s.reply}}, nil
}

func callText(t *testing.T, u *Server, tool string, args any, opts *CallOptions) (string, bool) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := u.Call(context.Background(), tool, raw, opts)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return textOf(t, res), res.IsError
}

// liveProcesses returns the pids of pids that are live processes (not reaped).
func liveProcesses(pids ...int) []int {
	var out []int
	for _, pid := range pids {
		if processAlive(pid) && !slices.Contains(out, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// With MaxConns 1, a call of another client class than the idle connection's
// closes that connection before it starts its own: the bound holds for processes,
// not only for the pool's bookkeeping, even when the closed server takes its time to
// exit. The fixture behind a script that stays alive after the server's stdin closes
// (a server that is slow to shut down, until the transport's SIGTERM) shows it.
func TestClientRequestsClassSwitchKeepsTheBound(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the slow-exiting server is a shell script")
	}
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	script := filepath.Join(filepath.Dir(bin), "conformance-slowexit")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n\""+bin+"\" \"$@\"\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	u := confUpstream(t, 1, "conformance-slowexit")
	old := u.livePIDs()
	if len(old) != 1 {
		t.Fatalf("after discovery the live connections are %v, want one", old)
	}
	var during []int
	s := &sampleAnswer{reply: "sampled"}
	opts := &CallOptions{
		Client: &ClientRequests{Sampling: s.answer},
		BeforeSend: func(context.Context) error {
			// The call holds its connection and is about to send: every process the
			// server has had is either gone or the call's own.
			during = liveProcesses(append(old, u.livePIDs()...)...)
			return nil
		},
	}
	if got, isErr := callText(t, u, "test_sampling", map[string]any{"prompt": "p"}, opts); isErr || got != "LLM response: sampled" {
		t.Fatalf("sampling call: %q (isError %t)", got, isErr)
	}
	if len(during) != 1 || slices.Contains(during, old[0]) {
		t.Errorf("while the sampling call was sent the live processes were %v (the idle plain connection was %d); want only the call's own", during, old[0])
	}
}

type callTag struct{}

// The answer functions run with the context of the call in flight, as Progress and
// Log do: its values are the call's own, not those of the call that started the
// connection. (The gateway sends its client's request with that context, which is
// what puts it on the stream of the client's own call.)
func TestClientRequestsAnswerHasTheCallsContext(t *testing.T) {
	u := confUpstream(t, 1, "")
	var seen []any
	opts := &CallOptions{Client: &ClientRequests{
		Sampling: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			seen = append(seen, ctx.Value(callTag{}))
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
	}}
	for _, tag := range []string{"first", "second", "third"} {
		ctx := context.WithValue(context.Background(), callTag{}, tag)
		res, err := u.Call(ctx, "test_sampling", json.RawMessage(`{"prompt":"p"}`), opts)
		if err != nil || res.IsError {
			t.Fatalf("call %s: %v %+v", tag, err, res)
		}
	}
	if want := []any{"first", "second", "third"}; !slices.Equal(seen, want) {
		t.Errorf("the answers saw the call contexts %v, want %v", seen, want)
	}
	if s := u.starts.Load(); s != 2 {
		t.Errorf("%d connections started, want 2 (discovery's, then one sampling connection for the three calls)", s)
	}
}
