package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/internal/fakeapi"
	"github.com/wardenhq/warden/provider/openai"
)

const testKey = "sk-proj-test-key-0000"

// Bodies as the Chat Completions API sends them.
const (
	toolCallReply = `{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4.1-2025-04-14",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [
        {"id": "call_Vt2tq3dY1xYh", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\",\"encoding\":\"utf8\",\"lines\":{\"to\":20,\"from\":1}}"}},
        {"id": "call_8fLmx0RkQz", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
      ],
      "refusal": null,
      "annotations": []
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
  "service_tier": "default",
  "system_fingerprint": "fp_b8bc95a0ac"
}`
	textReply = `{
  "id": "chatcmpl-B9MHE2",
  "object": "chat.completion",
  "created": 1741570290,
  "model": "gpt-4.1-2025-04-14",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "The file says hello.", "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 120, "completion_tokens": 6, "total_tokens": 126},
  "system_fingerprint": "fp_b8bc95a0ac"
}`
	badRequest  = `{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[2].role","code":null}}`
	rateLimited = `{"error":{"message":"Rate limit reached for gpt-4.1 on tokens per min (TPM): Limit 30000, Used 29949, Requested 512. Please try again in 922ms.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	overloaded  = `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`
)

func newProvider(t *testing.T, srv *fakeapi.Server, mod func(*openai.Options)) *openai.Provider {
	t.Helper()
	opts := openai.Options{
		APIKey:         testKey,
		BaseURL:        srv.URL + "/v1",
		RetryBaseDelay: time.Millisecond,
	}
	if mod != nil {
		mod(&opts)
	}
	p, err := openai.New("gpt-4.1", &opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func hi() agent.ModelRequest {
	return agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}
}

func TestToolCallAndMultiTurn(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: toolCallReply}, fakeapi.Response{Body: textReply})
	p := newProvider(t, srv, nil)

	req := fakeapi.FirstTurn()
	resp, err := p.Complete(fakeapi.Context(t), req)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.ModelResponse{
		ToolCalls: []agent.ToolCall{
			{ID: "call_Vt2tq3dY1xYh", Name: "read_file", Args: json.RawMessage(`{"path":"notes.txt","encoding":"utf8","lines":{"to":20,"from":1}}`)},
			{ID: "call_8fLmx0RkQz", Name: "list_dir", Args: json.RawMessage(`{}`)},
		},
		StopReason: "tool_calls",
		Usage:      agent.Usage{InputTokens: 82, OutputTokens: 17},
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Fatalf("response (-want +got):\n%s", diff)
	}
	if got := string(resp.ToolCalls[0].Args); got != `{"path":"notes.txt","encoding":"utf8","lines":{"to":20,"from":1}}` {
		t.Errorf("args not kept as sent: %s", got)
	}

	req.Messages = append(req.Messages,
		agent.Message{Role: agent.RoleAssistant, Text: "Reading.", ToolCalls: resp.ToolCalls},
		agent.Message{Role: agent.RoleUser, Text: "Be brief.", ToolResults: []agent.ToolResult{
			{CallID: "call_Vt2tq3dY1xYh", Content: "hello"},
			{CallID: "call_8fLmx0RkQz", Content: "denied by policy: list_dir is not allowed", IsError: true},
		}},
	)
	resp, err = p.Complete(fakeapi.Context(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.ModelResponse{Text: "The file says hello.", StopReason: "stop", Usage: agent.Usage{InputTokens: 120, OutputTokens: 6}}, resp); diff != "" {
		t.Errorf("second response (-want +got):\n%s", diff)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
			t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization = %q", got)
		}
		if got := r.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
	}
	toolsJSON := `[
	  {"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"},"encoding":{"type":"string"}},"required":["path"],"additionalProperties":false}}},
	  {"type":"function","function":{"name":"list_dir","parameters":{"type":"object","properties":{}}}}
	]`
	// A BaseURL is set, so the limit would go as max_tokens; none is set here.
	fakeapi.AssertJSON(t, reqs[0], `{
	  "model": "gpt-4.1",
	  "messages": [
	    {"role":"system","content":"You are careful."},
	    {"role":"user","content":"What is in notes.txt?"}
	  ],
	  "tools": `+toolsJSON+`
	}`)
	fakeapi.AssertJSON(t, reqs[1], `{
	  "model": "gpt-4.1",
	  "messages": [
	    {"role":"system","content":"You are careful."},
	    {"role":"user","content":"What is in notes.txt?"},
	    {"role":"assistant","content":"Reading.","tool_calls":[
	      {"id":"call_Vt2tq3dY1xYh","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"notes.txt\",\"encoding\":\"utf8\",\"lines\":{\"to\":20,\"from\":1}}"}},
	      {"id":"call_8fLmx0RkQz","type":"function","function":{"name":"list_dir","arguments":"{}"}}
	    ]},
	    {"role":"tool","tool_call_id":"call_Vt2tq3dY1xYh","content":"hello"},
	    {"role":"tool","tool_call_id":"call_8fLmx0RkQz","content":"denied by policy: list_dir is not allowed"},
	    {"role":"user","content":"Be brief."}
	  ],
	  "tools": `+toolsJSON+`
	}`)
	// The schema is sent byte for byte (key order kept).
	if body := string(reqs[1].Body); !strings.Contains(body, `"parameters":{"type":"object","properties":{"path":{"type":"string"},"encoding":{"type":"string"}},"required":["path"],"additionalProperties":false}`) {
		t.Errorf("schema reordered:\n%s", body)
	}
}

func TestTextOnlyAndMaxTokens(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	p := newProvider(t, srv, func(o *openai.Options) { o.MaxTokens = 300 })
	resp, err := p.Complete(fakeapi.Context(t), hi())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The file says hello." || resp.ToolCalls != nil || resp.StopReason != "stop" {
		t.Errorf("response = %+v", resp)
	}
	// With a BaseURL (an OpenAI-compatible server) the limit is sent as max_tokens.
	fakeapi.AssertJSON(t, srv.Requests()[0], `{"model":"gpt-4.1","max_tokens":300,"messages":[{"role":"user","content":"hi"}]}`)

	req := hi()
	req.MaxTokens = 77
	if _, err := p.Complete(fakeapi.Context(t), req); err != nil {
		t.Fatal(err)
	}
	fakeapi.AssertJSON(t, srv.Requests()[1], `{"model":"gpt-4.1","max_tokens":77,"messages":[{"role":"user","content":"hi"}]}`)
}

// redirect sends every request to the test server, whatever its URL.
type redirect struct{ target string }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme = "http"
	req.URL.Host = strings.TrimPrefix(r.target, "http://")
	return http.DefaultTransport.RoundTrip(req)
}

func TestOpenAIDefaultsMaxCompletionTokens(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	p, err := openai.New("gpt-4.1", &openai.Options{
		APIKey: testKey, MaxTokens: 500,
		HTTPClient: &http.Client{Transport: redirect{srv.URL}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(fakeapi.Context(t), hi()); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path = %s", r.Path)
	}
	fakeapi.AssertJSON(t, r, `{"model":"gpt-4.1","max_completion_tokens":500,"messages":[{"role":"user","content":"hi"}]}`)
}

func TestInvalidArguments(t *testing.T) {
	reply := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"llama3.1",
	  "choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[
	    {"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"notes.txt\""}},
	    {"id":"call_2","type":"function","function":{"name":"list_dir","arguments":""}},
	    {"id":"call_3","type":"function","function":{"name":"search","arguments":"[\"q\"]"}},
	    {"type":"function","function":{"name":"now","arguments":"{}"}}
	  ]},"finish_reason":"tool_calls"}],
	  "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	srv := fakeapi.New(t, fakeapi.Response{Body: reply})
	p := newProvider(t, srv, nil)
	resp, err := p.Complete(fakeapi.Context(t), hi())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 4 {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
	for i, want := range []string{
		`{"_invalid_arguments":"{\"path\": \"notes.txt\""}`,
		`{}`,
		`{"_invalid_arguments":"[\"q\"]"}`,
		`{}`,
	} {
		if got := string(resp.ToolCalls[i].Args); got != want {
			t.Errorf("call %d args = %s, want %s", i, got, want)
		}
	}
	// A call the server sent without an id gets one, so its result can be matched.
	if id := resp.ToolCalls[3].ID; !strings.HasPrefix(id, "call_") || len(id) < 10 {
		t.Errorf("synthesized id = %q", id)
	}
}

func TestRefusal(t *testing.T) {
	reply := `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"gpt-4.1",
	  "choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],
	  "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	srv := fakeapi.New(t, fakeapi.Response{Body: reply})
	p := newProvider(t, srv, nil)
	resp, err := p.Complete(fakeapi.Context(t), hi())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "I can't help with that." {
		t.Errorf("text = %q", resp.Text)
	}
}

