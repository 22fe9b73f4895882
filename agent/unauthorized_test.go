package agent_test

// A fault refusal is final for the run. The governance page: "The fail-closed refusal
// reads as terminal (9.4.0) ... The refusal now says it will not change during this
// run." Issue 13: "after a fault refusal the same tool is refused for the rest of the
// run without asking the checker again, so the text is true."

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/policy"
)

// flaky is an authorizer that fails on its first question about one target and then
// recovers, counting every question by target.
type flaky struct {
	target string
	fail   func(ctx context.Context) (warden.Decision, error)
	skills bool

	mu    sync.Mutex
	asked map[string]int
}

func (f *flaky) Name() string { return "authorizer" }
func (f *flaky) Governs(c warden.Capability) bool {
	return f.skills && c == warden.CapSkillRead
}
func (f *flaky) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	f.mu.Lock()
	if f.asked == nil {
		f.asked = map[string]int{}
	}
	f.asked[req.Target]++
	first := f.asked[req.Target] == 1
	f.mu.Unlock()
	if req.Target == f.target && first {
		return f.fail(ctx)
	}
	return warden.Decision{Effect: warden.Allow, RuleID: "ok"}, nil
}
func (f *flaky) count(target string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[target]
}

func TestUnauthorized_FaultIsFinalForTheRun(t *testing.T) {
	faults := []struct {
		name string
		fail func(ctx context.Context) (warden.Decision, error)
	}{
		{"error", func(context.Context) (warden.Decision, error) {
			return warden.Decision{}, errors.New("ECONNREFUSED authz.internal:443")
		}},
		{"panic", func(context.Context) (warden.Decision, error) { panic("authz client: nil pointer") }},
		{"no answer in time", func(ctx context.Context) (warden.Decision, error) {
			<-ctx.Done() // answers only after the deadline: too late to count
			return warden.Decision{Effect: warden.Allow}, nil
		}},
		{"its own fault denial", func(context.Context) (warden.Decision, error) {
			return warden.Decision{Effect: warden.Deny, RuleID: "cond", Rationale: "permission-checker threw: condition did not finish", TellLLM: warden.UnauthorizedText("lookup"), Fault: true}, nil
		}},
	}
	for _, tt := range faults {
		t.Run(tt.name, func(t *testing.T) {
			f := &flaky{target: "lookup", fail: tt.fail}
			var p probe
			g := bind(t, warden.Config{Checkers: []warden.Checker{f}, CheckTimeout: 20 * time.Millisecond}, p.tool("lookup", ""), p.tool("reply", ""))
			sc := script(
				use(tc("c1", "lookup", `{"q":"order 7"}`)),
				use(tc("c2", "lookup", `{"q":"order 7"}`), tc("c3", "reply", `{}`)),
				use(tc("c4", "lookup", `{"q":"order 8"}`)),
				say("I could not look the order up."))
			res, err := newAgent(t, sc, g, nil).Run(context.Background(), "where is order 7?")
			if err != nil {
				t.Fatal(err)
			}
			want := "[permission denied: Tool 'lookup' could not be authorized. This will not change during this run — do not call it again. Continue without it, or say what you are unable to do.]"
			for _, i := range []int{0, 1, 3} {
				c := res.Calls[i]
				if c.Executed || c.Status != warden.StatusRefused || c.ModelText != want || c.Stage != warden.StagePermission {
					t.Errorf("call %s: %+v", c.ID, c)
				}
			}
			// The authorizer recovered after its first answer, and was never asked again.
			if n := f.count("lookup"); n != 1 {
				t.Errorf("the authorizer was asked about lookup %d times, want 1", n)
			}
			if p.count("lookup") != 0 {
				t.Error("lookup ran")
			}
			// Other tools are unaffected.
			if c := res.Calls[2]; !c.Executed || f.count("reply") != 1 {
				t.Errorf("reply: %+v", c)
			}
			// Nor is lookup offered again: the model was told not to call it.
			if names := toolNames(sc.request(t, 0)); !slices.Equal(names, []string{"lookup", "reply"}) {
				t.Errorf("iteration 1 offered %v", names)
			}
			for i := 1; i < 4; i++ {
				if names := toolNames(sc.request(t, i)); !slices.Equal(names, []string{"reply"}) {
					t.Errorf("iteration %d offered %v", i+1, names)
				}
			}
			if r := res.Calls[1].Decision; r == nil || !r.Fault || r.RuleID != "checker.fault" {
				t.Errorf("the repeated refusal's decision %+v", r)
			}
		})
	}
}

