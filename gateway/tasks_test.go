package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptasks"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

// taskReply is one JSON-RPC answer of the stateless front.
type taskReply struct {
	status int
	Result json.RawMessage     `json:"result"`
	Error  *mcptasks.WireError `json:"error"`
}

// post2026 sends one protocol 2026-07-28 request with token, as a client without an
// SDK would; declare puts the tasks extension in its client capabilities.
func (e *gwEnv) post2026(t *testing.T, token, method string, params map[string]any, declare bool) taskReply {
	t.Helper()
	caps := map[string]any{}
	if declare {
		caps["extensions"] = map[string]any{mcptasks.Extension: map[string]any{}}
	}
	return e.post2026Caps(t, token, method, params, caps)
}

// post2026Caps is post2026 with the client capabilities caps.
func (e *gwEnv) post2026Caps(t *testing.T, token, method string, params map[string]any, caps map[string]any) taskReply {
	t.Helper()
	r := mcptest.Post2026(t, mcptest.Request2026{
		URL: e.url, Client: &http.Client{Transport: e.tr, Timeout: time.Minute},
		Method: method, Params: params, Capabilities: caps,
		Header: map[string]string{"Authorization": "Bearer " + token},
	})
	return taskReply{status: r.Status, Result: r.Result, Error: (*mcptasks.WireError)(r.Error)}
}

func (e *gwEnv) taskGet(t *testing.T, token, id string) (mcptasks.Task, *mcptasks.WireError) {
	t.Helper()
	r := e.post2026(t, token, "tasks/get", map[string]any{"taskId": id}, true)
	var task mcptasks.Task
	if r.Error == nil {
		if err := json.Unmarshal(r.Result, &task); err != nil {
			t.Fatal(err)
		}
	}
	return task, r.Error
}

// taskUntil polls the task until its status is not working (bounded).
func (e *gwEnv) taskUntil(t *testing.T, token, id string, want mcptasks.Status) mcptasks.Task {
	t.Helper()
	var task mcptasks.Task
	mcptest.WaitFor(t, 30*time.Second, fmt.Sprintf("task %s is %s", id, want), func() bool {
		var err *mcptasks.WireError
		if task, err = e.taskGet(t, token, id); err != nil {
			t.Fatalf("tasks/get %s: %+v", id, err)
		}
		return task.Status == want || task.Status.Terminal()
	})
	if task.Status != want {
		t.Fatalf("task %s: %+v, want %s", id, task, want)
	}
	return task
}

// deleteAsTask calls delete_note(name) as bob, whose asks go to an operator, from a
// client that takes tasks, and returns the task it becomes.
func (e *gwEnv) deleteAsTask(t *testing.T, name string) mcptasks.Task {
	t.Helper()
	r := e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__notes__delete_note", "arguments": map[string]any{"name": name}}, true)
	var task mcptasks.Task
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ResultType != "task" || task.Status != mcptasks.StatusWorking {
		t.Fatalf("delete_note(%s) from a client that takes tasks: %s %+v, want a working task", name, r.Result, r.Error)
	}
	return task
}

// taskText is the text of a completed task's tool result, and whether it is an error.
func taskText(t *testing.T, task mcptasks.Task) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(task.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("task result %s: want one text", task.Result)
	}
	return res.Content[0].Text, res.IsError
}

