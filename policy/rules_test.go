package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

func mustRules(t testing.TB, cfg policy.RuleConfig) *policy.RulePolicy {
	t.Helper()
	p, err := policy.NewRules(cfg)
	if err != nil {
		t.Fatalf("NewRules: %v", err)
	}
	return p
}

func check(t testing.TB, c warden.Checker, tool, args string) warden.Decision {
	t.Helper()
	d, err := c.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: tool, Args: warden.MustParseArgs(args)})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return d
}

func bash(cmd string) string {
	a, err := warden.NewArgs("command", cmd)
	if err != nil {
		panic(err)
	}
	b, _ := a.MarshalJSON()
	return string(b)
}

func TestPresetsAndModes(t *testing.T) {
	tests := []struct {
		name   string
		p      *policy.RulePolicy
		tool   string
		args   string
		effect warden.Effect
	}{
		{"allow_all bash rm", policy.AllowAll(), "bash", bash("rm -rf /"), warden.Allow},
		{"allow_all editor", policy.AllowAll(), "editor", `{"action":"write","file_path":"/etc/passwd"}`, warden.Allow},
		{"allow_all reader", policy.AllowAll(), "reader", `{"path":"/tmp/x"}`, warden.Allow},
		{"allow_all skips shell check", policy.AllowAll(), "bash", bash("echo hi; rm -rf /"), warden.Allow},
		{"deny_all reader", policy.DenyAll(), "reader", `{"path":"/tmp/x"}`, warden.Deny},
		{"deny_all search", policy.DenyAll(), "search", `{"pattern":"x"}`, warden.Deny},
		{"deny_all editor", policy.DenyAll(), "editor", `{"file_path":"/tmp/x"}`, warden.Deny},
		{"deny_all bash", policy.DenyAll(), "bash", bash("echo hi"), warden.Deny},
		{"read_only reader", policy.ReadOnly(), "reader", `{"path":"/tmp/x.py"}`, warden.Allow},
		{"read_only search", policy.ReadOnly(), "search", `{"pattern":"def foo","path":"."}`, warden.Allow},
		{"read_only context", policy.ReadOnly(), "context", `{"action":"status"}`, warden.Allow},
		{"read_only context empty", policy.ReadOnly(), "context", `{}`, warden.Allow},
		{"read_only editor", policy.ReadOnly(), "editor", `{"action":"write","file_path":"/tmp/x"}`, warden.Deny},
		{"read_only bash", policy.ReadOnly(), "bash", bash("echo hi"), warden.Deny},
		{"safe rm", policy.Safe(), "bash", bash("rm /tmp/x"), warden.Deny},
		{"safe sudo", policy.Safe(), "bash", bash("sudo apt-get install curl"), warden.Deny},
		{"safe cargo", policy.Safe(), "bash", bash("cargo build"), warden.Ask},
		{"safe uv", policy.Safe(), "bash", bash("uv run pytest"), warden.Ask},
		{"safe reader", policy.Safe(), "reader", `{"path":"/x"}`, warden.Allow},
		{"safe editor", policy.Safe(), "editor", `{"action":"write","file_path":"/x"}`, warden.Allow},
		{"safe /bin/rm", policy.Safe(), "bash", bash("/bin/rm -rf /"), warden.Deny},
		{"safe double space rm", policy.Safe(), "bash", bash("rm  -rf /"), warden.Deny},
		{"safe bare rm escalates", policy.Safe(), "bash", bash("rm"), warden.Ask},
		{"safe sudo-wrapped rm", policy.Safe(), "bash", bash("env FOO=1 rm -rf /"), warden.Deny},
		{"safe sh -c rm", policy.Safe(), "bash", bash("sh -c 'rm -rf /'"), warden.Deny},
		{"safe timeout rm", policy.Safe(), "bash", bash("timeout 5 /usr/bin/rm x"), warden.Deny},
		{"safe find exec rm", policy.Safe(), "bash", bash("find . -name '*.o' -exec rm {} ;"), warden.Deny},
		{"safe xargs kill", policy.Safe(), "bash", bash("xargs kill -9"), warden.Deny},
		{"safe unknown tool", policy.Safe(), "deploy", `{"env":"prod"}`, warden.Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := check(t, tt.p, tt.tool, tt.args)
			if d.Effect != tt.effect {
				t.Fatalf("got %s (%s), want %s", d.Effect, d.Rationale, tt.effect)
			}
		})
	}
}

