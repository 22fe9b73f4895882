package shell

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBashDifferential checks the word values parseSimple reports against
// what a real bash passes to printf, for random words over an alphabet of
// quotes, escapes, braces, globs, operators and blanks. Whenever the
// package calls "printf '%s\0' WORDS" simple, bash must run exactly that
// printf with exactly those arguments: same output, nothing on stderr,
// status 0.
//
// The generated words only ever name the commands x and y, which do not
// exist, and run in an empty directory, so the worst a wrong verdict can
// do is print an error. It still runs a shell on generated input, so it
// only runs when WARDEN_SHELL_BASH_DIFF is set, e.g.:
//
//	WARDEN_SHELL_BASH_DIFF=1 go test ./shell/ -run BashDifferential
func TestBashDifferential(t *testing.T) {
	if os.Getenv("WARDEN_SHELL_BASH_DIFF") == "" {
		t.Skip("set WARDEN_SHELL_BASH_DIFF=1 to compare against bash")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, name := range []string{"x", "y"} {
		if _, err := exec.LookPath(name); err == nil {
			t.Skipf("a command named %q exists here", name)
		}
	}
	alphabet := []string{
		"x", "y", "x", "y", " ", " ", "\t", "\n", "\r", "\v", "\f",
		"\\", "\\", "'", "'", "\"", "\"", "{", "}", ",", ".", "..",
		"*", "?", "[", "]", "~", "#", "=", "-", "!", "^", "%",
		";", "&", "|", "<", ">", "(", ")",
		"{x,y}", "{1..2}", "\\\n", "'\n'", "\"\\\"\"", "é",
		"$", "$", "$\\\n", "\\\n\\\n", "\"$\\\n", "$\\\n\\\n",
	}
	dir := t.TempDir()
	seed := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("WARDEN_SHELL_BASH_DIFF"), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	simple := 0
	for range 4000 {
		var b strings.Builder
		for range 1 + rng.IntN(10) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		src := `printf '%s\0' ` + b.String()
		argv, _, problem := parseSimple(src)
		if problem != "" {
			continue
		}
		simple++
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, bash, "-c", src)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/H", "LC_ALL=C"}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil || stderr.Len() > 0 {
			t.Errorf("simple %q, but bash: %v %q", src, err, stderr.String())
			continue
		}
		// Tilde expansion is left to the policy: map HOME back.
		got := strings.Split(strings.ReplaceAll(stdout.String(), "/H", "~"), "\x00")
		got = got[:len(got)-1]
		want := argv[2:]
		if len(want) == 0 {
			want = []string{""} // printf with no argument prints its format once
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: bash passed %q, parseSimple says %q", src, got, want)
		}
	}
	t.Logf("%d simple commands compared with bash", simple)
}
