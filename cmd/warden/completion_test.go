package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// Each shell's script is produced, names the command and the function it calls back
// (warden __complete), and bash's parses.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range completionShells {
		t.Run(shell, func(t *testing.T) {
			r := runWarden(t, "completion", shell)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if strings.TrimSpace(r.stdout) == "" {
				t.Fatal("empty script")
			}
			for _, want := range []string{"warden", "__complete"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("the %s script does not mention %q", shell, want)
				}
			}
			if shell != "bash" {
				return
			}
			bash, err := exec.LookPath("bash")
			if err != nil {
				t.Skip("bash is not installed")
			}
			cmd := exec.Command(bash, "-n")
			cmd.Stdin = strings.NewReader(r.stdout)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("bash -n refuses the script: %v\n%s", err, stderr.String())
			}
		})
	}
}

// The scripts ask the binary for candidates; it answers with the subcommands and the
// shells.
func TestCompletionCandidates(t *testing.T) {
	r := runWarden(t, "__complete", "completion", "")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "bash\nzsh\nfish\n") {
		t.Errorf("exit %d, stdout %q; want bash, zsh, fish", r.code, r.stdout)
	}
	r = runWarden(t, "__complete", "val")
	if r.code != 0 || !strings.Contains(r.stdout, "validate\t") {
		t.Errorf("exit %d, stdout %q; want validate", r.code, r.stdout)
	}
}

func TestCompletionUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}, {"completion", "bash", "zsh"}} {
		r := runWarden(t, args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, r.code, exitUsage)
		}
		if !strings.Contains(r.stderr, "bash, zsh, fish") || !strings.Contains(r.stderr, "warden completion --help") || r.stdout != "" {
			t.Errorf("%v: stdout %q, stderr %q; want the three shells named and a pointer to help", args, r.stdout, r.stderr)
		}
	}
}
