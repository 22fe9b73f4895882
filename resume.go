package warden

import (
	"context"
	"errors"
	"fmt"
)

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
// with the same digest: other arguments are refused with "approval does not apply: the arguments
// changed after a person approved them", another
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
