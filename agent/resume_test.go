package agent_test

// Ask, pause and resume: the checkpoint is JSON, resumes in a new Agent and Guard built
// from scratch, and the Guard judges the pending call again.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
)

const refundSchema = `{"type":"object","properties":{"amount":{"type":"number"},"currency":{"type":"string"}},"required":["amount"],"additionalProperties":false}`

// world is one process's worth of setup: a fresh registry, tools, policy, middleware,
// Guard and Agent, built from nothing but the arguments.
type world struct {
	probe *probe
	sc    *scripted
	agent *agent.Agent
	rec   *warden.Recorder
}

type worldOpts struct {
	allow    []string // the support role's tools
	revision string
	asks     []string // ask middleware names, in order, after the currency transform
	turns    []agent.ModelResponse
}

func newWorld(t *testing.T, o worldOpts) *world {
	t.Helper()
	if o.allow == nil {
		o.allow = []string{"refund", "lookup"}
	}
	if o.asks == nil {
		o.asks = []string{"approve-big-refunds"}
	}
	w := &world{probe: &probe{}, sc: script(o.turns...), rec: &warden.Recorder{}}
	mw := []*warden.Middleware{{
		Name:  "add-currency",
		Tools: []string{"refund"},
		OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
			if _, ok := c.Args.Get("currency"); ok {
				return warden.AllowCall()
			}
			return warden.TransformCall(c.Args.With("currency", "EUR"), "refunds are in the account currency")
		},
	}}
	for _, name := range o.asks {
		mw = append(mw, &warden.Middleware{
			Name:  name,
			Tools: []string{"refund"},
			OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
				v, _ := c.Args.Get("amount")
				n, _ := strconv.ParseFloat(string(v.(json.Number)), 64)
				if n > 1000 {
					return warden.AskPerson(name+": refund over 1000?", "amount "+string(v.(json.Number)))
				}
				return warden.AllowCall()
			},
		})
	}
	pol := roles(t, map[string][]string{"support": o.allow}, "support", nil)
	g := bind(t, warden.Config{Checkers: []warden.Checker{pol}, Middleware: mw, CanPause: true, Revision: o.revision, Sinks: []warden.Sink{w.rec}},
		w.probe.tool("refund", refundSchema), w.probe.tool("lookup", ""))
	w.agent = newAgent(t, w.sc, g, &agent.Options{Visible: pol.IsAllowed, Session: "run-1", Identity: warden.Identity{Principal: "agent-7"}, CheckpointKey: testKey})
	return w
}

// pause runs a world to its pause and returns the checkpoint.
func pause(t *testing.T, turns ...agent.ModelResponse) (*world, agent.Result) {
	t.Helper()
	w := newWorld(t, worldOpts{revision: "rev-1", turns: turns})
	res, err := w.agent.Run(context.Background(), "refund order 42")
	if err != nil {
		t.Fatal(err)
	}
	if res.Paused == nil || res.Stopped != agent.StopPaused {
		t.Fatalf("not paused: %+v", res)
	}
	return w, res
}

