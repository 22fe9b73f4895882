// Package mcptest holds test-support helpers for the MCP gateway and its web inbox: real peers to talk
// to (the reference "everything" server from npm, Go example servers built on
// demand), the module's root directory, and the small helpers the gateway's tests
// share (a log buffer, bearer-token MCP clients, polling). It is a normal package so
// that tests in several packages can share it; nothing outside tests should import it.
//
// The npm peers are pinned in internal/mcptest/testdata/npm/package.json and package-lock.json and
// installed, without running any install script and leaving the lock unchanged, with
//
//	npm install --ignore-scripts --no-audit --no-fund --no-save --prefix internal/mcptest/testdata/npm
//
// Tests that need a missing peer are skipped, except under CI=true, where .ci/run
// installs the peers and a missing one fails the test. Claude Code ([ClaudeCode]) and
// the conformance suite ([Conformance]) are pinned and installed the same way from
// internal/mcptest/testdata/claude and internal/mcptest/testdata/conformance.
package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// modulePath is the module whose root RepoRoot looks for.
const modulePath = "github.com/wardenhq/warden"

// The npm packages of the reference server and of the Inspector.
const (
	everythingPackage = "@modelcontextprotocol/server-everything"
	inspectorPackage  = "@modelcontextprotocol/inspector"
)

// minNodeMajor is the oldest Node.js major version the pinned peers run on.
const minNodeMajor = 18

// RepoRoot returns the module root directory: the nearest directory, from the
// working directory up (a test's working directory is its package's), whose go.mod
// declares module github.com/wardenhq/warden. It fails t when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := rootOnce()
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	return root
}

var rootOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
})

// declaresModule reports whether a go.mod's content declares modulePath.
func declaresModule(gomod []byte) bool {
	for line := range strings.Lines(string(gomod)) {
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == "module" && strings.Trim(fields[1], `"`) == modulePath {
			return true
		}
	}
	return false
}

// missing skips t, or fails it under CI=true, where the peers are installed and a
// missing one is a broken build rather than a local convenience.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("mcptest: %s (CI=true: .ci/run installs the test peers, so this is a failure)", msg)
	}
	t.Skipf("mcptest: %s", msg)
}

// EverythingServer returns the command and args that start the reference server
// @modelcontextprotocol/server-everything over stdio: command is the bare name
// "node" (the gateway's TransportPolicy refuses paths; PATH finds it), args are the
// absolute path of the installed package's entry point and "stdio".
//
// It skips t with a clear message when node (version 18 or later) or the installed
// package is missing, or when the installed version differs from the one pinned in
// internal/mcptest/testdata/npm/package.json, except when CI=true, where it fails t (t.Fatalf)
// because .ci/run installs it.
func EverythingServer(t testing.TB) (command string, args []string) {
	t.Helper()
	return "node", []string{npmPeer(t, everythingPackage, ""), "stdio"}
}

// InspectorCLI returns the command and leading args that run the MCP Inspector's
// command-line client (@modelcontextprotocol/inspector --cli), a black-box MCP
// client. It skips or fails t exactly as [EverythingServer] does.
func InspectorCLI(t testing.TB) (command string, args []string) {
	t.Helper()
	return "node", []string{npmPeer(t, inspectorPackage, "mcp-inspector"), "--cli"}
}

// npmPeer returns the absolute path of the entry point bin (the only one when bin is
// "") of the installed npm package pkg, after checking node and the pinned version.
func npmPeer(t testing.TB, pkg, bin string) string {
	t.Helper()
	root := RepoRoot(t)
	npmDir := filepath.Join(root, "internal", "mcptest", "testdata", "npm")
	install := "run: npm install --ignore-scripts --no-audit --no-fund --no-save --prefix internal/mcptest/testdata/npm"

	if err := checkNode(); err != nil {
		missing(t, "%v; the npm test peers need Node.js %d or later", err, minNodeMajor)
	}
	var pinned struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(npmDir, "package.json"), &pinned); err != nil {
		t.Fatalf("mcptest: %v", err) // the pin is part of the repository: never skip
	}
	want := pinned.Dependencies[pkg]
	if want == "" {
		t.Fatalf("mcptest: %s is not pinned in internal/mcptest/testdata/npm/package.json", pkg)
	}
	pkgDir := filepath.Join(npmDir, "node_modules", filepath.FromSlash(pkg))
	var installed struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := readJSON(filepath.Join(pkgDir, "package.json"), &installed); err != nil {
		missing(t, "%s is not installed (%v); %s", pkg, err, install)
	}
	if installed.Version != want {
		missing(t, "%s %s is installed but %s is pinned; %s", pkg, installed.Version, want, install)
	}
	entry, err := binEntry(installed.Bin, bin)
	if err != nil {
		t.Fatalf("mcptest: %s %s: %v", pkg, installed.Version, err)
	}
	script := filepath.Join(pkgDir, filepath.FromSlash(entry))
	if _, err := os.Stat(script); err != nil {
		missing(t, "%s is incompletely installed (%v); %s", pkg, err, install)
	}
	return script
}

