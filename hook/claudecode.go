package hook

// This file reads Claude Code's hook input and writes its PreToolUse output.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/wardenhq/warden"
)

// The Claude Code hook events this package reads.
const (
	EventPreToolUse  = "PreToolUse"
	EventPostToolUse = "PostToolUse"
)

// MaxInputSize bounds the hook input read from stdin. A PreToolUse input is a tool call
// (a Write carries the whole file), so it is generous; a larger input is refused rather
// than judged in part.
const MaxInputSize = 8 << 20

// ClaudeInput is what Claude Code writes on a command hook's stdin for the PreToolUse
// and PostToolUse events. Fields Claude Code adds that Warden does not use
// (transcript_path, permission_mode, ...) are ignored.
type ClaudeInput struct {
	SessionID     string      // session_id
	Cwd           string      // cwd: the session's working directory
	HookEventName string      // hook_event_name: "PreToolUse" or "PostToolUse"
	ToolName      string      // tool_name: "Bash", "Read", "mcp__github__create_issue", ...
	ToolInput     warden.Args // tool_input, keys in the order Claude Code wrote them
	ToolUseID     string      // tool_use_id: the model's id for the call
	// ToolResponse is tool_response (PostToolUse only): the tool's result as decoded
	// JSON (see [warden.Args] for the forms), or nil when absent.
	ToolResponse any
}

// ReadClaudeInput reads one hook input for event ([EventPreToolUse] or
// [EventPostToolUse]) from r, which it reads to the end, and parses it with
// [ParseClaudeInput]. Input larger than [MaxInputSize] is an error.
func ReadClaudeInput(r io.Reader, event string) (ClaudeInput, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputSize+1))
	if err != nil {
		return ClaudeInput{}, fmt.Errorf("reading stdin: %w", err)
	}
	if len(data) > MaxInputSize {
		return ClaudeInput{}, fmt.Errorf("stdin is larger than %d MiB; a hook input is one tool call", MaxInputSize>>20)
	}
	return ParseClaudeInput(data, event)
}

// ParseClaudeInput parses one hook input for event. It returns an error when data is
// empty or not exactly one JSON object, has a duplicate key at any depth, has a string
// field (session_id, cwd, hook_event_name, tool_name, tool_use_id) of another type, has
// no tool_name, has no tool_input or one that is not an object, or names a
// hook_event_name other than event.
func ParseClaudeInput(data []byte, event string) (ClaudeInput, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return ClaudeInput{}, fmt.Errorf("stdin is empty; expected one %s JSON object", event)
	}
	obj, err := warden.ParseArgs(data)
	if err != nil {
		if errors.Is(err, warden.ErrNotObject) {
			return ClaudeInput{}, fmt.Errorf("stdin is not a JSON object; expected one %s JSON object", event)
		}
		return ClaudeInput{}, fmt.Errorf("stdin is not valid JSON: %s", strings.TrimPrefix(err.Error(), "arguments: "))
	}
	var in ClaudeInput
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"session_id", &in.SessionID},
		{"cwd", &in.Cwd},
		{"hook_event_name", &in.HookEventName},
		{"tool_name", &in.ToolName},
		{"tool_use_id", &in.ToolUseID},
	} {
		v, ok := obj.Get(f.key)
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return ClaudeInput{}, fmt.Errorf("%s must be a string, not %s", f.key, jsonKind(v))
		}
		*f.dst = s
	}
	if in.HookEventName != "" && in.HookEventName != event {
		return ClaudeInput{}, fmt.Errorf("hook_event_name is %q, but this hook runs for %s", in.HookEventName, event)
	}
	if in.ToolName == "" {
		return ClaudeInput{}, errors.New("tool_name is missing or empty")
	}
	v, ok := obj.Get("tool_input")
	if !ok {
		return ClaudeInput{}, errors.New("tool_input is missing")
	}
	if in.ToolInput, ok = v.(warden.Args); !ok {
		return ClaudeInput{}, fmt.Errorf("tool_input must be an object, not %s", jsonKind(v))
	}
	in.ToolResponse, _ = obj.Get("tool_response")
	return in, nil
}

// The permission decisions of a PreToolUse hook.
const (
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
	PermissionAsk   = "ask"
)

// ClaudeOutput is what a PreToolUse command hook writes on stdout.
type ClaudeOutput struct {
	HookSpecificOutput ClaudePreToolUse `json:"hookSpecificOutput"`
}

// ClaudePreToolUse is the PreToolUse part of [ClaudeOutput]. Claude Code shows the
// reason of a deny to the model, the reason of an ask to the person it asks, and logs the
// reason of an allow.
type ClaudePreToolUse struct {
	HookEventName            string `json:"hookEventName"`      // always "PreToolUse"
	PermissionDecision       string `json:"permissionDecision"` // allow, deny or ask
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// Permission returns the permission decision.
func (o ClaudeOutput) Permission() string { return o.HookSpecificOutput.PermissionDecision }

// Reason returns the permission decision's reason.
func (o ClaudeOutput) Reason() string { return o.HookSpecificOutput.PermissionDecisionReason }

// ClaudeVerdict turns the decision about a call to the Claude Code tool named tool into
// the hook output:
//
//   - allow => allow, reason "Warden: <rationale>";
//   - deny and halt => deny, reason what the model reads ([warden.Decision.ModelText]
//     with the Claude Code tool name): the model is told, and the session goes on
//     (a halt does not set Claude Code's "continue": false, which would stop it);
//   - ask => ask, reason the question put to the person: "Warden: <TellLLM, else the
//     rationale> — allow this <tool> call?".
//
// Any other effect is a deny (fail closed).
func ClaudeVerdict(tool string, d warden.Decision) ClaudeOutput {
	switch d.Effect {
	case warden.Allow:
		return claudeOutput(PermissionAllow, "Warden: "+orDefault(d.Rationale, "allowed"))
	case warden.Ask:
		why := strings.TrimRight(orDefault(d.TellLLM, orDefault(d.Rationale, "this call needs a person's approval")), ". ")
		return claudeOutput(PermissionAsk, "Warden: "+why+" — allow this "+tool+" call?")
	case warden.Deny, warden.Halt:
		return claudeOutput(PermissionDeny, d.ModelText(tool))
	}
	return claudeOutput(PermissionDeny, warden.UnauthorizedText(tool))
}

// ClaudeRefusal is the deny for a call Warden could not decide: bad input, a policy that
// does not load, an internal error. problem says what is wrong; the reason reads
// "Warden refused this call because it could not decide it: <problem>".
func ClaudeRefusal(problem string) ClaudeOutput {
	return claudeOutput(PermissionDeny, RefusalText(problem))
}

// RefusalText is the reason of [ClaudeRefusal], for the same message on stderr.
func RefusalText(problem string) string {
	return "Warden refused this call because it could not decide it: " + problem
}

func claudeOutput(permission, reason string) ClaudeOutput {
	return ClaudeOutput{HookSpecificOutput: ClaudePreToolUse{
		HookEventName:            EventPreToolUse,
		PermissionDecision:       permission,
		PermissionDecisionReason: reason,
	}}
}

// Encode writes o as one line of JSON, without HTML escaping.
func (o ClaudeOutput) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(o)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
