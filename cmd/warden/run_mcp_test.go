package main

// warden run with an mcp: section, against the fault server
// (./internal/faultserver) started as a real child process.

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wardenhq/warden/internal/mcptest"
)

// mcpRun is one agent.yaml with an mcp: section, in its own directory with a
// workspace, a policy and a marker file the fault server appends its pid to.
type mcpRun struct {
	dir, workspace, config, marker string
}

const faultPkg = "./internal/faultserver"

// newMCPRun writes policy.yaml (policy) and agent.yaml: the scripted replies, then an
// mcp: section holding the fault server and the given transport and extra lines.
func newMCPRun(t *testing.T, policy, replies, transport, extra string) mcpRun {
	t.Helper()
	dir := t.TempDir()
	r := mcpRun{dir: dir, workspace: filepath.Join(dir, "workspace"), config: filepath.Join(dir, "agent.yaml"), marker: filepath.Join(dir, "pids")}
	if err := os.Mkdir(r.workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "policy.yaml"), policy)
	cfg := "provider:\n  name: scripted\n  replies:\n" + replies +
		"policy: policy.yaml\nworkspace: workspace\ncheckpoint_dir: checkpoints\nmcp:\n" +
		"  servers:\n    fault:\n      command: faultserver\n      args: [-mode, ok, -marker, " + strconv.Quote(r.marker) + "]\n" +
		transport + extra
	writeFile(t, r.config, cfg)
	return r
}

const admitFaultYAML = "  transport:\n    allow_commands: true\n    commands: [faultserver]\n"

const allowFaultPolicy = "version: 1\nmode: rules\nrules:\n  allow:\n    mcp__fault__echo: ['*']\n    mcp__fault__fail: ['*']\n    editor: ['*']\n"

// pids returns the fault server processes the run started.
func (r mcpRun) pids(t *testing.T) []int {
	t.Helper()
	data, err := os.ReadFile(r.marker)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// checkStopped fails the test when a server the run started still exists.
func (r mcpRun) checkStopped(t *testing.T) {
	t.Helper()
	for _, pid := range r.pids(t) {
		if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
			t.Errorf("fault server pid %d still exists after the run", pid)
		}
	}
}

// ADR D3/D5: the agent's registry holds the built-in and the discovered MCP tools,
// bound once after discovery; the model calls a discovered tool in the real child
// process, and an upstream isError answer is a tool result the model reads (the run
// answers). The servers are stopped when the run ends.
func TestRunMCPTools(t *testing.T) {
	mcptest.PeersOnPATH(t, faultPkg)
	r := newMCPRun(t, allowFaultPolicy,
		"    - calls:\n        - {id: c1, name: mcp__fault__echo, args: {text: hello}}\n        - {id: c2, name: mcp__fault__fail, args: {text: the disk is full}}\n    - text: Done.\n",
		admitFaultYAML, "")
	res := runWarden(t, "run", "--config", r.config, "use the fault server")
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", res.code, res.stderr, res.stdout)
	}
	wantContains(t, "stdout", res.stdout,
		"workspace: "+mustEval(t, r.workspace)+"\nmcp:       server fault: 8 tools\ntask:      use the fault server\n",
		"→ mcp__fault__echo {\"text\":\"hello\"}\n  allowed by *\n  ← 5 chars\n",
		"→ mcp__fault__fail {\"text\":\"the disk is full\"}\n  allowed by *\n  failed: MCP tool 'fail' (server 'fault') returned an error: the disk is full\n",
		"answer (2 iterations, 2 tool calls executed):\nDone.\n")
	if len(r.pids(t)) == 0 {
		t.Error("no fault server was started")
	}
	r.checkStopped(t)
}

