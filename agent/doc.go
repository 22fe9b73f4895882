// Package agent is a governed ReAct loop: each iteration builds the system prompt from
// the role's prompt directives, offers the model only the tools the policy lets this
// identity see, calls the model, and runs every tool call of the turn through a
// [warden.Guard], appending the results (refusals included, as data) to the
// conversation, until the model answers without calling a tool or the iteration limit is
// reached.
//
// # One iteration
//
//  1. Message middleware, phase "input", over each user text not yet checked (the task).
//     A deny ends the run with a [*warden.MessageDeniedError]; the model is not called.
//  2. The request: system prompt = Instructions, a blank line, Directives (empty parts
//     left out); tools = the Guard's bound tools that may be offered (see below), with
//     read_skill's description replaced by this iteration's skill menu.
//  3. The model call ([Provider.Complete]).
//  4. Message middleware, phase "output", over the model's text. A deny ends the run
//     before any call of the turn runs.
//  5. Each tool call of the turn, in order, through [warden.Guard.Call] with the call's
//     id, name, arguments, iteration, identity, session and the sequence of calls
//     executed so far. Arguments that are not a JSON object are refused as data without
//     reaching the Guard. Every call gets a [CallRecord]; "what actually ran" is
//     [CallRecord.Executed], never parsed from text.
//  6. The results are appended as one user message, and the loop goes on.
//
// # One checker, both surfaces
//
// What the model is offered comes from the checkers the Guard runs, so the same policy
// shapes what the model sees and what may run, with no second setting to keep in step:
// a tool is offered when [warden.Guard.Offers] says so (every checker that answers
// visibility, such as the policy package's IsAllowed, allows it; a checker that can
// only judge calls hides nothing), and a skill is listed in the read_skill menu when
// [warden.Guard.OffersSkill] says so (every checker that governs skill_read allows the
// question the skill gate would ask, within the Guard's CheckTimeout).
//
// [Options.Visible] and [Options.SkillChecker] are overrides, for a front end that must
// show the model something else than the Guard's checkers say; when set, each replaces
// the Guard's answer for its surface.
//
// # Visibility is not permission
//
// What the model is shown is only that. A call to a tool the model was not offered
// still goes to the Guard, which checks it like any other; the agent never refuses or
// allows anything itself.
//
// # A fault refusal is final for the run
//
// When a checker errors, panics or does not answer in time, the model reads
// [warden.UnauthorizedText]: the tool "could not be authorized. This will not change
// during this run". The agent keeps that promise: the tool (or, at the skill gate, the
// skill) goes on every later call of the run in [warden.Call.Unauthorized], so the Guard
// refuses it again with the same text without asking any checker, even one that has
// recovered, and it is no longer offered (nor, for a skill, listed in the menu). A
// pause and resume is the same run: the list rides the checkpoint. Only that refusal
// counts; other faults, such as an escalation nobody can answer, do not make a promise
// and are judged again on the next call.
//
// # Halt
//
// When a checker halts a call, the Guard writes the refusal, emits
// warden.permission.halt and returns a [*warden.PolicyHaltError]. The agent appends the
// halt's tool result and gives every later call of the same turn the result
// [NotRunText] (so every tool call keeps a tool result), runs none of them, emits
// nothing more, and returns the Result with the error, whose Sequence lists the calls
// executed before the halt.
//
// # Pause and resume
//
// A call that needs a person (a middleware ask, an escalation without a handler, a
// check-in; the Guard must be bound with CanPause) stops the run with
// [Result.Paused]: the [warden.PendingDecision] and a JSON checkpoint holding the
// conversation, the paused turn's results so far and its remaining calls, the pending
// decision, the call records, the iteration, the policy revision, the executed
// sequence and the tools and skills whose authorization faulted, sealed with an HMAC
// under [Options.CheckpointKey]. [Agent.Resume] continues it in any process, given an
// Agent and Guard built the same way and the same key (an edited checkpoint, or one
// without a seal, is refused with [ErrCheckpointTampered] before anything in it is
// read; without a configured key an Agent seals with a random key of its own, so its
// checkpoints resume only in that Agent): the Guard judges the pending call again
// under its current policy (a
// changed revision is reported in [Result.Resumed]), then the rest of the turn runs,
// then the loop. A resume without a decision returns [*warden.DecisionRequiredError]
// and runs nothing; a second ask during the resumed call is refused by the Guard.
//
// # Skills
//
// With [Options.Skills], register [ReadSkillTool] for the same catalogue before Bind.
// Each iteration, read_skill's description lists only the skills the Guard's skill gate
// would let run (or [Options.SkillChecker], when set, allows: capability skill_read,
// target skill:<id>); a skill whose check refuses, asks, errors, panics or times out is
// hidden and named nowhere. read_skill is offered when it may be offered itself; with
// no skill left its description is [NoSkillsText] (REFERENCE section 4). A role
// policy lets a role whose skill rule lists a skill call read_skill without listing it
// among its tools (see policy.RoleRules). The id enum keeps the whole catalogue, so
// activating a hidden skill reaches the Guard's skill gate and the model reads the
// policy's own refusal; the skill's body is never computed.
//
// # Directives
//
// [Options.Directives] is guidance text for the model (package directives renders it).
// It enforces nothing: what may run is decided by the Guard's policy alone.
package agent
