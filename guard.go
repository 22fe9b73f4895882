package warden

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
//     text over the tool's ResultCeiling is replaced by [CeilingText] (stage ceiling,
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
		emitSafely(ctx, s, e)
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
	st.refuse(ctx, StageGate, d, GateDeniedText(st.call.Tool))
	return true, nil
}

// passKind names a security pass: the checkers are asked about the call in S1 and S2,
// and about the skill a read_skill call activates in the skill pass.
type passKind uint8

const (
	passS1    passKind = iota // before the call-side middleware (StagePermission)
	passS2                    // on the final arguments (StageFinalCheck)
	passSkill                 // the skill gate (StageSkill)
)

// String is the pass's name in check records and events.
func (p passKind) String() string {
	switch p {
	case passS1:
		return "s1"
	case passS2:
		return "s2"
	}
	return "skill"
}

// stage is the stage a refusal in the pass is reported at.
func (p passKind) stage() Stage {
	switch p {
	case passS1:
		return StagePermission
	case passS2:
		return StageFinalCheck
	}
	return StageSkill
}

// needsFinalCheck reports whether S2 runs: the arguments may have changed since S1 (a
// call-side link exists, or an S1 check replaced them).
func (st *callState) needsFinalCheck() bool {
	return len(st.p.calls) > 0 || st.s1Changed
}

// securityPass asks every checker about the call. In S1 an allow may replace the
// arguments (later checks judge the replacement); in S2 a replacement fails closed. An
// escalation is carried to the human stage; S2's answer replaces S1's. The skill pass
// asks the checkers that govern [CapSkillRead] about the target "skill:<id>" of the
// final arguments; its escalations join the carried ones, and it reads no replacement.
func (st *callState) securityPass(ctx context.Context, pass passKind) (bool, error) {
	stage, target := pass.stage(), st.call.Tool
	switch pass {
	case passS2:
		// In-process checkers answer within microseconds of the previous stage's clock
		// reading; a checker that may block reads the clock after it answers.
		st.tick()
		st.carried = st.carried[:0]
	case passSkill:
		id, _ := st.args.String("id")
		target = SkillTarget(id)
	}
	if pass != passS2 && len(st.call.Unauthorized) > 0 && slices.Contains(st.call.Unauthorized, target) {
		d := st.faultedBefore(target)
		st.refuse(ctx, stage, d, d.ModelText(target))
		return true, nil
	}
	if st.out.Checks == nil {
		st.out.Checks = st.checksBacking(2 * len(st.g.cfg.Checkers))
	}
	// One visitor per pass (not per checker): its name is updated by the loop. It is a
	// stack value whose method is the visit callback, so the synchronous path allocates
	// no closure.
	v := passVisitor{ctx: ctx, pass: pass}
	for i := range st.g.cfg.Checkers {
		v.name = st.g.checkerNames[i]
		var d Decision
		var err error
		if pass == passSkill {
			d, err = st.checkSkill(ctx, i, target, &v)
		} else {
			req := Request{Target: st.call.Tool, Args: st.args, Iteration: st.call.Iteration, Identity: st.call.Identity, Actor: st.call.Identity.Principal, Sequence: st.call.Sequence}
			d, err = st.check(ctx, i, req, st.p.tool.Capabilities, &v)
		}
		if err != nil {
			return true, st.abort(ctx, stage, err)
		}
		if d.Args != nil && pass != passSkill && !d.Args.Equal(st.args) {
			// Returning the arguments unchanged is not a replacement.
			if pass == passS2 {
				st.refuse(ctx, stage, Decision{Effect: Deny, RuleID: "s2.changed", Rationale: "security hook changed arguments during final validation", Fault: true}, "")
				return true, nil
			}
			st.args, st.s1Changed = *d.Args, true
		}
		switch d.Effect {
		case Halt:
			if pass == passSkill {
				tool := st.call.Tool
				st.call.Tool = target // the halt text names the skill
				err := st.halt(ctx, stage, v.name, d)
				st.out.Tool = tool
				return true, err
			}
			return true, st.halt(ctx, stage, v.name, d)
		case Deny:
			st.refuse(ctx, stage, d, d.ModelText(target))
			return true, nil
		case Ask:
			// An escalation (about the call or about a skill) is a human decision.
			st.carried = append(st.carried, withoutArgs(d))
		}
	}
	return false, nil
}

// faultedBefore is the refusal of a target whose authorization faulted earlier in the
// run ([Call.Unauthorized]): no checker is asked again.
func (st *callState) faultedBefore(target string) Decision {
	return Decision{
		Effect:    Deny,
		RuleID:    "checker.fault",
		Rationale: "permission-checker fault earlier in this run: '" + target + "' is not asked about again",
		TellLLM:   UnauthorizedText(target),
		Fault:     true,
	}
}

func withoutArgs(d Decision) Decision {
	d.Args = nil
	return d
}

// passVisitor records the checks of one pass (the visit callback of [CheckCall]): a
// check record on the outcome and, when sinks are configured, a permission event. It
// does not hold the call state: escape analysis is not field-sensitive, and a
// pointer to it here would move the call state to the heap.
type passVisitor struct {
	ctx  context.Context
	pass passKind
	name string
	// hold records the check but holds its event back, for a checker whose answers
	// count only if it answered before its deadline (see checkInline).
	hold bool
}

func (v *passVisitor) visit(st *callState, r Request, d Decision) {
	st.out.Checks = append(st.out.Checks, CheckRecord{Pass: v.pass.String(), Checker: v.name, Capability: r.Capability, Target: r.Target, Decision: withoutArgs(d)})
	if len(st.g.cfg.Sinks) > 0 && !v.hold {
		st.checkEvent(v.ctx, &st.out.Checks[len(st.out.Checks)-1])
	}
}