func TestAsk_PausesAndResumesInAFreshWorld(t *testing.T) {
	w1, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	if w1.probe.count("") != 0 {
		t.Fatal("the tool ran before anybody decided")
	}
	if !json.Valid(res.Paused.Checkpoint) {
		t.Fatalf("checkpoint is not JSON: %s", res.Paused.Checkpoint)
	}
	pd := res.Paused.Pending
	if pd.Kind != warden.KindAsk || pd.Middleware != "approve-big-refunds" || pd.Tool != "refund" || pd.CallID != "r1" ||
		string(pd.Args.AppendJSON(nil)) != `{"amount":1500,"currency":"EUR"}` || pd.Revision != "rev-1" {
		t.Errorf("pending %+v", pd)
	}
	if got := statuses(res); !slices.Equal(got, []warden.Status{warden.StatusPending}) || res.Calls[0].Executed {
		t.Errorf("calls %+v", res.Calls)
	}
	// The checkpoint is self-describing JSON: a sealed document whose body holds the
	// history, the pending call, ledger, iteration, policy revision, executed sequence.
	var env map[string]json.RawMessage
	if err := json.Unmarshal(res.Paused.Checkpoint, &env); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "key_id", "mac", "body"} {
		if _, ok := env[k]; !ok {
			t.Errorf("checkpoint has no %q: %s", k, res.Paused.Checkpoint)
		}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(env["body"], &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "messages", "pending_call", "pending", "iteration", "revision"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("checkpoint has no %q: %s", k, res.Paused.Checkpoint)
		}
	}

	// A new process: nothing shared with w1 but the checkpoint bytes.
	cp := append([]byte(nil), res.Paused.Checkpoint...)
	w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("Refunded 1500 EUR.")}})
	res2, err := w2.agent.Resume(context.Background(), cp, warden.Approved{By: "demo-operator", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	if got := w2.probe.all(); len(got) != 1 || got[0] != (run{"refund", `{"amount":1500,"currency":"EUR"}`}) {
		t.Errorf("runs %+v, want one refund with the transformed args", got)
	}
	if w1.probe.count("") != 0 {
		t.Error("the first world ran something")
	}
	if res2.Answer != "Refunded 1500 EUR." || res2.Stopped != agent.StopAnswer || res2.Iterations != 2 {
		t.Errorf("answer %q stopped %q iterations %d", res2.Answer, res2.Stopped, res2.Iterations)
	}
	if len(res2.Calls) != 1 || !res2.Calls[0].Executed || res2.Calls[0].ApprovedBy != "demo-operator" || res2.Calls[0].Status != warden.StatusRan {
		t.Errorf("calls %+v", res2.Calls)
	}
	if read := w2.sc.read(t, 0); len(read) != 1 || read[0] != (agent.ToolResult{CallID: "r1", Content: "ok: refund"}) {
		t.Errorf("the model read %+v", read)
	}
	if r := res2.Resumed; r == nil || r.RevisionChanged || r.CheckpointRevision != "rev-1" || r.Revision != "rev-1" {
		t.Errorf("resumed %+v", r)
	}
	// The conversation is continuous: task, paused turn, results, answer.
	roles := []string{}
	for _, m := range res2.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"user", "assistant", "user", "assistant"}) || res2.Messages[0].Text != "refund order 42" {
		t.Errorf("messages %+v", res2.Messages)
	}
	if evs := w2.rec.Named(warden.EventDecisionMade); len(evs) != 1 || evs[0].By != "demo-operator" || !evs[0].Approved {
		t.Errorf("decision events %+v", evs)
	}
}

// A pause in the middle of a turn: the calls before it already ran, the calls after it
// run on resume, and the model reads every result in order.
func TestAsk_MidTurn(t *testing.T) {
	w1, res := pause(t, use(tc("a", "lookup", `{"order":42}`), tc("b", "refund", `{"amount":1500}`), tc("c", "lookup", `{"order":43}`)))
	if got := w1.probe.all(); len(got) != 1 || got[0].tool != "lookup" {
		t.Fatalf("before the pause ran %+v", got)
	}
	if got := statuses(res); !slices.Equal(got, []warden.Status{warden.StatusRan, warden.StatusPending}) {
		t.Errorf("statuses %v", got)
	}
	w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("done")}})
	var seen []string
	res2, err := w2.agent.Resume(context.Background(), res.Paused.Checkpoint, &warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range w2.probe.all() {
		seen = append(seen, r.tool+r.args)
	}
	if !slices.Equal(seen, []string{`refund{"amount":1500,"currency":"EUR"}`, `lookup{"order":43}`}) {
		t.Errorf("after resume ran %v", seen)
	}
	read := w2.sc.read(t, 0)
	ids := []string{}
	for _, r := range read {
		ids = append(ids, r.CallID+"="+r.Content)
	}
	if !slices.Equal(ids, []string{"a=ok: lookup", "b=ok: refund", "c=ok: lookup"}) {
		t.Errorf("the model read %v", ids)
	}
	if got := statuses(res2); !slices.Equal(got, []warden.Status{warden.StatusRan, warden.StatusRan, warden.StatusRan}) {
		t.Errorf("statuses %v", got)
	}
	if seq := res2.Sequence(); len(seq) != 3 {
		t.Errorf("sequence %+v", seq)
	}
}

