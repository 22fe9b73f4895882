// Log messages (notifications/message) of upstreams, routed to the call in flight on
// their connection.

//lint:file-ignore SA1019 logging is deprecated from protocol 2026-07-28 on, but the 2025 protocol line the gateway serves has it, and its clients expect an upstream's log messages

package upstream

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LogHook receives an upstream's log message during a call (see [CallOptions.Log]).
type LogHook = func(ctx context.Context, p *mcp.LoggingMessageParams)

// routeLogs has the Server's MCP client pass every log message to onLog.
func (u *Server) routeLogs(o *mcp.ClientOptions) {
	o.LoggingMessageHandler = u.onLog
}

// askForLogs asks a new connection's upstream, when it offers logging, for every
// level: each call's client filters by the level it asked for. A refusal is logged;
// the connection serves on. From protocol 2026-07-28 on the level is asked for by
// each request (see [askLogsOf]).
func (u *Server) askForLogs(ctx context.Context, c *upstreamConn) {
	init := c.cs.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	if stateless(c.cs) {
		c.logsPerRequest = true
		return
	}
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		u.log.Warn("the upstream refused logging/setLevel; its log messages may not reach clients", slog.Int("pid", c.pid), slog.String("error", err.Error()))
	}
}

// stateless reports whether cs speaks protocol 2026-07-28 or later, where every
// request stands alone (no session state, no server-to-client requests).
func stateless(cs *mcp.ClientSession) bool {
	init := cs.InitializeResult()
	return init != nil && init.ProtocolVersion >= "2026-07-28"
}

// askLogsOf puts the request-scoped log level (every level) into params's _meta
// when c's upstream takes it there (see askForLogs). params is the gateway's own.
func askLogsOf(c *upstreamConn, params mcp.Params) {
	if !c.logsPerRequest || params == nil {
		return
	}
	meta := params.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	meta[mcp.MetaKeyLogLevel] = mcp.LoggingLevel("debug")
	params.SetMeta(meta)
}

// logRoute is where the log messages of a connection's call in flight go. Like
// progress notifications, log messages are counted as read and as handed over (the
// SDK hands them to onLog on a goroutine of its own), so that a call waits for the
// ones its upstream sent ahead of the answer (see Server.settleRouted).
type logRoute struct {
	ctx                   context.Context
	hook                  LogHook
	readBase, handledBase int64
	handled               chan struct{} // signalled (capacity 1) by each one handed over
}

// openLogs makes the log route of a call on c (which the caller holds).
func (u *Server) openLogs(ctx context.Context, c *upstreamConn, hook LogHook) *logRoute {
	r := &logRoute{ctx: ctx, hook: hook, handledBase: c.progressHandled.Load(), handled: make(chan struct{}, 1)}
	if c.progressRead != nil {
		r.readBase = c.progressRead.Load()
	}
	return r
}

// onLog passes an upstream's log message to the call in flight on its connection,
// or to the Server's log.
func (u *Server) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	if req == nil || req.Params == nil {
		return
	}
	u.mu.Lock()
	var route *logRoute
	var progress *progressRoute
	c := u.sessions[req.Session]
	if c != nil {
		route, progress = c.log, c.progress
	}
	u.mu.Unlock()
	// Counted once handed over, whoever took it: the call's settle waits for this.
	handled := func() {
		if c == nil {
			return
		}
		c.progressHandled.Add(1)
		for _, ch := range []chan struct{}{logWake(route), progressWake(progress)} {
			if ch != nil {
				select {
				case ch <- struct{}{}:
				default: // a wake-up is pending already
				}
			}
		}
	}
	if route == nil {
		// Counted before it is logged: a call that begins after the line must find it
		// counted.
		handled()
		u.log.Debug("upstream log message", slog.String("level", string(req.Params.Level)), slog.String("logger", req.Params.Logger), slog.Any("data", req.Params.Data))
		return
	}
	defer handled() // after the hook: the call's settle waits for the hook to have seen it
	defer func() {
		if r := recover(); r != nil {
			u.log.Error("a call's log hook panicked", slog.String("panic", fmt.Sprint(r)))
		}
	}()
	route.hook(route.ctx, req.Params)
}

func logWake(r *logRoute) chan struct{} {
	if r == nil {
		return nil
	}
	return r.handled
}

func progressWake(r *progressRoute) chan struct{} {
	if r == nil {
		return nil
	}
	return r.handled
}
