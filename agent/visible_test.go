package agent_test

// One checker, both surfaces. The governance page: "One object satisfies both surfaces
// ... So the same allowlist can shape what the model sees and what is permitted to
// run, with no second source of truth." With neither Visible nor SkillChecker set, the
// agent offers what the Guard's own checkers allow: the tools, read_skill and each row
// of its menu.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/policy"
)

// defaultSkillWorld is skillWorld without any override: the agent is given the Guard
// and the catalogue, nothing else.
func defaultSkillWorld(t *testing.T, cat *catalogue, tools map[string][]string, skillRules map[string][]string, cfg warden.Config, turns ...agent.ModelResponse) (*agent.Agent, *scripted) {
	t.Helper()
	var rules *policy.RoleRules
	if skillRules != nil {
		rules = &policy.RoleRules{Skills: skillRules}
	}
	pol := roles(t, tools, "support", rules)
	cfg.Checkers = append([]warden.Checker{pol}, cfg.Checkers...)
	var p probe
	g := bind(t, cfg, agent.ReadSkillTool(cat.skills), p.tool("refunds", ""), p.tool("payroll_export", ""))
	sc := script(turns...)
	return newAgent(t, sc, g, &agent.Options{Skills: cat.skills}), sc
}

// The issue: "leave out SkillChecker and a hidden skill is named in the menu (the gate
// still refuses it)". Now the menu is the gate's own answer.
func TestVisible_DefaultMenuIsTheSkillGate(t *testing.T) {
	cat := newCatalogue()
	a, sc := defaultSkillWorld(t, cat,
		map[string][]string{"support": {"read_skill", "refunds"}, "hr": {"read_skill", "payroll_export"}},
		map[string][]string{"support": {"refunds", "lookup"}, "hr": {"payroll"}}, warden.Config{},
		use(tc("s1", "read_skill", `{"id":"payroll"}`)), say("done"))
	res, err := a.Run(context.Background(), "pay the staff")
	if err != nil {
		t.Fatal(err)
	}
	req := sc.request(t, 0)
	if names := toolNames(req); !slices.Equal(names, []string{"read_skill", "refunds"}) {
		t.Errorf("offered %v", names)
	}
	want := "Activate a skill for the next iteration. Call this tool with a skill's id to read its instructions. Skills available to you:\n- refunds: How to issue a refund.\n- lookup: How to look up a customer."
	if d := readSkillSpec(t, req).Description; d != want {
		t.Errorf("menu:\n%s", d)
	}
	if c := res.Calls[0]; c.Executed || c.ModelText != "[permission denied: Skill 'payroll' is not available to the 'support' role.]" {
		t.Errorf("payroll activation %+v", c)
	}
	if cat.bodies["payroll"].Load() != 0 {
		t.Error("the payroll body was computed")
	}
}

// Issue 13: "`read_skill` is offered whenever any skill is reachable for the role,
// without a second listing." The role's skill rule is the listing: its tools need not
// name read_skill, and the call the model makes then runs.
func TestVisible_ReadSkillWithoutASecondListing(t *testing.T) {
	cat := newCatalogue()
	a, sc := defaultSkillWorld(t, cat,
		map[string][]string{"support": {"refunds"}, "hr": {}},
		map[string][]string{"support": {"refunds"}}, warden.Config{},
		use(tc("s1", "read_skill", `{"id":"refunds"}`)), say("done"))
	res, err := a.Run(context.Background(), "refund order 7")
	if err != nil {
		t.Fatal(err)
	}
	req := sc.request(t, 0)
	if names := toolNames(req); !slices.Equal(names, []string{"read_skill", "refunds"}) {
		t.Errorf("offered %v", names)
	}
	if d := readSkillSpec(t, req).Description; !strings.HasSuffix(d, "Skills available to you:\n- refunds: How to issue a refund.") {
		t.Errorf("menu:\n%s", d)
	}
	c := res.Calls[0]
	if !c.Executed || c.ModelText != "BODY OF refunds" || cat.bodies["refunds"].Load() != 1 {
		t.Fatalf("activation %+v", c)
	}
	if len(c.Checks) != 2 || c.Checks[0].Decision.RuleID != "support.skills" || c.Checks[0].Decision.Rationale != "Tool 'read_skill' is allowed by the 'support' role's skill rule." || c.Checks[1].Decision.RuleID != "support.skills" {
		t.Errorf("checks %+v", c.Checks)
	}
}

