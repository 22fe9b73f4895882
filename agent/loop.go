package agent

// The loop of a run: model turns, tool calls through the Guard, and how each call settles.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/wardenhq/warden"
)

// run is the state of one run.
type run struct {
	session   string
	identity  warden.Identity
	messages  []Message
	calls     []CallRecord
	sequence  []warden.Step
	iteration int
	// checked is how many messages had their user text put to input middleware.
	checked int
	ledger  []warden.LedgerRow
	answer  string
	stopped string
	paused  *Paused
	resumed *Resumed
	// unauthorized are the tools and skill targets whose authorization faulted in this
	// run (see noteFault), in the order they faulted.
	unauthorized []string
}

func (a *Agent) result(st *run) Result {
	return Result{
		Answer:        st.answer,
		Calls:         slices.Clone(st.calls),
		Iterations:    st.iteration,
		Stopped:       st.stopped,
		Paused:        st.paused,
		Messages:      slices.Clone(st.messages),
		MessageLedger: slices.Clone(st.ledger),
		Resumed:       st.resumed,
	}
}

// Run runs the task to completion: the model answers, the iteration limit is reached,
// a call waits for a person (Result.Paused), or the run ends with an error.
//
// The errors that end a run: a [*warden.PolicyHaltError] (a checker halted a call; its
// Sequence lists the calls executed before), a [*warden.MessageDeniedError], the
// context's error, or a provider error. The Result returned with an error still holds
// what happened up to that point.
func (a *Agent) Run(ctx context.Context, task string) (Result, error) {
	if strings.TrimSpace(task) == "" {
		return Result{}, errors.New("agent: the task is empty")
	}
	st := &run{session: a.cfg.Session, identity: a.cfg.Identity, messages: []Message{{Role: RoleUser, Text: task}}}
	return a.loop(ctx, st)
}

// loop iterates until the model answers, the limit is reached or the run must stop.
func (a *Agent) loop(ctx context.Context, st *run) (Result, error) {
	for {
		if err := ctx.Err(); err != nil {
			return a.result(st), err
		}
		if st.iteration >= a.max {
			st.stopped = StopMaxIterations
			return a.result(st), nil
		}
		if err := a.checkInput(ctx, st); err != nil {
			return a.result(st), err
		}
		st.iteration++
		resp, err := a.provider.Complete(ctx, a.request(ctx, st))
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return a.result(st), cerr
			}
			return a.result(st), fmt.Errorf("agent: model call failed in iteration %d: %w", st.iteration, err)
		}
		text := resp.Text
		if text != "" && len(a.cfg.MessageMiddleware) > 0 {
			out, rows, err := warden.RunMessageMiddleware(ctx, a.cfg.MessageMiddleware, "output", text)
			st.ledger = append(st.ledger, rows...)
			if err != nil {
				st.stopped = StopMessageDenied
				return a.result(st), err
			}
			text = out
		}
		calls := make([]ToolCall, len(resp.ToolCalls))
		history := make([]ToolCall, len(resp.ToolCalls))
		for i, tc := range resp.ToolCalls {
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("call_%d_%d", st.iteration, i+1)
			}
			tc.Args = slices.Clone(tc.Args)
			calls[i], history[i] = tc, tc
			if !isObject(tc.Args) {
				// The conversation must stay encodable and acceptable to providers: it
				// shows such a call with no arguments. The call itself keeps what the
				// model wrote, is refused for it, and its record keeps the raw text.
				history[i].Args = json.RawMessage("{}")
			}
		}
		st.messages = append(st.messages, Message{Role: RoleAssistant, Text: text, ToolCalls: history})
		if len(calls) == 0 {
			st.answer, st.stopped = text, StopAnswer
			return a.result(st), nil
		}
		if stop, err := a.turn(ctx, st, calls, nil); stop {
			return a.result(st), err
		}
	}
}

// isObject reports whether raw is valid JSON whose value is an object.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// checkInput puts every user text added since the last check to the input middleware.
func (a *Agent) checkInput(ctx context.Context, st *run) error {
	for ; st.checked < len(st.messages); st.checked++ {
		m := &st.messages[st.checked]
		if m.Role != RoleUser || m.Text == "" || len(a.cfg.MessageMiddleware) == 0 {
			continue
		}
		text, rows, err := warden.RunMessageMiddleware(ctx, a.cfg.MessageMiddleware, "input", m.Text)
		st.ledger = append(st.ledger, rows...)
		if err != nil {
			st.stopped = StopMessageDenied
			return err
		}
		m.Text = text
	}
	return nil
}

// systemPrompt joins the instructions and the directives with a blank line.
func (a *Agent) systemPrompt() string {
	var parts []string
	if a.cfg.Instructions != "" {
		parts = append(parts, a.cfg.Instructions)
	}
	if a.cfg.Directives != "" {
		parts = append(parts, a.cfg.Directives)
	}
	return strings.Join(parts, "\n\n")
}

