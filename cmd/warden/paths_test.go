package main

// Regression tests for issue 12, deliverable 8 (paths judged as they will be used, and
// Warden's own files out of the governed tools' reach) and 9 (a hook install that
// blocks when its binary is gone).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/hook"
)

// pathsPolicy denies every .env file to every tool and allows everything else.
const pathsPolicy = `version: 1
mode: rules
rules:
  deny:
    reader: ["*.env"]
    bash: ["cat *.env"]
    search: ["*.env"]
    editor: ["*.env"]
  allow:
    reader: ["*"]
    bash: ["cat *"]
    search: ["*"]
    editor: ["*"]
`

// TestRunPathsJudgedAsOpened: every spelling of a denied file, and a symbolic link to
// it, is refused; the run's own files are never written, whatever the policy says.
// On 445888d, "x.env/", "x.env/.", "x.env//", the link and "cat x.env/" were
// "allowed by *" and returned the secret, and the editor rewrote policy.yaml.
func TestRunPathsJudgedAsOpened(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "x.env"), "TOPSECRET\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "hi\n")
	writeFile(t, filepath.Join(dir, "policy.yaml"), pathsPolicy)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("x.env", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	calls := []string{
		`{id: c1, name: reader, args: {path: x.env/}}`,
		`{id: c2, name: reader, args: {path: x.env/.}}`,
		`{id: c3, name: reader, args: {path: x.env//}}`,
		`{id: c4, name: reader, args: {path: ./x.env}}`,
		`{id: c5, name: reader, args: {path: sub/../x.env}}`,
		`{id: c6, name: reader, args: {path: alias}}`,
		fmt.Sprintf(`{id: c7, name: reader, args: {path: %q}}`, filepath.Join(dir, "sub", "..", "x.env")+"/"),
		`{id: c8, name: bash, args: {command: "cat x.env/"}}`,
		`{id: c9, name: bash, args: {command: "cat alias"}}`,
		`{id: c10, name: search, args: {pattern: TOP, path: x.env/}}`,
		`{id: c11, name: editor, args: {file_path: x.env/., action: write, content: gone}}`,
		`{id: c12, name: editor, args: {file_path: policy.yaml, action: write, content: "allow_all"}}`,
		`{id: c13, name: editor, args: {file_path: ./sub/../agent.yaml, action: append, content: "x"}}`,
		`{id: c14, name: editor, args: {file_path: warden-checkpoint-0123.json, action: write, content: "{}"}}`,
		`{id: c15, name: reader, args: {path: notes.txt/}}`,
		`{id: c16, name: editor, args: {file_path: sub/new.txt, action: write, content: "ok"}}`,
	}
	agentYAML := "provider:\n  name: scripted\n  replies:\n    - calls:\n        - " + strings.Join(calls, "\n        - ") +
		"\n    - text: done\npolicy: policy.yaml\nworkspace: .\ncheckpoint_dir: .\n"
	writeFile(t, filepath.Join(dir, "agent.yaml"), agentYAML)

	r := runWarden(t, "run", "--config", filepath.Join(dir, "agent.yaml"), "try every spelling")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Each call is two lines: "→ tool args" and its outcome.
	var outcomes []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "  refused: ") || strings.HasPrefix(line, "  allowed by ") {
			outcomes = append(outcomes, line)
		}
	}
	if len(outcomes) != len(calls) {
		t.Fatalf("%d outcomes for %d calls:\n%s", len(outcomes), len(calls), r.stdout)
	}
	for i := range 11 {
		if outcomes[i] != "  refused: [permission denied: denied by rule: *.env]" && outcomes[i] != "  refused: [permission denied: denied by rule: cat *.env]" {
			t.Errorf("call c%d: %s, want the *.env rule's refusal", i+1, outcomes[i])
		}
	}
	for i, what := range map[int]string{11: "policy.yaml is the Warden policy", 12: "./sub/../agent.yaml is the agent configuration", 13: "warden-checkpoint-0123.json is a Warden checkpoint"} {
		if want := "  refused: Warden refused this write: " + what + ", which no tool call may change, whatever the policy says."; outcomes[i] != want {
			t.Errorf("call c%d: %s\nwant %s", i+1, outcomes[i], want)
		}
	}
	for i := 14; i < 16; i++ {
		if outcomes[i] != "  allowed by *" {
			t.Errorf("call c%d: %s, want allowed by *", i+1, outcomes[i])
		}
	}
	wantContains(t, "stdout", r.stdout, "2 tool calls executed")
	for file, want := range map[string]string{"x.env": "TOPSECRET\n", "policy.yaml": pathsPolicy, "agent.yaml": agentYAML, "sub/new.txt": "ok"} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "warden-checkpoint-0123.json")); !os.IsNotExist(err) {
		t.Errorf("a checkpoint file was written: %v", err)
	}
}

