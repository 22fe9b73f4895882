// Package otel turns Warden's call events into OpenTelemetry spans: one span per tool
// call, started when the call began and ended when it finished, whether it ran or not,
// with the decision, rule id, policy revision and deciding stage as attributes
// (warden.decision is the permission checks' effect: the first check's, or the last
// one that did not allow; a call no check decided gets the one its status implies:
// allow for a call that ran, deny for a refusal, halt, ask for a pending call;
// warden.rule_id is the end event's, else the rule of the check that gave the
// decision). Every
// event of the call is attached as a span event (names and operator text only: events
// never carry argument or result values). With [Options.StageSpans], the permission
// checks, the middleware and the execution also get child spans.
//
// The sink buffers a call's events until its warden.tool.end event, which the Guard
// emits exactly once per call; it holds at most [Options.MaxOpenCalls] calls and drops
// the oldest beyond that, so a misbehaving emitter cannot grow it without bound.
package otel

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wardenhq/warden"
)

// Options configure a [Sink]. The zero value is ready to use.
type Options struct {
	// StageSpans adds child spans for permission checks, middleware and execution.
	StageSpans bool
	// MaxOpenCalls bounds the calls buffered at once; 0 means 10,000.
	MaxOpenCalls int
	// Attributes, when set, adds attributes to each call's span. It is called once per
	// call, with the context of the call's warden.tool.end event (the context the
	// emitter passed, so whatever the caller put in it) and that event. What it returns
	// must follow the rule of events: names and labels, never argument or result
	// values.
	Attributes func(ctx context.Context, end warden.Event) []attribute.KeyValue
}

// Sink is a [warden.Sink] that records spans with a tracer. Safe for concurrent use.
type Sink struct {
	tracer trace.Tracer
	opts   Options

	mu    sync.Mutex
	open  map[callKey][]warden.Event
	order []callKey
}

type callKey struct {
	id    string
	start time.Time
}

var _ warden.Sink = (*Sink)(nil)

