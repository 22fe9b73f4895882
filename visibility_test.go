package warden_test

// The other surface of the Guard's checkers. The governance page: "One object satisfies
// both surfaces: the async PermissionChecker interface (check(request)) and a sync
// isAllowed(toolId) predicate you can hand straight to gatedTools. So the same
// allowlist can shape what the model sees and what is permitted to run, with no second
// source of truth."

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/schema"
)

// visChecker answers visibility from a set and counts its Check calls.
type visChecker struct {
	allow map[string]bool
	panic string
	mu    sync.Mutex
	calls int
}

func (c *visChecker) Check(context.Context, warden.Request) (warden.Decision, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return warden.Decision{Effect: warden.Allow}, nil
}
func (*visChecker) Governs(warden.Capability) bool { return false }
func (c *visChecker) IsAllowed(tool string) bool {
	if tool == c.panic {
		panic("visibility backend gone")
	}
	return c.allow[tool]
}

func TestGuardOffers(t *testing.T) {
	var p probe
	tools := []warden.Executable{p.tool("lookup"), p.tool("reply"), p.tool("delete")}
	roles, err := policy.FromRoles(map[string][]string{"support": {"lookup", "reply", "unbound"}}, "support", nil)
	if err != nil {
		t.Fatal(err)
	}
	vis := &visChecker{allow: map[string]bool{"lookup": true, "delete": true}, panic: "delete"}
	counting := warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) {
		t.Error("a checker without IsAllowed was asked to decide visibility")
		return warden.Decision{}, nil
	})
	tests := []struct {
		name     string
		checkers []warden.Checker
		want     map[string]bool
	}{
		{"no checkers offers every bound tool", nil, map[string]bool{"lookup": true, "reply": true, "delete": true, "unbound": false}},
		{"a role policy offers its allowlist", []warden.Checker{roles}, map[string]bool{"lookup": true, "reply": true, "delete": false, "unbound": false}},
		{"a checker that cannot answer offers, and is not called", []warden.Checker{counting}, map[string]bool{"lookup": true, "reply": true, "delete": true}},
		{"every visibility checker must allow; a panic hides", []warden.Checker{roles, counting, vis}, map[string]bool{"lookup": true, "reply": false, "delete": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustBind(t, warden.Config{Checkers: tt.checkers, Ungoverned: len(tt.checkers) == 0}, tools...)
			for tool, want := range tt.want {
				if got := g.Offers(tool); got != want {
					t.Errorf("Offers(%s) = %v, want %v", tool, got, want)
				}
			}
		})
	}
	if vis.calls != 0 {
		t.Errorf("Check called %d times for visibility", vis.calls)
	}
}

// skillGate governs skill_read and answers per skill; its behaviour per target decides.
type skillGate struct {
	mu    sync.Mutex
	asked []warden.Request
	by    map[string]func(ctx context.Context) (warden.Decision, error)
}

func (c *skillGate) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	c.mu.Lock()
	c.asked = append(c.asked, req)
	c.mu.Unlock()
	if f := c.by[req.Target]; f != nil {
		return f(ctx)
	}
	return warden.Decision{Effect: warden.Allow}, nil
}
func (*skillGate) Governs(c warden.Capability) bool { return c == warden.CapSkillRead }

type syncSkillGate struct{ *skillGate }

func (syncSkillGate) Synchronous() bool { return true }

type inlineSkillGate struct{ *skillGate }

func (inlineSkillGate) Synchronous() bool   { return true }
func (inlineSkillGate) Interruptible() bool { return true }

func answer(d warden.Decision, err error) func(context.Context) (warden.Decision, error) {
	return func(context.Context) (warden.Decision, error) { return d, err }
}

func late(ctx context.Context) (warden.Decision, error) {
	<-ctx.Done() // answers only after the deadline: too late to count
	return warden.Decision{Effect: warden.Allow}, nil
}

