//lint:file-ignore SA1019 an upstream task may ask for roots, deprecated from protocol 2026-07-28 on

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptasks"
	"github.com/wardenhq/warden/pin"
)

// taskFixture is a real 2026-07-28 upstream that makes tasks: an SDK stateless
// server behind an mcptasks.Handler, over HTTP, recording every request it gets.
type taskFixture struct {
	url     string
	release chan struct{} // closing it lets "slow" finish
	ended   chan struct{} // closed when "slow" saw its context end

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	method, name string // the Mcp-Method and Mcp-Name headers
	body         []byte
}

// fixtureOpts: extension makes the server offer the tasks extension, jsonResponse
// answer with JSON bodies instead of event streams. Its tools/list lists "done"
// with execution.taskSupport "optional" (the SDK's Tool has no such field: the
// answer is rewritten).
type fixtureOpts struct{ extension, jsonResponse bool }

func newTaskFixture(t *testing.T, o fixtureOpts) *taskFixture {
	t.Helper()
	extension := o.extension
	f := &taskFixture{release: make(chan struct{}), ended: make(chan struct{})}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	if extension {
		caps.Extensions = map[string]any{mcptasks.Extension: map[string]any{}}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "tasks-fixture", Version: "1"}, &mcp.ServerOptions{Capabilities: caps})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	tool := func(name string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, h)
	}
	tool("quick", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("quick answer"), nil
	})
	tool("done", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !mcptasks.Promote(ctx, "working") {
			return text("not a task"), nil
		}
		r := text("task answer")
		r.StructuredContent = map[string]any{"n": 7}
		r.Meta = mcp.Meta{"fixture/mark": "kept"}
		return r, nil
	})
	tool("toolerr", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		r := text("the tool failed")
		r.IsError = true
		return r, nil
	})
	tool("fail", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		return nil, &jsonrpc.Error{Code: 4242, Message: "the job crashed", Data: json.RawMessage(`{"why":"disk"}`)}
	})
	var endedOnce sync.Once
	tool("slow", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		select {
		case <-f.release:
			return text("slow answer"), nil
		case <-ctx.Done():
			endedOnce.Do(func() { close(f.ended) })
			return nil, ctx.Err()
		}
	})
	tool("ask", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		if req.Params.InputResponses == nil {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"confirm": &mcp.ElicitParams{Message: "go on?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}},
			}, RequestState: "round-1"}, nil
		}
		if req.Params.RequestState != "round-1" {
			return nil, fmt.Errorf("requestState %q, want round-1", req.Params.RequestState)
		}
		res, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
		if !ok {
			return nil, fmt.Errorf("answer %#v, want an elicitation result", req.Params.InputResponses["confirm"])
		}
		return text(fmt.Sprintf("answered %s %v", res.Action, res.Content["ok"])), nil
	})
	tool("roots", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		res, ok := req.Params.InputResponses["where"].(*mcp.ListRootsResult)
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"where": &mcp.ListRootsParams{}}}, nil
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text("roots " + strings.Join(uris, ",")), nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true, JSONResponse: o.jsonResponse})
	h := mcptasks.NewHandler(sdk, &mcptasks.Options{
		Owner:        func(r *http.Request) string { return r.Header.Get("X-Owner") },
		PollInterval: 50 * time.Millisecond,
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			f.mu.Lock()
			f.seen = append(f.seen, seenRequest{r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"), body})
			f.mu.Unlock()
		}
		if r.Header.Get("Mcp-Method") != "tools/list" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(bytes.Replace(rec.Body.Bytes(), []byte(`"name":"done"`), []byte(`"execution":{"taskSupport":"optional"},"name":"done"`), 1))
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("closing the tasks handler: %v", err)
		}
		srv.Close()
	})
	f.url = srv.URL
	return f
}

// requests returns the requests of method the fixture got, in order.
func (f *taskFixture) requests(method string) []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seenRequest
	for _, r := range f.seen {
		if r.method == method {
			out = append(out, r)
		}
	}
	return out
}