// emptyObjectSchema is offered for a tool that declares no input schema.
var emptyObjectSchema = []byte(`{"type":"object","properties":{}}`)

// request builds this iteration's model request: the system prompt, the conversation
// and the tools this identity may see now.
func (a *Agent) request(ctx context.Context, st *run) ModelRequest {
	req := ModelRequest{System: a.systemPrompt(), Messages: slices.Clone(st.messages), MaxTokens: a.cfg.MaxTokens}
	for _, t := range a.guard.Tools() {
		if t.Name == warden.ReadSkillTool && !a.readSkill {
			continue
		}
		if slices.Contains(st.unauthorized, t.Name) {
			continue // the model was told it will not change during this run
		}
		if !a.visible(t.Name) {
			continue
		}
		spec := ToolSpec{Name: t.Name, Description: t.Description, InputSchema: slices.Clone(t.InputSchema)}
		if len(spec.InputSchema) == 0 {
			spec.InputSchema = slices.Clone(emptyObjectSchema)
		}
		if t.Name == warden.ReadSkillTool {
			// REFERENCE section 4: with no skill left, the tool stays and says so.
			spec.Description = NoSkillsText
			if menu, ok := a.skillMenu(ctx, st); ok {
				spec.Description = menu
			}
		}
		req.Tools = append(req.Tools, spec)
	}
	return req
}

// visible reports whether tool is offered: Options.Visible when set (a panic hides the
// tool), else the Guard's own checkers.
func (a *Agent) visible(tool string) (ok bool) {
	if a.cfg.Visible == nil {
		return a.guard.Offers(tool)
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return a.cfg.Visible(tool)
}

// turn runs a model turn's pending tool calls in order after the results already
// produced, then appends the results to the conversation. It reports whether the run
// must stop (halt, pause, cancellation), with the error to return.
func (a *Agent) turn(ctx context.Context, st *run, pending []ToolCall, results []ToolResult) (bool, error) {
	for i, tc := range pending {
		out, err := a.call(ctx, st, tc)
		if stop, err := a.settle(ctx, st, tc, out, err, &results, pending[i+1:]); stop {
			return true, err
		}
	}
	st.messages = append(st.messages, Message{Role: RoleUser, ToolResults: results})
	return false, nil
}

// call runs one tool call through the Guard. Arguments that are not a JSON object are
// refused here, as data, without reaching the Guard.
func (a *Agent) call(ctx context.Context, st *run, tc ToolCall) (warden.Outcome, error) {
	args, err := parseCallArgs(tc.Args)
	if err != nil {
		text := warden.InvalidArgsText(tc.Name, []warden.ArgProblem{{Path: "$", Message: "the arguments are not a valid JSON object (" + err.Error() + ")"}})
		return warden.Outcome{
			CallID: tc.ID, Tool: tc.Name, Status: warden.StatusRefused, Stage: warden.StageValidation,
			RuleID: "json", Decision: warden.Decision{Effect: warden.Deny, RuleID: "json", Rationale: "arguments are not a JSON object"},
			ModelText: text, IsError: true, Revision: a.guard.Revision(),
		}, errInvalidJSON
	}
	return a.guard.Call(ctx, warden.Call{
		ID:        tc.ID,
		Tool:      tc.Name,
		Args:      args,
		Iteration: st.iteration,
		Identity:  st.identity,
		Session:   st.session,
		Sequence:  st.sequence[:len(st.sequence):len(st.sequence)],
		Context:   recentContext(st.messages),
		// Refused without asking anyone: the model was told these will not change.
		Unauthorized: slices.Clip(st.unauthorized),
	})
}

// noteFault remembers what a refusal told the model will not change during this run:
// a tool (or, at the skill gate, a skill target) whose checker errored, panicked or did
// not answer, so that the model read [warden.UnauthorizedText] for it. Every later
// call of the run, after a pause and resume too, carries it in
// [warden.Call.Unauthorized], and the Guard refuses it again with the same text
// without asking a checker, so the text stays true when the checker recovers. Such a
// tool or skill is not offered again in the run either.
func (st *run) noteFault(out warden.Outcome) {
	// Only the refusal that made the promise: an escalation nobody can answer is a
	// fault too, but it says nothing about the rest of the run.
	if target, ok := warden.UnauthorizedTarget(out); ok && !slices.Contains(st.unauthorized, target) {
		st.unauthorized = append(st.unauthorized, target)
	}
}

// parseCallArgs parses a tool call's arguments; empty arguments are the empty object (a
// tool without parameters, from a provider that sends nothing).
func parseCallArgs(raw json.RawMessage) (warden.Args, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return warden.Args{}, nil
	}
	return warden.ParseArgs(raw)
}

// errInvalidJSON marks an outcome built by the agent for arguments that do not parse.
var errInvalidJSON = errors.New("invalid tool-call JSON")

