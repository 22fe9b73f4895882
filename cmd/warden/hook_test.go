package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/checkpoint"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/hook/cli"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store"
)

const (
	hookPolicy   = "testdata/hook/claude-code.yaml"
	codingAgent  = "../../examples/policies/coding-agent.yaml"
	hookFixtures = "testdata/hook"
)

// binDir holds the warden binary the process-level tests run; wardenBinary builds it
// once, on first use.
var (
	binDir        string
	buildOnce     sync.Once
	buildErr      error
	hookBuildOnce sync.Once
	hookBuildErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "warden-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// Runs that pause seal their checkpoints with a key file: this run's own, never
	// the user's (execWardenEnv passes it to child processes).
	os.Setenv(checkpoint.KeyEnv, filepath.Join(dir, "checkpoint.key"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// wardenBinary builds cmd/warden into a temporary directory (once per test run) and
// returns its path.
func wardenBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(binDir, "warden")
	buildOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// wardenHookBinary builds cmd/warden-hook beside the warden binary (once per test run),
// the way they are installed, and returns its path.
func wardenHookBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(binDir, cli.HookBinary)
	hookBuildOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", bin, "../warden-hook").CombinedOutput()
		if err != nil {
			hookBuildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if hookBuildErr != nil {
		t.Fatal(hookBuildErr)
	}
	return bin
}

// hookEntryPoint is one of the two programs that run the hook: warden (`warden hook
// claude-code ...`) and warden-hook (`warden-hook claude-code ...`).
type hookEntryPoint struct {
	name   string
	binary func(testing.TB) string
	prefix []string // the words before claude-code's own arguments
}

var hookEntryPoints = []hookEntryPoint{
	{"warden", wardenBinary, []string{"hook", "claude-code"}},
	{"warden-hook", wardenHookBinary, []string{"claude-code"}},
}

// run runs the entry point's binary in dir with stdin and claude-code's args.
func (e hookEntryPoint) run(t testing.TB, dir string, stdin []byte, args ...string) result {
	t.Helper()
	return execBinary(t, e.binary(t), dir, stdin, append(slices.Clone(e.prefix), args...)...)
}

// blockingCommand is the PreToolUse command install writes for argv.
func blockingCommand(argv []string) string { return cli.BlockingCommand(argv) }

// runWardenStdin runs the command line in-process with stdin, as run does.
func runWardenStdin(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := newRootCommand(&stdout, &stderr, &process{})
	root.SetIn(bytes.NewReader(stdin))
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(context.Background())
	if err != nil {
		reportError(&stderr, cmd, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(err)}
}

// execWarden runs the built binary with stdin.
func execWarden(t testing.TB, dir string, stdin []byte, args ...string) result {
	t.Helper()
	return execBinary(t, wardenBinary(t), dir, stdin, args...)
}

// execBinary runs bin in dir with stdin and args.
func execBinary(t testing.TB, bin, dir string, stdin []byte, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running %s: %v", bin, err)
		}
		code = ee.ExitCode()
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// goldenFile compares got with the file at path, or rewrites it with -update.
func goldenFile(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// hookAnswer decodes the one JSON object a PreToolUse hook printed, and checks its shape.
func hookAnswer(t *testing.T, stdout string) hook.ClaudeOutput {
	t.Helper()
	if strings.Count(stdout, "\n") != 1 || !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout = %q; want one line", stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var out hook.ClaudeOutput
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("stdout is not the hook output: %v\n%s", err, stdout)
	}
	s := out.HookSpecificOutput
	if s.HookEventName != "PreToolUse" || !slices.Contains([]string{"allow", "deny", "ask"}, s.PermissionDecision) || s.PermissionDecisionReason == "" {
		t.Errorf("hook output %+v; want PreToolUse, allow|deny|ask and a reason", s)
	}
	return out
}

// checkPermission is what `warden check` says about the call, as a hook permission.
func checkPermission(t *testing.T, policyFile string, call hook.Call) string {
	t.Helper()
	r := runWarden(t, "check", "--policy", policyFile, "--tool", call.Tool, "--args", string(call.Args.AppendJSON(nil)))
	switch r.code {
	case exitAllow:
		return hook.PermissionAllow
	case exitAsk:
		return hook.PermissionAsk
	case exitDeny, exitHalt:
		return hook.PermissionDeny
	}
	t.Fatalf("warden check exit %d: %s", r.code, r.stderr)
	return ""
}

// sameAsCheck asserts that the hook's answer to input is exactly what the shared
// evaluation (evaluateCall, behind `warden check`) decides for the mapped call, and that
// `warden check` itself agrees on the permission.
func sameAsCheck(t *testing.T, policyFile string, input []byte, got hook.ClaudeOutput) {
	t.Helper()
	in, err := hook.ParseClaudeInput(input, hook.EventPreToolUse)
	if err != nil {
		t.Fatal(err)
	}
	call, err := hook.MapClaudeTool(in.ToolName, in.ToolInput, in.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.LoadFile(policyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := evaluateCall(context.Background(), pol, callSpec{tool: call.Tool, args: call.Args})
	if want := hook.ClaudeVerdict(in.ToolName, rep.Decision); got != want {
		t.Errorf("hook answered %+v\nshared evaluation gives %+v", got, want)
	}
	if p := checkPermission(t, policyFile, call); p != got.Permission() {
		t.Errorf("hook answered %s, warden check --tool %s --args %s answers %s", got.Permission(), call.Tool, call.Args.AppendJSON(nil), p)
	}
}

// TestHookGolden runs every fixture in testdata/hook (PreToolUse inputs written from
// Claude Code's documented format) through the hook and compares the transcript with
// its .golden file. Valid inputs must exit 0 with a decision equal to `warden check`'s;
// malformed ones must deny, exit 2 and print the reason on stderr.
func TestHookGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(hookFixtures, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			input, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"hook", "claude-code", "--policy", hookPolicy}
			r := runWardenStdin(t, input, args...)
			transcript := strings.Replace(r.transcript(args), "\n", " < "+file+"\n", 1)
			goldenFile(t, filepath.Join(hookFixtures, name+".golden"), transcript)

			out := hookAnswer(t, r.stdout)
			if strings.HasPrefix(name, "malformed-") {
				if r.code != exitUsage || out.Permission() != hook.PermissionDeny || r.stderr != out.Reason()+"\n" {
					t.Errorf("exit %d, %s, stderr %q; want exit 2, deny, and the reason on stderr", r.code, out.Permission(), r.stderr)
				}
				return
			}
			if r.code != 0 || r.stderr != "" {
				t.Errorf("exit %d, stderr %q; want exit 0 and nothing on stderr", r.code, r.stderr)
			}
			sameAsCheck(t, hookPolicy, input, out)
		})
	}
}

// bashInput is a PreToolUse input for a Bash call in /work/app (a project directory
// that does not hold the policies the tests use: a policy inside the project is
// refused).
func bashInput(command string) []byte {
	b, err := json.Marshal(map[string]any{
		"session_id":      "s-1",
		"cwd":             "/work/app",
		"hook_event_name": "PreToolUse",
		"tool_name":       "Bash",
		"tool_input":      map[string]any{"command": command, "description": "test"},
		"tool_use_id":     "toolu_1",
	})
	if err != nil {
		panic(err)
	}
	return b
}

// TestHookBashTable runs the bash table (control operators, wrappers, absolute paths,
// quoting) through the hook under examples/policies/coding-agent.yaml, and checks each
// answer against the expected one and against `warden check` for the same call.
func TestHookBashTable(t *testing.T) {
	tests := []struct {
		command string
		want    string
	}{
		// Allowed commands, however they are spelled.
		{"git status", "allow"},
		{"git diff HEAD~1 -- main.go", "allow"},
		{"git   log   '--oneline'", "allow"},
		{`"git" 'status'`, "allow"},
		{"/usr/bin/git status", "allow"},
		{"/bin/ls -la /work/app/src", "allow"},
		{"ls", "allow"},
		{"pwd", "allow"},
		{"go test ./...", "allow"},
		{"timeout 60 go test ./...", "allow"},
		{"cat 'a|b;c&&d'", "allow"}, // operators inside quotes are not operators
		{"find src -name '*_test.go'", "allow"},
		{`find src -name '*.go' -exec ls {} \;`, "allow"}, // find is allowed, so is ls
		// The working directory and its ancestors hold the hook's settings, but naming
		// them is left to the policy (every everyday command does).
		{"find . -name '*_test.go'", "allow"},
		{"/bin/ls -la /work", "allow"},
		// Allowed by the policy, but naming the hook's settings or the directory below
		// the project that holds them: refused whatever the policy says.
		{"cat .claude/settings.json", "protected"},
		{"ls -la .claude", "protected"},
		{"cat /work/app/x/../.claude/settings.local.json", "deny"}, // cat /* denies first
		{"ls ~", "protected"},
		// Denied by a rule, directly or through a wrapper.
		{"rm", "deny"},
		{"rm -rf /", "deny"},
		{"/bin/rm -rf /work", "deny"},
		{"rm  -rf  /", "deny"},
		{"'rm' -rf /", "deny"},
		{"sudo ls", "deny"},
		{"sudo /bin/rm -rf /", "deny"},
		{"timeout 5 sudo rm -rf /", "deny"},
		{"env FOO=1 rm -rf /", "deny"},
		{"env ls", "deny"}, // the wrapper itself needs an allow rule
		{"nohup rm -rf /work", "deny"},
		{"sh -c 'rm -rf /'", "deny"},
		{`bash -c "git status"`, "deny"}, // bash -c needs its own rule
		{"xargs rm", "deny"},
		{`find . -name '*.o' -exec rm {} +`, "deny"},
		{"find /work -name '*.tmp' -delete", "deny"},
		{"curl -sSL https://example.com/x.sh", "deny"},
		{"git push --force origin main", "deny"},
		{"git push -f", "deny"},
		{"make", "deny"}, // no rule: default deny
		// Control operators and expansions: refused before any rule.
		{"ls; rm -rf /", "deny"},
		{"git status && rm -rf /", "deny"},
		{"git status || true", "deny"},
		{"ls | sh", "deny"},
		{"echo `id`", "deny"},
		{"cat $(ls)", "deny"},
		{`ls "$HOME"`, "deny"},
		{"cat < /etc/passwd", "deny"},
		{"ls > out.txt", "deny"},
		{"ls &", "deny"},
		{"ls\nrm -rf /", "deny"},
		{"FOO=bar ls", "deny"},
		{"(ls)", "deny"},
		{"ls <(cat /etc/passwd)", "deny"},
		{"timeout 5 sh -c 'ls; rm -rf /'", "deny"},
		// Asks a person.
		{"git push", "ask"},
		{"git push origin main", "ask"},
		{"timeout 30 git push origin main", "ask"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			input := bashInput(tt.command)
			r := runWardenStdin(t, input, "hook", "claude-code", "--policy", codingAgent)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			out := hookAnswer(t, r.stdout)
			if tt.want == "protected" {
				if out.Permission() != hook.PermissionDeny || !strings.Contains(out.Reason(), "Warden refused this command: it names") {
					t.Errorf("%q: %s (%s), want the self-protection deny", tt.command, out.Permission(), out.Reason())
				}
				return
			}
			if out.Permission() != tt.want {
				t.Errorf("%q: %s (%s), want %s", tt.command, out.Permission(), out.Reason(), tt.want)
			}
			sameAsCheck(t, codingAgent, input, out)
		})
	}
}

// TestHookExitCodes runs the real binaries, warden and warden-hook: every failure
// denies on stdout, prints the same reason on stderr and exits 2; a decision exits 0;
// both binaries and the in-process run answer byte for byte alike.
func TestHookExitCodes(t *testing.T) {
	valid := bashInput("git status")
	big := []byte(`{"tool_name":"Write","tool_input":{"file_path":"/work/a","content":"` + strings.Repeat("x", 9<<20) + `"}}`)
	tests := []struct {
		name       string
		args       []string
		stdin      []byte
		code       int
		permission string
		reason     string // a part of the reason
	}{
		{"allow", []string{"--policy", codingAgent}, valid, 0, "allow", "Warden: allowed by rule: git status*"},
		{"deny", []string{"--policy", codingAgent}, bashInput("rm -rf /"), 0, "deny", "[permission denied: denied by rule: rm *]"},
		{"ask", []string{"--policy", codingAgent}, bashInput("git push"), 0, "ask", "allow this Bash call?"},
		{"empty stdin", []string{"--policy", codingAgent}, nil, 2, "deny", "stdin is empty"},
		{"not JSON", []string{"--policy", codingAgent}, []byte("{"), 2, "deny", "stdin is not valid JSON"},
		{"no tool_name", []string{"--policy", codingAgent}, []byte(`{"tool_input":{}}`), 2, "deny", "tool_name is missing"},
		{"tool_input not an object", []string{"--policy", codingAgent}, []byte(`{"tool_name":"Bash","tool_input":[]}`), 2, "deny", "tool_input must be an object, not an array"},
		{"stdin over 8 MiB", []string{"--policy", codingAgent}, big, 2, "deny", "stdin is larger than 8 MiB"},
		{"role from the policy", []string{"--policy", "testdata/policies/roles.yaml"}, valid, 0, "ask", "escalate by rule: *"},
		{"role from the flag", []string{"--policy", "testdata/policies/roles.yaml", "--role", "viewer"}, valid, 0, "deny", "not in the 'viewer' role allowlist"},
		{"no policy flag", nil, valid, 2, "deny", "no policy"},
		{"missing policy file", []string{"--policy", "testdata/hook/nope.yaml"}, valid, 2, "deny", "the policy does not load: testdata/hook/nope.yaml: cannot read policy file"},
		{"invalid policy", []string{"--policy", "testdata/bad/unknown-key.yaml"}, valid, 2, "deny", "the policy does not load: testdata/bad/unknown-key.yaml:"},
		// A shadow policy file is never the enforcing one (its mode would allow all).
		{"shadow policy file", []string{"--policy", "testdata/validate/shadow-file.yaml"}, valid, 2, "deny", "the policy does not load: testdata/validate/shadow-file.yaml:3:10: this file is a shadow policy (enforce: false) and cannot be loaded as the enforcing policy"},
		{"unknown role", []string{"--policy", codingAgent, "--role", "admin"}, valid, 2, "deny", "the policy does not load"},
		{"unknown flag", []string{"--policy", codingAgent, "--polcy", "x"}, valid, 2, "deny", "unknown flag: --polcy"},
		{"unknown event", []string{"--policy", codingAgent, "--event", "stop"}, valid, 2, "deny", `--event is "stop"; use pre or post`},
		{"stray argument", []string{"--policy", codingAgent, "instal"}, valid, 2, "deny", `unexpected argument "instal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"hook", "claude-code"}, tt.args...)
			r := execWarden(t, ".", tt.stdin, args...)
			if slim := hookEntryPoints[1].run(t, ".", tt.stdin, tt.args...); slim != r {
				t.Errorf("warden-hook differs from warden hook:\n%+v\n%+v", slim, r)
			}
			if r.code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			out := hookAnswer(t, r.stdout)
			if out.Permission() != tt.permission || !strings.Contains(out.Reason(), tt.reason) {
				t.Errorf("%s %q, want %s with %q", out.Permission(), out.Reason(), tt.permission, tt.reason)
			}
			wantStderr := ""
			if tt.code != 0 {
				wantStderr = out.Reason() + "\n"
			}
			if r.stderr != wantStderr {
				t.Errorf("stderr = %q, want %q", r.stderr, wantStderr)
			}
			// In-process and out-of-process runs agree byte for byte.
			if len(tt.stdin) < 1<<20 {
				if in := runWardenStdin(t, tt.stdin, args...); in != r {
					t.Errorf("in-process run differs:\n%+v\n%+v", in, r)
				}
			}
		})
	}
}

// TestHookInstall covers printing, writing, merging, idempotence and refusals.
func TestHookInstall(t *testing.T) {
	absPolicy, err := filepath.Abs(hookPolicy)
	if err != nil {
		t.Fatal(err)
	}
	const exe = "/usr/local/bin/warden-hook"
	preArgv := []string{exe, "claude-code", "--policy", absPolicy}
	preHook := hook.ClaudeHook{Event: "PreToolUse", Command: blockingCommand(preArgv)}
	if !strings.HasPrefix(preHook.Command, exe+" claude-code --policy "+absPolicy+" || {") {
		t.Fatalf("the PreToolUse command is %q", preHook.Command)
	}
	install := func(extra ...string) []string {
		return append([]string{"hook", "claude-code", "install", "--warden-hook", exe, "--policy", hookPolicy}, extra...)
	}

	t.Run("print", func(t *testing.T) {
		r := runWarden(t, install()...)
		if r.code != 0 || r.stdout != string(hook.ClaudeHooksBlock(preHook)) {
			t.Errorf("exit %d, stdout:\n%s", r.code, r.stdout)
		}
		if !strings.Contains(r.stdout, `"matcher": "*"`) {
			t.Errorf("the block does not match every tool")
		}
	})

	t.Run("print with store", func(t *testing.T) {
		r := runWarden(t, install("--store", "sqlite:///var/lib/warden/audit.db")...)
		want := hook.ClaudeHooksBlock(
			hook.ClaudeHook{Event: "PreToolUse", Command: blockingCommand(append(preArgv, "--store", "sqlite:///var/lib/warden/audit.db"))},
			hook.ClaudeHook{Event: "PostToolUse", Command: exe + " claude-code --event post --store sqlite:///var/lib/warden/audit.db"},
		)
		if r.code != 0 || r.stdout != string(want) {
			t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, want)
		}
	})

	t.Run("write merges and is idempotent", func(t *testing.T) {
		settings := filepath.Join(t.TempDir(), ".claude", "settings.json")
		if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
			t.Fatal(err)
		}
		const existing = `{"model":"opus","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./lint-bash.sh"}]}],"Stop":[{"hooks":[{"type":"command","command":"say done"}]}]}}`
		if err := os.WriteFile(settings, []byte(existing), 0o640); err != nil {
			t.Fatal(err)
		}
		r := runWarden(t, install("--settings", settings, "--write")...)
		if r.code != 0 || r.stdout != "added the Warden hook to "+settings+"\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		after := readSettings(t, settings)
		want, _, err := hook.MergeClaudeSettings([]byte(existing), preHook)
		if err != nil || after != string(want) {
			t.Errorf("settings after install:\n%s\nwant:\n%s", after, want)
		}
		for _, kept := range []string{`"model": "opus"`, "./lint-bash.sh", "say done", `"Stop"`} {
			if !strings.Contains(after, kept) {
				t.Errorf("lost %s", kept)
			}
		}
		if fi, _ := os.Stat(settings); fi.Mode().Perm() != 0o640 {
			t.Errorf("mode %v, want 0640", fi.Mode().Perm())
		}

		r = runWarden(t, install("--settings", settings, "--write")...)
		if r.code != 0 || !strings.Contains(r.stdout, "already runs the Warden hook; nothing changed") {
			t.Errorf("second run: exit %d, stdout %q", r.code, r.stdout)
		}
		if again := readSettings(t, settings); again != after {
			t.Errorf("second run changed the file")
		}
	})

	t.Run("invalid settings are refused and left alone", func(t *testing.T) {
		settings := filepath.Join(t.TempDir(), "settings.json")
		const bad = "{\n  \"hooks\": {\"PreToolUse\": [],}\n}\n"
		if err := os.WriteFile(settings, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Stat(settings)
		r := runWarden(t, install("--settings", settings, "--write")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "not a valid JSON object") || !strings.Contains(r.stderr, "nothing was written") {
			t.Errorf("exit %d, stderr %q; want exit 2 and the reason", r.code, r.stderr)
		}
		after, _ := os.Stat(settings)
		if readSettings(t, settings) != bad || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("the file was touched")
		}
	})

	t.Run("a policy that does not load is refused", func(t *testing.T) {
		settings := filepath.Join(t.TempDir(), "settings.json")
		r := runWarden(t, "hook", "claude-code", "install", "--warden-hook", exe, "--policy", "testdata/bad/unknown-key.yaml", "--settings", settings, "--write")
		if r.code != exitUsage || !strings.Contains(r.stderr, "policy does not load") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
		if _, err := os.Stat(settings); !os.IsNotExist(err) {
			t.Errorf("settings file created: %v", err)
		}
	})

	t.Run("default settings path, real binaries", func(t *testing.T) {
		for _, e := range hookEntryPoints {
			dir := t.TempDir()
			r := e.run(t, dir, nil, "install", "--warden-hook", exe, "--policy", absPolicy, "--write")
			if r.code != 0 {
				t.Fatalf("%s: exit %d: %s", e.name, r.code, r.stderr)
			}
			got := readSettings(t, filepath.Join(dir, ".claude", "settings.json"))
			if got != string(hook.ClaudeHooksBlock(preHook)) {
				t.Errorf("%s: settings:\n%s", e.name, got)
			}
			if !strings.Contains(got, `"command": "/usr/local/bin/warden-hook claude-code --policy `) {
				t.Errorf("%s: the written command does not run warden-hook:\n%s", e.name, got)
			}
		}
	})

	t.Run("--warden is refused with a pointer to --warden-hook", func(t *testing.T) {
		r := runWarden(t, "hook", "claude-code", "install", "--warden", "/usr/local/bin/warden", "--policy", hookPolicy)
		if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "pass --warden-hook PATH") || !strings.Contains(r.stderr, "go build -o /usr/local/bin/warden-hook ./cmd/warden-hook") {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
}

// TestHookProtectsBothBinaries: whichever binary runs the hook, a Write to it or to
// its sibling (warden beside warden-hook) is denied, whatever the policy says.
func TestHookProtectsBothBinaries(t *testing.T) {
	proj, _, policyFile := hookProject(t, "*")
	for _, e := range hookEntryPoints {
		for _, target := range []string{wardenBinary(t), wardenHookBinary(t)} {
			in, err := json.Marshal(map[string]any{"session_id": "s", "cwd": proj, "hook_event_name": "PreToolUse", "tool_use_id": "t",
				"tool_name": "Write", "tool_input": map[string]any{"file_path": target, "content": "x"}})
			if err != nil {
				t.Fatal(err)
			}
			r := e.run(t, proj, in, "--policy", policyFile)
			out := hookAnswer(t, r.stdout)
			want := "Warden refused this write: " + target + " is the " + filepath.Base(target) + " executable"
			if r.code != 0 || out.Permission() != hook.PermissionDeny || !strings.Contains(out.Reason(), want) {
				t.Errorf("%s, Write %s: exit %d, %s (%s); want the self-protection deny %q", e.name, target, r.code, out.Permission(), out.Reason(), want)
			}
		}
	}
}

// TestHookInstallFindsWardenHook runs install from the real binaries without
// --warden-hook: it looks for warden-hook beside the running executable. A warden with
// none beside it is refused with the command that builds one there; one beside it is
// the binary the hook would run (refused here only because the test binaries live in a
// temporary directory, which install never trusts to last).
func TestHookInstallFindsWardenHook(t *testing.T) {
	absPolicy, err := filepath.Abs(hookPolicy)
	if err != nil {
		t.Fatal(err)
	}
	lonely := filepath.Join(t.TempDir(), "warden")
	if err := os.Link(wardenBinary(t), lonely); err != nil {
		b, rerr := os.ReadFile(wardenBinary(t))
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err := os.WriteFile(lonely, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := execBinary(t, lonely, t.TempDir(), nil, "hook", "claude-code", "install", "--policy", absPolicy)
	want := filepath.Join(filepath.Dir(lonely), "warden-hook")
	if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "there is no warden-hook beside "+lonely) ||
		!strings.Contains(r.stderr, "go build -o "+want+" ./cmd/warden-hook") {
		t.Errorf("no warden-hook: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// warden on PATH that is the running binary under a link: the warden-hook beside
	// the link comes first (the path that survives upgrades).
	links := t.TempDir()
	for _, name := range []string{"warden", "warden-hook"} {
		if err := os.Symlink(filepath.Join(binDir, name), filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	wardenHookBinary(t)
	cmd := exec.Command(wardenBinary(t), "hook", "claude-code", "install", "--policy", absPolicy)
	cmd.Env = append(os.Environ(), "PATH="+links)
	out, _ := cmd.CombinedOutput()
	if want := "not installing a hook that runs " + filepath.Join(links, "warden-hook") + ": it is inside "; !strings.Contains(string(out), want) {
		t.Errorf("warden on PATH through a link: %s\nwant %q", out, want)
	}

	for _, e := range hookEntryPoints {
		slim := wardenHookBinary(t)
		r := e.run(t, t.TempDir(), nil, "install", "--policy", absPolicy)
		if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "not installing a hook that runs "+slim+": it is inside ") {
			t.Errorf("%s beside warden-hook: exit %d, stdout %q, stderr %q; want the refusal of %s", e.name, r.code, r.stdout, r.stderr, slim)
		}
	}
}

func readSettings(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hookLatencyRuns is how many times each latency test starts each binary.
const hookLatencyRuns = 50

// measureHook starts the entry point's binary hookLatencyRuns times with claude-code's
// args and the i-th run's stdin, and logs the median, p90, min and max wall time (process
// start, policy load, decision, output). It fails only when a run fails, never on time.
func measureHook(t *testing.T, e hookEntryPoint, what string, input func(i int) []byte, args ...string) {
	t.Helper()
	bin := e.binary(t)
	argv := append(slices.Clone(e.prefix), args...)
	times := make([]time.Duration, 0, hookLatencyRuns)
	for i := range hookLatencyRuns {
		cmd := exec.Command(bin, argv...)
		cmd.Stdin = bytes.NewReader(input(i))
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v", e.name, strings.Join(argv, " "), err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	median := (times[len(times)/2-1] + times[len(times)/2]) / 2
	p90 := times[len(times)*9/10]
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	t.Logf("%-11s %s over %d runs: median %v, p90 %v, min %v, max %v", e.name, what, len(times), r(median), r(p90), r(times[0]), r(times[len(times)-1]))
}

// TestHookLatency starts each real binary (warden hook claude-code, and the slim
// warden-hook claude-code) hookLatencyRuns times on a Bash call and logs the median and
// p90 wall time. Targets (measurements, not assertions: a loaded machine must not fail
// it): warden-hook median <= 5 ms. Run: go test ./cmd/warden -run TestHookLatency -v
func TestHookLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binaries 50 times each")
	}
	input := bashInput("timeout 60 go test ./...")
	for _, e := range hookEntryPoints {
		measureHook(t, e, "hook invocation", func(int) []byte { return input }, "--policy", codingAgent)
	}
}

// BenchmarkHookInvocation measures one whole hook invocation of each real binary.
func BenchmarkHookInvocation(b *testing.B) {
	input := bashInput("timeout 60 go test ./...")
	for _, e := range hookEntryPoints {
		b.Run(e.name, func(b *testing.B) {
			bin := e.binary(b)
			argv := append(slices.Clone(e.prefix), "--policy", codingAgent)
			for b.Loop() {
				cmd := exec.Command(bin, argv...)
				cmd.Stdin = bytes.NewReader(input)
				cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// postInput turns a PreToolUse fixture into the PostToolUse input Claude Code sends
// after the call ran.
func postInput(t *testing.T, fixture string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFixture(t, fixture), &m); err != nil {
		t.Fatal(err)
	}
	m["hook_event_name"] = "PostToolUse"
	m["tool_response"] = map[string]any{"stdout": "ok\n", "stderr": "", "interrupted": false}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hookFixtures, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHookStore records decisions in a SQLite audit log and completes them from
// PostToolUse inputs.
func TestHookStore(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "audit.db")
	pre := []string{"hook", "claude-code", "--policy", hookPolicy, "--store", dsn}
	post := []string{"hook", "claude-code", "--event", "post", "--store", dsn}

	for _, f := range []string{"bash-allow", "bash-deny", "bash-ask", "bash-halt", "bash-ask-declined"} {
		input := readFixture(t, strings.TrimSuffix(f, "-declined"))
		if f == "bash-ask-declined" {
			input = bytes.Replace(input, []byte("toolu_01HookTest0003"), []byte("toolu_01HookTestDecl"), 1)
		}
		r := runWardenStdin(t, input, pre...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("%s: exit %d, stderr %q", f, r.code, r.stderr)
		}
		// The answer is the same as without a store.
		if plain := runWardenStdin(t, input, pre[:4]...); plain.stdout != r.stdout {
			t.Errorf("%s: with --store %s, without %s", f, r.stdout, plain.stdout)
		}
	}
	// The allowed call and the asked call (the person approved it) ran.
	for _, f := range []string{"bash-allow", "bash-ask", "bash-allow"} { // the second post of bash-allow is a retry
		if r := runWardenStdin(t, postInput(t, f), post...); r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Errorf("post %s: exit %d, stdout %q, stderr %q; want exit 0 and no output", f, r.code, r.stdout, r.stderr)
		}
	}
	// A refused call cannot have run; a call Warden never saw is not in the log.
	for f, want := range map[string]string{
		"bash-deny":  `call "toolu_01HookTest0002" ran although Warden recorded it as refused`,
		"read-allow": `no call "toolu_01HookTest0007" of session "9f4c2a7e-hook-test" in the audit log`,
	} {
		r := runWardenStdin(t, postInput(t, f), post...)
		if r.code != exitInternal || r.stdout != "" || !strings.Contains(r.stderr, want) {
			t.Errorf("post %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", f, r.code, r.stdout, r.stderr, want)
		}
	}

	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.QueryCalls(context.Background(), store.CallFilter{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		CallID, Session, Tool, Effect, RuleID string
		Status                                warden.Status
		Executed                              bool
		ApprovedBy                            string
		HasArgs                               bool
	}
	var got []row
	for _, r := range recs {
		got = append(got, row{r.CallID, r.Session, r.Tool, r.Effect, r.RuleID, r.Status, r.Executed, r.ApprovedBy, r.ArgsDigest != "" && len(r.Args) > 0})
	}
	const s = "9f4c2a7e-hook-test"
	want := []row{
		{"toolu_01HookTest0001", s, "bash", "allow", "git status*", warden.StatusRan, true, "", true},
		{"toolu_01HookTest0002", s, "bash", "deny", "sudo *", warden.StatusRefused, false, "", true},
		{"toolu_01HookTest0003", s, "bash", "ask", "git push *", warden.StatusPending, false, "", true},
		{"toolu_01HookTest0006", s, "bash", "halt", "no-production", warden.StatusHalted, false, "", true},
		{"toolu_01HookTestDecl", s, "bash", "ask", "git push *", warden.StatusPending, false, "", true},
		{"toolu_01HookTest0003", s, "bash", "ask", "git push *", warden.StatusRan, true, "claude-code prompt", true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
	// The approved run is the call that was asked about, argument for argument.
	if len(recs) == len(want) {
		asked, ran := recs[2], recs[5]
		if ran.ArgsDigest != asked.ArgsDigest || string(ran.Args) != string(asked.Args) || ran.Revision != asked.Revision || ran.Rationale != asked.Rationale {
			t.Errorf("the approved run %+v is not the asked call %+v", ran, asked)
		}
		if size := len(`{"stdout":"ok\n","stderr":"","interrupted":false}`); ran.ResultSize != size || recs[0].ResultSize != size {
			t.Errorf("result sizes %d and %d, want %d", recs[0].ResultSize, ran.ResultSize, size)
		}
	}
	if rep, err := st.VerifyAudit(context.Background()); err != nil || !rep.OK {
		t.Errorf("audit chain: %+v, %v", rep, err)
	}
}

// TestHookStoreFailsClosed checks that a decision the audit log cannot record is a
// refusal, and that a PostToolUse hook without a store says so.
func TestHookStoreFailsClosed(t *testing.T) {
	input := readFixture(t, "bash-allow")
	r := runWardenStdin(t, input, "hook", "claude-code", "--policy", hookPolicy, "--store", "mysql://db/warden")
	out := hookAnswer(t, r.stdout)
	if r.code != exitUsage || out.Permission() != "deny" || !strings.Contains(out.Reason(), "the audit log could not record the call: opening the store:") || r.stderr != out.Reason()+"\n" {
		t.Errorf("exit %d, %s %q, stderr %q", r.code, out.Permission(), out.Reason(), r.stderr)
	}

	dir := filepath.Join(t.TempDir(), "missing", "dir")
	r = runWardenStdin(t, input, "hook", "claude-code", "--policy", hookPolicy, "--store", "sqlite://"+dir+"/a.db")
	if r.code != exitUsage || hookAnswer(t, r.stdout).Permission() != "deny" {
		t.Errorf("unopenable sqlite store: exit %d, stdout %q", r.code, r.stdout)
	}

	r = runWardenStdin(t, postInput(t, "bash-allow"), "hook", "claude-code", "--event", "post")
	if r.code != exitInternal || r.stdout != "" || !strings.Contains(r.stderr, "--event post needs --store DSN") {
		t.Errorf("post without a store: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runWardenStdin(t, []byte(`{"tool_name":"Bash","tool_input":{}}`), "hook", "claude-code", "--event", "post", "--store", "sqlite://"+filepath.Join(t.TempDir(), "a.db"))
	if r.code != exitInternal || !strings.Contains(r.stderr, "tool_use_id is missing") {
		t.Errorf("post without tool_use_id: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestHookLatencyWithStore is TestHookLatency with a SQLite audit log (one per binary,
// each run a new call). Target: warden-hook median <= 8 ms.
func TestHookLatencyWithStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binaries 50 times each")
	}
	for _, e := range hookEntryPoints {
		dsn := "sqlite://" + filepath.Join(t.TempDir(), "audit.db")
		input := func(i int) []byte {
			return bytes.Replace(bashInput("timeout 60 go test ./..."), []byte("toolu_1"), fmt.Appendf(nil, "toolu_%d", i), 1)
		}
		measureHook(t, e, "hook invocation with a SQLite store", input, "--policy", codingAgent, "--store", dsn)
	}
}
