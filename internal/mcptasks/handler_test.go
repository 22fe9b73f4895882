package mcptasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptasks"
	"github.com/wardenhq/warden/internal/mcptest"
)

// fixture is a real SDK stateless server behind a Handler, served over HTTP.
type fixture struct {
	url     string
	h       *mcptasks.Handler
	release chan struct{} // closing it lets "slow" finish
	calls   atomic.Int64  // calls of "slow" that saw their context end
	asked   atomic.Int64  // rounds of "ask"
}

func newFixture(t *testing.T, opts *mcptasks.Options) *fixture {
	t.Helper()
	f := &fixture{release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "tasks-fixture", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Extensions: map[string]any{mcptasks.Extension: map[string]any{}}},
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	empty := &mcp.Tool{InputSchema: map[string]any{"type": "object"}}
	tool := func(name string, h mcp.ToolHandler) {
		tl := *empty
		tl.Name = name
		s.AddTool(&tl, h)
	}
	tool("quick", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("quick answer"), nil
	})
	tool("slow", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if mcptasks.IsTask(ctx) {
			return nil, errors.New("a call is a task before it promotes")
		}
		if !mcptasks.Promote(ctx, "working slowly") {
			return text("not a task"), nil
		}
		if !mcptasks.IsTask(ctx) {
			return nil, errors.New("a promoted call is not a task")
		}
		select {
		case <-f.release:
			return text("slow answer"), nil
		case <-ctx.Done():
			f.calls.Add(1)
			return nil, ctx.Err()
		}
	})
	tool("failing", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		r := text("it went wrong")
		r.IsError = true
		return r, nil
	})
	tool("broken", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		return nil, errors.New("the job crashed")
	})
	tool("ask", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.asked.Add(1)
		mcptasks.Promote(ctx, "")
		if req.Params.InputResponses == nil {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"first":  &mcp.ElicitParams{Message: "first?", RequestedSchema: map[string]any{"type": "object"}},
				"second": &mcp.ElicitParams{Message: "second?", RequestedSchema: map[string]any{"type": "object"}},
			}, RequestState: "round-1"}, nil
		}
		if req.Params.RequestState != "round-1" {
			return nil, fmt.Errorf("requestState %q, want round-1", req.Params.RequestState)
		}
		return text(fmt.Sprintf("answers: %d", len(req.Params.InputResponses))), nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	if opts == nil {
		opts = &mcptasks.Options{}
	}
	if opts.Owner == nil {
		opts.Owner = func(r *http.Request) string { return r.Header.Get("X-Owner") }
	}
	f.h = mcptasks.NewHandler(sdk, opts)
	srv := httptest.NewServer(f.h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.h.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		srv.Close()
	})
	f.url = srv.URL
	return f
}

type reply struct {
	status int
	Result json.RawMessage     `json:"result"`
	Error  *mcptasks.WireError `json:"error"`
}

// post sends one 2026-07-28 request as owner; declare adds the extension to the
// request's client capabilities. The headers are the ones the body asks for, unless
// header overrides them.
func (f *fixture) post(t *testing.T, owner, method string, params map[string]any, declare bool, header map[string]string) reply {
	t.Helper()
	caps := map[string]any{}
	if declare {
		caps["extensions"] = map[string]any{mcptasks.Extension: map[string]any{}}
	}
	h := map[string]string{"X-Owner": owner}
	for k, v := range header {
		h[k] = v
	}
	r := mcptest.Post2026(t, mcptest.Request2026{URL: f.url, ID: 7, Method: method, Params: params, Capabilities: caps, Header: h})
	return reply{status: r.Status, Result: r.Result, Error: (*mcptasks.WireError)(r.Error)}
}

