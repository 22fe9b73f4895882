package main

import (
	"testing"

	"github.com/wardenhq/warden/hook"
)

// TestHookSelfProtectionProc: a path through another process's links (/proc/self/cwd,
// /proc/<pid>/root) names what it names for the process that opens it. Before this fix
// "cp x /proc/self/cwd/.claude/settings.json" was judged as the hook process's cwd and
// "allowed by rule: *".
func TestHookSelfProtectionProc(t *testing.T) {
	proj, _, policyFile := hookProject(t, "*")
	flags := []string{"--policy", policyFile}
	for _, cmd := range []string{
		"cp x /proc/self/cwd/.claude/settings.json",
		"cp x /proc/thread-self/cwd/.claude/settings.json",
		"cp x /proc/self/root" + proj + "/.claude/settings.json",
		"cp x /proc/1/root" + proj + "/.claude/settings.json",
	} {
		out, r := hookCall(t, proj, "Bash", map[string]any{"command": cmd}, flags...)
		if r.code != 0 || out.Permission() != hook.PermissionDeny {
			t.Errorf("%q: exit %d, %s (%s), want deny", cmd, r.code, out.Permission(), out.Reason())
		}
	}
	for _, in := range []map[string]any{
		{"file_path": "/proc/self/cwd/.claude/settings.json", "content": "{}"},
		{"file_path": "/proc/self/root" + proj + "/.claude/settings.json", "content": "{}"},
	} {
		out, r := hookCall(t, proj, "Write", in, flags...)
		if r.code != 0 || out.Permission() != hook.PermissionDeny {
			t.Errorf("Write %v: exit %d, %s (%s), want deny", in, r.code, out.Permission(), out.Reason())
		}
	}
}

// TestProcPatternLeavesProcFiles: /proc files that are no link into a filesystem stay
// readable (cat /proc/cpuinfo).
func TestProcPatternLeavesProcFiles(t *testing.T) {
	proj, _, policyFile := hookProject(t, "*")
	for _, cmd := range []string{"cat /proc/cpuinfo", "ls /proc", "cat /proc/self/status"} {
		out, r := hookCall(t, proj, "Bash", map[string]any{"command": cmd}, "--policy", policyFile)
		if r.code != 0 || out.Permission() != "allow" {
			t.Errorf("%q: exit %d, %s (%s), want allow", cmd, r.code, out.Permission(), out.Reason())
		}
	}
}