// hookProject makes a project directory for the hook tests, a directory outside it
// holding /etc-like files, a link to that directory inside the project, and a policy
// outside the project that confines reads to the project and lets the editor write
// what the editor pattern matches ("": the project). It returns the
// project, the outside directory and the policy file.
func hookProject(t *testing.T, editor string) (proj, outside, policyFile string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj, outside = filepath.Join(base, "proj"), filepath.Join(base, "etc")
	for _, d := range []string{proj, filepath.Join(outside, "cron.d"), filepath.Join(base, "config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(outside, "shadow"), "root:x\n")
	if err := os.Symlink(outside, filepath.Join(proj, "link")); err != nil {
		t.Fatal(err)
	}
	policyFile = filepath.Join(base, "config", "policy.yaml")
	if editor == "" {
		editor = proj + "/*"
	}
	writeFile(t, policyFile, fmt.Sprintf(`version: 1
mode: rules
match:
  search: "{path}"
rules:
  allow:
    reader: [%[1]q]
    editor: [%[3]q]
    search: [%[2]q, %[1]q]
    bash: ["*"]
`, proj+"/*", proj, editor))
	return proj, outside, policyFile
}

// hookCall runs one PreToolUse input through the hook and returns its answer.
func hookCall(t *testing.T, cwd, tool string, input map[string]any, flags ...string) (hook.ClaudeOutput, result) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input, "tool_use_id": "t"})
	if err != nil {
		t.Fatal(err)
	}
	r := runWardenStdin(t, b, append([]string{"hook", "claude-code"}, flags...)...)
	return hookAnswer(t, r.stdout), r
}

// TestHookPathsResolved: a link inside the project does not carry a read or a write
// outside what the policy allows. On 445888d, Read proj/link/shadow and Write
// proj/link/cron.d/x were allowed by the proj/* rules.
func TestHookPathsResolved(t *testing.T) {
	proj, outside, policyFile := hookProject(t, "")
	pol := []string{"--policy", policyFile}
	for _, tt := range []struct {
		tool  string
		input map[string]any
		want  string
	}{
		{"Read", map[string]any{"file_path": proj + "/link/shadow"}, "deny"},
		{"Read", map[string]any{"file_path": "link/shadow"}, "deny"},
		{"Read", map[string]any{"file_path": "link/../etc/shadow"}, "deny"}, // lexically proj/etc/shadow
		{"Write", map[string]any{"file_path": proj + "/link/cron.d/x", "content": "* * * * * root sh"}, "deny"},
		{"Edit", map[string]any{"file_path": "link/cron.d/new/x", "old_string": "a", "new_string": "b"}, "deny"},
		{"MultiEdit", map[string]any{"file_path": "./link//shadow", "edits": []any{}}, "deny"},
		{"NotebookEdit", map[string]any{"notebook_path": "link/x.ipynb", "new_source": ""}, "deny"},
		{"Grep", map[string]any{"pattern": "root", "path": "link"}, "deny"},
		{"Glob", map[string]any{"pattern": "link/*"}, "deny"},
		{"Read", map[string]any{"file_path": proj + "/src/main.go"}, "allow"},
		{"Write", map[string]any{"file_path": "new/dir/file.txt", "content": "x"}, "allow"},
		{"Grep", map[string]any{"pattern": "x"}, "allow"},
	} {
		out, r := hookCall(t, proj, tt.tool, tt.input, pol...)
		if r.code != 0 || out.Permission() != tt.want {
			t.Errorf("%s %v: exit %d, %s (%s); want %s", tt.tool, tt.input, r.code, out.Permission(), out.Reason(), tt.want)
		}
		if tt.want == "deny" && !strings.Contains(out.Reason(), outside) {
			t.Errorf("%s %v: the reason %q does not say where the path leads", tt.tool, tt.input, out.Reason())
		}
	}
}

