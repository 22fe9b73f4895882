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
