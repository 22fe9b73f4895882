package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/anthropic"
	"github.com/wardenhq/warden/provider/internal/fakeapi"
)

const testKey = "sk-ant-api03-test-key-000"

// Bodies as the Messages API sends them.
const (
	toolUseReply = `{
  "id": "msg_01Aq9w938a90dw8q",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5",
  "content": [
    {"type": "text", "text": "I'll read the file."},
    {"type": "tool_use", "id": "toolu_01D7FLrfh4GYq7yT1ULFeyMV", "name": "read_file", "input": {"path": "notes.txt", "encoding": "utf8", "lines": {"to": 20, "from": 1}}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 412, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 20, "output_tokens": 58}
}`
	textReply = `{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5",
  "content": [{"type": "text", "text": "The file says hello."}],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {"input_tokens": 520, "output_tokens": 9}
}`
	badRequest  = `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	rateLimited = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_011CSHoRate"}`
	overloaded  = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoOver"}`
	unavailable = `{"type":"error","error":{"type":"api_error","message":"Service unavailable"}}`
)

func newProvider(t *testing.T, srv *fakeapi.Server, mod func(*anthropic.Options)) *anthropic.Provider {
	t.Helper()
	opts := anthropic.Options{
		APIKey:         testKey,
		BaseURL:        srv.URL,
		RetryBaseDelay: time.Millisecond,
	}
	if mod != nil {
		mod(&opts)
	}
	p, err := anthropic.New("claude-sonnet-4-5", &opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolCallAndMultiTurn(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: toolUseReply}, fakeapi.Response{Body: textReply})
	p := newProvider(t, srv, nil)

	req := fakeapi.FirstTurn()
	resp, err := p.Complete(fakeapi.Context(t), req)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.ModelResponse{
		Text: "I'll read the file.",
		ToolCalls: []agent.ToolCall{{
			ID: "toolu_01D7FLrfh4GYq7yT1ULFeyMV", Name: "read_file",
			Args: json.RawMessage(`{"path": "notes.txt", "encoding": "utf8", "lines": {"to": 20, "from": 1}}`),
		}},
		StopReason: "tool_use",
		Usage:      agent.Usage{InputTokens: 442, OutputTokens: 58},
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Fatalf("response (-want +got):\n%s", diff)
	}
	// The input is kept byte for byte: key order matters to policies.
	if got := string(resp.ToolCalls[0].Args); got != `{"path": "notes.txt", "encoding": "utf8", "lines": {"to": 20, "from": 1}}` {
		t.Errorf("args not kept as sent: %s", got)
	}

	// Second turn: the tool results go back, one of them a refusal.
	req.Messages = append(req.Messages,
		agent.Message{Role: agent.RoleAssistant, Text: resp.Text, ToolCalls: []agent.ToolCall{
			resp.ToolCalls[0],
			{ID: "toolu_02", Name: "list_dir", Args: json.RawMessage(`{}`)},
		}},
		agent.Message{Role: agent.RoleUser, ToolResults: []agent.ToolResult{
			{CallID: "toolu_01D7FLrfh4GYq7yT1ULFeyMV", Content: "hello"},
			{CallID: "toolu_02", Content: "denied by policy: list_dir is not allowed", IsError: true},
		}, Text: "Be brief."},
	)
	resp, err = p.Complete(fakeapi.Context(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The file says hello." || resp.StopReason != "end_turn" || len(resp.ToolCalls) != 0 {
		t.Errorf("second response = %+v", resp)
	}
	if resp.Usage != (agent.Usage{InputTokens: 520, OutputTokens: 9}) {
		t.Errorf("usage = %+v", resp.Usage)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Method != http.MethodPost || r.Path != "/v1/messages" {
			t.Errorf("request %s %s, want POST /v1/messages", r.Method, r.Path)
		}
		// anthropic-sdk-go v2.15.0 sends the API key as a bearer token.
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization = %q", got)
		}
		if got := r.Header.Get("Anthropic-Version"); got == "" {
			t.Error("no anthropic-version header")
		}
		if got := r.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
	}
	toolsJSON := `[
	  {"name":"read_file","description":"Read a file.","input_schema":{"type":"object","properties":{"path":{"type":"string"},"encoding":{"type":"string"}},"required":["path"],"additionalProperties":false}},
	  {"name":"list_dir","input_schema":{"type":"object","properties":{}}}
	]`
	fakeapi.AssertJSON(t, reqs[0], `{
	  "model": "claude-sonnet-4-5",
	  "max_tokens": 1024,
	  "system": [{"type":"text","text":"You are careful."}],
	  "messages": [{"role":"user","content":[{"type":"text","text":"What is in notes.txt?"}]}],
	  "tools": `+toolsJSON+`
	}`)
	fakeapi.AssertJSON(t, reqs[1], `{
	  "model": "claude-sonnet-4-5",
	  "max_tokens": 1024,
	  "system": [{"type":"text","text":"You are careful."}],
	  "messages": [
	    {"role":"user","content":[{"type":"text","text":"What is in notes.txt?"}]},
	    {"role":"assistant","content":[
	      {"type":"text","text":"I'll read the file."},
	      {"type":"tool_use","id":"toolu_01D7FLrfh4GYq7yT1ULFeyMV","name":"read_file","input":{"path":"notes.txt","encoding":"utf8","lines":{"to":20,"from":1}}},
	      {"type":"tool_use","id":"toolu_02","name":"list_dir","input":{}}
	    ]},
	    {"role":"user","content":[
	      {"type":"tool_result","tool_use_id":"toolu_01D7FLrfh4GYq7yT1ULFeyMV","content":[{"type":"text","text":"hello"}]},
	      {"type":"tool_result","tool_use_id":"toolu_02","is_error":true,"content":[{"type":"text","text":"denied by policy: list_dir is not allowed"}]},
	      {"type":"text","text":"Be brief."}
	    ]}
	  ],
	  "tools": `+toolsJSON+`
	}`)
	// Key order of the tool input and of the schema survives the round trip.
	body := string(reqs[1].Body)
	for _, s := range []string{
		`"input":{"path":"notes.txt","encoding":"utf8","lines":{"to":20,"from":1}}`,
		`"properties":{"path":{"type":"string"},"encoding":{"type":"string"}},"required":["path"]`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("body does not contain %s:\n%s", s, body)
		}
	}
}

