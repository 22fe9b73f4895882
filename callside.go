package warden

import (
	"context"
	"github.com/wardenhq/warden/internal/spectext"
)

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
			text := spectext.ThrewText(m.Name, errText(out.err))
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
