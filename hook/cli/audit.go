package cli

// This file records the hook's decisions in the audit log (--store).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/policy/explain"
	"github.com/wardenhq/warden/store"
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

// OpenStore opens the audit log at dsn (sqlite:// or postgres://), creating it on
// first use, the way the hook opens it; the caller closes it.
func OpenStore(ctx context.Context, dsn string) (store.Store, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	return st, nil
}

// hookJournal is the journal the hook records in: the one the Guard and the gateway
// use, keeping arguments only up to maxAuditArgs.
func hookJournal(st store.Store) *audit.Journal {
	return audit.NewJournal(st, &audit.Options{MaxArgs: maxAuditArgs})
}

// recordPre records a PreToolUse decision in the audit log.
func recordPre(ctx context.Context, dsn string, in hook.ClaudeInput, call hook.Call, r explain.Report) (err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	st, err := OpenStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	c, o := hookOutcome(in, call, r)
	j := hookJournal(st)
	if o.Executed {
		// Write-ahead: Claude Code runs the call as soon as this hook answers.
		_, err = j.Begin(ctx, c, o)
		return err
	}
	return j.Record(ctx, c, o)
}

// hookOutcome is the call the PreToolUse hook decided and its outcome, as the journal
// records them: an allowed call is an intent to execute; an asked one waits on the
// person's answer at Claude Code's prompt; a halted or refused one never executes.
// Every entry is decided at the permission stage (an asked one at the human stage)
// and, since the model reads Claude Code's answer rather than a Warden result, has no
// model text.
func hookOutcome(in hook.ClaudeInput, call hook.Call, r explain.Report) (warden.Call, warden.Outcome) {
	d := r.Decision
	c := warden.Call{ID: in.ToolUseID, Session: in.SessionID, Tool: call.Tool, Args: call.Args}
	o := warden.Outcome{
		CallID:   in.ToolUseID,
		Tool:     call.Tool,
		Args:     call.Args,
		Stage:    warden.StagePermission,
		RuleID:   d.RuleID,
		Decision: d,
		Revision: r.Revision,
	}
	switch d.Effect {
	case warden.Allow:
		o.Executed = true
	case warden.Ask:
		o.Stage, o.Status = warden.StageHuman, warden.StatusPending
		o.Pending = &warden.PendingDecision{Kind: warden.KindEscalate, Tool: call.Tool, Args: call.Args, Escalation: &d}
	case warden.Halt:
		o.Status = warden.StatusHalted
	default:
		o.Status = warden.StatusRefused
	}
	return c, o
}

// runHookPost completes, as ran, the audit intent the PreToolUse hook recorded for the
// call. It prints nothing on success. The tool has already run, so a failure cannot
// block anything: it is reported on stderr with exit 1, which Claude Code shows the
// user as a non-blocking hook error.
func runHookPost(ctx context.Context, stdin io.Reader, stderr io.Writer, o options) error {
	fail := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "warden: the audit log did not record that the call ran: "+format+"\n", args...)
		return silentExit(ExitInternal)
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
	st, err := OpenStore(ctx, o.store)
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
	// What the model read is the tool's response, as JSON.
	ran := warden.Outcome{Status: warden.StatusRan, Stage: warden.StageExecute, Executed: true}
	if in.ToolResponse != nil {
		ran.ModelText = string(warden.AppendJSONValue(nil, in.ToolResponse))
	}
	j := hookJournal(st)
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		rec := recs[i]
		if rec.CallID != in.ToolUseID || rec.Session != in.SessionID {
			continue
		}
		switch rec.Status {
		case store.StatusStarted:
			ran.Duration = time.Since(rec.Time)
			err := j.End(ctx, warden.JournalRef(rec.Seq), warden.Call{}, ran)
			if errors.Is(err, store.ErrAlreadyCompleted) {
				return nil // a retry, or a second post hook: the completion is there
			}
			return err
		case warden.StatusPending:
			// The person approved it in Claude Code's prompt, and it ran.
			c, intent, err := approvedIntent(rec, in)
			if err != nil {
				return err
			}
			ref, err := j.Begin(ctx, c, intent)
			if err != nil {
				return err
			}
			ran.ApprovedBy = approvedInClaudeCode
			return j.End(ctx, ref, c, ran)
		case warden.StatusRan:
			return nil // already recorded
		}
		return fmt.Errorf("call %q ran although Warden recorded it as %s", in.ToolUseID, rec.Status)
	}
	return fmt.Errorf("no call %q of session %q in the audit log (was the PreToolUse hook run with the same --store?)", in.ToolUseID, in.SessionID)
}

// approvedIntent is the intent of an asked call (its pending entry rec) that the person
// approved at Claude Code's prompt: the same call, decided as asked, now executing. Its
// arguments are the ones the entry kept, or, when they were too large to keep, the ones
// the PostToolUse input reports (mapped the way the PreToolUse hook maps them).
func approvedIntent(rec store.CallRecord, in hook.ClaudeInput) (warden.Call, warden.Outcome, error) {
	var args warden.Args
	var err error
	if rec.Args != nil {
		args, err = warden.ParseArgs(rec.Args)
	} else {
		var call hook.Call
		call, err = hook.MapClaudeTool(in.ToolName, in.ToolInput, in.Cwd)
		args = call.Args
	}
	if err != nil {
		return warden.Call{}, warden.Outcome{}, fmt.Errorf("the arguments of call %q: %w", rec.CallID, err)
	}
	c := warden.Call{ID: rec.CallID, Session: rec.Session, Tool: rec.Tool, Args: args, Identity: rec.Identity}
	o := warden.Outcome{
		CallID:     rec.CallID,
		Tool:       rec.Tool,
		Args:       args,
		Executed:   true,
		Stage:      rec.Stage,
		RuleID:     rec.RuleID,
		Decision:   warden.Decision{Effect: warden.Ask, RuleID: rec.RuleID, Rationale: rec.Rationale, Reason: rec.Reason},
		Revision:   rec.Revision,
		ApprovedBy: approvedInClaudeCode,
	}
	return c, o, nil
}

// approvedInClaudeCode is the approver of an asked call that ran: the person at Claude
// Code's permission prompt, whose name Warden does not learn.
const approvedInClaudeCode = "claude-code prompt"
