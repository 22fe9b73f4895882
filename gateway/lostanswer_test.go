package gateway_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/upstream"
)

// An upstream that never answers one call (the fault server's hang: its handler
// never returns, so no response is ever written, as when an answer is lost on the
// stdio leg) is never silent: limits.call_timeout ends the call with an error
// result the caller reads, and the audit records the call as executed and failed,
// lasting the timeout, never as an intent whose outcome stays unknown. While the
// call waits, the stdio wire log shows it written to the server with no response
// read back; the connection it held is closed at the timeout, and the next call is
// answered.
var lostTrace = regexp.MustCompile(`^server process [0-9]+, id [0-9]+: tools/call written to the server at [0-9T:.Z-]+; no response with that id read back from the server$`)

func TestGatewayLostAnswerTimesOut(t *testing.T) {
	const timeout = 5 * time.Second
	e := gwStart(t, gwSetup{extra: fmt.Sprintf("limits:\n  call_timeout: %s\n", timeout)})
	w := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, w, "mcp__fault__echo", map[string]any{"text": "before"}), false, "before")

	type answer struct {
		res  *mcp.CallToolResult
		err  error
		took time.Duration
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		res, err := w.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__fault__hang", Arguments: map[string]any{}})
		done <- answer{res, err, time.Since(start)}
	}()
	e.log.WaitCount(t, 30*time.Second, 1, "hanging")
	var (
		waiting []string
		pid     int
	)
	for _, l := range upstream.StdioWireLogs() {
		for _, c := range l.Outstanding() {
			if c.Method == "tools/call" {
				waiting = append(waiting, l.Trace(c.ID))
				pid = l.PID
			}
		}
	}
	if len(waiting) != 1 || !lostTrace.MatchString(waiting[0]) {
		t.Errorf("the stdio wire logs while the call hangs show these tools/call without a response:\n%s\nwant the one hanging call, written and not answered", strings.Join(waiting, "\n"))
	}

	var a answer
	select {
	case a = <-done:
	case <-time.After(timeout + 30*time.Second):
		t.Fatalf("the unanswered call did not return within %s of its %s call timeout", 30*time.Second, timeout)
	}
	if a.err != nil {
		t.Fatalf("the unanswered call: %v, want an error result", a.err)
	}
	gwWant(t, a.res, true, `Tool 'mcp__fault__hang' failed: server "fault": tool "hang" did not answer within 5s: context deadline exceeded`)
	if a.took < timeout {
		t.Errorf("the unanswered call returned after %s, before its %s call timeout", a.took, timeout)
	}
	rec := e.lastCall(t, "mcp__fault__hang", "writer-agent")
	if !rec.Executed || rec.Status != warden.StatusFailed || rec.Unknown || rec.Stage != warden.StageExecute ||
		rec.Duration < timeout || rec.Duration > a.took || rec.ResultSize != len(mcptest.ResultText(a.res)) {
		t.Errorf("audit of the unanswered call: %+v\nwant executed, failed, not unknown, at stage execute, lasting the call timeout", rec)
	}
	mcptest.WaitFor(t, 30*time.Second, "the connection of the unanswered call is closed", func() bool {
		return !slices.ContainsFunc(upstream.StdioWireLogs(), func(l upstream.WireLog) bool { return l.PID == pid })
	})
	gwWant(t, gwCall(t, w, "mcp__fault__echo", map[string]any{"text": "after"}), false, "after")
}