// Per-role skill visibility: "activating it anyway is refused with the policy's own
// message" and "its row disappears from the read_skill menu the model reads" — one
// rule, both ends. Only an allow lists a skill; "something that did not answer did not
// say yes".
func TestGuardOffersSkill(t *testing.T) {
	outcomes := map[string]func(context.Context) (warden.Decision, error){
		"skill:deny":    answer(warden.Decision{Effect: warden.Deny}, nil),
		"skill:halt":    answer(warden.Decision{Effect: warden.Halt}, nil),
		"skill:ask":     answer(warden.Decision{Effect: warden.Ask}, nil),
		"skill:error":   answer(warden.Decision{}, errors.New("ECONNREFUSED")),
		"skill:invalid": answer(warden.Decision{Effect: warden.Effect(9)}, nil),
		"skill:panic":   func(context.Context) (warden.Decision, error) { panic("boom") },
		"skill:late":    late,
	}
	want := map[string]bool{"allow": true, "deny": false, "halt": false, "ask": false, "error": false, "invalid": false, "panic": false, "late": false}
	for _, kind := range []string{"goroutine", "inline interruptible"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sg := &skillGate{by: outcomes}
				var c warden.Checker = sg
				if kind != "goroutine" {
					c = inlineSkillGate{sg}
				}
				g := mustBind(t, warden.Config{Checkers: []warden.Checker{c}, CheckTimeout: time.Second})
				for id, w := range want {
					if got := g.OffersSkill(context.Background(), id, warden.Viewer{}); got != w {
						t.Errorf("OffersSkill(%s) = %v, want %v", id, got, w)
					}
				}
			})
		})
	}
	t.Run("the skill gate's request", func(t *testing.T) {
		sg := &skillGate{}
		g := mustBind(t, warden.Config{Checkers: []warden.Checker{syncSkillGate{sg}}})
		seq := []warden.Step{{Tool: "lookup", Args: A(`{"q":1}`)}}
		v := warden.Viewer{Identity: warden.Identity{Tenant: "t", Principal: "ana"}, Iteration: 3, Sequence: seq}
		if !g.OffersSkill(context.Background(), "refunds", v) {
			t.Fatal("refunds hidden")
		}
		r := sg.asked[0]
		if r.Capability != warden.CapSkillRead || r.Target != "skill:refunds" || js(r.Args) != `{"id":"refunds"}` || r.Actor != "ana" || r.Identity != v.Identity || r.Iteration != 3 || len(r.Sequence) != 1 || r.Sequence[0].Tool != "lookup" {
			t.Errorf("request %+v", r)
		}
		r.Sequence[0].Tool = "rewritten"
		if seq[0].Tool != "lookup" {
			t.Error("the checker was lent the caller's sequence")
		}
	})
	t.Run("no checker governs skill_read", func(t *testing.T) {
		g := mustBind(t, warden.Config{Checkers: []warden.Checker{warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) {
			t.Error("a checker that does not govern skill_read was asked")
			return warden.Decision{}, nil
		})}})
		if !g.OffersSkill(context.Background(), "anything", warden.Viewer{}) {
			t.Error("hidden with no skill gate")
		}
	})
	t.Run("a done context hides", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		g := mustBind(t, warden.Config{Ungoverned: true})
		if g.OffersSkill(ctx, "refunds", warden.Viewer{}) || warden.SkillOffered(ctx, nil, "refunds", warden.Viewer{}, 0) {
			t.Error("offered under a done context")
		}
	})
}

// SkillOffered is the same question for one checker outside a Guard, with its own
// deadline.
func TestSkillOffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sg := &skillGate{by: map[string]func(context.Context) (warden.Decision, error){"skill:late": late}}
		ctx := context.Background()
		if !warden.SkillOffered(ctx, sg, "on-time", warden.Viewer{}, time.Minute) {
			t.Error("an allow in time hid the skill")
		}
		start := time.Now()
		if warden.SkillOffered(ctx, sg, "late", warden.Viewer{}, 0) {
			t.Error("a late answer counted")
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("the default deadline was %s, want 5s", d)
		}
		if !warden.SkillOffered(ctx, nil, "x", warden.Viewer{}, 0) || !warden.SkillOffered(ctx, warden.CheckerFunc(nil), "x", warden.Viewer{}, 0) {
			t.Error("a checker that does not govern skill_read hid a skill")
		}
	})
}

// REFERENCE section 5: "A tool whose schema cannot be compiled is not callable." Nor is
// it offered.
func TestGuardOffers_UncompilableSchema(t *testing.T) {
	var p probe
	bad := p.tool("bad")
	bad.InputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integr"}}}`)
	g := mustBind(t, warden.Config{Ungoverned: true, Schemas: schema.Compiler{}}, bad, p.tool("good"))
	if g.Offers("bad") || !g.Offers("good") {
		t.Errorf("Offers(bad) = %v, Offers(good) = %v", g.Offers("bad"), g.Offers("good"))
	}
}
