package upstream

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

// A call the caller cancelled has ended: while its connection waits for the
// upstream's ping (CancelGrace), an elicitation the upstream sends is refused, not
// passed to the caller whose call it was.
func TestAttack15NoAsksAfterCancel(t *testing.T) {
	t.Parallel()
	var logs mcptest.LogBuffer
	// -no-pong holds the connection in its cancel grace for as long as the test runs.
	// The server asks by a server-to-client request, which exists up to 2025-11-25.
	cfg := faultServer("askafter", "-ask-after-cancel", "-no-pong")
	cfg.Protocol = "2025-11-25"
	u := newUpstream(t, cfg, Options{Policy: faultPolicy(1), CancelGrace: time.Minute,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	discover(t, u)
	var asked atomic.Int32
	asks := &ClientRequests{Elicitation: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := u.Call(ctx, "askafter", nil, &CallOptions{Client: asks})
		errs <- err
	}()
	logs.WaitCount(t, 30*time.Second, 1, "askafter: waiting for the cancel")
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	logs.WaitCount(t, 30*time.Second, 1, "askafter: elicitation after the cancel:")
	if n := asked.Load(); n != 0 {
		t.Errorf("the cancelled call's client was asked %d times after its call ended", n)
	}
	if logs.Count("askafter: elicitation after the cancel: error:", "only answered during a call") != 1 {
		t.Errorf("the upstream's elicitation was not refused as one with no call in flight:\n%s", logs.String())
	}
}