// checkEvent sends the permission event for one check record.
func (st *callState) checkEvent(ctx context.Context, c *CheckRecord) {
	e := st.event(EventPermissionCheck)
	d := &c.Decision
	e.Pass, e.Checker, e.Capability, e.Target, e.Effect, e.RuleID, e.Rationale, e.Reason = c.Pass, c.Checker, c.Capability, c.Target, d.Effect, d.RuleID, d.Rationale, d.Reason
	st.send(ctx, &e)
}

// check asks checker i about a call (see [CheckCall]) under the checker deadline; v
// sees every answer that counts.
func (st *callState) check(ctx context.Context, i int, req Request, declared []Capability, v *passVisitor) (Decision, error) {
	g := st.g
	c := g.cfg.Checkers[i]
	if g.checkerSync[i] {
		req.Sequence = st.lentSequence()
		var d Decision
		if g.checkerInterrupt[i] {
			var err error
			if d, err = st.checkInline(ctx, i, req, declared, v); err != nil {
				return d, err
			}
		} else {
			d = checkCall(ctx, c, req, declared, nil, st, v)
		}
		if !st.sequenceIntact() {
			d = st.sequenceTampered(req, v.name)
			v.visit(st, req, d)
		}
		return d, nil
	}
	// A checker on its own goroutine may outlive its deadline: it gets its own copy.
	req.Sequence = st.ownSequence()
	return st.checkBounded(ctx, i, req, declared, v)
}

// checkInline is check for a checker that is [Synchronous] and [Interruptible]: it runs
// on the caller's goroutine (no goroutine, no channel, no closure) under a context that
// ends at Config.CheckTimeout, and relies on the checker to stop once that context is
// done. Its checks are recorded as they come but their events are held back: an answer
// given after the deadline never counts (its records are dropped for the fault), except
// the checker's own fault denial, which says more about what ran out than the Guard can.
// The caller's own cancellation is returned as an error.
func (st *callState) checkInline(ctx context.Context, i int, req Request, declared []Capability, v *passVisitor) (Decision, error) {
	g := st.g
	cctx, cancel := context.WithTimeout(ctx, g.cfg.CheckTimeout)
	mark := len(st.out.Checks)
	hold := *v
	hold.hold = true
	d := checkCall(cctx, g.cfg.Checkers[i], req, declared, nil, st, &hold)
	late := cctx.Err() != nil
	cancel()
	st.tick() // the checker may have taken a while: its events carry the time it answered
	if err := ctx.Err(); err != nil {
		st.out.Checks = st.out.Checks[:mark]
		return Decision{}, err
	}
	if late && (d.Effect != Deny || !d.Fault) {
		// Fail closed: the deadline passed, whatever the checker says now.
		st.out.Checks = st.out.Checks[:mark]
		d, seen := g.lateFault(req)
		v.visit(st, seen[0].r, seen[0].d)
		return d, nil
	}
	if len(g.cfg.Sinks) > 0 {
		for k := mark; k < len(st.out.Checks); k++ {
			st.checkEvent(v.ctx, &st.out.Checks[k])
		}
	}
	return d, nil
}

// lentSequence returns the copy of the call's sequence that synchronous checkers are
// shown. Steps hold immutable Args, but a checker could still overwrite a Step in
// place: it would rewrite the run's history (the caller's slice) for every later
// checker and call. Lending a copy and comparing it with the caller's afterwards
// (sequenceIntact) detects that for one allocation per call, and only for calls that
// carry a sequence.
func (st *callState) lentSequence() []Step {
	n := len(st.call.Sequence)
	if n == 0 {
		return nil
	}
	if st.seq == nil {
		st.seq = slices.Clone(st.call.Sequence)
	}
	return st.seq[:n:n]
}

// ownSequence returns a copy of the call's sequence for a checker that runs on its own
// goroutine: it may outlive its deadline, so it must not share the lent copy.
func (st *callState) ownSequence() []Step {
	if len(st.call.Sequence) == 0 {
		return nil
	}
	return slices.Clip(slices.Clone(st.call.Sequence))
}

// sequenceIntact reports whether the lent sequence still holds the caller's steps.
func (st *callState) sequenceIntact() bool {
	if st.seq == nil {
		return true
	}
	for i, s := range st.call.Sequence {
		if t := st.seq[i]; t.Tool != s.Tool || !t.Args.same(s.Args) {
			return false
		}
	}
	return true
}

// sequenceTampered is the fault denial for a checker that modified the sequence it was
// shown (fail closed: a checker that rewrites history did not judge this call).
func (st *callState) sequenceTampered(req Request, checker string) Decision {
	d := CheckerFault(req.Target, errors.New("checker '"+checker+"' modified the call sequence it was shown"))
	d.RuleID = "sequence.changed"
	return d
}

// checkBounded is check for a checker that is not [Synchronous]. It is a separate
// function so that only this path pays for what the goroutine captures (req).
func (st *callState) checkBounded(ctx context.Context, i int, req Request, declared []Capability, v *passVisitor) (Decision, error) {
	c := st.g.cfg.Checkers[i]
	d, seen, err := st.g.bounded(ctx, i, req, func(cctx context.Context, visit func(Request, Decision)) Decision {
		return CheckCall(cctx, c, req, declared, visit)
	})
	st.tick() // the checker may have taken a while: its events carry the time it answered
	for _, x := range seen {
		v.visit(st, x.r, x.d)
	}
	return d, err
}

// seenCheck is one answer a checker gave under [Guard.bounded].
type seenCheck struct {
	r Request
	d Decision
}

