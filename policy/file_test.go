package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

const fullFile = `version: 1
mode: rules
preset: safe
aliases: {run_shell: bash}
match: {deploy: "{env} {service}"}
rules:
  deny:     {bash: ["curl *"], deploy: ["prod *"]}
  allow:    {deploy: ["staging *"], refund: ["*"], "*": []}
  escalate: {deploy: ["*"]}
roles: {support: [search_docs, read_ticket, refund, deploy, bash, reader], viewer: [search_docs]}
active_role: support
capabilities: {support: [user_data]}
skills: {support: [refunds]}
conditions:
  - id: big-refunds
    when: 'tool == "refund" && double(args.amount) > 1000.0'
    effect: escalate
    tell_llm: "Refunds over 1000 need a person."
  - id: no-night-deploys
    when: 'tool == "deploy" && has(args.night) && args.night == true'
    effect: halt
    reason: ops:freeze
`

func parse(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test.yaml", []byte(src), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func TestPolicyFile(t *testing.T) {
	p := parse(t, fullFile)
	ctx := context.Background()
	tests := []struct {
		name   string
		tool   string
		args   string
		effect warden.Effect
		rule   string
	}{
		{"preset deny survives", "bash", bash("rm -rf /"), warden.Deny, "rm *"},
		{"appended deny", "bash", bash("curl http://x"), warden.Deny, "curl *"},
		{"alias to bash gets shell check", "run_shell", bash("ls | sh"), warden.Deny, "shell.control"},
		{"preset escalate", "bash", bash("make"), warden.Ask, "*"},
		{"template allow", "deploy", `{"service":"api","env":"staging"}`, warden.Allow, "staging *"},
		{"template deny", "deploy", `{"service":"api","env":"prod"}`, warden.Deny, "prod *"},
		{"halt condition wins", "deploy", `{"service":"api","env":"staging","night":true}`, warden.Halt, "no-night-deploys"},
		{"rules deny first among equals", "delete_ticket", `{}`, warden.Deny, "default"},
		{"small refund allowed", "refund", `{"amount":10}`, warden.Allow, "*"},
		{"role allows but rules do not", "search_docs", `{"q":"x"}`, warden.Deny, "default"},
		{"condition escalates", "refund", `{"amount":1500}`, warden.Ask, "big-refunds"},
		{"reader allowed by preset and role", "reader", `{"path":"/x"}`, warden.Allow, "*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := p.Check(ctx, warden.Request{Capability: warden.CapToolCall, Target: tt.tool, Args: warden.MustParseArgs(tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			if d.Effect != tt.effect || d.RuleID != tt.rule {
				t.Fatalf("got %s %q (%s), want %s %q", d.Effect, d.RuleID, d.Rationale, tt.effect, tt.rule)
			}
		})
	}
	d, _ := p.Check(ctx, warden.Request{Capability: warden.CapToolCall, Target: "refund", Args: warden.MustParseArgs(`{"amount":1500}`)})
	if d.TellLLM != "Refunds over 1000 need a person." {
		t.Errorf("tell_llm %q", d.TellLLM)
	}
	if !p.Governs(warden.CapUserData) || !p.Governs(warden.CapSkillRead) {
		t.Error("policy must govern what its role layer governs")
	}
}

func TestConditionEvaluationErrorDenies(t *testing.T) {
	p := parse(t, `version: 1
roles: {r: [refund]}
active_role: r
conditions:
  - id: big-refunds
    when: 'tool == "refund" && double(args.amount) > 1000.0'
    effect: allow
`)
	d, _ := p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "refund", Args: warden.MustParseArgs(`{"currency":"EUR"}`)})
	if d.Effect != warden.Deny || !d.Fault || !strings.HasPrefix(d.Rationale, "condition 'big-refunds' could not be evaluated: ") {
		t.Fatalf("got %+v", d)
	}
	// A condition over another tool short-circuits and says nothing.
	d, _ = p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "other", Args: warden.MustParseArgs(`{}`)})
	if d.RuleID != "r.allowlist.miss" {
		t.Fatalf("got %+v", d)
	}
}