// A call that waits for an operator is carried as a task: the client gets the task
// at once, polls it past approvals.wait (here 1 ms: a held request would have ended
// with "waiting for an operator"), and once the operator approves, the call runs
// exactly once and the task completes with its result. Only its identity sees it.
func TestTaskCarriesTheOperatorWait(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 1ms\n"})
	e.writeNotes(t, "drop")
	task := e.deleteAsTask(t, "drop")
	ps := e.pending(t, "mcp__notes__delete_note", `{"name":"drop"}`)
	if len(ps) != 1 {
		t.Fatalf("pending decisions = %+v, want the one operator question", ps)
	}
	for range 5 {
		got, err := e.taskGet(t, gwBobToken, task.TaskID)
		if err != nil || got.Status != mcptasks.StatusWorking || got.StatusMessage != "Waiting for an operator to decide approval "+ps[0].ID+". Nothing has run yet." {
			t.Fatalf("the waiting task: %+v %+v", got, err)
		}
	}
	if _, err := e.taskGet(t, gwWriterToken, task.TaskID); err == nil || err.Code != -32602 {
		t.Errorf("another identity's tasks/get: %+v, want the unknown-task error", err)
	}
	if _, err := e.st.Decide(context.Background(), ps[0].ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	done := e.taskUntil(t, gwBobToken, task.TaskID, mcptasks.StatusCompleted)
	if text, isErr := taskText(t, done); isErr || text != `Deleted note "drop".` {
		t.Errorf("the approved task's result: %q (error %v)", text, isErr)
	}
	ran := 0
	for _, r := range e.calls(t, "mcp__notes__delete_note", "bob") {
		if r.Executed {
			ran++
			if r.ApprovedBy != "ops" || r.Status != warden.StatusRan {
				t.Errorf("audit of the approved call: %+v", r)
			}
		}
	}
	if ran != 1 {
		t.Errorf("%d executed deletes, want 1", ran)
	}
	// A client that does not take tasks still waits approvals.wait in its request.
	r := e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__notes__delete_note", "arguments": map[string]any{"name": "other"}}, false)
	if !strings.Contains(string(r.Result), "waiting for an operator") || strings.Contains(string(r.Result), `"taskId"`) {
		t.Errorf("without the extension: %s, want the waiting text in the request", r.Result)
	}
}

// A declined task completes with the refusal; a cancelled one ends, and an approval
// given afterwards runs nothing.
func TestTaskDeclinedAndCancelled(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 1ms\n"})
	e.writeNotes(t, "a", "b")
	declined := e.deleteAsTask(t, "a")
	pa := e.pending(t, "mcp__notes__delete_note", `{"name":"a"}`)
	if len(pa) != 1 {
		t.Fatalf("pending = %+v", pa)
	}
	if _, err := e.st.Decide(context.Background(), pa[0].ID, store.Verdict{Approve: false, By: "ops", Note: "keep it"}); err != nil {
		t.Fatal(err)
	}
	text, isErr := taskText(t, e.taskUntil(t, gwBobToken, declined.TaskID, mcptasks.StatusCompleted))
	if !isErr || !strings.Contains(text, "keep it") {
		t.Errorf("the declined task's result: %q (error %v), want the refusal with the operator's note", text, isErr)
	}

	cancelled := e.deleteAsTask(t, "b")
	pb := e.pending(t, "mcp__notes__delete_note", `{"name":"b"}`)
	if len(pb) != 1 {
		t.Fatalf("pending = %+v", pb)
	}
	if r := e.post2026(t, gwBobToken, "tasks/cancel", map[string]any{"taskId": cancelled.TaskID}, true); r.Error != nil || string(r.Result) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/cancel: %s %+v", r.Result, r.Error)
	}
	if got, _ := e.taskGet(t, gwBobToken, cancelled.TaskID); got.Status != mcptasks.StatusCancelled {
		t.Errorf("after tasks/cancel: %+v", got)
	}
	// The call's own record says it did not run.
	var rec *store.CallRecord
	mcptest.WaitFor(t, 30*time.Second, "the cancelled call is recorded", func() bool {
		for _, r := range e.calls(t, "mcp__notes__delete_note", "bob") {
			if strings.Contains(string(r.Args), `"b"`) {
				rec = &r
			}
		}
		return rec != nil
	})
	// Recorded like any call whose wait ended undecided: pending, not run.
	if rec.Executed || rec.Status != warden.StatusPending || rec.Stage != warden.StageHuman {
		t.Errorf("the cancelled call's record: %+v, want pending at the human stage, not executed", rec)
	}
	if _, err := e.st.Decide(context.Background(), pb[0].ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.calls(t, "mcp__notes__delete_note", "bob") {
		if r.Executed {
			t.Errorf("a delete ran: %+v", r)
		}
	}
}

// The stateless front offers the extension in server/discover, gates the tasks
// methods on it, and answers the removed ones -32601.
func TestTasksExtensionOnTheStatelessFront(t *testing.T) {
	e := gwStart(t, gwSetup{})
	r := e.post2026(t, gwBobToken, "server/discover", map[string]any{}, true)
	if !strings.Contains(string(r.Result), `"extensions":{"`+mcptasks.Extension+`":{}}`) {
		t.Errorf("server/discover: %s, want the tasks extension", r.Result)
	}
	if r := e.post2026(t, gwBobToken, "tasks/get", map[string]any{"taskId": "task_x"}, false); r.Error == nil || r.Error.Code != -32021 {
		t.Errorf("tasks/get without the extension: %+v", r)
	}
	if r := e.post2026(t, gwBobToken, "tasks/get", map[string]any{"taskId": "task_x"}, true); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("tasks/get of an unknown task: %+v", r)
	}
	for _, m := range []string{"tasks/list", "tasks/result"} {
		if r := e.post2026(t, gwBobToken, m, map[string]any{"taskId": "task_x"}, true); r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("%s: %+v, want -32601", m, r)
		}
	}
	// A call that never waits answers in its request.
	r = e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__notes__list_notes", "arguments": map[string]any{}}, true)
	if r.Error != nil || strings.Contains(string(r.Result), `"taskId"`) || !strings.Contains(string(r.Result), `"content"`) {
		t.Errorf("list_notes from a client that takes tasks: %s %+v", r.Result, r.Error)
	}
}

