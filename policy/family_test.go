package policy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// uri returns the arguments the gateway judges a resources/read with.
func uri(u string) string {
	a, err := warden.NewArgs("uri", u)
	if err != nil {
		panic(err)
	}
	b, _ := a.MarshalJSON()
	return string(b)
}

// For a resource or prompt target each list is its own patterns, then its family's,
// then the "*" patterns; deny is read before allow before escalate across the combined
// lists, and the rationale and rule id are the pattern's, whichever list it came from.
func TestFamilyRuleOrder(t *testing.T) {
	type rules = map[string][]string
	tests := []struct {
		name      string
		cfg       policy.RuleConfig
		tool      string
		args      string
		effect    warden.Effect
		ruleID    string
		rationale string
	}{
		{"family allow applies to a member",
			policy.RuleConfig{Allow: rules{"resource:*": {"notes://*"}}},
			"resource:notes", uri("notes://a"), warden.Allow, "notes://*", "allowed by rule: notes://*"},
		{"own allow before family allow",
			policy.RuleConfig{Allow: rules{"resource:notes": {"notes://a*"}, "resource:*": {"*"}}},
			"resource:notes", uri("notes://abc"), warden.Allow, "notes://a*", "allowed by rule: notes://a*"},
		{"family allow before star allow",
			policy.RuleConfig{Allow: rules{"resource:*": {"notes://*"}, "*": {"*"}}},
			"resource:notes", uri("notes://x"), warden.Allow, "notes://*", "allowed by rule: notes://*"},
		{"star allow after a family that does not match",
			policy.RuleConfig{Allow: rules{"resource:*": {"files://*"}, "*": {"*"}}},
			"resource:notes", uri("notes://x"), warden.Allow, "*", "allowed by rule: *"},
		{"own deny before family deny",
			policy.RuleConfig{Deny: rules{"resource:notes": {"*secret*"}, "resource:*": {"*"}}},
			"resource:notes", uri("notes://secret/x"), warden.Deny, "*secret*", "denied by rule: *secret*"},
		{"family deny beats own allow",
			policy.RuleConfig{Deny: rules{"resource:*": {"*://secret/*"}}, Allow: rules{"resource:notes": {"*"}}},
			"resource:notes", uri("notes://secret/plan"), warden.Deny, "*://secret/*", "denied by rule: *://secret/*"},
		{"star deny beats own and family allow",
			policy.RuleConfig{Deny: rules{"*": {"*passwd*"}}, Allow: rules{"resource:notes": {"*"}, "resource:*": {"*"}}},
			"resource:notes", uri("file:///etc/passwd"), warden.Deny, "*passwd*", "denied by rule: *passwd*"},
		{"family deny, member allowed elsewhere",
			policy.RuleConfig{Deny: rules{"resource:*": {"*://secret/*"}}, Allow: rules{"resource:notes": {"*"}}},
			"resource:notes", uri("notes://public/plan"), warden.Allow, "*", "allowed by rule: *"},
		{"family escalate after own allow misses",
			policy.RuleConfig{Allow: rules{"resource:notes": {"notes://public/*"}}, Escalate: rules{"resource:*": {"*"}}},
			"resource:notes", uri("notes://private/x"), warden.Ask, "*", "escalate by rule: *"},
		{"own escalate before family escalate",
			policy.RuleConfig{Escalate: rules{"resource:notes": {"notes://*"}, "resource:*": {"*"}}},
			"resource:notes", uri("notes://x"), warden.Ask, "notes://*", "escalate by rule: notes://*"},
		{"allow anywhere beats escalate anywhere",
			policy.RuleConfig{Allow: rules{"*": {"notes://*"}}, Escalate: rules{"resource:notes": {"*"}}},
			"resource:notes", uri("notes://x"), warden.Allow, "notes://*", "allowed by rule: notes://*"},
		{"member without rules of its own gets the family",
			policy.RuleConfig{Allow: rules{"resource:files": {"*"}, "resource:*": {"notes://*"}}},
			"resource:notes", uri("notes://x"), warden.Allow, "notes://*", "allowed by rule: notes://*"},
		{"another member's rules do not apply",
			policy.RuleConfig{Allow: rules{"resource:files": {"*"}}},
			"resource:notes", uri("notes://x"), warden.Deny, "default", "no matching rule, default deny"},
		{"prompt family allows a prompt",
			policy.RuleConfig{Allow: rules{"prompt:*": {"*"}}},
			"prompt:mcp__notes__summarize", `{"topic":"q3"}`, warden.Allow, "*", "allowed by rule: *"},
		{"own prompt deny before prompt family allow",
			policy.RuleConfig{Deny: rules{"prompt:mcp__notes__summarize": {"* secret*"}}, Allow: rules{"prompt:*": {"*"}}},
			"prompt:mcp__notes__summarize", `{"topic":"secret plans"}`, warden.Deny, "* secret*", "denied by rule: * secret*"},
		{"resource family does not apply to prompts",
			policy.RuleConfig{Allow: rules{"resource:*": {"*"}}},
			"prompt:mcp__notes__summarize", `{}`, warden.Deny, "default", "no matching rule, default deny"},
		{"prompt family does not apply to resources",
			policy.RuleConfig{Allow: rules{"prompt:*": {"*"}}},
			"resource:notes", uri("notes://x"), warden.Deny, "default", "no matching rule, default deny"},
		{"family does not apply to tools",
			policy.RuleConfig{Allow: rules{"resource:*": {"*"}, "prompt:*": {"*"}}},
			"mcp__notes__read", `{"uri":"notes://x"}`, warden.Deny, "default", "no matching rule, default deny"},
		{"family key and target names are case-insensitive",
			policy.RuleConfig{Allow: rules{"Resource:*": {"notes://*"}}},
			"RESOURCE:Notes", uri("notes://x"), warden.Allow, "notes://*", "allowed by rule: notes://*"},
		{"a family key spelled twice is merged",
			policy.RuleConfig{Deny: rules{"resource:*": {"*secret*"}, "RESOURCE:*": {"*private*"}}, Allow: rules{"*": {"*"}}},
			"resource:notes", uri("notes://private/x"), warden.Deny, "*private*", "denied by rule: *private*"},
		{"any other key with a star is an exact name",
			policy.RuleConfig{Allow: rules{"mcp__notes__*": {"*"}}},
			"mcp__notes__read", `{}`, warden.Deny, "default", "no matching rule, default deny"},
		{"a target named like the family key is a member",
			policy.RuleConfig{Allow: rules{"resource:*": {"x"}}},
			"resource:*", uri("x"), warden.Allow, "x", "allowed by rule: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := check(t, mustRules(t, tt.cfg), tt.tool, tt.args)
			if d.Effect != tt.effect || d.RuleID != tt.ruleID || d.Rationale != tt.rationale {
				t.Fatalf("got %s %q %q, want %s %q %q", d.Effect, d.RuleID, d.Rationale, tt.effect, tt.ruleID, tt.rationale)
			}
		})
	}
}

