package agent_test

// Message middleware: "input" over each new user text before the model is called,
// "output" over the model's text. A deny ends the run with *MessageDeniedError carrying
// phase, middleware and reason, never the content.

import (
	"context"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
)

const secret = "sk-live-1234567890"

func messageGuard(phase string) *warden.Middleware {
	return &warden.Middleware{Name: "secret-scanner", OnMessage: func(_ context.Context, m warden.Message) warden.MessageOutcome {
		if m.Phase == phase && strings.Contains(m.Text, "sk-live-") {
			return warden.DenyMessage("the message contains a live API key")
		}
		return warden.KeepMessage()
	}}
}

func TestMessageMiddleware_InputDeny(t *testing.T) {
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("a", ""))
	sc := script(say("never"))
	a := newAgent(t, sc, g, &agent.Options{MessageMiddleware: []*warden.Middleware{messageGuard("input")}})
	res, err := a.Run(context.Background(), "use the key "+secret)
	md := asError[*warden.MessageDeniedError](t, err)
	if md.Phase != "input" || md.Middleware != "secret-scanner" || md.Reason != "the message contains a live API key" {
		t.Errorf("error %+v", md)
	}
	if strings.Contains(err.Error(), secret) {
		t.Error("the error carries the content")
	}
	if sc.calls() != 0 {
		t.Errorf("the model was called %d times", sc.calls())
	}
	if res.Stopped != agent.StopMessageDenied || res.Iterations != 0 {
		t.Errorf("stopped %q iterations %d", res.Stopped, res.Iterations)
	}
	if len(res.MessageLedger) != 1 || res.MessageLedger[0].Outcome != "deny" || res.MessageLedger[0].Moment != "input" {
		t.Errorf("ledger %+v", res.MessageLedger)
	}
}

func TestMessageMiddleware_OutputDeny(t *testing.T) {
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("a", ""))
	// The model leaks the key in the same turn as a tool call: the turn is denied
	// before any of its calls runs.
	sc := script(agent.ModelResponse{Text: "here it is: " + secret, ToolCalls: []agent.ToolCall{tc("1", "a", `{}`)}})
	a := newAgent(t, sc, g, &agent.Options{MessageMiddleware: []*warden.Middleware{messageGuard("output")}})
	res, err := a.Run(context.Background(), "what is the key?")
	md := asError[*warden.MessageDeniedError](t, err)
	if md.Phase != "output" || md.Middleware != "secret-scanner" || md.Reason != "the message contains a live API key" {
		t.Errorf("error %+v", md)
	}
	if strings.Contains(err.Error(), secret) {
		t.Error("the error carries the content")
	}
	if p.count("") != 0 || len(res.Calls) != 0 {
		t.Error("a call of the denied turn ran")
	}
	for _, m := range res.Messages {
		if strings.Contains(m.Text, secret) {
			t.Error("the denied output is in the conversation")
		}
	}
	if res.Stopped != agent.StopMessageDenied || res.Answer != "" || sc.calls() != 1 {
		t.Errorf("stopped %q answer %q model calls %d", res.Stopped, res.Answer, sc.calls())
	}
}

func TestMessageMiddleware_Rewrite(t *testing.T) {
	redact := &warden.Middleware{Name: "redactor", OnMessage: func(_ context.Context, m warden.Message) warden.MessageOutcome {
		if strings.Contains(m.Text, secret) {
			return warden.RewriteMessage(strings.ReplaceAll(m.Text, secret, "[key]"), "redact API keys")
		}
		return warden.KeepMessage()
	}}
	var phases []string
	spy := &warden.Middleware{Name: "spy", OnMessage: func(_ context.Context, m warden.Message) warden.MessageOutcome {
		phases = append(phases, m.Phase)
		return warden.KeepMessage()
	}}
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("a", ""))
	sc := script(use(tc("1", "a", `{}`)), say("your key is "+secret))
	res, err := newAgent(t, sc, g, &agent.Options{MessageMiddleware: []*warden.Middleware{redact, spy}}).Run(context.Background(), "store "+secret)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.request(t, 0).Messages[0].Text; got != "store [key]" {
		t.Errorf("the model read the task as %q", got)
	}
	if res.Answer != "your key is [key]" {
		t.Errorf("answer %q", res.Answer)
	}
	// input once (the task; tool results are not user text), output once (the turn
	// with only tool calls has no text).
	if strings.Join(phases, ",") != "input,output" {
		t.Errorf("phases %v", phases)
	}
	var changed int
	for _, r := range res.MessageLedger {
		if r.Changed {
			changed++
			if r.Why != "redact API keys" {
				t.Errorf("row %+v", r)
			}
		}
	}
	if changed != 2 {
		t.Errorf("ledger %+v", res.MessageLedger)
	}
}

func TestMessageMiddleware_PanicDenies(t *testing.T) {
	broken := &warden.Middleware{Name: "broken", OnMessage: func(context.Context, warden.Message) warden.MessageOutcome { panic("nil map") }}
	g := bind(t, warden.Config{Ungoverned: true})
	sc := script(say("x"))
	_, err := newAgent(t, sc, g, &agent.Options{MessageMiddleware: []*warden.Middleware{broken}}).Run(context.Background(), "x")
	md := asError[*warden.MessageDeniedError](t, err)
	if md.Middleware != "broken" || !strings.HasPrefix(md.Reason, "middleware 'broken' threw: ") || sc.calls() != 0 {
		t.Errorf("error %+v, model calls %d", md, sc.calls())
	}
}