func TestResume_Declined(t *testing.T) {
	tests := []struct {
		note string
		want string
	}{
		{"not this one", "declined by human: not this one"},
		{"", "declined by human"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
			w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("The refund was declined.")}})
			res2, err := w2.agent.Resume(context.Background(), res.Paused.Checkpoint, warden.Declined{By: "op", Note: tt.note})
			if err != nil {
				t.Fatal(err)
			}
			if w2.probe.count("") != 0 {
				t.Error("a declined call ran")
			}
			if read := w2.sc.read(t, 0); len(read) != 1 || read[0].Content != tt.want || !read[0].IsError {
				t.Errorf("the model read %+v", read)
			}
			if res2.Answer != "The refund was declined." || res2.Calls[0].Executed || res2.Calls[0].Stage != warden.StageHuman {
				t.Errorf("result %+v", res2)
			}
		})
	}
}

func TestResume_RequiresADecision(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("ok")}})
	for _, answer := range []warden.Answer{nil, (*warden.Approved)(nil), (*warden.Declined)(nil)} {
		got, err := w2.agent.Resume(context.Background(), res.Paused.Checkpoint, answer)
		asError[*warden.DecisionRequiredError](t, err)
		if w2.probe.count("") != 0 || w2.sc.calls() != 0 || len(got.Calls) != 0 {
			t.Fatalf("something ran for answer %#v", answer)
		}
	}
	// The same checkpoint still resumes.
	res2, err := w2.agent.Resume(context.Background(), res.Paused.Checkpoint, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	if w2.probe.count("refund") != 1 || res2.Answer != "ok" {
		t.Errorf("after a real decision: runs %d, answer %q", w2.probe.count("refund"), res2.Answer)
	}
}

