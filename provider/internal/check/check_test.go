package check

import (
	"encoding/json"
	"testing"

	"github.com/wardenhq/warden/agent"
)

func TestMessage(t *testing.T) {
	call := agent.ToolCall{ID: "c1", Name: "search", Args: json.RawMessage(`{"q":1}`)}
	result := agent.ToolResult{CallID: "c1", Content: "ok"}
	cases := []struct {
		name string
		m    agent.Message
		want string // "" = accepted
	}{
		{"user text", agent.Message{Role: agent.RoleUser, Text: "hi"}, ""},
		{"user results", agent.Message{Role: agent.RoleUser, ToolResults: []agent.ToolResult{result}}, ""},
		{"assistant calls", agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{call}}, ""},
		{"assistant call without args", agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c2", Name: "ls", Args: json.RawMessage(" ")}}}, ""},
		{"user with calls", agent.Message{Role: agent.RoleUser, Text: "hi", ToolCalls: []agent.ToolCall{call}},
			"p: message 3: a user turn cannot carry tool calls"},
		{"result without call id", agent.Message{Role: agent.RoleUser, ToolResults: []agent.ToolResult{{Content: "x"}}},
			"p: message 3: tool result without a call id"},
		{"empty user", agent.Message{Role: agent.RoleUser},
			"p: message 3: empty user turn (no text, no tool results)"},
		{"assistant with results", agent.Message{Role: agent.RoleAssistant, Text: "x", ToolResults: []agent.ToolResult{result}},
			"p: message 3: an assistant turn cannot carry tool results"},
		{"args not an object", agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c3", Name: "rm", Args: json.RawMessage(`[1]`)}}},
			`p: message 3: tool call "c3" (rm): args are not a JSON object`},
		{"empty assistant", agent.Message{Role: agent.RoleAssistant},
			"p: message 3: empty assistant turn (no text, no tool calls)"},
		{"unknown role", agent.Message{Role: "system", Text: "x"},
			`p: message 3: unknown role "system" (want "user" or "assistant")`},
	}
	for _, c := range cases {
		err := Message("p", 3, c.m)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: Message = %v, want nil", c.name, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s: Message = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestArgs(t *testing.T) {
	if got := string(Args(agent.ToolCall{Args: json.RawMessage(" \n")})); got != "{}" {
		t.Errorf("Args(blank) = %q, want {}", got)
	}
	if got := string(Args(agent.ToolCall{Args: json.RawMessage(` {"a":1}`)})); got != ` {"a":1}` {
		t.Errorf("Args kept %q, want the arguments as given", got)
	}
}

func TestTool(t *testing.T) {
	empty := json.RawMessage(`{"type":"object"}`)
	got, err := Tool("p", agent.ToolSpec{Name: "ls"}, empty)
	if err != nil || string(got) != string(empty) {
		t.Errorf("Tool without a schema = %s, %v; want the empty schema", got, err)
	}
	got, err = Tool("p", agent.ToolSpec{Name: "ls", InputSchema: json.RawMessage(`{"type":"object","required":["a"]}`)}, empty)
	if err != nil || string(got) != `{"type":"object","required":["a"]}` {
		t.Errorf("Tool = %s, %v; want the schema as given", got, err)
	}
	if _, err := Tool("p", agent.ToolSpec{}, empty); err == nil || err.Error() != "p: a tool without a name" {
		t.Errorf("Tool without a name: %v", err)
	}
	if _, err := Tool("p", agent.ToolSpec{Name: "ls", InputSchema: json.RawMessage(`"x"`)}, empty); err == nil ||
		err.Error() != `p: tool "ls": input schema is not a JSON object` {
		t.Errorf("Tool with a string schema: %v", err)
	}
}

func TestSettingsKey(t *testing.T) {
	const env = "WARDEN_CHECK_TEST_KEY"
	t.Setenv(env, "")
	base := Settings{Provider: "p", Model: "m", ModelExample: "ex", EnvAPIKey: env}
	cases := []struct {
		name    string
		s       func(Settings) Settings
		envKey  string
		wantKey string
		wantErr string
	}{
		{"given key", func(s Settings) Settings { s.APIKey = "k"; return s }, "e", "k", ""},
		{"key from the environment", func(s Settings) Settings { return s }, "e", "e", ""},
		{"no model", func(s Settings) Settings { s.Model = " "; s.APIKey = "k"; return s }, "", "",
			`p: the model is required (a model name such as "ex")`},
		{"no key", func(s Settings) Settings { return s }, "", "", "p: no API key: set " + env + " or Options.APIKey"},
		{"no key, with a hint", func(s Settings) Settings { s.NoKeyHint = "why"; return s }, "", "",
			"p: no API key: set " + env + " or Options.APIKey (why)"},
		{"optional key", func(s Settings) Settings { s.KeyOptional = true; return s }, "", "", ""},
		{"negative max tokens", func(s Settings) Settings { s.APIKey = "k"; s.MaxTokens = -1; return s }, "", "",
			"p: Options.MaxTokens is negative (-1)"},
	}
	for _, c := range cases {
		t.Setenv(env, c.envKey)
		key, err := c.s(base).Key()
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("%s: Key = %q, %v; want error %q", c.name, key, err, c.wantErr)
			}
			continue
		}
		if err != nil || key != c.wantKey {
			t.Errorf("%s: Key = %q, %v; want %q", c.name, key, err, c.wantKey)
		}
	}
}
