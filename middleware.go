package warden

import (
	"context"
	"errors"
	"fmt"
	"github.com/wardenhq/warden/internal/spectext"
	"strings"
)

// Middleware is one link of the middleware chain: a separate layer from the permission
// checkers, with three verbs (allow, deny, ask) and no way to answer for the tool.
//
// A Middleware is installed in one of two places, and each place runs only its own
// hooks: [Config.Middleware] runs OnToolCall and OnToolResult (at least one is
// required, and OnMessage is refused there: it would never run), and a message chain
// (the agent's MessageMiddleware, run by [RunMessageMiddleware]) runs OnMessage only
// (see [CheckMessageMiddleware]). A middleware that judges both tool calls and messages
// is two values, one in each place. Bind refuses a middleware that would silently do
// nothing where it is installed.
//
// On the call side the chain runs in declaration order after the first permission pass
// (the tool's own preprocessor first); the first answer that is not an allow wins. On the
// result side it runs in reverse order (an onion; the tool's own postprocessor
// innermost). A hook that panics is a denial: "middleware '<name>' threw: <message>".
type Middleware struct {
	// Name identifies the middleware in the ledger, events and refusal texts. Required.
	Name string
	// Tools scopes the middleware: "*" or empty for every tool, otherwise hook keys:
	// canonical tool names or "<name>_tool" keys, compared case-insensitively. A key is a
	// name, never a glob; tool patterns (policies, warden audit --tool) use the policy's
	// fnmatch dialect, and this is the one other form, the one the spec fixes.
	Tools []string
	// OnToolCall sees the arguments as they stand and may rewrite them (with a why),
	// deny the call, or ask a person.
	OnToolCall func(ctx context.Context, c ToolCall) CallOutcome
	// OnToolResult sees the result (or the error, or the tool's own ErrorResult) and
	// may replace what the model reads, or deny. It cannot ask: the tool has already
	// run. Its decision holds on every path, error handlers included (see "The result
	// side" on [Guard]); a panic or an invalid outcome denies what it was shown.
	OnToolResult func(ctx context.Context, r ToolResult) ResultOutcome
	// OnMessage sees model input and output text in the agent runtime.
	OnMessage func(ctx context.Context, m Message) MessageOutcome
}

// ToolCall is what call-side middleware sees.
type ToolCall struct {
	Tool     string
	Args     Args
	CallID   string
	Identity Identity
	Session  string
}

// ToolResult is what result-side middleware sees.
type ToolResult struct {
	Tool string
	Args Args // the final arguments
	// Result is what the model will read as the chain stands, before rendering: the
	// tool's result, its [ErrorResult], an inner link's replacement, or nil (the tool
	// returned an error and no inner link replaced it, or the result was over the
	// tool's ceiling).
	Result any
	// IsError reports that what the model will read is an error: the tool returned an
	// error or an ErrorResult, or its result was over its ceiling.
	IsError bool
	// Error is the tool's error text (credential tokens scrubbed), "" when it returned
	// a result.
	Error  string
	CallID string
}

// Message is a model input or output seen by message middleware.
type Message struct {
	Phase string // "input" or "output"
	Text  string
}

type outcomeKind uint8

const (
	okAllow outcomeKind = iota
	okDeny
	okAsk
	okInvalid
)

// CallOutcome is a call-side middleware answer. Build it with [AllowCall],
// [TransformCall], [DenyCall] or [AskPerson]; the zero value allows unchanged.
type CallOutcome struct {
	kind     outcomeKind
	args     *Args
	why      string
	reason   string
	question string
	detail   string
	err      error
}

// AllowCall lets the call continue unchanged.
func AllowCall() CallOutcome { return CallOutcome{} }

// TransformCall lets the call continue with replacement arguments. why is mandatory: a
// transform without one is a programming error that denies the call at first use.
func TransformCall(args Args, why string) CallOutcome {
	if strings.TrimSpace(why) == "" {
		return CallOutcome{kind: okInvalid, err: errors.New("transform without a why")}
	}
	return CallOutcome{args: &args, why: why}
}