func (f *taskFixture) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// taskID returns the taskId in a request body.
func taskID(t *testing.T, r seenRequest) string {
	t.Helper()
	var m struct {
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil || m.Params.TaskID == "" {
		t.Fatalf("request %s %s: no taskId (%v)", r.method, r.body, err)
	}
	return m.Params.TaskID
}

// declares reports whether a request body declares the tasks extension.
func declares(t *testing.T, r seenRequest) bool {
	t.Helper()
	var m struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("request body %s: %v", r.body, err)
	}
	return mcptasks.Declares(m.Params.Meta)
}

// taskStatus asks the fixture for a task's status directly, as its owner.
func (f *taskFixture) taskStatus(t *testing.T, id string) mcptasks.Status {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{
		"taskId": id,
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    "2026-07-28",
			mcp.MetaKeyClientInfo:         map[string]any{"name": "test", "version": "1"},
			mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{mcptasks.Extension: map[string]any{}}},
		},
	}})
	req, _ := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tasks/get")
	req.Header.Set("Mcp-Name", id)
	req.Header.Set("X-Owner", "gateway")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result mcptasks.Task       `json:"result"`
		Error  *mcptasks.WireError `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.Error != nil {
		t.Fatalf("tasks/get %s: %v %+v", id, err, answer.Error)
	}
	return answer.Result.Status
}

func taskUpstream(t *testing.T, name string, f *taskFixture) *Server {
	t.Helper()
	u := newUpstream(t, ServerConfig{Name: name, URL: f.url, Headers: map[string]string{"X-Owner": "gateway"}}, Options{
		Policy: &TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}},
	})
	discover(t, u)
	return u
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A call the upstream turns into a task returns the task's result as if it had
// answered at once: content, structured content and _meta kept, a tool error as
// IsError; OnTask is called once per task; the tools/call declared the extension
// and the task was polled with tasks/get, the task id in Mcp-Name.
func TestUpstreamTaskCompletes(t *testing.T) {
	t.Parallel()
	for _, json := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", json), func(t *testing.T) {
			t.Parallel()
			testTaskCompletes(t, newTaskFixture(t, fixtureOpts{extension: true, jsonResponse: json}))
		})
	}
}

func testTaskCompletes(t *testing.T, f *taskFixture) {
	u := taskUpstream(t, "tasks", f)
	ctx := callCtx(t)
	var onTask atomic.Int64
	opts := &CallOptions{OnTask: func(context.Context) { onTask.Add(1) }}
	res, err := u.Call(ctx, "done", nil, opts)
	if err != nil {
		t.Fatalf("call of a task: %v", err)
	}
	if ResultText(res) != "task answer" || res.IsError || res.NeedsInput() {
		t.Errorf("result = %+v (%q), want the task's result", res, ResultText(res))
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"n":7}` {
		t.Errorf("structured content = %s, want the task's", sc)
	}
	if res.Meta["fixture/mark"] != "kept" {
		t.Errorf("_meta = %v, want the task result's", res.Meta)
	}
	if n := onTask.Load(); n != 1 {
		t.Errorf("OnTask called %d times, want once", n)
	}
	calls := f.requests("tools/call")
	if len(calls) != 1 || !declares(t, calls[0]) {
		t.Fatalf("tools/call requests = %d (declaring: %v), want one declaring the extension", len(calls), len(calls) == 1 && declares(t, calls[0]))
	}
	gets := f.requests(mcptasks.MethodGet)
	if len(gets) == 0 {
		t.Fatal("the upstream got no tasks/get")
	}
	for _, g := range gets {
		if id := taskID(t, g); g.name != id || !declares(t, g) {
			t.Errorf("tasks/get of %q with Mcp-Name %q (declaring: %v), want the task id and the declaration", id, g.name, declares(t, g))
		}
	}

	res, err = u.Call(ctx, "toolerr", nil, opts)
	if err != nil || !res.IsError || ResultText(res) != "the tool failed" {
		t.Errorf("task ending in a tool error: %v %+v, want IsError with the tool's text", err, res)
	}
	if n := onTask.Load(); n != 2 {
		t.Errorf("OnTask called %d times after two tasks, want 2", n)
	}
	// A call that is not made a task answers as usual, without OnTask.
	res, err = u.Call(ctx, "quick", nil, opts)
	if err != nil || ResultText(res) != "quick answer" || onTask.Load() != 2 {
		t.Errorf("call that is no task: %v %+v (OnTask %d), want its answer and no OnTask", err, res, onTask.Load())
	}
}