// Shutdown does not wait for a task's operator: the task is cancelled, and the
// approval stays in the store for a later call.
func TestTaskEndsAtShutdown(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 1ms\n"})
	e.writeNotes(t, "c")
	task := e.deleteAsTask(t, "c")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.gw.Close(ctx); err != nil {
		t.Fatalf("Close with a task waiting: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Close took %v", d)
	}
	if got, err := e.taskGet(t, gwBobToken, task.TaskID); err != nil || got.Status != mcptasks.StatusCancelled || got.StatusMessage != "the server is shutting down" {
		t.Errorf("the task after shutdown: %+v %+v, want cancelled by the shutdown", got, err)
	}
	if ps := e.pending(t, "mcp__notes__delete_note", `{"name":"c"}`); len(ps) != 1 {
		t.Errorf("the approval did not outlive the shutdown: %+v", ps)
	}
}

// taskUpstream is a real 2026-07-28 MCP server over HTTP that runs its tools as
// tasks (internal/mcptasks in front of the SDK's stateless handler): job waits for
// release; ask_job asks its client's user a question first.
type taskUpstream struct {
	url       string
	release   chan struct{}
	cancelled chan struct{} // closed when a job saw its context end
	jobs      atomic.Int64
}

func startTaskUpstream(t *testing.T) *taskUpstream {
	t.Helper()
	u := &taskUpstream{release: make(chan struct{}), cancelled: make(chan struct{})}
	var once sync.Once
	s := mcp.NewServer(&mcp.Implementation{Name: "task-upstream", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Extensions: map[string]any{mcptasks.Extension: map[string]any{}}},
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "job", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.jobs.Add(1)
		if !mcptasks.Promote(ctx, "the job runs") {
			return text("job done without a task"), nil
		}
		select {
		case <-u.release:
			return text("job done"), nil
		case <-ctx.Done():
			once.Do(func() { close(u.cancelled) })
			return nil, ctx.Err()
		}
	})
	s.AddTool(&mcp.Tool{Name: "broken_job", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		return nil, errors.New("the job's machine is gone")
	})
	s.AddTool(&mcp.Tool{Name: "ask_job", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mcptasks.Promote(ctx, "")
		r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult)
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{
				Message: "Who runs the job?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
			}}}, nil
		}
		return text(fmt.Sprintf("job run by %v", r.Content["name"])), nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	h := mcptasks.NewHandler(sdk, &mcptasks.Options{Owner: func(*http.Request) string { return "gateway" }, PollInterval: 50 * time.Millisecond})
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Close(ctx)
		hs.CloseClientConnections()
		hs.Close()
	})
	u.url = hs.URL
	return u
}

func taskUpstreamGateway(t *testing.T, u *taskUpstream) *gwEnv {
	t.Helper()
	return gwStart(t, gwSetup{
		policy:     "version: 1\nmode: allow_all\n",
		transport:  "transport:\n  allow_urls: true\n  allow_insecure_loopback: true\n  hosts: [127.0.0.1]\n",
		servers:    "servers:\n  up:\n    url: " + u.url + "\n",
		identities: relayIdentities,
	})
}

// An upstream that runs a call as a task: a client that takes tasks gets a task of
// the gateway's at once and polls it; the gateway follows the upstream's task and
// completes its own with the result. A client of the session-based line waits in its
// request for the same result; the call runs once each time.
func TestTaskOfTheUpstream(t *testing.T) {
	u := startTaskUpstream(t)
	e := taskUpstreamGateway(t, u)
	r := e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__up__job", "arguments": map[string]any{}}, true)
	var task mcptasks.Task
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ResultType != "task" {
		t.Fatalf("job from a client that takes tasks: %s %+v, want a task", r.Result, r.Error)
	}
	if got, err := e.taskGet(t, gwBobToken, task.TaskID); err != nil || got.Status != mcptasks.StatusWorking || got.StatusMessage != "Running as a task on the server up." {
		t.Fatalf("the gateway's task while the upstream's runs: %+v %+v", got, err)
	}
	close(u.release)
	done := e.taskUntil(t, gwBobToken, task.TaskID, mcptasks.StatusCompleted)
	if text, isErr := taskText(t, done); isErr || text != "job done" {
		t.Errorf("the task's result: %q (error %v)", text, isErr)
	}
	old := e.connect(t, gwBobToken, nil)
	gwWant(t, gwCall(t, old, "mcp__up__job", map[string]any{}), false, "job done")
	if n := u.jobs.Load(); n != 2 {
		t.Errorf("the upstream ran the job %d times, want 2", n)
	}
	ran := 0
	for _, rec := range e.calls(t, "mcp__up__job", "bob") {
		if rec.Executed && rec.Status == warden.StatusRan {
			ran++
		}
	}
	if ran != 2 {
		t.Errorf("%d ran records of the job, want 2", ran)
	}
}

