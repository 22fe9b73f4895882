package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/internal/check"
	"github.com/wardenhq/warden/provider/internal/jsonargs"
	"github.com/wardenhq/warden/provider/internal/retry"
)

// EnvAPIKey is the environment variable the API key is read from when
// [Options.APIKey] is empty.
const EnvAPIKey = "ANTHROPIC_API_KEY"

// Defaults for [Options] fields left zero.
const (
	DefaultMaxTokens      = 1024
	DefaultMaxRetries     = retry.DefaultMaxRetries
	DefaultRetryBaseDelay = retry.DefaultBaseDelay
)

// APIError is the error Complete returns for an HTTP error answer of the API, after
// retries. errors.As(err, &apiErr) with an *APIError finds it; its Unwrap returns the
// SDK's *anthropic.Error.
type APIError = retry.APIError

// Options configure a [Provider]. A nil *Options means the defaults.
type Options struct {
	// APIKey authenticates the requests. Empty: the ANTHROPIC_API_KEY environment
	// variable; New fails when both are empty.
	APIKey string
	// BaseURL replaces https://api.anthropic.com/ (a gateway, a proxy, a test server).
	// The ANTHROPIC_BASE_URL environment variable is not read.
	BaseURL string
	// MaxTokens bounds each reply when the request does not (default 1024).
	MaxTokens int
	// MaxRetries is the number of retries after a 408, 429 or 5xx answer (529
	// overloaded included). 0 means the default, 3; a negative value disables retries.
	MaxRetries int
	// RetryBaseDelay is the first backoff, doubled on each retry (up to 30s) with
	// jitter, when the API does not say how long to wait (default 500ms).
	RetryBaseDelay time.Duration
	// HTTPClient sends the requests (default: the SDK's client).
	HTTPClient *http.Client
}

// Provider is an [agent.Provider] backed by the Anthropic Messages API.
type Provider struct {
	client    sdk.Client
	model     string
	maxTokens int
	apiKey    string
	policy    retry.Policy
}

var _ agent.Provider = (*Provider)(nil)

// New returns a provider that talks to model (a model name such as
// "claude-sonnet-4-5"). opts may be nil. It fails when the model or the API key is
// missing; it does no I/O.
func New(model string, opts *Options) (*Provider, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	opts = &o
	key, err := check.Settings{Provider: "anthropic", Model: model, ModelExample: "claude-sonnet-4-5",
		APIKey: opts.APIKey, EnvAPIKey: EnvAPIKey, MaxTokens: opts.MaxTokens}.Key()
	if err != nil {
		return nil, err
	}
	maxTokens := opts.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}

	// The SDK's own retries are off: retry.Do retries, with a backoff tests can shorten.
	// WithoutEnvironmentDefaults keeps the SDK from reading credentials, profiles, a base
	// URL or headers from the environment: Options are the whole configuration.
	ropts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
	}
	if opts.BaseURL != "" {
		ropts = append(ropts, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(opts.HTTPClient))
	}
	return &Provider{
		client:    sdk.NewClient(ropts...),
		model:     model,
		maxTokens: maxTokens,
		apiKey:    key,
		policy:    retry.FromOptions(opts.MaxRetries, opts.RetryBaseDelay),
	}, nil
}

// Complete sends req to the Messages API, retrying rate limits and server errors, and
// returns the assistant's turn.
func (p *Provider) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelResponse, error) {
	params, err := p.params(req)
	if err != nil {
		return agent.ModelResponse{}, err
	}
	msg, err := retry.Call(ctx, p.policy, "anthropic", func(ctx context.Context) (*sdk.Message, error) {
		var res *http.Response
		m, err := p.client.Messages.New(ctx, params, option.WithResponseInto(&res))
		if err != nil {
			return nil, p.apiError(err, res)
		}
		return m, nil
	})
	if err != nil {
		return agent.ModelResponse{}, err
	}
	if msg == nil {
		return agent.ModelResponse{}, errors.New("anthropic: empty response")
	}
	return response(msg), nil
}

// params maps an agent request to the Messages API's.
func (p *Provider) params(req agent.ModelRequest) (sdk.MessageNewParams, error) {
	maxTokens := p.maxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(p.model),
		MaxTokens: int64(maxTokens),
		Messages:  make([]sdk.MessageParam, 0, len(req.Messages)),
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for i, m := range req.Messages {
		mp, err := message(i, m)
		if err != nil {
			return params, err
		}
		params.Messages = append(params.Messages, mp)
	}
	for _, t := range req.Tools {
		tp, err := tool(t)
		if err != nil {
			return params, err
		}
		params.Tools = append(params.Tools, tp)
	}
	return params, nil
}

// message maps one turn. A user turn becomes its tool_result blocks (the API wants them
// first) then a text block; an assistant turn a text block then its tool_use blocks.
// Empty text blocks are left out (the API refuses them).
func message(i int, m agent.Message) (sdk.MessageParam, error) {
	if err := check.Message("anthropic", i, m); err != nil {
		return sdk.MessageParam{}, err
	}
	var blocks []sdk.ContentBlockParamUnion
	if m.Role == agent.RoleUser {
		for _, r := range m.ToolResults {
			tr := sdk.ToolResultBlockParam{ToolUseID: r.CallID}
			if r.Content != "" {
				tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: r.Content}}}
			}
			if r.IsError {
				tr.IsError = param.NewOpt(true)
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &tr})
		}
		if m.Text != "" {
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: m.Text}})
		}
		return sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}}, nil
	}
	if m.Text != "" {
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: m.Text}})
	}
	for _, c := range m.ToolCalls {
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: c.ID, Name: c.Name, Input: check.Args(c)}})
	}
	return sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}}, nil
}

// tool maps a tool spec; the input schema is sent as given.
func tool(t agent.ToolSpec) (sdk.ToolUnionParam, error) {
	schema, err := check.Tool("anthropic", t, json.RawMessage(`{"type":"object"}`))
	if err != nil {
		return sdk.ToolUnionParam{}, err
	}
	tp := sdk.ToolParam{
		Name:        t.Name,
		InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
	}
	if t.Description != "" {
		tp.Description = param.NewOpt(t.Description)
	}
	return sdk.ToolUnionParam{OfTool: &tp}, nil
}

// response maps the API's message: text blocks joined, tool_use blocks in order with
// their input as sent. Other block types (thinking, server tools) are not returned.
func response(m *sdk.Message) agent.ModelResponse {
	var out agent.ModelResponse
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, agent.ToolCall{ID: b.ID, Name: b.Name, Args: jsonargs.Object(b.Input)})
		}
	}
	out.Text = text.String()
	out.StopReason = string(m.StopReason)
	out.Usage = agent.Usage{
		InputTokens:  int(m.Usage.InputTokens + m.Usage.CacheCreationInputTokens + m.Usage.CacheReadInputTokens),
		OutputTokens: int(m.Usage.OutputTokens),
	}
	return out
}

// apiError turns an error answer of the API into an *APIError, decided by the status of
// the response even when the SDK could not decode its body. Other errors (transport,
// context, decoding of a successful answer) are returned as they are.
func (p *Provider) apiError(err error, res *http.Response) error {
	return retry.SDKError("anthropic", "Request-Id", p.apiKey, err, res,
		func(e *sdk.Error) *http.Response { return e.Response },
		func(e *retry.APIError, sdkErr *sdk.Error) func() []byte {
			e.StatusCode = sdkErr.StatusCode
			e.Type = string(sdkErr.Type())
			e.Message = sdkErr.Message
			e.RequestID = sdkErr.RequestID
			body := []byte(sdkErr.RawJSON())
			return func() []byte { return body }
		})
}
