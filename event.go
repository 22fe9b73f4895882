package warden

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Event names. Every event carries its time, the session, the identity, the call id,
// the tool and the policy revision; the other fields of [Event] are filled as each
// name documents.
const (
	EventGateDenied         = "warden.gate.denied"
	EventPermissionCheck    = "warden.permission.check"    // Capability, Target, Effect, RuleID, Rationale, Reason, Checker, Pass
	EventPermissionHalt     = "warden.permission.halt"     // RuleID, Reason, TellLLM, Checker, Iteration, SequenceLen, Target
	EventMiddlewareDecision = "warden.middleware.decision" // Middleware, Moment, Outcome, Changed, Why (never values)
	EventArgsInvalid        = "warden.validation.args_invalid"
	EventDecisionPending    = "warden.decision.pending" // DecisionKind, Digest
	EventDecisionMade       = "warden.decision.made"    // DecisionKind, Approved, By
	EventCredentialRequest  = "warden.credential.requested"
	EventCredentialAcquired = "warden.credential.acquired"
	EventCredentialFailed   = "warden.credential.failed"
	EventToolStart          = "warden.tool.start"
	EventToolEnd            = "warden.tool.end" // Executed, Status, Stage, Duration; emitted for every call, run or not
	EventResultRefused      = "warden.tools.result_refused"
	EventTransportDenied    = "warden.transport.denied"
	EventDefinitionChanged  = "warden.tool.definition_changed"
	// EventShadow is a shadow policy's verdict on a call: a policy evaluated beside
	// the enforcing one, which never changes the call. It is sent when the shadow is
	// stricter than the enforcing decision on a check (halt > deny > ask > allow), or
	// could not decide. Revision is the shadow's revision (not the enforcing one);
	// Checker names the shadow's source ("policy": the enforcing file's items marked
	// `enforce: false`; "shadow_policy": a gateway's candidate file); Effect is what
	// the shadow would decide, and Outcome says it in words ("would halt", "would
	// deny", "would ask", or "fault" with the failure in Error); Detail is the enforcing
	// decision's effect; Capability, Target, RuleID, Rationale and Reason are the
	// shadow's check and answer. It is sent when the call is journaled, possibly after
	// its warden.tool.end, so it is not one of the call's pipeline events: Start is
	// zero, and CallID ties it to the call.
	EventShadow = "warden.shadow"
)

// Event is one thing that happened on the call path. It is a flat value so emitting one
// costs no allocation. Events never carry argument or result values, nor credentials.
type Event struct {
	Name     string
	Time     time.Time
	Start    time.Time // when the call began
	Session  string
	Identity Identity
	CallID   string
	Tool     string
	Revision string

	// Permission checks and halts.
	Pass       string // "s1" or "s2"
	Checker    string
	Capability Capability
	Target     string
	Effect     Effect
	RuleID     string
	Rationale  string
	Reason     string
	TellLLM    string
	Iteration  int
	SequenceN  int

	// Middleware decisions.
	Middleware string
	Moment     string // "call", "result", "input", "output"
	Outcome    string // "allow", "deny", "ask"
	Changed    bool
	Why        string

	// Human decisions.
	DecisionKind string
	Digest       string
	Approved     bool
	By           string

	// Tool end.
	Executed bool
	Status   Status
	Stage    Stage
	Duration time.Duration
	Size     int

	// Error is operator-facing error text (a checker's error, a sink failure, ...).
	Error string
	// Detail is free operator-facing text (a transport denial, a definition change).
	Detail string
}

// Sink receives events. Emit is called synchronously on the call path, possibly from
// many goroutines at once, so it must be safe for concurrent use and must not block:
// wrap a sink that does I/O in [NewAsyncSink]. A sink that panics is recovered and
// reported; nothing a sink does changes a decision.
type Sink interface {
	Emit(ctx context.Context, e Event)
}

// SinkFunc adapts a function to a [Sink].
type SinkFunc func(ctx context.Context, e Event)

// Emit calls f.
func (f SinkFunc) Emit(ctx context.Context, e Event) { f(ctx, e) }

