package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTestGolden pins the output of `warden test`: ok lines, FAIL lines with the
// explanation indented, the summary, and exit 1 when a case fails.
func TestTestGolden(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		code  int
	}{
		{"test-passing", []string{"testdata/tests/passing_test.yaml"}, 0},
		{"test-failing", []string{"testdata/tests/passing_test.yaml", "testdata/tests/failing_test.yaml"}, exitInternal},
		// An unusable file makes the run exit 2, and the other files still run.
		{"test-invalid-and-passing", []string{"testdata/tests/invalid/unknown-key.yaml", "testdata/tests/passing_test.yaml"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"test"}, tt.files...)
			r := runWarden(t, args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d", r.code, tt.code)
			}
			golden(t, tt.name, r.transcript(args))
		})
	}
}

// TestTestInvalidFiles: every unusable test file exits 2 and its first error names the
// test file, a line and a column, and a hint.
func TestTestInvalidFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/tests/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := runWarden(t, "test", file)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d", r.code, exitUsage)
			}
			if r.stdout != "0 passed, 0 failed\n" {
				t.Errorf("stdout = %q, want only the summary", r.stdout)
			}
			m := locatedLine.FindStringSubmatch(firstError(r.stderr))
			if m == nil || m[1] != file {
				t.Errorf("first error %q; want %s:line:col: message (hint)", firstError(r.stderr), file)
			}
		})
	}
	// One run over all of them pins the messages.
	args := append([]string{"test"}, files...)
	golden(t, "test-invalid", runWarden(t, args...).transcript(args))
}

func TestTestUsage(t *testing.T) {
	for _, args := range [][]string{{"test"}, {"test", "testdata/tests"}, {"test", "testdata/tests/nope.yaml"}} {
		r := runWarden(t, args...)
		if r.code != exitUsage || r.stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and an error", args, r.code, r.stderr)
		}
	}
	r := runWarden(t, "test", "testdata/tests")
	if !strings.Contains(r.stderr, "pass test files, not directories") {
		t.Errorf("directory: stderr %q", r.stderr)
	}
}
