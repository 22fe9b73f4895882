package policy

// This file holds the lint of policy files: rules and conditions that are valid but can
// never do what they say. Its findings are warnings, never errors, and never change a
// decision.

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fnmatch"
	"github.com/wardenhq/warden/internal/yamlstrict"
	"github.com/wardenhq/warden/shell"
)

// lint returns the warnings for a file that compiled into p, in file order.
func (d *fileDecoder) lint(f *policyFile, p *Policy) []*warden.ConfigError {
	var out []*warden.ConfigError
	warn := func(n *yaml.Node, hint, format string, args ...any) {
		out = append(out, yamlstrict.Located(d.File, n, fmt.Sprintf(format, args...), hint))
	}
	toolKey := func(n *yaml.Node, what, name string) {
		if r, i, ok := oddRune(name); ok {
			warn(n, "write the name in plain ASCII, exactly as the tool is called", "%s %q has the %s character %U at byte %d: it matches only a tool whose name holds that exact character", what, name, runeKind(r), r, i)
		}
	}
	canonical := func(tool string) string { return strings.ToLower(strings.TrimSpace(tool)) }
	if p.rules != nil {
		canonical = p.rules.Canonical
	}

	for _, list := range ruleKeys {
		m := f.ruleListNodes[list]
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			key, val := m.Content[i], m.Content[i+1]
			toolKey(key, "tool key", key.Value)
			if val.Kind == yaml.MappingNode {
				// {patterns: [...], enforce: ...}: the patterns are linted alike.
				val = mappingValue(val, "patterns")
			}
			if val == nil || val.Kind != yaml.SequenceNode {
				continue
			}
			bash := key.Value != "*" && canonical(key.Value) == "bash"
			for _, item := range val.Content {
				pat := item.Value
				if fnmatch.HasLiteralBracket(pat) {
					warn(item, "close the class, or write '[[]' for a literal '['", "pattern %q has a '[' that no ']' closes: it is read as a literal '[', not as a class", pat)
				}
				if bash {
					if fixed, ok := dirCommand(pat); ok {
						hint := "name the command without its directory"
						if fixed != "" {
							hint = fmt.Sprintf("write %q", fixed)
						}
						warn(item, hint, "bash pattern %q can never match: commands are judged by the base name of the command word (/bin/rm -rf x is judged as rm -rf x)", pat)
					}
					if list == "allow" {
						if name, ok := codeRunner(pat); ok {
							warn(item, "escalate it, or allow only the exact invocations you mean (e.g. a fixed script)", "bash pattern %q lets %s run code it is given: the bash check does not judge what an interpreter runs, so this allows any command", pat, name)
						}
					}
				}
			}
		}
	}
	for _, m := range []*yaml.Node{f.aliasesNode, f.matchNode} {
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			toolKey(m.Content[i], "tool key", m.Content[i].Value)
			if m == f.aliasesNode {
				toolKey(m.Content[i+1], "alias target", m.Content[i+1].Value)
			}
		}
	}
	if f.rolesNode != nil && f.rolesNode.Kind == yaml.MappingNode {
		for i := 1; i < len(f.rolesNode.Content); i += 2 {
			for _, item := range f.rolesNode.Content[i].Content {
				toolKey(item, "tool", item.Value)
				if fam := strings.ToLower(strings.TrimSpace(item.Value)); isFamilyKey(fam) {
					prefix := strings.TrimSuffix(fam, "*")
					warn(item, fmt.Sprintf("list each target by its exact name, e.g. %q", prefix+"<name>"),
						"role %q lists %q: a role allowlist names targets exactly, so it allows only a target named %q, not every %s target (family keys apply in rules and match)", f.rolesNode.Content[i-1].Value, item.Value, item.Value, strings.TrimSuffix(prefix, ":"))
				}
			}
		}
	}

	if p.rules != nil && p.conds != nil {
		for i := range p.conds.list {
			cc := &p.conds.list[i]
			for _, name := range cc.toolNames {
				lower := strings.ToLower(strings.TrimSpace(name))
				if target, ok := p.rules.aliases[lower]; ok && target != lower {
					warn(f.condNodes[i], fmt.Sprintf("tool is the name as called: compare with every name, e.g. tool in [%q, %q]", name, target),
						"condition '%s' compares tool with %q, which the rules alias to %q: calls named %q (or another alias of it) are judged as the same tool by the rules but do not match this condition", cc.ID, name, target, target)
					continue
				}
				if others := aliasesOf(p.rules.aliases, lower, f.aliases); len(others) > 0 {
					warn(f.condNodes[i], fmt.Sprintf("tool is the name as called: compare with every name, e.g. tool in [%q, %q]", name, others[0]),
						"condition '%s' compares tool with %q, and the rules alias %s to it: calls by that name do not match this condition", cc.ID, name, quoteAll(others))
				}
			}
		}
	}
	return out
}

// aliasesOf returns the alias keys the file itself declares that map to target, sorted.
// Built-in aliases (bash_tool, ...) are left out: they would flag every condition on
// bash or reader.
func aliasesOf(aliases map[string]string, target string, declared map[string]string) []string {
	var out []string
	for k := range declared {
		lk := strings.ToLower(strings.TrimSpace(k))
		if aliases[lk] == target && lk != target {
			out = append(out, lk)
		}
	}
	slices.Sort(out)
	return out
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// oddRune returns the first rune of s that is not printable ASCII (a space, a control
// character, anything non-ASCII, an invisible format character), and its byte offset.
func oddRune(s string) (rune, int, bool) {
	for i, r := range s {
		if r <= ' ' || r >= 0x7f {
			return r, i, true
		}
	}
	return 0, 0, false
}

func runeKind(r rune) string {
	switch {
	case r < 0x80:
		return "invisible"
	case r == 0x200b || r == 0x200c || r == 0x200d || r == 0x2060 || r == 0xfeff || r == 0xad || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
		return "invisible"
	}
	return "non-ASCII"
}

// dirCommand reports whether a bash pattern's command word names a directory before
// any glob character ("/bin/rm *", "./run.sh"), which no normalized command has, and
// returns the pattern with the base name instead.
func dirCommand(pat string) (string, bool) {
	word, rest, _ := strings.Cut(pat, " ")
	i := strings.IndexByte(word, '/')
	if i < 0 || strings.ContainsAny(word[:i], "*?[") {
		return "", false
	}
	base := path.Base(word)
	if strings.HasSuffix(word, "/") || base == "." || base == "/" {
		return "", true
	}
	if rest != "" {
		return base + " " + rest, true
	}
	return base, true
}

// codeRunner reports the command word of a bash allow pattern when it is a program that
// runs code it is given ([shell.RunsCode]: awk, sed, python, ...) and the pattern lets
// that code be anything (a glob after the name).
func codeRunner(pat string) (string, bool) {
	name, rest, found := strings.Cut(pat, " ")
	if !found || strings.ContainsAny(name, "*?[") || !shell.RunsCode(name) {
		return "", false
	}
	return name, strings.ContainsAny(rest, "*?[")
}

// mappingValue returns the value of key in the mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
