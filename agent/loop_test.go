package agent_test

// The loop itself: system prompt, visibility, iteration limit, invalid arguments, the
// executed sequence, cancellation, provider errors and configuration errors.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/directives"
)

func TestSystemPrompt(t *testing.T) {
	block := directives.Render(directives.RolePromptDirectives{Authority: []string{"Answer questions."}, Escalations: []string{"Legal threats."}})
	tests := []struct {
		name, instructions, directives, want string
	}{
		{"both", "You are a support agent.", block, "You are a support agent.\n\n" + block},
		{"instructions only", "You are a support agent.", "", "You are a support agent."},
		{"directives only", "", block, block},
		{"neither", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			g := bind(t, warden.Config{Ungoverned: true}, p.tool("lookup", ""))
			sc := script(use(tc("c", "lookup", `{}`)), say("ok"))
			a := newAgent(t, sc, g, &agent.Options{Instructions: tt.instructions, Directives: tt.directives})
			if _, err := a.Run(context.Background(), "hi"); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if got := sc.request(t, i).System; got != tt.want {
					t.Errorf("request %d system %q, want %q", i, got, tt.want)
				}
			}
		})
	}
}

// The model is offered only the tools the policy lets this role see; a call to one it
// was not offered still reaches the Guard, which refuses it.
func TestVisibility(t *testing.T) {
	pol := roles(t, map[string][]string{"support": {"lookup", "reply"}}, "support", nil)
	var p probe
	g := bind(t, warden.Config{Checkers: []warden.Checker{pol}}, p.tool("lookup", ""), p.tool("delete_customer", ""), p.tool("reply", ""))

	t.Run("filtered and checked", func(t *testing.T) {
		sc := script(use(tc("c1", "delete_customer", `{"id":1}`)), say("I cannot delete customers."))
		res, err := newAgent(t, sc, g, &agent.Options{Visible: pol.IsAllowed}).Run(context.Background(), "delete customer 1")
		if err != nil {
			t.Fatal(err)
		}
		if names := toolNames(sc.request(t, 0)); !slices.Equal(names, []string{"lookup", "reply"}) {
			t.Errorf("offered %v", names)
		}
		if c := res.Calls[0]; c.Executed || c.ModelText != "[permission denied: Tool 'delete_customer' is not in the 'support' role allowlist.]" || c.RuleID != "support.allowlist.miss" {
			t.Errorf("call %+v", c)
		}
		if p.count("delete_customer") != 0 {
			t.Error("delete_customer ran")
		}
	})
	// The governance page: "the same allowlist can shape what the model sees and what
	// is permitted to run, with no second source of truth."
	t.Run("nil Visible offers what the Guard's checkers allow", func(t *testing.T) {
		sc := script(use(tc("c1", "delete_customer", `{"id":1}`)), say("I cannot delete customers."))
		res, err := newAgent(t, sc, g, nil).Run(context.Background(), "x")
		if err != nil {
			t.Fatal(err)
		}
		if names := toolNames(sc.request(t, 0)); !slices.Equal(names, []string{"lookup", "reply"}) {
			t.Errorf("offered %v", names)
		}
		if c := res.Calls[0]; c.Executed || c.RuleID != "support.allowlist.miss" {
			t.Errorf("call %+v", c)
		}
	})
	t.Run("Visible overrides the Guard's checkers", func(t *testing.T) {
		sc := script(use(tc("c1", "delete_customer", `{"id":1}`)), say("ok"))
		res, err := newAgent(t, sc, g, &agent.Options{Visible: func(string) bool { return true }}).Run(context.Background(), "x")
		if err != nil {
			t.Fatal(err)
		}
		if names := toolNames(sc.request(t, 0)); !slices.Equal(names, []string{"lookup", "delete_customer", "reply"}) {
			t.Errorf("offered %v", names)
		}
		// Offered is not permitted: the Guard still refuses.
		if c := res.Calls[0]; c.Executed || c.RuleID != "support.allowlist.miss" || p.count("delete_customer") != 0 {
			t.Errorf("call %+v", c)
		}
	})
	t.Run("a checker that cannot answer visibility offers every bound tool", func(t *testing.T) {
		var asked int
		var mu sync.Mutex
		calls := warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) {
			mu.Lock()
			asked++
			mu.Unlock()
			return warden.Decision{Effect: warden.Allow}, nil
		})
		var q probe
		g2 := bind(t, warden.Config{Checkers: []warden.Checker{calls}}, q.tool("lookup", ""), q.tool("reply", ""))
		sc := script(say("ok"))
		if _, err := newAgent(t, sc, g2, nil).Run(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		if names := toolNames(sc.request(t, 0)); !slices.Equal(names, []string{"lookup", "reply"}) {
			t.Errorf("offered %v", names)
		}
		mu.Lock()
		defer mu.Unlock()
		if asked != 0 {
			t.Errorf("the checker was asked %d times to build the offer; it judges calls only", asked)
		}
	})
	t.Run("a panicking Visible hides the tool", func(t *testing.T) {
		sc := script(say("ok"))
		vis := func(tool string) bool {
			if tool == "reply" {
				panic("boom")
			}
			return true
		}
		if _, err := newAgent(t, sc, g, &agent.Options{Visible: vis}).Run(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		if names := toolNames(sc.request(t, 0)); !slices.Equal(names, []string{"lookup", "delete_customer"}) {
			t.Errorf("offered %v", names)
		}
	})
	t.Run("specs carry description and schema", func(t *testing.T) {
		sc := script(say("ok"))
		var q probe
		g2 := bind(t, warden.Config{Ungoverned: true}, q.tool("note", noteSchema), q.tool("bare", ""))
		if _, err := newAgent(t, sc, g2, nil).Run(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		tools := sc.request(t, 0).Tools
		if tools[0].Description != "the note tool" || string(tools[0].InputSchema) != noteSchema {
			t.Errorf("note spec %+v", tools[0])
		}
		if string(tools[1].InputSchema) != `{"type":"object","properties":{}}` {
			t.Errorf("bare spec %s", tools[1].InputSchema)
		}
	})
}

func TestMaxIterations(t *testing.T) {
	tests := []struct {
		max, want int
	}{{1, 1}, {3, 3}, {0, agent.DefaultMaxIterations}}
	for _, tt := range tests {
		var p probe
		g := bind(t, warden.Config{Ungoverned: true}, p.tool("lookup", ""))
		turns := make([]agent.ModelResponse, 20)
		for i := range turns {
			turns[i] = use(tc("", "lookup", `{}`))
		}
		sc := script(turns...)
		res, err := newAgent(t, sc, g, &agent.Options{MaxIterations: tt.max}).Run(context.Background(), "loop forever")
		if err != nil {
			t.Fatal(err)
		}
		if res.Stopped != agent.StopMaxIterations || res.Answer != "" || res.Iterations != tt.want || sc.calls() != tt.want || p.count("") != tt.want {
			t.Errorf("max %d: stopped %q answer %q iterations %d model calls %d runs %d", tt.max, res.Stopped, res.Answer, res.Iterations, sc.calls(), p.count(""))
		}
		if res.Executed() != tt.want || len(res.Calls) != tt.want {
			t.Errorf("max %d: calls %d executed %d", tt.max, len(res.Calls), res.Executed())
		}
	}
	if _, err := agent.New(script(), bind(t, warden.Config{Ungoverned: true}), &agent.Options{MaxIterations: -1}); err == nil {
		t.Error("negative MaxIterations accepted")
	}
}

// Arguments that are not a JSON object are refused as data, never executed, and a
// valid sibling in the same turn still runs.
func TestInvalidToolCallJSON(t *testing.T) {
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("save_note", noteSchema))
	tests := []struct {
		name, args string
	}{
		{"truncated", `{"note":`},
		{"not an object", `["note"]`},
		{"duplicate key", `{"note":"a","note":"b"}`},
		{"null", `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := script(use(tc("bad", "save_note", tt.args), tc("good", "save_note", `{"note":"ok"}`)), say("done"))
			before := p.count("")
			res, err := newAgent(t, sc, g, nil).Run(context.Background(), "note")
			if err != nil {
				t.Fatal(err)
			}
			bad := res.Calls[0]
			if bad.Executed || bad.Status != warden.StatusRefused || bad.Stage != warden.StageValidation || !bad.IsError || bad.RawArgs != tt.args {
				t.Errorf("bad call %+v", bad)
			}
			if !strings.HasPrefix(bad.ModelText, "Invalid arguments for tool 'save_note' — the call was not executed.\n- '$': ") ||
				!strings.HasSuffix(bad.ModelText, "\nFix the arguments to match the tool's input schema and call it again.") {
				t.Errorf("model text %q", bad.ModelText)
			}
			if !res.Calls[1].Executed || p.count("")-before != 1 {
				t.Errorf("the valid sibling did not run once: %+v", res.Calls[1])
			}
			read := sc.read(t, 1)
			if len(read) != 2 || read[0].CallID != "bad" || !read[0].IsError || read[1].Content != "ok: save_note" {
				t.Errorf("the model read %+v", read)
			}
		})
	}
	// An empty argument string is a call without arguments.
	var q probe
	g2 := bind(t, warden.Config{Ungoverned: true}, q.tool("ping", ""))
	sc := script(use(agent.ToolCall{ID: "p", Name: "ping"}), say("pong"))
	res, err := newAgent(t, sc, g2, nil).Run(context.Background(), "ping")
	if err != nil || !res.Calls[0].Executed {
		t.Errorf("empty args: %+v %v", res.Calls, err)
	}
}

// Every call carries the calls executed before it (refused ones are not in it), the
// iteration, the identity and the session.
func TestCallsCarrySequenceAndIdentity(t *testing.T) {
	type seen struct {
		tool      string
		seq       []string
		iteration int
		principal string
	}
	var mu sync.Mutex
	var got []seen
	checker := &named{name: "spy", check: func(_ context.Context, req warden.Request) (warden.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		s := seen{tool: req.Target, iteration: req.Iteration, principal: req.Identity.Principal}
		for _, st := range req.Sequence {
			s.seq = append(s.seq, st.Tool)
		}
		got = append(got, s)
		if req.Target == "refused" {
			return warden.Decision{Effect: warden.Deny, Rationale: "no"}, nil
		}
		return warden.Decision{Effect: warden.Allow}, nil
	}}
	var p probe
	var sessions []string
	rec := warden.SinkFunc(func(_ context.Context, e warden.Event) {
		if e.Name == warden.EventToolEnd {
			mu.Lock()
			sessions = append(sessions, e.Session)
			mu.Unlock()
		}
	})
	g := bind(t, warden.Config{Checkers: []warden.Checker{checker}, Sinks: []warden.Sink{rec}}, p.tool("a", ""), p.tool("refused", ""), p.tool("b", ""))
	sc := script(use(tc("1", "a", `{}`), tc("2", "refused", `{}`)), use(tc("3", "b", `{}`)), say("done"))
	var observed []string
	a := newAgent(t, sc, g, &agent.Options{Identity: warden.Identity{Principal: "alice"}, Session: "s-1",
		OnCall: func(_ context.Context, r agent.CallRecord) { observed = append(observed, r.ID+":"+string(r.Status)) }})
	res, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{"a", nil, 1, "alice"},
		{"refused", []string{"a"}, 1, "alice"},
		{"b", []string{"a"}, 2, "alice"},
	}
	if len(got) != len(want) {
		t.Fatalf("checks %+v", got)
	}
	for i := range want {
		if got[i].tool != want[i].tool || !slices.Equal(got[i].seq, want[i].seq) || got[i].iteration != want[i].iteration || got[i].principal != want[i].principal {
			t.Errorf("check %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if seq := res.Sequence(); len(seq) != 2 || seq[0].Tool != "a" || seq[1].Tool != "b" {
		t.Errorf("sequence %+v", seq)
	}
	if !slices.Equal(sessions, []string{"s-1", "s-1", "s-1"}) {
		t.Errorf("sessions %v", sessions)
	}
	if !slices.Equal(observed, []string{"1:ran", "2:refused", "3:ran"}) {
		t.Errorf("observed %v", observed)
	}
	executed := []bool{}
	for _, c := range res.Calls {
		executed = append(executed, c.Executed)
	}
	if !slices.Equal(executed, []bool{true, false, true}) {
		t.Errorf("executed flags %v", executed)
	}
	if d := res.Calls[1].Decision; d == nil || d.Effect != warden.Deny || d.Rationale != "no" {
		t.Errorf("refused decision %+v", d)
	}
	if res.Calls[0].Decision != nil {
		t.Error("a call that ran carries a refusal decision")
	}
}

// Tool calls without ids get ids, so every tool result pairs with its call.
func TestMissingCallIDsAreFilled(t *testing.T) {
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("a", ""))
	sc := script(use(tc("", "a", `{}`), tc("", "a", `{}`)), say("ok"))
	res, err := newAgent(t, sc, g, nil).Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	turn := res.Messages[1].ToolCalls
	results := res.Messages[2].ToolResults
	if turn[0].ID == "" || turn[0].ID == turn[1].ID || results[0].CallID != turn[0].ID || results[1].CallID != turn[1].ID {
		t.Errorf("turn %+v results %+v", turn, results)
	}
}

func TestCancellation(t *testing.T) {
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("a", ""))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sc := script(say("never"))
	if _, err := newAgent(t, sc, g, nil).Run(ctx, "x"); !errors.Is(err, context.Canceled) || sc.calls() != 0 {
		t.Errorf("cancelled before the run: err %v, model calls %d", err, sc.calls())
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	sc = script(use(tc("1", "a", `{}`)), say("never"))
	sc.hook = func(i int) {
		if i == 1 {
			cancel()
		}
	}
	res, err := newAgent(t, sc, g, nil).Run(ctx, "x")
	if !errors.Is(err, context.Canceled) || res.Executed() != 1 || res.Stopped != "" {
		t.Errorf("cancelled during the model call: err %v, result %+v", err, res)
	}
}

func TestProviderError(t *testing.T) {
	g := bind(t, warden.Config{Ungoverned: true})
	sc := script()
	sc.errs = map[int]error{0: errors.New("rate limited: retries exhausted")}
	_, err := newAgent(t, sc, g, nil).Run(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "rate limited") || !strings.Contains(err.Error(), "iteration 1") {
		t.Errorf("err %v", err)
	}
}

func TestNew_OptionErrors(t *testing.T) {
	g := bind(t, warden.Config{Ungoverned: true})
	tests := []struct {
		name     string
		provider agent.Provider
		guard    *warden.Guard
		opts     *agent.Options
		want     string
	}{
		{"no provider", nil, g, nil, "Provider is required"},
		{"no guard", script(), nil, nil, "Guard is required"},
		{"negative iterations", script(), g, &agent.Options{MaxIterations: -2}, "MaxIterations"},
		{"negative tokens", script(), g, &agent.Options{MaxTokens: -1}, "MaxTokens"},
		{"negative skill timeout", script(), g, &agent.Options{SkillCheckTimeout: -1}, "SkillCheckTimeout"},
		{"nil middleware", script(), g, &agent.Options{MessageMiddleware: []*warden.Middleware{nil}}, "no name"},
		{"unnamed middleware", script(), g, &agent.Options{MessageMiddleware: []*warden.Middleware{{}}}, "no name"},
		{"message middleware without OnMessage", script(), g, &agent.Options{MessageMiddleware: []*warden.Middleware{{Name: "audit", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.AllowCall() }}}}, `"audit" (0) has no OnMessage`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := agent.New(tt.provider, tt.guard, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := newAgent(t, script(), g, nil).Run(context.Background(), "  "); err == nil {
		t.Error("an empty task was accepted")
	}
}

// The result is JSON-encodable for audit and the CLI.
func TestResultJSON(t *testing.T) {
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("a", ""))
	sc := script(use(tc("1", "a", `{"x":1}`)), say("ok"))
	res, err := newAgent(t, sc, g, &agent.Options{MaxTokens: 64}).Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if sc.request(t, 0).MaxTokens != 64 {
		t.Error("MaxTokens not passed on")
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back agent.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Answer != "ok" || len(back.Calls) != 1 || !back.Calls[0].Executed || string(back.Calls[0].Args.AppendJSON(nil)) != `{"x":1}` {
		t.Errorf("round trip %+v", back)
	}
}

// providerFunc adapts a function to a Provider.
type providerFunc func(ctx context.Context, req agent.ModelRequest) (agent.ModelResponse, error)

func (f providerFunc) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelResponse, error) {
	return f(ctx, req)
}

// One Agent serves concurrent runs: each has its own state.
func TestConcurrentRuns(t *testing.T) {
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("echo", ""))
	prov := providerFunc(func(_ context.Context, req agent.ModelRequest) (agent.ModelResponse, error) {
		last := req.Messages[len(req.Messages)-1]
		if len(last.ToolResults) > 0 {
			return say("done: " + req.Messages[0].Text), nil
		}
		return use(tc("c", "echo", `{"task":"`+last.Text+`"}`)), nil
	})
	a := newAgent(t, prov, g, nil)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	answers := make([]string, 16)
	for i := range 16 {
		wg.Go(func() {
			res, err := a.Run(context.Background(), "task-"+string(rune('a'+i)))
			errs[i], answers[i] = err, res.Answer
		})
	}
	wg.Wait()
	for i := range 16 {
		if errs[i] != nil || answers[i] != "done: task-"+string(rune('a'+i)) {
			t.Errorf("run %d: %q %v", i, answers[i], errs[i])
		}
	}
	if p.count("echo") != 16 {
		t.Errorf("ran %d", p.count("echo"))
	}
}
