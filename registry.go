package warden

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// ToolFunc runs a tool. cred is the credential resolved for the tool's [Needs], or nil.
type ToolFunc func(ctx context.Context, args Args, cred *Credential) (any, error)

// Executable is a tool with everything the pipeline needs to run it.
type Executable struct {
	Tool
	// Run executes the tool. Required. An error that wraps [ErrNotExecuted] says the
	// tool failed before doing anything the call asked for: the call is recorded as
	// not executed.
	Run ToolFunc
	// Pre is the tool's own preprocessor: the first call-side link, before declared
	// middleware.
	Pre func(ctx context.Context, c ToolCall) CallOutcome
	// Post is the tool's own postprocessor: the innermost result-side link.
	Post func(ctx context.Context, r ToolResult) ResultOutcome
	// CheckIn, when set, makes the tool ask a person before it runs.
	CheckIn *CheckIn
	// Needs, when set, resolves a credential right before the tool runs.
	Needs *Needs
	// ResultCeiling, when positive, refuses a result longer than this many characters
	// at the execute boundary: the payload reaches no later stage.
	ResultCeiling int
}

// CheckIn makes a tool ask a person before it runs, with evidence of what it will do.
type CheckIn struct {
	// Question is shown to the person; empty means "Run <tool> with these arguments?".
	Question string
	// When decides per call; nil means always. A When that panics demands the check-in
	// (fail closed).
	When func(args Args) bool
}

// Needs declares the credential a tool needs.
type Needs struct {
	Service string
	Scopes  []string
}

// Credential is a secret handed to a tool. Its String and JSON forms never show the
// token, and the pipeline removes the token from errors and model text.
type Credential struct {
	Service string
	Scopes  []string
	Token   string
}

// String returns a redacted description.
func (c Credential) String() string { return "credential(" + c.Service + ", [redacted])" }

// MarshalJSON encodes the credential without its token.
func (c Credential) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Service string   `json:"service"`
		Scopes  []string `json:"scopes,omitempty"`
		Token   string   `json:"token"`
	}{c.Service, c.Scopes, "[redacted]"})
}

// CredentialRequest asks a [CredentialProvider] for a credential.
type CredentialRequest struct {
	Service  string
	Scopes   []string
	Tool     string
	Identity Identity
	Session  string
}

// CredentialProvider resolves credentials right before a tool runs, never for a call
// that will not run. It must be safe for concurrent use.
type CredentialProvider interface {
	Credential(ctx context.Context, req CredentialRequest) (Credential, error)
}

// Invocation is what the session gate is asked about.
type Invocation struct {
	Function  string
	Args      Args
	SessionID string
}

// Gate is the session governance gate, asked before anything else. A false answer, an
// error or a panic refuses the call.
type Gate interface {
	Authorize(ctx context.Context, inv Invocation) (bool, error)
}

// GateFunc adapts a function to a [Gate].
type GateFunc func(ctx context.Context, inv Invocation) (bool, error)

// Authorize calls f.
func (f GateFunc) Authorize(ctx context.Context, inv Invocation) (bool, error) { return f(ctx, inv) }

// ErrorResult is a tool result that reports the tool's own failure in words meant
// for the model (an MCP result with isError, an API's error body). The model reads
// Text as it is (subject to the tool's ResultCeiling and to result-side middleware,
// which sees IsError), and the call's status is [StatusFailed]; unlike an error
// returned by the tool, it does not reach error handlers, and Text is not prefixed.
type ErrorResult struct {
	Text string
}

// ToolError is what an error handler sees.
type ToolError struct {
	Tool string
	Args Args // the final arguments
	// Err is the failure: the tool's own error, a result-side link's failure
	// ("middleware '<m>' threw: ..."), or both joined (errors.Is finds the tool's).
	Err error
}

// ErrorDisposition is an error handler's answer: [Reraise] or [ReplaceResult]. A nil
// disposition keeps the error.
type ErrorDisposition interface{ disposition() }

// Reraise keeps the original error.
type Reraise struct{}

// ReplaceResult converts the failure into a result the model reads. The first
// replacement wins; it does not apply where a result-side link already replaced or
// denied what the model reads (that decision holds; see "The result side" on [Guard]).
type ReplaceResult struct{ Value any }

func (Reraise) disposition()       {}
func (ReplaceResult) disposition() {}