// ADR D3: "deny_all blocks discovered MCP tools because policy lookup falls back to
// their canonical registered name and global mode."
func TestRunMCPDenyAll(t *testing.T) {
	mcptest.PeersOnPATH(t, faultPkg)
	r := newMCPRun(t, "version: 1\nmode: deny_all\n",
		"    - calls:\n        - {id: c1, name: mcp__fault__echo, args: {text: hello}}\n    - text: I cannot.\n",
		admitFaultYAML, "")
	res := runWarden(t, "run", "--config", r.config, "use the fault server")
	if res.code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", res.code, res.stderr, res.stdout)
	}
	wantContains(t, "stdout", res.stdout,
		"mcp:       server fault: 8 tools\n",
		"→ mcp__fault__echo {\"text\":\"hello\"}\n  refused: [permission denied: denied by mode: deny_all]\n",
		"answer (2 iterations, 0 tool calls executed):\nI cannot.\n")
	r.checkStopped(t)
}

// REFERENCE section 10: "denial aborts discovery before any tool is registered". Without
// a transport section every command is denied: the server is never started, the run
// says why, and the tool is unknown to the Guard.
func TestRunMCPTransportDenied(t *testing.T) {
	mcptest.PeersOnPATH(t, faultPkg)
	r := newMCPRun(t, allowFaultPolicy,
		"    - calls:\n        - {id: c1, name: mcp__fault__echo, args: {text: hello}}\n    - text: No tool.\n",
		"", "")
	res := runWarden(t, "run", "--config", r.config, "use the fault server")
	if res.code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", res.code, res.stderr, res.stdout)
	}
	wantContains(t, "stdout", res.stdout,
		"mcp:       not loaded: server \"fault\" not admitted by the transport policy, so none of its tools is registered: MCP command transport is disabled (allow_commands=false). Blocked command: 'faultserver'\n",
		"→ mcp__fault__echo {\"text\":\"hello\"}\n  refused: [permission denied: unknown tool 'mcp__fault__echo']\n",
		"answer (2 iterations, 0 tool calls executed):\nNo tool.\n")
	if strings.Contains(res.stdout, "mcp:       server fault") {
		t.Error("a denied server was reported as loaded")
	}
	if pids := r.pids(t); len(pids) != 0 {
		t.Errorf("a denied server was started: %v", pids)
	}
}

// ADR D5: "Project-file discovery still requires trust_project_settings=True." The
// workspace's .mcp.json is read only when trusted, its servers still go through the
// transport policy, and the editor never writes it.
func TestRunMCPProjectFile(t *testing.T) {
	mcptest.PeersOnPATH(t, faultPkg)
	replies := "    - calls:\n        - {id: c1, name: editor, args: {file_path: .mcp.json, action: write, content: \"{}\"}}\n    - text: Done.\n"
	project := `{"mcpServers": {"proj": {"command": "faultserver", "args": ["-mode", "ok"]}}}`

	r := newMCPRun(t, allowFaultPolicy, replies, admitFaultYAML, "")
	writeFile(t, filepath.Join(r.workspace, ".mcp.json"), project)
	res := runWarden(t, "run", "--config", r.config, "task")
	if res.code != 0 {
		t.Fatalf("untrusted: exit %d, stderr %q\n%s", res.code, res.stderr, res.stdout)
	}
	ws := mustEval(t, r.workspace)
	wantContains(t, "untrusted stdout", res.stdout,
		"mcp:       server fault: 8 tools\nmcp:       not loaded: project file is not trusted: "+filepath.Join(ws, ".mcp.json")+" was not read (trust_project_settings is false); trusting it would not admit its commands or URLs: the transport policy still decides\n",
		"→ editor {\"file_path\":\".mcp.json\",\"action\":\"write\",\"content\":\"{}\"}\n  refused: Warden refused this write: .mcp.json is the MCP project file, which no tool call may change, whatever the policy says.\n")

	r = newMCPRun(t, allowFaultPolicy, replies, admitFaultYAML, "  trust_project_settings: true\n")
	writeFile(t, filepath.Join(r.workspace, ".mcp.json"), project)
	res = runWarden(t, "run", "--config", r.config, "task")
	if res.code != 0 {
		t.Fatalf("trusted: exit %d, stderr %q\n%s", res.code, res.stderr, res.stdout)
	}
	wantContains(t, "trusted stdout", res.stdout, "mcp:       server fault: 8 tools\nmcp:       server proj: 8 tools\ntask:")
	if got, _ := os.ReadFile(filepath.Join(r.workspace, ".mcp.json")); string(got) != project {
		t.Errorf("the project file was written: %s", got)
	}
}