// TestHookSelfProtection: the policy, the settings that run the hook and the audit
// store are never writable through the tools the hook governs, whatever the policy
// says. On 445888d, Write of the policy or of .claude/settings.json was allowed.
func TestHookSelfProtection(t *testing.T) {
	proj, _, policyFile := hookProject(t, "*")
	if err := os.Symlink(policyFile, filepath.Join(proj, "p.yaml")); err != nil {
		t.Fatal(err)
	}
	dsn := "sqlite://" + filepath.Join(filepath.Dir(policyFile), "audit.db")
	flags := []string{"--policy", policyFile, "--store", dsn}
	settings := filepath.Join(proj, ".claude", "settings.json")
	for _, tt := range []struct {
		tool  string
		input map[string]any
		what  string // what the self-protection deny names, or "allow", or "deny" (any)
	}{
		{"Write", map[string]any{"file_path": policyFile, "content": "mode: allow_all"}, "the Warden policy"},
		{"Write", map[string]any{"file_path": "p.yaml", "content": "x"}, "the Warden policy"}, // a link to it
		{"Edit", map[string]any{"file_path": filepath.Dir(policyFile) + "/./policy.yaml/", "old_string": "a", "new_string": "b"}, "the Warden policy"},
		{"Write", map[string]any{"file_path": ".claude/settings.json", "content": "{}"}, "the Claude Code settings"},
		{"Write", map[string]any{"file_path": ".claude/settings.local.json", "content": "{}"}, "the Claude Code settings"},
		{"Write", map[string]any{"file_path": ".Claude/Settings.json", "content": "{}"}, "the Claude Code settings"},
		{"MultiEdit", map[string]any{"file_path": settings, "edits": []any{}}, "the Claude Code settings"},
		{"Write", map[string]any{"file_path": filepath.Dir(policyFile) + "/audit.db-wal", "content": ""}, "the Warden audit store"},
		{"Bash", map[string]any{"command": "cp evil.yaml " + policyFile}, "the Warden policy"},
		{"Bash", map[string]any{"command": "tee .claude/settings.json"}, "the Claude Code settings"},
		{"Bash", map[string]any{"command": "sh -c 'cat x > .claude/settings.local.json'"}, "deny"},
		{"Bash", map[string]any{"command": `python3 -c "open('p.yaml','w')"`}, "the Warden policy"},
		{"Bash", map[string]any{"command": "rm -rf .cl*"}, "the Claude Code settings"},
		{"Bash", map[string]any{"command": "rm -rf .claude"}, "the Claude Code settings"},
		{"Bash", map[string]any{"command": "chmod -R 777 " + proj + "/.claude"}, "the Claude Code settings"},
		{"Bash", map[string]any{"command": "mv ../config /tmp/x"}, "the Warden policy"},
		{"Bash", map[string]any{"command": "cp x ~/.claude/settings.json"}, "the Claude Code settings"},
		{"Bash", map[string]any{"command": "cp x .c{l,x}aude/settings.json"}, "deny"},
		{"Bash", map[string]any{"command": "timeout 5 cp x .claude/settings.json"}, "the Claude Code settings"},
		{"Bash", map[string]any{"command": "cp x --target-directory=.claude"}, "the Claude Code settings"},
		// Compound commands and expansions are refused by the shell analysis already.
		{"Bash", map[string]any{"command": "echo '{}' > .claude/settings.json"}, "deny"},
		{"Bash", map[string]any{"command": "cd sub && rm ../.claude/settings.json"}, "deny"},
		{"Bash", map[string]any{"command": "cat x > $HOME/.claude/settings.json"}, "deny"},
		{"Bash", map[string]any{"command": "git status"}, "allow"},
		{"Bash", map[string]any{"command": "go test ./..."}, "allow"},
		{"Bash", map[string]any{"command": "cat src/settings.json"}, "allow"},
		{"Write", map[string]any{"file_path": "src/settings.json", "content": "{}"}, "allow"},
	} {
		out, r := hookCall(t, proj, tt.tool, tt.input, flags...)
		if r.code != 0 {
			t.Errorf("%s %v: exit %d: %s", tt.tool, tt.input, r.code, r.stderr)
			continue
		}
		switch tt.what {
		case "allow", "deny":
			if out.Permission() != tt.what {
				t.Errorf("%s %v: %s (%s), want %s", tt.tool, tt.input, out.Permission(), out.Reason(), tt.what)
			}
		default:
			if out.Permission() != hook.PermissionDeny || !strings.Contains(out.Reason(), tt.what) || !strings.Contains(out.Reason(), "whatever the policy says") {
				t.Errorf("%s %v: %s (%s), want the self-protection deny for %s", tt.tool, tt.input, out.Permission(), out.Reason(), tt.what)
			}
		}
	}
	if b, _ := os.ReadFile(policyFile); !strings.Contains(string(b), "mode: rules") {
		t.Error("the policy changed")
	}
}

