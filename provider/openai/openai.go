package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/internal/check"
	"github.com/wardenhq/warden/provider/internal/jsonargs"
	"github.com/wardenhq/warden/provider/internal/retry"
)

// EnvAPIKey is the environment variable the API key is read from when
// [Options.APIKey] is empty.
const EnvAPIKey = "OPENAI_API_KEY"

// DefaultBaseURL is OpenAI's API, used when [Options.BaseURL] is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Defaults for [Options] fields left zero.
const (
	DefaultMaxRetries     = retry.DefaultMaxRetries
	DefaultRetryBaseDelay = retry.DefaultBaseDelay
)

// InvalidArgumentsKey is the key of the object that stands in for tool arguments the
// model wrote that are not a JSON object: {"_invalid_arguments": "<what it wrote>"}.
const InvalidArgumentsKey = jsonargs.InvalidKey

// APIError is the error Complete returns for an HTTP error answer of the API, after
// retries. errors.As(err, &apiErr) with an *APIError finds it; its Unwrap returns the
// SDK's *openai.Error.
type APIError = retry.APIError

// Options configure a [Provider]. A nil *Options means the defaults.
type Options struct {
	// APIKey is sent as "Authorization: Bearer <key>". Empty: the OPENAI_API_KEY
	// environment variable. New fails when both are empty, unless BaseURL is set: a
	// local OpenAI-compatible server (Ollama, vLLM, llama.cpp) may need no key, and then
	// no Authorization header is sent. The key goes to BaseURL when it is set.
	APIKey string
	// BaseURL replaces https://api.openai.com/v1/, for OpenAI-compatible servers
	// (e.g. "http://localhost:11434/v1" for Ollama). The OPENAI_BASE_URL environment
	// variable is not read.
	BaseURL string
	// MaxTokens bounds each reply when the request does not; 0 leaves it to the server.
	// It is sent as "max_completion_tokens" to OpenAI and as "max_tokens" (which
	// compatible servers understand) when BaseURL is set.
	MaxTokens int
	// MaxRetries is the number of retries after a 408, 429 or 5xx answer. 0 means the
	// default, 3; a negative value disables retries.
	MaxRetries int
	// RetryBaseDelay is the first backoff, doubled on each retry (up to 30s) with
	// jitter, when the API does not say how long to wait (default 500ms).
	RetryBaseDelay time.Duration
	// HTTPClient sends the requests (default: a client whose transport waits at most 10
	// minutes for response headers).
	HTTPClient *http.Client
}

// Provider is an [agent.Provider] backed by the Chat Completions API of OpenAI or of an
// OpenAI-compatible server.
type Provider struct {
	chat        sdk.ChatCompletionService
	model       string
	maxTokens   int
	legacyLimit bool // send max_tokens rather than max_completion_tokens
	apiKey      string
	policy      retry.Policy
}

var _ agent.Provider = (*Provider)(nil)

// New returns a provider that talks to model (a model name such as "gpt-4.1" or, on a
// local server, "llama3.1"). opts may be nil. It fails when the model is missing, or
// the API key is missing and BaseURL is not set; it does no I/O.
func New(model string, opts *Options) (*Provider, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	opts = &o
	key, err := check.Settings{Provider: "openai", Model: model, ModelExample: "gpt-4.1",
		APIKey: opts.APIKey, EnvAPIKey: EnvAPIKey, KeyOptional: opts.BaseURL != "",
		NoKeyHint: "a key may be omitted only with Options.BaseURL, for a local OpenAI-compatible server",
		MaxTokens: opts.MaxTokens}.Key()
	if err != nil {
		return nil, err
	}
	baseURL := opts.BaseURL
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	httpClient := opts.HTTPClient
	if httpClient == nil {
		httpClient = defaultHTTPClient()
	}

	// The chat completions service is built directly rather than through NewClient, so
	// that nothing is read from the environment but the key above. The SDK's own
	// retries are off: retry.Do retries, with a backoff tests can shorten.
	ropts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0),
	}
	if key != "" {
		ropts = append(ropts, option.WithAPIKey(key))
	}
	return &Provider{
		chat:        sdk.NewChatCompletionService(ropts...),
		model:       model,
		maxTokens:   opts.MaxTokens,
		legacyLimit: opts.BaseURL != "",
		apiKey:      key,
		policy:      retry.FromOptions(opts.MaxRetries, opts.RetryBaseDelay),
	}, nil
}

func defaultHTTPClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

// Complete sends req to the Chat Completions API, retrying rate limits and server
// errors, and returns the assistant's turn.
func (p *Provider) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelResponse, error) {
	params, err := p.params(req)
	if err != nil {
		return agent.ModelResponse{}, err
	}
	cc, err := retry.Call(ctx, p.policy, "openai", func(ctx context.Context) (*sdk.ChatCompletion, error) {
		var res *http.Response
		c, err := p.chat.New(ctx, params, option.WithResponseInto(&res))
		if err != nil {
			return nil, p.apiError(err, res)
		}
		return c, nil
	})
	if err != nil {
		return agent.ModelResponse{}, err
	}
	if cc == nil || len(cc.Choices) == 0 {
		return agent.ModelResponse{}, errors.New("openai: the response has no choices")
	}
	return response(cc), nil
}

