package warden

// Identity says who a call is for. Every field is optional; an empty field means the
// caller did not name one, and events then leave it out.
type Identity struct {
	Tenant       string `json:"tenant,omitempty"`
	Principal    string `json:"principal,omitempty"`
	Conversation string `json:"conversation,omitempty"`
}

// Call is one tool call proposed by a model or a client.
type Call struct {
	// ID identifies the call (the model's tool_use id, the MCP request id, ...).
	ID string `json:"id,omitempty"`
	// Tool is the registered name of the tool to run.
	Tool string `json:"tool"`
	// Args are the arguments as the caller wrote them, in order.
	Args Args `json:"args"`
	// Iteration is the agent-loop iteration the call belongs to (0 outside a loop).
	Iteration int `json:"iteration,omitempty"`
	// Identity is who the call is for.
	Identity Identity `json:"identity,omitzero"`
	// Session is the run, conversation or MCP session the call belongs to.
	Session string `json:"session,omitempty"`
	// Sequence lists the calls executed before this one in the run (for checkers and
	// the halt error). Optional.
	Sequence []Step `json:"-"`
	// Context is recent context shown to a person as check-in evidence. Optional.
	Context []string `json:"-"`
	// Unauthorized lists targets whose authorization faulted earlier in the run (a
	// checker errored, panicked or did not answer: [CheckerFault]): tool names, and
	// skill targets ([SkillTarget]) for the skill gate. A call to a listed tool, or a
	// read_skill of a listed skill, is refused at the permission stage (the skill gate
	// for a skill) with [UnauthorizedText], without asking any checker: the fault text
	// promises that this will not change during the run, and this keeps the promise.
	// Optional; the agent runtime fills it.
	Unauthorized []string `json:"-"`
}

// Step is one call that was executed, as recorded in a run's sequence.
type Step struct {
	Tool string `json:"tool"`
	Args Args   `json:"args"`
}

// Request is one permission question put to a [Checker].
type Request struct {
	// Capability is what is asked about: [CapToolCall] for the dispatch itself, a tool
	// capability the tool declared, or [CapSkillRead].
	Capability Capability
	// Actor is who acts: the active role or principal, when the front end knows it.
	Actor string
	// Target is the tool name, or a skill target ("skill:<id>") for [CapSkillRead].
	Target string
	// Args are the call's arguments as they stand at this check.
	Args Args
	// Iteration is the agent-loop iteration.
	Iteration int
	// Identity is who the call is for.
	Identity Identity
	// Sequence lists the calls executed so far in this run, oldest first. It is a copy
	// lent to the checker: a synchronous checker that overwrites a step is refused (a
	// fault denial, rule "sequence.changed"), and one on its own goroutine changes only
	// its own copy. Either way the run's history, and what other checkers see, stay as
	// they were.
	Sequence []Step
}
