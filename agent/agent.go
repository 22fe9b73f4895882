package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden"
)

// DefaultMaxIterations is the iteration limit when [Options.MaxIterations] is 0.
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

// Options tunes an [Agent]; [New] takes the two things an Agent cannot do without
// (the model and the Guard) as arguments. A nil *Options means the defaults, and the
// zero value of every field is the strictest setting: the Guard's checkers decide
// what the model is offered, the default iteration bound, no message middleware, no
// skills, and a random checkpoint key of the Agent's own.
type Options struct {
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
	provider  Provider
	guard     *warden.Guard
	cfg       Options
	max       int
	skills    []Skill
	readSkill bool   // read_skill is bound and skills are configured
	key       []byte // seals checkpoints: Options.CheckpointKey, or random
	randomKey bool   // key is this Agent's own random key
}

// New checks its arguments and returns an agent that asks provider for model turns and
// runs every tool call through guard. The tools offered to the model are the Guard's
// bound tools ([warden.Guard.Tools]) that the Guard's own checkers let it offer
// ([warden.Guard.Offers]), so what the model sees and what may run come from the same
// checkers; a call to any other name is refused by the Guard as an unknown tool. opts
// may be nil.
//
// New fails when provider or guard is nil, MaxIterations, MaxTokens or
// SkillCheckTimeout is negative, a message middleware is nil or unnamed, a skill has an
// empty or duplicate id or no Body, Skills is set and the Guard has no read_skill tool
// built from the same catalogue, or CheckpointKey is set and shorter than
// [MinCheckpointKeyLen] or one byte repeated. It does no I/O.
func New(provider Provider, guard *warden.Guard, opts *Options) (*Agent, error) {
	if provider == nil {
		return nil, errors.New("agent: a Provider is required")
	}
	if guard == nil {
		return nil, errors.New("agent: a Guard is required")
	}
	var cfg Options
	if opts != nil {
		cfg = *opts
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
	a := &Agent{provider: provider, guard: guard, cfg: cfg, max: max, skills: slices.Clone(cfg.Skills), key: key, randomKey: random}
	a.cfg.CheckpointKey = nil // a.key is the Agent's own copy
	// Each link is copied, as Bind copies Config.Middleware: what New checked is what
	// runs, whatever the caller does to its values afterwards.
	a.cfg.MessageMiddleware = make([]*warden.Middleware, len(cfg.MessageMiddleware))
	for i, m := range cfg.MessageMiddleware {
		c := *m
		c.Tools = slices.Clone(m.Tools)
		a.cfg.MessageMiddleware[i] = &c
	}
	a.cfg.Skills = a.skills
	if len(a.skills) > 0 {
		t, ok := guard.Tool(warden.ReadSkillTool)
		if !ok {
			return nil, fmt.Errorf("agent: Options.Skills is set but the Guard has no %q tool; register agent.ReadSkillTool(skills) before Bind", warden.ReadSkillTool)
		}
		if !sameJSON(t.InputSchema, ReadSkillSchema(a.skills)) {
			return nil, fmt.Errorf("agent: the Guard's %q tool was not built from Options.Skills (its input schema differs); register agent.ReadSkillTool with the same catalogue", warden.ReadSkillTool)
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
// The checkpoint is sealed under the Agent's [Options.CheckpointKey]:
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
