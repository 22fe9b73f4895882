package store_test

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store"
)

// globCases are tool patterns and names with what a tool glob must answer. The same
// table is checked against a policy (TestToolGlobIsThePolicyDialect), so an audit
// filter and a policy rule never disagree about a pattern.
var globCases = []struct {
	pattern, name string
	want          bool
}{
	{"", "", true},
	{"", "a", false},
	{"*", "", true},
	{"*", "anything", true},
	{"**", "x", true},
	{"**", "", true},
	{"a**b", "aXYb", true},
	{"?", "", false},
	{"?", "é", true}, // one character, not one byte
	{"??", "é", false},
	{"read_*", "read_file", true},
	{"read_*", "READ_FILE", true},
	{"READ_*", "read_dir", true},
	{"read_*", "xread_file", false},
	{"*_file", "write_file", true},
	{"*_file", "write_files", false},
	{"r*d*e", "read_file", true},
	{"r*d*e", "read_files", false},
	{"a*b*c", "aXbYbZc", true},
	{"a*b*c", "aXbYbZ", false},
	{"?hell", "shell", true},
	{"?hell", "hell", false},
	{"s??ll", "shell", true},
	{"*a", "aaaa", true},
	{"*aab", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", true},
	{"ÉCRIRE*", "écrire_fichier", true},
	{"*", "mcp__github__x/y\nz", true}, // '*' crosses '/' and newlines
	// Bracket classes.
	{"mcp__[ab]*", "mcp__alpha__read", true},
	{"mcp__[ab]*", "mcp__beta__read", true},
	{"mcp__[ab]*", "mcp__gamma__read", false},
	{"mcp__[ab]*", "mcp__[ab]__read", false},
	{"mcp__[AB]*", "mcp__alpha", true}, // classes are case-insensitive too
	{"[!r]*", "shell", true},
	{"[!r]*", "READ_FILE", false},
	{"[a-c]x", "bx", true},
	{"[a-c]x", "dx", false},
	{"[a-c-e]", "-", true},
	{"[z-a]x", "zx", false}, // an empty range matches nothing
	{"[]]", "]", true},
	{"[!]]", "a", true},
	{"[a]*", "a", true},
	{"[a]*", "[a]x", false},
	// Literal metacharacters: brackets quote, a backslash is itself.
	{"[*]", "*", true},
	{"[*]", "x", false},
	{"[?]x", "?x", true},
	{"[[]a]", "[a]", true},
	{`a\*`, `a\x`, true},
	{`a\*`, "a*", false},
	{`\[a]`, `\a`, true},
	// An unclosed '[' is a literal (CheckToolGlob refuses it in front ends).
	{"a[b", "a[b", true},
	{"a[b*", "a[bc", true},
	{"a[b*", "ab", false},
}

func TestCallMatcherToolGlob(t *testing.T) {
	for _, c := range globCases {
		m := store.CallFilter{ToolGlob: c.pattern}.Matcher()
		// An empty ToolGlob keeps every call.
		want := c.want || c.pattern == ""
		if got := m.Match(store.CallRecord{Tool: c.name}); got != want {
			t.Errorf("ToolGlob %q on %q = %v, want %v", c.pattern, c.name, got, want)
		}
	}
}

// TestToolGlobIsThePolicyDialect is the differential test: for every case, a policy
// that allows the pattern for a tool matched on one argument allows exactly the names
// the audit filter keeps.
func TestToolGlobIsThePolicyDialect(t *testing.T) {
	extra := []string{"", "x", "read_file", "READ_FILE", "mcp__a", "mcp__c", "[", "]", "*", "?", `\`, "é", "É"}
	for _, c := range globCases {
		if c.pattern == "" {
			continue // an empty ToolGlob is "no filter"; an empty rule matches only ""
		}
		p, err := policy.NewRules(policy.RuleConfig{Allow: map[string][]string{"reader": {c.pattern}}})
		if err != nil {
			t.Fatalf("policy with %q: %v", c.pattern, err)
		}
		m := store.CallFilter{ToolGlob: c.pattern}.Matcher()
		for _, name := range append([]string{c.name}, extra...) {
			args, err := warden.NewArgs("path", name)
			if err != nil {
				t.Fatal(err)
			}
			byPolicy := p.Evaluate("reader", args, nil).Effect == warden.Allow
			byFilter := m.Match(store.CallRecord{Tool: name})
			if byPolicy != byFilter {
				t.Errorf("pattern %q on %q: policy allows = %v, audit filter keeps = %v", c.pattern, name, byPolicy, byFilter)
			}
		}
	}
}

func TestCheckToolGlob(t *testing.T) {
	for _, ok := range []string{"", "*", "mcp__[ab]*", "[[]x", "[*]", `a\b`, "é*"} {
		if err := store.CheckToolGlob(ok); err != nil {
			t.Errorf("CheckToolGlob(%q) = %v, want nil", ok, err)
		}
	}
	for _, c := range []struct{ pattern, says string }{
		{"mcp__[ab*", "no ']' closes"},
		{"[", "write '[[]'"},
		{"a\xffb", "not valid UTF-8"},
		{"a\x00b", "NUL"},
	} {
		err := store.CheckToolGlob(c.pattern)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("CheckToolGlob(%q) = %v, want an error saying %q", c.pattern, err, c.says)
		}
	}
}

func FuzzToolGlobIsThePolicyDialect(f *testing.F) {
	f.Add("mcp__[ab]*", "mcp__alpha")
	f.Add("a*b?c", "aXXbYc")
	f.Add("[!z-a]", "q")
	f.Add("ß*", "SS")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if pattern == "" || len(pattern) > 64 || len(name) > 256 || store.CleanString(name) != name {
			t.Skip()
		}
		p, err := policy.NewRules(policy.RuleConfig{Allow: map[string][]string{"reader": {pattern}}})
		if err != nil {
			t.Skip()
		}
		args, err := warden.NewArgs("path", name)
		if err != nil {
			t.Skip()
		}
		byPolicy := p.Evaluate("reader", args, nil).Effect == warden.Allow
		byFilter := store.CallFilter{ToolGlob: pattern}.Matcher().Match(store.CallRecord{Tool: name})
		if byPolicy != byFilter {
			t.Errorf("pattern %q on %q: policy allows = %v, audit filter keeps = %v", pattern, name, byPolicy, byFilter)
		}
	})
}
