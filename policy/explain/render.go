package explain

// This file renders a Report as text and as JSON.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// WritePlain writes the verdict, each line prefixed with indent:
//
//	deny  rm *  denied by rule: rm *
//	reason: <reason>            (only when there is one)
//	model reads: <text>         (only when the model would read something)
//	revision: sha256:...
func WritePlain(w io.Writer, indent string, r Report) error {
	var b lines
	d := r.Decision
	b.add("%s  %s  %s", d.Effect, orDash(d.RuleID), orDash(d.Rationale))
	if d.Reason != "" {
		b.add("reason: %s", d.Reason)
	}
	if t := r.ModelText(); t != "" {
		b.add("model reads: %s", t)
	}
	b.add("revision: %s", r.Revision)
	return b.writeTo(w, indent)
}

// WriteExplain writes how the decision was reached, each line prefixed with indent:
// which check, layer and rule decided; every layer's answer for every check; for the rule
// layer the match string and, for bash, the normalized command, the wrapped commands and
// each verdict (or the shell problem); and what happened to each declared capability.
func WriteExplain(w io.Writer, indent string, r Report) error {
	var b lines
	if r.Decided < 0 {
		b.add("decided by: no check (%s)", notGated)
	} else {
		s := r.Checks[r.Decided]
		b.add("decided by: %s, rule %s, in the %s check", deciderText(s.Trace.Decider), strconv.Quote(s.Decision.RuleID), s.Capability)
	}
	for _, s := range r.Checks {
		b.add("%s check: %s", s.Capability, s.Decision.Effect)
		condsAnswered := false
		for _, l := range s.Trace.Layers {
			b.add("  %-10s  %-5s  %s  %s%s", l.Layer, l.Decision.Effect, orDash(l.Decision.RuleID), orDash(l.Decision.Rationale), faultMark(l.Decision))
			condsAnswered = condsAnswered || l.Layer == "conditions"
		}
		if r.HasConditions && !condsAnswered {
			b.add("  %-10s  no condition matched", "conditions")
		}
		if ex := s.Trace.Rules; ex != nil {
			b.add("  rules for tool %s:", ex.Tool)
			b.add("    match string: %s", strconv.Quote(ex.MatchString))
			if ex.ShellError != "" {
				b.add("    shell problem: %s", ex.ShellError)
			}
			for i, c := range ex.Normalized {
				if i == 0 {
					b.add("    normalized: %s", strconv.Quote(c))
				} else {
					b.add("    wrapped: %s", strconv.Quote(c))
				}
			}
			for _, v := range ex.Verdicts {
				b.add("    judged: %s", v)
			}
		}
	}
	for _, c := range r.Capabilities {
		if c.Step < 0 {
			b.add("%s check: not asked: %s", c.Capability, c.Why)
		}
	}
	return b.writeTo(w, indent)
}

func deciderText(layer string) string {
	if layer == "default" {
		return "no layer (default deny)"
	}
	return layer + " layer"
}

