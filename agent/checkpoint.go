package agent

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/seal"
)

// ErrMalformedCheckpoint is wrapped by the error [Agent.Resume] returns for a checkpoint
// that does not decode or is inconsistent. Nothing ran.
var ErrMalformedCheckpoint = errors.New("agent: malformed checkpoint")

// ErrCheckpointTampered is wrapped by the error [Agent.Resume] and
// [Agent.VerifyCheckpoint] return for a checkpoint whose seal does not match its content
// (it was edited after the pause), or that has no seal at all (written before
// checkpoints were sealed, or by something else). Nothing ran.
var ErrCheckpointTampered = errors.New("agent: checkpoint failed its integrity check")

// ErrCheckpointKey is wrapped by the error [Agent.Resume] and [Agent.VerifyCheckpoint]
// return for a checkpoint sealed under another key than the Agent's
// [Options.CheckpointKey] (or, without one, by another Agent). Nothing ran.
var ErrCheckpointKey = errors.New("agent: checkpoint sealed under another key")

// MinCheckpointKeyLen is the shortest [Options.CheckpointKey] New accepts.
const MinCheckpointKeyLen = seal.MinKeyLen

// checkpointFormat names the checkpoint format and its version, on the sealed document
// and on its body.
const checkpointFormat = "warden.agent.checkpoint/v2"

// unsealedFormat is the format of the checkpoints written before they were sealed.
const unsealedFormat = "warden.agent.checkpoint/v1"

// The sealed document is described on [Paused].

// checkpointKey returns the Agent's sealing key: Options.CheckpointKey, or a random key
// of this Agent's own.
func checkpointKey(cfg Options) ([]byte, bool, error) {
	if len(cfg.CheckpointKey) > 0 {
		if err := seal.CheckKey(cfg.CheckpointKey); err != nil {
			return nil, false, fmt.Errorf("agent: Options.CheckpointKey: %v", err)
		}
		return bytes.Clone(cfg.CheckpointKey), false, nil
	}
	key := make([]byte, seal.MinKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("agent: making a checkpoint key: %w", err)
	}
	return key, true, nil
}

// sealCheckpoint encodes and seals a checkpoint under the Agent's key.
func (a *Agent) sealCheckpoint(cp *checkpoint) ([]byte, error) {
	cp.Format = checkpointFormat
	body, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	return seal.Seal(a.key, checkpointFormat, body)
}

// openCheckpoint checks the seal of a checkpoint, then decodes it.
func (a *Agent) openCheckpoint(data []byte) (*checkpoint, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: it is empty", ErrMalformedCheckpoint)
	}
	body, err := seal.Open(a.key, checkpointFormat, data)
	var fe *seal.FormatError
	var ke *seal.KeyError
	switch {
	case errors.As(err, &fe) && fe.Got == unsealedFormat:
		return nil, fmt.Errorf("%w: it has no seal (format %q, written before checkpoints were sealed), so nothing shows it is the one that paused; it is not resumed: run the task again", ErrCheckpointTampered, fe.Got)
	case errors.As(err, &fe):
		return nil, fmt.Errorf("%w: %v", ErrMalformedCheckpoint, fe)
	case errors.As(err, &ke) && a.randomKey:
		return nil, fmt.Errorf("%w: another Agent paused it, and this Agent has no Options.CheckpointKey (without one an Agent seals its checkpoints with a random key of its own, so they resume only in that Agent); set the same Options.CheckpointKey in the Agent that pauses and the one that resumes", ErrCheckpointKey)
	case errors.As(err, &ke):
		return nil, fmt.Errorf("%w (%v): resume it with the Options.CheckpointKey it was paused with", ErrCheckpointKey, ke)
	case errors.Is(err, seal.ErrMismatch):
		return nil, fmt.Errorf("%w: its seal does not match its content: it was changed after the pause, and is not resumed", ErrCheckpointTampered)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrMalformedCheckpoint, err)
	}
	return decodeCheckpoint(body)
}

// VerifyCheckpoint checks a checkpoint's seal and content as [Agent.Resume] does, and
// returns the pending decision it would resume: what to show the person before they
// decide. It runs nothing. The errors wrap [ErrCheckpointTampered], [ErrCheckpointKey]
// or [ErrMalformedCheckpoint].
func (a *Agent) VerifyCheckpoint(checkpoint []byte) (warden.PendingDecision, error) {
	cp, err := a.openCheckpoint(checkpoint)
	if err != nil {
		return warden.PendingDecision{}, err
	}
	return cp.Pending, nil
}