// A failed task ends the call with its JSON-RPC error: code, message and data; the
// connection stays healthy (the next call goes out).
func TestUpstreamTaskFails(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, fixtureOpts{extension: true})
	u := taskUpstream(t, "tasks", f)
	ctx := callCtx(t)
	_, err := u.Call(ctx, "fail", nil, nil)
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != 4242 || rpc.Message != "the job crashed" || string(rpc.Data) != `{"why":"disk"}` {
		t.Fatalf("failed task: %v (%+v), want its error 4242 with its data", err, rpc)
	}
	if errors.Is(err, ErrNotSent) {
		t.Errorf("failed task: %v wraps ErrNotSent", err)
	}
	if res, err := u.Call(ctx, "quick", nil, nil); err != nil || ResultText(res) != "quick answer" {
		t.Errorf("call after a failed task: %v %+v", err, res)
	}
}

// A call whose context ends while its task runs cancels the task (tasks/cancel):
// the upstream's tool sees its context end and the task is cancelled; the call
// returns the context's error.
func TestUpstreamTaskCancelledWithTheCall(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, fixtureOpts{extension: true})
	u := taskUpstream(t, "tasks", f)
	ctx, cancel := context.WithCancel(callCtx(t))
	defer cancel()
	var onTask atomic.Int64
	_, err := u.Call(ctx, "slow", nil, &CallOptions{OnTask: func(context.Context) {
		onTask.Add(1)
		cancel() // the caller gives up once the call is a task
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call of a task: %v, want context.Canceled", err)
	}
	if onTask.Load() != 1 {
		t.Errorf("OnTask called %d times, want once", onTask.Load())
	}
	cancels := f.requests(mcptasks.MethodCancel)
	if len(cancels) != 1 {
		t.Fatalf("the upstream got %d tasks/cancel, want 1", len(cancels))
	}
	select {
	case <-f.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream's tool did not see its context end within 30s of tasks/cancel")
	}
	if s := f.taskStatus(t, taskID(t, cancels[0])); s != mcptasks.StatusCancelled {
		t.Errorf("task status after the call was cancelled = %s, want cancelled", s)
	}
}

// A task waiting for input is relayed (CallOptions.Relay): the call returns the
// round with the task's input requests and a task state; the retry with the
// answers and that state sends tasks/update (no new tools/call) and returns the
// task's result.
func TestUpstreamTaskInputRelayed(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, fixtureOpts{extension: true})
	u := taskUpstream(t, "tasks", f)
	ctx := callCtx(t)
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	var onTask atomic.Int64
	round, err := u.Call(ctx, "ask", nil, &CallOptions{Relay: &Relay{Capabilities: caps}, OnTask: func(context.Context) { onTask.Add(1) }})
	if err != nil {
		t.Fatalf("first round: %v", err)
	}
	if !round.NeedsInput() || !strings.HasPrefix(round.RequestState, taskStatePrefix) {
		t.Fatalf("first round = %+v, want input_required with a task state", round)
	}
	if p, ok := round.InputRequests["confirm"].(*mcp.ElicitParams); !ok || p.Message != "go on?" {
		t.Fatalf("input requests = %#v, want the task's elicitation", round.InputRequests)
	}
	if onTask.Load() != 1 {
		t.Errorf("OnTask called %d times, want once", onTask.Load())
	}
	answer := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}}
	done, err := u.Call(ctx, "ask", nil, &CallOptions{Relay: &Relay{Capabilities: caps, Responses: answer, State: round.RequestState}, OnTask: func(context.Context) { onTask.Add(1) }})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if done.NeedsInput() || ResultText(done) != "answered accept true" {
		t.Errorf("retry = %+v (%q), want the task's result with the answer", done, ResultText(done))
	}
	if n := len(f.requests("tools/call")); n != 1 {
		t.Errorf("the upstream got %d tools/call, want 1 (the retry goes to the task)", n)
	}
	updates := f.requests(mcptasks.MethodUpdate)
	if len(updates) != 1 || !bytes.Contains(updates[0].body, []byte(`"inputResponses":{"confirm":`)) {
		t.Errorf("tasks/update requests = %d, want one carrying the answer", len(updates))
	}
	if onTask.Load() != 1 {
		t.Errorf("OnTask called %d times over both rounds, want once", onTask.Load())
	}
}