// The policy changed between pause and resume: the call is judged again under the new
// one, and the result says the revision changed.
func TestResume_PolicyChangedMeanwhile(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	w2 := newWorld(t, worldOpts{revision: "rev-2", allow: []string{"lookup"}, turns: []agent.ModelResponse{say("I may not refund.")}})
	res2, err := w2.agent.Resume(context.Background(), res.Paused.Checkpoint, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	if w2.probe.count("") != 0 {
		t.Error("the approved call ran although the new policy refuses it")
	}
	want := "[permission denied: Tool 'refund' is not in the 'support' role allowlist.]"
	if c := res2.Calls[0]; c.ModelText != want || c.Executed || c.Revision != "rev-2" || c.RuleID != "support.allowlist.miss" {
		t.Errorf("call %+v", c)
	}
	if r := res2.Resumed; r == nil || !r.RevisionChanged || r.CheckpointRevision != "rev-1" || r.Revision != "rev-2" {
		t.Errorf("resumed %+v", r)
	}
	// The tool is no longer offered either.
	if names := toolNames(w2.sc.request(t, 0)); slices.Contains(names, "refund") {
		t.Errorf("offered %v", names)
	}
}

// REFERENCE section 7: "When several links ask, one pending decision carries every
// question (in link order, each with its middleware name); one approval answers all of
// them for that call."
func TestResume_SeveralAsksAreOneApproval(t *testing.T) {
	w1 := newWorld(t, worldOpts{revision: "r", asks: []string{"first-ask", "second-ask"}, turns: []agent.ModelResponse{use(tc("r1", "refund", `{"amount":2000}`))}})
	res, err := w1.agent.Run(context.Background(), "refund")
	if err != nil || res.Paused == nil || res.Paused.Pending.Middleware != "first-ask" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if asks := res.Paused.Pending.Asks; len(asks) != 2 || asks[0].Middleware != "first-ask" || asks[1].Middleware != "second-ask" {
		t.Errorf("asks %+v, want first-ask then second-ask", asks)
	}
	w2 := newWorld(t, worldOpts{revision: "r", asks: []string{"first-ask", "second-ask"}, turns: []agent.ModelResponse{say("done")}})
	res2, err := w2.agent.Resume(context.Background(), res.Paused.Checkpoint, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	if c := res2.Calls[0]; !c.Executed || c.Status != warden.StatusRan || c.ApprovedBy != "op" || res2.Paused != nil {
		t.Errorf("call %+v paused %v", c, res2.Paused)
	}
	if n := w2.probe.count(""); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

func TestResume_MalformedCheckpoint(t *testing.T) {
	_, res := pause(t, use(tc("a", "lookup", `{}`), tc("r1", "refund", `{"amount":1500}`)))
	good := res.Paused.Checkpoint
	// Each edit is sealed again under the key, as a writer holding the key could: the
	// content checks hold on their own.
	edit := func(f func(m map[string]any)) []byte {
		return reseal(t, good, testKey, f)
	}
	tests := []struct {
		name string
		cp   []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"not JSON", []byte("{"), "malformed"},
		{"a list", []byte("[]"), "malformed"},
		{"trailing data", append(append([]byte(nil), good...), []byte(" {}")...), "after the object"},
		{"unknown field", edit(func(m map[string]any) { m["approved"] = true }), "unknown field"},
		{"wrong format", edit(func(m map[string]any) { m["format"] = "v0" }), "format"},
		{"no pending", edit(func(m map[string]any) { delete(m, "pending") }), "no pending decision"},
		{"pending call mismatch", edit(func(m map[string]any) { m["pending_call"].(map[string]any)["id"] = "zz" }), "does not match"},
		{"no iteration", edit(func(m map[string]any) { m["iteration"] = 0 }), "iteration"},
		{"turn does not add up", edit(func(m map[string]any) { delete(m, "results") }), "accounts for"},
		{"history without the turn", edit(func(m map[string]any) { m["messages"] = m["messages"].([]any)[:1] }), "paused model turn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("x")}})
			_, err := w2.agent.Resume(context.Background(), tt.cp, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
			if !errors.Is(err, agent.ErrMalformedCheckpoint) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want ErrMalformedCheckpoint mentioning %q", err, tt.want)
			}
			if w2.probe.count("") != 0 || w2.sc.calls() != 0 {
				t.Error("something ran")
			}
		})
	}
	// Arguments edited in storage: the Guard refuses the altered decision; nothing runs.
	altered := edit(func(m map[string]any) {
		m["pending"].(map[string]any)["args"] = map[string]any{"amount": 1, "currency": "EUR"}
	})
	w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("x")}})
	if _, err := w2.agent.Resume(context.Background(), altered, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()}); err == nil || !strings.Contains(err.Error(), "altered") {
		t.Errorf("altered decision: %v", err)
	}
	if w2.probe.count("") != 0 || w2.sc.calls() != 0 {
		t.Error("something ran for an altered decision")
	}
}