func call(name string, args map[string]any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// created calls name as a task and returns the CreateTaskResult.
func (f *fixture) created(t *testing.T, owner, name string) mcptasks.Task {
	t.Helper()
	r := f.post(t, owner, "tools/call", call(name, nil), true, nil)
	if r.Error != nil {
		t.Fatalf("tools/call %s: error %+v", name, r.Error)
	}
	task := decode[mcptasks.Task](t, r.Result)
	if task.ResultType != "task" || task.TaskID == "" || task.Status != mcptasks.StatusWorking {
		t.Fatalf("tools/call %s: %s, want a working CreateTaskResult", name, r.Result)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(r.Result, &raw)
	for _, k := range []string{"result", "error", "inputRequests", "requestState", "task", "ttl", "pollInterval"} {
		if _, ok := raw[k]; ok {
			t.Errorf("CreateTaskResult carries %q: %s", k, r.Result)
		}
	}
	return task
}

func (f *fixture) get(t *testing.T, owner, id string) mcptasks.Task {
	t.Helper()
	r := f.post(t, owner, "tasks/get", map[string]any{"taskId": id}, true, nil)
	if r.Error != nil {
		t.Fatalf("tasks/get %s: %+v", id, r.Error)
	}
	return decode[mcptasks.Task](t, r.Result)
}

// settled polls the task until its status is one of want (bounded).
func (f *fixture) settled(t *testing.T, owner, id string, want ...mcptasks.Status) mcptasks.Task {
	t.Helper()
	var task mcptasks.Task
	mcptest.WaitFor(t, 10*time.Second, fmt.Sprintf("task %s is one of %v", id, want), func() bool {
		task = f.get(t, owner, id)
		return slices.Contains(want, task.Status)
	})
	return task
}

func TestTaskCompletes(t *testing.T) {
	f := newFixture(t, &mcptasks.Options{TTL: 5 * time.Minute, PollInterval: 250 * time.Millisecond})
	task := f.created(t, "alice", "slow")
	if task.TTLMs != 300000 || task.PollIntervalMs != 250 || task.StatusMessage != "working slowly" {
		t.Errorf("CreateTaskResult %+v: want ttlMs 300000, pollIntervalMs 250, the handler's message", task)
	}
	if _, err := time.Parse(time.RFC3339, task.CreatedAt); err != nil {
		t.Errorf("createdAt %q: %v", task.CreatedAt, err)
	}
	if got := f.get(t, "alice", task.TaskID); got.Status != mcptasks.StatusWorking || got.Result != nil || got.ResultType != "complete" {
		t.Errorf("tasks/get while working: %+v", got)
	}
	close(f.release)
	done := f.settled(t, "alice", task.TaskID, mcptasks.StatusCompleted)
	res := decode[struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}](t, done.Result)
	if len(res.Content) != 1 || res.Content[0].Text != "slow answer" || res.IsError {
		t.Errorf("completed task's result %s, want the tool's answer", done.Result)
	}
}

func TestCallWithoutPromotionAnswersInItsRequest(t *testing.T) {
	f := newFixture(t, nil)
	for _, declare := range []bool{true, false} {
		r := f.post(t, "alice", "tools/call", call("quick", nil), declare, nil)
		res := decode[map[string]any](t, r.Result)
		if r.Error != nil || res["resultType"] != "complete" || res["taskId"] != nil {
			t.Errorf("declare=%v: %s %+v, want the plain result", declare, r.Result, r.Error)
		}
	}
	// A task-supporting tool of a request that does not declare the extension runs
	// in its request: Promote reports false.
	r := f.post(t, "alice", "tools/call", call("slow", nil), false, nil)
	if !strings.Contains(string(r.Result), "not a task") {
		t.Errorf("slow without the extension: %s, want the tool's synchronous answer", r.Result)
	}
	// So does one of a request without an owner.
	r = f.post(t, "", "tools/call", call("slow", nil), true, nil)
	if !strings.Contains(string(r.Result), "not a task") {
		t.Errorf("slow without an owner: %s, want the tool's synchronous answer", r.Result)
	}
}

func TestToolErrorCompletesAndProtocolErrorFails(t *testing.T) {
	f := newFixture(t, nil)
	failing := f.settled(t, "alice", f.created(t, "alice", "failing").TaskID, mcptasks.StatusCompleted, mcptasks.StatusFailed)
	if failing.Status != mcptasks.StatusCompleted || !strings.Contains(string(failing.Result), `"isError":true`) {
		t.Errorf("a tool error: %+v (error %+v), want completed with isError", failing, failing.Error)
	}
	broken := f.settled(t, "alice", f.created(t, "alice", "broken").TaskID, mcptasks.StatusCompleted, mcptasks.StatusFailed)
	if broken.Status != mcptasks.StatusFailed || broken.Error == nil || broken.Result != nil {
		t.Fatalf("a protocol error: %+v, want failed with an error and no result", broken)
	}
	if !strings.Contains(broken.Error.Message, "the job crashed") {
		t.Errorf("failed task's error %+v, want the handler's error", broken.Error)
	}
}

func TestCancelEndsTheCall(t *testing.T) {
	f := newFixture(t, nil)
	task := f.created(t, "alice", "slow")
	r := f.post(t, "alice", "tasks/cancel", map[string]any{"taskId": task.TaskID}, true, nil)
	if r.Error != nil || string(r.Result) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/cancel: %s %+v, want the empty ack", r.Result, r.Error)
	}
	if got := f.get(t, "alice", task.TaskID); got.Status != mcptasks.StatusCancelled {
		t.Errorf("after cancel: %s", got.Status)
	}
	mcptest.WaitFor(t, 10*time.Second, "the cancelled task's handler sees its context end", func() bool { return f.calls.Load() == 1 })
	// Cancelling a terminal task acks the same way.
	r = f.post(t, "alice", "tasks/cancel", map[string]any{"taskId": task.TaskID}, true, nil)
	if r.Error != nil || string(r.Result) != `{"resultType":"complete"}` {
		t.Errorf("second tasks/cancel: %s %+v", r.Result, r.Error)
	}
	if got := f.get(t, "alice", task.TaskID); got.Status != mcptasks.StatusCancelled {
		t.Errorf("a cancelled task became %s", got.Status)
	}
}