func TestRuleOrder(t *testing.T) {
	tests := []struct {
		name      string
		cfg       policy.RuleConfig
		tool      string
		args      string
		effect    warden.Effect
		rationale string
		ruleID    string
	}{
		{"deny beats allow", policy.RuleConfig{Allow: map[string][]string{"bash": {"git *"}}, Deny: map[string][]string{"bash": {"git *"}}}, "bash", bash("git status"), warden.Deny, "denied by rule: git *", "git *"},
		{"allow beats escalate", policy.RuleConfig{Allow: map[string][]string{"bash": {"cargo *"}}, Escalate: map[string][]string{"bash": {"*"}}}, "bash", bash("cargo build"), warden.Allow, "allowed by rule: cargo *", "cargo *"},
		{"no match", policy.RuleConfig{Allow: map[string][]string{"bash": {"git *"}}}, "bash", bash("pytest tests/"), warden.Deny, "no matching rule, default deny", "default"},
		{"allow star", policy.RuleConfig{Allow: map[string][]string{"bash": {"*"}}}, "bash", bash("uv run pytest"), warden.Allow, "allowed by rule: *", "*"},
		{"git log allowed", policy.RuleConfig{Allow: map[string][]string{"bash": {"git *"}}}, "bash", bash("git log --oneline"), warden.Allow, "allowed by rule: git *", "git *"},
		{"uv not allowed by git", policy.RuleConfig{Allow: map[string][]string{"bash": {"git *"}}}, "bash", bash("uv run pytest"), warden.Deny, "no matching rule, default deny", "default"},
		{"control ; denied", policy.RuleConfig{Allow: map[string][]string{"bash": {"*"}}}, "bash", bash("echo hi; rm /tmp/x"), warden.Deny, "Shell control operator requires explicit approval: 'echo hi; rm /tmp/x'", "shell.control"},
		{"control && denied", policy.RuleConfig{Allow: map[string][]string{"bash": {"*"}}}, "bash", bash("git status && rm -rf /tmp/x"), warden.Deny, "Shell control operator requires explicit approval: 'git status && rm -rf /tmp/x'", "shell.control"},
		{"reader rule vs bash", policy.RuleConfig{Allow: map[string][]string{"reader": {"*"}}}, "bash", bash("pwd"), warden.Deny, "no matching rule, default deny", "default"},
		{"escalate", policy.RuleConfig{Escalate: map[string][]string{"bash": {"*"}}}, "bash", bash("ls"), warden.Ask, "escalate by rule: *", "*"},
		{"star rules apply after tool rules", policy.RuleConfig{Allow: map[string][]string{"*": {"*"}}, Deny: map[string][]string{"deploy": {"* prod*"}}}, "deploy", `{"env":"prod"}`, warden.Deny, "denied by rule: * prod*", "* prod*"},
		{"case-insensitive pattern", policy.RuleConfig{Deny: map[string][]string{"bash": {"rm *"}}, Allow: map[string][]string{"bash": {"*"}}}, "bash", bash("RM -rf x"), warden.Deny, "denied by rule: rm *", "rm *"},
		{"tool name case-insensitive", policy.RuleConfig{Allow: map[string][]string{"Reader": {"*"}}}, "READER", `{"path":"/x"}`, warden.Allow, "allowed by rule: *", "*"},
		{"missing command", policy.RuleConfig{Allow: map[string][]string{"bash": {"*"}}}, "bash", `{"cmd":"ls"}`, warden.Deny, "bash call has no string 'command' argument", "bash.command"},
		{"wrapped command judged", policy.RuleConfig{Allow: map[string][]string{"bash": {"sudo *"}}}, "bash", bash("sudo rm -rf /"), warden.Deny, "no matching rule, default deny", "default"},
		{"wrapped deny wins over escalate", policy.RuleConfig{Escalate: map[string][]string{"bash": {"nohup *"}}, Deny: map[string][]string{"bash": {"curl *"}}}, "bash", bash("nohup curl http://x"), warden.Deny, "denied by rule: curl *", "curl *"},
		{"escalate over allow across wrappers", policy.RuleConfig{Allow: map[string][]string{"bash": {"time *"}}, Escalate: map[string][]string{"bash": {"make *"}}}, "bash", bash("time make all"), warden.Ask, "escalate by rule: make *", "make *"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := check(t, mustRules(t, tt.cfg), tt.tool, tt.args)
			if d.Effect != tt.effect || d.Rationale != tt.rationale || d.RuleID != tt.ruleID {
				t.Fatalf("got %s %q %q, want %s %q %q", d.Effect, d.RuleID, d.Rationale, tt.effect, tt.ruleID, tt.rationale)
			}
		})
	}
}

