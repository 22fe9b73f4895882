package warden

import (
	"context"
	"github.com/wardenhq/warden/internal/spectext"
	"slices"
	"time"
	"unicode/utf8"
)

// ReadSkillTool is the name of the built-in skill activation tool; the skill gate applies
// to it (argument "id"), and only when a checker governs [CapSkillRead].
const ReadSkillTool = "read_skill"

// Guard runs tool calls through the pipeline, in this order:
//
//	session gate → permission checkers S1 (tool_call, then each declared and governed
//	capability) → call-side middleware (the tool's preprocessor first) → checkers S2
//	(when any transform exists or S1 replaced the arguments) → JSON Schema validation →
//	skill gate (read_skill) → human decision (escalate, ask, check-in) → credentials →
//	execute → result-side middleware in reverse (the tool's postprocessor innermost) →
//	error handlers (tool and result-side failures only) → result ceilings.
//
// A call-side ask does not pause where it is raised: the link's question is recorded,
// the chain runs on to its end, then S2 and validation; the human stage then puts one
// question (every link's ask in link order, a carried escalation, the check-in) to a
// person about the final arguments, the ones that will execute. A later link that
// denies still denies, and then nobody is asked. An approval ([Approved] with the
// [PendingDecision.ApprovalDigest] the person was shown) runs exactly the tool and the
// arguments they were shown, asked the way they were asked, on that resume (see
// [Guard.Resume]); making it single-use across resumes is the caller's job (a store
// claims the decision first).
//
// Every refusal is data: the [Outcome] says what the model reads, which stage decided,
// and whether the tool executed. Every stage fails closed: an error, a panic or a timeout
// is a refusal, and refusals never reach error handlers. A Guard is safe for concurrent
// use.
//
// # The result side
//
// Once the tool has run, what the model reads is decided in this order, and the
// decisions hold whatever the tool did: returned a result, returned an error, or
// reported its own failure with an [ErrorResult].
//
//  1. The tool's answer. A result is rendered ([RenderResult]); a result or ErrorResult
//     text over the tool's ResultCeiling is replaced by the ceiling refusal (stage ceiling,
//     Outcome.Result nil); an ErrorResult is read as its Text; an error is read as
//     "Tool '<name>' failed: <error>" unless something below decides otherwise. A
//     result that cannot be rendered (its encoding panics) is the tool's failure, a
//     link's replacement that cannot be rendered is that link's failure, and a handler's
//     that cannot be rendered converts nothing (a secondary error).
//  2. Result links, innermost first, each seeing what the model would read now (the
//     current Result, IsError, and the tool's Error). A replacement ([ReplaceModelResult])
//     is what the model reads and what outer links see; it keeps IsError (a replaced
//     error or refusal is still an error to the model, and the call still failed: a
//     middleware cannot answer for the tool). A deny ([DenyResult]) is final: the model
//     reads its reason, and outer links do not run. A link that panics or returns an
//     invalid outcome is a denial of what it was shown (fail closed): outer links do not
//     run, the model never reads what it was shown (an inner replacement or the tool's
//     raw error included), and its failure, "middleware '<m>' threw: <message>", is a
//     result-side failure. So is a link that changes a result in place (a map, a
//     slice) instead of replacing it: the ledger would not show that decision.
//  3. Error handlers, for a failure only: the tool's error, a link's failure, or both
//     (joined; handlers see the tool's error with errors.Is). A replacement
//     ([ReplaceResult]) converts the failure into a result the model reads only when no
//     link replaced or denied: a link's decision wins over the handlers the way a first
//     replacement wins over later ones, and they only observe. Without a conversion,
//     the model reads the link's decision, or else "Tool '<name>' failed: <failure>"
//     (the failing link's failure when a link failed, never the tool's raw error then).
//  4. The guard-wide cap (Config.MaxResultChars), last, over whatever was decided.
//
// The status is [StatusFailed] when the tool returned an error or an ErrorResult, or a
// link failed, unless an error handler's replacement converted that error or failure;
// otherwise [StatusRan]. The stage is the last one that changed what the model reads:
// [StageExecute], [StageCeiling], or [StageResult] for a link's replace, deny or failure.
// Outcome.Result keeps what the tool returned (or the handler's replacement), for audit;
// Outcome.Err keeps the failure that stands. Credential tokens are scrubbed from
// everything the model reads.
type Guard struct {
	cfg          Config
	plans        map[string]*plan
	order        []string
	checkerNames []string
	checkerSync  []bool
	// checkerInterrupt marks Synchronous checkers that are also Interruptible: called
	// inline, but under the checker deadline.
	checkerInterrupt []bool
	problems         []error
}

