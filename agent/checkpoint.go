package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/wardenhq/warden"
)

// ErrMalformedCheckpoint is wrapped by the error [Agent.Resume] returns for a checkpoint
// that does not decode or is inconsistent. Nothing ran.
var ErrMalformedCheckpoint = errors.New("agent: malformed checkpoint")

// checkpointFormat names the checkpoint format and its version.
const checkpointFormat = "warden.agent.checkpoint/v1"

// checkpoint is everything a paused run needs to continue in any process. It is plain
// JSON; nothing in it is trusted beyond the pending question: the Guard judges the
// pending call again on resume, and the remaining calls go through the pipeline like
// any other.
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

func (cp *checkpoint) encode() ([]byte, error) { return json.Marshal(cp) }

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
