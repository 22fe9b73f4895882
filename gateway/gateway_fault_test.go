package gateway_test

import (
	"testing"

	"github.com/wardenhq/warden"
)

// The fault text reads "This will not change during this run — do not call it again."
// In the gateway a run is an MCP session: once a tool's authorization faulted, later
// calls to it in the same session are refused with the same text without asking the
// policy (which would now allow), and every call is audited; another session is judged
// afresh.
func TestGatewayFaultLastsTheSession(t *testing.T) {
	// A condition whose cost grows with the square of args.items: 2000 equal items
	// exceed the default cost limit, a call without items does not.
	policy := gwPolicy + `  - id: distinct-items
    when: 'tool == "mcp__fault__echo" && has(args.items) && args.items.exists(x, args.items.exists(y, x != y))'
    effect: deny
`
	e := gwStart(t, gwSetup{policy: policy})
	w := e.connect(t, gwWriterToken, nil)
	items := make([]string, 2000)
	for i := range items {
		items[i] = "aaaa"
	}
	fault := warden.UnauthorizedText("mcp__fault__echo")
	gwWant(t, gwCall(t, w, "mcp__fault__echo", map[string]any{"text": "hi", "items": items}), true, fault)
	if rec := e.lastCall(t, "mcp__fault__echo", "writer-agent"); rec.Executed || rec.RuleID != "distinct-items" {
		t.Errorf("audit of the faulted call: %+v", rec)
	}
	// The same session: refused without asking the policy again.
	gwWant(t, gwCall(t, w, "mcp__fault__echo", map[string]any{"text": "hi"}), true, fault)
	rec := e.lastCall(t, "mcp__fault__echo", "writer-agent")
	if rec.Executed || rec.Status != warden.StatusRefused || rec.RuleID != "checker.fault" {
		t.Errorf("audit of the call after the fault: %+v", rec)
	}
	// Other tools of the session are judged as usual.
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "todo", "text": "milk"}), false, `Wrote note "todo" (4 bytes).`)
	// A new session is judged afresh.
	w2 := e.connect(t, gwWriterToken, nil)
	if res := gwCall(t, w2, "mcp__fault__echo", map[string]any{"text": "hi"}); res.IsError {
		t.Errorf("a new session inherited the fault: %+v", res)
	}
}