func TestNoChoices(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: `{"id":"chatcmpl-3","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[]}`})
	p := newProvider(t, srv, nil)
	if _, err := p.Complete(fakeapi.Context(t), hi()); err == nil || err.Error() != "openai: the response has no choices" {
		t.Fatalf("err = %v", err)
	}
}

func TestAPIError400(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Status: 400, Header: map[string]string{"X-Request-Id": "req_8f2b"}, Body: badRequest})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), hi())
	want := "openai: API error 400: Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("not an *APIError: %T", err)
	}
	if apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" || apiErr.RequestID != "req_8f2b" || apiErr.Retryable {
		t.Errorf("APIError = %+v", apiErr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestNonJSONErrorBody(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Status: 404, Header: map[string]string{"Content-Type": "text/plain"}, Body: "404 page not found"})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), hi())
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.HasPrefix(err.Error(), "openai: API error 404") {
		t.Fatalf("err = %v", err)
	}
}

func TestRateLimitedThenSuccess(t *testing.T) {
	srv := fakeapi.New(t,
		fakeapi.Response{Status: 429, Header: map[string]string{"Retry-After-Ms": "2"}, Body: rateLimited},
		fakeapi.Response{Status: 429, Body: rateLimited},
		fakeapi.Response{Body: textReply},
	)
	p := newProvider(t, srv, nil)
	resp, err := p.Complete(fakeapi.Context(t), hi())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The file says hello." {
		t.Errorf("text = %q", resp.Text)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestRateLimitedForever(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Status: 429, Body: rateLimited})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), hi())
	want := "openai: rate limited (429) after 3 retries: Rate limit reached for gpt-4.1 on tokens per min (TPM): Limit 30000, Used 29949, Requested 512. Please try again in 922ms."
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