func faultMark(d warden.Decision) string {
	if d.Fault {
		return " [fault]"
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// lines collects output lines so that a block can be written with an indent at once.
type lines []string

func (l *lines) add(format string, args ...any) { *l = append(*l, fmt.Sprintf(format, args...)) }

func (l lines) writeTo(w io.Writer, indent string) error {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(indent)
		b.WriteString(s)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checkJSON is the `warden check --json` object. The field order is the output order
// and every field is always present.
type checkJSON struct {
	Effect    string       `json:"effect"`
	RuleID    string       `json:"rule_id"`
	Rationale string       `json:"rationale"`
	Reason    string       `json:"reason"`
	TellLLM   string       `json:"tell_llm"`
	Revision  string       `json:"revision"`
	Explain   *explainJSON `json:"explain,omitempty"`
}

// explainJSON is the "explain" member of `warden check --json --explain`.
type explainJSON struct {
	// Check is the capability whose check decided ("tool_call", "user_data",
	// "skill_read", ...), or "" when the policy was not asked.
	Check string `json:"check"`
	// Decider is the layer that decided ("rules", "roles", "conditions", "default"),
	// or "" when the policy was not asked.
	Decider string `json:"decider"`
	RuleID  string `json:"rule_id"`
	// Note says why nothing was asked, when nothing was.
	Note         string           `json:"note"`
	Checks       []checkStepJSON  `json:"checks"`
	Capabilities []capabilityJSON `json:"capabilities"`
}

type checkStepJSON struct {
	Capability string      `json:"capability"`
	Effect     string      `json:"effect"`
	RuleID     string      `json:"rule_id"`
	Rationale  string      `json:"rationale"`
	Decider    string      `json:"decider"`
	Layers     []layerJSON `json:"layers"`
	Rules      *rulesJSON  `json:"rules,omitempty"`
}

type layerJSON struct {
	Layer     string `json:"layer"`
	Effect    string `json:"effect"`
	RuleID    string `json:"rule_id"`
	Rationale string `json:"rationale"`
	Fault     bool   `json:"fault"`
}

type rulesJSON struct {
	Tool         string   `json:"tool"`
	MatchString  string   `json:"match_string"`
	Normalized   string   `json:"normalized"`
	Wrapped      []string `json:"wrapped"`
	ShellProblem string   `json:"shell_problem"`
	Verdicts     []string `json:"verdicts"`
}

type capabilityJSON struct {
	Capability string `json:"capability"`
	Asked      bool   `json:"asked"`
	Why        string `json:"why"` // why it was not asked
}

// WriteJSON writes r as one JSON object on one line (the `warden check --json` object;
// with explain, its "explain" member too).
func WriteJSON(w io.Writer, r Report, explain bool) error {
	out := checkJSON{
		Effect:    r.Decision.Effect.String(),
		RuleID:    r.Decision.RuleID,
		Rationale: r.Decision.Rationale,
		Reason:    r.Decision.Reason,
		TellLLM:   r.ModelText(),
		Revision:  r.Revision,
	}
	if explain {
		out.Explain = explainObject(r)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // commands hold '<', '>' and '&'; keep them readable
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func explainObject(r Report) *explainJSON {
	ex := &explainJSON{Checks: []checkStepJSON{}, Capabilities: []capabilityJSON{}}
	if r.Decided < 0 {
		ex.Note = notGated
	} else {
		s := r.Checks[r.Decided]
		ex.Check, ex.Decider, ex.RuleID = string(s.Capability), s.Trace.Decider, s.Decision.RuleID
	}
	for _, s := range r.Checks {
		ex.Checks = append(ex.Checks, checkStepJSON{
			Capability: string(s.Capability),
			Effect:     s.Decision.Effect.String(),
			RuleID:     s.Decision.RuleID,
			Rationale:  s.Decision.Rationale,
			Decider:    s.Trace.Decider,
			Layers:     layersJSON(s.Trace.Layers),
			Rules:      rulesObject(s.Trace.Rules),
		})
	}
	for _, c := range r.Capabilities {
		ex.Capabilities = append(ex.Capabilities, capabilityJSON{Capability: string(c.Capability), Asked: c.Step >= 0, Why: c.Why})
	}
	return ex
}

func layersJSON(ls []policy.LayerResult) []layerJSON {
	out := []layerJSON{}
	for _, l := range ls {
		out = append(out, layerJSON{Layer: l.Layer, Effect: l.Decision.Effect.String(), RuleID: l.Decision.RuleID, Rationale: l.Decision.Rationale, Fault: l.Decision.Fault})
	}
	return out
}

func rulesObject(ex *policy.Explanation) *rulesJSON {
	if ex == nil {
		return nil
	}
	out := &rulesJSON{Tool: ex.Tool, MatchString: ex.MatchString, ShellProblem: ex.ShellError, Wrapped: []string{}, Verdicts: []string{}}
	for i, c := range ex.Normalized {
		if i == 0 {
			out.Normalized = c
		} else {
			out.Wrapped = append(out.Wrapped, c)
		}
	}
	out.Verdicts = append(out.Verdicts, ex.Verdicts...)
	return out
}
