package store

import "errors"

// Errors callers test with [errors.Is]. Implementations may wrap them with detail.
var (
	// ErrNotFound: no item has this ID (or name, or ref).
	ErrNotFound = errors.New("store: not found")
	// ErrAlreadyDecided: the decision was made already; it is made exactly once.
	ErrAlreadyDecided = errors.New("store: already decided")
	// ErrExpired: the pending decision expired before it was decided.
	ErrExpired = errors.New("store: decision expired")
	// ErrAlreadyCompleted: [Store.EndCall] for a call that already has a completion.
	ErrAlreadyCompleted = errors.New("store: call already completed")
	// ErrUndated: an audit entry would be dated the zero time (the store's clock, see
	// Options.Now, does not know what time it is). The entry is not written: an
	// undated entry would hide from every time filter, so the call is refused as
	// unrecorded instead (fail closed).
	ErrUndated = errors.New("store: the clock returned the zero time, so the audit entry cannot be dated and is not written; check the store's Options.Now")
	// ErrInvalidVerdict: a verdict with an unknown scope, or a session scope for a
	// decision that names no session.
	ErrInvalidVerdict = errors.New("store: invalid verdict")
	// ErrAlreadyClaimed: [Store.ClaimCheckpoint] for a checkpoint claimed already;
	// the error is a [*ClaimedError].
	ErrAlreadyClaimed = errors.New("store: checkpoint already claimed")
	// ErrWriteTimeout: the database did not answer a write within the store's write
	// timeout (Options.WriteTimeout of store/sqlite and store/postgres, DSN option
	// write_timeout=). The write may or may not have been committed; the error's text
	// names the timeout and how to change it.
	ErrWriteTimeout = errors.New("store: the database did not answer within the write timeout")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)