// bounded runs ask for checker i, which is not [Synchronous] (callers call those
// directly) or is also [Interruptible] (then see interruptibly: the skill gate uses
// it), under Config.CheckTimeout; it is abandoned, as a fault denial, when it
// does not answer in time, and an answer that arrives after the deadline never counts.
// The caller's own cancellation is returned as an error. It returns every answer that
// counts, in order, for the caller to visit: the goroutine never holds the caller's
// visit callback, so nothing of the call state escapes through it.
func (g *Guard) bounded(ctx context.Context, i int, req Request, ask func(context.Context, func(Request, Decision)) Decision) (Decision, []seenCheck, error) {
	if g.checkerSync[i] {
		return g.interruptibly(ctx, req, ask)
	}
	cctx, cancel := context.WithTimeout(ctx, g.cfg.CheckTimeout)
	defer cancel()
	type answer struct {
		d      Decision
		visits []seenCheck
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		a.d = ask(cctx, func(r Request, d Decision) {
			a.visits = append(a.visits, seenCheck{r, d})
		})
		done <- a
	}()
	var a answer
	select {
	case a = <-done:
	case <-cctx.Done():
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, nil, err
	}
	if cctx.Err() != nil {
		// Fail closed: the deadline passed, whatever the checker says now.
		d, seen := g.lateFault(req)
		return d, seen, nil
	}
	return a.d, a.visits, nil
}

// interruptibly is bounded for a checker that is [Synchronous] and [Interruptible]: it
// runs ask on the caller's goroutine (no goroutine, no channel) under a context that
// ends at Config.CheckTimeout, and relies on the checker to stop once that context is
// done. An answer given after the deadline never counts, except the checker's own
// fault denial, which says more about what ran out than the Guard can.
func (g *Guard) interruptibly(ctx context.Context, req Request, ask func(context.Context, func(Request, Decision)) Decision) (Decision, []seenCheck, error) {
	cctx, cancel := context.WithTimeout(ctx, g.cfg.CheckTimeout)
	var seen []seenCheck
	d := ask(cctx, func(r Request, d Decision) { seen = append(seen, seenCheck{r, d}) })
	late := cctx.Err() != nil
	cancel()
	if err := ctx.Err(); err != nil {
		return Decision{}, nil, err
	}
	if late && (d.Effect != Deny || !d.Fault) {
		// Fail closed: the deadline passed, whatever the checker says now.
		d, seen = g.lateFault(req)
	}
	return d, seen, nil
}

// lateFault is the fault denial for a checker that did not answer within the deadline.
func (g *Guard) lateFault(req Request) (Decision, []seenCheck) {
	r := req
	if r.Capability == "" {
		r.Capability = CapToolCall
	}
	d := CheckerFault(req.Target, fmt.Errorf("did not answer within %s", g.cfg.CheckTimeout))
	return d, []seenCheck{{r, d}}
}

// halt finishes the call as halted by checker's d and returns the [*PolicyHaltError]
// that stops the run.
func (st *callState) halt(ctx context.Context, stage Stage, checker string, d Decision) error {
	target := st.call.Tool
	e := st.event(EventPermissionHalt)
	e.Checker, e.RuleID, e.Reason, e.TellLLM, e.Rationale, e.Iteration, e.SequenceN, e.Target, e.Effect = checker, d.RuleID, d.Reason, d.TellLLM, d.Rationale, st.call.Iteration, len(st.call.Sequence), target, Halt
	st.send(ctx, &e)
	st.out.Status, st.out.Stage, st.out.Decision, st.out.RuleID = StatusHalted, stage, d, d.RuleID
	st.out.ModelText, st.out.IsError = d.ModelText(target), true
	st.finish(ctx)
	return &PolicyHaltError{
		Reason:    d.Reason,
		TellLLM:   st.out.ModelText,
		RuleID:    d.RuleID,
		CheckerID: checker,
		Iteration: st.call.Iteration,
		Proposed:  Step{Tool: st.call.Tool, Args: st.args},
		Sequence:  append([]Step(nil), st.call.Sequence...),
	}
}

// callSide runs the call-side links in order (the tool's preprocessor first): the
// first deny (or broken link) refuses, a transform replaces the arguments, an ask is
// recorded for the human stage and the chain goes on.
func (st *callState) callSide(ctx context.Context) (bool, error) {
	st.tick()
	for _, m := range st.p.calls {
		out := st.callLink(ctx, m)
		row := LedgerRow{Middleware: m.Name, Moment: "call"}
		switch out.kind {
		case okAllow:
			row.Outcome, row.Why = "allow", out.why
			if out.args != nil {
				row.Changed = !out.args.Equal(st.args)
				st.args = *out.args
			}
			st.ledger(ctx, row)
		case okDeny:
			row.Outcome, row.Why = "deny", out.reason
			st.ledger(ctx, row)
			st.refuse(ctx, StageMiddleware, Decision{Effect: Deny, RuleID: m.Name, Rationale: out.reason}, out.reason)
			return true, nil
		case okAsk:
			// The question is recorded and the chain goes on: the person is asked at the
			// human stage, about the arguments that will execute.
			row.Outcome, row.Why = "ask", out.question
			st.ledger(ctx, row)
			st.asks = append(st.asks, MiddlewareAsk{Middleware: m.Name, Question: out.question, Detail: out.detail})
		default:
			text := ThrewText(m.Name, errText(out.err))
			row.Outcome, row.Why = "deny", text
			st.ledger(ctx, row)
			st.refuse(ctx, StageMiddleware, Decision{Effect: Deny, RuleID: m.Name, Rationale: text, Fault: true}, text)
			return true, nil
		}
	}
	return false, nil
}