// params maps an agent request to a chat completion request.
func (p *Provider) params(req agent.ModelRequest) (sdk.ChatCompletionNewParams, error) {
	params := sdk.ChatCompletionNewParams{Model: shared.ChatModel(p.model)}
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.ChatCompletionMessageParamUnion{
			OfSystem: &sdk.ChatCompletionSystemMessageParam{
				Content: sdk.ChatCompletionSystemMessageParamContentUnion{OfString: param.NewOpt(req.System)},
			},
		})
	}
	for i, m := range req.Messages {
		msgs, err := messages(i, m)
		if err != nil {
			return params, err
		}
		params.Messages = append(params.Messages, msgs...)
	}
	for _, t := range req.Tools {
		tp, err := tool(t)
		if err != nil {
			return params, err
		}
		params.Tools = append(params.Tools, tp)
	}
	limit := p.maxTokens
	if req.MaxTokens > 0 {
		limit = req.MaxTokens
	}
	if limit > 0 {
		if p.legacyLimit {
			params.MaxTokens = param.NewOpt(int64(limit))
		} else {
			params.MaxCompletionTokens = param.NewOpt(int64(limit))
		}
	}
	return params, nil
}

// messages maps one turn. A user turn becomes one "tool" message per tool result, in
// order, then a "user" message for its text; an assistant turn one "assistant" message
// with its text and tool_calls.
func messages(i int, m agent.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	if err := check.Message("openai", i, m); err != nil {
		return nil, err
	}
	var out []sdk.ChatCompletionMessageParamUnion
	if m.Role == agent.RoleUser {
		for _, r := range m.ToolResults {
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfTool: &sdk.ChatCompletionToolMessageParam{
				ToolCallID: r.CallID,
				Content:    sdk.ChatCompletionToolMessageParamContentUnion{OfString: param.NewOpt(r.Content)},
			}})
		}
		if m.Text != "" {
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfUser: &sdk.ChatCompletionUserMessageParam{
				Content: sdk.ChatCompletionUserMessageParamContentUnion{OfString: param.NewOpt(m.Text)},
			}})
		}
		return out, nil
	}
	a := &sdk.ChatCompletionAssistantMessageParam{}
	if m.Text != "" {
		a.Content = sdk.ChatCompletionAssistantMessageParamContentUnion{OfString: param.NewOpt(m.Text)}
	}
	for _, c := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID:       c.ID,
				Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(check.Args(c))},
			},
		})
	}
	return append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: a}), nil
}

// functionDef is the "function" object of a tool, written by hand so that the input
// schema is sent byte for byte (the SDK's FunctionParameters is a map, which would
// reorder its keys).
type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// tool maps a tool spec to a function tool whose parameters are the input schema.
func tool(t agent.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	schema, err := check.Tool("openai", t, json.RawMessage(`{"type":"object","properties":{}}`))
	if err != nil {
		return sdk.ChatCompletionToolUnionParam{}, err
	}
	def, err := json.Marshal(functionDef{Name: t.Name, Description: t.Description, Parameters: schema})
	if err != nil {
		return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("openai: tool %q: %w", t.Name, err)
	}
	return sdk.ChatCompletionToolUnionParam{OfFunction: &sdk.ChatCompletionFunctionToolParam{
		Function: param.Override[shared.FunctionDefinitionParam](json.RawMessage(def)),
	}}, nil
}

// response maps the first choice: its content (and refusal), its function tool calls in
// order with arguments made safe by jsonargs.Object, the finish reason and usage.
func response(cc *sdk.ChatCompletion) agent.ModelResponse {
	choice := cc.Choices[0]
	msg := choice.Message
	out := agent.ModelResponse{
		Text:       msg.Content,
		StopReason: choice.FinishReason,
		Usage: agent.Usage{
			InputTokens:  int(cc.Usage.PromptTokens),
			OutputTokens: int(cc.Usage.CompletionTokens),
		},
	}
	if msg.Refusal != "" {
		if out.Text != "" {
			out.Text += "\n"
		}
		out.Text += msg.Refusal
	}
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // only function tools are offered
		}
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		out.ToolCalls = append(out.ToolCalls, agent.ToolCall{
			ID:   id,
			Name: tc.Function.Name,
			Args: jsonargs.Object([]byte(tc.Function.Arguments)),
		})
	}
	return out
}

// newCallID names a tool call the server sent without an id (some compatible servers
// do), so that its result can be matched to it.
func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// apiError turns an error answer of the API into an *APIError. That includes an error
// body the SDK could not decode (some compatible servers send {"error": "text"}): the
// status of the response decides. Other errors (transport, context, decoding of a
// successful answer) are returned as they are.
func (p *Provider) apiError(err error, res *http.Response) error {
	return retry.SDKError("openai", "X-Request-Id", p.apiKey, err, res,
		func(e *sdk.Error) *http.Response { return e.Response },
		func(e *retry.APIError, sdkErr *sdk.Error) func() []byte {
			e.StatusCode = sdkErr.StatusCode
			e.Type = sdkErr.Type
			e.Message = sdkErr.Message
			return nil
		})
}
