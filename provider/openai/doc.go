// Package openai is a model provider for the OpenAI Chat Completions API and the
// OpenAI-compatible servers that speak it (Ollama, vLLM, llama.cpp, gateways), built on
// github.com/openai/openai-go/v3.
//
//	p, err := openai.New("gpt-4.1", nil) // key from OPENAI_API_KEY
//	p, err := openai.New("llama3.1", &openai.Options{BaseURL: "http://localhost:11434/v1"})
//
// # Mapping
//
// Request (POST <base>/chat/completions):
//
//   - ModelRequest.System → {"role":"system","content":...} first (left out when empty).
//   - A user Message → one {"role":"tool","tool_call_id":CallID,"content":Content} per
//     ToolResult, in order, then {"role":"user","content":Text} if Text is not empty. The
//     API has no error flag for tool results: an IsError result is sent as its content
//     alone, unprefixed (Warden's refusals say what they are).
//   - An assistant Message → {"role":"assistant","content":Text,"tool_calls":[{"id",
//     "type":"function","function":{"name","arguments"}}]}, "arguments" being Args as a
//     string (empty Args send "{}"); "content" is left out when Text is empty.
//   - A turn with nothing to send, an unknown role, tool calls on a user turn, tool
//     results on an assistant turn, Args or an input schema that is not a JSON object:
//     Complete fails before sending anything.
//   - ToolSpec → {"type":"function","function":{"name","description","parameters"}}, the
//     input schema sent byte for byte as "parameters" (only whitespace is compacted); an
//     empty one sends {"type":"object","properties":{}}.
//   - The token limit (ModelRequest.MaxTokens, else Options.MaxTokens; none when both
//     are 0) is "max_completion_tokens" for OpenAI and "max_tokens" when BaseURL is set,
//     since compatible servers know that one.
//
// Response: the first choice. Text is its "content" (and its "refusal", if any, on a
// line of its own); ToolCalls are its function "tool_calls" in order. A call the server
// sent without an id gets a random "call_…" one, so its result can be matched.
//
// Arguments: "arguments" is a string the model wrote. When it is a JSON object its bytes
// become Args unchanged (key order kept); an empty string becomes {}. Anything else
// (truncated or malformed JSON, an array, a string) never reaches a policy as arguments:
// Args becomes {"_invalid_arguments": "<the string as written>"}, which the tool's input
// schema refuses with a readable problem (an unknown property, or missing required
// ones), and which the model then reads and can correct.
//
// StopReason is "finish_reason"; Usage is prompt_tokens and completion_tokens.
//
// # Errors and retries
//
// A 408, 429 or 5xx answer is retried up to Options.MaxRetries times (default 3), after
// the wait the API asks for (retry-after-ms, else retry-after) or else an exponential
// backoff with jitter from Options.RetryBaseDelay (default 500ms, capped at 30s). An
// x-should-retry header overrides the status. The provider gives up at once when the API
// asks to wait more than a minute or when ctx's deadline would pass before the next
// attempt. Transport errors are not retried. The SDK's own retries are turned off.
//
// The error is an [*APIError]: "openai: rate limited (429) after 3 retries: <API
// message>", "openai: API error 400: <API message>". Error bodies of compatible servers
// that do not follow OpenAI's shape still give their message ({"error": "..."},
// {"message": ...}, {"detail": ...}, plain text). A cancelled ctx yields an error that
// wraps ctx.Err(). No error contains the API key (an API message that echoes it is
// redacted), and the provider logs nothing.
//
// # Configuration
//
// [Options] are the whole configuration, except that an empty APIKey is read from
// OPENAI_API_KEY: the SDK's environment defaults (OPENAI_BASE_URL, OPENAI_ORG_ID,
// OPENAI_PROJECT_ID, custom headers) are not used. The key is sent as "Authorization:
// Bearer <key>", to BaseURL when it is set; with BaseURL set and no key at all, no
// Authorization header is sent.
//
// A Provider is safe for concurrent use.
package openai