// A resumed run keeps the iteration count: the limit covers the whole run.
func TestResume_IterationLimitCoversTheWholeRun(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{use(tc("x", "lookup", `{}`)), use(tc("y", "lookup", `{}`))}})
	a, err := agent.New(w2.sc, guardOf(t, w2), &agent.Options{MaxIterations: 2, CheckpointKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := a.Resume(context.Background(), res.Paused.Checkpoint, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Stopped != agent.StopMaxIterations || res2.Iterations != 2 || w2.sc.calls() != 1 {
		t.Errorf("stopped %q iterations %d model calls %d", res2.Stopped, res2.Iterations, w2.sc.calls())
	}
}

// guardOf rebuilds a world's guard for a differently configured agent.
func guardOf(t *testing.T, w *world) *warden.Guard {
	t.Helper()
	pol := roles(t, map[string][]string{"support": {"refund", "lookup"}}, "support", nil)
	return bind(t, warden.Config{Checkers: []warden.Checker{pol}, CanPause: true, Revision: "rev-1"}, w.probe.tool("refund", refundSchema), w.probe.tool("lookup", ""))
}

// A halt while resuming: the resumed call's refusal, "not run" for the rest of the
// turn, and the halt error with the sequence executed before the pause.
func TestResume_HaltDuringResume(t *testing.T) {
	_, res := pause(t, use(tc("a", "lookup", `{}`), tc("r1", "refund", `{"amount":1500}`), tc("c", "lookup", `{}`)))
	var p probe
	halter := &named{name: "freeze", check: func(_ context.Context, req warden.Request) (warden.Decision, error) {
		if req.Target == "refund" {
			return warden.Decision{Effect: warden.Halt, RuleID: "freeze", Reason: "ops:freeze"}, nil
		}
		return warden.Decision{Effect: warden.Allow}, nil
	}}
	g := bind(t, warden.Config{Checkers: []warden.Checker{halter}, CanPause: true}, p.tool("refund", refundSchema), p.tool("lookup", ""))
	sc := script(say("unreachable"))
	res2, err := newAgent(t, sc, g, &agent.Options{CheckpointKey: testKey}).Resume(context.Background(), res.Paused.Checkpoint, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	h := asError[*warden.PolicyHaltError](t, err)
	if len(h.Sequence) != 1 || h.Sequence[0].Tool != "lookup" || h.Reason != "ops:freeze" {
		t.Errorf("halt %+v", h)
	}
	if p.count("") != 0 || sc.calls() != 0 {
		t.Errorf("ran %d, model calls %d", p.count(""), sc.calls())
	}
	last := res2.Messages[len(res2.Messages)-1]
	if len(last.ToolResults) != 3 || last.ToolResults[0].Content != "ok: lookup" || last.ToolResults[2].Content != agent.NotRunText {
		t.Errorf("last message %+v", last)
	}
	if got := statuses(res2); !slices.Equal(got, []warden.Status{warden.StatusRan, warden.StatusHalted, agent.StatusNotRun}) {
		t.Errorf("statuses %v", got)
	}
}

// A remaining call whose arguments are not JSON survives the checkpoint and is refused
// on resume exactly as it would have been; a remaining call without arguments runs.
func TestResume_RemainingCallsKeepTheirRawArguments(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`), tc("x", "lookup", `{"order":`), agent.ToolCall{ID: "y", Name: "lookup"}))
	if !json.Valid(res.Paused.Checkpoint) {
		t.Fatal("checkpoint is not JSON")
	}
	w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("ok")}})
	res2, err := w2.agent.Resume(context.Background(), res.Paused.Checkpoint, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(res2); !slices.Equal(got, []warden.Status{warden.StatusRan, warden.StatusRefused, warden.StatusRan}) {
		t.Errorf("statuses %v", got)
	}
	if c := res2.Calls[1]; c.RawArgs != `{"order":` || c.Executed || !strings.HasPrefix(c.ModelText, "Invalid arguments for tool 'lookup'") {
		t.Errorf("invalid call %+v", c)
	}
	if w2.probe.count("lookup") != 1 || w2.probe.count("refund") != 1 {
		t.Errorf("runs %+v", w2.probe.all())
	}
	// The conversation shows the unparseable call with no arguments, so it stays valid
	// for every provider.
	if got := string(res2.Messages[1].ToolCalls[1].Args); got != "{}" {
		t.Errorf("history args %s", got)
	}
}
