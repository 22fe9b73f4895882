package policy

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/shell"
)

// Explanation records how a rule policy reached a decision, for `warden check --explain`
// and `warden test`. Producing it costs allocations; the hot path never does.
type Explanation struct {
	Tool        string   `json:"tool"`                  // canonical tool name
	MatchString string   `json:"match_string"`          // what the globs were matched against (bash: the raw command)
	Normalized  []string `json:"normalized,omitempty"`  // bash: the normalized command, then each wrapped command
	ShellError  string   `json:"shell_error,omitempty"` // bash: why the command is not one simple command
	Verdicts    []string `json:"verdicts,omitempty"`    // bash: "<command> => <effect> (<rationale>)" for each command judged
}

// Evaluate judges a call to tool with args without calling an escalation handler: an
// escalation is returned as [warden.Ask]. When explain is non-nil it is filled in.
func (p *RulePolicy) Evaluate(tool string, args warden.Args, explain *Explanation) warden.Decision {
	return p.evaluate(tool, args, explain)
}

var (
	decAllowAll = warden.Decision{Effect: warden.Allow, RuleID: "allow_all", Rationale: "allowed by mode: allow_all"}
	decDenyAll  = warden.Decision{Effect: warden.Deny, RuleID: "deny_all", Rationale: "denied by mode: deny_all"}
	decNoMatch  = warden.Decision{Effect: warden.Deny, RuleID: "default", Rationale: "no matching rule, default deny"}
)

func (p *RulePolicy) evaluate(tool string, args warden.Args, explain *Explanation) warden.Decision {
	canonical := p.Canonical(tool)
	if explain != nil {
		explain.Tool = canonical
	}
	switch p.mode {
	case ModeAllowAll:
		return decAllowAll
	case ModeDenyAll:
		return decDenyAll
	}
	rules := p.rulesFor(canonical)
	if canonical == "bash" {
		return p.evaluateBash(rules, args, explain)
	}
	// The match string is built in a pooled buffer: it lives only until judge returns
	// (a Decision never holds it), so the hot path allocates nothing.
	bp := matchBufs.Get().(*[]byte)
	subject, buf := p.matchStringInto(canonical, args, (*bp)[:0])
	if explain != nil {
		explain.MatchString = strings.Clone(subject)
	}
	d := rules.judge(subject)
	if cap(buf) <= maxPooledBuf {
		*bp = buf[:0]
	}
	matchBufs.Put(bp)
	return d
}

const maxPooledBuf = 4 << 10

var matchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// judge applies deny, then allow, then escalate; no match denies.
func (r *toolRules) judge(subject string) warden.Decision {
	for i := range r.deny {
		if r.deny[i].glob.Match(subject) {
			return warden.Decision{Effect: warden.Deny, RuleID: r.deny[i].pattern, Rationale: r.deny[i].rationale}
		}
	}
	for i := range r.allow {
		if r.allow[i].glob.Match(subject) {
			return warden.Decision{Effect: warden.Allow, RuleID: r.allow[i].pattern, Rationale: r.allow[i].rationale}
		}
	}
	for i := range r.escalate {
		if r.escalate[i].glob.Match(subject) {
			return warden.Decision{Effect: warden.Ask, RuleID: r.escalate[i].pattern, Rationale: r.escalate[i].rationale}
		}
	}
	return decNoMatch
}

// ShellDenyText is the refusal text for a bash command that is not one simple command.
func ShellDenyText(command string) string {
	return "Shell control operator requires explicit approval: '" + command + "'"
}

func (p *RulePolicy) evaluateBash(rules *toolRules, args warden.Args, explain *Explanation) warden.Decision {
	command, ok := args.String("command")
	if !ok {
		return warden.Decision{Effect: warden.Deny, RuleID: "bash.command", Rationale: "bash call has no string 'command' argument"}
	}
	if explain != nil {
		explain.MatchString = command
	}
	a := shell.AnalyzeWith(command, &p.cfg.Shell)
	if !a.Simple {
		if explain != nil {
			explain.ShellError = a.Problem
		}
		return warden.Decision{Effect: warden.Deny, RuleID: "shell.control", Rationale: ShellDenyText(command), Reason: "shell:" + a.Problem}
	}
	if explain != nil {
		explain.Normalized = a.Commands
	}
	// Most restrictive over the command and every wrapped command: deny (including no
	// match) > escalate > allow. Among denials an explicit rule is reported before the
	// default, so "bash -c 'rm x'" names "rm *" rather than the wrapper's non-match.
	var out warden.Decision
	for i, c := range a.Commands {
		d := rules.judge(c)
		if explain != nil {
			explain.Verdicts = append(explain.Verdicts, fmt.Sprintf("%s => %s (%s)", c, effectWord(d.Effect), d.Rationale))
		}
		if i == 0 || bashRank(d) > bashRank(out) {
			out = d
		}
	}
	return out
}

