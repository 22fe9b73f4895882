package warden

import (
	"context"
	"encoding/json"
	"github.com/wardenhq/warden/internal/spectext"
	"slices"
	"strings"
)

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
			st.refuse(ctx, StageHuman, Decision{Effect: Deny, RuleID: "approval.digest", Rationale: spectext.ApprovalMismatchText}, spectext.ApprovalMismatchText)
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
			st.refuse(ctx, StageHuman, Decision{Effect: Deny, RuleID: "approval.digest", Rationale: spectext.ApprovalMismatchText}, spectext.ApprovalMismatchText)
			return true, nil
		}
	}
	if st.approval != nil || !st.g.cfg.CanPause {
		// Nobody can answer here: there is no pause, or this is a resume and its
		// approval answered another question.
		if len(st.asks) > 0 {
			a := st.asks[0]
			text := spectext.NoPauseText(a.Middleware, a.Question)
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
