package hook_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/hook"
)

// A PreToolUse input as Claude Code writes it.
const preInput = `{
  "session_id": "abc123",
  "transcript_path": "/home/dev/.claude/projects/p/abc123.jsonl",
  "cwd": "/home/dev/proj",
  "permission_mode": "default",
  "hook_event_name": "PreToolUse",
  "tool_name": "Bash",
  "tool_input": {"command": "npm install", "description": "Install dependencies"},
  "tool_use_id": "toolu_01ABC"
}`

func TestParseClaudeInput(t *testing.T) {
	in, err := hook.ParseClaudeInput([]byte(preInput), hook.EventPreToolUse)
	if err != nil {
		t.Fatal(err)
	}
	if in.SessionID != "abc123" || in.Cwd != "/home/dev/proj" || in.HookEventName != "PreToolUse" ||
		in.ToolName != "Bash" || in.ToolUseID != "toolu_01ABC" || in.ToolResponse != nil {
		t.Errorf("got %+v", in)
	}
	if got, want := string(in.ToolInput.AppendJSON(nil)), `{"command":"npm install","description":"Install dependencies"}`; got != want {
		t.Errorf("tool_input = %s, want %s (in order)", got, want)
	}

	post := `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"file_path":"/a"},"tool_response":{"filePath":"/a","success":true},"tool_use_id":"t"}`
	in, err = hook.ParseClaudeInput([]byte(post), hook.EventPostToolUse)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := in.ToolResponse.(warden.Args); !ok || r.Len() != 2 {
		t.Errorf("tool_response = %#v, want the object", in.ToolResponse)
	}

	// The event name may be left out; a minimal input is enough.
	if _, err := hook.ParseClaudeInput([]byte(`{"tool_name":"Read","tool_input":{}}`), hook.EventPreToolUse); err != nil {
		t.Errorf("minimal input: %v", err)
	}
}

