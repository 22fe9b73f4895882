package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/mcptasks"
	"github.com/wardenhq/warden/internal/mcptest"
)

// tasksFixture serves the fixture's HTTP handler (as -listen does) and posts
// 2026-07-28 requests to it by hand: the SDK's client knows no tasks.
type tasksFixture struct {
	url string
	id  int
}

func newTasksFixture(t *testing.T) *tasksFixture {
	t.Helper()
	srv := httptest.NewServer(httpHandler(newServer(options{}), options{}))
	t.Cleanup(srv.Close)
	return &tasksFixture{url: srv.URL + "/mcp"}
}

// rpcReply is a JSON-RPC response: result or error.
type rpcReply struct {
	Result json.RawMessage     `json:"result"`
	Error  *mcptasks.WireError `json:"error"`
}

// post sends method with params at protocol 2026-07-28, with the routing headers,
// declaring elicitation and (when declare) the tasks extension, and returns the
// response to it (from a JSON body or an event stream).
func (f *tasksFixture) post(t *testing.T, method, name string, params map[string]any, declare bool) rpcReply {
	t.Helper()
	caps := map[string]any{"elicitation": map[string]any{}}
	if declare {
		caps["extensions"] = map[string]any{mcptasks.Extension: map[string]any{}}
	}
	f.id++
	header := map[string]string{}
	if name != "" {
		header["Mcp-Name"] = name
	}
	r := mcptest.Post2026(t, mcptest.Request2026{URL: f.url, ID: f.id, Method: method, Params: params, Capabilities: caps, Header: header})
	return rpcReply{Result: r.Result, Error: (*mcptasks.WireError)(r.Error)}
}

func (f *tasksFixture) call(t *testing.T, tool string, args map[string]any, declare bool) rpcReply {
	t.Helper()
	return f.post(t, "tools/call", tool, map[string]any{"name": tool, "arguments": args}, declare)
}

func decodeAs[T any](t *testing.T, r rpcReply) T {
	t.Helper()
	var v T
	if r.Error != nil {
		t.Fatalf("error %d %s, want a result", r.Error.Code, r.Error.Message)
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	return v
}

// created calls tool as a declaring request and returns the task it became.
func (f *tasksFixture) created(t *testing.T, tool string, args map[string]any) mcptasks.Task {
	t.Helper()
	task := decodeAs[mcptasks.Task](t, f.call(t, tool, args, true))
	if task.ResultType != "task" || task.TaskID == "" {
		t.Fatalf("%s: %+v, want a CreateTaskResult", tool, task)
	}
	return task
}

// until polls the task id (bounded) until its status is one of want or terminal.
func (f *tasksFixture) until(t *testing.T, id string, want mcptasks.Status) mcptasks.Task {
	t.Helper()
	var task mcptasks.Task
	mcptest.WaitFor(t, 20*time.Second, fmt.Sprintf("task %s is %s or over", id, want), func() bool {
		task = decodeAs[mcptasks.Task](t, f.post(t, mcptasks.MethodGet, id, map[string]any{"taskId": id}, true))
		return task.Status == want || task.Status.Terminal()
	})
	return task
}

type toolResult struct {
	ResultType string `json:"resultType"`
	TaskID     string `json:"taskId"`
	IsError    bool   `json:"isError"`
	Content    []struct {
		Text string `json:"text"`
	} `json:"content"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

func resultText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result %s: want one content item (%v)", raw, err)
	}
	return r.Content[0].Text
}

// The 2026-07-28 endpoint advertises the tasks extension; the stateful one (the
// 2025 protocol line) does not, as it serves no tasks.
func TestTasksExtensionAdvertised(t *testing.T) {
	f := newTasksFixture(t)
	type discovered struct {
		Capabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"capabilities"`
	}
	discover := decodeAs[discovered](t, f.post(t, "server/discover", "", nil, false))
	if _, ok := discover.Capabilities.Extensions[mcptasks.Extension]; !ok {
		t.Errorf("server/discover capabilities.extensions = %v, want %s", discover.Capabilities.Extensions, mcptasks.Extension)
	}

	cs := connectFixture(t, nil, "-stdio")
	if ext := cs.InitializeResult().Capabilities.Extensions; ext[mcptasks.Extension] != nil {
		t.Errorf("the stdio server advertises %s: %v", mcptasks.Extension, ext)
	}
}