func (st *callState) callLink(ctx context.Context, m *Middleware) (out CallOutcome) {
	defer func() {
		if r := recover(); r != nil {
			out = CallOutcome{kind: okInvalid, err: panicError{r}}
		}
	}()
	return m.OnToolCall(ctx, ToolCall{Tool: st.call.Tool, Args: st.args, CallID: st.call.ID, Identity: st.call.Identity, Session: st.call.Session})
}

func (st *callState) ledger(ctx context.Context, row LedgerRow) {
	if st.out.Ledger == nil {
		st.out.Ledger = st.ledgerBacking(len(st.p.calls) + len(st.p.results))
	}
	st.out.Ledger = append(st.out.Ledger, row)
	if len(st.g.cfg.Sinks) == 0 {
		return
	}
	e := st.event(EventMiddlewareDecision)
	e.Middleware, e.Moment, e.Outcome, e.Changed, e.Why = row.Middleware, row.Moment, row.Outcome, row.Changed, row.Why
	st.send(ctx, &e)
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

// checkSkill asks checker i, in the skill pass, about target ("skill:<id>"), when it
// governs [CapSkillRead]: a checker that does not is not asked (an allow, recorded
// nowhere), and one whose Governs fails or panics is a fault denial. The checker is
// asked once (its Check, not [CheckCall]: the skill is the only capability) under the
// checker deadline, and v records its answer.
func (st *callState) checkSkill(ctx context.Context, i int, target string, v *passVisitor) (Decision, error) {
	c := st.g.cfg.Checkers[i]
	if ok, gerr := safeGoverns(c, CapSkillRead); gerr != nil {
		return CheckerFault(target, gerr), nil
	} else if !ok {
		return Decision{Effect: Allow}, nil
	}
	req := Request{Capability: CapSkillRead, Target: target, Args: st.args, Iteration: st.call.Iteration, Identity: st.call.Identity, Sequence: st.call.Sequence}
	if !st.g.checkerSync[i] || st.g.checkerInterrupt[i] {
		return st.checkSkillBounded(ctx, i, req, v)
	}
	req.Sequence = st.lentSequence()
	d := safeCheck(ctx, c, req)
	if !st.sequenceIntact() {
		d = st.sequenceTampered(req, v.name)
	}
	v.visit(st, req, d)
	return d, nil
}

// checkSkillBounded is checkSkill for a checker that is not [Synchronous] or is
// [Interruptible] (see [Guard.bounded]). It is a separate function so that only this
// path pays for what the ask closure captures.
func (st *callState) checkSkillBounded(ctx context.Context, i int, req Request, v *passVisitor) (Decision, error) {
	c := st.g.cfg.Checkers[i]
	req.Sequence = st.ownSequence()
	d, seen, err := st.g.bounded(ctx, i, req, func(cctx context.Context, visit func(Request, Decision)) Decision {
		d := safeCheck(cctx, c, req)
		visit(req, d)
		return d
	})
	for _, x := range seen {
		v.visit(st, x.r, x.d)
	}
	return d, err
}

// human runs the human stage: the middleware asks, a carried escalation and the
// tool's check-in become one question about the call as it will run (the final
// arguments, after S2 and validation). On a resume, the approval answers it when it was
// given to the same question (kind, tool, asking middleware) about the same arguments.
func (st *callState) human(ctx context.Context) (bool, error) {
	esc := st.carried
	checkIn := st.needsCheckIn()
	if len(esc) == 0 && !checkIn && len(st.asks) == 0 {
		if a := st.approval; a != nil && st.args.Digest() != a.Digest {
			// Nobody is asked, and the call is not the one the person approved.
			st.refuse(ctx, StageHuman, Decision{Effect: Deny, RuleID: "approval.digest", Rationale: ApprovalMismatchText}, ApprovalMismatchText)
			return true, nil
		}
		return false, nil
	}
	p := st.question(esc, checkIn)
	if a := st.approval; a != nil {
		// a was checked against the approval's digest on entry: it is what the person saw.
		if p.ApprovalDigest() == a.ApprovalDigest() {
			return false, nil
		}
		if sameQuestion(a, &p) {
			// The same question about other arguments: the approval authorizes exactly
			// the call the person saw.
			st.refuse(ctx, StageHuman, Decision{Effect: Deny, RuleID: "approval.digest", Rationale: ApprovalMismatchText}, ApprovalMismatchText)
			return true, nil
		}
	}
	if st.approval != nil || !st.g.cfg.CanPause {
		// Nobody can answer here: there is no pause, or this is a resume and its
		// approval answered another question.
		if len(st.asks) > 0 {
			a := st.asks[0]
			text := NoPauseText(a.Middleware, a.Question)
			st.refuse(ctx, StageMiddleware, Decision{Effect: Deny, RuleID: a.Middleware, Rationale: text}, text)
			return true, nil
		}
		if len(esc) > 0 {
			action, _ := st.args.String("action")
			st.refuse(ctx, StageHuman, EscalationFault(st.call.Tool, action, esc[0]), "")
			return true, nil
		}
		text := "Tool '" + st.call.Tool + "' requires a check-in, and there is no pause here to carry it: " + st.checkInQuestion()
		st.refuse(ctx, StageHuman, Decision{Effect: Deny, RuleID: "checkin", Rationale: text, Fault: true}, text)
		return true, nil
	}
	st.pend(ctx, p)
	return true, nil
}

// ApprovalMismatchText is what the model reads when a resumed call reaches the human
// stage with arguments other than the ones the person approved.
const ApprovalMismatchText = "approval does not apply: the arguments changed after a person approved them"

// question builds the one pending decision of the human stage. Its kind is escalate
// when a checker escalated, else ask when a middleware asked, else checkin; Question
// holds every source's question, one per line (a single source's question as it is).
func (st *callState) question(esc []Decision, checkIn bool) PendingDecision {
	p := PendingDecision{Tool: st.call.Tool, Digest: st.args.Digest()}
	switch {
	case len(esc) > 0:
		p.Kind = KindEscalate
	case len(st.asks) > 0:
		p.Kind = KindAsk
	default:
		p.Kind = KindCheckIn
	}
	sources := len(st.asks) + len(esc)
	if checkIn {
		sources++
	}
	var parts []string
	if len(esc) > 0 {
		action, _ := st.args.String("action")
		target := st.call.Tool
		if action != "" {
			target += "." + action
		}
		for _, e := range esc {
			q := "Permission escalation for " + target + ": " + e.Rationale + ". Allow this call?"
			if !slices.Contains(parts, q) {
				parts = append(parts, q)
			}
		}
		first := esc[0]
		p.Escalation = &first
	}
	if len(st.asks) > 0 {
		p.Asks = slices.Clip(st.asks)
		p.Middleware = st.asks[0].Middleware
		var details []string
		for _, a := range st.asks {
			if sources == 1 {
				parts = append(parts, a.Question)
				details = append(details, a.Detail)
				continue
			}
			parts = append(parts, "middleware '"+a.Middleware+"' asks: "+a.Question)
			if a.Detail != "" {
				details = append(details, a.Middleware+": "+a.Detail)
			}
		}
		p.Detail = strings.Join(details, "\n")
	}
	if checkIn {
		parts = append(parts, st.checkInQuestion())
		p.Evidence = &Evidence{Does: st.p.tool.Description, Args: renderArgs(st.args), Context: append([]string(nil), st.call.Context...)}
	}
	p.Question = strings.Join(parts, "\n")
	return p
}

// sameQuestion reports whether approval a was given to the question p asks: the same
// kind, tool, question and asking middleware (in order). The arguments are compared
// apart.
func sameQuestion(a, p *PendingDecision) bool {
	if a.Kind != p.Kind || a.Tool != p.Tool || a.Question != p.Question {
		return false
	}
	askers := func(d *PendingDecision) []string {
		if len(d.Asks) == 0 && d.Middleware != "" {
			return []string{d.Middleware}
		}
		names := make([]string, len(d.Asks))
		for i, x := range d.Asks {
			names[i] = x.Middleware
		}
		return names
	}
	return slices.Equal(askers(a), askers(p))
}

func (st *callState) needsCheckIn() (need bool) {
	ci := st.p.tool.CheckIn
	if ci == nil {
		return false
	}
	if ci.When == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			need = true // a predicate that panics demands the check-in
		}
	}()
	return ci.When(st.args)
}