// The skill gate's fault is final too, for that skill: "Tool 'skill:payroll' could not
// be authorized" stays true, the skill leaves the menu without being asked about again,
// and the other skills are unaffected.
func TestUnauthorized_SkillGateFault(t *testing.T) {
	cat := newCatalogue()
	f := &flaky{skills: true}
	f.target = "skill:payroll"
	f.fail = func(context.Context) (warden.Decision, error) {
		return warden.Decision{}, errors.New("skills-svc down")
	}
	// The menu asks first (allow); the fault is the gate's, the second question.
	menuFirst := &flakyAfter{flaky: f, after: 1}
	pol := roles(t, map[string][]string{"support": {"read_skill"}}, "support", nil)
	g := bind(t, warden.Config{Checkers: []warden.Checker{pol, menuFirst}}, agent.ReadSkillTool(cat.skills))
	sc := script(
		use(tc("s1", "read_skill", `{"id":"payroll"}`)),
		use(tc("s2", "read_skill", `{"id":"payroll"}`), tc("s3", "read_skill", `{"id":"refunds"}`)),
		say("done"))
	res, err := newAgent(t, sc, g, &agent.Options{Skills: cat.skills}).Run(context.Background(), "pay the staff")
	if err != nil {
		t.Fatal(err)
	}
	want := warden.UnauthorizedText("skill:payroll")
	for _, c := range res.Calls[:2] {
		if c.Executed || c.ModelText != want || c.Stage != warden.StageSkill {
			t.Errorf("call %s: %+v", c.ID, c)
		}
	}
	if c := res.Calls[2]; !c.Executed || c.ModelText != "BODY OF refunds" {
		t.Errorf("refunds: %+v", c)
	}
	if n := f.count("skill:payroll"); n != 2 {
		t.Errorf("asked about payroll %d times, want 2 (the first menu, the failing gate)", n)
	}
	if cat.bodies["payroll"].Load() != 0 {
		t.Error("the payroll body was computed")
	}
	if d := readSkillSpec(t, sc.request(t, 0)).Description; !strings.Contains(d, "- payroll: ") {
		t.Errorf("iteration 1 menu:\n%s", d)
	}
	for i := 1; i < 3; i++ {
		if d := readSkillSpec(t, sc.request(t, i)).Description; strings.Contains(d, "payroll") || !strings.Contains(d, "- refunds: ") {
			t.Errorf("iteration %d menu:\n%s", i+1, d)
		}
	}
}

// flakyAfter fails the question numbered after+1 about the flaky target, instead of
// the first.
type flakyAfter struct {
	*flaky
	after int
}

func (f *flakyAfter) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	f.mu.Lock()
	if f.asked == nil {
		f.asked = map[string]int{}
	}
	f.asked[req.Target]++
	n := f.asked[req.Target]
	f.mu.Unlock()
	if req.Target == f.target && n == f.after+1 {
		return f.fail(ctx)
	}
	return warden.Decision{Effect: warden.Allow, RuleID: "ok"}, nil
}

