// Progress notifications, recorded and checked for the tests of package upstream
// and package gateway.

package mcptest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProgressLog records progress notifications, in the order they arrive. The zero
// value is ready to use.
type ProgressLog struct {
	mu    sync.Mutex
	list  []mcp.ProgressNotificationParams
	added chan struct{} // closed (and replaced) by every Add
}

// Add records p.
func (l *ProgressLog) Add(p *mcp.ProgressNotificationParams) {
	l.mu.Lock()
	l.list = append(l.list, *p)
	if l.added != nil {
		close(l.added)
		l.added = nil
	}
	l.mu.Unlock()
}

// WaitLen waits until at least n notifications are recorded, woken by each Add (no
// polling), and returns them; it fails tb when timeout passes first.
func (l *ProgressLog) WaitLen(tb testing.TB, n int, timeout time.Duration) []mcp.ProgressNotificationParams {
	tb.Helper()
	expired := time.After(timeout)
	for {
		l.mu.Lock()
		if len(l.list) >= n {
			list := append([]mcp.ProgressNotificationParams(nil), l.list...)
			l.mu.Unlock()
			return list
		}
		if l.added == nil {
			l.added = make(chan struct{})
		}
		added := l.added
		l.mu.Unlock()
		select {
		case <-added:
		case <-expired:
			tb.Fatalf("%d progress notifications after %s, want at least %d: %+v", l.Len(), timeout, n, l.All())
			return nil
		}
	}
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
