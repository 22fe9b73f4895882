package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wardenhq/warden"
)

// DefaultMaxIterations is the iteration limit when [Config.MaxIterations] is 0.
const DefaultMaxIterations = 10

// Why a run stopped ([Result.Stopped]).
const (
	// StopAnswer: the model answered without calling a tool.
	StopAnswer = "answer"
	// StopMaxIterations: the iteration limit was reached before the model answered.
	StopMaxIterations = "max_iterations"
	// StopHalt: a checker halted a call; the run returned a [*warden.PolicyHaltError].
	StopHalt = "halt"
	// StopPaused: a call waits for a person; see [Result.Paused].
	StopPaused = "paused"
	// StopMessageDenied: message middleware denied the model's input or output; the run
	// returned a [*warden.MessageDeniedError].
	StopMessageDenied = "message_denied"
)

// NotRunText is the tool result of every call that followed a halted call in the same
// model turn. The calls were not run; the results keep every tool call paired with a
// tool result, as model APIs require.
const NotRunText = "Not run: the run was halted by policy before this call."

// StatusNotRun is the [CallRecord] status of a call that was never put to the Guard
// because an earlier call of the same turn halted the run.
const StatusNotRun warden.Status = "not_run"

// Config configures an [Agent]. Only Provider and Guard are required.
type Config struct {
	// Provider is the model. Required.
	Provider Provider
	// Guard runs every tool call through the pipeline. Required. The tools offered to
	// the model are the Guard's bound tools ([warden.Guard.Tools]) that the Guard's own
	// checkers let it offer ([warden.Guard.Offers]), so what the model sees and what may
	// run come from the same checkers; a call to any other name is refused by the
	// Guard as an unknown tool.
	Guard *warden.Guard
	// Visible, when set, overrides the Guard's answer about which bound tools are
	// offered to the model each iteration: only the tools it reports true for are. It
	// is visibility only: every call, offered or not, is still checked by the Guard. A
	// Visible that panics hides the tool. read_skill is filtered too. Leave it nil to
	// offer what the Guard's checkers allow, which is what it should be unless the
	// model must be shown something else than the Guard's checkers say.
	Visible func(tool string) bool
	// Instructions are the run's own instructions, the first part of the system prompt.
	Instructions string
	// Directives is the rendered prompt-directives block of the active role (see
	// package directives), appended to the system prompt after Instructions with a
	// blank line between them. It is model guidance, not enforcement.
	Directives string
	// MaxIterations bounds the model calls of a run (a resumed run included); 0 means
	// [DefaultMaxIterations]. Negative is an error.
	MaxIterations int
	// MaxTokens is passed to the provider with every request; 0 lets it choose.
	MaxTokens int
	// MessageMiddleware runs over the model's input (phase "input": each new user
	// text, before the model is called) and its output (phase "output": the text of
	// each model turn). A deny ends the run with a [*warden.MessageDeniedError]; a
	// rewrite replaces the text in the conversation. Every link must have an OnMessage hook
	// and no tool hooks ([warden.CheckMessageMiddleware]; New refuses anything else).
	MessageMiddleware []*warden.Middleware
	// Skills is the skill catalogue. When it is not empty the Guard must have the tool
	// built by [ReadSkillTool] from the same catalogue bound under
	// [warden.ReadSkillTool]. Each iteration the model is offered read_skill, with a
	// menu of the skills it may activate, when read_skill may be offered and at least
	// one skill may be listed; otherwise read_skill is not offered.
	Skills []Skill
	// SkillChecker, when set, overrides the Guard's checkers for the read_skill menu:
	// when it governs [warden.CapSkillRead] (see [warden.CheckerGoverns]) each skill is
	// listed only if it allows the request (capability skill_read, target
	// [warden.SkillTarget](id)); a refusal, an ask, an error, a panic or a timeout hides
	// the skill; a SkillChecker that does not govern skill_read lists every skill. Leave
	// it nil to list the skills the Guard's own skill gate would let run
	// ([warden.Guard.OffersSkill]). Either way the Guard's skill gate decides at call
	// time.
	SkillChecker warden.Checker
	// SkillCheckTimeout bounds each menu check by a SkillChecker that is not
	// [warden.Synchronous] or is [warden.Interruptible]; a check that does not answer in
	// time hides the skill. 0 means 5s; negative is an error. Without a SkillChecker the
	// Guard's own CheckTimeout applies.
	SkillCheckTimeout time.Duration
	// Identity is who the run acts for; it is on every call.
	Identity warden.Identity
	// Session names the run; it is on every call and event.
	Session string
	// OnCall, when set, is called after each tool call of the run settles (ran,
	// refused, halted, pending, not run), in order, from the goroutine running the run.
	// It observes; it cannot change an outcome.
	OnCall func(ctx context.Context, rec CallRecord)
	// CheckpointKey seals the checkpoints of paused runs (HMAC-SHA256, see [Paused]):
	// [Agent.Resume] refuses a checkpoint whose seal does not match, so an edited
	// checkpoint (its pending call, its arguments and their digest changed together)
	// cannot redirect an approval. At least [MinCheckpointKeyLen] bytes from a random
	// source; keep it as secret as the power to approve. nil gives the Agent a random
	// key of its own: its checkpoints then resume only in the same Agent (the strictest
	// default); set the same key in every process that pauses or resumes a run.
	CheckpointKey []byte
}

