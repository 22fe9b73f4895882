package main

// This file records the hook's decisions in the audit log (--store).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/postgres" // the postgres:// and postgresql:// DSN schemes
	// the sqlite:// DSN scheme
)

// The audit log (--store). The PreToolUse hook records every decision. An allowed call
// is recorded write-ahead as an intent (executed: Claude Code runs it as soon as the hook
// answers), which the PostToolUse hook (--event post) completes as ran. A refused or
// halted call is one entry. An asked call is one pending entry: Warden does not see the
// person's answer, only, through the PostToolUse hook, that the call ran; then that hook
// records the run (intent and completion, approved in Claude Code). A call the person
// declined stays pending, which is all Warden knows about it.

// storeTimeout bounds the audit log work of one hook invocation.
const storeTimeout = 10 * time.Second

// maxAuditArgs bounds the arguments kept in an audit entry; larger ones (a Write of a
// big file) are kept only as their digest.
const maxAuditArgs = 64 << 10

// auditLookback is how far back the PostToolUse hook looks for the call's intent.
const auditLookback = 24 * time.Hour

// openHookStore opens the audit log, creating it on first use; the caller closes it.
func openHookStore(ctx context.Context, dsn string) (store.Store, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	return st, nil
}

// recordPre records a PreToolUse decision in the audit log.
func recordPre(ctx context.Context, dsn string, in hook.ClaudeInput, call hook.Call, r report) (err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	st, err := openHookStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	d := r.decision
	rec := store.CallRecord{
		CallID:     in.ToolUseID,
		Session:    in.SessionID,
		Tool:       call.Tool,
		ArgsDigest: call.Args.Digest(),
		Stage:      warden.StagePermission,
		Effect:     d.Effect.String(),
		RuleID:     d.RuleID,
		Rationale:  d.Rationale,
		Reason:     d.Reason,
		Revision:   r.revision,
	}
	if a := call.Args.AppendJSON(nil); len(a) <= maxAuditArgs {
		rec.Args = a
	}
	switch d.Effect {
	case warden.Allow:
		// Write-ahead: Claude Code runs the call as soon as this hook answers.
		rec.Executed = true
		_, err = st.BeginCall(ctx, rec)
	case warden.Ask:
		rec.Stage = warden.StageHuman
		rec.Status = warden.StatusPending
		err = st.RecordCall(ctx, rec)
	case warden.Halt:
		rec.Status = warden.StatusHalted
		err = st.RecordCall(ctx, rec)
	default:
		rec.Status = warden.StatusRefused
		err = st.RecordCall(ctx, rec)
	}
	return err
}

// runHookPost completes, as ran, the audit intent the PreToolUse hook recorded for the
// call. It prints nothing on success. The tool has already run, so a failure cannot
// block anything: it is reported on stderr with exit 1, which Claude Code shows the
// user as a non-blocking hook error.
func runHookPost(ctx context.Context, stdin io.Reader, stderr io.Writer, o hookOptions) error {
	fail := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "warden: the audit log did not record that the call ran: "+format+"\n", args...)
		return silentExit(exitInternal)
	}
	if o.store == "" {
		return fail("--event post needs --store DSN")
	}
	in, err := hook.ReadClaudeInput(stdin, hook.EventPostToolUse)
	if err != nil {
		return fail("%v", err)
	}
	if in.ToolUseID == "" {
		return fail("tool_use_id is missing, so the call cannot be found")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	st, err := openHookStore(ctx, o.store)
	if err != nil {
		return fail("%v", err)
	}
	err = completeCall(ctx, st, in, hook.ClaudeToolName(in.ToolName))
	if cerr := st.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fail("%v", err)
	}
	return nil
}

// completeCall records that the call ran: it completes the call's open intent, or, for
// a call Warden asked about, records the approved run.
func completeCall(ctx context.Context, st store.Store, in hook.ClaudeInput, tool string) error {
	recs, err := st.QueryCalls(ctx, store.CallFilter{Since: time.Now().Add(-auditLookback), CallID: in.ToolUseID})
	if err != nil {
		return err
	}
	size := 0
	if in.ToolResponse != nil {
		size = len(warden.AppendJSONValue(nil, in.ToolResponse))
	}
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		rec := recs[i]
		if rec.CallID != in.ToolUseID || rec.Session != in.SessionID {
			continue
		}
		done := store.Completion{Status: warden.StatusRan, Stage: warden.StageExecute, ResultSize: size}
		switch rec.Status {
		case store.StatusStarted:
			done.Duration = time.Since(rec.Time)
			err := st.EndCall(ctx, store.CallRef{Seq: rec.Seq}, done)
			if errors.Is(err, store.ErrAlreadyCompleted) {
				return nil // a retry, or a second post hook: the completion is there
			}
			return err
		case warden.StatusPending:
			// The person approved it in Claude Code's prompt, and it ran.
			run := rec
			run.Seq, run.Time, run.Unknown = 0, time.Time{}, false
			run.Status, run.Executed, run.ApprovedBy = "", true, approvedInClaudeCode
			ref, err := st.BeginCall(ctx, run)
			if err != nil {
				return err
			}
			done.ApprovedBy = approvedInClaudeCode
			return st.EndCall(ctx, ref, done)
		case warden.StatusRan:
			return nil // already recorded
		}
		return fmt.Errorf("call %q ran although Warden recorded it as %s", in.ToolUseID, rec.Status)
	}
	return fmt.Errorf("no call %q of session %q in the audit log (was the PreToolUse hook run with the same --store?)", in.ToolUseID, in.SessionID)
}

// approvedInClaudeCode is the approver of an asked call that ran: the person at Claude
// Code's permission prompt, whose name Warden does not learn.
const approvedInClaudeCode = "claude-code prompt"