// slow_compute becomes a task for a request that declares the extension and
// completes with its answer; without the declaration it answers in its request.
// failing_job completes with isError, protocol_error_job fails, and a cancelled
// slow_compute ends cancelled.
func TestTasksLifecycleTools(t *testing.T) {
	f := newTasksFixture(t)
	if got := resultText(t, f.call(t, "greet", map[string]any{"name": "Ann"}, true).Result); got != "Hello, Ann!" {
		t.Errorf("greet = %q", got)
	}
	sync := decodeAs[toolResult](t, f.call(t, "slow_compute", map[string]any{"seconds": 0, "label": "sync"}, false))
	if sync.TaskID != "" || len(sync.Content) != 1 || sync.Content[0].Text != "slow_compute sync: done after 0s" {
		t.Errorf("slow_compute without the extension = %+v, want its answer", sync)
	}

	task := f.created(t, "slow_compute", map[string]any{"seconds": 0.2, "label": "task"})
	done := f.until(t, task.TaskID, mcptasks.StatusCompleted)
	if done.Status != mcptasks.StatusCompleted || resultText(t, done.Result) != "slow_compute task: done after 0.2s" {
		t.Errorf("slow_compute task = %+v (result %s)", done, done.Result)
	}

	failing := f.until(t, f.created(t, "failing_job", nil).TaskID, mcptasks.StatusCompleted)
	var fr toolResult
	if json.Unmarshal(failing.Result, &fr) != nil || failing.Status != mcptasks.StatusCompleted || !fr.IsError {
		t.Errorf("failing_job task = %+v (result %s), want completed with isError", failing, failing.Result)
	}
	broken := f.until(t, f.created(t, "protocol_error_job", nil).TaskID, mcptasks.StatusFailed)
	if broken.Status != mcptasks.StatusFailed || broken.Error == nil || broken.Error.Code != -32603 || broken.Result != nil {
		t.Errorf("protocol_error_job task = %+v, want failed with an internal error", broken)
	}

	long := f.created(t, "slow_compute", map[string]any{"seconds": 60, "label": "cancel"})
	if r := f.post(t, mcptasks.MethodCancel, long.TaskID, map[string]any{"taskId": long.TaskID}, true); r.Error != nil {
		t.Fatalf("tasks/cancel: %+v", r.Error)
	}
	if got := f.until(t, long.TaskID, mcptasks.StatusCancelled); got.Status != mcptasks.StatusCancelled {
		t.Errorf("cancelled slow_compute = %+v", got)
	}

	// Tools that run only as tasks refuse a request that does not declare the
	// extension (-32021, naming it).
	for _, tool := range []string{"failing_job", "test_tool_with_task"} {
		r := f.call(t, tool, nil, false)
		if r.Error == nil || r.Error.Code != mcptasks.CodeMissingRequiredClientCapability || !bytes.Equal(r.Error.Data, mcptasks.RequiredCapabilities()) {
			t.Errorf("%s without the extension: %s %+v, want -32021 with %s", tool, r.Result, r.Error, mcptasks.RequiredCapabilities())
		}
	}
}

// confirm_delete and multi_input wait in input_required for their elicitations and
// complete once tasks/update has answered them all; test_tool_with_task asks before
// it is a task and becomes one on the retry that answers.
func TestTasksInputTools(t *testing.T) {
	f := newTasksFixture(t)
	update := func(id string, answers map[string]any) {
		t.Helper()
		if r := f.post(t, mcptasks.MethodUpdate, id, map[string]any{"taskId": id, "inputResponses": answers}, true); r.Error != nil {
			t.Fatalf("tasks/update %v: %+v", answers, r.Error)
		}
	}
	accept := func(content map[string]any) map[string]any {
		return map[string]any{"action": "accept", "content": content}
	}

	confirm := f.created(t, "confirm_delete", map[string]any{"filename": "a.txt"})
	waiting := f.until(t, confirm.TaskID, mcptasks.StatusInputRequired)
	if waiting.Status != mcptasks.StatusInputRequired || waiting.InputRequests["confirm"] == nil || len(waiting.InputRequests) != 1 {
		t.Fatalf("confirm_delete task = %+v, want input_required with confirm", waiting)
	}
	update(confirm.TaskID, map[string]any{"confirm": accept(map[string]any{"confirm": true})})
	if done := f.until(t, confirm.TaskID, mcptasks.StatusCompleted); done.Status != mcptasks.StatusCompleted || resultText(t, done.Result) != "Deleted a.txt" {
		t.Errorf("confirm_delete after the answer = %+v (result %s)", done, done.Result)
	}

	multi := f.created(t, "multi_input", nil)
	if w := f.until(t, multi.TaskID, mcptasks.StatusInputRequired); len(w.InputRequests) != 2 {
		t.Fatalf("multi_input task = %+v, want two input requests", w)
	}
	update(multi.TaskID, map[string]any{"first": accept(map[string]any{"name": "one"})})
	if w := f.until(t, multi.TaskID, mcptasks.StatusInputRequired); w.Status != mcptasks.StatusInputRequired || len(w.InputRequests) != 1 || w.InputRequests["second"] == nil {
		t.Fatalf("multi_input after one answer = %+v, want input_required with second only", w)
	}
	update(multi.TaskID, map[string]any{"second": accept(map[string]any{"name": "two"})})
	if done := f.until(t, multi.TaskID, mcptasks.StatusCompleted); done.Status != mcptasks.StatusCompleted || resultText(t, done.Result) != "first=one; second=two" {
		t.Errorf("multi_input after both answers = %+v (result %s)", done, done.Result)
	}

	round1 := decodeAs[toolResult](t, f.call(t, "test_tool_with_task", nil, true))
	if round1.ResultType != "input_required" || round1.TaskID != "" || round1.InputRequests["user_name"] == nil || round1.RequestState == "" {
		t.Fatalf("test_tool_with_task round 1 = %+v, want input_required for user_name with a requestState and no task", round1)
	}
	round2 := f.post(t, "tools/call", "test_tool_with_task", map[string]any{
		"name": "test_tool_with_task", "arguments": map[string]any{},
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Alice"})},
		"requestState":   round1.RequestState,
	}, true)
	task := decodeAs[mcptasks.Task](t, round2)
	if task.ResultType != "task" || task.TaskID == "" {
		t.Fatalf("test_tool_with_task round 2 = %s, want a CreateTaskResult", round2.Result)
	}
	if strings.Contains(string(round2.Result), "requestState") {
		t.Errorf("the CreateTaskResult carries a requestState: %s", round2.Result)
	}
	if done := f.until(t, task.TaskID, mcptasks.StatusCompleted); done.Status != mcptasks.StatusCompleted || !strings.Contains(resultText(t, done.Result), "Alice") {
		t.Errorf("test_tool_with_task's task = %+v (result %s), want completed greeting Alice", done, done.Result)
	}
}
