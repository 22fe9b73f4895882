package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/scripted"
)

func req(text string) agent.ModelRequest {
	return agent.ModelRequest{
		System:   "be careful",
		Messages: []agent.Message{{Role: agent.RoleUser, Text: text}},
		Tools:    []agent.ToolSpec{{Name: "read_file", InputSchema: json.RawMessage(`{"type":"object"}`)}},
	}
}

func TestRepliesInOrderThenExhausted(t *testing.T) {
	p := scripted.New(
		scripted.Call("c1", "read_file", `{"path":"a.txt","mode":"r"}`),
		scripted.Text("done"),
	)
	ctx := context.Background()

	r1, err := p.Complete(ctx, req("one"))
	if err != nil {
		t.Fatal(err)
	}
	want := agent.ModelResponse{
		StopReason: "tool_use",
		ToolCalls:  []agent.ToolCall{{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt","mode":"r"}`)}},
	}
	if diff := cmp.Diff(want, r1); diff != "" {
		t.Errorf("reply 1 (-want +got):\n%s", diff)
	}
	r2, err := p.Complete(ctx, req("two"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.ModelResponse{Text: "done", StopReason: "end_turn"}, r2); diff != "" {
		t.Errorf("reply 2 (-want +got):\n%s", diff)
	}
	if p.Remaining() != 0 {
		t.Errorf("Remaining = %d", p.Remaining())
	}

	_, err = p.Complete(ctx, req("three"))
	if err == nil || err.Error() != "scripted provider: no reply left (2 replies scripted, call 3)" {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, scripted.ErrNoReply) {
		t.Error("error does not wrap ErrNoReply")
	}
	_, err = p.Complete(ctx, req("four"))
	if err == nil || err.Error() != "scripted provider: no reply left (2 replies scripted, call 4)" {
		t.Fatalf("err = %v", err)
	}
	if got := len(p.Requests()); got != 4 {
		t.Errorf("%d requests recorded, want 4", got)
	}
}

func TestEmptyScript(t *testing.T) {
	_, err := scripted.New().Complete(context.Background(), req("x"))
	if err == nil || err.Error() != "scripted provider: no reply left (0 replies scripted, call 1)" {
		t.Fatalf("err = %v", err)
	}
	_, err = scripted.New(scripted.Text("a")).Complete(context.Background(), req("x"))
	if err != nil {
		t.Fatal(err)
	}
}

func TestSingularMessage(t *testing.T) {
	p := scripted.New(scripted.Text("a"))
	_, _ = p.Complete(context.Background(), req("x"))
	_, err := p.Complete(context.Background(), req("x"))
	if err == nil || err.Error() != "scripted provider: no reply left (1 reply scripted, call 2)" {
		t.Fatalf("err = %v", err)
	}
}

func TestRequestsAreDeepCopies(t *testing.T) {
	p := scripted.New(scripted.Text("a"), scripted.Text("b"))
	// request builds the same request afresh each time: once to send, once to compare.
	request := func() agent.ModelRequest {
		return agent.ModelRequest{
			System: "sys",
			Messages: []agent.Message{
				{Role: agent.RoleUser, Text: "hi"},
				{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "t", Args: json.RawMessage(`{"a":1}`)}}},
				{Role: agent.RoleUser, ToolResults: []agent.ToolResult{{CallID: "c1", Content: "denied", IsError: true}}},
			},
			Tools:     []agent.ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			MaxTokens: 9,
		}
	}
	r := request()
	if _, err := p.Complete(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	// The caller reuses and modifies its request afterwards.
	r.Messages[1].ToolCalls[0].Args[2] = 'X'
	r.Messages[2].ToolResults[0].Content = "changed"
	r.Tools[0].InputSchema[2] = 'X'
	r.Messages = append(r.Messages, agent.Message{Role: agent.RoleUser, Text: "more"})

	got := p.Requests()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	want := request()
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("recorded request changed (-want +got):\n%s", diff)
	}
	// Modifying what Requests returned does not change the record either.
	got[0].Messages[1].ToolCalls[0].Args[2] = 'Y'
	got[0].System = "other"
	if diff := cmp.Diff(want, p.Requests()[0]); diff != "" {
		t.Errorf("record changed through Requests (-want +got):\n%s", diff)
	}
}

func TestRepliesAreCopies(t *testing.T) {
	reply := scripted.Call("c1", "t", `{"a":1}`)
	p := scripted.New(reply, reply)
	r1, _ := p.Complete(context.Background(), req("x"))
	r1.ToolCalls[0].Args[2] = 'X'    // the agent modifies what it got
	reply.ToolCalls[0].Args[2] = 'Y' // the test modifies its script value
	r2, _ := p.Complete(context.Background(), req("x"))
	if got := string(r2.ToolCalls[0].Args); got != `{"a":1}` {
		t.Errorf("second reply args = %s", got)
	}
}

func TestCalls(t *testing.T) {
	r := scripted.Calls(
		scripted.ToolCall{ID: "c1", Name: "search", Args: `{"q":"x"}`},
		scripted.ToolCall{ID: "c2", Name: "now"},
	)
	want := agent.ModelResponse{StopReason: "tool_use", ToolCalls: []agent.ToolCall{
		{ID: "c1", Name: "search", Args: json.RawMessage(`{"q":"x"}`)},
		{ID: "c2", Name: "now", Args: json.RawMessage(`{}`)},
	}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestInvalidArgsPanic(t *testing.T) {
	defer func() {
		v := recover()
		if v == nil || !strings.Contains(fmt.Sprint(v), "not valid JSON") {
			t.Errorf("recover() = %v", v)
		}
	}()
	scripted.Call("c1", "t", `{"a":`)
}

func TestFunc(t *testing.T) {
	p := scripted.Func(func(r agent.ModelRequest) (agent.ModelResponse, error) {
		last := r.Messages[len(r.Messages)-1]
		if len(last.ToolResults) > 0 {
			return scripted.Text("saw: " + last.ToolResults[0].Content), nil
		}
		if last.Text == "fail" {
			return agent.ModelResponse{}, errors.New("model down")
		}
		return scripted.Call("c1", "read_file", `{"path":"a"}`), nil
	})
	ctx := context.Background()
	r, err := p.Complete(ctx, req("go"))
	if err != nil || len(r.ToolCalls) != 1 {
		t.Fatalf("r = %+v, err = %v", r, err)
	}
	r, err = p.Complete(ctx, agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, ToolResults: []agent.ToolResult{{CallID: "c1", Content: "hello"}}}}})
	if err != nil || r.Text != "saw: hello" {
		t.Fatalf("r = %+v, err = %v", r, err)
	}
	if _, err := p.Complete(ctx, req("fail")); err == nil || err.Error() != "model down" {
		t.Fatalf("err = %v", err)
	}
	if n := len(p.Requests()); n != 3 {
		t.Errorf("%d requests recorded", n)
	}
}