func TestParseClaudeInputRefuses(t *testing.T) {
	tests := []struct {
		name, input, wantErr string
	}{
		{"empty", ``, "stdin is empty; expected one PreToolUse JSON object"},
		{"blank", " \n\t", "stdin is empty"},
		{"not JSON", `tool_name=Bash`, "stdin is not valid JSON"},
		{"truncated", `{"tool_name":"Bash","tool_input":{"command":"ls"`, "stdin is not valid JSON"},
		{"array", `[{"tool_name":"Bash"}]`, "stdin is not a JSON object"},
		{"string", `"Bash"`, "stdin is not a JSON object"},
		{"two objects", `{"tool_name":"Bash","tool_input":{}} {"tool_name":"Read","tool_input":{}}`, "unexpected data after the JSON object"},
		{"duplicate tool_name", `{"tool_name":"Read","tool_input":{"file_path":"/a"},"tool_name":"Bash"}`, `duplicate key "tool_name"`},
		{"duplicate in tool_input", `{"tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf /"}}`, `duplicate key "command"`},
		{"missing tool_name", `{"tool_input":{}}`, "tool_name is missing or empty"},
		{"empty tool_name", `{"tool_name":"","tool_input":{}}`, "tool_name is missing or empty"},
		{"tool_name not a string", `{"tool_name":["Bash"],"tool_input":{}}`, "tool_name must be a string, not an array"},
		{"cwd not a string", `{"tool_name":"Bash","tool_input":{},"cwd":1}`, "cwd must be a string, not a number"},
		{"missing tool_input", `{"tool_name":"Bash"}`, "tool_input is missing"},
		{"tool_input a string", `{"tool_name":"Bash","tool_input":"ls"}`, "tool_input must be an object, not a string"},
		{"tool_input null", `{"tool_name":"Bash","tool_input":null}`, "tool_input must be an object, not null"},
		{"other event", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}`, `hook_event_name is "PostToolUse", but this hook runs for PreToolUse`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hook.ParseClaudeInput([]byte(tt.input), hook.EventPreToolUse)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestReadClaudeInputLimits(t *testing.T) {
	big := `{"tool_name":"Write","tool_input":{"file_path":"/a","content":"` + strings.Repeat("x", hook.MaxInputSize) + `"}}`
	if _, err := hook.ReadClaudeInput(strings.NewReader(big), hook.EventPreToolUse); err == nil || !strings.Contains(err.Error(), "larger than 8 MiB") {
		t.Errorf("oversized input: error = %v, want larger than 8 MiB", err)
	}
	if _, err := hook.ReadClaudeInput(iotest.ErrReader(bytes.ErrTooLarge), hook.EventPreToolUse); err == nil || !strings.Contains(err.Error(), "reading stdin") {
		t.Errorf("failing reader: error = %v", err)
	}
	if _, err := hook.ReadClaudeInput(strings.NewReader(preInput), hook.EventPreToolUse); err != nil {
		t.Errorf("normal input: %v", err)
	}
}

func TestClaudeVerdict(t *testing.T) {
	tests := []struct {
		name       string
		d          warden.Decision
		permission string
		reason     string
	}{
		{"allow", warden.Decision{Effect: warden.Allow, RuleID: "git *", Rationale: "allowed by rule: git *"},
			"allow", "Warden: allowed by rule: git *"},
		{"allow without rationale", warden.Decision{Effect: warden.Allow},
			"allow", "Warden: allowed"},
		{"deny", warden.Decision{Effect: warden.Deny, RuleID: "rm *", Rationale: "denied by rule: rm *"},
			"deny", "[permission denied: denied by rule: rm *]"},
		{"deny with tell_llm", warden.Decision{Effect: warden.Deny, Rationale: "r", TellLLM: "Do not touch production."},
			"deny", "Do not touch production."},
		{"deny never shows the reason tag", warden.Decision{Effect: warden.Deny, Reason: "security:exfiltration"},
			"deny", "[permission denied: policy]"},
		{"halt", warden.Decision{Effect: warden.Halt, RuleID: "wipe", Rationale: "condition 'wipe' matched"},
			"deny", "Tool 'Bash' is not available in this context."},
		{"halt with tell_llm", warden.Decision{Effect: warden.Halt, TellLLM: "Stop: this run is over."},
			"deny", "Stop: this run is over."},
		{"ask", warden.Decision{Effect: warden.Ask, RuleID: "git push *", Rationale: "escalate by rule: git push *"},
			"ask", "Warden: escalate by rule: git push * — allow this Bash call?"},
		{"ask with tell_llm", warden.Decision{Effect: warden.Ask, Rationale: "condition 'big' matched", TellLLM: "Refunds over 1000 need a person."},
			"ask", "Warden: Refunds over 1000 need a person — allow this Bash call?"},
		{"ask without text", warden.Decision{Effect: warden.Ask},
			"ask", "Warden: this call needs a person's approval — allow this Bash call?"},
		{"invalid effect", warden.Decision{Effect: warden.Effect(9), Rationale: "x"},
			"deny", warden.UnauthorizedText("Bash")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := hook.ClaudeVerdict("Bash", tt.d)
			if out.Permission() != tt.permission || out.Reason() != tt.reason {
				t.Errorf("got %s %q\nwant %s %q", out.Permission(), out.Reason(), tt.permission, tt.reason)
			}
			if out.HookSpecificOutput.HookEventName != "PreToolUse" {
				t.Errorf("hookEventName = %q", out.HookSpecificOutput.HookEventName)
			}
		})
	}
}

func TestClaudeOutputEncode(t *testing.T) {
	var b bytes.Buffer
	if err := hook.ClaudeRefusal(`tool_input must be an object, not "<x>" & co`).Encode(&b); err != nil {
		t.Fatal(err)
	}
	want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Warden refused this call because it could not decide it: tool_input must be an object, not \"<x>\" & co"}}` + "\n"
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
}

// FuzzParseClaudeInput checks that the parser never panics and that whatever it accepts
// is a complete call: a tool name and an object input whose JSON parses back the same.
func FuzzParseClaudeInput(f *testing.F) {
	f.Add([]byte(preInput))
	f.Add([]byte(`{"tool_name":"Read","tool_input":{"file_path":"a"},"cwd":"/w"}`))
	f.Add([]byte(`{"tool_name":"Bash","tool_input":{"command":"ls","command":"rm"}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := hook.ParseClaudeInput(data, hook.EventPreToolUse)
		if err != nil {
			return
		}
		if in.ToolName == "" {
			t.Fatalf("accepted an input without a tool name: %q", data)
		}
		if in.HookEventName != "" && in.HookEventName != hook.EventPreToolUse {
			t.Fatalf("accepted event %q", in.HookEventName)
		}
		again, err := warden.ParseArgs(in.ToolInput.AppendJSON(nil))
		if err != nil || !again.Equal(in.ToolInput) {
			t.Fatalf("tool_input does not round-trip: %v", err)
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON: %q", data)
		}
		// Mapping never panics, whatever it is given.
		_, _ = hook.MapClaudeTool(in.ToolName, in.ToolInput, in.Cwd)
	})
}
