package policy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// The benchmarks in this file measure what one permission check costs on the hot path:
// the rule policy's worst case (no pattern matches, so every pattern is tried; for a
// resource across its own, its family's and the "*" lists), the role
// policy, the bash check (parse, normalize, wrappers, rules) and one CEL condition.

func fiftyRules(tool string) policy.RuleConfig {
	var deny, allow, esc []string
	for i := range 50 {
		switch i % 3 {
		case 0:
			deny = append(deny, fmt.Sprintf("delete-%d *", i))
		case 1:
			allow = append(allow, fmt.Sprintf("*region-%d?", i))
		default:
			esc = append(esc, fmt.Sprintf("[abc]*%d*", i))
		}
	}
	return policy.RuleConfig{Deny: map[string][]string{tool: deny}, Allow: map[string][]string{tool: allow}, Escalate: map[string][]string{tool: esc}}
}

// familyRules is fiftyRules under both family keys, with a deny of the resource's own
// and a "*" list, so that a member is judged by three lists and none matches.
func familyRules() policy.RuleConfig {
	cfg := fiftyRules("resource:*")
	p := fiftyRules("prompt:*")
	cfg.Deny["prompt:*"], cfg.Allow["prompt:*"], cfg.Escalate["prompt:*"] = p.Deny["prompt:*"], p.Allow["prompt:*"], p.Escalate["prompt:*"]
	cfg.Deny["resource:notes"] = []string{"*://secret/*"}
	cfg.Deny["*"] = []string{"*passwd*"}
	return cfg
}

func benchCheck(b *testing.B, c warden.Checker, req warden.Request, want warden.Effect) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, _ := c.Check(ctx, req)
		if d.Effect != want {
			b.Fatalf("effect %s", d.Effect)
		}
	}
}

func BenchmarkRulePolicy(b *testing.B) {
	b.Run("generic-50-rules-no-match", func(b *testing.B) {
		p := mustRules(b, fiftyRules("deploy"))
		req := warden.Request{Capability: warden.CapToolCall, Target: "deploy", Args: warden.MustParseArgs(`{"action":"rollout","service":"payments-api","env":"production","replicas":3}`)}
		benchCheck(b, p, req, warden.Deny)
	})
	b.Run("reader-50-rules-no-match", func(b *testing.B) {
		p := mustRules(b, fiftyRules("reader"))
		req := warden.Request{Capability: warden.CapToolCall, Target: "reader", Args: warden.MustParseArgs(`{"path":"/srv/app/config/production.yaml"}`)}
		benchCheck(b, p, req, warden.Deny)
	})
	b.Run("resource-family-50-rules-no-match", func(b *testing.B) {
		p := mustRules(b, familyRules())
		req := warden.Request{Capability: warden.CapToolCall, Target: "resource:notes", Args: warden.MustParseArgs(`{"uri":"notes://team/q3/plan.md"}`)}
		benchCheck(b, p, req, warden.Deny)
	})
	b.Run("bash-10-rules", func(b *testing.B) {
		p := mustRules(b, policy.RuleConfig{
			Deny:     map[string][]string{"bash": {"rm *", "sudo *", "chmod *", "kill *", "mkfs *", "curl *", "wget *"}},
			Allow:    map[string][]string{"bash": {"git status*", "git log*"}},
			Escalate: map[string][]string{"bash": {"*"}},
		})
		req := warden.Request{Capability: warden.CapToolCall, Target: "bash", Args: warden.MustParseArgs(bash("git log --oneline -n 20 -- src/"))}
		benchCheck(b, p, req, warden.Allow)
	})
	b.Run("bash-10-rules-wrapped", func(b *testing.B) {
		p := mustRules(b, policy.RuleConfig{
			Deny:     map[string][]string{"bash": {"rm *", "sudo *", "chmod *", "kill *", "mkfs *", "curl *", "wget *"}},
			Allow:    map[string][]string{"bash": {"git status*", "git log*"}},
			Escalate: map[string][]string{"bash": {"*"}},
		})
		req := warden.Request{Capability: warden.CapToolCall, Target: "bash", Args: warden.MustParseArgs(bash("timeout 30 env GIT_PAGER=cat git log --oneline"))}
		benchCheck(b, p, req, warden.Ask)
	})
}