// A resource is judged on its uri; "*" crosses "/" and matching ignores case; a match
// template of the resource's own, then of its family, wins; prompts keep the generic
// match string.
func TestResourceMatchString(t *testing.T) {
	p := mustRules(t, policy.RuleConfig{Match: map[string]string{"resource:files": "{server} {uri}", "prompt:*": "{topic}"}})
	tests := []struct{ tool, args, want string }{
		{"resource:notes", uri("notes://a/b/c"), "notes://a/b/c"},
		{"Resource:Notes", `{"uri":"notes://x","other":"y"}`, "notes://x"},
		{"resource:notes", `{}`, ""},
		{"resource:notes", `{"uri":42}`, ""},
		{"resource:notes", `{"uri":null}`, ""},
		{"resource:notes", `{"uri":{"s":"notes://x"}}`, ""},
		{"resource:files", `{"uri":"file:///x","server":"files"}`, "files file:///x"},
		{"prompt:mcp__notes__summarize", `{"topic":"q3","length":"short"}`, "q3"},
		{"mcp__notes__read", `{"uri":"notes://x"}`, " notes://x"},
	}
	for _, tt := range tests {
		if got := p.MatchString(tt.tool, warden.MustParseArgs(tt.args)); got != tt.want {
			t.Errorf("MatchString(%s, %s) = %q, want %q", tt.tool, tt.args, got, tt.want)
		}
	}
	// Without a template a prompt matches like any tool: action, then the values.
	plain := mustRules(t, policy.RuleConfig{})
	if got := plain.MatchString("prompt:p", warden.MustParseArgs(`{"topic":"q3","length":"short"}`)); got != " q3 short" {
		t.Errorf("prompt match string %q", got)
	}
	// A resource family template applies to every resource without its own.
	fam := mustRules(t, policy.RuleConfig{Match: map[string]string{"resource:*": "<{uri}>", "resource:files": "{uri}"}})
	if got := fam.MatchString("resource:notes", warden.MustParseArgs(uri("notes://x"))); got != "<notes://x>" {
		t.Errorf("family template: %q", got)
	}
	if got := fam.MatchString("resource:files", warden.MustParseArgs(uri("file:///x"))); got != "file:///x" {
		t.Errorf("own template: %q", got)
	}
}