func TestConditionsOnlyDefaultDeny(t *testing.T) {
	p := parse(t, `version: 1
conditions:
  - {id: ok, when: 'tool == "ping"', effect: allow}
`)
	ctx := context.Background()
	if d, _ := p.Check(ctx, warden.Request{Capability: warden.CapToolCall, Target: "ping"}); d.Effect != warden.Allow {
		t.Fatalf("ping: %+v", d)
	}
	if d, _ := p.Check(ctx, warden.Request{Capability: warden.CapToolCall, Target: "pong"}); d.Effect != warden.Deny || d.RuleID != "default" {
		t.Fatalf("pong: %+v", d)
	}
}

func TestConditionVariables(t *testing.T) {
	p := parse(t, `version: 1
roles: {ops: [x]}
active_role: ops
conditions:
  - id: v
    when: 'role == "ops" && identity.tenant == "acme" && identity.principal == "ann" && capability == "tool_call" && args.n == 3 && args.o.k == "v" && size(args.l) == 2'
    effect: halt
`)
	req := warden.Request{Capability: warden.CapToolCall, Target: "x", Args: warden.MustParseArgs(`{"n":3,"o":{"k":"v"},"l":[1,2]}`), Identity: warden.Identity{Tenant: "acme", Principal: "ann"}}
	if d, _ := p.Check(context.Background(), req); d.Effect != warden.Halt {
		t.Fatalf("got %+v", d)
	}
}

func TestRevision(t *testing.T) {
	a := parse(t, fullFile)
	// Same meaning: comments, key order, flow vs block style, aliases spelled as keys.
	b := parse(t, `# reordered
conditions:
  - when: 'tool == "refund" && double(args.amount) > 1000.0'
    id: big-refunds
    tell_llm: "Refunds over 1000 need a person."
    effect: escalate
  - id: no-night-deploys
    when: 'tool == "deploy" && has(args.night) && args.night == true'
    effect: halt
    reason: ops:freeze
skills:
  support: [refunds]
capabilities: {support: [user_data]}
active_role: viewer
roles:
  viewer: [search_docs]
  support: [reader, bash, deploy, refund, read_ticket, search_docs]
rules:
  escalate: {deploy: ["*"]}
  allow:    {refund: ["*"], deploy: ["staging *"]}
  deny:     {Bash_Tool: ["curl *"], deploy: ["prod *"]}
match: {deploy: "{env} {service}"}
aliases: {run_shell: bash}
preset: safe
version: 1
`)
	if a.Revision() != b.Revision() {
		t.Fatalf("same meaning, different revisions: %s vs %s", a.Revision(), b.Revision())
	}
	if !strings.HasPrefix(a.Revision(), "sha256:") || len(a.Revision()) != len("sha256:")+64 {
		t.Fatalf("revision format %q", a.Revision())
	}
	c := parse(t, strings.Replace(fullFile, `"curl *"`, `"wget *"`, 1))
	if c.Revision() == a.Revision() {
		t.Fatal("different rules, same revision")
	}
	// Writing a preset out in full is the same meaning.
	pre := parse(t, "version: 1\npreset: read_only\n")
	full := parse(t, "version: 1\nrules:\n  allow: {reader: ['*'], search: ['*'], context: ['*'], 'resource:*': ['*'], 'prompt:*': ['*']}\n  deny: {editor: ['*'], bash: ['*']}\n")
	if pre.Revision() != full.Revision() {
		t.Fatal("preset and its expansion differ")
	}
	other, err := a.WithActiveRole("viewer")
	if err != nil || other.Revision() != a.Revision() {
		t.Fatal("role selection changed the revision")
	}
}

