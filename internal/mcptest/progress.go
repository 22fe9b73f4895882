// Progress notifications, recorded and checked for the tests of package upstream
// and package gateway.

package mcptest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProgressLog records progress notifications, in the order they arrive.
type ProgressLog struct {
	mu   sync.Mutex
	list []mcp.ProgressNotificationParams
}

// Add records p.
func (l *ProgressLog) Add(p *mcp.ProgressNotificationParams) {
	l.mu.Lock()
	l.list = append(l.list, *p)
	l.mu.Unlock()
}

// All returns the notifications recorded so far.
func (l *ProgressLog) All() []mcp.ProgressNotificationParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]mcp.ProgressNotificationParams(nil), l.list...)
}

// Len is the number of notifications recorded so far.
func (l *ProgressLog) Len() int { return len(l.All()) }

// ClientOptions are an SDK client's options recording every progress notification.
func (l *ProgressLog) ClientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			l.Add(req.Params)
		},
	}
}

// WantSteps checks that got is exactly the fault server's n steps, in order, each
// with token.
func WantSteps(t testing.TB, got []mcp.ProgressNotificationParams, n int, token any) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d progress notifications, want %d: %+v", len(got), n, got)
	}
	for i, p := range got {
		step := i + 1
		if p.ProgressToken != token || p.Progress != float64(step) || p.Total != float64(n) || p.Message != fmt.Sprintf("step %d of %d", step, n) {
			t.Errorf("notification %d: %+v, want token %v, progress %d of %d", i, p, token, step, n)
		}
	}
}
