package agent_test

// Per-role skill visibility: the read_skill menu lists only the skills the policy allows;
// the enum keeps the whole catalogue; activating a hidden skill is refused by the
// Guard's skill gate before its body is computed.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/policy"
)

type catalogue struct {
	skills []agent.Skill
	bodies map[string]*atomic.Int32
}

func newCatalogue() *catalogue {
	c := &catalogue{bodies: map[string]*atomic.Int32{}}
	for _, s := range []struct{ id, desc string }{
		{"refunds", "How to issue a refund."},
		{"payroll", "How to run payroll."},
		{"lookup", "How to look up a customer."},
	} {
		n := &atomic.Int32{}
		c.bodies[s.id] = n
		id := s.id
		c.skills = append(c.skills, agent.Skill{ID: id, Description: s.desc, Body: func(context.Context) (string, error) {
			n.Add(1)
			return "BODY OF " + id, nil
		}})
	}
	return c
}

// skillWorld binds read_skill for the catalogue under a role policy and returns the
// agent with its provider.
func skillWorld(t *testing.T, cat *catalogue, skillRules map[string][]string, skillChecker warden.Checker, turns ...agent.ModelResponse) (*agent.Agent, *scripted) {
	t.Helper()
	var rules *policy.RoleRules
	if skillRules != nil {
		rules = &policy.RoleRules{Skills: skillRules}
	}
	pol := roles(t, map[string][]string{"support": {"read_skill", "refunds"}, "hr": {"read_skill"}}, "support", rules)
	var p probe
	g := bind(t, warden.Config{Checkers: []warden.Checker{pol}}, agent.ReadSkillTool(cat.skills), p.tool("refunds", ""))
	if skillChecker == nil {
		skillChecker = pol
	}
	sc := script(turns...)
	return newAgent(t, sc, g, &agent.Options{Visible: pol.IsAllowed, Skills: cat.skills, SkillChecker: skillChecker, SkillCheckTimeout: 50 * time.Millisecond}), sc
}

func readSkillSpec(t *testing.T, req agent.ModelRequest) agent.ToolSpec {
	t.Helper()
	for _, s := range req.Tools {
		if s.Name == warden.ReadSkillTool {
			return s
		}
	}
	t.Fatalf("read_skill not offered: %v", toolNames(req))
	return agent.ToolSpec{}
}