func TestServerErrors(t *testing.T) {
	t.Run("503 then success", func(t *testing.T) {
		srv := fakeapi.New(t, fakeapi.Response{Status: 503, Body: overloaded}, fakeapi.Response{Body: textReply})
		p := newProvider(t, srv, nil)
		if _, err := p.Complete(fakeapi.Context(t), hi()); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("503 forever", func(t *testing.T) {
		srv := fakeapi.New(t, fakeapi.Response{Status: 503, Body: overloaded})
		p := newProvider(t, srv, func(o *openai.Options) { o.MaxRetries = 2 })
		_, err := p.Complete(fakeapi.Context(t), hi())
		if err == nil || err.Error() != "openai: API error 503 after 2 retries: The engine is currently overloaded, please try again later." {
			t.Fatalf("err = %v", err)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
}

func TestContextCancelledMidRequest(t *testing.T) {
	fakeapi.CheckCancelMidRequest(t, "openai", func(srv *fakeapi.Server) fakeapi.Complete {
		return newProvider(t, srv, nil).Complete
	})
}

func TestContextCancelledWhileWaitingToRetry(t *testing.T) {
	err := fakeapi.CancelWhileRetrying(t, rateLimited, func(srv *fakeapi.Server) fakeapi.Complete {
		return newProvider(t, srv, func(o *openai.Options) { o.RetryBaseDelay = time.Hour }).Complete
	})
	if !strings.Contains(err.Error(), "while waiting to retry; last answer: rate limited (429)") {
		t.Fatalf("err = %v", err)
	}
}

func TestMissingAPIKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	_, err := openai.New("gpt-4.1", nil)
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("err = %v, want it to name OPENAI_API_KEY", err)
	}
}

// oneRequest makes one call through a provider for model pointed at a fake server by
// BaseURL alone, with OPENAI_API_KEY set to envKey, and returns what the server got.
func oneRequest(t *testing.T, envKey, model string) fakeapi.Request {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", envKey)
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	p, err := openai.New(model, &openai.Options{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(fakeapi.Context(t), hi()); err != nil {
		t.Fatal(err)
	}
	return srv.Requests()[0]
}

func TestCompatibleServerWithoutKey(t *testing.T) {
	r := oneRequest(t, "", "llama3.1")
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path = %s", r.Path)
	}
}

func TestAPIKeyFromEnvironment(t *testing.T) {
	if got := oneRequest(t, "sk-from-env", "gpt-4.1").Header.Get("Authorization"); got != "Bearer sk-from-env" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestMissingModel(t *testing.T) {
	if _, err := openai.New("", &openai.Options{APIKey: testKey}); err == nil || !strings.Contains(err.Error(), "model is required") {
		t.Fatalf("err = %v", err)
	}
}

func TestAPIKeyNotInErrors(t *testing.T) {
	body := `{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	srv := fakeapi.New(t, fakeapi.Response{Status: 401, Body: body})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), hi())
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "Incorrect API key provided: [redacted].") {
		t.Fatalf("err = %v", err)
	}
}

func TestRequestMappingErrors(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	fakeapi.CheckInvalidRequests(t, srv, "openai", newProvider(t, srv, nil).Complete)
}

func TestToolDefaultsAndEmptyResult(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), fakeapi.Defaults("call_1"))
	if err != nil {
		t.Fatal(err)
	}
	fakeapi.AssertJSON(t, srv.Requests()[0], `{
	  "model":"gpt-4.1",
	  "messages":[
	    {"role":"user","content":"x"},
	    {"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"now","arguments":"{}"}}]},
	    {"role":"tool","tool_call_id":"call_1","content":""}
	  ],
	  "tools":[{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}]
	}`)
}

func TestCompatibleServerErrorBodies(t *testing.T) {
	for name, tc := range map[string]struct {
		status      int
		contentType string
		body        string
		want        string
	}{
		"plain text":   {404, "text/plain", "404 page not found", "openai: API error 404: 404 page not found"},
		"vLLM":         {404, "application/json", `{"object":"error","message":"The model 'x' does not exist.","type":"NotFoundError","param":null,"code":404}`, "openai: API error 404: The model 'x' does not exist."},
		"error string": {400, "application/json", `{"error":"model \"x\" not found, try pulling it first"}`, `openai: API error 400: model "x" not found, try pulling it first`},
		"detail":       {422, "application/json", `{"detail":"Unprocessable"}`, "openai: API error 422: Unprocessable"},
		"empty":        {418, "text/plain", "", "openai: API error 418: I'm a teapot"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeapi.New(t, fakeapi.Response{Status: tc.status, Header: map[string]string{"Content-Type": tc.contentType}, Body: tc.body})
			p := newProvider(t, srv, nil)
			_, err := p.Complete(fakeapi.Context(t), hi())
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}
