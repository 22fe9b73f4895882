package warden

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// credentials resolves the credential the tool [Needs], right before it runs.
func (st *callState) credentials(ctx context.Context) (bool, error) {
	if n := st.p.tool.Needs; n != nil {
		e := st.event(EventCredentialRequest)
		e.Detail = n.Service
		st.send(ctx, &e)
		prov := st.g.cfg.Credentials
		if prov == nil {
			st.credFail(ctx, n.Service, "no credential provider configured")
			return true, nil
		}
		cred, err := func() (c Credential, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = panicError{r}
				}
			}()
			return prov.Credential(ctx, CredentialRequest{Service: n.Service, Scopes: n.Scopes, Tool: st.call.Tool, Identity: st.call.Identity, Session: st.call.Session})
		}()
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return true, st.abort(ctx, StageCredentials, cerr)
			}
			st.credFail(ctx, n.Service, err.Error())
			return true, nil
		}
		st.cred = &cred
		e = st.event(EventCredentialAcquired)
		e.Detail = n.Service
		st.send(ctx, &e)
	}
	return false, nil
}

func (st *callState) credFail(ctx context.Context, service, msg string) {
	e := st.event(EventCredentialFailed)
	e.Detail, e.Error = service, msg
	st.send(ctx, &e)
	text := "credential error for '" + service + "': " + msg
	st.refuse(ctx, StageCredentials, Decision{Effect: Deny, RuleID: "credentials", Rationale: text, Fault: true}, text)
}

// scrubErr returns err, or an error without the credential's token when its text
// holds it. The replacement does not unwrap to the original: that would hand the token
// back to anyone who asks.
func (st *callState) scrubErr(err error) error {
	if err == nil || st.cred == nil || st.cred.Token == "" || !strings.Contains(err.Error(), st.cred.Token) {
		return err
	}
	return errors.New(st.scrub(err.Error()))
}

// scrub removes the credential's token from text that leaves the pipeline.
func (st *callState) scrub(s string) string {
	if st.cred == nil || st.cred.Token == "" {
		return s
	}
	return strings.ReplaceAll(s, st.cred.Token, "[redacted]")
}

// execute runs the tool, written ahead to the journal, then decides what the model reads
// of it (resultSide); it always finishes the call.
func (st *callState) execute(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return st.abort(ctx, StageExecute, err)
	}
	if j := st.g.cfg.Journal; j != nil {
		intent := st.out
		intent.Args, intent.Status, intent.Stage, intent.Executed = st.args, "", StageExecute, true
		var ref JournalRef
		err := journalSafely(func() (err error) {
			ref, err = j.Begin(ctx, st.call, intent)
			return err
		})
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return st.abort(ctx, StageExecute, cerr)
			}
			st.journalFailed(ctx, "begin", err)
			// Fail closed: a call that cannot be recorded does not run.
			st.refuse(ctx, StageExecute, Decision{Effect: Deny, RuleID: "journal", Rationale: "audit log unavailable: " + err.Error(), Fault: true}, JournalUnavailableText(st.call.Tool))
			return nil
		}
		st.jref, st.begun = ref, true
	}
	st.out.Executed = true
	st.tick()
	e := st.event(EventToolStart)
	st.send(ctx, &e)
	result, err := st.runTool(ctx)
	if err != nil && errors.Is(err, ErrNotExecuted) {
		// The tool says it failed before doing anything: it did not execute.
		st.out.Executed = false
	}
	if err != nil && ctx.Err() != nil {
		st.out.Status, st.out.Stage, st.out.IsError, st.out.Err = StatusFailed, StageExecute, true, st.scrubErr(err)
		st.out.ModelText = "call cancelled: " + ctx.Err().Error()
		st.finish(context.WithoutCancel(ctx))
		return ctx.Err()
	}
	st.out.Result = result
	st.out.Stage = StageExecute
	st.resultSide(ctx, result, err)
	return nil
}

// runTool runs the tool; a panic is the tool's error.
func (st *callState) runTool(ctx context.Context) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool panicked: %v", r)
		}
	}()
	return st.p.tool.Run(ctx, st.args, st.cred)
}