type plan struct {
	tool      *Executable
	calls     []*Middleware // call side, in order (preprocessor first)
	results   []*Middleware // result side, in run order (postprocessor first)
	onError   []*ErrorHandler
	validator ArgsValidator
	unusable  error
}

// Revision returns the policy revision the guard was bound with.
func (g *Guard) Revision() string { return g.cfg.Revision }

// Problems lists tools that are registered but cannot be called (their schema did not
// compile), one error each.
func (g *Guard) Problems() []error { return append([]error(nil), g.problems...) }

// Tools returns the bound tools in registration order.
func (g *Guard) Tools() []Tool {
	out := make([]Tool, 0, len(g.order))
	for _, n := range g.order {
		out = append(out, cloneTool(g.plans[n].tool.Tool))
	}
	return out
}

// Tool returns a bound tool's description.
func (g *Guard) Tool(name string) (Tool, bool) {
	p, ok := g.plans[name]
	if !ok {
		return Tool{}, false
	}
	return cloneTool(p.tool.Tool), true
}

// callState is one call's progress through the pipeline.
type callState struct {
	g         *Guard
	p         *plan
	call      Call
	args      Args
	original  Args
	out       Outcome
	start     time.Time
	s1Changed bool
	// carried are the escalations waiting for the human stage: every checker's of the
	// last security pass, then the skill gate's.
	carried []Decision
	// asks are the questions call-side links asked, in link order: recorded where they
	// are raised, put to the person at the human stage about the final arguments.
	asks []MiddlewareAsk
	// approval is the decision a Resume's approval answers (checked against the
	// approval's digest on entry): at the human stage, which runs once per call, it
	// answers exactly that question about exactly those arguments.
	approval *PendingDecision
	cred     *Credential
	// seq is the copy of the call's sequence lent to synchronous checkers (see
	// lentSequence); nil until one is needed.
	seq   []Step
	now   time.Time // event clock, refreshed at stage boundaries
	jref  JournalRef
	begun bool

	bufs *callBufs // allocated on first use, see checksBacking
}

// callBufs backs Outcome.Checks and Outcome.Ledger of a typical call with one
// allocation. It is separate from callState: the outcome outlives the call, and a
// pointer into callState would move it to the heap.
type callBufs struct {
	checks [4]CheckRecord
	ledger [4]LedgerRow
}

func (st *callState) buffers() *callBufs {
	if st.bufs == nil {
		st.bufs = new(callBufs)
	}
	return st.bufs
}

// checksBacking returns an empty slice with capacity n for Outcome.Checks, from
// callBufs when n is small.
func (st *callState) checksBacking(n int) []CheckRecord {
	if n <= len(callBufs{}.checks) {
		return st.buffers().checks[:0:n]
	}
	return make([]CheckRecord, 0, n)
}

// ledgerBacking is checksBacking for Outcome.Ledger.
func (st *callState) ledgerBacking(n int) []LedgerRow {
	if n <= len(callBufs{}.ledger) {
		return st.buffers().ledger[:0:n]
	}
	return make([]LedgerRow, 0, n)
}

// Call runs one call through the pipeline. The returned error is non-nil only when the
// run must stop: a halt ([*PolicyHaltError]) or the context's error (cancellation is
// never converted into a result). Every other outcome, refusals included, is data.
func (g *Guard) Call(ctx context.Context, c Call) (Outcome, error) {
	// The call state lives on this stack frame: nothing on the pipeline keeps a pointer
	// to it (see callBufs), which saves an allocation per call. The outcome is built in
	// place (st.out) and copied once here: an Outcome is large, and copying it up
	// through every stage's return costs more than the rest of a stage.
	var st callState
	g.initState(&st, c)
	err := st.pipeline(ctx)
	return st.out, err
}