// binEntry returns the program named name in a package.json "bin" field, or its only
// program when name is "".
func binEntry(bin json.RawMessage, name string) (string, error) {
	var one string
	if err := json.Unmarshal(bin, &one); err == nil && one != "" && name == "" {
		return one, nil
	}
	var many map[string]string
	if err := json.Unmarshal(bin, &many); err != nil {
		return "", fmt.Errorf(`package.json "bin" is neither a path nor a map: %s`, bin)
	}
	if name != "" {
		if v, ok := many[name]; ok {
			return v, nil
		}
		return "", fmt.Errorf(`package.json "bin" has no program %q: %s`, name, bin)
	}
	if len(many) != 1 {
		return "", fmt.Errorf(`package.json "bin" should name one program, got %s`, bin)
	}
	for _, v := range many {
		return v, nil
	}
	return "", fmt.Errorf(`package.json "bin" is empty`)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkNode reports whether a recent enough node is on PATH; it runs once per
// process.
var checkNode = sync.OnceValue(func() error {
	path, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("node is not on PATH")
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %v", path, err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil {
		return fmt.Errorf("node --version printed %q", out)
	}
	if major < minNodeMajor {
		return fmt.Errorf("node is version %s", v)
	}
	return nil
})

// builds caches one build per package path for the life of the test process.
var builds struct {
	sync.Mutex
	dir string // created on the first build
	m   map[string]func() (string, error)
}

// BuildBinary builds the Go main package at pkg (an import path relative to the
// module root, e.g. "./examples/gateway/notes-server") once per test process and
// returns the binary's absolute path. Concurrent callers for the same pkg wait for
// the one build; a failed build fails every caller with the compiler's output.
//
// The binaries go to one temporary directory per process, named
// "warden-mcptest-*" in the system temporary directory. Nothing in a test process
// knows when its last test ends, so the directory outlives the process; each process
// removes the ones older than a day that earlier runs left behind.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	if !strings.HasPrefix(pkg, "./") {
		t.Fatalf("mcptest: BuildBinary(%q): give a path relative to the module root, starting with ./", pkg)
	}
	root := RepoRoot(t)
	builds.Lock()
	if builds.m == nil {
		builds.m = map[string]func() (string, error){}
	}
	build, ok := builds.m[pkg]
	if !ok {
		build = sync.OnceValues(func() (string, error) { return buildBinary(root, pkg) })
		builds.m[pkg] = build
	}
	builds.Unlock()

	bin, err := build()
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	return bin
}

func buildBinary(root, pkg string) (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	name := filepath.Base(filepath.FromSlash(pkg))
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	out := filepath.Join(dir, name)
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building %s: the go command is not on PATH", pkg)
	}
	cmd := exec.Command(goTool, "build", "-o", out, pkg)
	cmd.Dir = root
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, output.Bytes())
	}
	return out, nil
}

// binDir returns this process's binary directory, creating it on first use and then
// removing stale ones that earlier processes left.
func binDir() (string, error) {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		return builds.dir, nil
	}
	dir, err := os.MkdirTemp("", "warden-mcptest-")
	if err != nil {
		return "", err
	}
	builds.dir = dir
	if old, err := filepath.Glob(filepath.Join(os.TempDir(), "warden-mcptest-*")); err == nil {
		for _, o := range old {
			if info, err := os.Stat(o); err == nil && o != dir && info.IsDir() && time.Since(info.ModTime()) > 24*time.Hour {
				os.RemoveAll(o)
			}
		}
	}
	return dir, nil
}