// Agent is a governed ReAct loop. It is safe for concurrent use: every [Agent.Run] and
// [Agent.Resume] has its own state.
type Agent struct {
	cfg       Config
	max       int
	skills    []Skill
	readSkill bool   // read_skill is bound and skills are configured
	key       []byte // seals checkpoints: Config.CheckpointKey, or random
	randomKey bool   // key is this Agent's own random key
}

// New checks cfg and returns an agent. It fails when Provider or Guard is nil,
// MaxIterations, MaxTokens or SkillCheckTimeout is negative, a message middleware is nil or unnamed, a skill has an
// empty or duplicate id or no Body, Skills is set and the Guard has no read_skill
// tool built from the same catalogue, or CheckpointKey is set and shorter than
// [MinCheckpointKeyLen] or one byte repeated.
func New(cfg Config) (*Agent, error) {
	if cfg.Provider == nil {
		return nil, errors.New("agent: Config.Provider is required")
	}
	if cfg.Guard == nil {
		return nil, errors.New("agent: Config.Guard is required")
	}
	max := cfg.MaxIterations
	switch {
	case max < 0:
		return nil, fmt.Errorf("agent: MaxIterations %d must be positive (0 means %d)", max, DefaultMaxIterations)
	case max == 0:
		max = DefaultMaxIterations
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("agent: MaxTokens %d is negative", cfg.MaxTokens)
	}
	for i, m := range cfg.MessageMiddleware {
		if m == nil || strings.TrimSpace(m.Name) == "" {
			return nil, fmt.Errorf("agent: message middleware %d has no name", i)
		}
	}
	if err := warden.CheckMessageMiddleware(cfg.MessageMiddleware); err != nil {
		return nil, err
	}
	switch {
	case cfg.SkillCheckTimeout < 0:
		return nil, fmt.Errorf("agent: SkillCheckTimeout %s is negative", cfg.SkillCheckTimeout)
	case cfg.SkillCheckTimeout == 0:
		cfg.SkillCheckTimeout = defaultSkillCheckTimeout
	}
	if err := checkSkills(cfg.Skills); err != nil {
		return nil, err
	}
	key, random, err := checkpointKey(cfg)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, max: max, skills: slices.Clone(cfg.Skills), key: key, randomKey: random}
	a.cfg.CheckpointKey = nil // a.key is the Agent's own copy
	a.cfg.MessageMiddleware = slices.Clone(cfg.MessageMiddleware)
	a.cfg.Skills = a.skills
	if len(a.skills) > 0 {
		t, ok := cfg.Guard.Tool(warden.ReadSkillTool)
		if !ok {
			return nil, fmt.Errorf("agent: Config.Skills is set but the Guard has no %q tool; register agent.ReadSkillTool(skills) before Bind", warden.ReadSkillTool)
		}
		if !sameJSON(t.InputSchema, ReadSkillSchema(a.skills)) {
			return nil, fmt.Errorf("agent: the Guard's %q tool was not built from Config.Skills (its input schema differs); register agent.ReadSkillTool with the same catalogue", warden.ReadSkillTool)
		}
		a.readSkill = true
	}
	return a, nil
}

// CallRecord is one tool call of a run and what became of it. "What actually ran" is
// Executed, never something parsed from ModelText.
type CallRecord struct {
	// ID is the model's tool-call id.
	ID string `json:"id"`
	// Tool is the name the model called.
	Tool string `json:"tool"`
	// Iteration is the loop iteration of the model turn that proposed the call.
	Iteration int `json:"iteration"`
	// Args are the final arguments: after every transform, as the tool ran with them or
	// would have run with them.
	Args warden.Args `json:"args"`
	// RawArgs is what the model wrote, kept only when it was not a JSON object (the
	// call was then refused without reaching the Guard).
	RawArgs string `json:"raw_args,omitempty"`
	// Executed reports whether the tool was executed.
	Executed bool `json:"executed"`
	// Status is how the call ended: a [warden.Status] or [StatusNotRun].
	Status warden.Status `json:"status"`
	// Stage is the pipeline stage that decided the outcome.
	Stage warden.Stage `json:"stage,omitempty"`
	// RuleID is the rule that decided, when one did.
	RuleID string `json:"rule_id,omitempty"`
	// Decision is the deciding decision of a refused or halted call.
	Decision *warden.Decision `json:"decision,omitempty"`
	// ModelText is what the model read as the tool result.
	ModelText string `json:"model_text"`
	// IsError reports whether ModelText is a refusal or an error.
	IsError bool `json:"is_error"`
	// Revision is the policy revision the call was judged under.
	Revision string `json:"revision,omitempty"`
	// ApprovedBy names the person who approved the call, after a resume.
	ApprovedBy string `json:"approved_by,omitempty"`
	// Checks are the permission checks the call went through.
	Checks []warden.CheckRecord `json:"checks,omitempty"`
	// Ledger are the middleware decisions about the call (never values).
	Ledger []warden.LedgerRow `json:"ledger,omitempty"`
}