// pipeline runs the stages in the order of the reference (see [Guard]), top to bottom.
// Each stage reports whether it decided the call (done): then the outcome is final in
// st.out, finished (events sent, journal written), and err is what Call returns.
//
// Where the stages live: lookup, gate and validate here; the security passes (S1, S2,
// the skill pass) in security.go; the call-side links in callside.go; the human stage
// in human.go; credentials and execute in execute.go; the result side (links, error
// handlers, ceilings) in result.go; Resume, which enters this same pipeline with an
// approval, in resume.go.
func (st *callState) pipeline(ctx context.Context) error {
	if done, err := st.lookup(ctx); done {
		return err
	}
	if done, err := st.gate(ctx); done {
		return err
	}
	if done, err := st.securityPass(ctx, passS1); done {
		return err
	}
	if done, err := st.callSide(ctx); done {
		return err
	}
	if st.needsFinalCheck() {
		if done, err := st.securityPass(ctx, passS2); done {
			return err
		}
	}
	if done, err := st.validate(ctx); done {
		return err
	}
	if st.call.Tool == ReadSkillTool {
		if done, err := st.securityPass(ctx, passSkill); done {
			return err
		}
	}
	if done, err := st.human(ctx); done {
		return err
	}
	if done, err := st.credentials(ctx); done {
		return err
	}
	return st.execute(ctx)
}

// lookup refuses a call to a tool that is not bound or cannot be called, and a call
// whose context is already done.
func (st *callState) lookup(ctx context.Context) (bool, error) {
	c := st.call
	if st.p == nil {
		st.refuse(ctx, StageLookup, Decision{Effect: Deny, RuleID: "unknown-tool", Rationale: "unknown tool '" + c.Tool + "'"}, "")
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		return true, st.abort(ctx, StageLookup, err)
	}
	if st.p.unusable != nil {
		st.refuse(ctx, StageLookup, Decision{Effect: Deny, RuleID: "schema-invalid", Rationale: "Tool '" + c.Tool + "' cannot be called: its input schema is invalid"}, "")
		return true, nil
	}
	return false, nil
}

func (g *Guard) initState(st *callState, c Call) {
	*st = callState{g: g, p: g.plans[c.Tool], call: c, args: c.Args, original: c.Args, start: g.cfg.Now()}
	st.now = st.start
	st.out = Outcome{CallID: c.ID, Tool: c.Tool, Revision: g.cfg.Revision, Args: c.Args}
}

// tick refreshes the event clock. Events of one stage share a timestamp: reading the
// clock per event costs more than the rest of an event. st.now is read only by events,
// so without sinks there is nothing to refresh (finish reads the clock itself).
func (st *callState) tick() {
	if len(st.g.cfg.Sinks) > 0 {
		st.now = st.g.cfg.Now()
	}
}

func (st *callState) event(name string) Event {
	return Event{Name: name, Time: st.now, Start: st.start, Session: st.call.Session, Identity: st.call.Identity, CallID: st.call.ID, Tool: st.call.Tool, Revision: st.g.cfg.Revision}
}

// emit delivers e to every sink.
func (st *callState) emit(ctx context.Context, e Event) { st.send(ctx, &e) }

// send is emit by pointer, for the call path: an Event is large, and each sink receives
// its own copy anyway.
func (st *callState) send(ctx context.Context, e *Event) {
	for _, s := range st.g.cfg.Sinks {
		emitSafely(ctx, s, e, st.g.cfg.Logger)
	}
}

