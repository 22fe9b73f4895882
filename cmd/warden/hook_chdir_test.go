package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/hook"
)

// TestHookSelfProtectionChdir: a program told to work in another directory (env -C,
// git -C, make -C, tar -C, sh -c 'cd ..; ...') makes a relative word name another file
// than the one the hook judged. Before this fix each of these was "allowed by rule: *"
// and rewrote the policy or the project's .claude/settings.json.
func TestHookSelfProtectionChdir(t *testing.T) {
	proj, _, policyFile := hookProject(t, "*")
	flags := []string{"--policy", policyFile}
	for _, cmd := range []string{
		"env -C .. cp evil proj/.claude/settings.json",
		"env --chdir=.. cp evil config/policy.yaml",
		"git -C .. mv x proj/.claude/settings.json",
		"builtin cd .. && cp evil config/policy.yaml",
		"command cd .. && cp evil config/policy.yaml",
		"make -C .. -f x config/policy.yaml",
		"tar -C .. -xf x.tar config/policy.yaml",
		"tar -C.. -xf x.tar config/policy.yaml",
		"sh -c 'cd ..; cp evil config/policy.yaml'",
		"env -C " + filepath.Dir(proj) + " cp evil config/policy.yaml",
		"env -C /tmp/a/b/c/d/e/f/g/h/i/j/k/l cp evil ../../../../../../../../../../../../.." + policyFile,
		"env -C link cp evil ../config/policy.yaml",
	} {
		out, r := hookCall(t, proj, "Bash", map[string]any{"command": cmd}, flags...)
		if r.code != 0 || out.Permission() != hook.PermissionDeny {
			t.Errorf("%q: exit %d, %s (%s), want deny", cmd, r.code, out.Permission(), out.Reason())
		} else if !strings.Contains(out.Reason(), "protected") {
			t.Logf("%q: denied, not by self-protection: %s", cmd, out.Reason())
		}
	}
}