func TestInputRoundsResumeByUpdate(t *testing.T) {
	f := newFixture(t, nil)
	task := f.created(t, "alice", "ask")
	waiting := f.settled(t, "alice", task.TaskID, mcptasks.StatusInputRequired)
	if len(waiting.InputRequests) != 2 || !strings.Contains(string(waiting.InputRequests["first"]), `"elicitation/create"`) {
		t.Fatalf("input_required task: %+v, want both elicitation requests", waiting)
	}
	update := func(answers map[string]any) reply {
		return f.post(t, "alice", "tasks/update", map[string]any{"taskId": task.TaskID, "inputResponses": answers}, true, nil)
	}
	// An answer to no pending request is acked and dropped: the task still waits for
	// both, and the tool never sees it.
	if r := update(map[string]any{"third": map[string]any{"action": "accept"}}); r.Error != nil || string(r.Result) != `{"resultType":"complete"}` {
		t.Errorf("an answer to no pending request: %+v, want the ack", r)
	}
	if got := f.get(t, "alice", task.TaskID); got.Status != mcptasks.StatusInputRequired || len(got.InputRequests) != 2 {
		t.Fatalf("after an answer to nothing: %+v", got)
	}
	if r := update(map[string]any{"first": map[string]any{"action": "accept", "content": map[string]any{}}}); r.Error != nil || string(r.Result) != `{"resultType":"complete"}` {
		t.Fatalf("partial update: %s %+v", r.Result, r.Error)
	}
	partial := f.get(t, "alice", task.TaskID)
	if partial.Status != mcptasks.StatusInputRequired || len(partial.InputRequests) != 1 || partial.InputRequests["second"] == nil {
		t.Fatalf("after a partial update: %+v, want only the second request pending", partial)
	}
	if r := update(map[string]any{"second": map[string]any{"action": "decline"}}); r.Error != nil {
		t.Fatalf("last update: %+v", r.Error)
	}
	done := f.settled(t, "alice", task.TaskID, mcptasks.StatusCompleted, mcptasks.StatusFailed)
	if done.Status != mcptasks.StatusCompleted || !strings.Contains(string(done.Result), "answers: 2") {
		t.Errorf("resumed task: %+v (error %+v), want completed with both answers", done, done.Error)
	}
	if f.asked.Load() != 2 {
		t.Errorf("the tool ran %d rounds, want 2", f.asked.Load())
	}
	if r := update(map[string]any{"second": map[string]any{}}); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("update of a completed task: %+v, want -32602", r)
	}
}