func TestResourceGlobs(t *testing.T) {
	tests := []struct {
		pattern, uri string
		want         bool
	}{
		{"notes://*", "notes://a/b/c.md", true},
		{"notes://*.md", "notes://deep/dir/x.md", true},
		{"notes://*.md", "notes://deep/dir/x.txt", false},
		{"NOTES://Public/*", "notes://public/x", true},
		{"notes://public/*", "NOTES://PUBLIC/X", true},
		{"notes://public/*", "notes://secret/x", false},
		{"notes://?", "notes://é", true},
		{"*", "", true},
		{"notes://*", "", false},
		{"file:///srv/[!.]*", "file:///srv/a/.env", true},
		{"file:///srv/[!.]*", "file:///srv/.env", false},
	}
	for _, tt := range tests {
		p := mustRules(t, policy.RuleConfig{Allow: map[string][]string{"resource:notes": {tt.pattern}}})
		d := check(t, p, "resource:notes", uri(tt.uri))
		if got := d.Effect == warden.Allow; got != tt.want {
			t.Errorf("%q vs %q: allowed=%v, want %v (%s)", tt.pattern, tt.uri, got, tt.want, d.Rationale)
		}
	}
}

// read_only and safe read any resource and get any prompt, and still deny what they
// denied.
func TestPresetFamilies(t *testing.T) {
	for _, name := range []string{policy.PresetReadOnly, policy.PresetSafe} {
		cfg, err := policy.PresetRules(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, fam := range []string{"resource:*", "prompt:*"} {
			if got := cfg.Allow[fam]; len(got) != 1 || got[0] != "*" {
				t.Errorf("%s allow %s = %v, want [*]", name, fam, got)
			}
		}
		p := mustRules(t, cfg)
		tests := []struct {
			tool, args string
			effect     warden.Effect
		}{
			{"resource:notes", uri("notes://secret/x"), warden.Allow},
			{"resource:files", `{}`, warden.Allow},
			{"prompt:mcp__notes__summarize", `{"topic":"q3"}`, warden.Allow},
			{"bash", bash("rm -rf /"), warden.Deny},
			{"mcp__notes__delete", `{"id":"1"}`, warden.Deny},
			{"deploy", `{"env":"prod"}`, warden.Deny},
		}
		for _, tt := range tests {
			if d := check(t, p, tt.tool, tt.args); d.Effect != tt.effect {
				t.Errorf("%s %s: %s (%s), want %s", name, tt.tool, d.Effect, d.Rationale, tt.effect)
			}
		}
		for _, tool := range []string{"resource:notes", "prompt:p"} {
			if !p.MayAllow(tool) {
				t.Errorf("%s hides %s", name, tool)
			}
		}
	}
	if d := check(t, policy.ReadOnly(), "editor", `{"file_path":"/x"}`); d.Effect != warden.Deny {
		t.Errorf("read_only editor: %s", d.Effect)
	}
	if d := check(t, policy.Safe(), "bash", bash("cargo build")); d.Effect != warden.Ask {
		t.Errorf("safe cargo: %s", d.Effect)
	}
	for _, p := range []*policy.RulePolicy{policy.AllowAll(), policy.DenyAll()} {
		if c := p.Config(); c.Allow != nil || c.Deny != nil || c.Escalate != nil {
			t.Errorf("%s gained rules: %+v", p.Mode(), c)
		}
	}
}

// MayAllow reads the same combined lists as a call: a deny "*" in the member's own,
// its family's or the "*" list hides it; an allow or escalate anywhere shows it.
func TestFamilyMayAllow(t *testing.T) {
	type rules = map[string][]string
	tests := []struct {
		name string
		cfg  policy.RuleConfig
		tool string
		want bool
	}{
		{"family allow shows a member", policy.RuleConfig{Allow: rules{"resource:*": {"notes://*"}}}, "resource:notes", true},
		{"family escalate shows a member", policy.RuleConfig{Escalate: rules{"prompt:*": {"*"}}}, "prompt:p", true},
		{"no rule hides", policy.RuleConfig{Allow: rules{"reader": {"*"}}}, "resource:notes", false},
		{"family deny star hides a member with its own allow", policy.RuleConfig{Deny: rules{"resource:*": {"*"}}, Allow: rules{"resource:notes": {"*"}}}, "resource:notes", false},
		{"own deny star hides", policy.RuleConfig{Deny: rules{"resource:notes": {"*"}}, Allow: rules{"resource:*": {"*"}}}, "resource:notes", false},
		{"own deny star hides only that member", policy.RuleConfig{Deny: rules{"resource:notes": {"*"}}, Allow: rules{"resource:*": {"*"}}}, "resource:files", true},
		{"star deny star hides", policy.RuleConfig{Deny: rules{"*": {"*"}}, Allow: rules{"resource:*": {"*"}}}, "resource:notes", false},
		{"a narrower family deny does not hide", policy.RuleConfig{Deny: rules{"resource:*": {"*secret*"}}, Allow: rules{"resource:notes": {"*"}}}, "resource:notes", true},
		{"resource family deny does not hide prompts", policy.RuleConfig{Deny: rules{"resource:*": {"*"}}, Allow: rules{"*": {"*"}}}, "prompt:p", true},
		{"family deny does not hide tools", policy.RuleConfig{Deny: rules{"resource:*": {"*"}, "prompt:*": {"*"}}, Allow: rules{"*": {"*"}}}, "reader", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustRules(t, tt.cfg)
			if got := p.MayAllow(tt.tool); got != tt.want {
				t.Fatalf("MayAllow(%s) = %v, want %v", tt.tool, got, tt.want)
			}
			if p.IsAllowed(tt.tool) != p.MayAllow(tt.tool) {
				t.Fatal("IsAllowed differs from MayAllow")
			}
			// What is hidden is what every call is denied: a hidden member is denied
			// whatever its uri.
			if !tt.want {
				if d := check(t, p, tt.tool, uri("notes://public/x")); d.Effect != warden.Deny {
					t.Fatalf("hidden, yet a call is %s (%s)", d.Effect, d.Rationale)
				}
			}
		})
	}
}