// settle records one call's outcome and decides what happens to the run: continue,
// pause (a person must decide) or stop (halt, cancellation). rest are the calls of the
// same turn that come after it.
func (a *Agent) settle(ctx context.Context, st *run, tc ToolCall, out warden.Outcome, err error, results *[]ToolResult, rest []ToolCall) (bool, error) {
	rec := record(out, st.iteration)
	rec.ID, rec.Tool = tc.ID, tc.Name
	st.noteFault(out)
	if errors.Is(err, errInvalidJSON) {
		rec.RawArgs, err = string(tc.Args), nil
	}
	var halt *warden.PolicyHaltError
	switch {
	case errors.As(err, &halt):
		a.add(ctx, st, rec)
		*results = append(*results, ToolResult{CallID: tc.ID, Content: out.ModelText, IsError: true})
		for _, r := range rest {
			*results = append(*results, ToolResult{CallID: r.ID, Content: NotRunText, IsError: true})
			nr := CallRecord{ID: r.ID, Tool: r.Name, Iteration: st.iteration, Status: StatusNotRun, ModelText: NotRunText, IsError: true}
			if args, perr := parseCallArgs(r.Args); perr == nil {
				nr.Args = args
			} else {
				nr.RawArgs = string(r.Args)
			}
			a.add(ctx, st, nr)
		}
		st.messages = append(st.messages, Message{Role: RoleUser, ToolResults: *results})
		halt.Sequence = slices.Clone(st.sequence)
		st.stopped = StopHalt
		return true, halt
	case err != nil:
		// Cancellation (or a Guard failure): the call did not complete; record it and
		// stop without pretending the turn finished.
		a.add(ctx, st, rec)
		if cerr := ctx.Err(); cerr != nil {
			return true, cerr
		}
		return true, err
	case out.Status == warden.StatusPending && out.Pending != nil:
		cp := checkpoint{
			Format:      checkpointFormat,
			Session:     st.session,
			Identity:    st.identity,
			Iteration:   st.iteration,
			Revision:    a.guard.Revision(),
			Messages:    st.messages,
			Results:     *results,
			PendingCall: tc,
			Remaining:   storeCalls(rest),
			Pending:     *out.Pending,
			Calls:       st.calls,
			Sequence:    st.sequence,
			Ledger:      st.ledger,

			Unauthorized: st.unauthorized,
		}
		data, merr := a.sealCheckpoint(&cp)
		if merr != nil {
			return true, fmt.Errorf("agent: cannot write the checkpoint: %w", merr)
		}
		a.add(ctx, st, rec)
		st.paused = &Paused{Checkpoint: data, Pending: *out.Pending}
		st.stopped = StopPaused
		return true, nil
	}
	if out.Executed {
		st.sequence = append(st.sequence, warden.Step{Tool: out.Tool, Args: out.Args})
	}
	a.add(ctx, st, rec)
	*results = append(*results, ToolResult{CallID: tc.ID, Content: out.ModelText, IsError: out.IsError})
	return false, nil
}

// add appends a call record and tells the observer.
func (a *Agent) add(ctx context.Context, st *run, rec CallRecord) {
	st.calls = append(st.calls, rec)
	if a.cfg.OnCall != nil {
		a.cfg.OnCall(ctx, rec)
	}
}

// record turns a Guard outcome into a call record.
func record(out warden.Outcome, iteration int) CallRecord {
	rec := CallRecord{
		ID:         out.CallID,
		Tool:       out.Tool,
		Iteration:  iteration,
		Args:       out.Args,
		Executed:   out.Executed,
		Status:     out.Status,
		Stage:      out.Stage,
		RuleID:     out.RuleID,
		ModelText:  out.ModelText,
		IsError:    out.IsError,
		Revision:   out.Revision,
		ApprovedBy: out.ApprovedBy,
		Checks:     out.Checks,
		Ledger:     out.Ledger,
	}
	if out.Status == warden.StatusRefused || out.Status == warden.StatusHalted {
		d := out.Decision
		d.Args = nil
		rec.Decision = &d
	}
	return rec
}

// Context evidence for check-ins: the last few texts of the conversation.
const (
	contextMessages = 3
	contextChars    = 500
)

// recentContext returns the last few non-empty texts of the conversation, oldest
// first, each prefixed by its role and cut to a bounded length; a person approving a
// check-in sees them as evidence.
func recentContext(msgs []Message) []string {
	var out []string
	for i := len(msgs) - 1; i >= 0 && len(out) < contextMessages; i-- {
		t := msgs[i].Text
		if t == "" {
			continue
		}
		if utf8.RuneCountInString(t) > contextChars {
			t = string([]rune(t)[:contextChars]) + "…"
		}
		out = append(out, msgs[i].Role+": "+t)
	}
	slices.Reverse(out)
	return out
}
