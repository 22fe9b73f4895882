package agent

// Resuming a paused run from its checkpoint.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wardenhq/warden"
)

// Resume continues a paused run. checkpoint is [Paused.Checkpoint], possibly from
// another process; answer is the person's [warden.Approved] or [warden.Declined].
//
// Anything but a decision returns a [*warden.DecisionRequiredError] and runs nothing:
// the checkpoint stays usable. The checkpoint's seal is checked before anything in it
// is read: a checkpoint edited after the pause, or without a seal, is refused with an
// error wrapping [ErrCheckpointTampered]; one sealed under another key (see
// [Options.CheckpointKey]) with [ErrCheckpointKey]; one that does not decode or is
// inconsistent with [ErrMalformedCheckpoint]. Nothing runs for any of them.
//
// Resume does not remember checkpoints: resuming the same checkpoint twice runs the
// approved call twice. A caller that keeps checkpoints must claim one atomically
// before resuming it (warden run creates a claim file that must not exist yet, or
// compare-and-swaps a store row with store.Store.ClaimCheckpoint).
//
// The pending call is put to [warden.Guard.Resume], which judges it again under the
// Guard's current policy (a policy whose revision changed since the pause applies; the
// result's Resumed field records both revisions). A declined call is refused with the
// declined text; an approved one runs if the policy still lets it. Then the rest of the
// paused turn's calls run, and the loop continues under this agent's configuration until
// the model answers, the limit is reached, or the run pauses or stops again. The run
// keeps the checkpoint's session and identity unless this agent's Options set them, and
// its iteration count: MaxIterations covers the whole run.
func (a *Agent) Resume(ctx context.Context, checkpoint []byte, answer warden.Answer) (Result, error) {
	if err := requireDecision(answer); err != nil {
		return Result{}, err
	}
	cp, err := a.openCheckpoint(checkpoint)
	if err != nil {
		return Result{}, err
	}
	st := &run{
		session:   cp.Session,
		identity:  cp.Identity,
		messages:  cp.Messages,
		calls:     cp.Calls,
		sequence:  cp.Sequence,
		iteration: cp.Iteration,
		checked:   len(cp.Messages),
		ledger:    cp.Ledger,

		unauthorized: cp.Unauthorized,
	}
	if a.cfg.Session != "" {
		st.session = a.cfg.Session
	}
	if a.cfg.Identity != (warden.Identity{}) {
		st.identity = a.cfg.Identity
	}
	rev := a.guard.Revision()
	st.resumed = &Resumed{CheckpointRevision: cp.Revision, Revision: rev, RevisionChanged: cp.Revision != rev}
	out, err := a.guard.Resume(ctx, cp.Pending, answer, warden.Caller{Identity: st.identity, Session: st.session, Sequence: st.sequence, Unauthorized: slices.Clip(st.unauthorized)})
	var dre *warden.DecisionRequiredError
	if errors.As(err, &dre) {
		return Result{}, err
	}
	if err != nil && out.Tool == "" {
		// The Guard refused the pending decision itself (altered, unknown kind):
		// nothing ran.
		return Result{}, fmt.Errorf("agent: cannot resume: %w", err)
	}
	results := cp.Results
	remaining := loadCalls(cp.Remaining)
	if stop, err := a.settle(ctx, st, cp.PendingCall, out, err, &results, remaining); stop {
		return a.result(st), err
	}
	if stop, err := a.turn(ctx, st, remaining, results); stop {
		return a.result(st), err
	}
	return a.loop(ctx, st)
}

// requireDecision accepts exactly a non-nil Approved or Declined.
func requireDecision(answer warden.Answer) error {
	switch v := answer.(type) {
	case warden.Approved, warden.Declined:
		return nil
	case *warden.Approved:
		if v != nil {
			return nil
		}
		return &warden.DecisionRequiredError{Got: "nil *Approved"}
	case *warden.Declined:
		if v != nil {
			return nil
		}
		return &warden.DecisionRequiredError{Got: "nil *Declined"}
	case nil:
		return &warden.DecisionRequiredError{Got: "nil"}
	}
	return &warden.DecisionRequiredError{Got: fmt.Sprintf("%T", answer)}
}
