package warden

import (
	"fmt"
)

// Effect is what a decision does with a call.
//
// The zero value is [Deny], so an Effect that was never set refuses. Effects combine by
// precedence: [Halt] over [Deny] over [Ask] over [Allow] (see [Effect.Outranks]).
type Effect uint8

const (
	// Deny refuses one call; the model reads why and the run continues.
	Deny Effect = iota
	// Allow lets the call continue to the next stage.
	Allow
	// Ask puts the exact call in front of a person (the rule policy's "escalate").
	Ask
	// Halt refuses the call and ends the run.
	Halt
)

// String returns "deny", "allow", "ask" or "halt". An effect outside the vocabulary prints
// as "invalid(N)".
func (e Effect) String() string {
	switch e {
	case Deny:
		return "deny"
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Halt:
		return "halt"
	}
	return fmt.Sprintf("invalid(%d)", uint8(e))
}

// Valid reports whether e is one of the four effects. An invalid effect is treated as
// [Deny] everywhere a decision is taken.
func (e Effect) Valid() bool { return e <= Halt }

// rank orders effects by precedence; an invalid effect ranks like Deny.
func (e Effect) rank() int {
	switch e {
	case Allow:
		return 0
	case Ask:
		return 1
	case Halt:
		return 3
	}
	return 2
}

// Outranks reports whether e takes precedence over o when several answers are combined:
// halt > deny > ask > allow. An invalid effect ranks like deny.
func (e Effect) Outranks(o Effect) bool { return e.rank() > o.rank() }

// ParseEffect parses "allow", "deny", "ask", "halt", and "escalate" (the rule policy's
// word for ask).
func ParseEffect(s string) (Effect, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "deny":
		return Deny, nil
	case "ask", "escalate":
		return Ask, nil
	case "halt":
		return Halt, nil
	}
	return Deny, fmt.Errorf("unknown effect %q (want allow, deny, escalate, ask or halt)", s)
}

// MarshalText encodes the effect as its name.
func (e Effect) MarshalText() ([]byte, error) {
	if !e.Valid() {
		return nil, fmt.Errorf("warden: cannot encode invalid effect %d", uint8(e))
	}
	return []byte(e.String()), nil
}

// UnmarshalText decodes an effect name (see [ParseEffect]).
func (e *Effect) UnmarshalText(b []byte) error {
	v, err := ParseEffect(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// Decision is one checker's answer about one request.
//
// A refusal has two audiences: Reason is a stable machine tag for routing alerts
// ("security:exfiltration"), Rationale is human text for operators (it rides events), and
// TellLLM is what the model reads. TellLLM never falls back to Reason.
//
// The zero Decision is a denial that names no rule.
type Decision struct {
	Effect    Effect `json:"effect"`
	RuleID    string `json:"rule_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Rationale string `json:"rationale,omitempty"`
	TellLLM   string `json:"tell_llm,omitempty"`

	// Fault is true when the refusal comes from a failure to decide (a checker that
	// errored, panicked or timed out, an escalation nobody can answer) rather than from a
	// rule's verdict. A fault is always a refusal.
	Fault bool `json:"fault,omitempty"`

	// Args, when non-nil on an Allow, replaces the call's arguments. Later checks in the
	// same pass judge the replacement, and the replacement forces the second security
	// pass. A replacement on any other effect is ignored.
	Args *Args `json:"-"`
}

// Allowed reports whether the decision lets the call continue: its Effect is [Allow].
func (d Decision) Allowed() bool { return d.Effect == Allow }

// ModelText returns what the model reads when this decision refuses a call to tool
// (a skill target such as "skill:payroll" names the skill in the halt text):
//
//   - deny: TellLLM, else "[permission denied: <Rationale, or 'policy'>]";
//   - halt: TellLLM, else "Tool '<tool>' is not available in this context." (for a skill
//     target, "Skill '<id>' is not available in this context.").
//
// The Reason tag is never used. ModelText of an allow or ask is "".
func (d Decision) ModelText(tool string) string {
	switch d.Effect {
	case Allow, Ask:
		return ""
	case Halt:
		if d.TellLLM != "" {
			return d.TellLLM
		}
		if id, ok := SkillIDFromTarget(tool); ok {
			return "Skill '" + id + "' is not available in this context."
		}
		return "Tool '" + tool + "' is not available in this context."
	}
	if d.TellLLM != "" {
		return d.TellLLM
	}
	r := d.Rationale
	if r == "" {
		r = "policy"
	}
	return "[permission denied: " + r + "]"
}

// UnauthorizedText is what the model reads when the checker asked about tool errored,
// panicked or did not answer in time. It reads as terminal on purpose: a model told "not
// available right now" retries until it runs out of iterations.
func UnauthorizedText(tool string) string {
	return "[permission denied: Tool '" + tool + "' could not be authorized. This will not change during this run — do not call it again. Continue without it, or say what you are unable to do.]"
}

// UnauthorizedTarget reports the target an outcome told the model could not be
// authorized ([UnauthorizedText]): the tool, or the skill target ([SkillTarget]) of a
// read_skill refused by the skill gate. That text promises the refusal will not change
// during the run, so a runtime lists the target in [Call.Unauthorized] for every later
// call of the run. ok is false for every other outcome.
func UnauthorizedTarget(o Outcome) (target string, ok bool) {
	if o.Status != StatusRefused || !o.Decision.Fault {
		return "", false
	}
	target = o.Tool
	if o.Stage == StageSkill {
		id, _ := o.Args.String("id")
		target = SkillTarget(id)
	}
	if o.ModelText != UnauthorizedText(target) {
		return "", false
	}
	return target, true
}

// CheckerFault returns the denial that stands for a checker that did not answer: err
// (or the recovered panic value) goes to the rationale as "permission-checker threw:
// <msg>" for operators, and the model reads [UnauthorizedText].
func CheckerFault(tool string, err error) Decision {
	msg := "unknown error"
	if err != nil {
		msg = err.Error()
	}
	return Decision{
		Effect:    Deny,
		RuleID:    "checker.fault",
		Rationale: "permission-checker threw: " + msg,
		TellLLM:   UnauthorizedText(tool),
		Fault:     true,
	}
}

// EscalationFault returns the refusal for an escalation that nobody can answer: there is
// no escalation handler and no person to ask. It is a fault, not a verdict.
func EscalationFault(tool, action string, d Decision) Decision {
	text := "Permission escalation required for " + tool + "." + action + ": " + d.Rationale + ". No escalation handler configured."
	return Decision{
		Effect:    Deny,
		RuleID:    d.RuleID,
		Reason:    d.Reason,
		Rationale: text,
		Fault:     true,
	}
}

func fmtAny(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	return fmt.Sprint(v)
}
