//lint:file-ignore SA1019 logging is deprecated from protocol 2026-07-28 on, but the 2025 protocol line the gateway serves has it

package gateway

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logForwarder passes the log messages an upstream sends during one call to the
// client session whose call it is.
type logForwarder struct {
	log     *slog.Logger
	tool    string
	session *mcp.ServerSession
}

// forward is the call's [upstream.CallOptions.Log] hook: the message goes to the
// calling client as it is, at or above the level that client set with
// logging/setLevel (none before it sets one), which the session applies.
func (f *logForwarder) forward(ctx context.Context, p *mcp.LoggingMessageParams) {
	if err := f.session.Log(ctx, p); err != nil {
		f.log.Debug("cannot forward an upstream's log message to the client", "tool", f.tool, "error", err)
	}
}