// ErrorHandler handles a tool failure (an error from the tool, a result-side link that
// panicked or answered something invalid, or both). It is never called for a refusal
// of steps before execution, nor when the tool returned a result (an ErrorResult
// included) and every link answered.
type ErrorHandler struct {
	Name  string
	Tools []string // scope, as for [Middleware.Tools]
	// Handle returns a disposition; an error (or a panic) is recorded as secondary and
	// the original error stays primary.
	Handle func(ctx context.Context, e ToolError) (ErrorDisposition, error)
}

// ArgProblem is one way the arguments fail the tool's input schema.
type ArgProblem struct {
	Path    string // JSONPath-like: "$", "$.amount", "$.items[0].name"
	Message string
}

// ArgsValidator validates a call's arguments. Safe for concurrent use.
type ArgsValidator interface {
	ValidateArgs(args Args) []ArgProblem
}

// SchemaCompiler compiles a tool's input schema once, at bind time. Package schema
// provides the standard one. A schema that fails to compile makes the tool uncallable.
type SchemaCompiler interface {
	CompileSchema(tool string, schema json.RawMessage) (ArgsValidator, error)
}

// InvalidArgsText is the refusal the model reads for arguments that fail the schema.
func InvalidArgsText(tool string, problems []ArgProblem) string {
	var b strings.Builder
	b.WriteString("Invalid arguments for tool '")
	b.WriteString(tool)
	b.WriteString("' — the call was not executed.")
	for _, p := range problems {
		b.WriteString("\n- '")
		b.WriteString(p.Path)
		b.WriteString("': ")
		b.WriteString(p.Message)
	}
	b.WriteString("\nFix the arguments to match the tool's input schema and call it again.")
	return b.String()
}

// Registry holds the tools of one agent or gateway until they are bound. Register
// every tool, from every source, then [Registry.Bind] once: binding snapshots the
// registry and builds one interceptor plan per tool, so coverage never depends on where
// a tool came from. Safe for concurrent use.
type Registry struct {
	mu    sync.Mutex
	tools []*Executable
	index map[string]int
	bound *boundState
}

type boundState struct {
	cfg   Config // the caller's configuration, slices cloned
	guard *Guard
	// middleware and handlers are the values bound (see Bind's snapshot), compared
	// with what a later Bind's pointers point to.
	middleware []Middleware
	handlers   []ErrorHandler
}

// Register adds a tool. It returns an error for an empty name, a missing Run, a name
// already registered, or [ErrRegistryBound] after binding. The tool is copied.
func (r *Registry) Register(t Executable) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bound != nil {
		return fmt.Errorf("%w: tool %q", ErrRegistryBound, t.Name)
	}
	if strings.TrimSpace(t.Name) == "" {
		return errors.New("warden: tool name is required")
	}
	if t.Run == nil {
		return fmt.Errorf("warden: tool %q has no Run function", t.Name)
	}
	if r.index == nil {
		r.index = map[string]int{}
	}
	if _, dup := r.index[t.Name]; dup {
		return fmt.Errorf("warden: tool %q is already registered", t.Name)
	}
	for _, c := range t.Capabilities {
		if !c.IsToolCapability() {
			return fmt.Errorf("warden: tool %q declares %q, which is not a tool capability", t.Name, c)
		}
	}
	cp := t
	cp.Capabilities = slices.Clone(t.Capabilities)
	cp.InputSchema = slices.Clone(t.InputSchema)
	if t.Needs != nil {
		n := *t.Needs
		n.Scopes = slices.Clone(n.Scopes)
		cp.Needs = &n
	}
	if t.CheckIn != nil {
		c := *t.CheckIn
		cp.CheckIn = &c
	}
	r.index[t.Name] = len(r.tools)
	r.tools = append(r.tools, &cp)
	return nil
}

// Tools returns the registered tools' descriptions in registration order.
func (r *Registry) Tools() []Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Tool, len(r.tools))
	for i, t := range r.tools {
		out[i] = cloneTool(t.Tool)
	}
	return out
}

