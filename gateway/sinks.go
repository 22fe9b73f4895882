// Where the gateway's events go: the fan-out to every sink, and the log.

package gateway

import (
	"context"
	"log/slog"

	"github.com/wardenhq/warden"
)

// logSink writes the events an operator must notice (transport denials, changed
// tool definitions) to the log.
type logSink struct{ log *slog.Logger }

func (l logSink) Emit(_ context.Context, e warden.Event) {
	switch e.Name {
	case warden.EventTransportDenied, warden.EventDefinitionChanged:
		l.log.Warn(e.Name, "tool", e.Tool, "target", e.Target, "detail", e.Detail, "reason", e.Reason)
	}
}
