//lint:file-ignore SA1019 the tests answer sampling, deprecated from protocol 2026-07-28 on, which the gateway routes for the session-based versions it speaks

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

// askUpstream returns a discovered Server of the conformance fixture
// (internal/conformanceserver -stdio), which asks its client for sampling in
// test_sampling and for elicitation in test_elicitation, and answers with an error
// result when the client did not declare that capability: what a connection declared
// is seen in what the fixture answers. command, when not "", runs instead of the
// fixture (a script in the fixture's directory, which is put on PATH).
func askUpstream(t *testing.T, maxConns int, command string) *Server {
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
}

func (s *sampleAnswer) answer(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	s.mu.Lock()
	s.got = append(s.got, p)
	s.mu.Unlock()
	return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: s.reply}}, nil
}

func (s *sampleAnswer) asked() []*mcp.CreateMessageParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
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
	u := askUpstream(t, 1, "conformance-slowexit")
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
	u := askUpstream(t, 1, "")
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

// The fixture's error results for a client that did not declare a capability.
const (
	confNoSampling    = "the client does not support sampling"
	confNoElicitation = "the client does not support elicitation"
)

func elicitAccept(content map[string]any) func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}
}

// Connections are pooled by what their client declares: a call with Client.Sampling
// goes out on a connection that declared sampling and nothing else, one with
// Client.Elicitation on one that declared elicitation only, one with both on one that
// declared both, and a call without Client on one that declared neither (the fixture
// answers with an error result for what its client did not declare). Each class's
// connection is made once and reused.
func TestClientRequestsConnectionPerClass(t *testing.T) {
	u := askUpstream(t, 5, "")
	s := &sampleAnswer{reply: "sampled"}
	sampling := &CallOptions{Client: &ClientRequests{Sampling: s.answer}}
	elicitation := &CallOptions{Client: &ClientRequests{Elicitation: elicitAccept(map[string]any{"username": "ann", "email": "a@example.com"})}}
	both := &CallOptions{Client: &ClientRequests{Sampling: s.answer, Elicitation: elicitAccept(map[string]any{"username": "bo", "email": "b@example.com"})}}
	const elicited = `User response: action=accept, content={"email":"%s","username":"%s"}`

	for round := range 2 {
		for _, tc := range []struct {
			name    string
			tool    string
			args    map[string]any
			opts    *CallOptions
			want    string
			wantErr bool
		}{
			{"sampling", "test_sampling", map[string]any{"prompt": "p1"}, sampling, "LLM response: sampled", false},
			{"sampling", "test_elicitation", map[string]any{"message": "m"}, sampling, confNoElicitation, true},
			{"plain", "test_sampling", map[string]any{"prompt": "p2"}, nil, confNoSampling, true},
			{"plain", "test_elicitation", map[string]any{"message": "m"}, &CallOptions{}, confNoElicitation, true},
			{"elicitation", "test_elicitation", map[string]any{"message": "m"}, elicitation, fmt.Sprintf(elicited, "a@example.com", "ann"), false},
			{"elicitation", "test_sampling", map[string]any{"prompt": "p3"}, elicitation, confNoSampling, true},
			{"both", "test_sampling", map[string]any{"prompt": "p4"}, both, "LLM response: sampled", false},
			{"both", "test_elicitation", map[string]any{"message": "m"}, both, fmt.Sprintf(elicited, "b@example.com", "bo"), false},
		} {
			if got, isErr := callText(t, u, tc.tool, tc.args, tc.opts); got != tc.want || isErr != tc.wantErr {
				t.Errorf("round %d, %s client, %s: %q (isError %t), want %q (isError %t)", round, tc.name, tc.tool, got, isErr, tc.want, tc.wantErr)
			}
		}
	}
	var prompts []string
	for _, p := range s.asked() {
		if len(p.Messages) != 1 || p.MaxTokens != 100 {
			t.Errorf("sampling request %+v, want the fixture's one message and maxTokens 100", p)
			continue
		}
		prompts = append(prompts, p.Messages[0].Content.(*mcp.TextContent).Text)
	}
	if want := []string{"p1", "p4", "p1", "p4"}; !slices.Equal(prompts, want) {
		t.Errorf("the sampling answer was asked for %q, want %q", prompts, want)
	}
	if n := u.starts.Load(); n != 4 {
		t.Errorf("%d connections started, want 4 (one per class, discovery's plain one reused)", n)
	}
	u.mu.Lock()
	var classes []clientClass
	for c := range u.live {
		classes = append(classes, c.class)
	}
	u.mu.Unlock()
	slices.Sort(classes)
	if want := []clientClass{0, classSampling, classElicitation, classSampling | classElicitation}; !slices.Equal(classes, want) {
		t.Errorf("live connection classes %v, want %v", classes, want)
	}
}

