package warden

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/wardenhq/warden/internal/spectext"
	"strconv"
	"unicode/utf8"
)

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
				text, isErr, result = spectext.CeilingText(st.call.Tool, n, max), true, nil
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
		row.Outcome, row.Why = "deny", spectext.ThrewText(m.Name, lerr.Error())
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
			st.out.ModelText = spectext.TruncationMarker(st.call.Tool, st.out.ModelText, n, max)
			st.out.Stage = StageCeiling
		}
	}
	st.finish(ctx)
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