func bashRank(d warden.Decision) int {
	switch d.Effect {
	case warden.Allow:
		return 0
	case warden.Ask:
		return 1
	}
	if d.RuleID == decNoMatch.RuleID {
		return 2
	}
	return 3
}

func effectWord(e warden.Effect) string {
	if e == warden.Ask {
		return "escalate"
	}
	return e.String()
}

// MatchString returns the string a rule policy matches globs against for a call to tool
// (see the package documentation for the per-tool rules).
func (p *RulePolicy) MatchString(tool string, args warden.Args) string {
	canonical := p.Canonical(tool)
	if canonical == "bash" {
		s, _ := args.String("command")
		return s
	}
	s, _ := p.matchStringInto(canonical, args, nil)
	return strings.Clone(s)
}

// matchStringInto builds the match string into buf. Single-argument tools return the
// argument string itself. A template of the tool's own wins, then its family's; a
// resource without one matches its uri argument (a string, else "").
//
// The string may share memory with the returned buffer (it is built without copying),
// so callers that keep it past the buffer's reuse must clone it.
func (p *RulePolicy) matchStringInto(canonical string, args warden.Args, buf []byte) (string, []byte) {
	t, ok := p.templates[canonical]
	fam := familyOf(canonical)
	if !ok && fam != "" {
		t, ok = p.templates[fam]
	}
	if ok {
		buf = t.render(args, buf)
		return bytesString(buf), buf
	}
	if fam == resourceFamily {
		uri, _ := args.String("uri")
		return uri, buf
	}
	switch canonical {
	case "editor":
		return argText(args, "file_path"), buf
	case "reader":
		return argText(args, "path"), buf
	case "search":
		buf = appendArgText(buf, args, "pattern")
		buf = append(buf, ' ')
		buf = appendArgText(buf, args, "path")
		return bytesString(buf), buf
	}
	if s, ok := args.String("action"); ok {
		buf = append(buf, s...)
	}
	buf = append(buf, ' ')
	for i := range args.Len() {
		if i > 0 {
			buf = append(buf, ' ')
		}
		_, v := args.At(i)
		buf = appendValueText(buf, v)
	}
	return bytesString(buf), buf
}

func argText(args warden.Args, key string) string {
	v, ok := args.Get(key)
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return bytesString(appendValueText(nil, v))
}

func appendArgText(buf []byte, args warden.Args, key string) []byte {
	v, ok := args.Get(key)
	if !ok || v == nil {
		return buf
	}
	return appendValueText(buf, v)
}

// appendValueText renders one argument value for a match string: strings verbatim,
// everything else as compact JSON (numbers as written, true/false, null).
func appendValueText(buf []byte, v any) []byte {
	if s, ok := v.(string); ok {
		return append(buf, s...)
	}
	return warden.AppendJSONValue(buf, v)
}

func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// template is a compiled match template: literal text and {name} argument references.
type template struct {
	parts []templatePart
}

type templatePart struct {
	literal string
	arg     string // when non-empty, the argument to substitute
}

func parseTemplate(s string) (template, error) {
	var t template
	for len(s) > 0 {
		i := strings.IndexAny(s, "{}")
		if i < 0 {
			t.parts = append(t.parts, templatePart{literal: s})
			break
		}
		if s[i] == '}' {
			return template{}, fmt.Errorf("unmatched '}' in %q", s)
		}
		if i > 0 {
			t.parts = append(t.parts, templatePart{literal: s[:i]})
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return template{}, fmt.Errorf("unclosed '{' in %q", s)
		}
		name := strings.TrimSpace(s[i+1 : i+j])
		if name == "" || strings.ContainsAny(name, "{") {
			return template{}, fmt.Errorf("empty or nested placeholder in %q", s)
		}
		t.parts = append(t.parts, templatePart{arg: name})
		s = s[i+j+1:]
	}
	return t, nil
}

func (t template) render(args warden.Args, buf []byte) []byte {
	for _, p := range t.parts {
		if p.arg == "" {
			buf = append(buf, p.literal...)
			continue
		}
		buf = appendArgText(buf, args, p.arg)
	}
	return buf
}