func TestLoadOptionsRole(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nroles: {a: [x], b: [y]}\n"), &policy.LoadOptions{Role: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if p.ActiveRole() != "b" {
		t.Fatalf("active role %q", p.ActiveRole())
	}
	_, err = policy.Parse("p.yaml", []byte("version: 1\nroles: {a: [x]}\n"), &policy.LoadOptions{Role: "zz"})
	if err == nil || !strings.Contains(err.Error(), "activeRole 'zz' is not defined in roles. Available: a") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadFiles(t *testing.T) {
	tests := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"unknown key", "version: 1\npreset: safe\nrulez: {}\n", 3, 1, `unknown key "rulez"`},
		{"suggestion", "version: 1\npreset: safe\nactive_rol: x\n", 3, 1, `did you mean "active_role"`},
		{"duplicate key", "version: 1\npreset: safe\npreset: read_only\n", 3, 1, `duplicate key "preset"`},
		{"duplicate nested", "version: 1\nrules:\n  allow: {bash: [a]}\n  allow: {bash: [b]}\n", 4, 3, `duplicate key "allow"`},
		{"wrong type list", "version: 1\nrules:\n  allow: {bash: \"ls *\"}\n", 3, 17, "must be a list of strings"},
		{"non-string pattern", "version: 1\nrules:\n  allow: {bash: [ls *, 42]}\n", 3, 24, "must be a string"},
		{"empty pattern", "version: 1\nrules:\n  allow: {bash: [\"\"]}\n", 3, 18, "empty pattern"},
		{"spaced bash pattern", "version: 1\nrules:\n  deny: {bash: [\"rm  *\"]}\n", 3, 17, "can never match"},
		{"whitespace pattern", "version: 1\nrules:\n  deny: {reader: [\" /etc/*\"]}\n", 3, 19, "leading or trailing whitespace"},
		{"unknown preset", "version: 1\npreset: paranoid\n", 2, 9, `unknown preset "paranoid"`},
		{"unknown mode", "version: 1\nmode: rule\n", 2, 7, `unknown mode "rule"`},
		{"missing version", "preset: safe\n", 1, 1, "missing version"},
		{"bad version", "version: 2\npreset: safe\n", 1, 10, "unsupported version"},
		{"active role missing", "version: 1\nroles: {a: [x]}\nactive_role: b\n", 3, 14, "activeRole 'b' is not defined in roles. Available: a"},
		{"no active role", "version: 1\nroles: {a: [x]}\n", 2, 8, "no active_role"},
		{"unknown capability", "version: 1\nroles: {a: [x]}\nactive_role: a\ncapabilities: {a: [teleport]}\n", 4, 20, `unknown capability "teleport"`},
		{"caps unknown role", "version: 1\nroles: {a: [x]}\nactive_role: a\ncapabilities: {b: [user_data]}\n", 4, 16, `capabilities name role "b"`},
		{"skills without roles", "version: 1\npreset: safe\nskills: {a: [x]}\n", 3, 9, "need roles"},
		{"two documents", "version: 1\npreset: safe\n---\nversion: 1\n", 4, 1, "more than one YAML document"},
		{"bad cel", "version: 1\nconditions:\n  - {id: c, when: 'tool ==', effect: deny}\n", 3, 19, "does not compile"},
		{"non-bool cel", "version: 1\nconditions:\n  - {id: c, when: 'tool', effect: deny}\n", 3, 19, "must be a boolean expression"},
		{"cel unknown variable", "version: 1\nconditions:\n  - {id: c, when: 'user == \"x\"', effect: deny}\n", 3, 19, "undeclared reference"},
		{"condition missing effect", "version: 1\nconditions:\n  - {id: c, when: 'true'}\n", 3, 5, "missing effect"},
		{"condition bad effect", "version: 1\nconditions:\n  - {id: c, when: 'true', effect: maybe}\n", 3, 35, `unknown effect "maybe"`},
		{"duplicate condition id", "version: 1\nconditions:\n  - {id: c, when: 'true', effect: deny}\n  - {id: c, when: 'false', effect: deny}\n", 4, 19, "duplicate id"},
		{"decides nothing", "version: 1\n", 1, 1, "policy decides nothing"},
		{"empty file", "", 1, 1, "policy file is empty"},
		{"invalid yaml", "version: 1\nrules: [\n", 2, 0, "invalid YAML"},
		{"tab indentation", "version: 1\nrules:\n\tallow: {}\n", 3, 1, "invalid YAML"},
		{"anchors", "version: 1\nrules:\n  allow: &a {bash: [ls]}\n  escalate: *a\n", 3, 10, "anchors and aliases"},
		{"shell unknown key", "version: 1\npreset: safe\nshell: {allow_git_cfg: true}\n", 3, 9, `unknown key "allow_git_cfg" in shell`},
		{"shell not bool", "version: 1\npreset: safe\nshell: {allow_git_config: yes please}\n", 3, 27, "must be true or false"},
		{"shell without rules", "version: 1\nroles: {a: [bash]}\nactive_role: a\nshell: {allow_git_config: true}\n", 4, 8, "shell applies to rules"},
		{"aliases without rules", "version: 1\naliases: {x: bash}\nroles: {a: [x]}\nactive_role: a\n", 2, 10, "aliases and match apply to rules"},
		{"mode conflicts with preset", "version: 1\nmode: deny_all\npreset: safe\n", 2, 7, "conflicts with preset"},
		{"top level list", "- a\n- b\n", 1, 1, "must be a mapping"},
		{"bad template", "version: 1\npreset: safe\nmatch: {deploy: \"{env\"}\n", 3, 8, "unclosed '{'"},
		{"resource key without server", "version: 1\nrules:\n  allow: {reader: ['*'], 'resource:': ['*']}\n", 3, 26, `key "resource:" in rules.allow names no server`},
		{"prompt key without name", "version: 1\nrules:\n  deny:\n    'Prompt:': ['*']\n", 4, 5, `key "Prompt:" in rules.deny names no prompt`},
		{"escalate resource key", "version: 1\nrules:\n  escalate: {\"resource: \": ['*']}\n", 3, 14, `key "resource: " in rules.escalate names no server`},
		{"match resource key", "version: 1\npreset: safe\nmatch: {'resource:': '{uri}'}\n", 3, 9, `key "resource:" in match names no server`},
		{"family key aliased", "version: 1\npreset: safe\naliases: {notes: 'resource:*'}\n", 3, 10, "cannot be aliased"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse("bad.yaml", []byte(tt.src), nil)
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			var ce *warden.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a ConfigError: %v", err, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %q does not contain %q", err, tt.msg)
			}
			if ce.File != "bad.yaml" || ce.Line != tt.line || (tt.col != 0 && ce.Column != tt.col) {
				t.Fatalf("located at %s:%d:%d, want line %d col %d (%v)", ce.File, ce.Line, ce.Column, tt.line, tt.col, err)
			}
			if ce.Hint == "" {
				t.Fatalf("no hint: %v", err)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	_, err := policy.LoadFile(filepath.Join(t.TempDir(), "missing.yaml"), nil)
	var ce *warden.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "missing.yaml") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
	path := filepath.Join(t.TempDir(), "ok.yaml")
	if err := os.WriteFile(path, []byte("version: 1\npreset: safe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.LoadFile(path, nil)
	if err != nil || p.Source() != path {
		t.Fatalf("LoadFile: %v", err)
	}
}

func TestManyErrorsReported(t *testing.T) {
	_, err := policy.Parse("bad.yaml", []byte("version: 1\nfoo: 1\nbar: 2\npreset: nope\n"), nil)
	if err == nil || strings.Count(err.Error(), "bad.yaml:") != 3 {
		t.Fatalf("want three located errors, got %v", err)
	}
}

func TestLayerPanicDenies(t *testing.T) {
	cfg := policy.RuleConfig{Escalate: map[string][]string{"*": {"*"}}, OnEscalate: func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) {
		panic("boom")
	}}
	p, err := policy.New(mustRules(t, cfg), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "x"})
	if d.Effect != warden.Deny || !d.Fault {
		t.Fatalf("got %+v", d)
	}
	if _, err := policy.New(nil, nil, nil); !errors.Is(err, policy.ErrDecidesNothing) {
		t.Fatalf("New() err = %v", err)
	}
}