// finish stamps the outcome and emits warden.tool.end: every path through the pipeline
// ends here exactly once.
func (st *callState) finish(ctx context.Context) {
	st.out.Args = st.args
	st.now = st.g.cfg.Now()
	st.out.Duration = st.now.Sub(st.start)
	e := st.event(EventToolEnd)
	e.Executed, e.Status, e.Stage, e.Duration, e.Size = st.out.Executed, st.out.Status, st.out.Stage, st.out.Duration, utf8.RuneCountInString(st.out.ModelText)
	e.RuleID = st.out.RuleID
	st.send(ctx, &e)
	if j := st.g.cfg.Journal; j != nil {
		// Recording outlives the caller's cancellation: the outcome happened.
		jctx := context.WithoutCancel(ctx)
		if st.begun {
			if err := journalSafely(func() error { return j.End(jctx, st.jref, st.call, st.out) }); err != nil {
				st.journalFailed(jctx, "end", err)
			}
		} else if err := journalSafely(func() error { return j.Record(jctx, st.call, st.out) }); err != nil {
			st.journalFailed(jctx, "record", err)
		}
	}
}

// refuse finishes the call as refused at stage by d; the model reads text, or d's own
// text about the tool when text is empty.
func (st *callState) refuse(ctx context.Context, stage Stage, d Decision, text string) {
	if text == "" {
		text = d.ModelText(st.call.Tool)
	}
	st.out.Status, st.out.Stage, st.out.Decision, st.out.RuleID = StatusRefused, stage, d, d.RuleID
	st.out.ModelText, st.out.IsError = st.scrub(text), true
	st.finish(context.WithoutCancel(ctx))
}

// abort finishes the call as cancelled at stage and returns the context's error.
func (st *callState) abort(ctx context.Context, stage Stage, err error) error {
	st.out.Status, st.out.Stage, st.out.IsError = StatusRefused, stage, true
	st.out.ModelText = "call cancelled: " + err.Error()
	st.finish(context.WithoutCancel(ctx))
	return err
}

// gate asks the session gate, when one is configured.
func (st *callState) gate(ctx context.Context) (bool, error) {
	gate := st.g.cfg.Gate
	if gate == nil {
		return false, nil
	}
	ok, err := func() (ok bool, err error) {
		defer func() {
			if r := recover(); r != nil {
				ok, err = false, panicError{r}
			}
		}()
		return gate.Authorize(ctx, Invocation{Function: st.call.Tool, Args: st.args, SessionID: st.call.Session})
	}()
	if ok && err == nil {
		return false, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return true, st.abort(ctx, StageGate, cerr)
	}
	e := st.event(EventGateDenied)
	if err != nil {
		e.Error = err.Error()
	}
	st.send(ctx, &e)
	d := Decision{Effect: Deny, RuleID: "gate", Rationale: "denied by governance gate"}
	if err != nil {
		d.Rationale, d.Fault = "governance gate failed: "+err.Error(), true
	}
	st.refuse(ctx, StageGate, d, spectext.GateDeniedText(st.call.Tool))
	return true, nil
}

// validate checks the final arguments against the tool's input schema.
func (st *callState) validate(ctx context.Context) (bool, error) {
	// The clock is read here only when an event may use it before execute reads it
	// again: the validation, skill, human and credential stages, or a journal failure
	// (refusals read the clock in finish).
	if st.p.validator != nil || st.call.Tool == ReadSkillTool || len(st.carried) > 0 || st.asks != nil || st.p.tool.CheckIn != nil || st.p.tool.Needs != nil || st.g.cfg.Journal != nil {
		st.tick()
	}
	if v := st.p.validator; v != nil {
		problems := safeValidate(v, st.args)
		if len(problems) > 0 {
			e := st.event(EventArgsInvalid)
			e.Size = len(problems)
			st.send(ctx, &e)
			text := InvalidArgsText(st.call.Tool, problems)
			st.refuse(ctx, StageValidation, Decision{Effect: Deny, RuleID: "schema", Rationale: "arguments do not match the input schema"}, text)
			return true, nil
		}
	}
	return false, nil
}

func safeValidate(v ArgsValidator, args Args) (problems []ArgProblem) {
	defer func() {
		if r := recover(); r != nil {
			problems = []ArgProblem{{Path: "$", Message: "schema validation failed: " + fmtAny(r)}}
		}
	}()
	return v.ValidateArgs(args)
}

func cloneTool(t Tool) Tool {
	t.InputSchema, t.Capabilities = slices.Clone(t.InputSchema), slices.Clone(t.Capabilities)
	return t
}
