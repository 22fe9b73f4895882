package warden

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Status is how a call ended.
type Status string

// The call statuses. Only [StatusRan] and [StatusFailed] calls were executed (and a
// [StatusFailed] call may also have failed before executing: see [Outcome.Executed]).
const (
	StatusRan     Status = "ran"     // the tool ran and returned a result
	StatusRefused Status = "refused" // a stage refused the call; the tool did not run
	StatusHalted  Status = "halted"  // a checker halted the run; the tool did not run
	StatusPending Status = "pending" // a person must decide; the tool has not run
	StatusFailed  Status = "failed"  // the tool ran and failed, or a result stage failed
)

// ErrNotExecuted is wrapped by the error a tool's Run returns when the tool failed
// before doing anything the call asked for (the MCP gateway: no connection to the
// upstream, nothing sent). The call ends [StatusFailed] with [Outcome.Executed] false,
// in the tool.end event and in what the journal's End receives; it is still a tool
// failure (error handlers run). A journal that wrote its intent in Begin has already
// recorded the call as begun.
var ErrNotExecuted = errors.New("the tool did not execute")

// Stage names a step of the call pipeline, in pipeline order.
type Stage string

// The pipeline stages.
const (
	StageLookup      Stage = "lookup"      // the tool is registered and callable
	StageGate        Stage = "gate"        // session governance gate
	StagePermission  Stage = "permission"  // checkers, pass S1
	StageMiddleware  Stage = "middleware"  // call-side middleware (transforms)
	StageFinalCheck  Stage = "final_check" // checkers, pass S2
	StageValidation  Stage = "validation"  // JSON Schema
	StageSkill       Stage = "skill"       // skill gate (read_skill)
	StageHuman       Stage = "human"       // escalation, ask, check-in
	StageCredentials Stage = "credentials" // credential provider
	StageExecute     Stage = "execute"     // the tool itself
	StageResult      Stage = "result"      // result-side middleware and post handlers
	StageCeiling     Stage = "ceiling"     // result ceilings
)

// LedgerRow records one middleware decision. It never holds argument or result values.
type LedgerRow struct {
	Middleware string `json:"middleware"`
	Moment     string `json:"moment"`  // "call", "result", "input" or "output"
	Outcome    string `json:"outcome"` // "allow", "deny" or "ask"
	Changed    bool   `json:"changed"`
	Why        string `json:"why,omitempty"`
}

// CheckRecord records one permission check.
type CheckRecord struct {
	Pass       string     `json:"pass"` // "s1" or "s2"
	Checker    string     `json:"checker"`
	Capability Capability `json:"capability"`
	Target     string     `json:"target"`
	Decision   Decision   `json:"decision"`
}

// Outcome is the result of one call through the pipeline. "What actually ran" is
// Executed, never something parsed from ModelText.
type Outcome struct {
	CallID   string `json:"call_id,omitempty"`
	Tool     string `json:"tool"`
	Executed bool   `json:"executed"`
	Status   Status `json:"status"`
	// Stage is the stage that decided the outcome (for a call that ran: the last stage
	// that changed what the model reads, or [StageExecute]).
	Stage Stage `json:"stage"`
	// RuleID and Decision describe the deciding decision, when a checker decided.
	RuleID   string   `json:"rule_id,omitempty"`
	Decision Decision `json:"decision"`
	// ModelText is what the model reads as the tool result.
	ModelText string `json:"model_text"`
	// IsError reports whether ModelText is a refusal or an error rather than a result.
	IsError bool `json:"is_error"`
	// Result is the raw result of the tool (kept for audit even when a result-side
	// stage replaced what the model reads). Nil when the tool did not run.
	Result any `json:"-"`
	// Err is the failure that stands after the error handlers: the tool's error, a
	// result-side link's failure, or both joined; nil when the tool returned a result
	// and every link answered, or when a handler's replacement converted the failure.
	Err error `json:"-"`
	// SecondaryErrors are errors of error handlers that failed while handling Err.
	SecondaryErrors []error `json:"-"`
	// Args are the final arguments (after transforms).
	Args     Args             `json:"args"`
	Revision string           `json:"revision,omitempty"`
	Ledger   []LedgerRow      `json:"ledger,omitempty"`
	Checks   []CheckRecord    `json:"checks,omitempty"`
	Pending  *PendingDecision `json:"pending,omitempty"`
	// ApprovedBy names the person who approved the call, after a resume.
	ApprovedBy string        `json:"approved_by,omitempty"`
	Duration   time.Duration `json:"duration"`
}

// DecisionKind says why a person is asked.
type DecisionKind string

// The three sources of a human decision; one mechanism serves them all.
const (
	KindEscalate DecisionKind = "escalate" // a rule policy escalated and no handler answered
	KindAsk      DecisionKind = "ask"      // a middleware asked
	KindCheckIn  DecisionKind = "checkin"  // the tool demands a check-in
)

// Evidence is what a person sees before approving a check-in.
type Evidence struct {
	Does    string   `json:"does"`              // what the tool will do (its description)
	Args    string   `json:"args"`              // the arguments, rendered
	Context []string `json:"context,omitempty"` // the recent context the caller passed
}