// checkpoint is everything a paused run needs to continue in any process: the body of
// the sealed document. The seal shows it is what the Agent wrote; even so the Guard
// judges the pending call again on resume, and the remaining calls go through the
// pipeline like any other.
type checkpoint struct {
	Format   string          `json:"format"`
	Session  string          `json:"session,omitempty"`
	Identity warden.Identity `json:"identity,omitzero"`
	// Iteration is the loop iteration of the paused turn.
	Iteration int `json:"iteration"`
	// Revision is the Guard's policy revision at the pause.
	Revision string `json:"revision,omitempty"`
	// Messages is the conversation up to and including the paused assistant turn.
	Messages []Message `json:"messages"`
	// Results are the tool results of the paused turn's calls before the pending one.
	Results []ToolResult `json:"results,omitempty"`
	// PendingCall is the model's call that waits for a person.
	PendingCall ToolCall `json:"pending_call"`
	// Remaining are the paused turn's calls after the pending one, not yet run.
	Remaining []storedCall `json:"remaining,omitempty"`
	// Pending is the Guard's pending decision.
	Pending warden.PendingDecision `json:"pending"`
	// Calls are the run's call records before the pending call (the ledger).
	Calls []CallRecord `json:"calls,omitempty"`
	// Sequence lists the calls executed so far.
	Sequence []warden.Step `json:"sequence,omitempty"`
	// Ledger are the message middleware decisions so far.
	Ledger []warden.LedgerRow `json:"message_ledger,omitempty"`
	// Unauthorized are the tools and skill targets whose authorization faulted earlier
	// in the run ([warden.Call.Unauthorized]). A checkpoint written before this field
	// existed has none.
	Unauthorized []string `json:"unauthorized,omitempty"`
}

// storedCall is a tool call as the checkpoint keeps it: arguments that are valid JSON
// as JSON, anything else as the raw text the model wrote (the call is then refused on
// resume exactly as it would have been).
type storedCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
	Raw  *string         `json:"raw,omitempty"`
}

func storeCalls(calls []ToolCall) []storedCall {
	out := make([]storedCall, 0, len(calls))
	for _, c := range calls {
		s := storedCall{ID: c.ID, Name: c.Name}
		if len(bytes.TrimSpace(c.Args)) == 0 || json.Valid(c.Args) {
			s.Args = c.Args
		} else {
			raw := string(c.Args)
			s.Raw = &raw
		}
		out = append(out, s)
	}
	return out
}

func loadCalls(calls []storedCall) []ToolCall {
	out := make([]ToolCall, 0, len(calls))
	for _, c := range calls {
		tc := ToolCall{ID: c.ID, Name: c.Name, Args: c.Args}
		if c.Raw != nil {
			tc.Args = json.RawMessage(*c.Raw)
		}
		out = append(out, tc)
	}
	return out
}

// decodeCheckpoint decodes and checks a checkpoint strictly: one JSON object, known
// fields only, and a pending call that belongs to the paused turn.
func decodeCheckpoint(data []byte) (*checkpoint, error) {
	bad := func(format string, args ...any) (*checkpoint, error) {
		return nil, fmt.Errorf("%w: %s", ErrMalformedCheckpoint, fmt.Sprintf(format, args...))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return bad("it is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cp checkpoint
	if err := dec.Decode(&cp); err != nil {
		return bad("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad("unexpected data after the checkpoint object")
	}
	if cp.Format != checkpointFormat {
		return bad("format %q, want %q", cp.Format, checkpointFormat)
	}
	if cp.Iteration < 1 {
		return bad("iteration %d", cp.Iteration)
	}
	if cp.Pending.Tool == "" || cp.Pending.Digest == "" {
		return bad("no pending decision")
	}
	if cp.PendingCall.ID != cp.Pending.CallID || cp.PendingCall.Name != cp.Pending.Tool {
		return bad("the pending call %q (%s) does not match the pending decision %q (%s)", cp.PendingCall.ID, cp.PendingCall.Name, cp.Pending.CallID, cp.Pending.Tool)
	}
	if n := len(cp.Messages); n == 0 || cp.Messages[n-1].Role != RoleAssistant {
		return bad("the conversation does not end with the paused model turn")
	}
	turn := cp.Messages[len(cp.Messages)-1].ToolCalls
	want := len(cp.Results) + 1 + len(cp.Remaining)
	if len(turn) != want {
		return bad("the paused turn has %d calls, the checkpoint accounts for %d", len(turn), want)
	}
	for i, r := range cp.Results {
		if r.CallID != turn[i].ID {
			return bad("result %d answers %q, not call %q", i, r.CallID, turn[i].ID)
		}
	}
	if turn[len(cp.Results)].ID != cp.PendingCall.ID {
		return bad("the pending call is not the next call of the paused turn")
	}
	for i, r := range cp.Remaining {
		if r.ID != turn[len(cp.Results)+1+i].ID {
			return bad("remaining call %d is %q, not %q", i, r.ID, turn[len(cp.Results)+1+i].ID)
		}
	}
	return &cp, nil
}
