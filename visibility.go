package warden

// This file is the other surface of the Guard's checkers: what the model is offered.
// The governance page: "one object satisfies both surfaces ... the same allowlist can
// shape what the model sees and what is permitted to run, with no second source of
// truth." A front end (package agent) asks the Guard, not a second configuration, which
// tools and skills to show; the Guard answers from the checkers it runs.

import (
	"context"
	"errors"
	"slices"
	"time"
)

// VisibilityChecker is an optional interface of a [Checker]: it reports, with no call in
// hand, whether a tool may be shown to the model at all. The policy package's role,
// rule and combined policies implement it.
//
// IsAllowed is visibility only. Answering true promises nothing: every call is still
// put to Check. Answering false should mean that no call to tool could be allowed, so
// that hiding the tool hides nothing the model could have used. It is called for every
// bound tool on every model turn, possibly from many goroutines at once: it must be
// cheap, must not block and must be safe for concurrent use. A panic hides the tool.
//
// A checker that wraps another (to name it, log it, count it) should implement
// IsAllowed by asking the wrapped one when it implements this interface: otherwise the
// wrapper hides nothing (see [Guard.Offers]).
type VisibilityChecker interface {
	IsAllowed(tool string) bool
}

// Viewer is who is being shown tools and skills: what a skill question carries besides
// the skill (the same fields the skill gate puts on its request).
type Viewer struct {
	// Identity is who the run acts for.
	Identity Identity
	// Iteration is the agent-loop iteration the offer is for.
	Iteration int
	// Sequence lists the calls executed so far in the run. Each checker is lent its own
	// copy; the caller's slice is never written.
	Sequence []Step
}

// Offers reports whether the model may be offered tool: the tool is bound and callable
// (its schema compiled, see [Guard.Problems]), and every checker of the Guard that implements [VisibilityChecker] allows it. A panicking
// IsAllowed hides the tool (fail closed).
//
// A checker that does not implement VisibilityChecker does not hide anything: the tool
// is offered and the checker judges the call, with its real arguments, when it is made.
// This is deliberate. Such a checker can only judge calls, and asking it about an
// invented call with no arguments would rest what the model sees on an answer about a
// call nobody made (and would call a checker that may count, log or charge for its
// checks). Offering is not permitting: a tool offered this way and refused at the gate
// costs the model one refusal it can read.
//
// For [ReadSkillTool] this is the tool-level question only; see [Guard.OffersSkill]
// for each skill.
func (g *Guard) Offers(tool string) bool {
	if p, ok := g.plans[tool]; !ok || p.unusable != nil {
		return false // an unknown tool, or one whose schema did not compile, is refused at call time: never offer it
	}
	caps := g.plans[tool].tool.Capabilities
	for _, c := range g.cfg.Checkers {
		if v, ok := c.(VisibilityChecker); ok && !isAllowed(v, tool) {
			return false
		}
		cv, ok := c.(CapabilityVisibilityChecker)
		if !ok {
			continue
		}
		for _, cp := range caps {
			if cp != CapToolCall && governsSafely(c, cp) && !mayExercise(cv, cp) {
				return false // every call of the tool is refused for this capability
			}
		}
	}
	return true
}

// CapabilityVisibilityChecker is implemented by checkers that know, without a call,
// that they refuse a tool capability to whoever they judge (the policy package's role
// policy: a role whose capability rule does not list it). [Guard.Offers] hides a tool
// that declares a capability such a checker governs and refuses: no call of it could
// run. Like IsAllowed it must answer quickly and without blocking; a panic hides the
// tool.
type CapabilityVisibilityChecker interface {
	MayExercise(c Capability) bool
}

func mayExercise(v CapabilityVisibilityChecker, c Capability) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return v.MayExercise(c)
}

// governsSafely is CheckerGoverns with a panic as true: the checker is then asked, and
// its MayExercise decides (a checker that cannot say what it governs is not trusted to
// stay out of the way).
func governsSafely(c Checker, cp Capability) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = true
		}
	}()
	return CheckerGoverns(c, cp)
}