func TestFuncCanInspectRequests(t *testing.T) {
	var p *scripted.Provider
	p = scripted.Func(func(agent.ModelRequest) (agent.ModelResponse, error) {
		return scripted.Text(fmt.Sprint(len(p.Requests()))), nil // no deadlock
	})
	r, err := p.Complete(context.Background(), req("x"))
	if err != nil || r.Text != "1" {
		t.Fatalf("r = %+v, err = %v", r, err)
	}
}

func TestFuncNilPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	scripted.Func(nil)
}

func TestContextDone(t *testing.T) {
	p := scripted.New(scripted.Text("a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Complete(ctx, req("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if p.Remaining() != 1 || len(p.Requests()) != 0 {
		t.Errorf("a cancelled call consumed a reply or was recorded")
	}
}

func TestConcurrentUse(t *testing.T) {
	const n = 50
	replies := make([]agent.ModelResponse, n)
	for i := range replies {
		replies[i] = scripted.Text(fmt.Sprint(i))
	}
	p := scripted.New(replies...)
	var wg sync.WaitGroup
	seen := make(chan string, n+10)
	for range n + 10 {
		wg.Go(func() {
			r, err := p.Complete(context.Background(), req("x"))
			if err == nil {
				seen <- r.Text
			}
			_ = p.Requests()
		})
	}
	wg.Wait()
	close(seen)
	got := map[string]bool{}
	for s := range seen {
		if got[s] {
			t.Errorf("reply %s given twice", s)
		}
		got[s] = true
	}
	if len(got) != n || len(p.Requests()) != n+10 {
		t.Errorf("%d distinct replies, %d requests", len(got), len(p.Requests()))
	}
}

// A script drives the agent's provider interface.
var _ agent.Provider = scripted.New()
