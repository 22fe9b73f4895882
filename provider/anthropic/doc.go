// Package anthropic is a model provider for the Anthropic Messages API, built on
// github.com/anthropics/anthropic-sdk-go/v2.
//
//	p, err := anthropic.New("claude-sonnet-4-5", nil) // key from ANTHROPIC_API_KEY
//
// # Mapping
//
// Request (POST /v1/messages):
//
//   - ModelRequest.System → "system": [{"type":"text","text":...}] (left out when empty).
//   - A user Message → {"role":"user","content":[...]}: one
//     {"type":"tool_result","tool_use_id":CallID,"content":[{"type":"text","text":Content}]}
//     per ToolResult, in order and first (as the API requires), with "is_error": true for
//     IsError (and no "content" when Content is empty); then {"type":"text"} for Text.
//   - An assistant Message → {"role":"assistant","content":[...]}: {"type":"text"} for
//     Text, then one {"type":"tool_use","id","name","input"} per ToolCall, the input being
//     Args as written (empty Args send {}).
//   - Empty text blocks are never sent (the API refuses them). A turn with nothing to
//     send, an unknown role, tool calls on a user turn, tool results on an assistant
//     turn, Args or an input schema that is not a JSON object: Complete fails before
//     sending anything.
//   - ToolSpec → {"name","description","input_schema"}: the schema is sent byte for byte
//     (only whitespace is compacted); an empty one sends {"type":"object"}.
//   - "max_tokens": ModelRequest.MaxTokens, else Options.MaxTokens, else 1024. The SDK
//     refuses a non-streaming request whose max_tokens could take over ten minutes
//     (about 21,000 tokens).
//
// Response: the "text" blocks, concatenated, are Text; the "tool_use" blocks, in order,
// are ToolCalls, whose Args are the "input" bytes exactly as the API sent them (key order
// kept), or {"_invalid_arguments": "<input>"} if the input was not a JSON object. Other
// blocks (thinking, server tools, which Warden never enables) are dropped. StopReason is
// "stop_reason"; Usage.InputTokens is input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens, Usage.OutputTokens is output_tokens.
//
// # Errors and retries
//
// A 408, 429 or 5xx answer (529 "overloaded" included) is retried up to
// Options.MaxRetries times (default 3), after the wait the API asks for
// (retry-after-ms, else retry-after) or else an exponential backoff with jitter from
// Options.RetryBaseDelay (default 500ms, capped at 30s). An x-should-retry header
// overrides the status. The provider gives up at once when the API asks to wait more
// than a minute or when ctx's deadline would pass before the next attempt. Transport
// errors are not retried. The SDK's own retries are turned off.
//
// The error is an [*APIError]: "anthropic: rate limited (429) after 3 retries: <API
// message>", "anthropic: overloaded (529) after 3 retries: Overloaded", "anthropic: API
// error 400: <API message>". A cancelled ctx yields an error that wraps ctx.Err(). No
// error contains the API key (an API message that echoes it is redacted), and the
// provider logs nothing.
//
// # Configuration
//
// [Options] are the whole configuration, except that an empty APIKey is read from
// ANTHROPIC_API_KEY: the SDK's environment defaults (ANTHROPIC_BASE_URL, auth tokens,
// profiles, custom headers) are not used. The key is sent as the SDK v2.15.0 sends it,
// "Authorization: Bearer <key>", with the SDK's anthropic-version header.
//
// A Provider is safe for concurrent use.
package anthropic
