package hook

import (
	"os"
	"path/filepath"
	"testing"
)

func TestProtected(t *testing.T) {
	base := tree(t)
	proj := filepath.Join(base, "proj")
	policy := filepath.Join(base, "real", "sub", "f")
	var pr Protected
	pr.Add(policy, "the Warden policy")
	pr.AddClaudeSettings([]string{proj}, filepath.Join(base, "home"), "")
	if err := os.Link(policy, filepath.Join(base, "etc", "hard")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{policy, proj + "/rel/f", proj + "/abs/sub/./f", base + "/etc/hard", proj + "/.claude/settings.json", proj + "/.claude/settings.local.json", proj + "/.CLAUDE/settings.json", base + "/.claude/settings.json", base + "/home/.claude/settings.json"} {
		if _, ok := pr.Names(p); !ok {
			t.Errorf("Names(%s) = false", p)
		}
	}
	for _, p := range []string{proj + "/settings.json", proj + "/.claude/other.json", base + "/real/sub/g"} {
		if h, ok := pr.Names(p); ok {
			t.Errorf("Names(%s) = %v", p, h)
		}
	}
	for _, p := range []string{proj, proj + "/.claude", base + "/real", proj + "/rel", "/"} {
		if _, ok := pr.Reaches(p); !ok {
			t.Errorf("Reaches(%s) = false", p)
		}
	}
	for cmd, want := range map[string]bool{
		"cat .claude/settings.json":             true,
		"cat rel/f":                             true,
		"cp x ../real/sub/f":                    true,
		"rm -rf ..":                             false, // cwd's ancestors are the policy's decision
		"rm -rf .":                              false,
		"git add .":                             false,
		"rm -rf .claude":                        true,
		"mv .claude x":                          true,
		"ls ~":                                  true,
		"rm .cl*/*":                             true,
		"rm .c?aude/settings.json":              true,
		"rm .c[l]aude/settings.json":            true,
		`rm .clau"de"/settings.json`:            true,
		`rm .clau\de/settings.json`:             true,
		"rm $X/settings.json":                   true,
		"rm $'\\x2eclaude'/settings.json":       true,
		"cp x --target-directory=.claude":       true,
		"python3 -c \"open('rel/f','w')\"":      true,
		"cd sub && rm ../.claude/settings.json": true,
		"cd":                                    true,
		"git status":                            false,
		"go test ./...":                         false,
		"cat src/main.go README.md":             false,
		"find src -name '*.go' -exec ls {} \\;": false,
		"echo {a,b}":                            true, // a brace group stands for any name
	} {
		if _, got := pr.CommandReaches(cmd, proj, filepath.Join(base, "home")); got != want {
			t.Errorf("CommandReaches(%q) = %v, want %v", cmd, got, want)
		}
	}
	var none Protected
	if _, ok := none.CommandReaches("rm -rf /", proj, ""); ok {
		t.Error("an empty set reaches something")
	}
}