// An upstream task that fails (a protocol error, not a tool error) fails the
// gateway's task with the upstream's code and the pipeline's text; a client that
// does not take tasks reads it as a tool error, as for any upstream error.
func TestTaskOfTheUpstreamFails(t *testing.T) {
	u := startTaskUpstream(t)
	e := taskUpstreamGateway(t, u)
	r := e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__up__broken_job", "arguments": map[string]any{}}, true)
	var task mcptasks.Task
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ResultType != "task" {
		t.Fatalf("broken_job: %s %+v, want a task", r.Result, r.Error)
	}
	failed := e.taskUntil(t, gwBobToken, task.TaskID, mcptasks.StatusFailed)
	if failed.Error == nil || failed.Result != nil || !strings.Contains(failed.Error.Message, "the job's machine is gone") {
		t.Errorf("the failed task: %+v (error %+v), want the upstream's error and no result", failed, failed.Error)
	}
	r = e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__up__broken_job", "arguments": map[string]any{}}, false)
	if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "the job's machine is gone") {
		t.Errorf("broken_job without the extension: %s %+v, want a tool error", r.Result, r.Error)
	}
	if rec := e.lastCall(t, "mcp__up__broken_job", "bob"); !rec.Executed || rec.Status != warden.StatusFailed {
		t.Errorf("audit of the failed job: %+v", rec)
	}
}

// Cancelling the gateway's task cancels the upstream's.
func TestTaskOfTheUpstreamCancelled(t *testing.T) {
	u := startTaskUpstream(t)
	e := taskUpstreamGateway(t, u)
	r := e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__up__job", "arguments": map[string]any{}}, true)
	var task mcptasks.Task
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ResultType != "task" {
		t.Fatalf("job: %s %+v, want a task", r.Result, r.Error)
	}
	if r := e.post2026(t, gwBobToken, "tasks/cancel", map[string]any{"taskId": task.TaskID}, true); r.Error != nil {
		t.Fatalf("tasks/cancel: %+v", r.Error)
	}
	select {
	case <-u.cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream's task was never cancelled")
	}
}

// An upstream task that asks its client's user: the gateway's task waits for input
// with the upstream's question (judged and recorded as elicitation:up), tasks/update
// answers it, the answer reaches the upstream's task, and the task completes.
func TestTaskOfTheUpstreamAsks(t *testing.T) {
	u := startTaskUpstream(t)
	e := taskUpstreamGateway(t, u)
	// The client declares elicitation beside the extension: the upstream's question is
	// one it can answer.
	r := e.post2026Caps(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__up__ask_job", "arguments": map[string]any{}},
		map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{mcptasks.Extension: map[string]any{}}})
	var task mcptasks.Task
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ResultType != "task" {
		t.Fatalf("ask_job: %s %+v, want a task", r.Result, r.Error)
	}
	var waiting mcptasks.Task
	mcptest.WaitFor(t, 30*time.Second, "the task stops working", func() bool {
		var err *mcptasks.WireError
		if waiting, err = e.taskGet(t, gwBobToken, task.TaskID); err != nil {
			t.Fatal(err)
		}
		return waiting.Status != mcptasks.StatusWorking
	})
	if waiting.Status != mcptasks.StatusInputRequired || !strings.Contains(string(waiting.InputRequests["who"]), "Who runs the job?") {
		t.Fatalf("the task of an asking upstream: %+v (error %+v), want input_required with the upstream's question", waiting, waiting.Error)
	}
	upd := e.post2026(t, gwBobToken, "tasks/update", map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{
		"who": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
	}}, true)
	if upd.Error != nil {
		t.Fatalf("tasks/update: %+v", upd.Error)
	}
	done := e.taskUntil(t, gwBobToken, task.TaskID, mcptasks.StatusCompleted)
	if text, isErr := taskText(t, done); isErr || text != "job run by Ada" {
		t.Errorf("the task's result: %q (error %v)", text, isErr)
	}
	if recs := e.calls(t, "elicitation:up", "bob"); len(recs) != 1 {
		t.Errorf("audit of the relayed question: %+v, want one record", recs)
	}
}
