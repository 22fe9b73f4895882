package agent

import (
	"context"
	"encoding/json"
)

// Provider is a model: given the conversation so far, the system prompt and the tools on
// offer, it returns the next assistant turn. Implementations live in package provider
// (scripted, anthropic, openai).
//
// Complete is called once per loop iteration, never concurrently for one run. It must
// honour ctx. It must not retain or modify req after returning. Retries and backoff for
// rate limits are the provider's business; an error it returns ends the run.
type Provider interface {
	Complete(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// ModelRequest is one call to a model.
type ModelRequest struct {
	// System is the system prompt (the role's prompt directives and the run's
	// instructions). It is not enforcement.
	System string `json:"system,omitempty"`
	// Messages is the conversation, oldest first.
	Messages []Message `json:"messages"`
	// Tools are the tools the model may call this iteration (already filtered by the
	// policy's visibility).
	Tools []ToolSpec `json:"tools,omitempty"`
	// MaxTokens bounds the reply; 0 lets the provider choose.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Role of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn. A user turn carries Text and/or the ToolResults of the previous
// assistant turn's ToolCalls; an assistant turn carries Text and/or ToolCalls.
type Message struct {
	Role        string       `json:"role"`
	Text        string       `json:"text,omitempty"`
	ToolCalls   []ToolCall   `json:"tool_calls,omitempty"`
	ToolResults []ToolResult `json:"tool_results,omitempty"`
}

// ToolCall is the model asking to run a tool. Args is the JSON object as the model
// wrote it (key order matters to policies).
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ToolResult answers one ToolCall. Refusals are results too (IsError true): the model
// reads them and adapts.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ModelResponse is the model's turn.
type ModelResponse struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// StopReason is the provider's reason ("end_turn", "tool_use", "stop", "tool_calls",
	// "max_tokens", ...), for display.
	StopReason string `json:"stop_reason,omitempty"`
	Usage      Usage  `json:"usage,omitzero"`
}

// Usage counts tokens, when the provider reports them.
type Usage struct {
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
}
