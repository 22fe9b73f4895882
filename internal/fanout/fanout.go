// Package fanout delivers one event to several sinks, each isolated from the others:
// a sink that panics is recovered on its own and logged, and the sinks after it still
// get the event. It is the one fan-out of the MCP packages (the gateway's sinks, the
// transport denials and pin changes of package upstream and package pin), so each of
// them isolates sinks the same way and logs to the logger its caller configured, not
// to a process-wide default.
package fanout

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/wardenhq/warden"
)

// Sinks is a [warden.Sink] that delivers every event to each of its sinks in order,
// skipping nil ones. A panic in a sink is recovered for that sink alone and logged to
// Log at error level (a nil Log discards it); the sinks after it still get the event,
// and Emit never panics because of a sink. The zero value delivers nothing.
type Sinks struct {
	Log   *slog.Logger
	Sinks []warden.Sink
}

// Emit delivers e to every sink of f, as the type's documentation says.
func (f Sinks) Emit(ctx context.Context, e warden.Event) {
	for i, s := range f.Sinks {
		if s != nil {
			emitOne(ctx, f.Log, i, s, e)
		}
	}
}

// Emit delivers e to sink (which may be nil) with the same isolation as [Sinks]: a
// panic is recovered and logged to log (nil: discarded).
func Emit(ctx context.Context, log *slog.Logger, sink warden.Sink, e warden.Event) {
	if sink != nil {
		emitOne(ctx, log, 0, sink, e)
	}
}

func emitOne(ctx context.Context, log *slog.Logger, i int, s warden.Sink, e warden.Event) {
	defer func() {
		if r := recover(); r != nil && log != nil {
			log.LogAttrs(ctx, slog.LevelError, "warden: event sink panicked",
				slog.String("event", e.Name), slog.Int("sink", i), slog.String("panic", fmt.Sprint(r)))
		}
	}()
	s.Emit(ctx, e)
}