// Without Relay, a task's input requests are answered through CallOptions.Client
// when it can answer them all (the answer sent with tasks/update); when it cannot,
// the task is cancelled and the call ends with an error saying so.
func TestUpstreamTaskInputAnswered(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, fixtureOpts{extension: true})
	u := taskUpstream(t, "tasks", f)
	ctx := callCtx(t)
	var asked atomic.Int64
	client := &ClientRequests{Elicitation: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if p.Message != "go on?" {
			return nil, fmt.Errorf("asked %q", p.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": false}}, nil
	}}
	res, err := u.Call(ctx, "ask", nil, &CallOptions{Client: client})
	if err != nil || ResultText(res) != "answered accept false" {
		t.Fatalf("task answered through Client: %v %+v, want the task's result", err, res)
	}
	if asked.Load() != 1 || len(f.requests(mcptasks.MethodUpdate)) != 1 {
		t.Errorf("Client asked %d times, tasks/update %d, want once each", asked.Load(), len(f.requests(mcptasks.MethodUpdate)))
	}

	_, err = u.Call(ctx, "ask", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot be passed on") {
		t.Fatalf("task asking a call that cannot answer: %v, want an error saying the input cannot be passed on", err)
	}
	cancels := f.requests(mcptasks.MethodCancel)
	if len(cancels) != 1 {
		t.Fatalf("the upstream got %d tasks/cancel, want 1", len(cancels))
	}
	if s := f.taskStatus(t, taskID(t, cancels[0])); s != mcptasks.StatusCancelled {
		t.Errorf("task status = %s, want cancelled", s)
	}
}

// A task that asks for roots gets the calling client's, through CallOptions.Client.
func TestUpstreamTaskRootsAnswered(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, fixtureOpts{extension: true})
	u := taskUpstream(t, "tasks", f)
	client := &ClientRequests{Roots: func(context.Context) (*mcp.ListRootsResult, error) {
		return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///work/a"}, {URI: "file:///work/b"}}}, nil
	}}
	res, err := u.Call(callCtx(t), "roots", nil, &CallOptions{Client: client})
	if err != nil || ResultText(res) != "roots file:///work/a,file:///work/b" {
		t.Fatalf("a task asking for roots: %v %+v, want the client's roots", err, res)
	}
}

// A retry whose task state this Server did not make (forged, changed, or another
// Server's) is refused before anything is sent.
func TestUpstreamTaskStateRefusedUnsent(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, fixtureOpts{extension: true})
	u := taskUpstream(t, "tasks", f)
	other := taskUpstream(t, "tasks", f) // the same name: only the key differs
	ctx := callCtx(t)
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	round, err := other.Call(ctx, "ask", nil, &CallOptions{Relay: &Relay{Capabilities: caps}})
	if err != nil || !round.NeedsInput() {
		t.Fatalf("other server's round: %v %+v", err, round)
	}
	real, err := u.Call(ctx, "ask", nil, &CallOptions{Relay: &Relay{Capabilities: caps}})
	if err != nil || !real.NeedsInput() {
		t.Fatalf("round: %v %+v", err, real)
	}
	forged, err := u.sealTaskState(taskState{Server: "tasks", Tool: "ask", TaskID: "task_x"})
	if err != nil {
		t.Fatal(err)
	}
	body, _, _ := strings.Cut(strings.TrimPrefix(forged, taskStatePrefix), ".")
	answer := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}
	for name, state := range map[string]string{
		"another server's":        round.RequestState,
		"with a made-up mac":      taskStatePrefix + body + ".AAAA",
		"changed":                 real.RequestState + "x",
		"cut":                     taskStatePrefix + body,
		"for another tool":        mustSeal(t, u, taskState{Server: "tasks", Tool: "done", TaskID: "task_x"}),
		"of another server name":  mustSeal(t, u, taskState{Server: "elsewhere", Tool: "ask", TaskID: "task_x"}),
		"without the task's name": mustSeal(t, u, taskState{Server: "tasks", Tool: "ask"}),
	} {
		before := f.count()
		_, err := u.Call(ctx, "ask", nil, &CallOptions{Relay: &Relay{Capabilities: caps, Responses: answer, State: state}})
		if !errors.Is(err, ErrNotSent) || !strings.Contains(err.Error(), "task state is refused") {
			t.Errorf("retry with a task state %s: %v, want refused unsent", name, err)
		}
		if n := f.count() - before; n != 0 {
			t.Errorf("retry with a task state %s: the upstream got %d requests, want none", name, n)
		}
	}
	if n := len(f.requests(mcptasks.MethodUpdate)); n != 0 {
		t.Errorf("the upstream got %d tasks/update, want none", n)
	}
}

