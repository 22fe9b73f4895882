package warden

import (
	"context"
	"log/slog"
)

// Journal is the durable record of calls (the audit log). The Guard writes ahead: for a
// call that is about to execute it calls Begin BEFORE the tool runs, and the tool runs
// only when Begin succeeded, so a crash leaves a "started, outcome unknown" record rather
// than nothing. After the tool it calls End. A call that never executes (refused,
// halted, pending) is written once with Record.
//
// A Journal must be safe for concurrent use. A failing (or panicking) Begin refuses the
// call (an unrecordable call does not run); a failing or panicking End or Record is
// reported as an event and through [Config.Logger], and never changes an outcome that
// already happened.
type Journal interface {
	Begin(ctx context.Context, c Call, o Outcome) (JournalRef, error)
	End(ctx context.Context, ref JournalRef, c Call, o Outcome) error
	Record(ctx context.Context, c Call, o Outcome) error
}

// JournalRef identifies a begun journal entry.
type JournalRef int64

// EventJournalFailed is emitted when the journal could not record a call.
const EventJournalFailed = "warden.journal.failed"

// JournalUnavailableText is what the model reads when a call is refused because the
// journal could not record it.
func JournalUnavailableText(tool string) string {
	return "[permission denied: Tool '" + tool + "' was not run because its call could not be recorded in the audit log. Try again later.]"
}

// journalSafely runs one journal call; a panic is that call's failure (a Begin that
// panics refuses the call, an End or Record that panics is reported), never a panic
// through the Guard.
func journalSafely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError{r}
		}
	}()
	return f()
}

func (st *callState) journalFailed(ctx context.Context, op string, err error) {
	e := st.event(EventJournalFailed)
	e.Error, e.Detail = err.Error(), op
	st.emit(ctx, e)
	st.g.cfg.Logger.LogAttrs(ctx, slog.LevelError, "warden: journal failed", slog.String("op", op), slog.String("tool", st.call.Tool), slog.String("call_id", st.call.ID), slog.String("error", err.Error()))
}
