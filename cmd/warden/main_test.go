package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// result is what one in-process run of the warden command line produced.
type result struct {
	stdout, stderr string
	code           int
}

// runWarden runs the command line in-process, as main does.
func runWarden(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// runWardenAt runs the command line in-process with the store commands' clock fixed
// at now.
func runWardenAt(t *testing.T, now time.Time, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runIn(context.Background(), &process{now: func() time.Time { return now }}, args, &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// transcript renders a run the way the golden files hold it: the command, its stdout,
// its stderr (when any) and its exit code.
func (r result) transcript(args []string) string {
	var b strings.Builder
	b.WriteString("$ warden")
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(shellQuote(a))
	}
	b.WriteString("\n")
	b.WriteString(r.stdout)
	if r.stderr != "" {
		b.WriteString("[stderr]\n")
		b.WriteString(r.stderr)
	}
	b.WriteString("[exit " + strconv.Itoa(r.code) + "]\n")
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"{}[]*?$&|;<>()\\`!#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// golden compares got with testdata/golden/<name>.golden, or rewrites the file with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
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

func TestNoArgumentsPrintsHelp(t *testing.T) {
	r := runWarden(t)
	if r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
		t.Errorf("warden with no arguments: exit %d, stdout %q; want exit 0 and the help text", r.code, r.stdout)
	}
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	r := runWarden(t, "frobnicate")
	if r.code != exitUsage {
		t.Errorf("exit %d, want %d", r.code, exitUsage)
	}
	if !strings.Contains(r.stderr, `unknown command "frobnicate"`) || !strings.Contains(r.stderr, "warden --help") {
		t.Errorf("stderr = %q; want the unknown command and a pointer to --help", r.stderr)
	}
}
