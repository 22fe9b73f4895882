package policy_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

func shadowReq(tool, args string) warden.Request {
	a, err := warden.ParseArgs([]byte(args))
	if err != nil {
		panic(err)
	}
	return warden.Request{Capability: warden.CapToolCall, Target: tool, Args: a}
}

func decide(t testing.TB, p *policy.Policy, r warden.Request) warden.Decision {
	t.Helper()
	d, err := p.Check(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const shadowFile = `version: 1
rules:
  allow:
    bash: ["ls *", "rm *"]
    refund: ["*"]
  deny:
    bash: {patterns: ["rm *"], enforce: false}
    reader: {patterns: ["/etc/*"], enforce: true}
conditions:
  - id: big-refund
    when: 'tool == "refund" && double(args.amount) > 100.0'
    effect: escalate
    enforce: false
  - id: no-prod
    when: 'tool == "deploy" && args.env == "prod"'
    effect: deny
`

// The same file with its shadow items deleted, and with them enforcing.
const (
	shadowDeleted = `version: 1
rules:
  allow:
    bash: ["ls *", "rm *"]
    refund: ["*"]
  deny:
    reader: ["/etc/*"]
conditions:
  - id: no-prod
    when: 'tool == "deploy" && args.env == "prod"'
    effect: deny
`
	shadowEnforced = `version: 1
rules:
  allow:
    bash: ["ls *", "rm *"]
    refund: ["*"]
  deny:
    bash: ["rm *"]
    reader: ["/etc/*"]
conditions:
  - id: big-refund
    when: 'tool == "refund" && double(args.amount) > 100.0'
    effect: escalate
  - id: no-prod
    when: 'tool == "deploy" && args.env == "prod"'
    effect: deny
`
)

func TestShadowItemsSyntax(t *testing.T) {
	p := parse(t, shadowFile)
	sh := p.Shadow()
	if sh == nil {
		t.Fatal("no shadow policy")
	}
	if got, want := p.Revision(), parse(t, shadowDeleted).Revision(); got != want {
		t.Fatalf("enforcing revision %s, want the revision of the file without shadow items %s", got, want)
	}
	if got, want := sh.Revision(), parse(t, shadowEnforced).Revision(); got != want {
		t.Fatalf("shadow revision %s, want the revision of the file with the items enforcing %s", got, want)
	}
	if parse(t, shadowDeleted).Shadow() != nil || sh.Shadow() != nil {
		t.Fatal("a file without shadow items has a shadow")
	}
	rm := shadowReq("bash", `{"command":"rm -rf x"}`)
	if d := decide(t, p, rm); d.Effect != warden.Allow || d.RuleID != "rm *" {
		t.Fatalf("enforcing: %+v", d)
	}
	if d := decide(t, sh, rm); d.Effect != warden.Deny || d.RuleID != "rm *" || d.Rationale != "denied by rule: rm *" {
		t.Fatalf("shadow: %+v", d)
	}
	refund := shadowReq("refund", `{"amount": 500}`)
	if d := decide(t, sh, refund); d.Effect != warden.Ask || d.RuleID != "big-refund" {
		t.Fatalf("shadow condition: %+v", d)
	}
	if p.Conditions().Len() != 1 || sh.Conditions().Len() != 2 {
		t.Fatalf("conditions: enforcing %d, shadow %d", p.Conditions().Len(), sh.Conditions().Len())
	}
	// enforce: true and a plain list are the same.
	a := parse(t, "version: 1\nrules:\n  allow: {bash: {patterns: [\"ls *\"], enforce: true}}\nconditions:\n  - {id: c, when: 'false', effect: deny, enforce: true}\n")
	b := parse(t, "version: 1\nrules:\n  allow: {bash: [\"ls *\"]}\nconditions:\n  - {id: c, when: 'false', effect: deny}\n")
	if a.Revision() != b.Revision() || a.Shadow() != nil {
		t.Fatalf("enforce: true differs from a plain list: %s %s", a.Revision(), b.Revision())
	}
	// Editing a shadow item leaves the enforcing revision alone.
	edited := parse(t, strings.Replace(shadowFile, `"rm *"], enforce`, `"rm -rf *"], enforce`, 1))
	if edited.Revision() != p.Revision() || edited.Shadow().Revision() == sh.Revision() {
		t.Fatal("editing a shadow rule changed the enforcing revision, or not the shadow's")
	}
}

func TestShadowRolesFollow(t *testing.T) {
	p := parse(t, "version: 1\nroles: {a: [bash], b: [reader]}\nactive_role: a\nrules:\n  allow: {'*': ['*']}\n  deny: {bash: {patterns: ['*'], enforce: false}}\n")
	q, err := p.WithActiveRole("b")
	if err != nil {
		t.Fatal(err)
	}
	if q.ActiveRole() != "b" || q.Shadow().ActiveRole() != "b" || p.Shadow().ActiveRole() != "a" {
		t.Fatalf("roles: %q %q %q", q.ActiveRole(), q.Shadow().ActiveRole(), p.Shadow().ActiveRole())
	}
}

func TestShadowFileRefusedAsEnforcing(t *testing.T) {
	src := "version: 1\nenforce: false\nrules:\n  deny: {bash: ['rm *']}\n  allow: {'*': ['*']}\n"
	_, err := policy.Parse("candidate.yaml", []byte(src), nil)
	want := "candidate.yaml:2:10: this file is a shadow policy (enforce: false) and cannot be loaded as the enforcing policy (load it as a shadow policy (shadow_policy in gateway.yaml) to see what it would decide, or remove `enforce: false` to enforce it)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	var ce *warden.ConfigError
	if !errors.Is(err, policy.ErrShadowFile) || !errors.As(err, &ce) || ce.Line != 2 {
		t.Fatalf("err %v: not ErrShadowFile, or not a located *warden.ConfigError", err)
	}
	if _, err := policy.Parse("p.yaml", []byte("version: 1\npreset: safe\nrulez: 1\n"), nil); errors.Is(err, policy.ErrShadowFile) {
		t.Fatal("every error is ErrShadowFile")
	}
	sh, err := policy.ParseShadow("candidate.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Shadow() != nil {
		t.Fatal("a shadow policy has a shadow")
	}
	if d := decide(t, sh, shadowReq("bash", `{"command":"rm x"}`)); d.Effect != warden.Deny || d.RuleID != "rm *" {
		t.Fatalf("candidate: %+v", d)
	}
	// A candidate counts its items marked enforce: false as well, and an enforcing
	// file is a valid candidate.
	sh, err = policy.ParseShadow("c.yaml", []byte(shadowFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Revision() != parse(t, shadowEnforced).Revision() {
		t.Fatal("a candidate is not the whole file")
	}
	if _, err := policy.ParseShadow("c.yaml", []byte("version: 1\nenforce: true\npreset: safe\n"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.Parse("c.yaml", []byte("version: 1\nenforce: true\npreset: safe\n"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestShadowBadFiles(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"entry unknown key", "version: 1\nrules:\n  deny: {bash: {patterns: ['rm *'], enforced: false}}\n",
			`bad.yaml:3:37: unknown key "enforced" in rules.deny.bash (a rule entry holds patterns and enforce; did you mean "enforce"?)`},
		{"entry missing patterns", "version: 1\nrules:\n  deny: {bash: {enforce: false}}\n",
			"bad.yaml:3:16: rules.deny.bash: missing patterns (add `patterns: [\"...\"]`, or write the patterns as a plain list)"},
		{"entry enforce not bool", "version: 1\nrules:\n  deny: {bash: {patterns: ['rm *'], enforce: 'no'}}\n",
			"bad.yaml:3:46: rules.deny.bash.enforce must be true or false, got a string (write true or false)"},
		{"entry patterns not list", "version: 1\nrules:\n  deny: {bash: {patterns: 'rm *', enforce: false}}\n",
			`bad.yaml:3:27: rules.deny.bash.patterns must be a list of strings, got a string (write a list such as ["a", "b"] or one "- item" per line)`},
		{"entry empty pattern", "version: 1\nrules:\n  deny: {bash: {patterns: [''], enforce: false}}\n",
			`bad.yaml:3:28: empty pattern for "bash" matches only an empty string (remove it, or use "*" to match everything)`},
		{"condition enforce not bool", "version: 1\npreset: safe\nconditions:\n  - {id: c, when: 'true', effect: deny, enforce: 0}\n",
			"bad.yaml:4:50: conditions[0].enforce must be true or false, got a number (write true or false)"},
		{"shadow condition does not compile", "version: 1\npreset: safe\nconditions:\n  - {id: c, when: 'tool ==', effect: deny, enforce: false}\n",
			"does not compile"},
		{"top enforce not bool", "version: 1\nenforce: off\npreset: safe\n",
			"bad.yaml:2:10: enforce must be true or false, got a string (write true or false)"},
		{"shadow only decides nothing", "version: 1\nconditions:\n  - {id: c, when: 'true', effect: deny, enforce: false}\n",
			"bad.yaml:1:1: policy decides nothing once its shadow items (enforce: false) are set aside (make some rule or condition enforcing, or mark the whole file `enforce: false` and load it as a shadow policy)"},
		{"shadow rule under a mode", "version: 1\nmode: allow_all\nrules:\n  deny: {bash: {patterns: ['*'], enforce: false}}\n",
			"bad.yaml:4:3: mode allow_all ignores rules (remove the rules, or use mode: rules)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse("bad.yaml", []byte(tt.src), nil)
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if !strings.Contains(tt.want, ":") {
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want it to hold %q", err, tt.want)
				}
				return
			}
			if err.Error() != tt.want {
				t.Fatalf("err = %s\nwant  %s", err, tt.want)
			}
		})
	}
}

// A shadow item never changes the enforcing decision: for many generated files and
// requests, the decision of a file with shadow items equals that of the same file
// with those items deleted, and the shadow's equals that of the file with the items
// enforcing.
func TestShadowDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	tools := []string{"bash", "reader", "refund", "deploy", "*"}
	pats := map[string][]string{
		"bash":   {"rm *", "ls *", "git *", "*", "cat *"},
		"reader": {"/etc/*", "/tmp/*", "*"},
		"refund": {"*", "full *"},
		"deploy": {"*", "prod *"},
		"*":      {"*", "x*"},
	}
	whens := []string{
		`tool == "refund" && double(args.amount) > 100.0`,
		`tool == "deploy"`,
		`tool == "bash" && args.command.startsWith("rm")`,
		`has(args.missing) && args.missing == 1`,
		`args.amount > 5`, // errors on a call without amount: a fault deny
		`true`,
	}
	effects := []string{"allow", "deny", "escalate", "halt"}
	reqs := []warden.Request{
		shadowReq("bash", `{"command":"rm -rf /"}`),
		shadowReq("bash", `{"command":"ls -l"}`),
		shadowReq("bash", `{"command":"git status && rm x"}`),
		shadowReq("bash", `{"command":"cat /etc/passwd"}`),
		shadowReq("reader", `{"path":"/etc/shadow"}`),
		shadowReq("reader", `{"path":"/tmp/a"}`),
		shadowReq("refund", `{"amount": 500}`),
		shadowReq("refund", `{"amount": 5}`),
		shadowReq("deploy", `{"env":"prod"}`),
		shadowReq("other", `{}`),
	}
	type item struct {
		text, enforced string
		shadow         bool
	}
	checked, differ := 0, 0
	for n := range 300 {
		var rules [3][]item // deny, allow, escalate
		for l := range rules {
			for _, tool := range tools {
				if rng.IntN(3) != 0 {
					continue
				}
				var ps []string
				for _, p := range pats[tool] {
					if rng.IntN(2) == 0 {
						ps = append(ps, fmt.Sprintf("%q", p))
					}
				}
				if len(ps) == 0 {
					ps = []string{`"*"`}
				}
				list := "[" + strings.Join(ps, ", ") + "]"
				key := fmt.Sprintf("%q", tool)
				it := item{text: key + ": " + list, enforced: key + ": " + list}
				switch rng.IntN(3) {
				case 0:
					it.text, it.shadow = key+": {patterns: "+list+", enforce: false}", true
				case 1:
					it.text = key + ": {patterns: " + list + ", enforce: true}"
				}
				rules[l] = append(rules[l], it)
			}
		}
		var conds []item
		for i := range rng.IntN(4) {
			c := fmt.Sprintf("- {id: c%d, when: '%s', effect: %s", i, whens[rng.IntN(len(whens))], effects[rng.IntN(len(effects))])
			it := item{text: c + "}", enforced: c + "}"}
			if rng.IntN(2) == 0 {
				it.text, it.shadow = c+", enforce: false}", true
			}
			conds = append(conds, it)
		}
		render := func(pick func(item) (string, bool)) string {
			var b strings.Builder
			b.WriteString("version: 1\nrules:\n")
			for l, name := range []string{"deny", "allow", "escalate"} {
				fmt.Fprintf(&b, "  %s:\n", name)
				empty := true
				for _, it := range rules[l] {
					if s, ok := pick(it); ok {
						fmt.Fprintf(&b, "    %s\n", s)
						empty = false
					}
				}
				if empty {
					b.WriteString("    {}\n")
				}
			}
			var cs []string
			for _, it := range conds {
				if s, ok := pick(it); ok {
					cs = append(cs, "  "+s+"\n")
				}
			}
			if len(cs) > 0 {
				b.WriteString("conditions:\n" + strings.Join(cs, ""))
			}
			return b.String()
		}
		withShadow := render(func(it item) (string, bool) { return it.text, true })
		deleted := render(func(it item) (string, bool) { return it.enforced, !it.shadow })
		enforced := render(func(it item) (string, bool) { return it.enforced, true })
		p := parse(t, withShadow)
		del := parse(t, deleted)
		all := parse(t, enforced)
		if p.Revision() != del.Revision() {
			t.Fatalf("file %d: revision %s differs from the file without shadow items %s\n%s", n, p.Revision(), del.Revision(), withShadow)
		}
		sh := p.Shadow()
		if sh == nil {
			sh = p
		}
		if sh.Revision() != all.Revision() {
			t.Fatalf("file %d: the shadow's revision differs from the file with every item enforcing\n%s", n, withShadow)
		}
		for _, r := range reqs {
			if got, want := decide(t, p, r), decide(t, del, r); got != want {
				t.Fatalf("file %d, %s %v: enforcing decision %+v, without shadow items %+v\n%s", n, r.Target, r.Args, got, want, withShadow)
			}
			if got, want := decide(t, sh, r), decide(t, all, r); got != want {
				t.Fatalf("file %d, %s %v: shadow decision %+v, with every item enforcing %+v\n%s", n, r.Target, r.Args, got, want, withShadow)
			}
			if decide(t, p, r).Effect != decide(t, sh, r).Effect {
				differ++
			}
			checked++
		}
	}
	// The shadow items must matter often enough for the comparison to mean something.
	if checked != 3000 || differ < 300 {
		t.Fatalf("checked %d requests, %d with a shadow effect of their own", checked, differ)
	}
}