func TestFamilyRevision(t *testing.T) {
	base := parse(t, "version: 1\nrules:\n  allow: {reader: ['*'], 'resource:*': ['notes://*']}\n")
	same := parse(t, "version: 1\nrules:\n  allow:\n    Resource:*: ['notes://*']\n    reader: ['*']\n")
	if base.Revision() != same.Revision() {
		t.Fatal("a family key spelled differently changed the revision")
	}
	for name, src := range map[string]string{
		"pattern":       "version: 1\nrules:\n  allow: {reader: ['*'], 'resource:*': ['files://*']}\n",
		"family":        "version: 1\nrules:\n  allow: {reader: ['*'], 'prompt:*': ['notes://*']}\n",
		"own key":       "version: 1\nrules:\n  allow: {reader: ['*'], 'resource:notes': ['notes://*']}\n",
		"list":          "version: 1\nrules:\n  allow: {reader: ['*']}\n  escalate: {'resource:*': ['notes://*']}\n",
		"family match":  "version: 1\nmatch: {'resource:*': '{uri}'}\nrules:\n  allow: {reader: ['*'], 'resource:*': ['notes://*']}\n",
		"no family key": "version: 1\nrules:\n  allow: {reader: ['*']}\n",
	} {
		if parse(t, src).Revision() == base.Revision() {
			t.Errorf("changing the %s kept the revision", name)
		}
	}
	// The presets' revisions include the families they now allow.
	old := parse(t, "version: 1\nrules:\n  allow: {reader: ['*'], search: ['*'], context: ['*']}\n  deny: {editor: ['*'], bash: ['*']}\n")
	if parse(t, "version: 1\npreset: read_only\n").Revision() == old.Revision() {
		t.Error("read_only's revision does not include its family rules")
	}
}

