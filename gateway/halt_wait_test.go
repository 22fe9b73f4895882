package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// A call waiting for an operator when its session is halted does not run, even when
// the operator approves it afterwards: the caller reads the halt text, and the audit
// log records the call refused.
func TestHaltWhileWaitingForAnOperator(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 2m\n"})
	w := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "a", "text": "x"}), false, `Wrote note "a" (1 bytes).`)

	created, stop := e.asked.watch()
	defer stop()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	waiting := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := w.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__notes__delete_note", Arguments: map[string]any{"name": "a"}})
		waiting <- answer{res, err}
	}()
	var p store.Pending
	select {
	case p = <-created:
	case <-time.After(time.Minute):
		t.Fatal("the delete did not ask an operator within a minute")
	}
	// The same session halts while the delete waits.
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "b", "text": "my password"}), true, gwHaltText)
	if _, err := e.st.Decide(context.Background(), p.ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	var got answer
	select {
	case got = <-waiting:
	case <-time.After(time.Minute):
		t.Fatal("the waiting delete did not end after the approval")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	gwWant(t, got.res, true, gwHaltText)
	for _, r := range e.calls(t, "mcp__notes__delete_note", "writer-agent") {
		if r.Executed {
			t.Errorf("the delete ran after its session was halted: %+v", r)
		}
	}
	rec := e.lastCall(t, "mcp__notes__delete_note", "writer-agent")
	if rec.Executed || rec.Status != warden.StatusRefused || rec.Stage != warden.StageHuman || !strings.Contains(rec.Rationale+rec.Reason, "halted") {
		t.Errorf("audit of the delete: %+v", rec)
	}
	// The note is still there (read by a new session).
	gwWant(t, gwCall(t, e.connect(t, gwWriterToken, nil), "mcp__notes__read_note", map[string]any{"name": "a"}), false, "x")
}