// TestHookPolicyInProject: the hook refuses, at run time, a policy inside the project
// (the session's cwd or $CLAUDE_PROJECT_DIR) unless it was installed with
// --policy-in-project; install refuses to write such a hook without the flag. On
// 445888d both ran the policy from inside the project.
func TestHookPolicyInProject(t *testing.T) {
	proj, _, _ := hookProject(t, "")
	inside := filepath.Join(proj, "warden.yaml")
	writeFile(t, inside, "version: 1\nmode: rules\nrules:\n  allow:\n    editor: [\"*\"]\n    bash: [\"*\"]\n")
	read := map[string]any{"file_path": "README.md"}

	out, r := hookCall(t, proj, "Read", read, "--policy", inside)
	if r.code != exitUsage || out.Permission() != hook.PermissionDeny || !strings.Contains(out.Reason(), "is inside the project directory "+proj) || !strings.Contains(r.stderr, "--policy-in-project") {
		t.Errorf("exit %d, %s (%s), stderr %q; want the refusal", r.code, out.Permission(), out.Reason(), r.stderr)
	}
	t.Setenv("CLAUDE_PROJECT_DIR", proj)
	if out, r := hookCall(t, filepath.Join(proj, "sub"), "Read", read, "--policy", inside); r.code != exitUsage || out.Permission() != hook.PermissionDeny {
		t.Errorf("with $CLAUDE_PROJECT_DIR: exit %d, %s (%s)", r.code, out.Permission(), out.Reason())
	}
	// Accepted explicitly: the policy decides, and still cannot be rewritten.
	if out, r := hookCall(t, proj, "Write", map[string]any{"file_path": "x.go", "content": ""}, "--policy", inside, "--policy-in-project"); r.code != 0 || out.Permission() != hook.PermissionAllow {
		t.Errorf("--policy-in-project: exit %d, %s (%s)", r.code, out.Permission(), out.Reason())
	}
	for _, in := range []map[string]any{{"file_path": "warden.yaml", "content": "mode: allow_all"}, {"file_path": "./warden.yaml", "content": ""}} {
		if out, _ := hookCall(t, proj, "Write", in, "--policy", inside, "--policy-in-project"); out.Permission() != hook.PermissionDeny || !strings.Contains(out.Reason(), "the Warden policy") {
			t.Errorf("Write %v: %s (%s), want the self-protection deny", in, out.Permission(), out.Reason())
		}
	}

	// install --write refuses it, and writes the flag when it is given.
	settings := filepath.Join(proj, ".claude", "settings.json")
	install := []string{"hook", "claude-code", "install", "--warden-hook", "/usr/local/bin/warden-hook", "--policy", inside, "--settings", settings, "--write"}
	r = runWarden(t, install...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "is inside the project directory") || !strings.Contains(r.stderr, "--policy-in-project") {
		t.Errorf("install: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Errorf("settings written: %v", err)
	}
	if r = runWarden(t, append(install, "--policy-in-project")...); r.code != 0 {
		t.Fatalf("install --policy-in-project: exit %d, %s", r.code, r.stderr)
	}
	if got := readSettings(t, settings); !strings.Contains(got, inside+" --policy-in-project ||") {
		t.Errorf("the hook does not carry --policy-in-project:\n%s", got)
	}
}

// TestHookInstallRefusesCleanedBinaries: install will not write a hook that runs a
// binary from the Go build cache, a go-build directory or a temporary directory. On
// 445888d, `go run ./cmd/warden hook claude-code install --write` wrote such a path.
func TestHookInstallRefusesCleanedBinaries(t *testing.T) {
	policyFile, err := filepath.Abs(hookPolicy)
	if err != nil {
		t.Fatal(err)
	}
	bin := wardenBinary(t) // built before GOCACHE changes, from the shared cache
	cache := t.TempDir()
	t.Setenv("GOCACHE", cache) // `go env GOCACHE` reads it too
	for _, exe := range []string{
		filepath.Join(cache, "ab", "warden"),
		"/home/me/.cache/go-build/ab/cd/exe/warden",
		"/opt/go-build1234/b001/exe/warden",
		filepath.Join(os.TempDir(), "go-build99", "b001", "exe", "warden"),
		filepath.Join(os.TempDir(), "warden"),
		"/tmp/warden",
	} {
		settings := filepath.Join(t.TempDir(), "settings.json")
		r := runWarden(t, "hook", "claude-code", "install", "--warden-hook", exe, "--policy", policyFile, "--settings", settings, "--write")
		if r.code != exitUsage || !strings.Contains(r.stderr, "not installing a hook that runs "+exe) ||
			!strings.Contains(r.stderr, "go install github.com/wardenhq/warden/cmd/...@latest") || !strings.Contains(r.stderr, "go build -o ~/bin/warden-hook ./cmd/warden-hook") {
			t.Errorf("--warden-hook %s: exit %d, stderr %q", exe, r.code, r.stderr)
		}
		if _, err := os.Stat(settings); !os.IsNotExist(err) {
			t.Errorf("--warden-hook %s: settings written", exe)
		}
	}
	// The warden-hook beside the binary a test build runs from (a temporary directory)
	// is refused as the default too.
	slim := wardenHookBinary(t)
	cmd := exec.Command(bin, "hook", "claude-code", "install", "--policy", policyFile)
	cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "not installing a hook that runs "+slim) {
		t.Errorf("default executable: %v, output %q", err, out)
	}
}