func TestPolicyVisibility(t *testing.T) {
	p := parse(t, "version: 1\npreset: read_only\nroles: {r: [reader, bash, search_docs]}\nactive_role: r\n")
	for tool, want := range map[string]bool{"reader": true, "bash": false, "search_docs": false, "search": false} {
		if got := p.IsAllowed(tool); got != want {
			t.Errorf("IsAllowed(%s) = %v, want %v", tool, got, want)
		}
	}
}

func TestExplain(t *testing.T) {
	p := parse(t, fullFile)
	d, tr := p.Explain(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "bash", Args: warden.MustParseArgs(bash("sudo /bin/rm -rf /"))})
	if d.Effect != warden.Deny || tr.Decider != "rules" || tr.Rules == nil {
		t.Fatalf("decision %+v trace %+v", d, tr)
	}
	if strings.Join(tr.Rules.Normalized, "|") != "sudo /bin/rm -rf /|rm -rf /" {
		t.Fatalf("normalized %v", tr.Rules.Normalized)
	}
	if len(tr.Layers) != 2 || tr.Layers[1].Layer != "roles" {
		t.Fatalf("layers %+v", tr.Layers)
	}
}

// The issue: "a policy file accepts non-string rule keys (`123:`, `true:`) as tool
// names". Every place a YAML scalar becomes a tool, role or skill name refuses a number,
// a boolean or null, with file:line:column and how to fix it.
func TestNonStringNamesRefused(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"number rule key", "version: 1\nrules:\n  allow:\n    123: [\"*\"]\n",
			`p.yaml:4:5: rules.allow: keys must be strings, got a number (quote it to make it a string: "123":)`},
		{"boolean rule key", "version: 1\nrules:\n  deny: {true: [\"*\"]}\n",
			`p.yaml:3:10: rules.deny: keys must be strings, got a boolean (quote it to make it a string: "true":)`},
		{"null rule key", "version: 1\nrules:\n  escalate: {~: [\"*\"]}\n",
			`p.yaml:3:14: rules.escalate: keys must be strings, got null (quote it to make it a string: "~":)`},
		{"number role name", "version: 1\nroles: {7: [x]}\nactive_role: \"7\"\n",
			`p.yaml:2:9: roles: keys must be strings, got a number (quote it to make it a string: "7":)`},
		{"number tool in a role", "version: 1\nroles:\n  a:\n    - 123\nactive_role: a\n",
			`p.yaml:4:7: roles.a[0] must be a string, got a number (quote it to make it a string)`},
		{"boolean tool in a role", "version: 1\nroles: {a: [read, true]}\nactive_role: a\n",
			`p.yaml:2:19: roles.a[1] must be a string, got a boolean (quote it to make it a string)`},
		{"number skill", "version: 1\nroles: {a: [x]}\nactive_role: a\nskills: {a: [42]}\n",
			`p.yaml:4:14: skills.a[0] must be a string, got a number (quote it to make it a string)`},
		{"boolean skills role", "version: 1\nroles: {a: [x]}\nactive_role: a\nskills: {false: [s]}\n",
			`p.yaml:4:10: skills: keys must be strings, got a boolean (quote it to make it a string: "false":)`},
		{"number capabilities role", "version: 1\nroles: {a: [x]}\nactive_role: a\ncapabilities: {1: [user_data]}\n",
			`p.yaml:4:16: capabilities: keys must be strings, got a number (quote it to make it a string: "1":)`},
		{"number alias", "version: 1\npreset: safe\naliases: {12: bash}\n",
			`p.yaml:3:11: aliases: keys must be strings, got a number (quote it to make it a string: "12":)`},
		{"number alias target", "version: 1\npreset: safe\naliases: {sh: 12}\n",
			`p.yaml:3:15: aliases.sh must be a string, got a number (quote it to make it a string)`},
		{"boolean match tool", "version: 1\npreset: safe\nmatch: {true: \"{env}\"}\n",
			`p.yaml:3:9: match: keys must be strings, got a boolean (quote it to make it a string: "true":)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse("p.yaml", []byte(tt.src), nil)
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// Quoted, the same names are names.
	p := parse(t, "version: 1\nrules:\n  allow: {\"123\": [\"*\"], \"true\": [\"*\"]}\nroles: {a: [\"123\", \"true\"]}\nactive_role: a\n")
	for _, tool := range []string{"123", "true"} {
		if d, _ := p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: tool}); d.Effect != warden.Allow {
			t.Errorf("%s: %+v", tool, d)
		}
	}
}

// The same from a policy file: the skills key is the role's listing of its skills, and
// read_skill needs no second one under roles. A rule layer still judges read_skill like
// any other tool.
func TestFileReadSkillFromSkills(t *testing.T) {
	p := parse(t, "version: 1\nroles: {support: [search_docs], viewer: [search_docs]}\nactive_role: support\nskills: {support: [refunds]}\n")
	d, _ := p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: warden.ReadSkillTool})
	if !p.IsAllowed(warden.ReadSkillTool) || d.Effect != warden.Allow || d.RuleID != "support.skills" {
		t.Errorf("support: IsAllowed %v, %+v", p.IsAllowed(warden.ReadSkillTool), d)
	}
	viewer, err := p.WithActiveRole("viewer")
	if err != nil {
		t.Fatal(err)
	}
	if viewer.IsAllowed(warden.ReadSkillTool) {
		t.Error("viewer, with no skill rule, may see read_skill")
	}
	ruled := parse(t, "version: 1\npreset: read_only\nroles: {support: [reader]}\nactive_role: support\nskills: {support: [refunds]}\n")
	if ruled.IsAllowed(warden.ReadSkillTool) {
		t.Error("the read_only rule layer allows no read_skill call, yet it is offered")
	}
}