// isAllowed calls IsAllowed; a panic hides the tool (something that did not answer did
// not say yes).
func isAllowed(v VisibilityChecker, tool string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return v.IsAllowed(tool)
}

// OffersSkill reports whether the skill id may be named in the read_skill menu shown to
// v: every checker of the Guard that governs [CapSkillRead] allows the question the skill
// gate would ask about activating it (capability skill_read, target [SkillTarget](id),
// arguments {"id": id}). Only an allow counts: a denial, a halt, an ask, an error, a
// panic, an effect outside the vocabulary, or no answer within [Config.CheckTimeout]
// hides the skill, and so does a done ctx. The checkers are called the way the Guard
// calls them ([Synchronous] inline, [Interruptible] inline under the deadline, any other
// on its own goroutine, abandoned at the deadline). With no checker governing
// skill_read every skill is offered: there is no skill gate either.
//
// It does not ask whether read_skill itself may be offered ([Guard.Offers]).
func (g *Guard) OffersSkill(ctx context.Context, id string, v Viewer) bool {
	for i, c := range g.cfg.Checkers {
		if !CheckerGoverns(c, CapSkillRead) {
			continue
		}
		if !allowsSkill(ctx, c, id, v, g.checkerSync[i], g.checkerInterrupt[i], g.cfg.CheckTimeout) {
			return false
		}
	}
	return ctx.Err() == nil
}

// SkillOffered is [Guard.OffersSkill] for one checker outside a Guard, with its own
// deadline (0 or less means 5s): what a front end uses when it is told to build the
// skill menu from a checker other than the Guard's. A nil checker, or one that does not
// govern [CapSkillRead], offers every skill.
func SkillOffered(ctx context.Context, c Checker, id string, v Viewer, timeout time.Duration) bool {
	if !CheckerGoverns(c, CapSkillRead) {
		return ctx.Err() == nil
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	s, ok := c.(Synchronous)
	sync := ok && s.Synchronous()
	in, ok := c.(Interruptible)
	return allowsSkill(ctx, c, id, v, sync, ok && in.Interruptible(), timeout)
}

// errLate is the fault of a skill check that did not answer in time.
var errLate = errors.New("did not answer within the checker deadline")

// allowsSkill asks one checker about one skill and reports whether it allowed it.
func allowsSkill(ctx context.Context, c Checker, id string, v Viewer, sync, interrupt bool, timeout time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	args, err := NewArgs("id", id)
	if err != nil {
		return false
	}
	req := Request{
		Capability: CapSkillRead,
		Actor:      v.Identity.Principal,
		Target:     SkillTarget(id),
		Args:       args,
		Iteration:  v.Iteration,
		Identity:   v.Identity,
		Sequence:   slices.Clip(slices.Clone(v.Sequence)),
	}
	return checkWithin(ctx, c, req, sync, interrupt, timeout).Effect == Allow
}

// checkWithin asks c one request the way the Guard calls a checker: a Synchronous one
// inline, an Interruptible one inline under the deadline, any other on its own goroutine,
// abandoned at the deadline. An error, a panic, an invalid effect or an answer after the
// deadline is a fault denial.
func checkWithin(ctx context.Context, c Checker, req Request, sync, interrupt bool, timeout time.Duration) Decision {
	if sync && !interrupt {
		return safeCheck(ctx, c, req)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if sync {
		d := safeCheck(cctx, c, req)
		if cctx.Err() != nil {
			return CheckerFault(req.Target, errLate) // fail closed: the answer came too late
		}
		return d
	}
	done := make(chan Decision, 1)
	go func() { done <- safeCheck(cctx, c, req) }()
	select {
	case d := <-done:
		if cctx.Err() != nil {
			return CheckerFault(req.Target, errLate)
		}
		return d
	case <-cctx.Done():
		return CheckerFault(req.Target, errLate) // fail closed: abandoned at the deadline
	}
}