// TestHookCommandBlocksWhenBroken runs the PreToolUse command install writes through
// sh -c, the way Claude Code runs it: with the binary missing, not executable, or
// failing with another code than 2, it exits 2 with a message on stderr; with the real
// binary at a path with spaces and quotes it answers. On 445888d the command was the
// bare binary path: a missing binary exited 127, which Claude Code does not block on.
func TestHookCommandBlocksWhenBroken(t *testing.T) {
	policyFile, err := filepath.Abs(hookPolicy)
	if err != nil {
		t.Fatal(err)
	}
	exe := "/opt/My Tools/it's \"warden\"/$(touch pwned)/warden-hook"
	settings := filepath.Join(t.TempDir(), "settings.json")
	if r := runWarden(t, "hook", "claude-code", "install", "--warden-hook", exe, "--policy", policyFile, "--settings", settings, "--write"); r.code != 0 {
		t.Fatalf("install: exit %d: %s", r.code, r.stderr)
	}
	var got struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal([]byte(readSettings(t, settings)), &got); err != nil {
		t.Fatal(err)
	}
	command := got.Hooks["PreToolUse"][0].Hooks[0].Command
	dir := t.TempDir()
	runHook := func(command string) result {
		cmd := exec.Command("sh", "-c", command)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(string(bashInput("git status")))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}
	r := runHook(command)
	if r.code != 2 || !strings.Contains(r.stderr, "Warden's PreToolUse hook failed (exit 127), so this tool call is blocked") {
		t.Errorf("binary missing: exit %d, stderr %q; want exit 2 and the message", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); !os.IsNotExist(err) {
		t.Error("the quoted path ran a command substitution")
	}

	// The same command line for binaries that exist, at a path with spaces and quotes.
	binDir := filepath.Join(t.TempDir(), `my "bin" it's`)
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	at := func(name, script string, mode os.FileMode) string {
		p := filepath.Join(binDir, name)
		if err := os.WriteFile(p, []byte(script), mode); err != nil {
			t.Fatal(err)
		}
		return blockingCommand([]string{p, "claude-code", "--policy", policyFile})
	}
	for name, tt := range map[string]struct {
		script string
		mode   os.FileMode
		exit   string
	}{
		"crashes":        {"#!/bin/sh\necho partial\nexit 1\n", 0o755, "exit 1"},
		"killed":         {"#!/bin/sh\nkill -9 $$\n", 0o755, "exit 137"},
		"not executable": {"#!/bin/sh\nexit 0\n", 0o644, "exit 126"},
	} {
		r := runHook(at(name, tt.script, tt.mode))
		if r.code != 2 || !strings.Contains(r.stderr, "hook failed ("+tt.exit+"), so this tool call is blocked") {
			t.Errorf("%s: exit %d, stderr %q", name, r.code, r.stderr)
		}
	}
	// Warden's own exit 2 passes through without the extra message.
	r = runHook(at("refuses", "#!/bin/sh\necho 'Warden refused' >&2\nexit 2\n", 0o755))
	if r.code != 2 || r.stderr != "Warden refused\n" {
		t.Errorf("exit 2: exit %d, stderr %q", r.code, r.stderr)
	}
	// The real binary answers.
	real := filepath.Join(binDir, "warden-hook")
	b, err := os.ReadFile(wardenHookBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, b, 0o755); err != nil {
		t.Fatal(err)
	}
	r = runHook(blockingCommand([]string{real, "claude-code", "--policy", policyFile}))
	if r.code != 0 || hookAnswer(t, r.stdout).Permission() != hook.PermissionAllow {
		t.Errorf("real binary: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
