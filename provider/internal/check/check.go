// Package check holds the checks that the model providers apply alike before they map
// anything to their API: the settings New takes (model, API key, token limit) and the
// shape of the turns and tools of a request. Each error starts with the provider's
// name; the providers keep only the mapping to their API's types.
package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/internal/jsonargs"
)

// Settings are what every provider's New checks alike.
type Settings struct {
	Provider     string // the provider's name, the prefix of every error
	Model        string // required
	ModelExample string // a model name the error for a missing model suggests
	APIKey       string // empty: the environment variable EnvAPIKey
	EnvAPIKey    string
	// KeyOptional allows no key at all; NoKeyHint, when not empty, says in the error
	// for a missing key when a key may be omitted.
	KeyOptional bool
	NoKeyHint   string
	MaxTokens   int // must not be negative
}

// Key checks s, in this order: the model, the API key and the token limit, and returns
// the API key to use (s.APIKey, else the environment variable's value; empty only when
// s.KeyOptional).
func (s Settings) Key() (string, error) {
	if strings.TrimSpace(s.Model) == "" {
		return "", errors.New(s.Provider + ": the model is required (a model name such as \"" + s.ModelExample + "\")")
	}
	key := s.APIKey
	if key == "" {
		key = os.Getenv(s.EnvAPIKey)
	}
	if key == "" && !s.KeyOptional {
		if s.NoKeyHint != "" {
			return "", fmt.Errorf("%s: no API key: set %s or Options.APIKey (%s)", s.Provider, s.EnvAPIKey, s.NoKeyHint)
		}
		return "", fmt.Errorf("%s: no API key: set %s or Options.APIKey", s.Provider, s.EnvAPIKey)
	}
	if s.MaxTokens < 0 {
		return "", fmt.Errorf("%s: Options.MaxTokens is negative (%d)", s.Provider, s.MaxTokens)
	}
	return key, nil
}

// Message checks turn i of a request: a user turn carries text or tool results (each
// naming its call) and no tool calls; an assistant turn carries text or tool calls
// (whose arguments, when given, are a JSON object) and no tool results.
func Message(provider string, i int, m agent.Message) error {
	switch m.Role {
	case agent.RoleUser:
		if len(m.ToolCalls) > 0 {
			return fmt.Errorf("%s: message %d: a user turn cannot carry tool calls", provider, i)
		}
		for _, r := range m.ToolResults {
			if r.CallID == "" {
				return fmt.Errorf("%s: message %d: tool result without a call id", provider, i)
			}
		}
		if m.Text == "" && len(m.ToolResults) == 0 {
			return fmt.Errorf("%s: message %d: empty user turn (no text, no tool results)", provider, i)
		}
	case agent.RoleAssistant:
		if len(m.ToolResults) > 0 {
			return fmt.Errorf("%s: message %d: an assistant turn cannot carry tool results", provider, i)
		}
		for _, c := range m.ToolCalls {
			if len(bytes.TrimSpace(c.Args)) > 0 && !jsonargs.IsObject(c.Args) {
				return fmt.Errorf("%s: message %d: tool call %q (%s): args are not a JSON object", provider, i, c.ID, c.Name)
			}
		}
		if m.Text == "" && len(m.ToolCalls) == 0 {
			return fmt.Errorf("%s: message %d: empty assistant turn (no text, no tool calls)", provider, i)
		}
	default:
		return fmt.Errorf("%s: message %d: unknown role %q (want %q or %q)", provider, i, m.Role, agent.RoleUser, agent.RoleAssistant)
	}
	return nil
}

// Args returns the arguments of a tool call that [Message] accepted: as given, or {}
// when blank.
func Args(c agent.ToolCall) json.RawMessage {
	if len(bytes.TrimSpace(c.Args)) == 0 {
		return json.RawMessage(`{}`)
	}
	return c.Args
}

// Tool checks a tool spec (it has a name, and its input schema, when given, is a JSON
// object) and returns the schema to send: as given, or empty when blank.
func Tool(provider string, t agent.ToolSpec, empty json.RawMessage) (json.RawMessage, error) {
	if t.Name == "" {
		return nil, errors.New(provider + ": a tool without a name")
	}
	if len(bytes.TrimSpace(t.InputSchema)) == 0 {
		return empty, nil
	}
	if !jsonargs.IsObject(t.InputSchema) {
		return nil, fmt.Errorf("%s: tool %q: input schema is not a JSON object", provider, t.Name)
	}
	return t.InputSchema, nil
}