// DenyCall refuses the call; reason is what the model reads, verbatim. A deny without a
// reason is a programming error that still denies, with an error text.
func DenyCall(reason string) CallOutcome {
	if strings.TrimSpace(reason) == "" {
		return CallOutcome{kind: okInvalid, err: errors.New("deny without a reason")}
	}
	return CallOutcome{kind: okDeny, reason: reason}
}

// AskPerson asks a person to decide the call. The question (and detail) is recorded
// and the chain goes on: later links still run (a later deny denies, and then nobody
// is asked), then the second security pass and schema validation, and only then is the
// person asked, at the human stage, about the arguments that will execute (with every
// other link's question, any escalation and the tool's check-in, as one decision). An
// empty question is a programming error that denies.
func AskPerson(question, detail string) CallOutcome {
	if strings.TrimSpace(question) == "" {
		return CallOutcome{kind: okInvalid, err: errors.New("ask without a question")}
	}
	return CallOutcome{kind: okAsk, question: question, detail: detail}
}

// ResultOutcome is a result-side middleware answer; the zero value keeps the result.
type ResultOutcome struct {
	kind   outcomeKind
	result any
	set    bool
	why    string
	reason string
	err    error
}

// KeepResult keeps the result unchanged.
func KeepResult() ResultOutcome { return ResultOutcome{} }

// ReplaceModelResult replaces what the model reads (the real result is kept for audit
// in Outcome.Result): on a result, an ErrorResult, a ceiling refusal or the tool's
// error alike. The replacement keeps the call's failure: a replaced error is still an
// error (IsError) and the call still failed, and error handlers cannot override it.
// why is mandatory.
func ReplaceModelResult(result any, why string) ResultOutcome {
	if strings.TrimSpace(why) == "" {
		return ResultOutcome{kind: okInvalid, err: errors.New("transform without a why")}
	}
	return ResultOutcome{result: result, set: true, why: why}
}

// DenyResult replaces what the model reads with reason, as an error, on every path (a
// result, an ErrorResult, the tool's error); outer links do not run and error handlers
// cannot override it. The tool has already run; its real result is kept for audit in
// Outcome.Result, its error in Outcome.Err.
func DenyResult(reason string) ResultOutcome {
	if strings.TrimSpace(reason) == "" {
		return ResultOutcome{kind: okInvalid, err: errors.New("deny without a reason")}
	}
	return ResultOutcome{kind: okDeny, reason: reason}
}

// MessageOutcome is a message middleware answer; the zero value keeps the text.
type MessageOutcome struct {
	kind   outcomeKind
	text   string
	set    bool
	why    string
	reason string
	err    error
}

// KeepMessage keeps the text unchanged.
func KeepMessage() MessageOutcome { return MessageOutcome{} }

// RewriteMessage replaces the text; why is mandatory.
func RewriteMessage(text, why string) MessageOutcome {
	if strings.TrimSpace(why) == "" {
		return MessageOutcome{kind: okInvalid, err: errors.New("transform without a why")}
	}
	return MessageOutcome{text: text, set: true, why: why}
}

// DenyMessage refuses the message; the run ends with a [*MessageDeniedError].
func DenyMessage(reason string) MessageOutcome {
	if strings.TrimSpace(reason) == "" {
		return MessageOutcome{kind: okInvalid, err: errors.New("deny without a reason")}
	}
	return MessageOutcome{kind: okDeny, reason: reason}
}

// appliesTo reports whether a scoped declaration (middleware, error handler) covers a
// tool: no keys or "*" cover every tool; otherwise a key matches the tool's canonical
// name, with or without a "_tool" suffix, case-insensitively.
func appliesTo(keys []string, tool string) bool {
	if len(keys) == 0 {
		return true
	}
	name := hookKey(tool)
	for _, k := range keys {
		if k == "*" || hookKey(k) == name {
			return true
		}
	}
	return false
}