func mustSeal(t *testing.T, u *Server, st taskState) string {
	t.Helper()
	s, err := u.sealTaskState(st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A server that does not offer the extension is never told the Server takes
// tasks: its tools/call carries no declaration, and the call answers as usual.
func TestUpstreamNoTasksWithoutTheExtension(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, fixtureOpts{})
	u := taskUpstream(t, "plain", f)
	ctx := callCtx(t)
	var onTask atomic.Int64
	res, err := u.Call(ctx, "done", nil, &CallOptions{OnTask: func(context.Context) { onTask.Add(1) }})
	if err != nil || ResultText(res) != "not a task" || onTask.Load() != 0 {
		t.Fatalf("call to a server without tasks: %v %+v (OnTask %d), want its own answer", err, res, onTask.Load())
	}
	calls := f.requests("tools/call")
	if len(calls) != 1 {
		t.Fatalf("tools/call requests = %d, want 1", len(calls))
	}
	if declares(t, calls[0]) || bytes.Contains(calls[0].body, []byte(mcptasks.Extension)) {
		t.Errorf("tools/call to a server without the extension declares it: %s", calls[0].body)
	}
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	if _, err := u.Call(ctx, "quick", nil, &CallOptions{Relay: &Relay{Capabilities: caps}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.requests("tools/call") {
		if bytes.Contains(r.body, []byte(mcptasks.Extension)) {
			t.Errorf("a relayed tools/call to a server without the extension declares it: %s", r.body)
		}
	}
}

// The declaration keeps the client capabilities the request carried.
func TestWithTasksDeclared(t *testing.T) {
	got, err := withTasksDeclared(map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "extensions": map[string]any{"x/y": map[string]any{"a": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{},"x/y":{"a":1}}}`
	if string(got) != want {
		t.Errorf("withTasksDeclared = %s, want %s", got, want)
	}
	if got, err := withTasksDeclared(nil); err != nil || string(got) != `{"extensions":{"io.modelcontextprotocol/tasks":{}}}` {
		t.Errorf("withTasksDeclared(nil) = %s, %v", got, err)
	}
	if _, err := withTasksDeclared([]int{1}); err == nil {
		t.Error("withTasksDeclared of a non-object: no error")
	}
}

func TestPollInterval(t *testing.T) {
	for ms, want := range map[int64]time.Duration{0: 500 * time.Millisecond, -3: 500 * time.Millisecond, 1: 50 * time.Millisecond, 200: 200 * time.Millisecond, 60000: 5 * time.Second} {
		if got := pollInterval(ms); got != want {
			t.Errorf("pollInterval(%d) = %s, want %s", ms, got, want)
		}
	}
}

// A server offering tasks has each tool's execution.taskSupport kept, and in the
// definition hash when set; a tool without it hashes as before. A server without
// the extension has it ignored.
func TestUpstreamToolTaskSupport(t *testing.T) {
	t.Parallel()
	for _, ext := range []bool{true, false} {
		u := taskUpstream(t, "tasks", newTaskFixture(t, fixtureOpts{extension: ext}))
		for _, tool := range u.Tools() {
			want := ""
			if ext && tool.Remote == "done" {
				want = "optional"
			}
			hash, _, err := pin.HashWithTaskSupport(tool.Tool, want)
			if err != nil {
				t.Fatal(err)
			}
			if tool.TaskSupport != want || tool.Hash != hash {
				t.Errorf("extension %v: tool %s: TaskSupport %q hash %s, want %q and %s", ext, tool.Remote, tool.TaskSupport, tool.Hash, want, hash)
			}
			plain, _, _ := pin.Hash(tool.Tool)
			if (want == "") != (tool.Hash == plain) {
				t.Errorf("extension %v: tool %s: hash %s against the plain hash %s", ext, tool.Remote, tool.Hash, plain)
			}
		}
	}
}
