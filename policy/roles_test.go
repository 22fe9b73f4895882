package policy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

var supportRoles = map[string][]string{
	"viewer":  {"search_docs", "read_ticket"},
	"support": {"search_docs", "read_ticket", "update_ticket"},
	"admin":   {"search_docs", "read_ticket", "update_ticket", "delete_ticket"},
}

func mustRoles(t testing.TB, roles map[string][]string, active string, rules *policy.RoleRules) *policy.RolePolicy {
	t.Helper()
	p, err := policy.FromRoles(roles, active, rules)
	if err != nil {
		t.Fatalf("FromRoles: %v", err)
	}
	return p
}

func ask(t testing.TB, c warden.Checker, cap warden.Capability, target string) warden.Decision {
	t.Helper()
	d, err := c.Check(context.Background(), warden.Request{Capability: cap, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestUnknownActiveRole(t *testing.T) {
	_, err := policy.FromRoles(supportRoles, "phantom", nil)
	if err == nil || err.Error() != "activeRole 'phantom' is not defined in roles. Available: admin, support, viewer" {
		t.Fatalf("err = %v", err)
	}
	_, err = policy.FromRoles(map[string][]string{}, "x", nil)
	if err == nil || !strings.HasSuffix(err.Error(), "Available: (none)") {
		t.Fatalf("err = %v", err)
	}
	p := mustRoles(t, supportRoles, "support", nil)
	if _, err := p.WithActiveRole("phantom"); err == nil || !strings.Contains(err.Error(), "'phantom'") {
		t.Fatalf("WithActiveRole(phantom) err = %v", err)
	}
}

func TestAllowlist(t *testing.T) {
	p := mustRoles(t, supportRoles, "support", nil)
	for tool, want := range map[string]bool{"search_docs": true, "update_ticket": true, "delete_ticket": false, "unknown": false} {
		if got := p.IsAllowed(tool); got != want {
			t.Errorf("IsAllowed(%s) = %v, want %v", tool, got, want)
		}
	}
	d := ask(t, p, warden.CapToolCall, "read_ticket")
	if d.Effect != warden.Allow || d.RuleID != "support.allowlist" {
		t.Errorf("allow: %+v", d)
	}
	d = ask(t, p, warden.CapToolCall, "delete_ticket")
	if d.Effect != warden.Deny || d.RuleID != "support.allowlist.miss" || d.Rationale != "Tool 'delete_ticket' is not in the 'support' role allowlist." {
		t.Errorf("deny: %+v", d)
	}
	if got := d.ModelText("delete_ticket"); got != "[permission denied: Tool 'delete_ticket' is not in the 'support' role allowlist.]" {
		t.Errorf("model text %q", got)
	}
	empty := mustRoles(t, map[string][]string{"none": {}}, "none", nil)
	if empty.IsAllowed("search_docs") || ask(t, empty, warden.CapToolCall, "search_docs").Effect != warden.Deny {
		t.Error("empty allowlist must deny everything")
	}
}

func TestAllowedToolIDsIsACopy(t *testing.T) {
	p := mustRoles(t, supportRoles, "viewer", nil)
	ids := p.AllowedToolIDs()
	if strings.Join(ids, ",") != "search_docs,read_ticket" {
		t.Fatalf("ids = %v", ids)
	}
	ids[0] = "delete_ticket"
	if p.IsAllowed("delete_ticket") || p.AllowedToolIDs()[0] != "search_docs" {
		t.Fatal("mutating AllowedToolIDs changed the policy")
	}
}

func TestFromRolesCopiesInput(t *testing.T) {
	roles := map[string][]string{"r": {"a"}}
	p := mustRoles(t, roles, "r", nil)
	roles["r"][0] = "b"
	roles["r"] = append(roles["r"], "c")
	if !p.IsAllowed("a") || p.IsAllowed("b") || p.IsAllowed("c") {
		t.Fatal("policy follows caller's map")
	}
}

func TestWithActiveRole(t *testing.T) {
	rules := &policy.RoleRules{Skills: map[string][]string{"support": {"refunds"}}}
	p := mustRoles(t, supportRoles, "viewer", rules)
	admin, err := p.WithActiveRole("admin")
	if err != nil {
		t.Fatal(err)
	}
	if !admin.IsAllowed("delete_ticket") || p.IsAllowed("delete_ticket") {
		t.Fatal("WithActiveRole changed the original or did not switch")
	}
	if p.ActiveRole() != "viewer" || admin.ActiveRole() != "admin" {
		t.Fatal("active roles wrong")
	}
	if !admin.Governs(warden.CapSkillRead) {
		t.Fatal("WithActiveRole dropped the rules")
	}
}

func TestGoverns(t *testing.T) {
	none := mustRoles(t, supportRoles, "support", nil)
	caps := mustRoles(t, supportRoles, "support", &policy.RoleRules{Capabilities: map[string][]warden.Capability{"admin": {warden.CapUserData}}})
	skills := mustRoles(t, supportRoles, "support", &policy.RoleRules{Skills: map[string][]string{"support": {"refunds"}}})
	all := append(warden.ToolCapabilities(), warden.CapSkillRead)
	for _, c := range all {
		if warden.CheckerGoverns(none, c) {
			t.Errorf("no rules governs %s", c)
		}
		if got, want := warden.CheckerGoverns(caps, c), c.IsToolCapability(); got != want {
			t.Errorf("capability rules govern %s = %v, want %v", c, got, want)
		}
		if got, want := warden.CheckerGoverns(skills, c), c == warden.CapSkillRead; got != want {
			t.Errorf("skill rules govern %s = %v, want %v", c, got, want)
		}
	}
	for _, p := range []warden.Checker{none, caps, skills} {
		if !warden.CheckerGoverns(p, warden.CapToolCall) {
			t.Error("tool_call must always be governed")
		}
	}
	if warden.CheckerGoverns(nil, warden.CapToolCall) {
		t.Error("nil checker governs nothing")
	}
}

// The save_note fixture from the acceptance cases.
func saveNotePolicy(t testing.TB, role string) *policy.RolePolicy {
	return mustRoles(t, map[string][]string{"readonly": {"save_note"}, "admin": {"save_note"}}, role, &policy.RoleRules{
		Capabilities: map[string][]warden.Capability{
			"readonly": {warden.CapMemoryRead},
			"admin":    {warden.CapMemoryRead, warden.CapMemoryWrite, warden.CapUserData, warden.CapExternalNet},
		},
	})
}

func TestCapabilityWalk(t *testing.T) {
	declared := []warden.Capability{warden.CapMemoryWrite, warden.CapUserData}
	type step struct {
		cap    warden.Capability
		effect warden.Effect
		rule   string
	}
	walk := func(c warden.Checker, declared []warden.Capability) ([]step, warden.Decision) {
		var steps []step
		d := warden.CheckCall(context.Background(), c, warden.Request{Target: "save_note"}, declared, func(r warden.Request, d warden.Decision) {
			if r.Target != "save_note" {
				t.Errorf("target %q", r.Target)
			}
			steps = append(steps, step{r.Capability, d.Effect, d.RuleID})
		})
		return steps, d
	}

	steps, d := walk(saveNotePolicy(t, "readonly"), declared)
	want := []step{{warden.CapToolCall, warden.Allow, "readonly.allowlist"}, {warden.CapMemoryWrite, warden.Deny, "readonly.capabilities.miss"}}
	if len(steps) != len(want) || steps[0] != want[0] || steps[1] != want[1] {
		t.Fatalf("readonly steps = %v, want %v (user_data never asked)", steps, want)
	}
	if got := d.ModelText("save_note"); got != "[permission denied: The 'readonly' role may not exercise 'memory_write', which tool 'save_note' declares.]" {
		t.Fatalf("model reads %q", got)
	}

	steps, d = walk(saveNotePolicy(t, "admin"), declared)
	if d.Effect != warden.Allow || len(steps) != 3 || steps[1].cap != warden.CapMemoryWrite || steps[2].cap != warden.CapUserData {
		t.Fatalf("admin steps = %v, decision %+v", steps, d)
	}

	// Tool declares nothing, checker governs capabilities: only tool_call.
	steps, _ = walk(saveNotePolicy(t, "readonly"), nil)
	if len(steps) != 1 {
		t.Fatalf("undeclared tool asked %v", steps)
	}
	// Tool declares capabilities, checker governs none: only tool_call, allowed.
	steps, d = walk(mustRoles(t, map[string][]string{"r": {"save_note"}}, "r", nil), declared)
	if len(steps) != 1 || d.Effect != warden.Allow {
		t.Fatalf("ungoverned: %v %+v", steps, d)
	}
}

func TestSkills(t *testing.T) {
	p := mustRoles(t, map[string][]string{"support": {"refunds"}, "hr": {}}, "support", &policy.RoleRules{Skills: map[string][]string{"support": {"refunds", "lookup"}}})
	tests := []struct {
		target string
		effect warden.Effect
		rule   string
	}{
		{warden.SkillTarget("refunds"), warden.Allow, "support.skills"},
		{warden.SkillTarget("lookup"), warden.Allow, "support.skills"},
		{warden.SkillTarget("payroll"), warden.Deny, "support.skills.miss"},
		{"payroll", warden.Deny, "support.skills.miss"},
	}
	for _, tt := range tests {
		d := ask(t, p, warden.CapSkillRead, tt.target)
		if d.Effect != tt.effect || d.RuleID != tt.rule {
			t.Errorf("%s: got %s %s", tt.target, d.Effect, d.RuleID)
		}
	}
	d := ask(t, p, warden.CapSkillRead, warden.SkillTarget("payroll"))
	if got := d.ModelText("read_skill"); got != "[permission denied: Skill 'payroll' is not available to the 'support' role.]" {
		t.Errorf("model reads %q", got)
	}
	hr, _ := p.WithActiveRole("hr")
	if d := ask(t, hr, warden.CapSkillRead, warden.SkillTarget("payroll")); d.Effect != warden.Allow || d.RuleID != "hr.skills.unruled" {
		t.Errorf("unruled role: %+v", d)
	}
	// A tool named like a skill does not grant the skill, and the skill does not grant the tool.
	q := mustRoles(t, map[string][]string{"support": {"refunds"}}, "support", &policy.RoleRules{Skills: map[string][]string{"support": {}}})
	if ask(t, q, warden.CapSkillRead, warden.SkillTarget("refunds")).Effect != warden.Deny {
		t.Error("tool 'refunds' granted skill 'refunds'")
	}
	if id, ok := warden.SkillIDFromTarget("skill:refunds"); !ok || id != "refunds" {
		t.Error("SkillIDFromTarget")
	}
	if _, ok := warden.SkillIDFromTarget("refunds"); ok {
		t.Error("SkillIDFromTarget accepted a tool name")
	}
}

func TestRoleRuleValidation(t *testing.T) {
	for _, rules := range []*policy.RoleRules{
		{Capabilities: map[string][]warden.Capability{"ghost": {warden.CapUserData}}},
		{Capabilities: map[string][]warden.Capability{"support": {warden.CapToolCall}}},
		{Capabilities: map[string][]warden.Capability{"support": {"teleport"}}},
		{Skills: map[string][]string{"ghost": {"x"}}},
	} {
		if _, err := policy.FromRoles(supportRoles, "support", rules); err == nil {
			t.Errorf("FromRoles accepted %+v", rules)
		}
	}
}

func TestUnknownCapabilityDenied(t *testing.T) {
	p := mustRoles(t, supportRoles, "admin", nil)
	if d := ask(t, p, "teleport", "read_ticket"); d.Effect != warden.Deny {
		t.Fatalf("unknown capability: %+v", d)
	}
}

// Issue 13: "`read_skill` is offered whenever any skill is reachable for the role,
// without a second listing." A role's skill rule is its listing: a role whose rule
// lists a skill may call read_skill without listing it among its tools. Nothing else
// grants read_skill: not an empty rule, not the absence of one, not another role's.
func TestReadSkillFromTheSkillRule(t *testing.T) {
	roles := map[string][]string{
		"support": {"search_docs"},     // skill rule lists skills
		"lister":  {"read_skill"},      // lists read_skill itself, and has skills
		"empty":   {},                  // skill rule lists skills: read_skill only
		"none":    {"search_docs"},     // skill rule is empty
		"unruled": {"search_docs"},     // no skill rule
		"bare":    {"read_skill", "x"}, // listed, no skill rule: as before
	}
	rules := &policy.RoleRules{Skills: map[string][]string{
		"support": {"refunds"}, "lister": {"refunds"}, "empty": {"lookup"}, "none": {},
	}}
	tests := []struct {
		role    string
		allowed bool
		rule    string
		why     string
		ids     []string
	}{
		{"support", true, "support.skills", "Tool 'read_skill' is allowed by the 'support' role's skill rule.", []string{"search_docs", "read_skill"}},
		{"lister", true, "lister.allowlist", "Tool 'read_skill' is in the 'lister' role allowlist.", []string{"read_skill"}},
		{"empty", true, "empty.skills", "Tool 'read_skill' is allowed by the 'empty' role's skill rule.", []string{"read_skill"}},
		{"none", false, "none.allowlist.miss", "Tool 'read_skill' is not in the 'none' role allowlist.", []string{"search_docs"}},
		{"unruled", false, "unruled.allowlist.miss", "Tool 'read_skill' is not in the 'unruled' role allowlist.", []string{"search_docs"}},
		{"bare", true, "bare.allowlist", "Tool 'read_skill' is in the 'bare' role allowlist.", []string{"read_skill", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			p := mustRoles(t, roles, tt.role, rules)
			if got := p.IsAllowed(warden.ReadSkillTool); got != tt.allowed {
				t.Errorf("IsAllowed(read_skill) = %v, want %v", got, tt.allowed)
			}
			d := ask(t, p, warden.CapToolCall, warden.ReadSkillTool)
			if d.Allowed() != tt.allowed || d.RuleID != tt.rule || d.Rationale != tt.why {
				t.Errorf("tool_call read_skill: %+v", d)
			}
			if got := p.AllowedToolIDs(); strings.Join(got, ",") != strings.Join(tt.ids, ",") {
				t.Errorf("AllowedToolIDs() = %v, want %v", got, tt.ids)
			}
			// The skill rule still decides which skills.
			if d := ask(t, p, warden.CapSkillRead, "skill:payroll"); tt.role != "unruled" && tt.role != "bare" && d.Allowed() {
				t.Errorf("payroll: %+v", d)
			}
		})
	}
	// The rule grants nothing else: another tool stays refused for the skills-only role.
	p := mustRoles(t, roles, "empty", rules)
	if d := ask(t, p, warden.CapToolCall, "search_docs"); d.Allowed() || p.IsAllowed("search_docs") {
		t.Errorf("search_docs: %+v", d)
	}
	// Without skill rules nothing changes.
	q := mustRoles(t, roles, "support", nil)
	if q.IsAllowed(warden.ReadSkillTool) || ask(t, q, warden.CapToolCall, warden.ReadSkillTool).Allowed() {
		t.Error("read_skill allowed without a skill rule")
	}
}
