package hook_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/hook"
)

var preHook = hook.ClaudeHook{Event: hook.EventPreToolUse, Command: "/usr/local/bin/warden hook claude-code --policy /p/warden.yaml"}

func TestMergeClaudeSettingsIntoEmpty(t *testing.T) {
	out, changed, err := hook.MergeClaudeSettings([]byte("{}"), preHook)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	want := `{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/warden hook claude-code --policy /p/warden.yaml"
          }
        ]
      }
    ]
  }
}
`
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if got := string(hook.ClaudeHooksBlock(preHook)); got != want {
		t.Errorf("ClaudeHooksBlock = %s, want the same block", got)
	}
}

// existing is a settings file with other keys, other events and other PreToolUse hooks,
// in an order that is not sorted.
const existing = `{
  "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
  "model": "opus",
  "hooks": {
    "PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "gofmt -w", "timeout": 30}]}],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check-bash.sh"}]},
      {"matcher": "Write", "hooks": [{"type": "command", "command": "/usr/local/bin/warden hook claude-code --policy /p/warden.yaml"}]}
    ]
  },
  "env": {"FOO": "1", "RATE": 1.50}
}`

func TestMergeClaudeSettingsKeepsEverything(t *testing.T) {
	out, changed, err := hook.MergeClaudeSettings([]byte(existing), preHook)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	// Everything that was there, in its order, with the new group appended. The Warden
	// hook that runs only for Write does not count as installed for every tool.
	want := `{
  "permissions": {
    "allow": [
      "Bash(npm run lint)"
    ],
    "deny": [
      "Read(./.env)"
    ]
  },
  "model": "opus",
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Write|Edit",
        "hooks": [
          {
            "type": "command",
            "command": "gofmt -w",
            "timeout": 30
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "./check-bash.sh"
          }
        ]
      },
      {
        "matcher": "Write",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/warden hook claude-code --policy /p/warden.yaml"
          }
        ]
      },
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/warden hook claude-code --policy /p/warden.yaml"
          }
        ]
      }
    ]
  },
  "env": {
    "FOO": "1",
    "RATE": 1.50
  }
}
`
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}

	// Idempotent: merging the result again changes nothing and returns it as it is.
	again, changed, err := hook.MergeClaudeSettings(out, preHook)
	if err != nil || changed || string(again) != string(out) {
		t.Errorf("second merge: changed=%v err=%v", changed, err)
	}
}

func TestMergeClaudeSettingsSeesInstalledHook(t *testing.T) {
	for _, matcher := range []string{`"matcher": "*", `, `"matcher": "", `, ``} {
		in := `{"hooks": {"PreToolUse": [{` + matcher + `"hooks": [{"type": "command", "command": "` + preHook.Command + `"}]}]}}`
		out, changed, err := hook.MergeClaudeSettings([]byte(in), preHook)
		if err != nil || changed || string(out) != in {
			t.Errorf("%s: changed=%v err=%v; want nothing to do", in, changed, err)
		}
	}
}

func TestMergeClaudeSettingsTwoEvents(t *testing.T) {
	post := hook.ClaudeHook{Event: hook.EventPostToolUse, Command: "warden hook claude-code --event post --store sqlite:///w.db"}
	out, changed, err := hook.MergeClaudeSettings([]byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"`+preHook.Command+`"}]}]}}`), preHook, post)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if n := strings.Count(string(out), preHook.Command); n != 1 {
		t.Errorf("the PreToolUse hook appears %d times, want 1:\n%s", n, out)
	}
	if !strings.Contains(string(out), `"PostToolUse": [`) || !strings.Contains(string(out), post.Command) {
		t.Errorf("no PostToolUse hook:\n%s", out)
	}
}

func TestMergeClaudeSettingsRefuses(t *testing.T) {
	tests := []struct {
		name, settings, wantErr string
	}{
		{"empty file", "", "the file is empty"},
		{"not JSON", "{hooks: []}", "not a valid JSON object"},
		{"trailing comma", `{"model": "opus",}`, "not a valid JSON object"},
		{"comments", "// settings\n{}", "not a valid JSON object"},
		{"array", `[]`, "not a valid JSON object"},
		{"duplicate key", `{"hooks": {}, "hooks": {}}`, `duplicate key "hooks"`},
		{"hooks not an object", `{"hooks": []}`, `"hooks" is an array, not an object`},
		{"event not an array", `{"hooks": {"PreToolUse": {"matcher": "*"}}}`, `"hooks.PreToolUse" is an object, not an array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := hook.MergeClaudeSettings([]byte(tt.settings), preHook)
			if !errors.Is(err, hook.ErrInvalidSettings) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want ErrInvalidSettings with %q", err, tt.wantErr)
			}
			if out != nil || changed {
				t.Errorf("out=%q changed=%v on error", out, changed)
			}
		})
	}
}

func TestInstallClaudeSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "settings.json")

	// A missing file and directory are created.
	changed, err := hook.InstallClaudeSettings(path, preHook)
	if err != nil || !changed {
		t.Fatalf("first install: changed=%v err=%v", changed, err)
	}
	first := readFile(t, path)
	if first != string(hook.ClaudeHooksBlock(preHook)) {
		t.Errorf("new file = %s", first)
	}

	// The second install changes nothing and does not write.
	mtimeBefore := modTime(t, path)
	if changed, err := hook.InstallClaudeSettings(path, preHook); err != nil || changed {
		t.Errorf("second install: changed=%v err=%v", changed, err)
	}
	if readFile(t, path) != first || modTime(t, path) != mtimeBefore {
		t.Error("second install rewrote the file")
	}

	// Permissions are kept; no temporary file is left behind.
	if err := os.WriteFile(path, []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := hook.InstallClaudeSettings(path, preHook); err != nil || !changed {
		t.Fatalf("install into existing: changed=%v err=%v", changed, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only settings.json", len(entries))
	}
}

func TestInstallClaudeSettingsLeavesInvalidFileAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	const bad = `{"hooks": {"PreToolUse": [ }`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := hook.InstallClaudeSettings(path, preHook)
	if !errors.Is(err, hook.ErrInvalidSettings) || changed {
		t.Errorf("changed=%v err=%v, want ErrInvalidSettings", changed, err)
	}
	if !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("error %q does not name the file", err)
	}
	if got := readFile(t, path); got != bad {
		t.Errorf("file changed to %q", got)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d files, want 1", len(entries))
	}
}

func TestInstallClaudeSettingsFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles-settings.json")
	if err := os.WriteFile(real, []byte(`{"model":"opus"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "settings.json")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	if _, err := hook.InstallClaudeSettings(link, preHook); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if !strings.Contains(readFile(t, real), preHook.Command) {
		t.Errorf("the link's target was not updated")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func modTime(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime().UnixNano()
}