// Recorder is an in-memory [Sink] for tests and demos. The zero value is ready to use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Emit records e.
func (r *Recorder) Emit(_ context.Context, e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of the recorded events, oldest first.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Named returns the recorded events with the given name.
func (r *Recorder) Named(name string) []Event {
	var out []Event
	for _, e := range r.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// Reset forgets every recorded event.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

// AsyncSink delivers events to another sink from a goroutine, through a bounded queue.
// Emit never blocks: when the queue is full the event is dropped and counted. A panic
// of the next sink is reported to the options' Logger and the next event is delivered
// as usual.
type AsyncSink struct {
	next    Sink
	log     *slog.Logger
	queue   chan Event
	dropped atomic.Int64
	done    chan struct{}

	mu     sync.RWMutex // guards closed and the queue's closing
	closed bool
}

// DefaultAsyncBuffer is the queue size of an [AsyncSink] whose options name none.
const DefaultAsyncBuffer = 1024

// AsyncSinkOptions configures [NewAsyncSink]; nil means the defaults.
type AsyncSinkOptions struct {
	// Buffer is the size of the queue; 0 (or less) means [DefaultAsyncBuffer].
	Buffer int
	// Logger receives the panics of the next sink. nil means a text logger on standard
	// error (errors are not lost silently); slog.New(slog.DiscardHandler) drops them.
	Logger *slog.Logger
}

// NewAsyncSink starts delivering to next through a bounded queue. Close it to drain
// the queue and stop.
func NewAsyncSink(next Sink, opts *AsyncSinkOptions) *AsyncSink {
	var o AsyncSinkOptions
	if opts != nil {
		o = *opts
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultAsyncBuffer
	}
	if o.Logger == nil {
		o.Logger = stderrLogger()
	}
	s := &AsyncSink{next: next, log: o.Logger, queue: make(chan Event, o.Buffer), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *AsyncSink) run() {
	defer close(s.done)
	for e := range s.queue {
		emitSafely(context.Background(), s.next, &e, s.log)
	}
}

// Emit queues e, or drops it when the queue is full.
func (s *AsyncSink) Emit(_ context.Context, e Event) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.dropped.Add(1) // emitting after Close drops the event
		return
	}
	select {
	case s.queue <- e:
	default:
		s.dropped.Add(1)
	}
}

// Dropped returns how many events were dropped because the queue was full.
func (s *AsyncSink) Dropped() int64 { return s.dropped.Load() }

// Close stops accepting events and waits until the queued ones are delivered or ctx
// ends.
func (s *AsyncSink) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// emitSafely delivers e to s, containing a panic: a failing sink is reported to log
// and never reaches the call path nor keeps e from the sinks after s (each sink of a
// fan-out is delivered through its own emitSafely).
func emitSafely(ctx context.Context, s Sink, e *Event, log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			log.LogAttrs(ctx, slog.LevelError, "warden: event sink panicked", slog.String("event", e.Name), slog.String("panic", fmt.Sprint(r)))
		}
	}()
	// A SinkFunc is called directly: through the interface, the large Event would be
	// copied once more by SinkFunc.Emit.
	if f, ok := s.(SinkFunc); ok {
		f(ctx, *e)
		return
	}
	s.Emit(ctx, *e)
}

// LogSink writes every event as one structured record to a slog handler (JSON lines
// with slog.NewJSONHandler). Fields that are empty are left out. It is synchronous; wrap
// it in [NewAsyncSink] when the handler writes to slow storage.
type LogSink struct {
	// Logger receives the records; nil means JSON lines on standard error (never
	// slog.Default(), which belongs to the program).
	Logger *slog.Logger
}

// stderrJSON is the logger of a LogSink that names none.
var stderrJSON = sync.OnceValue(func() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stderr, nil)) })

// Emit logs e at info level with the event name as the message.
func (s LogSink) Emit(ctx context.Context, e Event) {
	l := s.Logger
	if l == nil {
		l = stderrJSON()
	}
	attrs := make([]slog.Attr, 0, 16)
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	add("session", e.Session)
	add("tenant", e.Identity.Tenant)
	add("principal", e.Identity.Principal)
	add("call_id", e.CallID)
	add("tool", e.Tool)
	add("revision", e.Revision)
	add("pass", e.Pass)
	add("checker", e.Checker)
	add("capability", string(e.Capability))
	add("target", e.Target)
	if e.Name == EventPermissionCheck || e.Name == EventPermissionHalt || e.Name == EventShadow {
		attrs = append(attrs, slog.String("effect", e.Effect.String()))
	}
	add("rule_id", e.RuleID)
	add("rationale", e.Rationale)
	add("reason", e.Reason)
	add("middleware", e.Middleware)
	add("moment", e.Moment)
	add("outcome", e.Outcome)
	if e.Name == EventMiddlewareDecision {
		attrs = append(attrs, slog.Bool("changed", e.Changed))
	}
	add("why", e.Why)
	add("decision_kind", e.DecisionKind)
	add("digest", e.Digest)
	add("by", e.By)
	if e.Name == EventDecisionMade {
		attrs = append(attrs, slog.Bool("approved", e.Approved))
	}
	if e.Name == EventToolEnd {
		attrs = append(attrs, slog.Bool("executed", e.Executed), slog.String("status", string(e.Status)), slog.String("stage", string(e.Stage)), slog.Duration("duration", e.Duration), slog.Int("size", e.Size))
	}
	add("error", e.Error)
	add("detail", e.Detail)
	l.LogAttrs(ctx, slog.LevelInfo, e.Name, attrs...)
}
