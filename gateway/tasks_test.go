package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptasks"
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
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for _, k := range []string{"name", "taskId"} {
		if v, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	resp, err := (&http.Client{Transport: e.tr, Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if d, ok := strings.CutPrefix(lines[i], "data: "); ok {
				raw = []byte(d)
				break
			}
		}
	}
	var r taskReply
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: HTTP %d %q is not a JSON-RPC answer: %v", method, resp.StatusCode, raw, err)
	}
	r.status = resp.StatusCode
	return r
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		task, err := e.taskGet(t, token, id)
		if err != nil {
			t.Fatalf("tasks/get %s: %+v", id, err)
		}
		if task.Status == want {
			return task
		}
		if task.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("task %s: %+v, want %s", id, task, want)
		}
		time.Sleep(20 * time.Millisecond) // a client's polling of a real gateway
	}
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		var rec *store.CallRecord
		for _, r := range e.calls(t, "mcp__notes__delete_note", "bob") {
			if strings.Contains(string(r.Args), `"b"`) {
				rec = &r
			}
		}
		if rec != nil {
			// Recorded like any call whose wait ended undecided: pending, not run.
			if rec.Executed || rec.Status != warden.StatusPending || rec.Stage != warden.StageHuman {
				t.Errorf("the cancelled call's record: %+v, want pending at the human stage, not executed", rec)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled call was never recorded")
		}
		time.Sleep(20 * time.Millisecond)
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