func TestAliases(t *testing.T) {
	p := mustRules(t, policy.RuleConfig{
		Allow:   map[string][]string{"bash_tool": {"echo *"}, "editor_tool": {"*"}, "reader_tool": {"*"}, "run_shell": {"ls *"}},
		Aliases: map[string]string{"Run_Shell": "bash"},
	})
	cfg := p.Config()
	for _, k := range []string{"bash_tool", "editor_tool", "reader_tool", "run_shell"} {
		if _, ok := cfg.Allow[k]; ok {
			t.Errorf("key %q still present after normalization", k)
		}
	}
	for _, k := range []string{"bash", "editor", "reader"} {
		if _, ok := cfg.Allow[k]; !ok {
			t.Errorf("canonical key %q missing", k)
		}
	}
	if got := cfg.Allow["bash"]; len(got) != 2 {
		t.Errorf("bash rules = %v, want echo and ls merged", got)
	}
	if d := check(t, p, "bash_tool", bash("echo ok")); d.Effect != warden.Allow {
		t.Errorf("bash_tool echo: %s", d.Rationale)
	}
	if d := check(t, p, "run_shell", bash("ls -la")); d.Effect != warden.Allow {
		t.Errorf("run_shell ls: %s", d.Rationale)
	}
	if d := check(t, p, "run_shell", bash("ls; rm x")); d.Effect != warden.Deny || !strings.Contains(d.Rationale, "Shell control operator") {
		t.Errorf("aliased bash must get the shell check, got %s %s", d.Effect, d.Rationale)
	}
}

func TestConstructionErrors(t *testing.T) {
	for _, cfg := range []policy.RuleConfig{
		{Mode: "rule"},
		{Mode: "ALLOW_ALL"},
		{Allow: map[string][]string{"": {"*"}}},
		{Match: map[string]string{"deploy": "{env"}},
		{Match: map[string]string{"deploy": "env}"}},
		{Aliases: map[string]string{"x": ""}},
	} {
		if _, err := policy.NewRules(cfg); err == nil {
			t.Errorf("NewRules(%+v) succeeded, want an error", cfg)
		}
	}
	if _, err := policy.PresetRules("paranoid"); err == nil {
		t.Error("unknown preset accepted")
	}
}

func TestRuleMapsAreCopied(t *testing.T) {
	allow := map[string][]string{"bash": {"ls *"}}
	p := mustRules(t, policy.RuleConfig{Allow: allow})
	allow["bash"][0] = "*"
	allow["bash"] = append(allow["bash"], "rm *")
	if d := check(t, p, "bash", bash("rm x")); d.Effect != warden.Deny {
		t.Fatalf("policy changed after caller mutated its map: %s", d.Rationale)
	}
}