// NewSink returns a sink that creates spans with tracer. opts may be nil.
func NewSink(tracer trace.Tracer, opts *Options) *Sink {
	s := &Sink{tracer: tracer, open: map[callKey][]warden.Event{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxOpenCalls <= 0 {
		s.opts.MaxOpenCalls = 10_000
	}
	return s
}

// Emit buffers a call's events and records its span when the call ends. Events that do
// not belong to a call (transport denials, definition changes) become spans of their
// own.
func (s *Sink) Emit(ctx context.Context, e warden.Event) {
	if e.Start.IsZero() {
		attrs := eventAttrs(e)
		if e.CallID != "" { // a shadow verdict: its call's id ties the two spans
			attrs = append(attrs, attribute.String("warden.call_id", e.CallID))
		}
		_, span := s.tracer.Start(ctx, e.Name, trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(e.Time))
		return
	}
	k := callKey{e.CallID, e.Start}
	s.mu.Lock()
	if e.Name != warden.EventToolEnd {
		if _, ok := s.open[k]; !ok {
			s.order = append(s.order, k)
			if len(s.order) > s.opts.MaxOpenCalls {
				delete(s.open, s.order[0])
				s.order = s.order[1:]
			}
		}
		s.open[k] = append(s.open[k], e)
		s.mu.Unlock()
		return
	}
	events := s.open[k]
	delete(s.open, k)
	for i, o := range s.order {
		if o == k {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.record(ctx, e, events)
}

func (s *Sink) record(ctx context.Context, end warden.Event, events []warden.Event) {
	attrs := []attribute.KeyValue{
		attribute.String("warden.tool", end.Tool),
		attribute.String("warden.status", string(end.Status)),
		attribute.String("warden.stage", string(end.Stage)),
		attribute.Bool("warden.executed", end.Executed),
		attribute.Int("warden.result_chars", end.Size),
	}
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	add("warden.call_id", end.CallID)
	add("warden.session", end.Session)
	add("warden.revision", end.Revision)
	add("warden.rule_id", end.RuleID)
	add("warden.tenant", end.Identity.Tenant)
	add("warden.principal", end.Identity.Principal)
	ctx, span := s.tracer.Start(ctx, "warden.tool_call "+end.Tool, trace.WithTimestamp(end.Start), trace.WithAttributes(attrs...))
	var decision, rule string
	for _, e := range events {
		span.AddEvent(e.Name, trace.WithTimestamp(e.Time), trace.WithAttributes(eventAttrs(e)...))
		if e.Name == warden.EventPermissionCheck && (decision == "" || e.Effect != warden.Allow) {
			decision, rule = e.Effect.String(), e.RuleID
		}
	}
	if decision == "" {
		decision = statusDecision(end.Status)
	}
	span.SetAttributes(attribute.String("warden.decision", decision))
	if end.RuleID == "" && rule != "" {
		// The end of a call that ran names no rule: the deciding check's is the call's.
		span.SetAttributes(attribute.String("warden.rule_id", rule))
	}
	if s.opts.Attributes != nil {
		span.SetAttributes(s.opts.Attributes(ctx, end)...)
	}
	if s.opts.StageSpans {
		s.stageSpans(ctx, end, events)
	}
	switch end.Status {
	case warden.StatusFailed:
		span.SetStatus(codes.Error, "tool failed")
	case warden.StatusRefused, warden.StatusHalted:
		span.SetStatus(codes.Unset, string(end.Status))
	}
	span.End(trace.WithTimestamp(end.Time))
}

// statusDecision is the decision of a call no permission check decided (refused at
// lookup or by the gate, say): what its status implies.
func statusDecision(st warden.Status) string {
	switch st {
	case warden.StatusRan, warden.StatusFailed:
		return "allow"
	case warden.StatusHalted:
		return "halt"
	case warden.StatusPending:
		return "ask"
	}
	return "deny"
}

// stageSpans adds a child span per stage that had events: from its first event to the
// first event of the next stage (or the end of the call).
func (s *Sink) stageSpans(ctx context.Context, end warden.Event, events []warden.Event) {
	type window struct {
		name       string
		start, end time.Time
	}
	var spans []window
	open := func(name string, at time.Time) {
		if n := len(spans); n > 0 && spans[n-1].name == name {
			return
		}
		if n := len(spans); n > 0 && spans[n-1].end.IsZero() {
			spans[n-1].end = at
		}
		spans = append(spans, window{name: name, start: at})
	}
	for _, e := range events {
		switch e.Name {
		case warden.EventGateDenied:
			open("warden.gate", e.Time)
		case warden.EventPermissionCheck, warden.EventPermissionHalt:
			open("warden.permission."+e.Pass, e.Time)
		case warden.EventMiddlewareDecision:
			open("warden.middleware."+e.Moment, e.Time)
		case warden.EventCredentialRequest, warden.EventCredentialAcquired, warden.EventCredentialFailed:
			open("warden.credentials", e.Time)
		case warden.EventToolStart:
			open("warden.execute", e.Time)
		case warden.EventDecisionPending, warden.EventDecisionMade:
			open("warden.human", e.Time)
		}
	}
	for _, w := range spans {
		if w.end.IsZero() {
			w.end = end.Time
		}
		_, sp := s.tracer.Start(ctx, w.name, trace.WithTimestamp(w.start))
		sp.End(trace.WithTimestamp(w.end))
	}
}

func eventAttrs(e warden.Event) []attribute.KeyValue {
	var a []attribute.KeyValue
	add := func(k, v string) {
		if v != "" {
			a = append(a, attribute.String(k, v))
		}
	}
	add("warden.pass", e.Pass)
	add("warden.checker", e.Checker)
	add("warden.capability", string(e.Capability))
	add("warden.target", e.Target)
	if e.Name == warden.EventPermissionCheck || e.Name == warden.EventPermissionHalt {
		a = append(a, attribute.String("warden.effect", e.Effect.String()))
	}
	add("warden.rule_id", e.RuleID)
	add("warden.rationale", e.Rationale)
	add("warden.reason", e.Reason)
	add("warden.middleware", e.Middleware)
	add("warden.moment", e.Moment)
	add("warden.outcome", e.Outcome)
	add("warden.why", e.Why)
	add("warden.decision_kind", e.DecisionKind)
	add("warden.by", e.By)
	add("warden.error", e.Error)
	add("warden.detail", e.Detail)
	add("warden.tool", e.Tool)
	return a
}
