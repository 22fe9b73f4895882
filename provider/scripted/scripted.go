package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/wardenhq/warden/agent"
)

// ErrNoReply is wrapped by the error a [Provider] returns once its script is used up.
var ErrNoReply = errors.New("scripted provider: no reply left")

// Provider answers from a script. Build it with [New] or [Func].
type Provider struct {
	fn func(agent.ModelRequest) (agent.ModelResponse, error) // nil: replies

	mu       sync.Mutex
	replies  []agent.ModelResponse
	next     int
	requests []agent.ModelRequest
}

var _ agent.Provider = (*Provider)(nil)

// New returns a provider that answers call i with replies[i].
func New(replies ...agent.ModelResponse) *Provider {
	p := &Provider{replies: make([]agent.ModelResponse, len(replies))}
	for i, r := range replies {
		p.replies[i] = cloneResponse(r)
	}
	return p
}

// Func returns a provider that answers every call with fn(request). fn gets a copy of
// the request; an error it returns is returned by Complete as it is. It panics if fn is
// nil.
func Func(fn func(agent.ModelRequest) (agent.ModelResponse, error)) *Provider {
	if fn == nil {
		panic("scripted.Func: nil function")
	}
	return &Provider{fn: fn}
}

// Complete records req and returns the next reply.
func (p *Provider) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return agent.ModelResponse{}, err
	}
	p.mu.Lock()
	p.requests = append(p.requests, cloneRequest(req))
	if p.fn != nil {
		p.mu.Unlock()
		resp, err := p.fn(cloneRequest(req))
		if err != nil {
			return agent.ModelResponse{}, err
		}
		return cloneResponse(resp), nil
	}
	defer p.mu.Unlock()
	if p.next >= len(p.replies) {
		n := len(p.replies)
		return agent.ModelResponse{}, fmt.Errorf("%w (%d %s scripted, call %d)", ErrNoReply, n, plural(n, "reply", "replies"), len(p.requests))
	}
	resp := cloneResponse(p.replies[p.next])
	p.next++
	return resp, nil
}

// Requests returns copies of every request received so far, oldest first.
func (p *Provider) Requests() []agent.ModelRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]agent.ModelRequest, len(p.requests))
	for i, r := range p.requests {
		out[i] = cloneRequest(r)
	}
	return out
}

// Remaining returns how many scripted replies are left (0 for a [Func] provider).
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.replies) - p.next
}

// Text returns a reply that answers with text and calls no tool (stop reason "end_turn").
func Text(s string) agent.ModelResponse {
	return agent.ModelResponse{Text: s, StopReason: "end_turn"}
}

// ToolCall is one tool call of a scripted reply. Args is the JSON object the model
// "wrote"; empty means {}.
type ToolCall struct {
	ID   string
	Name string
	Args string
}

// Call returns a reply that calls one tool (stop reason "tool_use"). It panics if
// argsJSON is not valid JSON.
func Call(id, name, argsJSON string) agent.ModelResponse {
	return Calls(ToolCall{ID: id, Name: name, Args: argsJSON})
}

// Calls returns a reply that calls several tools in one turn, in order (stop reason
// "tool_use"). It panics if any Args is not valid JSON.
func Calls(calls ...ToolCall) agent.ModelResponse {
	resp := agent.ModelResponse{StopReason: "tool_use", ToolCalls: make([]agent.ToolCall, 0, len(calls))}
	for _, c := range calls {
		args := []byte(c.Args)
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte(`{}`)
		}
		if !json.Valid(args) {
			panic(fmt.Sprintf("scripted: tool call %q (%s): args are not valid JSON: %s", c.ID, c.Name, c.Args))
		}
		resp.ToolCalls = append(resp.ToolCalls, agent.ToolCall{ID: c.ID, Name: c.Name, Args: json.RawMessage(args)})
	}
	return resp
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(bytes.Clone(b))
}

func cloneCalls(calls []agent.ToolCall) []agent.ToolCall {
	if calls == nil {
		return nil
	}
	out := make([]agent.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = agent.ToolCall{ID: c.ID, Name: c.Name, Args: cloneRaw(c.Args)}
	}
	return out
}

func cloneRequest(r agent.ModelRequest) agent.ModelRequest {
	out := agent.ModelRequest{System: r.System, MaxTokens: r.MaxTokens}
	if r.Messages != nil {
		out.Messages = make([]agent.Message, len(r.Messages))
		for i, m := range r.Messages {
			out.Messages[i] = agent.Message{
				Role:        m.Role,
				Text:        m.Text,
				ToolCalls:   cloneCalls(m.ToolCalls),
				ToolResults: slices.Clone(m.ToolResults),
			}
		}
	}
	if r.Tools != nil {
		out.Tools = make([]agent.ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			out.Tools[i] = agent.ToolSpec{Name: t.Name, Description: t.Description, InputSchema: cloneRaw(t.InputSchema)}
		}
	}
	return out
}

func cloneResponse(r agent.ModelResponse) agent.ModelResponse {
	r.ToolCalls = cloneCalls(r.ToolCalls)
	return r
}