// Config is what [Registry.Bind] binds to every tool. Slices are snapshotted; the caller
// may reuse them afterwards. The zero Config is refused by Bind: it names no checker, so
// the Guard would run every tool with no permission check. A Guard without checkers is
// bound only when the Config says so ([Config.Ungoverned]).
type Config struct {
	// Checkers are asked in order, in both security passes. At least one is required
	// unless Ungoverned is set.
	Checkers []Checker
	// Ungoverned is the exception: it binds a Guard with no checker at all, which runs
	// every tool with no permission check (only the gate, middleware, schema validation
	// and the human stage still apply). It is for tests and for tools that are governed
	// elsewhere. Bind refuses it together with Checkers: a Config is either governed by
	// its checkers or says it is not.
	Ungoverned bool
	// Gate is the session governance gate; nil allows.
	Gate Gate
	// Middleware, in declaration order: tool-call middleware, each with an OnToolCall
	// or an OnToolResult hook and no OnMessage (Bind refuses a middleware that would
	// never run here; message middleware belongs to the agent's message chain).
	Middleware []*Middleware
	// ErrorHandlers, in declaration order.
	ErrorHandlers []*ErrorHandler
	// Schemas compiles input schemas. Required when any tool declares one.
	Schemas SchemaCompiler
	// Credentials resolves [Needs].
	Credentials CredentialProvider
	// Sinks receive events.
	Sinks []Sink
	// Journal, when set, records every call durably, writing ahead of execution.
	Journal Journal
	// Revision names the policy revision in outcomes and events.
	Revision string
	// CheckTimeout bounds each checker call that is not [Synchronous] or is
	// [Interruptible]; 0 means 5s.
	CheckTimeout time.Duration
	// MaxResultChars caps what the model reads from any tool; 0 means no cap. A cap must
	// be large enough to hold the smallest truncation marker (18 characters).
	MaxResultChars int
	// CanPause says that a person can be asked: a human decision becomes a pending
	// [Outcome]. When false every human decision is refused (nobody can answer).
	CanPause bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives what the Guard cannot report as an outcome or an event: a sink
	// that panicked, a journal that failed to record a call (that one is also an
	// event). nil means a text logger on standard error, so that such errors are
	// never lost silently; pass slog.New(slog.DiscardHandler) to drop them. The Guard
	// never uses slog.Default().
	Logger *slog.Logger
}

// Synchronous is implemented by checkers that can decide in-process without blocking
// (the policy package's checkers, when they call no handler). When Synchronous reports
// true the Guard calls the checker directly, with no deadline of its own unless the
// checker is also [Interruptible]; every other checker runs under
// [Config.CheckTimeout] and is abandoned, as a denial, when it does not answer.
type Synchronous interface {
	Synchronous() bool
}

// Interruptible is implemented by [Synchronous] checkers whose work can grow with the
// arguments and that stop promptly, with a fault denial, once their context is done
// (the policy package's policies with CEL conditions). When both report true the Guard
// still calls the checker directly, without a goroutine, but under a context that ends
// at [Config.CheckTimeout]; an answer given after that deadline is a fault denial.
type Interruptible interface {
	Interruptible() bool
}

// ErrUngoverned is returned by [Registry.Bind] for a Config with no checker that does
// not set [Config.Ungoverned].
var ErrUngoverned = errors.New("warden: Config.Checkers is empty: the Guard would run every tool with no permission check; " +
	"add a checker (a policy from package policy), or set Config.Ungoverned: true when that is what you mean (tests, tools governed elsewhere)")

// ErrPlanConflict is returned by a second [Registry.Bind] with different inputs.
var ErrPlanConflict = errors.New("warden: registry is already bound to a different plan")

const minResultCap = len(`{"truncated":true}`)

