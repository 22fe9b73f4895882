package otel_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/otel"
	"github.com/wardenhq/warden/policy"
)

func setup(t *testing.T, stages bool) (*tracetest.SpanRecorder, *warden.Guard) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sink := otel.NewSink(tp.Tracer("warden-test"), &otel.Options{StageSpans: stages})
	var reg warden.Registry
	run := func(context.Context, warden.Args, *warden.Credential) (any, error) { return "ok", nil }
	for _, name := range []string{"reader", "bash"} {
		if err := reg.Register(warden.Executable{Tool: warden.Tool{Name: name}, Run: run}); err != nil {
			t.Fatal(err)
		}
	}
	g, err := reg.Bind(warden.Config{Checkers: []warden.Checker{policy.ReadOnly()}, Sinks: []warden.Sink{sink}, Revision: "sha256:abc",
		Middleware: []*warden.Middleware{{Name: "noop", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.AllowCall() }}}})
	if err != nil {
		t.Fatal(err)
	}
	return rec, g
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func TestOneSpanPerCall(t *testing.T) {
	rec, g := setup(t, false)
	ctx := context.Background()
	if _, err := g.Call(ctx, warden.Call{ID: "c1", Tool: "reader", Args: warden.MustParseArgs(`{"path":"/secret-value"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx, warden.Call{ID: "c2", Tool: "bash", Args: warden.MustParseArgs(`{"command":"ls"}`)}); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	ran, refused := attrs(spans[0]), attrs(spans[1])
	if ran["warden.status"] != "ran" || ran["warden.executed"] != "true" || ran["warden.revision"] != "sha256:abc" || ran["warden.decision"] != "allow" || ran["warden.call_id"] != "c1" {
		t.Errorf("ran span attrs %v", ran)
	}
	if refused["warden.status"] != "refused" || refused["warden.executed"] != "false" || refused["warden.stage"] != "permission" || refused["warden.rule_id"] != "*" || refused["warden.decision"] != "deny" {
		t.Errorf("refused span attrs %v", refused)
	}
	for _, s := range spans {
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				if kv.Value.String() == "/secret-value" {
					t.Fatalf("span event %s carries an argument value", ev.Name)
				}
			}
		}
	}
	if len(spans[0].Events()) == 0 {
		t.Error("no span events recorded")
	}
}

func TestStageSpans(t *testing.T) {
	rec, g := setup(t, true)
	if _, err := g.Call(context.Background(), warden.Call{ID: "c1", Tool: "reader", Args: warden.MustParseArgs(`{"path":"/x"}`)}); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var parent sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		names[s.Name()] = true
		if s.Name() == "warden.tool_call reader" {
			parent = s
		}
	}
	for _, want := range []string{"warden.tool_call reader", "warden.permission.s1", "warden.middleware.call", "warden.permission.s2", "warden.execute"} {
		if !names[want] {
			t.Errorf("missing span %q (have %v)", want, names)
		}
	}
	for _, s := range rec.Ended() {
		if s.Name() != parent.Name() && s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("stage span %s is not a child of the call span", s.Name())
		}
	}
}

func TestStandaloneEventAndBound(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	sink := otel.NewSink(tp.Tracer("t"), &otel.Options{MaxOpenCalls: 2})
	ctx := context.Background()
	sink.Emit(ctx, warden.Event{Name: warden.EventTransportDenied, Detail: "blocked"})
	if n := len(rec.Ended()); n != 1 {
		t.Fatalf("standalone event produced %d spans", n)
	}
	if a := attrs(rec.Ended()[0]); a["warden.call_id"] != "" {
		t.Errorf("a transport denial names call %q", a["warden.call_id"])
	}
	// A shadow verdict comes after its call and names it.
	sink.Emit(ctx, warden.Event{Name: warden.EventShadow, CallID: "c-9", Tool: "t", Effect: warden.Deny, Outcome: "would deny", Checker: "policy"})
	if n := len(rec.Ended()); n != 2 {
		t.Fatalf("a shadow event produced %d spans in all, want 2", n)
	}
	if a := attrs(rec.Ended()[1]); rec.Ended()[1].Name() != warden.EventShadow || a["warden.call_id"] != "c-9" || a["warden.outcome"] != "would deny" || a["warden.checker"] != "policy" {
		t.Errorf("the shadow span: %s %v", rec.Ended()[1].Name(), a)
	}
	// At most two calls are buffered: the oldest are dropped.
	for i := range 5 {
		sink.Emit(ctx, warden.Event{Name: warden.EventPermissionCheck, CallID: string(rune('a' + i)), Start: tp2time(i)})
	}
	for _, i := range []int{0, 4} {
		sink.Emit(ctx, warden.Event{Name: warden.EventToolEnd, CallID: string(rune('a' + i)), Start: tp2time(i), Time: tp2time(i + 1), Tool: "t"})
	}
	ended := rec.Ended()[1:] // after the shadow's
	if len(ended) != 3 {
		t.Fatalf("got %d spans", len(ended))
	}
	if n := len(ended[1].Events()); n != 0 {
		t.Errorf("dropped call kept %d events", n)
	}
	if n := len(ended[2].Events()); n != 1 {
		t.Errorf("buffered call has %d events, want 1", n)
	}
	_ = tp.Shutdown(ctx)
}

// Options.Attributes labels each call span with what the emitter's context carries,
// and a call no permission check decided gets the decision its status implies.
func TestTraceAttributesHookAndStatusDecision(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	type key struct{}
	sink := otel.NewSink(tp.Tracer("t"), &otel.Options{Attributes: func(ctx context.Context, end warden.Event) []attribute.KeyValue {
		if v, ok := ctx.Value(key{}).(string); ok {
			return []attribute.KeyValue{attribute.String("test.server", v), attribute.String("test.tool", end.Tool)}
		}
		return nil
	}})
	ctx := context.WithValue(context.Background(), key{}, "fs")
	start := tp2time(0)
	for i, st := range []warden.Status{warden.StatusRefused, warden.StatusHalted, warden.StatusRan, warden.StatusPending} {
		sink.Emit(ctx, warden.Event{Name: warden.EventToolEnd, CallID: string(rune('a' + i)), Start: start, Time: tp2time(1), Tool: "read", Status: st, Stage: warden.StageGate})
	}
	var got []string
	for _, s := range rec.Ended() {
		a := attrs(s)
		got = append(got, a["warden.decision"]+"/"+a["test.server"]+"/"+a["test.tool"])
	}
	want := []string{"deny/fs/read", "halt/fs/read", "allow/fs/read", "ask/fs/read"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("spans %v, want %v", got, want)
	}
}