// A policy file takes the family keys in every rule list and in match, unquoted or
// quoted, appends them to a preset's, and validate does not warn about them.
func TestFamilyKeysInFiles(t *testing.T) {
	p := parse(t, `version: 1
preset: read_only
match:
  prompt:*: "{topic}"
rules:
  deny:
    resource:*: ["*://secret/*"]
    "prompt:*": ["*password*"]
  allow:
    resource:notes: ["notes://*"]
  escalate:
    "resource:*": ["*"]
`)
	if w := p.Warnings(); len(w) != 0 {
		t.Fatalf("warnings for family keys: %v", w)
	}
	cfg := p.Rules().Config()
	if got := cfg.Allow["resource:*"]; len(got) != 1 || got[0] != "*" {
		t.Errorf("preset's resource family lost: %v", got)
	}
	if got := cfg.Deny["prompt:*"]; len(got) != 1 || got[0] != "*password*" {
		t.Errorf("prompt family deny: %v", got)
	}
	ctx := context.Background()
	tests := []struct {
		tool, args string
		effect     warden.Effect
		rationale  string
	}{
		{"resource:notes", uri("notes://secret/x"), warden.Deny, "denied by rule: *://secret/*"},
		{"resource:files", uri("files://secret/x"), warden.Deny, "denied by rule: *://secret/*"},
		{"resource:notes", uri("notes://x"), warden.Allow, "allowed by rule: notes://*"},
		{"resource:files", uri("files://x"), warden.Allow, "allowed by rule: *"},
		{"prompt:mcp__notes__summarize", `{"topic":"my password"}`, warden.Deny, "denied by rule: *password*"},
		{"prompt:mcp__notes__summarize", `{"topic":"q3","x":"password"}`, warden.Allow, "allowed by rule: *"},
	}
	for _, tt := range tests {
		d, _ := p.Check(ctx, warden.Request{Capability: warden.CapToolCall, Target: tt.tool, Args: warden.MustParseArgs(tt.args)})
		if d.Effect != tt.effect || d.Rationale != tt.rationale {
			t.Errorf("%s %s: %s %q, want %s %q", tt.tool, tt.args, d.Effect, d.Rationale, tt.effect, tt.rationale)
		}
	}
	_, tr := p.Explain(ctx, warden.Request{Capability: warden.CapToolCall, Target: "Resource:Notes", Args: warden.MustParseArgs(uri("notes://x"))})
	if tr.Rules == nil || tr.Rules.Tool != "resource:notes" || tr.Rules.MatchString != "notes://x" {
		t.Errorf("explanation %+v", tr.Rules)
	}
}

func TestFamilyConstructionErrors(t *testing.T) {
	type rules = map[string][]string
	tests := []struct {
		cfg  policy.RuleConfig
		want string
	}{
		{policy.RuleConfig{Allow: rules{"resource:": {"*"}}}, `allow rules: key "resource:" names no server`},
		{policy.RuleConfig{Deny: rules{" Prompt: ": {"*"}}}, `deny rules: key " Prompt: " names no prompt`},
		{policy.RuleConfig{Escalate: rules{"x": {"*"}}, Aliases: map[string]string{"x": "resource:"}}, `escalate rules: key "x" names no server`},
		{policy.RuleConfig{Match: map[string]string{"resource:": "{uri}"}}, `match template for "resource:": the key names no server`},
		{policy.RuleConfig{Aliases: map[string]string{"notes": "resource:*"}}, "cannot be aliased"},
		{policy.RuleConfig{Aliases: map[string]string{"prompt:*": "x"}}, "cannot be aliased"},
	}
	for _, tt := range tests {
		_, err := policy.NewRules(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewRules(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
		}
	}
}

// Conditions see the target name and the arguments as they come, so a condition can
// single out a server's resources by uri.
func TestConditionOnResource(t *testing.T) {
	p := parse(t, `version: 1
preset: read_only
conditions:
  - id: secret-notes
    when: 'tool == "resource:notes" && args.uri.startsWith("notes://secret/")'
    effect: deny
    rationale: secret notes are not read by agents
`)
	ctx := context.Background()
	for _, tt := range []struct {
		tool, uri string
		effect    warden.Effect
		ruleID    string
	}{
		{"resource:notes", "notes://secret/plan", warden.Deny, "secret-notes"},
		{"resource:notes", "notes://public/plan", warden.Allow, "*"},
		{"resource:files", "notes://secret/plan", warden.Allow, "*"},
	} {
		d, _ := p.Check(ctx, warden.Request{Capability: warden.CapToolCall, Target: tt.tool, Args: warden.MustParseArgs(uri(tt.uri))})
		if d.Effect != tt.effect || d.RuleID != tt.ruleID {
			t.Errorf("%s %s: %s %q (%s), want %s %q", tt.tool, tt.uri, d.Effect, d.RuleID, d.Rationale, tt.effect, tt.ruleID)
		}
	}
}

// A role allowlist names targets exactly, so a family key in one is a warning.
func TestLintFamilyKeyInRole(t *testing.T) {
	src := "version: 1\nroles:\n  reader: [reader, \"resource:*\", resource:notes]\nactive_role: reader\n"
	var got []string
	for _, w := range parse(t, src).Warnings() {
		got = append(got, w.Error())
	}
	want := `test.yaml:3:20: role "reader" lists "resource:*": a role allowlist names targets exactly`
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("warnings %q, want one starting %q", got, want)
	}
}