func TestTextOnly(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	p := newProvider(t, srv, func(o *anthropic.Options) { o.MaxTokens = 300 })
	resp, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The file says hello." || resp.ToolCalls != nil || resp.StopReason != "end_turn" {
		t.Errorf("response = %+v", resp)
	}
	// No system prompt, no tools: neither key is sent. Options.MaxTokens applies.
	fakeapi.AssertJSON(t, srv.Requests()[0], `{"model":"claude-sonnet-4-5","max_tokens":300,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)

	// The request's MaxTokens wins over the option.
	if _, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{MaxTokens: 77, Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[1].JSON(t).(map[string]any)["max_tokens"]; got != 77.0 {
		t.Errorf("max_tokens = %v, want 77", got)
	}
}

func TestAPIError400(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Status: 400, Header: map[string]string{"Request-Id": "req_011CSHoEeqs5C35K2UUqR7Fy"}, Body: badRequest})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	want := `anthropic: API error 400: messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	var apiErr *anthropic.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("not an *APIError: %T", err)
	}
	if apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" || apiErr.RequestID != "req_011CSHoEeqs5C35K2UUqR7Fy" || apiErr.Retries != 0 || apiErr.Retryable {
		t.Errorf("APIError = %+v", apiErr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (400 is not retried)", n)
	}
}

func TestRateLimitedThenSuccess(t *testing.T) {
	srv := fakeapi.New(t,
		fakeapi.Response{Status: 429, Header: map[string]string{"Retry-After-Ms": "2", "Retry-After": "1"}, Body: rateLimited},
		fakeapi.Response{Status: 429, Header: map[string]string{"Retry-After": "0"}, Body: rateLimited},
		fakeapi.Response{Body: textReply},
	)
	p := newProvider(t, srv, nil)
	start := time.Now()
	resp, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The file says hello." {
		t.Errorf("text = %q", resp.Text)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	// retry-after-ms (2ms) wins over retry-after (1s).
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("took %s: retry-after-ms was not honoured", d)
	}
	// Every attempt sends the same body.
	reqs := srv.Requests()
	for _, r := range reqs[1:] {
		if string(r.Body) != string(reqs[0].Body) {
			t.Errorf("retry body differs:\n%s\n%s", r.Body, reqs[0].Body)
		}
	}
}