func TestTasksAreTheirOwners(t *testing.T) {
	f := newFixture(t, nil)
	task := f.created(t, "alice", "slow")
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		r := f.post(t, "mallory", method, map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{}}, true, nil)
		if r.Error == nil || r.Error.Code != -32602 || r.Error.Message != fmt.Sprintf("unknown task %q", task.TaskID) {
			t.Errorf("%s by another owner: %+v, want the unknown-task error", method, r)
		}
		unknown := f.post(t, "alice", method, map[string]any{"taskId": "task_nope", "inputResponses": map[string]any{}}, true, nil)
		if unknown.Error == nil || unknown.Error.Message != `unknown task "task_nope"` {
			t.Errorf("%s of an unknown task: %+v", method, unknown)
		}
	}
	if got := f.get(t, "alice", task.TaskID); got.Status != mcptasks.StatusWorking {
		t.Errorf("another owner's cancel changed the task: %s", got.Status)
	}
}

func TestTasksMethodsGatedAndHeadersChecked(t *testing.T) {
	f := newFixture(t, &mcptasks.Options{Required: func(tool string) bool { return tool == "failing" }})
	task := f.created(t, "alice", "slow")
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r := f.post(t, "alice", method, map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{}}, false, nil)
		if r.Error == nil || r.Error.Code != -32021 || !strings.Contains(string(r.Error.Data), mcptasks.Extension) {
			t.Errorf("%s without the extension: %+v, want -32021 naming it", method, r)
		}
		r = f.post(t, "alice", method, map[string]any{"taskId": task.TaskID}, true, map[string]string{"Mcp-Name": "task_other"})
		if r.status != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32020 {
			t.Errorf("%s with another Mcp-Name: HTTP %d %+v, want 400 -32020", method, r.status, r.Error)
		}
		r = f.post(t, "alice", method, map[string]any{"taskId": task.TaskID}, true, map[string]string{"Mcp-Method": "tools/call"})
		if r.status != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32020 {
			t.Errorf("%s with another Mcp-Method: HTTP %d %+v, want 400 -32020", method, r.status, r.Error)
		}
	}
	r := f.post(t, "alice", "tools/call", call("failing", nil), false, nil)
	if r.Error == nil || r.Error.Code != -32021 || !strings.Contains(string(r.Error.Data), `"requiredCapabilities"`) {
		t.Errorf("a task-only tool without the extension: %+v, want -32021 with requiredCapabilities", r)
	}
	for _, method := range []string{"tasks/result", "tasks/list"} {
		r := f.post(t, "alice", method, map[string]any{"taskId": task.TaskID}, true, nil)
		if r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("removed method %s: %+v, want -32601", method, r)
		}
	}
}

func TestTaskExpires(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	f := newFixture(t, &mcptasks.Options{TTL: time.Minute, Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	task := f.created(t, "alice", "failing")
	f.settled(t, "alice", task.TaskID, mcptasks.StatusCompleted)
	clock.Add(int64(59 * time.Second))
	f.get(t, "alice", task.TaskID) // still kept within its ttl
	clock.Add(int64(time.Second))
	r := f.post(t, "alice", "tasks/get", map[string]any{"taskId": task.TaskID}, true, nil)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("tasks/get after the ttl: %s %+v, want an unknown task", r.Result, r.Error)
	}
}

func TestTaskLimits(t *testing.T) {
	f := newFixture(t, &mcptasks.Options{MaxPerOwner: 1})
	f.created(t, "alice", "slow")
	// A second task of the same owner is refused: the call runs in its request.
	r := f.post(t, "alice", "tools/call", call("slow", nil), true, nil)
	if !strings.Contains(string(r.Result), "not a task") {
		t.Errorf("over the owner's limit: %s, want the synchronous answer", r.Result)
	}
	f.created(t, "bob", "slow") // another owner still may
}

func TestTaskByteBounds(t *testing.T) {
	// The first call's request fits the owner's bytes, a second would not: it runs
	// in its request. Another owner still may.
	f := newFixture(t, &mcptasks.Options{MaxOwnerBytes: 600})
	f.created(t, "alice", "slow")
	r := f.post(t, "alice", "tools/call", call("slow", nil), true, nil)
	if !strings.Contains(string(r.Result), "not a task") {
		t.Errorf("over the owner's bytes: %s, want the synchronous answer", r.Result)
	}
	f.created(t, "bob", "slow")
	// The total bound holds across owners.
	g := newFixture(t, &mcptasks.Options{MaxBytes: 600})
	g.created(t, "alice", "slow")
	if r := g.post(t, "bob", "tools/call", call("slow", nil), true, nil); !strings.Contains(string(r.Result), "not a task") {
		t.Errorf("over the total bytes: %s, want the synchronous answer", r.Result)
	}
}
