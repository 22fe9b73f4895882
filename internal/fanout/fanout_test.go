package fanout_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fanout"
)

// A sink that panics does not starve the sinks after it, and its panic is logged to
// the configured logger.
func TestPanickingSinkDoesNotStarveTheNext(t *testing.T) {
	var logged bytes.Buffer
	var first, last warden.Recorder
	boom := warden.SinkFunc(func(context.Context, warden.Event) { panic("sink exploded") })
	f := fanout.Sinks{
		Log:   slog.New(slog.NewTextHandler(&logged, nil)),
		Sinks: []warden.Sink{boom, &first, nil, boom, &last},
	}
	f.Emit(context.Background(), warden.Event{Name: "one"})
	f.Emit(context.Background(), warden.Event{Name: "two"})
	for _, r := range []*warden.Recorder{&first, &last} {
		if got := r.Events(); len(got) != 2 || got[0].Name != "one" || got[1].Name != "two" {
			t.Errorf("a sink after a panicking one got %+v, want events one and two", got)
		}
	}
	if n := strings.Count(logged.String(), "warden: event sink panicked"); n != 4 {
		t.Errorf("%d panics logged, want 4 (two sinks, two events):\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), `panic="sink exploded"`) || !strings.Contains(logged.String(), "event=one") {
		t.Errorf("the log does not say which event and what panicked:\n%s", logged.String())
	}
}

// Emit isolates one sink the same way; a nil sink and a nil logger are fine.
func TestEmitOne(t *testing.T) {
	var logged bytes.Buffer
	boom := warden.SinkFunc(func(context.Context, warden.Event) { panic("x") })
	fanout.Emit(context.Background(), slog.New(slog.NewTextHandler(&logged, nil)), boom, warden.Event{Name: "e"})
	if !strings.Contains(logged.String(), "warden: event sink panicked") {
		t.Errorf("the panic was not logged: %q", logged.String())
	}
	fanout.Emit(context.Background(), nil, boom, warden.Event{Name: "e"}) // discarded, no panic
	fanout.Emit(context.Background(), nil, nil, warden.Event{Name: "e"})
	var r warden.Recorder
	fanout.Emit(context.Background(), nil, &r, warden.Event{Name: "e"})
	if len(r.Events()) != 1 {
		t.Errorf("events %+v, want one", r.Events())
	}
}
