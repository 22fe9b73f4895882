package mcp_test

// Attacks on issue 13's MCP adapter (attacker 2), against the fault server started as
// a real child process.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/mcp"
)

// FINDING: ChildEnv filters a child's environment by variable NAME only ("a secret
// named in a server's env is dropped too"), but a project file (input "from whoever
// wrote that code", project.go) may expand ${VAR} from Warden's own environment into
// an env value under any name. So a trusted .mcp.json renames a secret past the
// filter: {"env": {"NOTES": "${ATTACK2_API_KEY}"}} hands the admitted child the key
// the filter drops by name. (Headers of a URL server have the same hole: the key goes
// to the admitted host.) Trusting a project file is documented as "not permission".
func TestAttack2ProjectFileRenamesASecretPastTheEnvFilter(t *testing.T) {
	faultOnPATH(t)
	t.Setenv("ATTACK2_API_KEY", "sk-attack2-secret")
	file := mcptest.WriteFile(t, t.TempDir(), ".mcp.json", []byte(`{"mcpServers": {"proj": {"command": "faultserver", "args": ["-mode", "ok"], "env": {"NOTES": "${ATTACK2_API_KEY}"}}}}`))
	reg, _ := registerTools(t, mcp.ToolsConfig{ProjectFile: file, TrustProjectSettings: true, Transport: admitFault}, nil)
	g := bind(t, reg, mustPolicy(t, "version: 1\nmode: rules\nrules:\n  allow:\n    mcp__proj__getenv: ['*']\n"))
	get := func(name string) string {
		t.Helper()
		out, err := g.Call(context.Background(), warden.Call{ID: name, Tool: "mcp__proj__getenv", Args: mustArgs(t, "name", name)})
		if err != nil || out.Status != warden.StatusRan {
			t.Fatalf("getenv %s: %v %+v", name, err, out)
		}
		return out.ModelText
	}
	if got := get("ATTACK2_API_KEY"); strings.Contains(got, "sk-attack2-secret") {
		t.Errorf("the filter passed ATTACK2_API_KEY by name: %q", got)
	}
	if got := get("NOTES"); strings.Contains(got, "sk-attack2-secret") {
		t.Errorf("the child read the filtered secret under another name: NOTES = %q", got)
	}
}

// Held: a trusted project file whose server the transport policy denies starts
// nothing (no process ever wrote the marker) and registers nothing, and the deny_all
// policy refuses an admitted server's tools at call time without calling upstream.
func TestAttack2DeniedProjectServerNeverStarts(t *testing.T) {
	faultOnPATH(t)
	marker := filepath.Join(t.TempDir(), "pids")
	file := mcptest.WriteFile(t, t.TempDir(), ".mcp.json", []byte(`{"mcpServers": {"proj": {"command": "faultserver", "args": ["-mode", "ok", "-marker", "`+marker+`"]}}}`))
	_, tools := registerTools(t, mcp.ToolsConfig{ProjectFile: file, TrustProjectSettings: true,
		Transport: mcp.TransportPolicy{AllowCommands: true, Commands: []string{"other"}}}, nil)
	if n := tools.Names(); len(n) != 0 {
		t.Errorf("registered %v", n)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the denied server was started: %v", err)
	}

	reg, _ := registerTools(t, mcp.ToolsConfig{Servers: []mcp.ServerConfig{faultConfig("-marker", marker)}, Transport: admitFault}, nil)
	g := bind(t, reg, mustPolicy(t, "version: 1\nmode: deny_all\n"))
	before, _ := os.ReadFile(marker)
	out, _ := g.Call(context.Background(), warden.Call{ID: "1", Tool: "mcp__fault__pid", Args: warden.Args{}})
	if out.Status == warden.StatusRan || out.Executed {
		t.Errorf("deny_all ran a discovered tool: %+v", out)
	}
	if after, _ := os.ReadFile(marker); string(after) != string(before) {
		t.Errorf("a call under deny_all started a server")
	}
}

func mustArgs(t *testing.T, kv ...any) warden.Args {
	t.Helper()
	a, err := warden.NewArgs(kv...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// FINDING: an upstream server is started without a process group of its own, and
// Close (like the kernel's Pdeathsig when the process dies) ends only the direct
// child. A server that runs helpers of its own (a launcher such as npx or a shell
// wrapper starting the real server, or a server that forks a worker) leaves them
// running after Tools.Close, so after `warden run` ends. Here the admitted command is
// a wrapper that starts one background helper and then execs the fault server; after
// Close the helper is still alive.
func TestAttack2CloseLeavesTheServersChildrenRunning(t *testing.T) {
	faultOnPATH(t)
	bin := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	script := "#!/bin/sh\nsleep 300 </dev/null >/dev/null 2>&1 &\necho $! > " + pidFile + "\nexec faultserver -mode ok\n"
	if err := os.WriteFile(filepath.Join(bin, "wrapped"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	reg := &warden.Registry{}
	tools, err := mcp.RegisterTools(context.Background(), reg, mcp.ToolsConfig{
		Servers:   []mcp.ServerConfig{{Name: "w", Command: "wrapped"}},
		Transport: mcp.TransportPolicy{AllowCommands: true, Commands: []string{"wrapped"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Names()) == 0 {
		t.Fatalf("no tools: %v", tools.Problems())
	}
	if err := tools.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := os.FindProcess(pid)
	if p.Signal(syscall.Signal(0)) == nil {
		t.Errorf("the server's helper (pid %d) still runs after Close", pid)
		_ = p.Kill()
	}
}