// PendingDecision is a call waiting for a person. It is plain data (JSON) so it can be
// stored and resumed in another process with [Guard.Resume].
type PendingDecision struct {
	Kind     DecisionKind `json:"kind"`
	Question string       `json:"question"`
	Detail   string       `json:"detail,omitempty"`
	// Middleware names the first middleware that asked (kind ask, or alongside another
	// kind); Asks lists every one.
	Middleware string `json:"middleware,omitempty"`
	// Asks are the questions call-side middleware asked about this call, in link
	// order, each with the middleware that asked. They were raised while the chain ran
	// and are put to the person here, together with any escalation or check-in, about
	// the final arguments.
	Asks      []MiddlewareAsk `json:"asks,omitempty"`
	Tool      string          `json:"tool"`
	Args      Args            `json:"args"`   // the call as it will run at this point
	Digest    string          `json:"digest"` // Args.Digest()
	Revision  string          `json:"revision,omitempty"`
	Identity  Identity        `json:"identity,omitzero"`
	Session   string          `json:"session,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Iteration int             `json:"iteration,omitempty"`
	Evidence  *Evidence       `json:"evidence,omitempty"`
	Created   time.Time       `json:"created"`

	// Escalation is the escalation the person is asked about (kind escalate).
	Escalation *Decision `json:"escalation,omitempty"`
	// Original are the arguments as proposed: a resume runs the pipeline again from
	// them, and the approval answers the question about Args.
	Original Args `json:"original"`
}

// ApprovalDigest identifies exactly what a person is asked to approve: a SHA-256 over
// the kind, the tool, the question, the asking middleware (in order) and the digest of
// the arguments. An [Approved] carries it, so an approval authorizes only the call the
// person was shown, asked the way they were asked: a decision edited afterwards (another
// tool, another question, other arguments) is not the one approved, and a resumed call
// that reaches the human stage with another question or other arguments is refused.
func (p PendingDecision) ApprovalDigest() string {
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write("warden.approval/v1")
	write(string(p.Kind))
	write(p.Tool)
	write(p.Question)
	askers := p.Asks
	if len(askers) == 0 && p.Middleware != "" {
		askers = []MiddlewareAsk{{Middleware: p.Middleware}}
	}
	for _, a := range askers {
		write(a.Middleware)
	}
	write(p.Digest)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// MiddlewareAsk is one middleware's question about a call.
type MiddlewareAsk struct {
	Middleware string `json:"middleware"`
	Question   string `json:"question"`
	Detail     string `json:"detail,omitempty"`
}

// Answer is a person's decision: [Approved] or [Declined]. The interface is sealed.
type Answer interface{ answer() }

// Approved approves a pending decision. Digest is required: it is the
// [PendingDecision.ApprovalDigest] of the decision the person was shown (its tool,
// question and arguments), so an approval authorizes exactly that call. A resume whose
// decision has any other digest (it changed after the person saw it) is refused before
// anything runs.
type Approved struct {
	By     string `json:"by"`
	Note   string `json:"note,omitempty"`
	Digest string `json:"digest"`
}

// Declined declines a pending decision.
type Declined struct {
	By   string `json:"by"`
	Note string `json:"note,omitempty"`
}

func (Approved) answer() {}
func (Declined) answer() {}

// DeclinedText is what the model reads when a person declined the call.
func DeclinedText(note string) string {
	if note == "" {
		return "declined by human"
	}
	return "declined by human: " + note
}

// ErrRegistryBound is returned when a tool is registered after the registry was bound.
var ErrRegistryBound = errors.New("warden: registry is already bound; register every tool before Bind")

// PolicyHaltError ends a run: a checker halted a call. It carries both vocabularies of
// the decision: Reason (a machine tag) and TellLLM (what the model read).
type PolicyHaltError struct {
	Reason    string
	TellLLM   string
	RuleID    string
	CheckerID string
	Iteration int
	Proposed  Step   // the call that was halted; it was not executed
	Sequence  []Step // the calls executed before the halt
}

func (e *PolicyHaltError) Error() string {
	msg := "warden: run halted by policy"
	if e.RuleID != "" {
		msg += " rule " + e.RuleID
	}
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg + fmt.Sprintf(": tool %q was not executed", e.Proposed.Tool)
}

// ErrApprovalMismatch is wrapped by the error a resume returns when an [Approved] does
// not name the digest of the pending decision it is given: the approval was for other
// arguments, or names none. Nothing ran, and the pending decision stays usable.
var ErrApprovalMismatch = errors.New("warden: the approval does not match the pending decision")

// DecisionRequiredError is returned by a resume given something other than an
// [Approved] or [Declined]. Nothing ran, and the pending decision stays usable.
type DecisionRequiredError struct {
	Got string
}

func (e *DecisionRequiredError) Error() string {
	return "warden: a decision is required to resume (Approved or Declined), got " + e.Got
}

// MessageDeniedError is returned when message middleware denies a model input or
// output. It never carries the message content.
type MessageDeniedError struct {
	Phase      string // "input" or "output"
	Middleware string
	Reason     string
}

func (e *MessageDeniedError) Error() string {
	return "warden: " + e.Phase + " message denied by middleware '" + e.Middleware + "': " + e.Reason
}
