package warden_test

// Attacks on issue 13's "one checker, both surfaces" (attacker 2). The governance
// page: "the same allowlist can shape what the model sees and what is permitted to
// run, with no second source of truth."

import (
	"context"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// Found by an attack, and fixed (CapabilityVisibilityChecker, RolePolicy.MayExercise):
// Guard.Offers asked each checker only IsAllowed(tool), which a role policy
// answers from the allowlist alone. A role whose capability rule lacks a capability
// the tool declares is refused every call of that tool ("<r>.capabilities.miss"),
// yet the tool is offered: what the model sees and what may run come apart inside one
// policy object, and the model is shown a tool no call of which can run.
func TestAttack2OffersToolItsCapabilityRuleRefuses(t *testing.T) {
	var p probe
	writer := p.tool("writer")
	writer.Capabilities = []warden.Capability{warden.CapMemoryWrite}
	reader := p.tool("reader")
	reader.Capabilities = []warden.Capability{warden.CapMemoryRead}
	roles, err := policy.FromRoles(map[string][]string{"viewer": {"reader", "writer"}}, "viewer",
		&policy.RoleRules{Capabilities: map[string][]warden.Capability{"viewer": {warden.CapMemoryRead}}})
	if err != nil {
		t.Fatal(err)
	}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{roles}}, reader, writer)
	out, _ := g.Call(context.Background(), warden.Call{ID: "1", Tool: "writer", Args: warden.Args{}})
	if out.Status == warden.StatusRan {
		t.Fatalf("writer ran: %+v", out)
	}
	if !g.Offers("reader") {
		t.Error("reader is not offered")
	}
	if g.Offers("writer") {
		t.Errorf("writer is offered, and every call of it is refused: %s (%s)", out.RuleID, out.ModelText)
	}
}

// Held: a role whose skill rule lists skills may call read_skill without listing it,
// but the skill gate still refuses a skill outside the list, for the call and the menu.
func TestAttack2ReadSkillViaSkillRuleStillGatesEachSkill(t *testing.T) {
	roles, err := policy.FromRoles(map[string][]string{"r": {}}, "r",
		&policy.RoleRules{Skills: map[string][]string{"r": {"public"}}})
	if err != nil {
		t.Fatal(err)
	}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{roles}})
	if g.OffersSkill(context.Background(), "secret", warden.Viewer{}) {
		t.Error("skill secret offered")
	}
	if !g.OffersSkill(context.Background(), "public", warden.Viewer{}) {
		t.Error("skill public not offered")
	}
	for _, id := range []string{"secret", "Public", "public ", "skill:public"} {
		if d, _ := roles.Check(context.Background(), warden.Request{Capability: warden.CapSkillRead, Target: warden.SkillTarget(id)}); d.Effect == warden.Allow {
			t.Errorf("skill %q allowed: %+v", id, d)
		}
	}
}