// Paused is a run waiting for a person. Checkpoint is JSON holding everything needed to
// continue the run with [Agent.Resume], in this process or another one; Pending is the
// question, for showing to the person. The checkpoint holds the whole conversation:
// store it as carefully as the conversation itself.
//
// The checkpoint is sealed under the Agent's [Config.CheckpointKey]:
//
//	{"format": "warden.agent.checkpoint/v2", "key_id": "<16 hex digits>",
//	 "mac": "hmac-sha256:<64 hex digits>", "body": {...the run's state...}}
//
// mac is HMAC-SHA256 under the key of "warden-seal", a zero byte, the format, a zero
// byte and the body in compact JSON form (whitespace may change, as when the document
// is indented inside another; nothing else may). key_id names the key without
// revealing it. The body is readable: the seal is for integrity, not secrecy.
type Paused struct {
	Checkpoint []byte                 `json:"checkpoint"`
	Pending    warden.PendingDecision `json:"pending"`
}

// Resumed describes how a resumed run relates to its checkpoint.
type Resumed struct {
	// CheckpointRevision is the policy revision the run paused under.
	CheckpointRevision string `json:"checkpoint_revision,omitempty"`
	// Revision is the policy revision it resumed under (the Guard's).
	Revision string `json:"revision,omitempty"`
	// RevisionChanged reports that they differ. The pending call is judged again under
	// the current policy either way; this says that the judgment may differ from the
	// one the person saw.
	RevisionChanged bool `json:"revision_changed"`
}

// Result is what a run did.
type Result struct {
	// Answer is the model's final text; "" unless Stopped is [StopAnswer].
	Answer string `json:"answer"`
	// Calls lists every tool call of the run, in order (before a pause included, for
	// a resumed run).
	Calls []CallRecord `json:"calls"`
	// Iterations counts the loop iterations (model calls) the run has used, a resumed
	// run's earlier ones included.
	Iterations int `json:"iterations"`
	// Stopped says why the run stopped (StopAnswer, StopMaxIterations, StopHalt,
	// StopPaused, StopMessageDenied), or "" when it ended with another error.
	Stopped string `json:"stopped,omitempty"`
	// Paused is set when a call waits for a person.
	Paused *Paused `json:"paused,omitempty"`
	// Messages is the conversation, oldest first.
	Messages []Message `json:"messages"`
	// MessageLedger are the message middleware decisions (never the text).
	MessageLedger []warden.LedgerRow `json:"message_ledger,omitempty"`
	// Resumed is set on the result of [Agent.Resume].
	Resumed *Resumed `json:"resumed,omitempty"`
}

// Executed counts the calls that were executed.
func (r Result) Executed() int {
	n := 0
	for _, c := range r.Calls {
		if c.Executed {
			n++
		}
	}
	return n
}

// Sequence returns the executed calls, in order, as steps.
func (r Result) Sequence() []warden.Step {
	var out []warden.Step
	for _, c := range r.Calls {
		if c.Executed {
			out = append(out, warden.Step{Tool: c.Tool, Args: c.Args})
		}
	}
	return out
}

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
		resp, err := a.cfg.Provider.Complete(ctx, a.request(ctx, st))
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
	for _, t := range a.cfg.Guard.Tools() {
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

// visible reports whether tool is offered: Config.Visible when set (a panic hides the
// tool), else the Guard's own checkers.
func (a *Agent) visible(tool string) (ok bool) {
	if a.cfg.Visible == nil {
		return a.cfg.Guard.Offers(tool)
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
			ModelText: text, IsError: true, Revision: a.cfg.Guard.Revision(),
		}, errInvalidJSON
	}
	return a.cfg.Guard.Call(ctx, warden.Call{
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
			Revision:    a.cfg.Guard.Revision(),
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

// Resume continues a paused run. checkpoint is [Paused.Checkpoint], possibly from
// another process; answer is the person's [warden.Approved] or [warden.Declined].
//
// Anything but a decision returns a [*warden.DecisionRequiredError] and runs nothing:
// the checkpoint stays usable. The checkpoint's seal is checked before anything in it
// is read: a checkpoint edited after the pause, or without a seal, is refused with an
// error wrapping [ErrCheckpointTampered]; one sealed under another key (see
// [Config.CheckpointKey]) with [ErrCheckpointKey]; one that does not decode or is
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
// keeps the checkpoint's session and identity unless this agent's Config sets them, and
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
	rev := a.cfg.Guard.Revision()
	st.resumed = &Resumed{CheckpointRevision: cp.Revision, Revision: rev, RevisionChanged: cp.Revision != rev}
	out, err := a.cfg.Guard.Resume(ctx, cp.Pending, answer, warden.Caller{Identity: st.identity, Session: st.session, Sequence: st.sequence, Unauthorized: slices.Clip(st.unauthorized)})
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
