package fakeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/agent"
)

// Complete is a provider's Complete method.
type Complete func(context.Context, agent.ModelRequest) (agent.ModelResponse, error)

// invalidRequests are requests every provider refuses before it sends anything, each
// with a part of the error it must return.
var invalidRequests = map[string]struct {
	req  agent.ModelRequest
	want string
}{
	"unknown role":      {agent.ModelRequest{Messages: []agent.Message{{Role: "system", Text: "x"}}}, `message 0: unknown role "system"`},
	"unknown role tool": {agent.ModelRequest{Messages: []agent.Message{{Role: "tool", Text: "x"}}}, `message 0: unknown role "tool"`},
	"empty user":        {agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser}}}, "message 0: empty user turn"},
	"empty assistant": {agent.ModelRequest{Messages: []agent.Message{
		{Role: agent.RoleUser, Text: "x"}, {Role: agent.RoleAssistant},
	}}, "message 1: empty assistant turn"},
	"results on assistant": {agent.ModelRequest{Messages: []agent.Message{
		{Role: agent.RoleAssistant, ToolResults: []agent.ToolResult{{CallID: "a"}}},
	}}, "message 0: an assistant turn cannot carry tool results"},
	"calls on user": {agent.ModelRequest{Messages: []agent.Message{
		{Role: agent.RoleUser, ToolCalls: []agent.ToolCall{{ID: "a", Name: "b"}}},
	}}, "message 0: a user turn cannot carry tool calls"},
	"args an array": {agent.ModelRequest{Messages: []agent.Message{
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "a", Name: "b", Args: json.RawMessage(`[1]`)}}},
	}}, `tool call "a" (b): args are not a JSON object`},
	"args a string": {agent.ModelRequest{Messages: []agent.Message{
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "a", Name: "b", Args: json.RawMessage(`"x"`)}}},
	}}, `tool call "a" (b): args are not a JSON object`},
	"result without id": {agent.ModelRequest{Messages: []agent.Message{
		{Role: agent.RoleUser, ToolResults: []agent.ToolResult{{Content: "x"}}},
	}}, "tool result without a call id"},
	"schema a string": {agent.ModelRequest{
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "x"}},
		Tools:    []agent.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`"string"`)}},
	}, `tool "t": input schema is not a JSON object`},
	"schema an array": {agent.ModelRequest{
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "x"}},
		Tools:    []agent.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`[]`)}},
	}, `tool "t": input schema is not a JSON object`},
	"tool without name": {agent.ModelRequest{
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "x"}},
		Tools:    []agent.ToolSpec{{}},
	}, "a tool without a name"},
}

// CheckInvalidRequests checks that complete, a provider talking to srv, refuses every
// malformed request with an error that starts with "<provider>: " and says what is
// wrong, and sends none of them.
func CheckInvalidRequests(t *testing.T, srv *Server, provider string, complete Complete) {
	t.Helper()
	for name, tc := range invalidRequests {
		t.Run(name, func(t *testing.T) {
			_, err := complete(Context(t), tc.req)
			if err == nil || !strings.HasPrefix(err.Error(), provider+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for invalid requests", n)
	}
}

// CheckCancelMidRequest checks that a context canceled while the request is at the
// server ends Complete at once with an error that wraps context.Canceled and starts
// with "<provider>: ", after one request. connect returns the Complete of a provider
// talking to the server it is given.
func CheckCancelMidRequest(t *testing.T, provider string, connect func(*Server) Complete) {
	t.Helper()
	arrived := make(chan struct{})
	srv := New(t, Response{Handler: func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}})
	complete := connect(srv)
	c, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	start := time.Now()
	_, err := complete(c, agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !strings.HasPrefix(err.Error(), provider+": ") {
		t.Errorf("err = %q, want the provider's prefix", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// FirstTurn is the first request of the providers' multi-turn tests: a system prompt,
// one question and two tools, one with a strict input schema.
func FirstTurn() agent.ModelRequest {
	return agent.ModelRequest{
		System:   "You are careful.",
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "What is in notes.txt?"}},
		Tools: []agent.ToolSpec{
			{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"encoding":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
			{Name: "list_dir", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
	}
}

// Defaults is a request that leaves everything optional out: a tool without a schema,
// a call (named callID) without arguments and an error result without content.
func Defaults(callID string) agent.ModelRequest {
	return agent.ModelRequest{
		Messages: []agent.Message{
			{Role: agent.RoleUser, Text: "x"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: callID, Name: "now"}}},
			{Role: agent.RoleUser, ToolResults: []agent.ToolResult{{CallID: callID, IsError: true}}},
		},
		Tools: []agent.ToolSpec{{Name: "now"}},
	}
}

// CancelWhileRetrying returns the error of a Complete whose context is canceled while it
// waits to retry a 429 answer with body rateLimited, after checking that the error wraps
// context.Canceled. connect returns the Complete of a provider, talking to the server it
// is given, whose first backoff is long (an hour).
func CancelWhileRetrying(t *testing.T, rateLimited string, connect func(*Server) Complete) error {
	t.Helper()
	srv := New(t, Response{Status: 429, Body: rateLimited})
	complete := connect(srv)
	c, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := complete(c, agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	return err
}