// Bind snapshots the registry and builds one plan per tool. Handler lists are
// snapshotted: the Guard keeps copies of the [Middleware] and [ErrorHandler] values, so
// a caller that edits one after Bind changes nothing bound. Binding again with the same
// inputs returns the same Guard; binding with different inputs returns
// [ErrPlanConflict]. After Bind, Register fails with [ErrRegistryBound].
//
// "The same inputs" is decided by identity, never by guessing: comparable values by ==,
// and values that cannot be compared (func values such as Now: time.Now or a
// [CheckerFunc], structs holding maps or funcs) by being the very same value passed
// again (a copy of the interface or func value the first Bind got). Two func values
// built separately, even from the same code, count as different: a re-bind with them
// is a conflict, never a silent reuse of the older plan. Middleware and error handlers
// are compared by what they hold now (name, scope and hooks) with what was bound.
//
// Bind fails for a Config with no checker that does not set [Config.Ungoverned] (or one
// that sets it and names checkers), an invalid result cap, a middleware without a name
// or that would never run in Config.Middleware (no OnToolCall or OnToolResult, or an
// OnMessage set), or a tool with a schema when no [Config.Schemas] is set. A schema that fails to compile does not fail
// Bind: that tool is refused at call time (see [Guard.Problems]).
func (r *Registry) Bind(cfg Config) (*Guard, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bound != nil {
		if r.bound.same(cfg) {
			return r.bound.guard, nil
		}
		return nil, ErrPlanConflict
	}
	switch {
	case len(cfg.Checkers) == 0 && !cfg.Ungoverned:
		return nil, ErrUngoverned
	case len(cfg.Checkers) > 0 && cfg.Ungoverned:
		return nil, fmt.Errorf("warden: Config.Ungoverned is set and Config.Checkers names %d checker(s); a Guard is either governed by its checkers or ungoverned: drop one of the two", len(cfg.Checkers))
	}
	if cfg.MaxResultChars < 0 {
		return nil, fmt.Errorf("warden: MaxResultChars %d is negative", cfg.MaxResultChars)
	}
	if cfg.MaxResultChars > 0 && cfg.MaxResultChars < minResultCap {
		return nil, fmt.Errorf("warden: MaxResultChars %d cannot hold the truncation marker (minimum %d)", cfg.MaxResultChars, minResultCap)
	}
	for i, m := range cfg.Middleware {
		if m == nil || strings.TrimSpace(m.Name) == "" {
			return nil, fmt.Errorf("warden: middleware %d has no name", i)
		}
		if err := toolHooksApply(i, m); err != nil {
			return nil, err
		}
	}
	for i, h := range cfg.ErrorHandlers {
		if h == nil || h.Handle == nil {
			return nil, fmt.Errorf("warden: error handler %d has no Handle function", i)
		}
	}
	for i, c := range cfg.Checkers {
		if c == nil {
			return nil, fmt.Errorf("warden: checker %d is nil", i)
		}
	}
	snap := cfg
	snap.Checkers = slices.Clone(cfg.Checkers)
	snap.Sinks = slices.Clone(cfg.Sinks)
	// Handler values are copied: the plan never shares a struct the caller can edit.
	mws := make([]Middleware, len(cfg.Middleware))
	snap.Middleware = make([]*Middleware, len(cfg.Middleware))
	for i, m := range cfg.Middleware {
		mws[i] = *m
		mws[i].Tools = slices.Clone(m.Tools)
		c := mws[i]
		snap.Middleware[i] = &c
	}
	hs := make([]ErrorHandler, len(cfg.ErrorHandlers))
	snap.ErrorHandlers = make([]*ErrorHandler, len(cfg.ErrorHandlers))
	for i, h := range cfg.ErrorHandlers {
		hs[i] = *h
		hs[i].Tools = slices.Clone(h.Tools)
		c := hs[i]
		snap.ErrorHandlers[i] = &c
	}
	if snap.CheckTimeout <= 0 {
		snap.CheckTimeout = 5 * time.Second
	}
	if snap.Now == nil {
		snap.Now = time.Now
	}
	if snap.Logger == nil {
		snap.Logger = stderrLogger()
	}
	g := &Guard{cfg: snap, plans: map[string]*plan{}}
	for i, c := range snap.Checkers {
		if err := g.describeChecker(i, c); err != nil {
			return nil, err
		}
	}
	for _, t := range r.tools {
		p := &plan{tool: t}
		if t.Pre != nil {
			p.calls = append(p.calls, &Middleware{Name: t.Name + ".preprocessor", OnToolCall: t.Pre})
		}
		for _, m := range snap.Middleware {
			if appliesTo(m.Tools, t.Name) {
				if m.OnToolCall != nil {
					p.calls = append(p.calls, m)
				}
				if m.OnToolResult != nil {
					p.results = append(p.results, m)
				}
			}
		}
		// The result side runs in reverse declaration order, the tool's own post first.
		slices.Reverse(p.results)
		if t.Post != nil {
			p.results = append([]*Middleware{{Name: t.Name + ".postprocessor", OnToolResult: t.Post}}, p.results...)
		}
		for _, h := range snap.ErrorHandlers {
			if appliesTo(h.Tools, t.Name) {
				p.onError = append(p.onError, h)
			}
		}
		if len(t.InputSchema) > 0 {
			if snap.Schemas == nil {
				return nil, fmt.Errorf("warden: tool %q has an input schema but Config.Schemas is nil (use schema.Compiler{})", t.Name)
			}
			v, err := snap.Schemas.CompileSchema(t.Name, t.InputSchema)
			if err != nil {
				p.unusable = err
				g.problems = append(g.problems, fmt.Errorf("tool %q is not callable: %w", t.Name, err))
			}
			p.validator = v
		}
		g.plans[t.Name] = p
		g.order = append(g.order, t.Name)
	}
	orig := cfg // compared by later Binds; slices cloned so later caller edits do not leak in
	orig.Checkers, orig.Sinks = snap.Checkers, snap.Sinks
	orig.Middleware, orig.ErrorHandlers = nil, nil
	r.bound = &boundState{cfg: orig, guard: g, middleware: mws, handlers: hs}
	return g, nil
}

