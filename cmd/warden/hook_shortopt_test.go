package main

import (
	"testing"

	"github.com/wardenhq/warden/hook"
)

// TestHookSelfProtectionAttachedOption: a short option takes its argument attached, so
// "-o.claude/settings.json" names the settings file. Before this fix each of these was
// "allowed by rule: *" (sort -o and curl -o rewrite the file, cp -t and install -t
// write into .claude).
func TestHookSelfProtectionAttachedOption(t *testing.T) {
	proj, _, policyFile := hookProject(t, "*")
	flags := []string{"--policy", policyFile}
	for _, cmd := range []string{
		"cp -t.claude x",
		"sort -o.claude/settings.json x",
		"curl -o.claude/settings.json http://x",
		"cp x -t.claude",
		"install -Dt.claude settings.json",
	} {
		out, r := hookCall(t, proj, "Bash", map[string]any{"command": cmd}, flags...)
		if r.code != 0 || out.Permission() != hook.PermissionDeny {
			t.Errorf("%q: exit %d, %s (%s), want deny", cmd, r.code, out.Permission(), out.Reason())
		}
	}
}
