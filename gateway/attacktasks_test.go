package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptasks"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/internal/oidctest"
	"github.com/wardenhq/warden/store"
)

// attackReload puts c in force.
func (e *gwEnv) attackReload(t *testing.T, c *gateway.File) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.gw.Reload(ctx, c); err != nil {
		t.Fatalf("Reload: %v", err)
	}
}

// attackDeleteRecord waits (bounded) for the record of bob's delete_note(name).
func (e *gwEnv) attackDeleteRecord(t *testing.T, name string) store.CallRecord {
	t.Helper()
	var rec store.CallRecord
	mcptest.WaitFor(t, 30*time.Second, fmt.Sprintf("bob's delete_note(%s) is recorded as decided", name), func() bool {
		for _, r := range e.calls(t, "mcp__notes__delete_note", "bob") {
			if strings.Contains(string(r.Args), `"`+name+`"`) && r.Status != warden.StatusPending {
				rec = r
				return true
			}
		}
		return false
	})
	return rec
}

// A policy reload that forbids a call while it waits for an operator as a task:
// the approval given afterwards must not run it under the policy it began with
// (the task waits up to approvals.expires, 24 h by default, not approvals.wait).
func TestAttackTaskRunsUnderThePolicyOfBeforeAReload(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 1ms\n"})
	e.writeNotes(t, "keep")
	task := e.deleteAsTask(t, "keep")
	ps := e.pending(t, "mcp__notes__delete_note", `{"name":"keep"}`)
	if len(ps) != 1 {
		t.Fatalf("pending = %+v", ps)
	}
	const off = "Deleting notes is switched off."
	p2 := mcptest.WriteFile(t, e.dir, "policy2.yaml", []byte(gwPolicy+`  - id: no-deletes
    when: 'tool == "mcp__notes__delete_note"'
    effect: deny
    tell_llm: "`+off+`"
`))
	c := *e.cfg
	c.Policy = p2
	e.attackReload(t, &c)
	// The new policy refuses the same call made now.
	r := e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__notes__delete_note", "arguments": map[string]any{"name": "keep"}}, false)
	if !strings.Contains(string(r.Result), off) {
		t.Fatalf("delete after the reload: %s %+v, want the new policy's refusal", r.Result, r.Error)
	}
	if _, err := e.st.Decide(context.Background(), ps[0].ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	got := e.taskUntilTerminal(t, gwBobToken, task.TaskID)
	if text, isErr := taskText(t, got); !isErr || !strings.Contains(text, "the policy changed while the call waited") {
		t.Errorf("the waiting task after a reload that denies it and an approval: %q (error %v), want the refusal that says the policy changed", text, isErr)
	}
	for _, rec := range e.calls(t, "mcp__notes__delete_note", "bob") {
		if rec.Executed {
			t.Errorf("a delete ran after the reload that denies it: %+v", rec)
		}
	}
}

// A reload that removes a client's token while its call waits for an operator as a
// task: the approval given afterwards must not run the call of an identity the
// gateway no longer serves.
func TestAttackTaskRunsAfterItsTokenIsRemoved(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 1ms\n"})
	e.writeNotes(t, "keep")
	e.deleteAsTask(t, "keep")
	ps := e.pending(t, "mcp__notes__delete_note", `{"name":"keep"}`)
	if len(ps) != 1 {
		t.Fatalf("pending = %+v", ps)
	}
	c := *e.cfg
	c.Clients = nil
	for _, cl := range e.cfg.Clients {
		if cl.Principal != "bob" {
			c.Clients = append(c.Clients, cl)
		}
	}
	e.attackReload(t, &c)
	if _, err := e.st.Decide(context.Background(), ps[0].ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	rec := e.attackDeleteRecord(t, "keep")
	if rec.Executed || rec.Status != warden.StatusRefused || rec.Stage != warden.StageHuman {
		t.Errorf("the task of a removed token after the approval: %+v, want refused at the human stage, not executed", rec)
	}
}

// A halt of the principal while its task waits for an operator: the approval given
// afterwards does not run it (this holds).
func TestAttackTaskHaltedWhileWaiting(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 1ms\n"})
	e.writeNotes(t, "keep")
	task := e.deleteAsTask(t, "keep")
	ps := e.pending(t, "mcp__notes__delete_note", `{"name":"keep"}`)
	if len(ps) != 1 {
		t.Fatalf("pending = %+v", ps)
	}
	r := e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__notes__write_note", "arguments": map[string]any{"name": "b", "text": "my password"}}, false)
	if !strings.Contains(string(r.Result), gwHaltText) {
		t.Fatalf("the halting call: %s %+v", r.Result, r.Error)
	}
	if _, err := e.st.Decide(context.Background(), ps[0].ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	got := e.taskUntilTerminal(t, gwBobToken, task.TaskID)
	if got.Status != mcptasks.StatusCompleted {
		t.Fatalf("the halted task: %+v", got)
	}
	if text, isErr := taskText(t, got); !isErr || text != gwHaltText {
		t.Errorf("the halted task's result: %q (error %v), want the halt text", text, isErr)
	}
	if rec := e.attackDeleteRecord(t, "keep"); rec.Executed {
		t.Errorf("the delete ran after its principal was halted: %+v", rec)
	}
}

// taskUntilTerminal polls the task until it is terminal (bounded).
func (e *gwEnv) taskUntilTerminal(t *testing.T, token, id string) mcptasks.Task {
	t.Helper()
	var task mcptasks.Task
	mcptest.WaitFor(t, 30*time.Second, fmt.Sprintf("task %s ends", id), func() bool {
		var err *mcptasks.WireError
		if task, err = e.taskGet(t, token, id); err != nil {
			t.Fatalf("tasks/get %s: %+v", id, err)
		}
		return task.Status.Terminal()
	})
	return task
}

// Tasks belong to the gateway identity that made them. One subject of an issuer
// whose tokens map to two identities (here by a group claim: the writer
// "reader-sub" of no tenant, and the reader jwt-reader of tenant acme) must not
// reach the tasks of one identity with the token of the other: tenants and roles
// are the gateway's isolation, and everything else of a call (its approval, its
// halt, its audit) keys on them.
func TestAttackTaskOfAnotherIdentityOfTheSameSubject(t *testing.T) {
	o := oauthStart(t)
	writer := o.token(o.rsa, "reader-sub", func(c oidctest.Claims) { c["groups"] = []string{"writers"} })
	reader := o.token(o.rsa, "reader-sub", nil)
	r := o.post2026(t, writer, "tools/call", map[string]any{"name": "mcp__notes__delete_note", "arguments": map[string]any{"name": "x"}}, true)
	var task mcptasks.Task
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ResultType != "task" {
		t.Fatalf("the writer JWT's delete from a client that takes tasks: %s %+v, want a task", r.Result, r.Error)
	}
	if got, err := o.taskGet(t, writer, task.TaskID); err != nil || got.Status != mcptasks.StatusWorking {
		t.Fatalf("the writer's own tasks/get: %+v %+v", got, err)
	}
	if got, err := o.taskGet(t, reader, task.TaskID); err == nil || err.Code != -32602 {
		t.Errorf("jwt-reader of tenant acme reads the task of the writer reader-sub: %+v (error %+v), want the unknown-task error", got, err)
	}
	if r := o.post2026(t, reader, "tasks/cancel", map[string]any{"taskId": task.TaskID}, true); r.Error == nil {
		t.Errorf("jwt-reader of tenant acme cancels the writer's task: %s", r.Result)
	}
	if got, err := o.taskGet(t, writer, task.TaskID); err != nil || got.Status != mcptasks.StatusWorking {
		t.Errorf("the writer's task after the other identity's cancel: %+v %+v, want it still working", got, err)
	}
}

// One token cannot pin unbounded memory with tasks that wait for an operator: its
// tasks hold at most 16 MiB of requests, so of calls with 1 MiB arguments about 15
// become tasks and the rest wait in their request (answered after approvals.wait, so
// they hold nothing once answered). What each task holds is measured and logged.
func TestAttackTasksPinMemoryPerToken(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 1ms\n", policy: gwPolicy + `  - id: confirm-big
    when: 'tool == "mcp__fault__echo"'
    effect: escalate
    rationale: echoes need a person
`})
	const size = 1 << 20
	big := func(name string) bool {
		t.Helper()
		r := e.post2026(t, gwBobToken, "tools/call", map[string]any{"name": "mcp__fault__echo", "arguments": map[string]any{"text": name + strings.Repeat("x", size)}}, true)
		var task mcptasks.Task
		if r.Error != nil || json.Unmarshal(r.Result, &task) != nil {
			t.Fatalf("echo(%s) of 1 MiB: %+v", name, r.Error)
		}
		if task.ResultType == "task" {
			return true
		}
		if !strings.Contains(string(r.Result), "waiting for an operator") {
			t.Fatalf("echo(%s) of 1 MiB beyond the bound: %.300s, want the waiting text in its request", name, r.Result)
		}
		return false
	}
	big("big-warmup") // what the first call sets up once is not measured
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tasks := 1
	for i := range 20 {
		if big(fmt.Sprintf("big-%02d", i)) {
			tasks++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if tasks < 10 || tasks > 16 {
		t.Errorf("%d calls of 1 MiB arguments became tasks of one token, want the 16 MiB bound to stop them at about 15", tasks)
	}
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d tasks of %d-byte arguments: the heap grew %d MiB", tasks, size, held>>20)
	if held > 512<<20 {
		t.Errorf("one token's tasks pin %d MiB", held>>20)
	}
}

// A reload that removes the oauth mapping a JWT client's waiting task was made under
// (here the writers mapping): the approval given afterwards must not run the call of
// a client the gateway no longer maps any token to.
func TestAttackTaskRunsAfterItsJWTMappingIsRemoved(t *testing.T) {
	o := oauthStart(t)
	writer := o.token(o.rsa, "carol", func(c oidctest.Claims) { c["groups"] = []string{"writers"} })
	r := o.post2026(t, writer, "tools/call", map[string]any{"name": "mcp__notes__delete_note", "arguments": map[string]any{"name": "x"}}, true)
	var task mcptasks.Task
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ResultType != "task" {
		t.Fatalf("carol's delete from a client that takes tasks: %s %+v, want a task", r.Result, r.Error)
	}
	ps := o.pending(t, "mcp__notes__delete_note", `{"name":"x"}`)
	if len(ps) != 1 {
		t.Fatalf("pending = %+v", ps)
	}
	c := *o.cfg
	oa := *c.OAuth
	oa.Issuers = nil
	for _, is := range c.OAuth.Issuers {
		var kept []gateway.ClaimClient
		for _, cc := range is.Clients {
			if cc.Value != "writers" {
				kept = append(kept, cc)
			}
		}
		is.Clients = kept
		oa.Issuers = append(oa.Issuers, is)
	}
	c.OAuth = &oa
	o.attackReload(t, &c)
	if code, _, _ := o.post(t, "Bearer "+writer); code != http.StatusForbidden {
		t.Fatalf("carol's writer token after the reload: HTTP %d, want 403 (no mapping)", code)
	}
	if _, err := o.st.Decide(context.Background(), ps[0].ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	var rec store.CallRecord
	mcptest.WaitFor(t, 30*time.Second, "carol's delete is recorded as decided", func() bool {
		recs := o.calls(t, "mcp__notes__delete_note", "carol")
		if len(recs) == 0 || recs[len(recs)-1].Status == warden.StatusPending {
			return false
		}
		rec = recs[len(recs)-1]
		return true
	})
	if rec.Executed || rec.Status != warden.StatusRefused {
		t.Errorf("carol's task after its mapping was removed and the approval: %+v, want refused, not executed", rec)
	}
}