// A role whose only way to read_skill would be its skill rule does not get read_skill
// when that rule lists no skill of the catalogue (a role that lists read_skill among its
// tools keeps it, with NoSkillsText: see TestSkills_AllHidden).
func TestVisible_ReadSkillNotOfferedWithoutAReachableSkill(t *testing.T) {
	tests := []struct {
		name   string
		tools  []string
		skills map[string][]string
	}{
		{"empty skill rule", []string{"refunds"}, map[string][]string{"support": {}}},
		{"skill rule for another role only", []string{"refunds"}, map[string][]string{"hr": {"payroll"}}},
		{"no skill rules, read_skill not listed", []string{"refunds"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := newCatalogue()
			a, sc := defaultSkillWorld(t, cat, map[string][]string{"support": tt.tools, "hr": {}}, tt.skills, warden.Config{}, say("ok"))
			if _, err := a.Run(context.Background(), "help"); err != nil {
				t.Fatal(err)
			}
			if names := toolNames(sc.request(t, 0)); !slices.Equal(names, []string{"refunds"}) {
				t.Errorf("offered %v", names)
			}
		})
	}
}

// A policy without skill rules governs no skill_read: a role that lists read_skill sees
// every skill, as before.
func TestVisible_UngovernedListsEverySkill(t *testing.T) {
	cat := newCatalogue()
	a, sc := defaultSkillWorld(t, cat, map[string][]string{"support": {"read_skill"}}, nil, warden.Config{}, say("ok"))
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

// Every checker the Guard runs at the skill gate is asked for the menu, with the skill
// gate's request, and each must allow; one that is slow is bound by the Guard's own
// CheckTimeout (fail closed: "something that did not answer did not say yes").
func TestVisible_MenuAsksEverySkillCheckerUnderTheGuardDeadline(t *testing.T) {
	var mu sync.Mutex
	var asked []warden.Request
	slow := &named{name: "skills-svc", governs: []warden.Capability{warden.CapSkillRead}, check: func(ctx context.Context, req warden.Request) (warden.Decision, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		if req.Capability != warden.CapSkillRead {
			return warden.Decision{Effect: warden.Allow}, nil
		}
		if req.Target == "skill:lookup" {
			<-ctx.Done() // answers only after the deadline: too late to count
		}
		return warden.Decision{Effect: warden.Allow}, nil
	}}
	cat := newCatalogue()
	a, sc := defaultSkillWorld(t, cat, map[string][]string{"support": {"refunds"}},
		map[string][]string{"support": {"refunds", "lookup"}},
		warden.Config{Checkers: []warden.Checker{slow}, CheckTimeout: 50 * time.Millisecond},
		say("ok"))
	if _, err := a.Run(context.Background(), "help"); err != nil {
		t.Fatal(err)
	}
	if d := readSkillSpec(t, sc.request(t, 0)).Description; !strings.HasSuffix(d, ":\n- refunds: How to issue a refund.") {
		t.Errorf("menu:\n%s", d)
	}
	mu.Lock()
	defer mu.Unlock()
	var targets []string
	for _, r := range asked {
		targets = append(targets, string(r.Capability)+" "+r.Target)
		if id, _ := r.Args.String("id"); "skill:"+id != r.Target {
			t.Errorf("request args %s for %s", r.Args.AppendJSON(nil), r.Target)
		}
	}
	// The role policy hides payroll first, so the second checker is not asked about it.
	if want := []string{"skill_read skill:refunds", "skill_read skill:lookup"}; !slices.Equal(targets, want) {
		t.Errorf("asked %v, want %v", targets, want)
	}
}

// The override still works: a SkillChecker replaces the Guard's checkers for the menu.
func TestVisible_SkillCheckerOverrides(t *testing.T) {
	only := &named{name: "menu", governs: []warden.Capability{warden.CapSkillRead}, check: func(_ context.Context, req warden.Request) (warden.Decision, error) {
		if req.Target == "skill:payroll" {
			return warden.Decision{Effect: warden.Allow}, nil
		}
		return warden.Decision{Effect: warden.Deny}, nil
	}}
	pol := roles(t, map[string][]string{"support": {"read_skill"}}, "support", &policy.RoleRules{Skills: map[string][]string{"support": {"refunds"}}})
	cat := newCatalogue()
	g := bind(t, warden.Config{Checkers: []warden.Checker{pol}}, agent.ReadSkillTool(cat.skills))
	sc := script(say("ok"))
	if _, err := newAgent(t, sc, g, &agent.Options{Skills: cat.skills, SkillChecker: only}).Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if d := readSkillSpec(t, sc.request(t, 0)).Description; !strings.HasSuffix(d, ":\n- payroll: How to run payroll.") {
		t.Errorf("menu:\n%s", d)
	}
	b, _ := json.Marshal(sc.request(t, 0).Tools)
	if strings.Contains(string(b), "How to issue a refund") {
		t.Errorf("the override's hidden skill is described: %s", b)
	}
}