func hookKey(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.TrimSuffix(s, "_tool")
}

// toolHooksApply reports, for a middleware in [Config.Middleware], why it cannot be
// installed there: it has no hook that runs there, or a hook that never would.
func toolHooksApply(i int, m *Middleware) error {
	switch {
	case m.OnToolCall == nil && m.OnToolResult == nil:
		return fmt.Errorf("warden: middleware %q (Config.Middleware[%d]) has neither OnToolCall nor OnToolResult, so it would never run there; "+
			"set one of them, or install a message middleware (OnMessage) in the agent's MessageMiddleware instead", m.Name, i)
	case m.OnMessage != nil:
		return fmt.Errorf("warden: middleware %q (Config.Middleware[%d]) sets OnMessage, which never runs there (Config.Middleware sees tool calls and results only); "+
			"move the OnMessage hook to a separate middleware in the agent's MessageMiddleware", m.Name, i)
	}
	return nil
}

// CheckMessageMiddleware reports why a message chain (the middleware [RunMessageMiddleware]
// runs, the agent's MessageMiddleware) cannot be installed: a nil or unnamed link, a link
// with no OnMessage (it would never run on messages), or one that sets OnToolCall or
// OnToolResult (those never run in a message chain; they belong in
// [Config.Middleware]). It returns nil for a chain every link of which runs. Programs
// that run a message chain call it once, when they are configured.
func CheckMessageMiddleware(chain []*Middleware) error {
	for i, m := range chain {
		switch {
		case m == nil || strings.TrimSpace(m.Name) == "":
			return fmt.Errorf("warden: message middleware %d has no name", i)
		case m.OnMessage == nil:
			return fmt.Errorf("warden: message middleware %q (%d) has no OnMessage, so it would never run on messages; "+
				"set OnMessage, or install a tool-call middleware in warden.Config.Middleware instead", m.Name, i)
		case m.OnToolCall != nil || m.OnToolResult != nil:
			return fmt.Errorf("warden: message middleware %q (%d) sets OnToolCall or OnToolResult, which never run in a message chain; "+
				"move those hooks to a separate middleware in warden.Config.Middleware", m.Name, i)
		}
	}
	return nil
}

// RunMessageMiddleware runs message middleware over text for one phase ("input" or
// "output"), in order: the OnMessage hook of each link (a chain that passes
// [CheckMessageMiddleware] has one on every link; a link without one is skipped). It returns the (possibly rewritten) text and the ledger rows, or a
// [*MessageDeniedError] when a link denies. A panicking link denies.
func RunMessageMiddleware(ctx context.Context, chain []*Middleware, phase, text string) (string, []LedgerRow, error) {
	var ledger []LedgerRow
	for _, m := range chain {
		if m == nil || m.OnMessage == nil {
			continue
		}
		out := callMessage(ctx, m, Message{Phase: phase, Text: text})
		switch out.kind {
		case okAllow:
			ledger = append(ledger, LedgerRow{Middleware: m.Name, Moment: phase, Outcome: "allow", Changed: out.set, Why: out.why})
			if out.set {
				text = out.text
			}
		case okDeny:
			ledger = append(ledger, LedgerRow{Middleware: m.Name, Moment: phase, Outcome: "deny", Why: out.reason})
			return text, ledger, &MessageDeniedError{Phase: phase, Middleware: m.Name, Reason: out.reason}
		default:
			reason := spectext.ThrewText(m.Name, errText(out.err))
			ledger = append(ledger, LedgerRow{Middleware: m.Name, Moment: phase, Outcome: "deny", Why: reason})
			return text, ledger, &MessageDeniedError{Phase: phase, Middleware: m.Name, Reason: reason}
		}
	}
	return text, ledger, nil
}

func callMessage(ctx context.Context, m *Middleware, msg Message) (out MessageOutcome) {
	defer func() {
		if r := recover(); r != nil {
			out = MessageOutcome{kind: okInvalid, err: panicError{r}}
		}
	}()
	return m.OnMessage(ctx, msg)
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}