// A call of a discovered tool that needs a person pauses the run; the resumed run, in
// a fresh process, starts the server again and runs the approved call there.
func TestRunMCPPauseResume(t *testing.T) {
	peers := mcptest.BuildPeers(t, faultPkg)
	env := []string{"PATH=" + peers + string(os.PathListSeparator) + os.Getenv("PATH")}
	r := newMCPRun(t, "version: 1\nmode: rules\nrules:\n  escalate:\n    mcp__fault__echo: ['*']\n",
		"    - calls:\n        - {id: c1, name: mcp__fault__echo, args: {text: approved}}\n    - text: Done.\n",
		admitFaultYAML, "")
	res := execWardenEnv(t, r.dir, env, "run", "--config", r.config, "echo it")
	if res.code != exitAsk {
		t.Fatalf("exit %d, want %d\n%s%s", res.code, exitAsk, res.stdout, res.stderr)
	}
	wantContains(t, "paused stdout", res.stdout, "→ mcp__fault__echo {\"text\":\"approved\"}\n  paused: a person must decide (below)\n", "paused: mcp__fault__echo needs a person.\n")
	m := checkpointLine.FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatalf("no checkpoint printed:\n%s", res.stdout)
	}
	started := len(r.pids(t))
	r.checkStopped(t)

	res = execWardenEnv(t, r.dir, env, "run", "--config", r.config, "--resume", m[1], "--approve", "--by", "alice")
	if res.code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	wantContains(t, "resumed stdout", res.stdout,
		"mcp:       server fault: 8 tools\n",
		"→ mcp__fault__echo {\"text\":\"approved\"}\n  approved by alice\n  ← 8 chars\n",
		"answer (2 iterations, 1 tool call executed):\nDone.\n")
	if n := len(r.pids(t)); n <= started {
		t.Errorf("the resumed run started no server (%d pids before, %d after)", started, n)
	}
	r.checkStopped(t)
}

// The mcp: section is decoded strictly, with the gateway configuration's own decoders:
// every problem is located (file:line:column) and nothing is started.
func TestRunMCPBadConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "policy.yaml"), "version: 1\nmode: deny_all\n")
	cfg := filepath.Join(dir, "agent.yaml")
	writeFile(t, cfg, "provider: {name: scripted, replies: [{text: hi}]}\npolicy: policy.yaml\nmcp:\n  servers:\n    fault: {command: faultserver, url: https://x.example.com/}\n  transport:\n    allow_commands: \"yes\"\n  trust: true\n")
	res := runWarden(t, "run", "--config", cfg, "task")
	if res.code != exitUsage || res.stdout != "" {
		t.Errorf("exit %d, stdout %q; want exit 2 and nothing on stdout", res.code, res.stdout)
	}
	wantContains(t, "stderr", res.stderr,
		cfg+":8:3: unknown key \"trust\" in mcp (known keys in mcp: servers, transport, project_file, trust_project_settings",
		cfg+":5:5: server \"fault\": give either command or url, not both",
		cfg+":7:21: mcp.transport.allow_commands must be true or false, got a string (write true or false)")

	// A trusted project file that cannot be read is a configuration error, located at
	// the mcp section.
	writeFile(t, cfg, "provider: {name: scripted, replies: [{text: hi}]}\npolicy: policy.yaml\nmcp:\n  project_file: missing.json\n  trust_project_settings: true\n")
	res = runWarden(t, "run", "--config", cfg, "task")
	if res.code != exitUsage {
		t.Errorf("exit %d, want 2", res.code)
	}
	wantContains(t, "stderr", res.stderr, cfg+":4:3: mcp: project file: open "+filepath.Join(dir, "missing.json")+": no such file or directory")
}
