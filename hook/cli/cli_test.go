package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/hook"
)

const codingAgent = "../../examples/policies/coding-agent.yaml"

// panicReader panics on Read, standing for any internal failure.
type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic("disk on fire") }

// decodeAnswer decodes the one JSON line a PreToolUse hook printed.
func decodeAnswer(t *testing.T, stdout string) hook.ClaudeOutput {
	t.Helper()
	if strings.Count(stdout, "\n") != 1 {
		t.Fatalf("stdout = %q; want one line", stdout)
	}
	var out hook.ClaudeOutput
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("stdout is not the hook output: %v\n%s", err, stdout)
	}
	return out
}

func TestRecoversFromPanic(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := newProgram(options{policy: codingAgent, event: "pre"}, panicReader{}, &stdout, &stderr).Run(context.Background())
	if code := ExitCode(err); code != ExitUsage {
		t.Errorf("exit %d, want 2", code)
	}
	out := decodeAnswer(t, stdout.String())
	want := "Warden refused this call because it could not decide it: internal error: disk on fire"
	if out.Permission() != "deny" || out.Reason() != want || stderr.String() != want+"\n" {
		t.Errorf("got %s %q, stderr %q", out.Permission(), out.Reason(), stderr.String())
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"/usr/local/bin/warden-hook", "claude-code", "--policy", "/home/me/My Policies/it's.yaml", "--store", "postgres://u:p@db/w?sslmode=require", ""})
	want := `/usr/local/bin/warden-hook claude-code --policy '/home/me/My Policies/it'\''s.yaml' --store 'postgres://u:p@db/w?sslmode=require' ''`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestFindHookBinary: the warden-hook beside the running executable is found; a
// missing one, a directory or a file without an execute bit is an error that says how
// to build it there.
func TestFindHookBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "warden")
	want := filepath.Join(dir, HookBinary)

	_, err := FindHookBinary(exe)
	if err == nil || !strings.Contains(err.Error(), "there is no warden-hook beside "+exe) ||
		!strings.Contains(err.Error(), "go build -o "+want+" ./cmd/warden-hook") || !strings.Contains(err.Error(), "--warden-hook PATH") {
		t.Errorf("missing: %v", err)
	}

	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FindHookBinary(exe); err == nil || !strings.Contains(err.Error(), "is not an executable file") {
		t.Errorf("not executable: %v", err)
	}
	if err := os.Chmod(want, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := FindHookBinary(exe); err != nil || got != want {
		t.Errorf("FindHookBinary(%s) = %q, %v; want %s", exe, got, err, want)
	}

	sub := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(filepath.Join(sub, HookBinary), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := FindHookBinary(filepath.Join(sub, "warden")); err == nil || !strings.Contains(err.Error(), "is not an executable file") {
		t.Errorf("a directory: %v", err)
	}
}

// TestMainExitCodes runs warden-hook's Main in-process: a decision exits 0, a refusal
// (bad flag, no policy) denies and exits 2, a PostToolUse without a store exits 1, and
// an unknown command is a usage error pointing at --help.
func TestMainExitCodes(t *testing.T) {
	valid := []byte(`{"session_id":"s","cwd":"/work/app","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"},"tool_use_id":"t"}`)
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a part of stdout; "" means stdout is empty
		stderr string // a part of stderr
	}{
		{"allow", []string{"claude-code", "--policy", codingAgent}, 0, `"permissionDecision":"allow"`, ""},
		{"no policy", []string{"claude-code"}, 2, `"permissionDecision":"deny"`, "no policy"},
		{"bad flag", []string{"claude-code", "--polcy", "x"}, 2, `"permissionDecision":"deny"`, "unknown flag: --polcy"},
		{"post without store", []string{"claude-code", "--event", "post"}, 1, "", "--event post needs --store DSN"},
		{"unknown command", []string{"claude"}, 2, "", "Run 'warden-hook --help' for usage."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, bytes.NewReader(valid), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || tt.stdout == "" && stdout.Len() > 0 || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, %q, %q", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}