// stderrLogger is the logger of a Guard or an [AsyncSink] whose options name none: a
// text logger on standard error (nothing is written until there is an error to report).
func stderrLogger() *slog.Logger { return slog.New(slog.NewTextHandler(os.Stderr, nil)) }

// describeChecker records checker i's name and how it is called. A checker whose Name,
// Synchronous or Interruptible method panics is refused: Bind cannot know how to call it.
func (g *Guard) describeChecker(i int, c Checker) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("warden: checker %d panicked while Bind asked how to call it: %v", i, r)
		}
	}()
	name := checkerName(c, i)
	s, ok := c.(Synchronous)
	sync := ok && s.Synchronous()
	in, ok := c.(Interruptible)
	interrupt := ok && in.Interruptible()
	g.checkerNames = append(g.checkerNames, name)
	g.checkerSync = append(g.checkerSync, sync)
	g.checkerInterrupt = append(g.checkerInterrupt, interrupt)
	return nil
}

func checkerName(c Checker, i int) string {
	if n, ok := c.(Namer); ok && n.Name() != "" {
		return n.Name()
	}
	return fmt.Sprintf("checker[%d]", i)
}

// same reports whether cfg asks for the plan already bound (see [Registry.Bind]).
func (b *boundState) same(cfg Config) bool {
	a := b.cfg
	if a.Revision != cfg.Revision || a.CheckTimeout != cfg.CheckTimeout || a.MaxResultChars != cfg.MaxResultChars || a.CanPause != cfg.CanPause || a.Ungoverned != cfg.Ungoverned || a.Logger != cfg.Logger {
		return false
	}
	if !sameValue(a.Gate, cfg.Gate) || !sameValue(a.Schemas, cfg.Schemas) || !sameValue(a.Credentials, cfg.Credentials) || !sameValue(a.Journal, cfg.Journal) {
		return false
	}
	if (a.Now == nil) != (cfg.Now == nil) || (a.Now != nil && !sameValue(a.Now, cfg.Now)) {
		return false
	}
	if !sameSlice(a.Checkers, cfg.Checkers) || !sameSlice(a.Sinks, cfg.Sinks) {
		return false
	}
	if len(b.middleware) != len(cfg.Middleware) || len(b.handlers) != len(cfg.ErrorHandlers) {
		return false
	}
	for i, m := range cfg.Middleware {
		was := &b.middleware[i]
		if m == nil || m.Name != was.Name || !slices.Equal(m.Tools, was.Tools) ||
			!sameValue(m.OnToolCall, was.OnToolCall) || !sameValue(m.OnToolResult, was.OnToolResult) || !sameValue(m.OnMessage, was.OnMessage) {
			return false
		}
	}
	for i, h := range cfg.ErrorHandlers {
		was := &b.handlers[i]
		if h == nil || h.Name != was.Name || !slices.Equal(h.Tools, was.Tools) || !sameValue(h.Handle, was.Handle) {
			return false
		}
	}
	return true
}

func sameSlice[T any](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameValue reports whether a and b are the same value: equal by == when their dynamic
// type is comparable, otherwise the very same value (the interface holds the same data
// pointer: the same func value, or a copy of the same interface value). Two values of
// a type that cannot be compared, built separately, are never the same.
func sameValue(a, b any) (same bool) {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	if reflect.TypeOf(a).Comparable() {
		defer func() {
			// A comparable type can still hold an incomparable value (an interface
			// field holding a func): then identity decides.
			if recover() != nil {
				same = dataWord(a) == dataWord(b)
			}
		}()
		return a == b || dataWord(a) == dataWord(b)
	}
	return dataWord(a) == dataWord(b)
}

// dataWord is the data pointer of an interface value: for a func, map or pointer the
// value itself, for any other type the address of the copy the interface holds (shared
// by every copy of that interface value). It relies on the layout of an interface value
// (a type word, then a data word), which every Go release has kept.
func dataWord(v any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
}