func TestRateLimitedForever(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Status: 429, Body: rateLimited})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	want := "anthropic: rate limited (429) after 3 retries: Number of request tokens has exceeded your per-minute rate limit"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	var apiErr *anthropic.APIError
	if !errors.As(err, &apiErr) || apiErr.Retries != 3 || apiErr.Type != "rate_limit_error" {
		t.Errorf("APIError = %+v", apiErr)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d requests, want 4 (1 + 3 retries)", n)
	}
}

func TestMaxRetriesOption(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Status: 429, Body: rateLimited})
	p := newProvider(t, srv, func(o *anthropic.Options) { o.MaxRetries = 1 })
	_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if err == nil || !strings.Contains(err.Error(), "rate limited (429) after 1 retry:") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}

	srv = fakeapi.New(t, fakeapi.Response{Status: 429, Body: rateLimited})
	p = newProvider(t, srv, func(o *anthropic.Options) { o.MaxRetries = -1 })
	_, err = p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if err == nil || err.Error() != "anthropic: rate limited (429): Number of request tokens has exceeded your per-minute rate limit" {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestOverloadedAndServerErrors(t *testing.T) {
	t.Run("529 then success", func(t *testing.T) {
		srv := fakeapi.New(t,
			fakeapi.Response{Status: 529, Body: overloaded},
			fakeapi.Response{Status: 529, Body: overloaded},
			fakeapi.Response{Body: textReply},
		)
		p := newProvider(t, srv, nil)
		if _, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
	t.Run("529 forever", func(t *testing.T) {
		srv := fakeapi.New(t, fakeapi.Response{Status: 529, Body: overloaded})
		p := newProvider(t, srv, nil)
		_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
		if err == nil || err.Error() != "anthropic: overloaded (529) after 3 retries: Overloaded" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("503 forever", func(t *testing.T) {
		srv := fakeapi.New(t, fakeapi.Response{Status: 503, Body: unavailable})
		p := newProvider(t, srv, nil)
		_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
		if err == nil || err.Error() != "anthropic: API error 503 after 3 retries: Service unavailable" {
			t.Fatalf("err = %v", err)
		}
		if n := len(srv.Requests()); n != 4 {
			t.Errorf("%d requests, want 4", n)
		}
	})
	t.Run("x-should-retry false", func(t *testing.T) {
		srv := fakeapi.New(t, fakeapi.Response{Status: 500, Header: map[string]string{"X-Should-Retry": "false"}, Body: unavailable})
		p := newProvider(t, srv, nil)
		_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
		if err == nil || err.Error() != "anthropic: API error 500: Service unavailable" {
			t.Fatalf("err = %v", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("non-JSON body", func(t *testing.T) {
		srv := fakeapi.New(t, fakeapi.Response{Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>Bad Gateway</html>"})
		p := newProvider(t, srv, func(o *anthropic.Options) { o.MaxRetries = -1 })
		_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
		if err == nil || err.Error() != "anthropic: API error 502: <html>Bad Gateway</html>" {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRetryAfterTooLong(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Status: 429, Header: map[string]string{"Retry-After": "3600"}, Body: rateLimited})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if err == nil || !strings.HasPrefix(err.Error(), "anthropic: rate limited (429): Number of request tokens") || !strings.Contains(err.Error(), "asked to wait 1h0m0s") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestContextCancelledMidRequest(t *testing.T) {
	fakeapi.CheckCancelMidRequest(t, "anthropic", func(srv *fakeapi.Server) fakeapi.Complete {
		return newProvider(t, srv, nil).Complete
	})
}

func TestContextCancelledWhileWaitingToRetry(t *testing.T) {
	err := fakeapi.CancelWhileRetrying(t, rateLimited, func(srv *fakeapi.Server) fakeapi.Complete {
		return newProvider(t, srv, func(o *anthropic.Options) { o.RetryBaseDelay = time.Hour }).Complete
	})
	want := "anthropic: context canceled while waiting to retry; last answer: rate limited (429): Number of request tokens has exceeded your per-minute rate limit"
	if err.Error() != want {
		t.Errorf("err = %q\nwant %q", err, want)
	}
}

func TestDeadlineBeforeRetry(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Status: 429, Body: rateLimited})
	p := newProvider(t, srv, func(o *anthropic.Options) { o.RetryBaseDelay = time.Hour })
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := p.Complete(c, agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if err == nil || !strings.Contains(err.Error(), "rate limited (429)") || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s: should give up at once when the deadline comes first", d)
	}
}

func TestMissingAPIKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	_, err := anthropic.New("claude-sonnet-4-5", nil)
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("err = %v, want it to name ANTHROPIC_API_KEY", err)
	}
}

func TestAPIKeyFromEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	p, err := anthropic.New("claude-sonnet-4-5", &anthropic.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-ant-from-env" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestMissingModel(t *testing.T) {
	_, err := anthropic.New("", &anthropic.Options{APIKey: testKey})
	if err == nil || !strings.Contains(err.Error(), "model is required") {
		t.Fatalf("err = %v", err)
	}
}

func TestAPIKeyNotInErrors(t *testing.T) {
	body := `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + testKey + `"}}`
	srv := fakeapi.New(t, fakeapi.Response{Status: 401, Body: body})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Fatalf("err = %v", err)
	}
	if err.Error() != "anthropic: API error 401: invalid x-api-key [redacted]" {
		t.Errorf("err = %q", err)
	}
}

func TestInvalidToolInputFromAPI(t *testing.T) {
	reply := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
	  "content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":"path=notes.txt"},{"type":"tool_use","id":"toolu_2","name":"list_dir","input":{}}],
	  "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
	srv := fakeapi.New(t, fakeapi.Response{Body: reply})
	p := newProvider(t, srv, nil)
	resp, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
	if got := string(resp.ToolCalls[0].Args); got != `{"_invalid_arguments":"\"path=notes.txt\""}` {
		t.Errorf("args = %s", got)
	}
	if got := string(resp.ToolCalls[1].Args); got != `{}` {
		t.Errorf("args = %s", got)
	}
}

func TestRequestMappingErrors(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	fakeapi.CheckInvalidRequests(t, srv, "anthropic", newProvider(t, srv, nil).Complete)
}

func TestToolDefaultsAndEmptyArgs(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.Response{Body: textReply})
	p := newProvider(t, srv, nil)
	_, err := p.Complete(fakeapi.Context(t), fakeapi.Defaults("toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	fakeapi.AssertJSON(t, srv.Requests()[0], `{
	  "model":"claude-sonnet-4-5","max_tokens":1024,
	  "messages":[
	    {"role":"user","content":[{"type":"text","text":"x"}]},
	    {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"now","input":{}}]},
	    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true}]}
	  ],
	  "tools":[{"name":"now","input_schema":{"type":"object"}}]
	}`)
}

func TestOddErrorBodies(t *testing.T) {
	for name, tc := range map[string]struct {
		status      int
		contentType string
		body        string
		want        string
	}{
		"error string": {400, "application/json", `{"error":"bad thing"}`, "anthropic: API error 400: bad thing"},
		"empty":        {404, "text/plain", "", "anthropic: API error 404: Not Found"},
		"long text":    {400, "text/plain", strings.Repeat("x", 400), "anthropic: API error 400: " + strings.Repeat("x", 300) + "..."},
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeapi.New(t, fakeapi.Response{Status: tc.status, Header: map[string]string{"Content-Type": tc.contentType}, Body: tc.body})
			p := newProvider(t, srv, nil)
			_, err := p.Complete(fakeapi.Context(t), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
			var apiErr *anthropic.APIError
			if err == nil || err.Error() != tc.want || !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Errorf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}