func (st *callState) checkInQuestion() string {
	if q := st.p.tool.CheckIn; q != nil && q.Question != "" {
		return q.Question
	}
	return "Run " + st.call.Tool + " with these arguments?"
}

func renderArgs(a Args) string {
	var v any
	_ = json.Unmarshal(a.AppendJSON(nil), &v)
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(a.AppendJSON(nil))
	}
	return string(b)
}

// pend finishes the call as waiting for a person to answer p.
func (st *callState) pend(ctx context.Context, p PendingDecision) {
	p.Tool, p.Args = st.call.Tool, st.args
	p.Revision, p.Identity, p.Session, p.CallID, p.Iteration = st.g.cfg.Revision, st.call.Identity, st.call.Session, st.call.ID, st.call.Iteration
	p.Created = st.g.cfg.Now().UTC()
	p.Original = st.original
	e := st.event(EventDecisionPending)
	e.DecisionKind, e.Digest, e.Middleware = string(p.Kind), p.Digest, p.Middleware
	st.send(ctx, &e)
	st.out.Status, st.out.Stage, st.out.Pending = StatusPending, StageHuman, &p
	if p.Kind == KindAsk {
		st.out.Stage = StageMiddleware
	}
	st.out.ModelText = "waiting for a person to decide: " + p.Question
	st.finish(ctx)
}

// credentials resolves the credential the tool [Needs], right before it runs.
func (st *callState) credentials(ctx context.Context) (bool, error) {
	if n := st.p.tool.Needs; n != nil {
		e := st.event(EventCredentialRequest)
		e.Detail = n.Service
		st.send(ctx, &e)
		prov := st.g.cfg.Credentials
		if prov == nil {
			st.credFail(ctx, n.Service, "no credential provider configured")
			return true, nil
		}
		cred, err := func() (c Credential, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = panicError{r}
				}
			}()
			return prov.Credential(ctx, CredentialRequest{Service: n.Service, Scopes: n.Scopes, Tool: st.call.Tool, Identity: st.call.Identity, Session: st.call.Session})
		}()
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return true, st.abort(ctx, StageCredentials, cerr)
			}
			st.credFail(ctx, n.Service, err.Error())
			return true, nil
		}
		st.cred = &cred
		e = st.event(EventCredentialAcquired)
		e.Detail = n.Service
		st.send(ctx, &e)
	}
	return false, nil
}

func (st *callState) credFail(ctx context.Context, service, msg string) {
	e := st.event(EventCredentialFailed)
	e.Detail, e.Error = service, msg
	st.send(ctx, &e)
	text := "credential error for '" + service + "': " + msg
	st.refuse(ctx, StageCredentials, Decision{Effect: Deny, RuleID: "credentials", Rationale: text, Fault: true}, text)
}

// scrubErr returns err, or an error without the credential's token when its text
// holds it. The replacement does not unwrap to the original: that would hand the token
// back to anyone who asks.
func (st *callState) scrubErr(err error) error {
	if err == nil || st.cred == nil || st.cred.Token == "" || !strings.Contains(err.Error(), st.cred.Token) {
		return err
	}
	return errors.New(st.scrub(err.Error()))
}