func BenchmarkRolePolicy(b *testing.B) {
	p := mustRoles(b, supportRoles, "support", nil)
	b.Run("allow", func(b *testing.B) {
		benchCheck(b, p, warden.Request{Capability: warden.CapToolCall, Target: "update_ticket"}, warden.Allow)
	})
	caps := saveNotePolicy(b, "admin")
	b.Run("capability", func(b *testing.B) {
		benchCheck(b, caps, warden.Request{Capability: warden.CapMemoryWrite, Target: "save_note"}, warden.Allow)
	})
}

func BenchmarkCondition(b *testing.B) {
	p := parse(b, `version: 1
conditions:
  - id: big-refunds
    when: 'tool == "refund" && double(args.amount) > 1000.0'
    effect: escalate
`)
	conds := p.Conditions()
	b.Run("args", func(b *testing.B) {
		in := policy.ConditionInput{Tool: "refund", Args: warden.MustParseArgs(`{"amount":1500,"currency":"EUR"}`), Capability: warden.CapToolCall}
		b.ReportAllocs()
		for b.Loop() {
			if d, ok := conds.Evaluate(in); !ok || d.Effect != warden.Ask {
				b.Fatal("no match")
			}
		}
	})
	b.Run("short-circuit", func(b *testing.B) {
		in := policy.ConditionInput{Tool: "lookup", Args: warden.MustParseArgs(`{"amount":1500}`), Capability: warden.CapToolCall}
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := conds.Evaluate(in); ok {
				b.Fatal("matched")
			}
		}
	})
}

func TestCheckAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	tests := []struct {
		name string
		c    warden.Checker
		req  warden.Request
		max  float64
	}{
		{"reader", mustRules(t, fiftyRules("reader")), warden.Request{Capability: warden.CapToolCall, Target: "reader", Args: warden.MustParseArgs(`{"path":"/srv/x"}`)}, 0},
		{"editor", mustRules(t, fiftyRules("editor")), warden.Request{Capability: warden.CapToolCall, Target: "editor", Args: warden.MustParseArgs(`{"file_path":"/srv/x","action":"write"}`)}, 0},
		{"generic", mustRules(t, fiftyRules("deploy")), warden.Request{Capability: warden.CapToolCall, Target: "deploy", Args: warden.MustParseArgs(`{"action":"rollout","service":"api","replicas":3}`)}, 0},
		{"resource own, family and star", mustRules(t, familyRules()), warden.Request{Capability: warden.CapToolCall, Target: "resource:notes", Args: warden.MustParseArgs(`{"uri":"notes://team/q3/plan.md"}`)}, 0},
		{"resource own", mustRules(t, fiftyRules("resource:notes")), warden.Request{Capability: warden.CapToolCall, Target: "resource:notes", Args: warden.MustParseArgs(`{"uri":"notes://team/q3/plan.md"}`)}, 0},
		{"prompt family", mustRules(t, familyRules()), warden.Request{Capability: warden.CapToolCall, Target: "prompt:mcp__notes__summarize", Args: warden.MustParseArgs(`{"topic":"q3","length":"short"}`)}, 0},
		{"role", mustRoles(t, supportRoles, "support", nil), warden.Request{Capability: warden.CapToolCall, Target: "update_ticket"}, 0},
	}
	for _, tt := range tests {
		got := testing.AllocsPerRun(200, func() { _, _ = tt.c.Check(ctx, tt.req) })
		if got > tt.max {
			t.Errorf("%s: %.1f allocs per check, budget %.0f", tt.name, got, tt.max)
		}
	}
}