// Pause and resume do not end the run: what faulted before the pause stays refused
// after it, in another Agent and Guard built from nothing but the checkpoint.
func TestUnauthorized_SurvivesPauseAndResume(t *testing.T) {
	build := func(f *flaky, turns ...agent.ModelResponse) (*agent.Agent, *scripted, *probe) {
		var p probe
		ask := &warden.Middleware{Name: "approve-refunds", Tools: []string{"refund"}, OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
			return warden.AskPerson("refund?", "")
		}}
		g := bind(t, warden.Config{Checkers: []warden.Checker{f}, Middleware: []*warden.Middleware{ask}, CanPause: true}, p.tool("lookup", ""), p.tool("refund", ""))
		sc := script(turns...)
		return newAgent(t, sc, g, &agent.Options{Session: "run-1", CheckpointKey: testKey}), sc, &p
	}
	fail := func(context.Context) (warden.Decision, error) { return warden.Decision{}, errors.New("authz down") }
	f1 := &flaky{target: "lookup", fail: fail}
	a1, _, _ := build(f1, use(tc("c1", "lookup", `{}`)), use(tc("c2", "refund", `{}`)))
	res, err := a1.Run(context.Background(), "refund order 7")
	if err != nil || res.Paused == nil {
		t.Fatalf("not paused: %v %+v", err, res)
	}
	_, doc := envelopeOf(t, res.Paused.Checkpoint)
	if got, _ := json.Marshal(doc["unauthorized"]); string(got) != `["lookup"]` {
		t.Errorf("checkpoint unauthorized %s", got)
	}

	// A second process whose authorizer never fails: it is still not asked about lookup.
	f2 := &flaky{target: "none", fail: fail}
	a2, sc2, p2 := build(f2, use(tc("c3", "lookup", `{}`)), say("done"))
	res2, err := a2.Resume(context.Background(), res.Paused.Checkpoint, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	c := res2.Calls[len(res2.Calls)-1]
	if c.ID != "c3" || c.Executed || c.ModelText != warden.UnauthorizedText("lookup") || f2.count("lookup") != 0 || p2.count("lookup") != 0 {
		t.Errorf("after resume: %+v (asked %d)", c, f2.count("lookup"))
	}
	if p2.count("refund") != 1 {
		t.Error("the approved refund did not run")
	}
	if names := toolNames(sc2.request(t, 0)); !slices.Equal(names, []string{"refund"}) {
		t.Errorf("offered after resume %v", names)
	}

	// A checkpoint written before the field existed still resumes (it remembers none).
	// (The edits below are sealed again with the key, as the Agent that wrote them would
	// have sealed them.)
	old := reseal(t, res.Paused.Checkpoint, testKey, func(b map[string]any) { delete(b, "unauthorized") })
	f3 := &flaky{target: "none", fail: fail}
	a3, _, _ := build(f3, use(tc("c3", "lookup", `{}`)), say("done"))
	res3, err := a3.Resume(context.Background(), old, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	if c := res3.Calls[len(res3.Calls)-1]; !c.Executed || f3.count("lookup") != 1 {
		t.Errorf("old checkpoint: %+v", c)
	}

	// The resumed call itself carries the list too ([warden.Caller].Unauthorized): a
	// checkpoint whose list names the pending tool resumes into a refusal, not a run.
	listed := reseal(t, res.Paused.Checkpoint, testKey, func(b map[string]any) { b["unauthorized"] = []string{"lookup", "refund"} })
	f4 := &flaky{target: "none", fail: fail}
	a4, _, p4 := build(f4, say("done"))
	res4, err := a4.Resume(context.Background(), listed, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if err != nil {
		t.Fatal(err)
	}
	if c := res4.Calls[len(res4.Calls)-1]; c.ID != "c2" || c.Executed || c.ModelText != warden.UnauthorizedText("refund") || p4.count("refund") != 0 || f4.count("refund") != 0 {
		t.Errorf("resumed refund: %+v", c)
	}
}

// Only the refusal that promised is remembered: an escalation nobody can answer is a
// fault, but its text says nothing about the rest of the run, and the next call is
// judged again.
func TestUnauthorized_EscalationFaultIsNotRemembered(t *testing.T) {
	rules, err := policy.NewRules(policy.RuleConfig{Mode: policy.ModeRules, Escalate: map[string][]string{"deploy": {"*"}}})
	if err != nil {
		t.Fatal(err)
	}
	var p probe
	g := bind(t, warden.Config{Checkers: []warden.Checker{rules}}, p.tool("deploy", ""))
	sc := script(use(tc("d1", "deploy", `{}`)), use(tc("d2", "deploy", `{}`)), say("ok"))
	res, err := newAgent(t, sc, g, nil).Run(context.Background(), "deploy")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Calls {
		if c.Executed || c.Decision == nil || !c.Decision.Fault || !strings.Contains(c.ModelText, "No escalation handler configured") {
			t.Errorf("call %s: %+v", c.ID, c)
		}
	}
	if names := toolNames(sc.request(t, 1)); !slices.Equal(names, []string{"deploy"}) {
		t.Errorf("iteration 2 offered %v", names)
	}
}