// With MaxConns 1, calls that alternate between a client with sampling and one
// without each get a connection of their own class: the idle one of the other class
// is closed first, so exactly one process is live whenever a call is sent, and
// every switch starts a new one.
func TestClientRequestsMaxConnsOneAlternates(t *testing.T) {
	u := askUpstream(t, 1, "")
	seen := u.livePIDs()
	var during [][]int
	sent := func(context.Context) error {
		pids := u.livePIDs()
		during = append(during, liveProcesses(append(slices.Clone(seen), pids...)...))
		seen = append(seen, pids...)
		return nil
	}
	s := &sampleAnswer{reply: "sampled"}
	for i := range 3 {
		got, isErr := callText(t, u, "test_sampling", map[string]any{"prompt": "p"}, &CallOptions{Client: &ClientRequests{Sampling: s.answer}, BeforeSend: sent})
		if got != "LLM response: sampled" || isErr {
			t.Errorf("round %d, sampling call: %q (isError %t)", i, got, isErr)
		}
		got, isErr = callText(t, u, "test_sampling", map[string]any{"prompt": "p"}, &CallOptions{BeforeSend: sent})
		if got != confNoSampling || !isErr {
			t.Errorf("round %d, plain call: %q (isError %t)", i, got, isErr)
		}
	}
	if len(s.asked()) != 3 {
		t.Errorf("the sampling answer was asked %d times, want 3", len(s.asked()))
	}
	for i, live := range during {
		if len(live) != 1 {
			t.Errorf("call %d was sent with processes %v live, want exactly one", i, live)
		}
	}
	// Discovery's plain connection, then a new one on each of the six switches.
	if n := u.starts.Load(); n != 7 {
		t.Errorf("%d connections started, want 7", n)
	}
	if pids := u.livePIDs(); len(pids) != 1 {
		t.Errorf("live connections after the calls: %v, want one", pids)
	}
}

// An upstream request that no call in flight can answer is refused with a JSON-RPC
// error, and the answer functions are not called: on a connection whose call has
// ended (idle), and during a call whose client cannot answer that kind. A panicking
// answer is an error for the upstream, and the connection goes on serving. (The
// fixture asks only during its own calls, so the handlers the SDK calls are called
// here directly, with the pool's real sessions.)
func TestClientRequestsWithoutACallToAnswer(t *testing.T) {
	u := askUpstream(t, 1, "")
	calls := 0
	answer := &ClientRequests{
		Sampling: func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			calls++
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
	}
	if got, isErr := callText(t, u, "test_sampling", map[string]any{"prompt": "p"}, &CallOptions{Client: answer}); got != "LLM response: ok" || isErr {
		t.Fatalf("sampling call: %q (isError %t)", got, isErr)
	}
	u.mu.Lock()
	var idle *upstreamConn
	for c := range u.live {
		idle = c
	}
	u.mu.Unlock()
	if idle == nil || idle.class != classSampling || idle.busy {
		t.Fatalf("after the call the live connection is %+v, want an idle sampling one", idle)
	}
	wantRefused := func(what string, err error, kind string) {
		t.Helper()
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidRequest || je.Message != kind+" is only answered during a call, by the client that made it" {
			t.Errorf("%s: %v, want the JSON-RPC refusal", what, err)
		}
	}
	ctx := context.Background()
	_, err := u.onCreateMessage(ctx, &mcp.CreateMessageRequest{Session: idle.cs, Params: &mcp.CreateMessageParams{MaxTokens: 1}})
	wantRefused("sampling on an idle connection", err, "sampling")
	_, err = u.onElicit(ctx, &mcp.ElicitRequest{Session: idle.cs, Params: &mcp.ElicitParams{Message: "m"}})
	wantRefused("elicitation on an idle connection", err, "elicitation")

	// During a call whose client answers sampling only, an elicitation request is
	// refused (the connection did not declare it; the upstream should not ask).
	var during error
	probe := &ClientRequests{Sampling: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		_, during = u.onElicit(ctx, &mcp.ElicitRequest{Session: idle.cs, Params: &mcp.ElicitParams{Message: "m"}})
		return answer.Sampling(ctx, p)
	}}
	if got, isErr := callText(t, u, "test_sampling", map[string]any{"prompt": "p"}, &CallOptions{Client: probe}); got != "LLM response: ok" || isErr {
		t.Fatalf("sampling call: %q (isError %t)", got, isErr)
	}
	wantRefused("elicitation during a call that answers sampling only", during, "elicitation")
	if calls != 2 {
		t.Errorf("the sampling answer ran %d times, want 2 (the two calls)", calls)
	}

	panicking := &ClientRequests{Sampling: func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		panic("boom")
	}}
	_, err = u.Call(ctx, "test_sampling", json.RawMessage(`{"prompt":"p"}`), &CallOptions{Client: panicking})
	if err == nil || !strings.Contains(err.Error(), "sampling failed in the gateway") {
		t.Errorf("call whose sampling answer panicked: %v, want the upstream's error naming the gateway's failure", err)
	}
	if got, isErr := callText(t, u, "test_sampling", map[string]any{"prompt": "p"}, &CallOptions{Client: answer}); got != "LLM response: ok" || isErr {
		t.Errorf("sampling call after the panic: %q (isError %t)", got, isErr)
	}
	if n := u.starts.Load(); n != 2 {
		t.Errorf("%d connections started, want 2 (discovery's, then the sampling one, kept after the panic)", n)
	}
}
