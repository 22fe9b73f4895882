package warden

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

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
