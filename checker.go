package warden

import "context"

// Checker answers permission requests. Rule policies, role policies and combinations of
// them are Checkers, and so is anything a caller writes.
//
// Check is called once per request, possibly from many goroutines at once: an
// implementation must be safe for concurrent use. It must not modify req. The context
// carries the caller's deadline; a Checker that outlives it is treated as having denied.
// Returning an error, panicking, or returning an [Effect] outside the vocabulary is a
// denial (a fault), never an allow.
//
// Governs reports whether the checker wants to be asked about a capability other than
// [CapToolCall] (which every checker is asked). It must be cheap and stable: front ends
// call it on every call and may cache it.
type Checker interface {
	Check(ctx context.Context, req Request) (Decision, error)
	Governs(c Capability) bool
}

// CheckerGoverns is the one question "is this checker asked about c?": false for a nil
// checker, true for [CapToolCall], otherwise whatever the checker declares.
func CheckerGoverns(c Checker, cap Capability) bool {
	if c == nil {
		return false
	}
	if cap == CapToolCall {
		return true
	}
	return c.Governs(cap)
}

// CheckerFunc adapts a function to a [Checker] that governs only [CapToolCall].
type CheckerFunc func(ctx context.Context, req Request) (Decision, error)

// Check calls f.
func (f CheckerFunc) Check(ctx context.Context, req Request) (Decision, error) { return f(ctx, req) }

// Governs reports false: a CheckerFunc is asked only about tool dispatch.
func (CheckerFunc) Governs(Capability) bool { return false }

// Namer is implemented by checkers (and middleware) that have a name for events and
// errors. Unnamed checkers are reported by their position.
type Namer interface {
	Name() string
}

// CheckCall asks one checker about a call the way the pipeline does: first
// [CapToolCall] with Target req.Target, then each capability in declared that the
// checker governs, in declared order, stopping at the first refusal (deny or halt). An
// ask does not stop the walk; the answers combine by precedence (halt > deny > ask >
// allow). A checker that returns an error, panics or returns an invalid effect yields
// [CheckerFault]. An allow that replaces the arguments passes the replacement to the
// checks that follow and returns it on the result.
//
// visit, when non-nil, is called after every check with the request and the decision.
// req.Capability is ignored.
func CheckCall(ctx context.Context, c Checker, req Request, declared []Capability, visit func(Request, Decision)) Decision {
	return checkCall(ctx, c, req, declared, visit, nil, nil)
}

// checkCall is [CheckCall] with a second kind of visitor: the pipeline's own, called
// statically so that the call state it refers to can stay on the caller's stack (a
// call through a func value makes everything the callback refers to escape).
func checkCall(ctx context.Context, c Checker, req Request, declared []Capability, visit func(Request, Decision), st *callState, pv *passVisitor) Decision {
	var out Decision
	var replaced *Args
	req.Capability = CapToolCall
	// k == -1 is the CapToolCall check; k >= 0 walks declared. A plain loop, not a
	// closure per check: this is on every call's path.
	for k := -1; k < len(declared); k++ {
		r := req
		if k >= 0 {
			cap := declared[k]
			if cap == CapToolCall {
				continue
			}
			ok, gerr := safeGoverns(c, cap)
			if gerr == nil && !ok {
				continue
			}
			r.Capability = cap
			if gerr != nil {
				d := CheckerFault(req.Target, gerr)
				if pv != nil {
					pv.visit(st, r, d)
				} else if visit != nil {
					visit(r, d)
				}
				return d
			}
		}
		d := safeCheck(ctx, c, r)
		if pv != nil {
			pv.visit(st, r, d)
		} else if visit != nil {
			visit(r, d)
		}
		if d.Args != nil { // only an allow carries a replacement (safeCheck)
			replaced = d.Args
			req.Args = *d.Args
		}
		if k < 0 || d.Effect.Outranks(out.Effect) {
			out = d
		}
		out.Args = replaced
		if d.Effect == Deny || d.Effect == Halt {
			return out
		}
	}
	return out
}

// safeCheck calls c.Check, turning an error, a panic or an invalid effect into a
// fault denial. Something that did not answer did not say yes.
func safeCheck(ctx context.Context, c Checker, req Request) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = CheckerFault(req.Target, panicError{r})
		}
	}()
	d, err := c.Check(ctx, req)
	if err != nil {
		return CheckerFault(req.Target, err)
	}
	if !d.Effect.Valid() {
		return CheckerFault(req.Target, invalidEffectError(d.Effect))
	}
	if d.Effect != Allow {
		d.Args = nil
	}
	return d
}

type panicError struct{ v any }

func (p panicError) Error() string { return "panic: " + fmtAny(p.v) }

type invalidEffectError Effect

func (e invalidEffectError) Error() string {
	return "returned " + Effect(e).String() + ", which is not an effect"
}

// safeGoverns is CheckerGoverns with a panic as an error.
func safeGoverns(c Checker, cap Capability) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, panicError{r}
		}
	}()
	return CheckerGoverns(c, cap), nil
}
