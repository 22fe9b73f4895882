package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/schema"
)

// scripted is a deterministic in-test provider: it answers with its turns in order and
// records every request (deep-copied) it was given.
type scripted struct {
	mu    sync.Mutex
	turns []agent.ModelResponse
	errs  map[int]error // by request index
	reqs  []agent.ModelRequest
	hook  func(i int) // called before answering request i
}

func script(turns ...agent.ModelResponse) *scripted { return &scripted{turns: turns} }

func (s *scripted) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return agent.ModelResponse{}, err
	}
	var cp agent.ModelRequest
	if err := json.Unmarshal(b, &cp); err != nil {
		return agent.ModelResponse{}, err
	}
	s.mu.Lock()
	i := len(s.reqs)
	s.reqs = append(s.reqs, cp)
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(i)
	}
	if err := ctx.Err(); err != nil {
		return agent.ModelResponse{}, err
	}
	if e := s.errs[i]; e != nil {
		return agent.ModelResponse{}, e
	}
	if i >= len(s.turns) {
		return agent.ModelResponse{}, fmt.Errorf("script exhausted at request %d", i)
	}
	return s.turns[i], nil
}

func (s *scripted) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func (s *scripted) request(t *testing.T, i int) agent.ModelRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.reqs) {
		t.Fatalf("the model was called %d times; no request %d", len(s.reqs), i)
	}
	return s.reqs[i]
}

// read returns the tool results the model read in request i (its last message).
func (s *scripted) read(t *testing.T, i int) []agent.ToolResult {
	t.Helper()
	req := s.request(t, i)
	last := req.Messages[len(req.Messages)-1]
	if last.Role != agent.RoleUser {
		t.Fatalf("request %d ends with a %s message", i, last.Role)
	}
	return last.ToolResults
}

func say(text string) agent.ModelResponse {
	return agent.ModelResponse{Text: text, StopReason: "end_turn"}
}

func use(calls ...agent.ToolCall) agent.ModelResponse {
	return agent.ModelResponse{ToolCalls: calls, StopReason: "tool_use"}
}

func tc(id, name, args string) agent.ToolCall {
	return agent.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

// probe counts the runs of the tools it builds and records their arguments.
type probe struct {
	mu   sync.Mutex
	runs []run
}

type run struct {
	tool string
	args string
}

func (p *probe) tool(name, schemaJSON string, caps ...warden.Capability) warden.Executable {
	var s json.RawMessage
	if schemaJSON != "" {
		s = json.RawMessage(schemaJSON)
	}
	return warden.Executable{
		Tool: warden.Tool{Name: name, Description: "the " + name + " tool", InputSchema: s, Capabilities: caps},
		Run: func(_ context.Context, args warden.Args, _ *warden.Credential) (any, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.runs = append(p.runs, run{name, string(args.AppendJSON(nil))})
			return "ok: " + name, nil
		},
	}
}

func (p *probe) count(tool string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.runs {
		if tool == "" || r.tool == tool {
			n++
		}
	}
	return n
}

func (p *probe) all() []run {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]run(nil), p.runs...)
}

// bind registers tools and binds them (the standard schema compiler unless set).
func bind(t *testing.T, cfg warden.Config, tools ...warden.Executable) *warden.Guard {
	t.Helper()
	var r warden.Registry
	for _, x := range tools {
		if err := r.Register(x); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Schemas == nil {
		cfg.Schemas = schema.Compiler{}
	}
	g, err := r.Bind(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newAgent(t *testing.T, p agent.Provider, g *warden.Guard, opts *agent.Options) *agent.Agent {
	t.Helper()
	a, err := agent.New(p, g, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func roles(t *testing.T, m map[string][]string, active string, rules *policy.RoleRules) *policy.RolePolicy {
	t.Helper()
	p, err := policy.FromRoles(m, active, rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// named is a checker with a name and an explicit governs set.
type named struct {
	name    string
	governs []warden.Capability
	check   func(ctx context.Context, req warden.Request) (warden.Decision, error)
}

func (c *named) Name() string { return c.name }

func (c *named) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	return c.check(ctx, req)
}

func (c *named) Governs(cap warden.Capability) bool {
	for _, g := range c.governs {
		if g == cap {
			return true
		}
	}
	return false
}

func asError[T error](t *testing.T, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("error %v (%T) is not a %T", err, err, target)
	}
	return target
}

func toolNames(req agent.ModelRequest) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}

func statuses(res agent.Result) []warden.Status {
	var out []warden.Status
	for _, c := range res.Calls {
		out = append(out, c.Status)
	}
	return out
}
