// Progress routing: notifications/progress from an upstream reach the hook of the
// call in flight that asked for them, in order, and never a call that has returned.

package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressRoute takes the progress notifications of one call to its Progress hook:
// the SDK's handler hands them over without waiting, a goroutine of the call runs
// the hook.
type progressRoute struct {
	token string
	// The connection's counters when the route opened.
	readBase, handledBase int64

	mu      sync.Mutex
	ended   bool
	dropped int
	queue   chan *mcp.ProgressNotificationParams
	done    chan struct{} // closed when the hook's goroutine has returned
}

// deliver queues p for the hook, or drops it when its queue is full; it never
// blocks. It reports false when the route has ended.
func (r *progressRoute) deliver(p *mcp.ProgressNotificationParams) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	select {
	case r.queue <- p:
	default:
		r.dropped++
	}
	return true
}

// openProgress starts the progress route of a call on c (which the caller holds);
// the caller registers it on c.
func (u *Server) openProgress(ctx context.Context, c *upstreamConn, hook func(context.Context, *mcp.ProgressNotificationParams)) *progressRoute {
	r := &progressRoute{
		token:       fmt.Sprintf("warden-%d", u.progressSeq.Add(1)),
		handledBase: c.progressHandled.Load(),
		queue:       make(chan *mcp.ProgressNotificationParams, progressBuffer),
		done:        make(chan struct{}),
	}
	if c.progressRead != nil {
		r.readBase = c.progressRead.Load()
	}
	go func() {
		defer close(r.done)
		for p := range r.queue {
			u.runProgress(ctx, hook, p)
		}
	}()
	return r
}

// runProgress calls hook, containing a panic.
func (u *Server) runProgress(ctx context.Context, hook func(context.Context, *mcp.ProgressNotificationParams), p *mcp.ProgressNotificationParams) {
	defer func() {
		if r := recover(); r != nil {
			u.log.Error("progress hook panicked", slog.String("panic", fmt.Sprint(r)))
		}
	}()
	hook(ctx, p)
}

// closeProgress ends the call's progress route once the call is over: when the
// upstream answered, it first lets the SDK handle the notifications that arrived
// ahead of the answer; then it unregisters the route and waits until the hook has
// seen what is queued (or ctx ends).
func (u *Server) closeProgress(ctx context.Context, c *upstreamConn, r *progressRoute, answered bool) {
	if answered {
		u.settleProgress(c, r)
	}
	u.mu.Lock()
	if c.progress == r {
		c.progress = nil
	}
	u.mu.Unlock()
	r.mu.Lock()
	r.ended = true
	dropped := r.dropped
	close(r.queue)
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	if dropped > 0 {
		u.log.Debug("progress notifications dropped: the call's queue was full", slog.Int("pid", c.pid), slog.Int("dropped", dropped))
	}
}

// settleProgress waits, at most progressSettleMax, until the SDK has handled the
// progress notifications the upstream sent before answering. The SDK delivers an
// answer as soon as it is read, but handles notifications on a goroutine of its own,
// so some read before the answer may not have been handled yet. For a command
// server every notification read is counted, so the wait ends when as many have been
// handled; for a url server it ends when none was handled for progressQuiet.
func (u *Server) settleProgress(c *upstreamConn, r *progressRoute) {
	deadline := time.Now().Add(progressSettleMax)
	handled := func() int64 { return c.progressHandled.Load() - r.handledBase }
	if c.progressRead != nil {
		want := c.progressRead.Load() - r.readBase
		for handled() < want {
			if time.Now().After(deadline) {
				u.log.Debug("progress notifications not handled in time after the answer", slog.Int("pid", c.pid), slog.Int64("read", want), slog.Int64("handled", handled()))
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
		return
	}
	for n := handled(); time.Now().Before(deadline); {
		time.Sleep(progressQuiet)
		m := handled()
		if m == n {
			return
		}
		n = m
	}
}

// onProgress is the SDK's handler of every upstream progress notification: it passes
// those of a call in flight, with the call's token, to the call's route, and drops
// the others.
func (u *Server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	u.mu.Lock()
	c := u.sessions[req.Session]
	var r *progressRoute
	if c != nil {
		r = c.progress
	}
	u.mu.Unlock()
	pid := 0
	if c != nil {
		pid = c.pid
		// Counted once handed over: settleProgress waits for this.
		defer c.progressHandled.Add(1)
	}
	tok, ok := req.Params.ProgressToken.(string)
	switch {
	case r == nil:
		u.log.Debug("progress notification dropped: no call asking for progress is in flight on the connection", slog.Int("pid", pid))
	case !ok || tok != r.token:
		u.log.Debug("progress notification dropped: its token is not the call's", slog.Int("pid", pid))
	case !r.deliver(req.Params):
		u.log.Debug("progress notification dropped: the call has ended", slog.Int("pid", pid))
	}
}

// progressCounter wraps a command server's transport so that every progress
// notification is counted as it is read (see [Server.settleProgress]).
type progressCounter struct {
	mcp.Transport
	read, changed *atomic.Int64
}

func (t *progressCounter) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &progressCountingConn{Connection: conn, read: t.read, changed: t.changed}, nil
}

type progressCountingConn struct {
	mcp.Connection
	read, changed *atomic.Int64
}

func (c *progressCountingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() {
		switch req.Method {
		case "notifications/progress":
			c.read.Add(1)
		case "notifications/tools/list_changed":
			c.changed.Add(1)
		}
	}
	return msg, err
}
