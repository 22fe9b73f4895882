package otlp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type failingExporter struct{ sdktrace.SpanExporter }

func (failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	return errors.New("connection refused")
}

// Export failures are logged at most once per errorLogInterval, the next message
// counting the ones not logged; none reaches the batch processor.
func TestExportErrorsRateLimited(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &loggingExporter{SpanExporter: failingExporter{}, log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime})), endpoint: "http://c/v1/traces", limit: limiter{now: func() time.Time { return now }}}
	for _, step := range []time.Duration{0, time.Second, 30 * time.Second, 28 * time.Second, time.Second, time.Second} {
		now = now.Add(step)
		if err := e.ExportSpans(context.Background(), nil); err != nil {
			t.Fatalf("ExportSpans returned %v; want the error logged, not returned", err)
		}
	}
	want := `level=WARN msg="traces: spans could not be exported; calls go on, their spans are lost" endpoint=http://c/v1/traces spans=0 failures_not_logged=0 error="connection refused"
level=WARN msg="traces: spans could not be exported; calls go on, their spans are lost" endpoint=http://c/v1/traces spans=0 failures_not_logged=3 error="connection refused"
`
	if logs.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", logs.String(), want)
	}
	if e.lostSinceStart() != 6 {
		t.Errorf("lost %d batches, want 6", e.lostSinceStart())
	}
	if !strings.Contains(logs.String(), "failures_not_logged=3") {
		t.Error("the second message does not count the failures not logged")
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestErrorHandlerRateLimited(t *testing.T) {
	var logs bytes.Buffer
	h := ErrorHandler(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime})))
	for range 3 {
		h.Handle(errors.New("partial success: 2 spans rejected"))
	}
	want := `level=WARN msg="traces: OpenTelemetry error" errors_not_logged=0 error="partial success: 2 spans rejected"` + "\n"
	if logs.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", logs.String(), want)
	}
}