// scrub removes the credential's token from text that leaves the pipeline.
func (st *callState) scrub(s string) string {
	if st.cred == nil || st.cred.Token == "" {
		return s
	}
	return strings.ReplaceAll(s, st.cred.Token, "[redacted]")
}

// execute runs the tool, written ahead to the journal, then decides what the model reads
// of it (resultSide); it always finishes the call.
func (st *callState) execute(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return st.abort(ctx, StageExecute, err)
	}
	if j := st.g.cfg.Journal; j != nil {
		intent := st.out
		intent.Args, intent.Status, intent.Stage, intent.Executed = st.args, "", StageExecute, true
		var ref JournalRef
		err := journalSafely(func() (err error) {
			ref, err = j.Begin(ctx, st.call, intent)
			return err
		})
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return st.abort(ctx, StageExecute, cerr)
			}
			st.journalFailed(ctx, "begin", err)
			// Fail closed: a call that cannot be recorded does not run.
			st.refuse(ctx, StageExecute, Decision{Effect: Deny, RuleID: "journal", Rationale: "audit log unavailable: " + err.Error(), Fault: true}, JournalUnavailableText(st.call.Tool))
			return nil
		}
		st.jref, st.begun = ref, true
	}
	st.out.Executed = true
	st.tick()
	e := st.event(EventToolStart)
	st.send(ctx, &e)
	result, err := st.runTool(ctx)
	if err != nil && errors.Is(err, ErrNotExecuted) {
		// The tool says it failed before doing anything: it did not execute.
		st.out.Executed = false
	}
	if err != nil && ctx.Err() != nil {
		st.out.Status, st.out.Stage, st.out.IsError, st.out.Err = StatusFailed, StageExecute, true, st.scrubErr(err)
		st.out.ModelText = "call cancelled: " + ctx.Err().Error()
		st.finish(context.WithoutCancel(ctx))
		return ctx.Err()
	}
	st.out.Result = result
	st.out.Stage = StageExecute
	st.resultSide(ctx, result, err)
	return nil
}

// resultSide decides what the model reads of an executed call (see "The result side"
// on [Guard]): the tool's own answer, then the result links innermost first, then the
// error handlers, then the guard-wide cap. err is the tool's error, nil when it
// returned a result.
func (st *callState) resultSide(ctx context.Context, result any, err error) {
	// text and isErr are what the model reads as the result side stands; ownFailure
	// says the tool reported its own failure (an ErrorResult).
	text, ownFailure := "", false
	if err == nil {
		if er, ok := result.(ErrorResult); ok {
			// The tool reported its own failure: the model reads its words, the call failed.
			text, ownFailure = er.Text, true
		} else {
			// A result that cannot be shown is the tool's failure (fail closed).
			text, err = render(result)
		}
	}
	isErr := err != nil || ownFailure
	if err == nil {
		if max := st.p.tool.ResultCeiling; max > 0 {
			if n := utf8.RuneCountInString(text); n > max {
				e := st.event(EventResultRefused)
				e.Size, e.Detail = n, "ceiling "+strconv.Itoa(max)
				st.send(ctx, &e)
				text, isErr, result = CeilingText(st.call.Tool, n, max), true, nil
				st.out.Result, st.out.Stage = nil, StageCeiling
			}
		}
	}
	// Result side, the onion: postprocessor first, then middleware in reverse order.
	// decided: a link replaced or denied what the model reads, and that decision stands
	// whatever the error handlers answer. linkErr: a link failed; fail closed, the
	// model reads nothing that link was shown.
	decided := false
	var linkErr error
	errText := ""
	if err != nil {
		errText = st.scrub(err.Error())
	}
	// A result a link could change in place (a map, a slice, a pointer) is watched: the
	// model reads text rendered before the link ran, so a link that edits the result
	// instead of replacing it would leave the model reading what it meant to remove
	// while the ledger says "unchanged", and Outcome.Result would no longer be what the
	// tool returned. Such a link (keeping or replacing) fails closed. Strings and the
	// other immutable results cost nothing here.
	watched, rendered := changeable(result) && len(st.p.results) > 0, ""
	if watched {
		var rerr error
		if rendered, rerr = render(result); rerr != nil {
			watched = false // the tool's failure already (err); nothing to compare
		}
	}
	for _, m := range st.p.results {
		out := st.resultLink(ctx, m, ToolResult{Tool: st.call.Tool, Args: st.args, Result: result, IsError: isErr, Error: errText, CallID: st.call.ID})
		if out.kind == okAllow && watched {
			if now, rerr := render(result); rerr != nil || now != rendered {
				out = ResultOutcome{kind: okInvalid, err: errors.New("it changed the result in place (a link changes what the model reads with ReplaceModelResult)")}
			}
		}
		replacement := ""
		if out.kind == okAllow && out.set {
			var rerr error
			if replacement, rerr = render(out.result); rerr != nil {
				out = ResultOutcome{kind: okInvalid, err: rerr}
			}
		}
		row := LedgerRow{Middleware: m.Name, Moment: "result"}
		if out.kind == okAllow {
			row.Outcome, row.Why, row.Changed = "allow", out.why, out.set
			st.ledger(ctx, row)
			if out.set {
				result, text, decided = out.result, replacement, true
				st.out.Stage = StageResult
				if watched = changeable(result); watched {
					rendered = text
				}
			}
			continue
		}
		st.out.Stage = StageResult
		if out.kind == okDeny {
			row.Outcome, row.Why = "deny", out.reason
			st.ledger(ctx, row)
			text, isErr, decided = out.reason, true, true
			break
		}
		// A link that panicked or answered something invalid is a denial of what it
		// was shown (fail closed), and a result-side failure for the error handlers.
		lerr := out.err
		if lerr == nil {
			lerr = errors.New("invalid result outcome")
		}
		row.Outcome, row.Why = "deny", ThrewText(m.Name, lerr.Error())
		st.ledger(ctx, row)
		linkErr, decided = errors.New(row.Why), false
		break
	}
	st.out.Status = StatusRan
	if ownFailure {
		st.out.Status = StatusFailed
	}
	failure := err
	switch {
	case err == nil:
		failure = linkErr
	case linkErr != nil:
		failure = errors.Join(err, linkErr)
	}
	if failure != nil {
		// Error handlers see every failure. Their replacement converts the failure into
		// a result only where no result link decided what the model reads: a link's
		// decision wins the way a first replacement wins, and they only observe.
		replaced, value := st.handleError(ctx, failure)
		valueText := ""
		if replaced && !decided {
			var rerr error
			if valueText, rerr = render(value); rerr != nil {
				// A replacement that cannot be shown converts nothing (fail closed).
				st.out.SecondaryErrors = append(st.out.SecondaryErrors, fmt.Errorf("error handler replacement: %w", rerr))
				replaced = false
			}
		}
		switch {
		case replaced && !decided:
			// The converted failure is the tool's error or a link's; a tool that reported
			// its own failure (ErrorResult) still failed, and the model is told so.
			text, isErr = valueText, ownFailure
			st.out.Result = value
		case decided:
			// A replace or deny of the tool's error stands; the call still failed.
			st.out.Status, st.out.Err, isErr = StatusFailed, st.scrubErr(err), true
		default:
			// The failure stands. The model reads the failing link's failure, never what
			// it was shown (the tool's raw error included), or else the tool's error.
			st.out.Status, st.out.Err, isErr = StatusFailed, st.scrubErr(failure), true
			why := failure
			if linkErr != nil {
				why = linkErr
			}
			text = "Tool '" + st.call.Tool + "' failed: " + why.Error()
		}
	}
	st.out.ModelText, st.out.IsError = st.scrub(text), isErr
	st.capped(ctx)
}