func enumOf(t *testing.T, spec agent.ToolSpec) []string {
	t.Helper()
	var s struct {
		Properties struct {
			ID struct {
				Enum []string `json:"enum"`
			} `json:"id"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(spec.InputSchema, &s); err != nil {
		t.Fatal(err)
	}
	return s.Properties.ID.Enum
}

func TestSkills_MenuAndGate(t *testing.T) {
	cat := newCatalogue()
	a, sc := skillWorld(t, cat, map[string][]string{"support": {"refunds", "lookup"}, "hr": {"payroll"}}, nil,
		use(tc("s1", "read_skill", `{"id":"payroll"}`)),
		use(tc("s2", "read_skill", `{"id":"refunds"}`)),
		say("done"))
	res, err := a.Run(context.Background(), "pay the staff")
	if err != nil {
		t.Fatal(err)
	}
	spec := readSkillSpec(t, sc.request(t, 0))
	want := "Activate a skill for the next iteration. Call this tool with a skill's id to read its instructions. Skills available to you:\n- refunds: How to issue a refund.\n- lookup: How to look up a customer."
	if spec.Description != want {
		t.Errorf("menu:\n%s", spec.Description)
	}
	if strings.Contains(spec.Description, "payroll") {
		t.Error("the menu names a hidden skill")
	}
	if got := enumOf(t, spec); !slices.Equal(got, []string{"refunds", "payroll", "lookup"}) {
		t.Errorf("enum %v, want the whole catalogue", got)
	}
	if got := string(spec.InputSchema); got != `{"type":"object","properties":{"id":{"type":"string","enum":["refunds","payroll","lookup"]}},"required":["id"],"additionalProperties":false}` {
		t.Errorf("schema %s", got)
	}
	// The hidden skill is named nowhere else the model reads either.
	req := sc.request(t, 0)
	req.Tools = slices.DeleteFunc(slices.Clone(req.Tools), func(s agent.ToolSpec) bool { return s.Name == warden.ReadSkillTool })
	if b, _ := json.Marshal(req); strings.Contains(string(b), "payroll") {
		t.Errorf("payroll named in %s", b)
	}

	if c := res.Calls[0]; c.ModelText != "[permission denied: Skill 'payroll' is not available to the 'support' role.]" || c.Executed || c.Stage != warden.StageSkill {
		t.Errorf("payroll activation %+v", c)
	}
	if n := cat.bodies["payroll"].Load(); n != 0 {
		t.Errorf("payroll body computed %d times", n)
	}
	if c := res.Calls[1]; c.ModelText != "BODY OF refunds" || !c.Executed {
		t.Errorf("refunds activation %+v", c)
	}
	if cat.bodies["refunds"].Load() != 1 || cat.bodies["lookup"].Load() != 0 {
		t.Error("bodies computed for skills nobody activated")
	}
}

// REFERENCE section 4: "No skills left => Activate a skill for the next iteration. No
// skills are available to you — answer without one, or say what you are unable to do."
// A role whose tools list read_skill keeps it, with that text, when none is visible.
func TestSkills_AllHidden(t *testing.T) {
	cat := newCatalogue()
	a, sc := skillWorld(t, cat, map[string][]string{"support": {}}, nil, say("I have no skill for that."))
	if _, err := a.Run(context.Background(), "help"); err != nil {
		t.Fatal(err)
	}
	spec := readSkillSpec(t, sc.request(t, 0))
	if spec.Description != "Activate a skill for the next iteration. No skills are available to you — answer without one, or say what you are unable to do." {
		t.Errorf("description %q", spec.Description)
	}
	if spec.Description != agent.NoSkillsText {
		t.Error("NoSkillsText differs")
	}
}

// A policy without skill rules does not govern skill_read: every skill is listed.
func TestSkills_UngovernedListsEverySkill(t *testing.T) {
	cat := newCatalogue()
	a, sc := skillWorld(t, cat, nil, nil, say("ok"))
	if _, err := a.Run(context.Background(), "help"); err != nil {
		t.Fatal(err)
	}
	d := readSkillSpec(t, sc.request(t, 0)).Description
	for _, id := range []string{"refunds", "payroll", "lookup"} {
		if !strings.Contains(d, "- "+id+": ") {
			t.Errorf("menu lacks %s:\n%s", id, d)
		}
	}
}

// A tool named refunds in the allowlist does not grant the skill refunds.
func TestSkills_ToolNameIsNotASkill(t *testing.T) {
	cat := newCatalogue()
	a, sc := skillWorld(t, cat, map[string][]string{"support": {"lookup"}}, nil,
		use(tc("s", "read_skill", `{"id":"refunds"}`)), say("ok"))
	res, err := a.Run(context.Background(), "help")
	if err != nil {
		t.Fatal(err)
	}
	if d := readSkillSpec(t, sc.request(t, 0)).Description; strings.Contains(d, "refunds") {
		t.Errorf("menu lists refunds:\n%s", d)
	}
	if !slices.Contains(toolNames(sc.request(t, 0)), "refunds") {
		t.Error("the refunds tool should still be offered")
	}
	if res.Calls[0].Executed || cat.bodies["refunds"].Load() != 0 {
		t.Error("the refunds skill was activated")
	}
}

// A skill check that errors, panics or answers something other than allow hides the
// skill; the others stay listed.
func TestSkills_FailingMenuCheckHidesTheSkill(t *testing.T) {
	tests := []struct {
		name  string
		check func(ctx context.Context, req warden.Request) (warden.Decision, error)
	}{
		{"error", func(_ context.Context, req warden.Request) (warden.Decision, error) {
			if req.Target == "skill:payroll" {
				return warden.Decision{}, errors.New("ECONNREFUSED skills-svc.internal")
			}
			return warden.Decision{Effect: warden.Allow}, nil
		}},
		{"panic", func(_ context.Context, req warden.Request) (warden.Decision, error) {
			if req.Target == "skill:payroll" {
				panic("boom")
			}
			return warden.Decision{Effect: warden.Allow}, nil
		}},
		{"ask", func(_ context.Context, req warden.Request) (warden.Decision, error) {
			if req.Target == "skill:payroll" {
				return warden.Decision{Effect: warden.Ask}, nil
			}
			return warden.Decision{Effect: warden.Allow}, nil
		}},
		{"invalid effect", func(_ context.Context, req warden.Request) (warden.Decision, error) {
			if req.Target == "skill:payroll" {
				return warden.Decision{Effect: warden.Effect(42)}, nil
			}
			return warden.Decision{Effect: warden.Allow}, nil
		}},
		{"no answer in time", func(ctx context.Context, req warden.Request) (warden.Decision, error) {
			if req.Target == "skill:payroll" {
				<-ctx.Done() // answers only after the deadline: too late to count
				return warden.Decision{Effect: warden.Allow}, nil
			}
			return warden.Decision{Effect: warden.Allow}, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			checker := &named{name: "skills", governs: []warden.Capability{warden.CapSkillRead}, check: func(ctx context.Context, req warden.Request) (warden.Decision, error) {
				if req.Capability != warden.CapSkillRead {
					t.Errorf("menu asked about %s", req.Capability)
				}
				if id, _ := req.Args.String("id"); "skill:"+id != req.Target {
					t.Errorf("request args %v for %s", req.Args, req.Target)
				}
				mu.Lock()
				asked = append(asked, req.Target)
				mu.Unlock()
				return tt.check(ctx, req)
			}}
			cat := newCatalogue()
			a, sc := skillWorld(t, cat, nil, checker, say("ok"))
			if _, err := a.Run(context.Background(), "help"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			d := readSkillSpec(t, sc.request(t, 0)).Description
			if strings.Contains(d, "payroll") || strings.Contains(d, "ECONNREFUSED") {
				t.Errorf("menu:\n%s", d)
			}
			if !strings.Contains(d, "- refunds: ") || !strings.Contains(d, "- lookup: ") {
				t.Errorf("menu lost the allowed skills:\n%s", d)
			}
			if !slices.Equal(asked, []string{"skill:refunds", "skill:payroll", "skill:lookup"}) {
				t.Errorf("asked %v", asked)
			}
		})
	}
}

// The menu is rebuilt every iteration: a checker whose answer changes during the run
// changes the next menu.
func TestSkills_MenuPerIteration(t *testing.T) {
	var iteration atomic.Int32
	checker := &named{name: "skills", governs: []warden.Capability{warden.CapSkillRead}, check: func(_ context.Context, req warden.Request) (warden.Decision, error) {
		iteration.Store(int32(req.Iteration))
		if req.Target == "skill:payroll" && req.Iteration >= 2 {
			return warden.Decision{Effect: warden.Deny}, nil
		}
		return warden.Decision{Effect: warden.Allow}, nil
	}}
	cat := newCatalogue()
	a, sc := skillWorld(t, cat, nil, checker, use(tc("x", "refunds", `{}`)), say("ok"))
	if _, err := a.Run(context.Background(), "help"); err != nil {
		t.Fatal(err)
	}
	if d := readSkillSpec(t, sc.request(t, 0)).Description; !strings.Contains(d, "payroll") {
		t.Errorf("iteration 1 menu:\n%s", d)
	}
	if d := readSkillSpec(t, sc.request(t, 1)).Description; strings.Contains(d, "payroll") {
		t.Errorf("iteration 2 menu:\n%s", d)
	}
	if iteration.Load() != 2 {
		t.Errorf("last menu check at iteration %d", iteration.Load())
	}
}

// read_skill is visibility-filtered like any tool: a role that may not call it is not
// offered it.
func TestSkills_ReadSkillFilteredByVisibility(t *testing.T) {
	cat := newCatalogue()
	pol := roles(t, map[string][]string{"support": {"refunds"}}, "support", nil)
	var p probe
	g := bind(t, warden.Config{Checkers: []warden.Checker{pol}}, agent.ReadSkillTool(cat.skills), p.tool("refunds", ""))
	sc := script(say("ok"))
	a := newAgent(t, sc, g, &agent.Options{Visible: pol.IsAllowed, Skills: cat.skills})
	if _, err := a.Run(context.Background(), "help"); err != nil {
		t.Fatal(err)
	}
	if names := toolNames(sc.request(t, 0)); !slices.Equal(names, []string{"refunds"}) {
		t.Errorf("offered %v", names)
	}
}

func TestSkills_ConfigErrors(t *testing.T) {
	cat := newCatalogue()
	body := func(context.Context) (string, error) { return "", nil }
	var p probe
	withTool := bind(t, warden.Config{Ungoverned: true}, agent.ReadSkillTool(cat.skills))
	without := bind(t, warden.Config{Ungoverned: true}, p.tool("x", ""))
	tests := []struct {
		name   string
		guard  *warden.Guard
		skills []agent.Skill
		want   string
	}{
		{"read_skill not registered", without, cat.skills, "has no \"read_skill\" tool"},
		{"different catalogue", withTool, cat.skills[:2], "not built from Options.Skills"},
		{"empty id", withTool, []agent.Skill{{ID: " ", Body: body}}, "has no id"},
		{"duplicate id", withTool, []agent.Skill{{ID: "a", Body: body}, {ID: "a", Body: body}}, "listed twice"},
		{"no body", withTool, []agent.Skill{{ID: "a"}}, "has no Body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.New(script(), tt.guard, &agent.Options{Skills: tt.skills})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
	// No skills configured: a bound read_skill is not offered (there is nothing to read).
	sc := script(say("ok"))
	if _, err := newAgent(t, sc, withTool, nil).Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if names := toolNames(sc.request(t, 0)); len(names) != 0 {
		t.Errorf("offered %v", names)
	}
}

func TestReadSkillTool_Run(t *testing.T) {
	cat := newCatalogue()
	x := agent.ReadSkillTool(cat.skills)
	if x.Name != warden.ReadSkillTool || x.Description != agent.ReadSkillDescription || strings.Contains(x.Description, "refunds") {
		t.Errorf("tool %+v", x.Tool)
	}
	got, err := x.Run(context.Background(), warden.MustParseArgs(`{"id":"lookup"}`), nil)
	if err != nil || got != "BODY OF lookup" {
		t.Errorf("got %v %v", got, err)
	}
	if _, err := x.Run(context.Background(), warden.MustParseArgs(`{"id":"nope"}`), nil); err == nil {
		t.Error("unknown skill ran")
	}
	failing := agent.ReadSkillTool([]agent.Skill{{ID: "bad", Body: func(context.Context) (string, error) { return "", errors.New("disk gone") }}})
	if _, err := failing.Run(context.Background(), warden.MustParseArgs(`{"id":"bad"}`), nil); err == nil {
		t.Error("a failing body did not fail")
	}
}