func TestMatchStrings(t *testing.T) {
	p := mustRules(t, policy.RuleConfig{Match: map[string]string{"deploy": "{env} {service}"}})
	tests := []struct {
		tool, args, want string
	}{
		{"mcp__x__call", `{"action":"call","foo":"bar"}`, "call call bar"},
		{"thing", `{"foo":"bar","action":"call"}`, "call bar call"},
		{"thing", `{"b":2,"a":1}`, " 2 1"},
		{"thing", `{"n":1.50,"t":true,"f":false,"z":null,"o":{"k":"v","n":[1,"a"]},"arr":[]}`, " 1.50 true false null {\"k\":\"v\",\"n\":[1,\"a\"]} []"},
		{"thing", `{}`, " "},
		{"thing", `{"action":5}`, " 5"},
		{"editor", `{"action":"write","file_path":"/etc/passwd"}`, "/etc/passwd"},
		{"editor_tool", `{"file_path":7}`, "7"},
		{"reader", `{"path":"/tmp/x"}`, "/tmp/x"},
		{"reader", `{}`, ""},
		{"search", `{"pattern":"def foo","path":"."}`, "def foo ."},
		{"search", `{"pattern":"def foo"}`, "def foo "},
		{"deploy", `{"service":"api","env":"prod","x":1}`, "prod api"},
		{"deploy", `{"service":"api"}`, " api"},
		{"bash", bash("ls  -la"), "ls  -la"},
		{"thing", `{"s":"a<b>&c"}`, " a<b>&c"},
	}
	for _, tt := range tests {
		if got := p.MatchString(tt.tool, warden.MustParseArgs(tt.args)); got != tt.want {
			t.Errorf("MatchString(%s, %s) = %q, want %q", tt.tool, tt.args, got, tt.want)
		}
	}
}

func TestGlobsInPolicy(t *testing.T) {
	tests := []struct {
		pattern, subject string
		want             bool
	}{
		{"*", "a/b\nc", true},
		{"rm *", "RM -rf x", true},
		{"[!a]x", "bx", true},
		{"[!a]x", "ax", false},
		{"a[b", "a[b", true},
		{"/work/*", "/work/a/b/c.go", true},
		{"*.env", "/x/.env", true},
		{"?", "é", true},
	}
	for _, tt := range tests {
		p := mustRules(t, policy.RuleConfig{Allow: map[string][]string{"reader": {tt.pattern}}})
		args, _ := warden.NewArgs("path", tt.subject)
		d, _ := p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "reader", Args: args})
		if got := d.Effect == warden.Allow; got != tt.want {
			t.Errorf("%q vs %q: allowed=%v, want %v", tt.pattern, tt.subject, got, tt.want)
		}
	}
}