// render is [RenderResult] for values Warden did not build: a value whose encoding
// panics is an error, not a panic through the Guard.
func render(v any) (s string, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = "", fmt.Errorf("the result could not be rendered: %v", r)
		}
	}()
	return RenderResult(v), nil
}

// changeable reports whether a result could be changed in place by a link that holds
// it: anything but nil, strings, booleans, numbers and Warden's immutable values.
func changeable(v any) bool {
	switch v.(type) {
	case nil, string, bool, int, int64, float64, json.Number, ErrorResult, Args, Array:
		return false
	}
	return true
}

// runTool runs the tool; a panic is the tool's error.
func (st *callState) runTool(ctx context.Context) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool panicked: %v", r)
		}
	}()
	return st.p.tool.Run(ctx, st.args, st.cred)
}

func (st *callState) resultLink(ctx context.Context, m *Middleware, r ToolResult) (out ResultOutcome) {
	defer func() {
		if rec := recover(); rec != nil {
			out = ResultOutcome{kind: okInvalid, err: panicError{rec}}
		}
	}()
	return m.OnToolResult(ctx, r)
}

// handleError runs the error handlers in order; the first replacement wins and later
// handlers only observe. A handler's own failure is secondary.
func (st *callState) handleError(ctx context.Context, err error) (bool, any) {
	replaced := false
	var value any
	for _, h := range st.p.onError {
		disp, herr := func() (d ErrorDisposition, e error) {
			defer func() {
				if r := recover(); r != nil {
					e = panicError{r}
				}
			}()
			return h.Handle(ctx, ToolError{Tool: st.call.Tool, Args: st.args, Err: err})
		}()
		if herr != nil {
			st.out.SecondaryErrors = append(st.out.SecondaryErrors, fmt.Errorf("error handler %q: %w", h.Name, herr))
			continue
		}
		if rr, ok := disp.(ReplaceResult); ok && !replaced {
			replaced, value = true, rr.Value
		}
	}
	return replaced, value
}

// capped applies the guard-wide result cap, last, and finishes the call.
func (st *callState) capped(ctx context.Context) {
	if max := st.g.cfg.MaxResultChars; max > 0 {
		if n := utf8.RuneCountInString(st.out.ModelText); n > max {
			st.out.ModelText = TruncationMarker(st.call.Tool, st.out.ModelText, n, max)
			st.out.Stage = StageCeiling
		}
	}
	st.finish(ctx)
}

// CeilingText is the refusal for a result over a tool's own ceiling.
func CeilingText(tool string, n, max int) string {
	return fmt.Sprintf("Result too large: %s returned %d chars, over its declared %d-char ceiling. Narrow the request and call again. No data was returned.", tool, n, max)
}

// TruncationMarker replaces an oversized result with a JSON marker that fits in max
// characters: {"truncated":true,"reason":...,"head":...}, with as much of the text's
// head as fits; the head is dropped before the reason when space is short.
func TruncationMarker(tool, text string, n, max int) string {
	reason := fmt.Sprintf("%s returned %d chars, over the %d-char cap. Narrow the request and call again.", tool, n, max)
	withReason := `{"truncated":true,"reason":` + string(appendJSONString(nil, reason))
	if utf8.RuneCountInString(withReason)+len(`,"head":""}`) < max {
		room := max - utf8.RuneCountInString(withReason) - len(`,"head":""}`)
		head := make([]byte, 0, room)
		for _, r := range text {
			enc := appendJSONString(nil, string(r))
			enc = enc[1 : len(enc)-1]
			if utf8.RuneCount(head)+utf8.RuneCount(enc) > room {
				break
			}
			head = append(head, enc...)
		}
		return withReason + `,"head":"` + string(head) + `"}`
	}
	if utf8.RuneCountInString(withReason)+1 <= max {
		return withReason + "}"
	}
	return `{"truncated":true}`
}

