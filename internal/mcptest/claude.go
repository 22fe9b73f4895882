package mcptest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// claudeCodePackage is Claude Code's npm package, pinned in
// internal/mcptest/testdata/claude/package.json; claudeCodeLinuxX64 is the optional
// dependency holding its linux-x64 binary.
const (
	claudeCodePackage  = "@anthropic-ai/claude-code"
	claudeCodeLinuxX64 = "@anthropic-ai/claude-code-linux-x64"
)

// ClaudeCode returns the absolute path of the pinned Claude Code's linux-x64 binary
// (the platform package's `claude`: installed with --ignore-scripts, the main
// package's `claude` wrapper is not set up, the binary runs on its own). It skips t
// (fails it under CI=true, where .ci/run installs it) when the package or its binary
// is missing or not the pinned version, and skips it when this is not linux/amd64.
func ClaudeCode(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("mcptest: the tests run Claude Code's linux-x64 binary; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	dir := filepath.Join(RepoRoot(t), "internal", "mcptest", "testdata", "claude")
	install := "run: npm install --ignore-scripts --no-audit --no-fund --no-save --prefix internal/mcptest/testdata/claude"
	var pinned struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(dir, "package.json"), &pinned); err != nil {
		t.Fatalf("mcptest: %v", err) // part of the repository: never skip
	}
	want := pinned.Dependencies[claudeCodePackage]
	if want == "" {
		t.Fatalf("mcptest: %s is not pinned in internal/mcptest/testdata/claude/package.json", claudeCodePackage)
	}
	for _, pkg := range []string{claudeCodePackage, claudeCodeLinuxX64} {
		var installed struct {
			Version string `json:"version"`
		}
		if err := readJSON(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"), &installed); err != nil {
			missing(t, "%s is not installed (%v); %s", pkg, err, install)
		}
		if installed.Version != want {
			missing(t, "%s %s is installed but %s is pinned; %s", pkg, installed.Version, want, install)
		}
	}
	bin := filepath.Join(dir, "node_modules", filepath.FromSlash(claudeCodeLinuxX64), "claude")
	if info, err := os.Stat(bin); err != nil || info.Mode()&0o111 == 0 {
		missing(t, "Claude Code's binary %s is missing or not executable (%v); %s", bin, err, install)
	}
	return bin
}