func TestEscalationHandler(t *testing.T) {
	base := policy.RuleConfig{Escalate: map[string][]string{"bash": {"*"}}}
	ctx := context.Background()
	req := warden.Request{Capability: warden.CapToolCall, Target: "bash", Args: warden.MustParseArgs(bash("make deploy"))}

	t.Run("no handler returns ask", func(t *testing.T) {
		d, _ := mustRules(t, base).Check(ctx, req)
		if d.Effect != warden.Ask || d.Rationale != "escalate by rule: *" {
			t.Fatalf("got %s %q", d.Effect, d.Rationale)
		}
		f := warden.EscalationFault("bash", "", d)
		if f.Effect != warden.Deny || !f.Fault || !strings.HasSuffix(f.Rationale, "No escalation handler configured.") {
			t.Fatalf("fault = %+v", f)
		}
		if f.Rationale != "Permission escalation required for bash.: escalate by rule: *. No escalation handler configured." {
			t.Fatalf("fault text = %q", f.Rationale)
		}
	})
	t.Run("declined", func(t *testing.T) {
		cfg := base
		cfg.OnEscalate = func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) {
			return policy.EscalationAnswer{}, nil
		}
		d, _ := mustRules(t, cfg).Check(ctx, req)
		if d.Effect != warden.Deny || d.Fault || d.Rationale != "Permission escalation for bash. was declined: escalate by rule: *" {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("approved unchanged", func(t *testing.T) {
		cfg := base
		var seen policy.Escalation
		cfg.OnEscalate = func(_ context.Context, e policy.Escalation) (policy.EscalationAnswer, error) {
			seen = e
			return policy.EscalationAnswer{Approve: true}, nil
		}
		d, _ := mustRules(t, cfg).Check(ctx, req)
		if d.Effect != warden.Allow || d.Args != nil {
			t.Fatalf("got %+v", d)
		}
		if seen.Tool != "bash" || seen.RuleID != "*" || !seen.Args.Equal(req.Args) {
			t.Fatalf("handler saw %+v", seen)
		}
	})
	t.Run("approved with replacement", func(t *testing.T) {
		cfg := base
		repl := warden.MustParseArgs(bash("make plan"))
		cfg.OnEscalate = func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) {
			return policy.EscalationAnswer{Approve: true, Args: &repl}, nil
		}
		d, _ := mustRules(t, cfg).Check(ctx, req)
		if d.Effect != warden.Allow || d.Args == nil || !d.Args.Equal(repl) {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("handler error fails closed", func(t *testing.T) {
		cfg := base
		cfg.OnEscalate = func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) {
			return policy.EscalationAnswer{Approve: true}, errors.New("approver unreachable")
		}
		d, _ := mustRules(t, cfg).Check(ctx, req)
		if d.Effect != warden.Deny || !d.Fault || !strings.Contains(d.Rationale, "evaluator error") || !strings.Contains(d.Rationale, "approver unreachable") {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("handler panic fails closed", func(t *testing.T) {
		cfg := base
		cfg.OnEscalate = func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) { panic("boom") }
		d, _ := mustRules(t, cfg).Check(ctx, req)
		if d.Effect != warden.Deny || !d.Fault {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("action named", func(t *testing.T) {
		cfg := policy.RuleConfig{Escalate: map[string][]string{"editor": {"*"}}, OnEscalate: func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) {
			return policy.EscalationAnswer{}, nil
		}}
		d, _ := mustRules(t, cfg).Check(ctx, warden.Request{Capability: warden.CapToolCall, Target: "editor_tool", Args: warden.MustParseArgs(`{"action":"write","file_path":"/x"}`)})
		if d.Rationale != "Permission escalation for editor.write was declined: escalate by rule: *" {
			t.Fatalf("got %q", d.Rationale)
		}
	})
}

func TestRulePolicyRefusesOtherCapabilities(t *testing.T) {
	d, _ := policy.AllowAll().Check(context.Background(), warden.Request{Capability: warden.CapUserData, Target: "x"})
	if d.Effect != warden.Deny {
		t.Fatalf("rule policy allowed a capability request: %+v", d)
	}
	if policy.AllowAll().Governs(warden.CapUserData) {
		t.Fatal("rule policy must govern only tool_call")
	}
}

func TestMayAllow(t *testing.T) {
	ro := policy.ReadOnly()
	for tool, want := range map[string]bool{"reader": true, "search": true, "bash": false, "editor": false, "deploy": false} {
		if got := ro.MayAllow(tool); got != want {
			t.Errorf("read_only MayAllow(%s) = %v, want %v", tool, got, want)
		}
	}
	if !policy.Safe().MayAllow("bash") || policy.DenyAll().MayAllow("reader") || !policy.AllowAll().MayAllow("x") {
		t.Error("MayAllow wrong for safe/deny_all/allow_all")
	}
}