// RenderResult renders a tool result for the model: strings as they are, byte slices
// and raw JSON as text, everything else as JSON.
func RenderResult(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []byte:
		return string(t)
	case json.RawMessage:
		return string(t)
	case nil:
		return ""
	case Args:
		return string(t.AppendJSON(nil))
	case Array:
		return string(t.AppendJSON(nil))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Caller says who resumes a pending decision: the identity and session the resuming
// program itself knows (from its own authentication or run state, never from the
// pending decision), and the calls executed so far in its run.
type Caller struct {
	Identity Identity
	Session  string
	Sequence []Step
	// Unauthorized lists the run's targets whose authorization faulted (see
	// [Call.Unauthorized]); the resumed call is refused if it names one of them.
	Unauthorized []string
}

// Resume continues a call that waited for a person, for the caller who. A pending
// decision whose identity or session differs from who's is refused before anything
// runs (a decision edited in storage cannot borrow another principal's rights or
// credentials), and the resumed call carries who's executed sequence and unauthorized
// targets.
//
// answer must be [Approved] or [Declined]; anything else returns a
// [*DecisionRequiredError] and runs nothing, so the pending decision stays usable. An
// Approved must carry the digest of the arguments the person was shown; one that names
// no digest, or another digest than p's, returns an error wrapping
// [ErrApprovalMismatch] and runs nothing.
//
// A declined call is refused with the declined text. An approved call runs the whole
// pipeline again from the arguments as originally proposed, under the guard's current
// policy (so a policy revision that changed while the call waited applies). At the
// human stage the approval answers the question only when it is the same question (the
// same kind, tool, question text and asking middleware, in order) about final arguments
// with the same digest: other arguments are refused with [ApprovalMismatchText], another
// question with the no-pause refusal (nobody is asked twice on one resume). A resumed
// call that reaches no question at all runs only with the arguments the person saw. Nothing in the
// pending decision but that question is trusted, so a decision edited in storage cannot
// skip a stage.
//
// Resume does not remember approvals: resuming the same approval twice runs the call
// twice. The caller makes approvals single-use: a durable store claims the decision
// before resuming (the gateway, warden run).
func (g *Guard) Resume(ctx context.Context, p PendingDecision, answer Answer, who Caller) (Outcome, error) {
	return g.resume(ctx, p, answer, who)
}

func (g *Guard) resume(ctx context.Context, p PendingDecision, answer Answer, who Caller) (Outcome, error) {
	switch a := answer.(type) {
	case nil:
		return Outcome{}, &DecisionRequiredError{Got: "nil"}
	case Approved, Declined:
	case *Approved:
		if a == nil {
			return Outcome{}, &DecisionRequiredError{Got: "nil *Approved"}
		}
		answer = *a
	case *Declined:
		if a == nil {
			return Outcome{}, &DecisionRequiredError{Got: "nil *Declined"}
		}
		answer = *a
	default:
		return Outcome{}, &DecisionRequiredError{Got: fmt.Sprintf("%T", answer)}
	}
	if p.Args.Digest() != p.Digest {
		return Outcome{}, errors.New("warden: pending decision does not match its digest; it was altered")
	}
	switch p.Kind {
	case KindAsk, KindEscalate, KindCheckIn:
	default:
		return Outcome{}, fmt.Errorf("warden: pending decision has an unknown kind %q", p.Kind)
	}
	if a, ok := answer.(Approved); ok {
		switch want := p.ApprovalDigest(); {
		case a.Digest == "":
			return Outcome{}, fmt.Errorf("%w: Approved.Digest is empty; set it to the ApprovalDigest of the decision the person was shown (this decision's is %s)", ErrApprovalMismatch, want)
		case a.Digest != want:
			return Outcome{}, fmt.Errorf("%w: the person approved %s, but this pending decision is %s: it changed after they saw it, so show it to them again", ErrApprovalMismatch, a.Digest, want)
		}
	}
	c := Call{ID: p.CallID, Tool: p.Tool, Args: p.Original, Iteration: p.Iteration, Identity: p.Identity, Session: p.Session}
	if p.Identity != who.Identity || p.Session != who.Session {
		return Outcome{}, fmt.Errorf("warden: pending decision belongs to principal %q session %q, not to the caller (principal %q session %q)", p.Identity.Principal, p.Session, who.Identity.Principal, who.Session)
	}
	c.Sequence, c.Unauthorized = who.Sequence, who.Unauthorized
	var st0 callState
	st := &st0
	g.initState(st, c)
	e := st.event(EventDecisionMade)
	e.DecisionKind, e.Digest, e.Middleware = string(p.Kind), p.Digest, p.Middleware
	if a, ok := answer.(Declined); ok {
		e.By = a.By
		st.send(ctx, &e)
		st.args = p.Args
		text := DeclinedText(a.Note)
		st.refuse(ctx, StageHuman, Decision{Effect: Deny, RuleID: "human", Rationale: text}, text)
		return st.out, nil
	}
	a := answer.(Approved)
	e.By, e.Approved = a.By, true
	st.send(ctx, &e)
	st.out.ApprovedBy = a.By
	st.approval = &p
	err := st.pipeline(ctx)
	return st.out, err
}

func cloneTool(t Tool) Tool {
	t.InputSchema, t.Capabilities = slices.Clone(t.InputSchema), slices.Clone(t.Capabilities)
	return t
}
