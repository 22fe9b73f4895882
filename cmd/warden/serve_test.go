package main

// Process-level tests of `warden serve` and `warden pins`: the gateway is the built
// warden binary as a subprocess, its upstream the example notes server (or the fault
// server) built and found on PATH, and its clients go-sdk MCP clients. Operators decide
// through the real `warden approvals` command line.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	shfields "mvdan.cc/sh/v3/shell"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/store"
)

// The demo tokens in examples/gateway/gateway.yaml's comments.
const (
	demoReaderToken = "demo-reader-token-0001"
	demoWriterToken = "demo-writer-token-0002"
)

// The governed names of the notes server's tools.
const (
	toolListNotes  = "mcp__notes__list_notes"
	toolReadNote   = "mcp__notes__read_note"
	toolWriteNote  = "mcp__notes__write_note"
	toolDeleteNote = "mcp__notes__delete_note"
	toolSearchNote = "mcp__notes__search_notes"
)

// Generous bounds for a slow, busy two-core machine.
const (
	startTimeout = 3 * time.Minute // a gateway up and ready (go run compiles)
	callTimeout  = 2 * time.Minute // one MCP call or CLI run
)

// ---- the gateway's configuration ----

type gwClient struct{ principal, role, token string }

var (
	readerClient = gwClient{"reader-agent", "reader", demoReaderToken}
	writerClient = gwClient{"writer-agent", "writer", demoWriterToken}
)

// gwConfig is a gateway config the tests write.
type gwConfig struct {
	policy    string // absolute path
	store     string // DSN
	wait      string // approvals.wait
	servers   string // the lines under servers:, indented two spaces
	commands  []string
	clients   []gwClient // with clients, the HTTP front listens on 127.0.0.1:0
	stdioRole string
}

func (c gwConfig) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy: %q\nstore: %q\n", c.policy, c.store)
	fmt.Fprintf(&b, "transport:\n  allow_commands: true\n  commands: [%s]\n", strings.Join(c.commands, ", "))
	fmt.Fprintf(&b, "servers:\n%s", c.servers)
	if len(c.clients) > 0 {
		b.WriteString("listen: 127.0.0.1:0\nclients:\n")
		for _, cl := range c.clients {
			fmt.Fprintf(&b, "  - principal: %s\n    role: %s\n    token_sha256: %s\n", cl.principal, cl.role, inbox.HashToken(cl.token))
		}
	}
	if c.stdioRole != "" {
		fmt.Fprintf(&b, "stdio:\n  principal: local-user\n  role: %s\n", c.stdioRole)
	}
	fmt.Fprintf(&b, "approvals:\n  wait: %s\n  elicitation: allow\n", c.wait)
	return b.String()
}

func notesServerBlock(notesDir string) string {
	return fmt.Sprintf("  notes:\n    command: notes-server\n    args: [-dir, %q]\n", notesDir)
}

// notesFixture is a temporary directory holding a copy of the example policy, a
// gateway config in front of the notes server and (for SQLite) the store.
type notesFixture struct {
	dir, policy, config, dsn string
	cfg                      gwConfig
	env                      []string
}

// newNotesFixture writes a gateway config for the notes server with the given store
// (empty: a SQLite file in the directory) and approvals.wait.
func newNotesFixture(t *testing.T, dsn, wait string) *notesFixture {
	t.Helper()
	dir := t.TempDir()
	if dsn == "" {
		dsn = "sqlite://" + filepath.Join(dir, "warden.db")
	}
	f := &notesFixture{dir: dir, policy: mcptest.CopyExamplePolicy(t, dir), config: filepath.Join(dir, "gateway.yaml"), dsn: dsn}
	f.cfg = gwConfig{
		policy: f.policy, store: dsn, wait: wait,
		servers:  notesServerBlock(filepath.Join(dir, "notes")),
		commands: []string{"notes-server"},
		clients:  []gwClient{readerClient, writerClient},
	}
	writeFile(t, f.config, f.cfg.yaml())
	f.env = peerEnv(t, "./examples/gateway/notes-server")
	return f
}

// setWait rewrites the config with another approvals.wait.
func (f *notesFixture) setWait(t *testing.T, wait string) {
	t.Helper()
	f.cfg.wait = wait
	writeFile(t, f.config, f.cfg.yaml())
}

func (f *notesFixture) start(t *testing.T, args ...string) *gatewayProc {
	t.Helper()
	return startGateway(t, f.config, f.env, args...)
}

// peerEnv builds the Go peers (module-relative package paths) and returns the
// environment with their directory first on PATH: the transport policy admits bare
// command names only.
func peerEnv(t *testing.T, pkgs ...string) []string {
	t.Helper()
	env := []string{"PATH=" + mcptest.BuildPeers(t, pkgs...) + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "WARDEN_STORE=") {
			env = append(env, kv)
		}
	}
	return env
}

// ---- the gateway process ----

// gatewayProc is one `warden serve` subprocess with an HTTP front.
type gatewayProc struct {
	cmd     *exec.Cmd
	log     *mcptest.LogBuffer
	done    chan struct{}
	waitErr error  // cmd.Wait's result, once done is closed
	base    string // http://127.0.0.1:PORT
	url     string // the MCP endpoint
}

var listeningRE = regexp.MustCompile(`msg="warden gateway listening" mcp=(http://(\S+?)(/\S*))`)

// startGateway starts `warden serve -c config [args]`, reads the address from its log
// and waits until /readyz answers 200. Cleanup kills it.
func startGateway(t *testing.T, config string, env []string, args ...string) *gatewayProc {
	t.Helper()
	g := &gatewayProc{log: &mcptest.LogBuffer{}, done: make(chan struct{})}
	g.cmd = exec.Command(wardenBinary(t), append([]string{"serve", "-c", config}, args...)...)
	g.cmd.Env = env
	g.cmd.Stderr = g.log
	g.cmd.WaitDelay = 10 * time.Second
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.waitErr = g.cmd.Wait(); close(g.done) }()
	g.log.LogOnFailure(t, fmt.Sprintf("gateway pid %d stderr", g.cmd.Process.Pid)) // runs after the cleanup below
	t.Cleanup(func() {
		if !g.exited() {
			g.cmd.Process.Kill()
		}
		select {
		case <-g.done:
		case <-time.After(30 * time.Second):
			t.Errorf("gateway pid %d did not exit after SIGKILL", g.cmd.Process.Pid)
		}
	})
	var m []string
	mcptest.WaitFor(t, startTimeout, "the gateway logs its address", func() bool {
		if g.exited() {
			t.Fatalf("the gateway exited before listening (%v); stderr:\n%s", g.waitErr, g.log.String())
		}
		m = listeningRE.FindStringSubmatch(g.log.String())
		return m != nil
	})
	g.url, g.base = m[1], "http://"+m[2]
	mcptest.WaitFor(t, startTimeout, "GET /readyz answers 200", func() bool {
		if g.exited() {
			t.Fatalf("the gateway exited (%v); stderr:\n%s", g.waitErr, g.log.String())
		}
		resp, err := http.Get(g.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return g
}

func (g *gatewayProc) exited() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

func (g *gatewayProc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := g.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to the gateway: %v", sig, err)
	}
}

// kill9 kills the gateway with SIGKILL and waits until it is gone.
func (g *gatewayProc) kill9(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway did not die after SIGKILL")
	}
}

// ---- MCP clients ----

// connect opens an MCP session to endpoint with token. The client declares no
// elicitation, so every approval goes to an operator.
func connect(t *testing.T, endpoint, token string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "warden-serve-test", Version: "1"}, nil)
	cs, err := mcptest.ConnectHTTP(t, client, endpoint, token, nil, callTimeout)
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	return cs
}

// callTool makes one tool call; a protocol error fails t.
func callTool(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	return mcptest.CallTool(t, cs, callTimeout, tool, args)
}

// callToolErr makes one tool call that must fail with a protocol error, and returns
// the error.
func callToolErr(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		t.Fatalf("call %s: a result (isError=%v %q), want a protocol error", tool, res.IsError, mcptest.ResultText(res))
	}
	return err
}

// callResult is what a call made in the background returned.
type callResult struct {
	res *sdk.CallToolResult
	err error
	at  time.Time
}

// callAsync makes one tool call in the background.
func callAsync(ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		ch <- callResult{res, err, time.Now()}
	}()
	return ch
}

func await(t *testing.T, ch <-chan callResult, timeout time.Duration, what string) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		t.Fatalf("%s did not return within %v", what, timeout)
		return callResult{}
	}
}

// wantOK fails t unless res is a successful result containing want.
func wantOK(t *testing.T, res *sdk.CallToolResult, want string) {
	t.Helper()
	if res.IsError || !strings.Contains(mcptest.ResultText(res), want) {
		t.Fatalf("result (isError=%v) %q; want success containing %q", res.IsError, mcptest.ResultText(res), want)
	}
}

var waitingRE = regexp.MustCompile(`approval id (\S+)\)`)

// waitingID returns the approval id of a WaitingText result, failing t otherwise.
func waitingID(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	m := waitingRE.FindStringSubmatch(mcptest.ResultText(res))
	if !res.IsError || m == nil || !strings.Contains(mcptest.ResultText(res), "Nothing ran") {
		t.Fatalf("result (isError=%v) %q; want a tool error saying the call waits for an approval", res.IsError, mcptest.ResultText(res))
	}
	if want := gateway.WaitingText(m[1], toolDeleteNote); mcptest.ResultText(res) != want {
		t.Errorf("waiting text %q\nwant %q", mcptest.ResultText(res), want)
	}
	return m[1]
}

func listToolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	return mcptest.ToolNames(t, cs, callTimeout)
}

func noteNames(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	res := callTool(t, cs, toolListNotes, map[string]any{})
	if res.IsError {
		t.Fatalf("list_notes: %s", mcptest.ResultText(res))
	}
	return mcptest.ResultText(res)
}

// ---- the warden command line ----

// wardenCLI runs the built warden binary.
func wardenCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return execWarden(t, "", []byte(stdin), args...)
}

// mustCLI runs the built warden binary and fails t unless it exits 0.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	r := wardenCLI(t, "", args...)
	if r.code != 0 {
		t.Fatalf("warden %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

type pendingRow struct {
	ID        string          `json:"id"`
	State     string          `json:"state"`
	Tool      string          `json:"tool"`
	Principal string          `json:"principal"`
	Args      json.RawMessage `json:"args"`
}

func listPending(t *testing.T, dsn string) []pendingRow {
	t.Helper()
	return decodeLines[pendingRow](t, mustCLI(t, "approvals", "list", "--json", "--store", dsn))
}

type auditRow struct {
	Tool       string          `json:"tool"`
	Principal  string          `json:"principal"`
	Status     string          `json:"status"`
	Executed   bool            `json:"executed"`
	ApprovedBy string          `json:"approved_by"`
	RuleID     string          `json:"rule_id"`
	Args       json.RawMessage `json:"args"`
}

func auditRows(t *testing.T, dsn string, extra ...string) []auditRow {
	t.Helper()
	args := append([]string{"audit", "--json", "--limit", "0", "--store", dsn}, extra...)
	return decodeLines[auditRow](t, mustCLI(t, args...))
}

func decodeLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var rows []T
	for line := range strings.Lines(out) {
		var r T
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("decoding %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// argName returns the "name" argument of a stored call.
func argName(raw json.RawMessage) string {
	var a struct {
		Name string `json:"name"`
	}
	json.Unmarshal(raw, &a)
	return a.Name
}

// ---- files ----

// postgresDSN (audit_cmd_test.go) gives each test its own PostgreSQL schema.

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func skipWithoutSignals(t *testing.T) {
	t.Helper()
	if goruntime.GOOS == "windows" {
		t.Skip("sends SIGHUP and SIGTERM")
	}
}

// ---- 1. the example ----

// TestServeExampleConfig runs the example gateway (examples/gateway/gateway.yaml, the
// README's `go run ./cmd/warden serve -c examples/gateway/gateway.yaml`) with only
// what cannot be shared changed: the listen port, the store and the notes directory.
// The upstream is started as in the example: `go run ./notes-server` in
// examples/gateway.
func TestServeExampleConfig(t *testing.T) {
	t.Parallel()
	g := startExampleGateway(t)
	if !strings.Contains(g.log.String(), "inbox="+g.base+"/ui/") {
		t.Errorf("the log does not name the inbox at %s/ui/:\n%s", g.base, g.log.String())
	}
	if !strings.Contains(g.log.String(), `msg="starting upstream server (building it with go run first: the first start can take a minute or more)" server=notes command=go`) {
		t.Errorf("the log does not say that the notes server is built first:\n%s", g.log.String())
	}

	writer := connect(t, g.url, demoWriterToken)
	want := []string{toolDeleteNote, toolListNotes, toolReadNote, toolSearchNote, toolWriteNote}
	if got := listToolNames(t, writer); !slices.Equal(got, want) {
		t.Fatalf("writer sees tools %v, want %v", got, want)
	}
	wantOK(t, callTool(t, writer, toolWriteNote, map[string]any{"name": "hello", "text": "written through the example gateway"}), `Wrote note "hello"`)
	wantOK(t, callTool(t, writer, toolReadNote, map[string]any{"name": "hello"}), "written through the example gateway")
	if data := readFile(t, filepath.Join(g.dir, ".notes", "hello")); data != "written through the example gateway" {
		t.Errorf("the note file holds %q", data)
	}

	reader := connect(t, g.url, demoReaderToken)
	if got := listToolNames(t, reader); !slices.Equal(got, []string{toolListNotes, toolReadNote, toolSearchNote}) {
		t.Errorf("reader sees tools %v", got)
	}
}

// readmeBlock returns the first ```lang block of README.md whose text starts with
// prefix, failing t when there is none.
func readmeBlock(t *testing.T, lang, prefix string) string {
	t.Helper()
	readme := readFile(t, filepath.Join(mcptest.RepoRoot(t), "README.md"))
	for _, block := range strings.Split(readme, "```"+lang+"\n")[1:] {
		block = block[:strings.Index(block, "```")]
		if strings.HasPrefix(block, prefix) {
			return block
		}
	}
	t.Fatalf("README.md has no ```%s block starting with %q", lang, prefix)
	return ""
}

// readmeCommand returns the words of the README's ```sh command starting with
// prefix, split as a shell would (line continuations joined).
func readmeCommand(t *testing.T, prefix string) []string {
	t.Helper()
	block := readmeBlock(t, "sh", prefix)
	words, err := shfields.Fields(strings.ReplaceAll(block, "\\\n", " "), nil)
	if err != nil {
		t.Fatalf("the README's command does not parse: %v\n%s", err, block)
	}
	return words
}

// readmeURL is the example gateway's MCP endpoint, as the README's client
// instructions name it; the tests' gateways listen on a free port instead.
const readmeURL = "http://127.0.0.1:8080/mcp"

// The README's MCP Inspector command, run as written (the pinned Inspector, its
// arguments, the demo token) against the example gateway, lists the reader's tools:
// the README cannot name an Inspector or flags that do not work.
func TestServeREADMEInspectorCommand(t *testing.T) {
	t.Parallel()
	inspector, inspectorArgs := mcptest.InspectorCLI(t)
	words := readmeCommand(t, "npx -y @modelcontextprotocol/inspector")
	if len(words) < 4 || words[0] != "npx" || words[1] != "-y" {
		t.Fatalf("the README's Inspector command is not `npx -y @modelcontextprotocol/inspector@VERSION ...`: %q", words)
	}
	var pinned struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(mcptest.RepoRoot(t), "internal", "mcptest", "testdata", "npm", "package.json"))), &pinned); err != nil {
		t.Fatal(err)
	}
	if want := "@modelcontextprotocol/inspector@" + pinned.Dependencies["@modelcontextprotocol/inspector"]; words[2] != want {
		t.Fatalf("the README runs %s; the Inspector CI tests is %s: pin the README to it", words[2], want)
	}
	if words[3] != "--cli" || !slices.Contains(words, readmeURL) {
		t.Fatalf("the README's Inspector command is not `--cli %s ...`: %q", readmeURL, words)
	}
	g := startExampleGateway(t)
	args := slices.Clone(inspectorArgs) // the installed pinned Inspector, with --cli
	for _, w := range words[4:] {
		if w == readmeURL {
			w = g.url
		}
		args = append(args, w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, inspector, args...).Output()
	if err != nil {
		t.Fatalf("the README's Inspector command: %v\n%s", err, out)
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the README's Inspector command printed no tools/list result: %v\n%s", err, out)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{toolListNotes, toolReadNote, toolSearchNote}; !slices.Equal(names, want) {
		t.Errorf("the README's Inspector command lists %v, want the reader's %v", names, want)
	}
}

// The README's `claude mcp add` command, run as written by the pinned Claude Code
// (only the binary's path and the gateway's port changed), registers the example
// gateway, and `claude mcp get warden` health-checks it as connected: the README's
// transport, URL and header are ones Claude Code accepts and the gateway answers.
func TestServeREADMEClaudeCodeCommand(t *testing.T) {
	t.Parallel()
	claude := mcptest.ClaudeCode(t)
	words := readmeCommand(t, "claude mcp add ")
	if len(words) < 4 || words[0] != "claude" || !slices.Contains(words, readmeURL) {
		t.Fatalf("the README's Claude Code command is not `claude mcp add ... %s ...`: %q", readmeURL, words)
	}
	g := startExampleGateway(t)
	args := make([]string, 0, len(words)-1)
	for _, w := range words[1:] {
		if w == readmeURL {
			w = g.url
		}
		args = append(args, w)
	}

	// Claude Code keeps a local-scope server in ~/.claude.json under the working
	// directory's project: both are temporary, so nothing of the user's is read or
	// changed. Nonessential traffic (update checks, telemetry) is off: CI may be
	// offline, and the health check needs none of it.
	home, work := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "CLAUDE_") && !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, args...)
		cmd.Env, cmd.Dir = env, work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	if out := run(args...); !strings.Contains(out, "Added HTTP MCP server warden with URL: "+g.url) {
		t.Errorf("claude %s printed:\n%s\nwant it to say it added the HTTP server warden at %s", strings.Join(args, " "), out, g.url)
	}
	var state struct {
		Projects map[string]struct {
			MCPServers map[string]struct {
				Type    string            `json:"type"`
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(home, ".claude.json"))), &state); err != nil {
		t.Fatalf("~/.claude.json: %v", err)
	}
	server, ok := state.Projects[work].MCPServers["warden"]
	if !ok {
		t.Fatalf("~/.claude.json has no server warden in project %s: %+v", work, state.Projects)
	}
	if server.Type != "http" || server.URL != g.url || server.Headers["Authorization"] != "Bearer "+demoWriterToken {
		t.Errorf("~/.claude.json holds warden as %+v, want type http, url %s and the writer's bearer token", server, g.url)
	}

	out := run("mcp", "get", "warden")
	if !strings.Contains(out, "Status: ✔ Connected") {
		t.Fatalf("claude mcp get warden does not report the gateway connected:\n%s", out)
	}
	t.Logf("claude mcp get warden:\n%s", out)
}

// The README's Claude Desktop entry (claude_desktop_config.json), with the built
// binary for /path/to/warden and this checkout for the repository path, starts the
// example gateway on stdio as Claude Desktop would (its own environment, no token
// variables, any working directory): the stdio identity, a writer, lists the
// writer's tools and a call runs.
//
// It serves the example config itself, so its store and notes are the example's
// (examples/gateway/warden-gateway.db and .notes, both ignored by git); the call
// made only reads.
func TestServeREADMEClaudeDesktopConfig(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the example starts its upstream with `go run`; go is not on PATH")
	}
	block := readmeBlock(t, "json", "{\n  \"mcpServers\"")
	var desktop struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block), &desktop); err != nil {
		t.Fatalf("the README's claude_desktop_config.json is not JSON: %v\n%s", err, block)
	}
	server, ok := desktop.MCPServers["warden"]
	if !ok || server.Command != "/path/to/warden" {
		t.Fatalf("the README's claude_desktop_config.json has no server warden with command /path/to/warden:\n%s", block)
	}
	const repoPlaceholder = "/path/to/warden/"
	args := slices.Clone(server.Args)
	replaced := 0
	for i, a := range args {
		if strings.HasPrefix(a, repoPlaceholder) {
			args[i] = filepath.Join(mcptest.RepoRoot(t), filepath.FromSlash(strings.TrimPrefix(a, repoPlaceholder)))
			replaced++
		}
	}
	if replaced != 1 || !slices.Contains(args, "--stdio") {
		t.Fatalf("the README's Claude Desktop args %q are not `serve --stdio` with one config under %s", server.Args, repoPlaceholder)
	}

	cmd := exec.Command(wardenBinary(t), args...)
	cmd.Dir = t.TempDir()
	// Claude Desktop starts the server with its own environment and the entry's env
	// (the README gives none): no WARDEN_* variable, so no token or store from here.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WARDEN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range server.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr := &mcptest.LogBuffer{}
	cmd.Stderr = stderr
	stderr.LogOnFailure(t, "gateway stderr") // runs after the cleanup below closes the session
	client := sdk.NewClient(&sdk.Implementation{Name: "claude-desktop-readme-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("starting the README's Claude Desktop command %q: %v", args, err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			cs.Close()
		}
	})

	want := []string{toolDeleteNote, toolListNotes, toolReadNote, toolSearchNote, toolWriteNote}
	if got := listToolNames(t, cs); !slices.Equal(got, want) {
		t.Errorf("the stdio identity (role writer) sees tools %v, want %v", got, want)
	}
	if res := callTool(t, cs, toolListNotes, map[string]any{}); res.IsError {
		t.Errorf("%s over the README's Claude Desktop entry: tool error %q", toolListNotes, mcptest.ResultText(res))
	}

	closed = true
	if err := cs.Close(); err != nil {
		t.Errorf("closing the stdio session (the gateway's exit): %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("warden %s exited %d after the client closed stdin, want 0", strings.Join(args, " "), code)
	}
}

// exampleGateway is `warden serve` running examples/gateway/gateway.yaml (on a free
// port, with its store and notes in dir).
type exampleGateway struct {
	*gatewayProc
	dir string
}

// startExampleGateway runs the example gateway as the README's main command does,
// with only the port, the store and the notes directory moved into a temporary dir.
func startExampleGateway(t *testing.T) exampleGateway {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the example starts its upstream with `go run`; go is not on PATH")
	}
	example := filepath.Join(mcptest.RepoRoot(t), "examples", "gateway")
	dir := t.TempDir()
	cfg := readFile(t, filepath.Join(example, "gateway.yaml"))
	for _, r := range []struct{ old, new string }{
		{"\nlisten: 127.0.0.1:8080\n", "\nlisten: 127.0.0.1:0\n"},
		{"\nstore: sqlite://warden-gateway.db\n", "\nstore: " + strconv.Quote("sqlite://"+filepath.Join(dir, "warden-gateway.db")) + "\n"},
		{"args: [run, ./notes-server, -dir, .notes]", "args: [run, ./notes-server, -dir, " + strconv.Quote(filepath.Join(dir, ".notes")) + "]"},
		{"    dir: .\n", "    dir: " + strconv.Quote(example) + "\n"},
	} {
		if strings.Count(cfg, r.old) != 1 {
			t.Fatalf("examples/gateway/gateway.yaml no longer holds %q once; update this test", r.old)
		}
		cfg = strings.Replace(cfg, r.old, r.new, 1)
	}
	// The demo tokens in the comments are the ones the hashes stand for.
	for _, tok := range []string{demoReaderToken, demoWriterToken, "demo-operator-token-0003"} {
		if !strings.Contains(cfg, "# token: "+tok+"\n") || !strings.Contains(cfg, inbox.HashToken(tok)) {
			t.Errorf("the example names demo token %s, but not with its hash %s", tok, inbox.HashToken(tok))
		}
	}
	writeFile(t, filepath.Join(dir, "gateway.yaml"), cfg)
	writeFile(t, filepath.Join(dir, "policy.yaml"), readFile(t, filepath.Join(example, "policy.yaml")))

	return exampleGateway{gatewayProc: startGateway(t, filepath.Join(dir, "gateway.yaml"), os.Environ()), dir: dir}
}

// ---- 2. an operator decides through the CLI while the call waits ----

func TestServeApprovalDecidedByCLIWhileWaiting(t *testing.T) {
	t.Parallel()
	f := newNotesFixture(t, "", "60s")
	g := f.start(t)
	cs := connect(t, g.url, demoWriterToken)
	wantOK(t, callTool(t, cs, toolWriteNote, map[string]any{"name": "doomed", "text": "delete me"}), "Wrote")

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	started := time.Now()
	done := callAsync(ctx, cs, toolDeleteNote, map[string]any{"name": "doomed"})

	var id string
	mcptest.WaitFor(t, callTimeout, "`warden approvals list` shows the waiting call", func() bool {
		for _, p := range listPending(t, f.dsn) {
			if p.Tool == toolDeleteNote && argName(p.Args) == "doomed" && p.Principal == "writer-agent" {
				id = p.ID
				return true
			}
		}
		return false
	})
	if table := mustCLI(t, "approvals", "list", "--store", f.dsn); !strings.Contains(table, id) || !strings.Contains(table, toolDeleteNote) {
		t.Errorf("approvals list does not show %s:\n%s", id, table)
	}
	select {
	case r := <-done:
		t.Fatalf("the call returned before anyone decided: %v %v", r.err, r.res)
	default:
	}
	out := mustCLI(t, "approvals", "approve", id, "--store", f.dsn, "--by", "ops")
	if !strings.Contains(out, "approved "+id) {
		t.Errorf("approve printed %q", out)
	}
	r := await(t, done, callTimeout, "the waiting delete")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantOK(t, r.res, `Deleted note "doomed"`)
	t.Logf("the call waited %v and completed after the CLI approved it", r.at.Sub(started).Round(time.Millisecond))
	if notes := noteNames(t, cs); strings.Contains(notes, "doomed") {
		t.Errorf("the note is still listed: %q", notes)
	}
	mcptest.WaitFor(t, callTimeout, "the audit log shows the delete ran, approved by ops", func() bool {
		for _, a := range auditRows(t, f.dsn, "--tool", toolDeleteNote) {
			if a.Status == "ran" && a.Executed && a.ApprovedBy == "ops" && argName(a.Args) == "doomed" {
				return true
			}
		}
		return false
	})
	if ps := listPending(t, f.dsn); len(ps) != 0 {
		t.Errorf("approvals still waiting: %+v", ps)
	}
}

// ---- 3. the wait ends, the operator approves, the identical retry runs ----

func TestServeApprovalTimeoutThenIdenticalRetry(t *testing.T) {
	t.Parallel()
	f := newNotesFixture(t, "", "1s")
	g := f.start(t)
	cs := connect(t, g.url, demoWriterToken)
	for _, n := range []string{"a", "b"} {
		wantOK(t, callTool(t, cs, toolWriteNote, map[string]any{"name": n, "text": "note " + n}), "Wrote")
	}

	id := waitingID(t, callTool(t, cs, toolDeleteNote, map[string]any{"name": "a"}))
	// Retrying before the decision waits on the same approval.
	if again := waitingID(t, callTool(t, cs, toolDeleteNote, map[string]any{"name": "a"})); again != id {
		t.Errorf("an undecided retry made a new approval %s, want %s", again, id)
	}
	if ps := listPending(t, f.dsn); len(ps) != 1 || ps[0].ID != id {
		t.Fatalf("pending approvals %+v, want only %s", ps, id)
	}
	mustCLI(t, "approvals", "approve", id, "--store", f.dsn, "--by", "ops")
	wantOK(t, callTool(t, cs, toolDeleteNote, map[string]any{"name": "a"}), `Deleted note "a"`)

	// Different arguments need their own approval.
	other := waitingID(t, callTool(t, cs, toolDeleteNote, map[string]any{"name": "b"}))
	if other == id {
		t.Errorf("a call with other arguments reused approval %s", id)
	}
	ps := listPending(t, f.dsn)
	if len(ps) != 1 || ps[0].ID != other || argName(ps[0].Args) != "b" {
		t.Errorf("pending approvals %+v, want only %s for note b", ps, other)
	}
	if notes := noteNames(t, cs); notes != "b" {
		t.Errorf("notes %q, want only b", notes)
	}
	// The approval was for once and is used up: the same call asks again.
	if again := waitingID(t, callTool(t, cs, toolDeleteNote, map[string]any{"name": "a"})); again == id || again == other {
		t.Errorf("a consumed approval was used again (%s)", again)
	}
}

// ---- 4. two replicas on one PostgreSQL ----

// TestServeReplicasSharePostgres runs two gateways on one PostgreSQL schema: a call
// waiting on one replica wakes up when the decision is made in another process
// (NOTIFY), well before the one-second poll that backs it up.
func TestServeReplicasSharePostgres(t *testing.T) {
	// Every connection of the two replicas carries an application name of this test's
	// own, so that their LISTEN connections can be told from anything else's.
	u, err := url.Parse(postgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	app := "warden-replicas-" + q.Get("search_path")
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	dsn := u.String()
	f := newNotesFixture(t, dsn, "60s")
	a, b := f.start(t), f.start(t)
	ca, cb := connect(t, a.url, demoWriterToken), connect(t, b.url, demoWriterToken)
	for i := range 3 {
		wantOK(t, callTool(t, ca, toolWriteNote, map[string]any{"name": fmt.Sprintf("r%d", i), "text": "x"}), "Wrote")
	}

	var wakes []time.Duration
	waited := map[*sdk.ClientSession]bool{}
	for i, cs := range []*sdk.ClientSession{ca, cb, ca} {
		replica := "A"
		if cs == cb {
			replica = "B"
		}
		name := fmt.Sprintf("r%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		done := callAsync(ctx, cs, toolDeleteNote, map[string]any{"name": name})
		var id string
		mcptest.WaitFor(t, callTimeout, "the call on replica "+replica+" waits", func() bool {
			for _, p := range listPending(t, dsn) {
				if argName(p.Args) == name {
					id = p.ID
					return true
				}
			}
			return false
		})
		// A replica's store opens its LISTEN connection when a call first waits, then
		// looks at every waiting call again: once it is listening, the decision below
		// reaches the waiter by its notification (or the poll a second later), not by
		// a look that happened to come after it.
		waited[cs] = true
		mcptest.WaitFor(t, callTimeout, "replica "+replica+" listens for decisions", func() bool {
			return listeners(t, dsn, app) == len(waited)
		})
		before := time.Now()
		mustCLI(t, "approvals", "approve", id, "--store", dsn, "--by", "ops")
		var shown struct {
			DecidedAt time.Time `json:"decided_at"`
		}
		if err := json.Unmarshal([]byte(mustCLI(t, "approvals", "show", id, "--json", "--store", dsn)), &shown); err != nil {
			t.Fatal(err)
		}
		r := await(t, done, callTimeout, "the waiting call on replica "+replica)
		cancel()
		if r.err != nil {
			t.Fatal(r.err)
		}
		wantOK(t, r.res, "Deleted note")
		wake := r.at.Sub(shown.DecidedAt)
		wakes = append(wakes, wake)
		t.Logf("replica %s: the waiting call returned %v after the decision was committed (%v after the approve command was started)",
			replica, wake.Round(time.Millisecond), r.at.Sub(before).Round(time.Millisecond))
		if wake > 10*time.Second {
			t.Errorf("replica %s woke %v after the decision", replica, wake)
		}
	}
	slices.Sort(wakes)
	t.Logf("cross-process wake latency: min %v, median %v, max %v", wakes[0].Round(time.Millisecond),
		wakes[len(wakes)/2].Round(time.Millisecond), wakes[len(wakes)-1].Round(time.Millisecond))
	if notes := noteNames(t, cb); notes != "No notes." {
		t.Errorf("notes left: %q", notes)
	}
	ran := map[string]bool{}
	for _, row := range auditRows(t, dsn, "--tool", toolDeleteNote) {
		if row.Status == "ran" && row.Executed && row.ApprovedBy == "ops" {
			ran[argName(row.Args)] = true
		}
	}
	if len(ran) != 3 {
		t.Errorf("the audit log shows %v deleted with the approval of ops, want r0, r1, r2", ran)
	}
	mustCLI(t, "audit", "verify", "--store", dsn)
}

// listeners counts the PostgreSQL sessions named app that are listening for
// decisions (the LISTEN connection of a replica's store).
func listeners(t *testing.T, dsn, app string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query = 'LISTEN warden_decisions'`, app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// ---- 5. kill -9 loses no pending approval ----

func TestServeKill9KeepsPendingApprovals(t *testing.T) {
	skipWithoutSignals(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			dsn := ""
			if backend == "postgres" {
				dsn = postgresDSN(t)
			}
			testKill9(t, dsn)
		})
	}
}

func testKill9(t *testing.T, dsn string) {
	f := newNotesFixture(t, dsn, "2s")
	g := f.start(t)
	cs := connect(t, g.url, demoWriterToken)
	names := []string{"k0", "k1", "k2", "k3"}
	for _, n := range names {
		wantOK(t, callTool(t, cs, toolWriteNote, map[string]any{"name": n, "text": "x"}), "Wrote")
	}
	// Three calls wait out approvals.wait and return WaitingText.
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var chans []<-chan callResult
	for _, n := range names[:3] {
		chans = append(chans, callAsync(ctx, cs, toolDeleteNote, map[string]any{"name": n}))
	}
	ids := map[string]bool{}
	for _, ch := range chans {
		r := await(t, ch, callTimeout, "a delete")
		if r.err != nil {
			t.Fatal(r.err)
		}
		ids[waitingID(t, r.res)] = true
	}
	if len(ids) != 3 {
		t.Fatalf("three calls with different arguments got approvals %v", ids)
	}
	// The fourth call must still be waiting at the kill: lengthen the wait (the
	// gateway reloads the changed file by itself).
	f.setWait(t, "10m")
	mcptest.WaitFor(t, callTimeout, "the gateway reloads the longer wait", func() bool {
		return g.log.Count("configuration reloaded") > 0
	})
	fourth := callAsync(ctx, cs, toolDeleteNote, map[string]any{"name": "k3"})
	mcptest.WaitFor(t, callTimeout, "the fourth call waits for an operator", func() bool {
		return g.log.Count("call waiting for an operator") == 4
	})
	select {
	case r := <-fourth:
		t.Fatalf("the fourth call returned before the kill: %v %v", r.err, r.res)
	default:
	}
	upstreams := processesMentioning(t, filepath.Join(f.dir, "notes"))
	killed := time.Now()
	g.kill9(t)
	if goruntime.GOOS == "linux" {
		if len(upstreams) == 0 {
			t.Fatal("no notes-server process was running before the kill")
		}
		// The kernel kills the upstream servers with their gateway (Pdeathsig).
		mcptest.WaitFor(t, callTimeout, "the killed gateway's notes-server processes to exit", func() bool {
			return len(processesMentioning(t, filepath.Join(f.dir, "notes"))) == 0
		})
	}
	select {
	case r := <-fourth:
		if r.err == nil && !r.res.IsError {
			t.Errorf("the call in flight at the kill succeeded: %q", mcptest.ResultText(r.res))
		}
		t.Logf("the call in flight failed %v after the kill: %v", r.at.Sub(killed).Round(time.Millisecond), r.err)
	case <-time.After(callTimeout):
		t.Log("the client is still waiting on the killed gateway")
	}
	cancel()

	ps := listPending(t, f.dsn)
	var got []string
	for _, p := range ps {
		if p.State != store.StatePending || p.Tool != toolDeleteNote {
			t.Errorf("approval %+v", p)
		}
		got = append(got, argName(p.Args))
		if argName(p.Args) != "k3" && !ids[p.ID] {
			t.Errorf("approval %s was not one of the calls' %v", p.ID, ids)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Fatalf("after kill -9 the store holds approvals for %v, want %v", got, names)
	}

	g2 := f.start(t)
	for _, p := range ps {
		mustCLI(t, "approvals", "approve", p.ID, "--store", f.dsn, "--by", "ops")
	}
	cs2 := connect(t, g2.url, demoWriterToken)
	for _, n := range names {
		wantOK(t, callTool(t, cs2, toolDeleteNote, map[string]any{"name": n}), `Deleted note "`+n+`"`)
	}
	if notes := noteNames(t, cs2); notes != "No notes." {
		t.Errorf("notes left: %q", notes)
	}
	if out := mustCLI(t, "approvals", "list", "--store", f.dsn); !strings.Contains(out, "No approvals are waiting.") {
		t.Errorf("approvals list:\n%s", out)
	}
	if out := mustCLI(t, "audit", "verify", "--store", f.dsn); !strings.Contains(out, "the chain is intact") {
		t.Errorf("audit verify:\n%s", out)
	}
}

// ---- 6. reloads ----

// replaceKeepingStamp replaces path with data padded (by a YAML comment) to the file's
// current size, with the file's current modification time, by renaming: a watch that
// compared sizes and times could not see the change.
func replaceKeepingStamp(t *testing.T, path, data string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	pad := int(fi.Size()) - len(data) - len("\n#\n")
	if pad < 0 {
		t.Fatalf("the new %s is longer than the old one", path)
	}
	data += "\n#" + strings.Repeat("-", pad) + "\n"
	tmp := path + ".tmp"
	writeFile(t, tmp, data)
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const freezeRule = `
  - id: writes-frozen
    when: 'tool == "mcp__notes__write_note"'
    effect: deny
    rationale: maintenance window
    tell_llm: "Writing notes is frozen for maintenance; try again tomorrow."
`

// TestServeReload: SIGHUP reloads (with the file watch off, --watch 0, so only the
// signal can); a broken policy keeps the previous revision.
func TestServeReload(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	f := newNotesFixture(t, "", "1s")
	original := readFile(t, f.policy)
	g := f.start(t, "--watch", "0")
	cs := connect(t, g.url, demoWriterToken)
	wantOK(t, callTool(t, cs, toolWriteNote, map[string]any{"name": "n1", "text": "before"}), "Wrote")

	// SIGHUP: a new rule refuses writes.
	writeFile(t, f.policy, original+freezeRule)
	g.signal(t, syscall.SIGHUP)
	mcptest.WaitFor(t, callTimeout, "the gateway reloads on SIGHUP", func() bool {
		return g.log.Count("configuration reloaded", "trigger=SIGHUP") == 1
	})
	res := callTool(t, cs, toolWriteNote, map[string]any{"name": "n2", "text": "after"})
	if !res.IsError || !strings.Contains(mcptest.ResultText(res), "Writing notes is frozen for maintenance") {
		t.Fatalf("write after the reload: (isError=%v) %q; want the new rule's text", res.IsError, mcptest.ResultText(res))
	}
	wantOK(t, callTool(t, cs, toolReadNote, map[string]any{"name": "n1"}), "before")

	// A broken policy is refused; the previous revision stays in force.
	writeFile(t, f.policy, "version: 1\nroles: [unclosed\n")
	g.signal(t, syscall.SIGHUP)
	mcptest.WaitFor(t, callTimeout, "the gateway refuses the broken policy", func() bool {
		return g.log.Count("reload refused", "trigger=SIGHUP") == 1
	})
	res = callTool(t, cs, toolWriteNote, map[string]any{"name": "n3", "text": "still frozen"})
	if !res.IsError || !strings.Contains(mcptest.ResultText(res), "Writing notes is frozen for maintenance") {
		t.Errorf("write after the refused reload: (isError=%v) %q; want the previous revision's rule", res.IsError, mcptest.ResultText(res))
	}
	wantOK(t, callTool(t, cs, toolReadNote, map[string]any{"name": "n1"}), "before")
	if g.log.Count("reload refused", f.policy) != 1 {
		t.Errorf("the refusal does not name the policy file:\n%s", g.log.String())
	}
	if n := g.log.Count("configuration reloaded", "file change"); n != 0 {
		t.Errorf("the file watch reloaded although --watch 0 turned it off (%d times)", n)
	}
	// The audit names the rule that refused the writes.
	var frozen int
	for _, a := range auditRows(t, f.dsn, "--tool", toolWriteNote) {
		if a.RuleID == "writes-frozen" && a.Status == "refused" {
			frozen++
		}
	}
	if frozen != 2 {
		t.Errorf("%d writes refused by writes-frozen in the audit log, want 2", frozen)
	}
}

// TestServeReloadFileChange: a change to the policy file, without a signal, is
// reloaded, even one that keeps the file's size and modification time.
func TestServeReloadFileChange(t *testing.T) {
	t.Parallel()
	f := newNotesFixture(t, "", "1s")
	original := readFile(t, f.policy)
	// Room for the change below, so it can keep the file's size.
	writeFile(t, f.policy, original+"\n#"+strings.Repeat("-", 1024)+"\n")
	g := f.start(t)
	cs := connect(t, g.url, demoWriterToken)
	wantOK(t, callTool(t, cs, toolWriteNote, map[string]any{"name": "n1", "text": "before"}), "Wrote")

	replaceKeepingStamp(t, f.policy, original+freezeRule)
	mcptest.WaitFor(t, callTimeout, "the gateway notices the changed file", func() bool {
		return g.log.Count("configuration reloaded", `trigger="file change"`) == 1
	})
	res := callTool(t, cs, toolWriteNote, map[string]any{"name": "n2", "text": "after"})
	if !res.IsError || !strings.Contains(mcptest.ResultText(res), "Writing notes is frozen for maintenance") {
		t.Fatalf("write after the reload: (isError=%v) %q; want the new rule's text", res.IsError, mcptest.ResultText(res))
	}
	writeFile(t, f.policy, original)
	mcptest.WaitFor(t, callTimeout, "the gateway notices the file changed back", func() bool {
		return g.log.Count("configuration reloaded", `trigger="file change"`) == 2
	})
	wantOK(t, callTool(t, cs, toolWriteNote, map[string]any{"name": "n3", "text": "thawed"}), "Wrote")
}

// ---- 7. graceful shutdown ----

const faultPolicy = `version: 1
roles:
  writer: [mcp__fault__slow, mcp__fault__echo]
active_role: writer
`

func TestServeGracefulShutdown(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "warden.db")
	writeFile(t, filepath.Join(dir, "policy.yaml"), faultPolicy)
	cfg := gwConfig{
		policy: filepath.Join(dir, "policy.yaml"), store: dsn, wait: "1s",
		servers:  "  fault:\n    command: faultserver\n    args: [-mode, ok]\n",
		commands: []string{"faultserver"},
		clients:  []gwClient{writerClient},
	}
	writeFile(t, filepath.Join(dir, "gateway.yaml"), cfg.yaml())
	g := startGateway(t, filepath.Join(dir, "gateway.yaml"), peerEnv(t, "./internal/faultserver"))
	cs := connect(t, g.url, demoWriterToken)
	wantOK(t, callTool(t, cs, "mcp__fault__echo", map[string]any{"text": "hi"}), "hi")

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	const slowMS = 6000
	done := callAsync(ctx, cs, "mcp__fault__slow", map[string]any{"ms": slowMS})
	mcptest.WaitFor(t, callTimeout, "the slow call is running (audited as started)", func() bool {
		return len(auditRows(t, dsn, "--tool", "mcp__fault__slow", "--status", "started")) == 1
	})
	sigterm := time.Now()
	g.signal(t, syscall.SIGTERM)
	r := await(t, done, callTimeout, "the slow call")
	if r.err != nil {
		t.Fatalf("the call in flight at SIGTERM failed: %v", r.err)
	}
	if r.res.IsError {
		t.Fatalf("the call in flight at SIGTERM: %q", mcptest.ResultText(r.res))
	}
	var pid, start, end int64
	if _, err := fmt.Sscan(mcptest.ResultText(r.res), &pid, &start, &end); err != nil {
		t.Fatalf("slow returned %q: %v", mcptest.ResultText(r.res), err)
	}
	if !(start < sigterm.UnixNano() && sigterm.UnixNano() < end) {
		t.Errorf("SIGTERM at %d is not within the call [%d, %d]", sigterm.UnixNano(), start, end)
	}
	select {
	case <-g.done:
	case <-time.After(time.Minute):
		t.Fatal("the gateway did not exit within a minute of SIGTERM")
	}
	exited := time.Now()
	t.Logf("SIGTERM to call end %v, call end to exit %v", r.at.Sub(sigterm).Round(time.Millisecond), exited.Sub(r.at).Round(time.Millisecond))
	if g.waitErr != nil {
		t.Errorf("the gateway exited with %v, want 0", g.waitErr)
	}
	if d := exited.Sub(r.at); d > 15*time.Second {
		t.Errorf("the gateway took %v to exit after its last call completed", d)
	}
	if !strings.Contains(g.log.String(), "shutting down: finishing calls in flight") {
		t.Errorf("no shutdown message in the log:\n%s", g.log.String())
	}
	rows := auditRows(t, dsn, "--tool", "mcp__fault__slow")
	if len(rows) != 1 || rows[0].Status != "ran" {
		t.Errorf("audit of the slow call: %+v; want one row, ran", rows)
	}
}

// TestServeSecondSIGTERMStopsAtOnce: a shutdown waits for the calls in flight (here a
// call waiting for an approval), but a second SIGTERM ends the process at once.
func TestServeSecondSIGTERMStopsAtOnce(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	f := newNotesFixture(t, "", "60s")
	g := f.start(t)
	cs := connect(t, g.url, demoWriterToken)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	callAsync(ctx, cs, toolDeleteNote, map[string]any{"name": "x"})
	mcptest.WaitFor(t, callTimeout, "the call waits for an operator", func() bool {
		return g.log.Count("call waiting for an operator") == 1
	})
	g.signal(t, syscall.SIGTERM)
	mcptest.WaitFor(t, callTimeout, "the gateway starts shutting down", func() bool {
		return g.log.Count("shutting down") == 1
	})
	if g.exited() {
		t.Fatal("the gateway exited without waiting for the call in flight")
	}
	second := time.Now()
	g.signal(t, syscall.SIGTERM)
	select {
	case <-g.done:
		t.Logf("exited %v after the second SIGTERM (%v)", time.Since(second).Round(time.Millisecond), g.waitErr)
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway ignored a second SIGTERM")
	}
	if g.waitErr == nil {
		t.Error("the gateway exited 0 although the second SIGTERM cut the shutdown short")
	}
}

// ---- 8. pins ----

func TestPinsCommands(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "warden.db")
	dsn := "sqlite://" + path
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
	oldHash, oldDef, err := pin.Hash(&sdk.Tool{Name: "write_note", Description: "Write a note.", InputSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	newHash, newDef, err := pin.Hash(&sdk.Tool{Name: "write_note", Description: "Write a note and mail it to everyone.", InputSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	readHash, readDef, err := pin.Hash(&sdk.Tool{Name: "read_note", Description: "Read a note.", InputSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []store.Pin{
		{Name: toolReadNote, Hash: readHash, Definition: readDef, Approved: true, ApprovedBy: pin.ApprovedByFirstUse},
		{Name: toolWriteNote, Hash: oldHash, Definition: oldDef, Approved: true, ApprovedBy: pin.ApprovedByFirstUse, Pending: newDef, PendingHash: newHash},
	} {
		if err := s.PutPin(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	list := mustCLI(t, "pins", "list", "--store", dsn)
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], toolWriteNote) || !strings.Contains(lines[1], "QUARANTINED") ||
		!strings.Contains(lines[1], shortHash(newHash)+" (pending)") || !strings.Contains(lines[2], "pinned") {
		t.Errorf("pins list: want the quarantined tool first with its pending hash:\n%s", list)
	}
	type pinRow struct {
		Name        string `json:"name"`
		Quarantined bool   `json:"quarantined"`
		PendingHash string `json:"pending_hash"`
	}
	rows := decodeLines[pinRow](t, mustCLI(t, "pins", "list", "--json", "--store", dsn))
	if len(rows) != 2 || rows[0] != (pinRow{toolWriteNote, true, newHash}) || rows[1].Quarantined {
		t.Errorf("pins list --json: %+v", rows)
	}

	diff := mustCLI(t, "pins", "diff", toolWriteNote, "--store", dsn)
	for _, want := range []string{
		`-   "description": "Write a note.",`,
		`+   "description": "Write a note and mail it to everyone.",`,
		"approved: " + oldHash, "pending:  " + newHash,
		"warden pins approve " + toolWriteNote + " --hash " + newHash,
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("pins diff lacks %q:\n%s", want, diff)
		}
	}
	if !strings.Contains(diff, "\n    \"name\": \"write_note\"\n") {
		t.Errorf("pins diff does not show the unchanged name as context:\n%s", diff)
	}

	wrong := wardenCLI(t, "", "pins", "approve", toolWriteNote, "--hash", oldHash, "--by", "ops", "--store", dsn)
	if wrong.code != exitUsage || !strings.Contains(wrong.stderr, "review the definition again") {
		t.Errorf("approve with a wrong hash: exit %d, stderr %q; want 2 and why", wrong.code, wrong.stderr)
	}
	if out := mustCLI(t, "pins", "list", "--store", dsn); !strings.Contains(out, "QUARANTINED") {
		t.Errorf("a refused approval changed the pin:\n%s", out)
	}
	out := mustCLI(t, "pins", "approve", toolWriteNote, "--hash", newHash, "--by", "ops", "--store", dsn)
	if !strings.Contains(out, "Approved the new definition of "+toolWriteNote+" ("+newHash+") by ops") {
		t.Errorf("approve printed %q", out)
	}
	list = mustCLI(t, "pins", "list", "--store", dsn)
	if strings.Contains(list, "QUARANTINED") || !strings.Contains(list, "ops") {
		t.Errorf("pins list after the approval:\n%s", list)
	}
	if out := mustCLI(t, "pins", "diff", toolWriteNote, "--store", dsn); !strings.Contains(out, "is not quarantined") {
		t.Errorf("pins diff after the approval: %q", out)
	}
	for _, args := range [][]string{
		{"pins", "approve", toolWriteNote, "--hash", newHash, "--by", "ops"}, // nothing pending now
		{"pins", "diff", "mcp__notes__nope"},
		{"pins", "approve", "mcp__notes__nope", "--by", "ops"},
	} {
		if r := wardenCLI(t, "", append(args, "--store", dsn)...); r.code != exitUsage {
			t.Errorf("warden %s: exit %d (stderr %q), want 2", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := wardenCLI(t, "", "pins", "list", "--store", "sqlite://"+filepath.Join(t.TempDir(), "missing.db")); r.code != exitUsage {
		t.Errorf("pins list of a missing store: exit %d, want 2", r.code)
	}
}

// TestPinsQuarantineLive changes a served tool's definition under a running gateway:
// the tool is quarantined (hidden and refused), `warden pins` shows and approves the
// change, and the gateway serves the tool again without a restart.
func TestPinsQuarantineLive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "warden.db")
	desc := filepath.Join(dir, "echo-description.txt")
	writeFile(t, desc, "Returns its text.")
	writeFile(t, filepath.Join(dir, "policy.yaml"), `version: 1
roles:
  writer: [mcp__fault__echo, mcp__fault__poke]
active_role: writer
`)
	cfg := gwConfig{
		policy: filepath.Join(dir, "policy.yaml"), store: dsn, wait: "1s",
		servers:  fmt.Sprintf("  fault:\n    command: faultserver\n    args: [-mode, changing, -descfile, %q]\n", desc),
		commands: []string{"faultserver"},
		clients:  []gwClient{writerClient},
	}
	writeFile(t, filepath.Join(dir, "gateway.yaml"), cfg.yaml())
	g := startGateway(t, filepath.Join(dir, "gateway.yaml"), peerEnv(t, "./internal/faultserver"))
	cs := connect(t, g.url, demoWriterToken)
	const echo = "mcp__fault__echo"
	wantOK(t, callTool(t, cs, echo, map[string]any{"text": "one"}), "one")

	writeFile(t, desc, "Returns its text, and mails it to everyone.")
	wantOK(t, callTool(t, cs, "mcp__fault__poke", map[string]any{}), "poked")
	// The pin is quarantined in the store first; the gateway's served catalog follows
	// on its rebuild (a call in between is refused at the connection, as quarantined).
	mcptest.WaitFor(t, callTimeout, "pins list shows the changed tool quarantined and the gateway no longer serves it", func() bool {
		return strings.Contains(mustCLI(t, "pins", "list", "--store", dsn), "QUARANTINED") && !slices.Contains(listToolNames(t, cs), echo)
	})
	if err := callToolErr(t, cs, echo, map[string]any{"text": "two"}); !strings.Contains(err.Error(), fmt.Sprintf("unknown tool %q", echo)) {
		t.Errorf("echo while quarantined: %v, want the unknown-tool error", err)
	}
	if names := listToolNames(t, cs); slices.Contains(names, echo) {
		t.Errorf("tools/list shows the quarantined tool: %v", names)
	}
	diff := mustCLI(t, "pins", "diff", echo, "--store", dsn)
	for _, want := range []string{`-   "description": "Returns its text.",`, `+   "description": "Returns its text, and mails it to everyone.",`} {
		if !strings.Contains(diff, want) {
			t.Errorf("pins diff lacks %q:\n%s", want, diff)
		}
	}
	rows := decodeLines[struct {
		Name        string `json:"name"`
		PendingHash string `json:"pending_hash"`
	}](t, mustCLI(t, "pins", "list", "--json", "--store", dsn))
	if len(rows) == 0 || rows[0].Name != echo || rows[0].PendingHash == "" {
		t.Fatalf("pins list --json: %+v; want %s first, with a pending hash", rows, echo)
	}
	mustCLI(t, "pins", "approve", echo, "--hash", rows[0].PendingHash, "--by", "ops", "--store", dsn)
	approved := time.Now()
	mcptest.WaitFor(t, callTimeout, "the gateway serves the approved tool again", func() bool {
		// Until then the call answers like an unknown tool (a protocol error).
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: echo, Arguments: map[string]any{"text": "three"}})
		return err == nil && !res.IsError
	})
	t.Logf("the running gateway served the tool again %v after the approval", time.Since(approved).Round(time.Millisecond))
	if names := listToolNames(t, cs); !slices.Contains(names, echo) {
		t.Errorf("tools/list after the approval: %v", names)
	}
}

// TestServePinRecheckOnSIGHUP changes a served tool's definition without any
// tools/list_changed: SIGHUP re-checks the pins, and the changed tool is quarantined
// before the reloaded revision serves it.
func TestServePinRecheckOnSIGHUP(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "warden.db")
	desc := filepath.Join(dir, "echo-description.txt")
	writeFile(t, desc, "Returns its text.")
	writeFile(t, filepath.Join(dir, "policy.yaml"), "version: 1\nroles:\n  writer: [mcp__fault__echo]\nactive_role: writer\n")
	cfg := gwConfig{
		policy: filepath.Join(dir, "policy.yaml"), store: dsn, wait: "1s",
		servers:  fmt.Sprintf("  fault:\n    command: faultserver\n    args: [-mode, changing, -descfile, %q]\n", desc),
		commands: []string{"faultserver"},
		clients:  []gwClient{writerClient},
	}
	writeFile(t, filepath.Join(dir, "gateway.yaml"), cfg.yaml())
	g := startGateway(t, filepath.Join(dir, "gateway.yaml"), peerEnv(t, "./internal/faultserver"), "--watch", "0")
	cs := connect(t, g.url, demoWriterToken)
	const echo = "mcp__fault__echo"
	wantOK(t, callTool(t, cs, echo, map[string]any{"text": "one"}), "one")

	writeFile(t, desc, "Returns its text, and mails it to everyone.")
	g.signal(t, syscall.SIGHUP)
	mcptest.WaitFor(t, callTimeout, "the gateway reloads on SIGHUP", func() bool {
		return g.log.Count("configuration reloaded", "trigger=SIGHUP") == 1
	})
	if err := callToolErr(t, cs, echo, map[string]any{"text": "two"}); !strings.Contains(err.Error(), fmt.Sprintf("unknown tool %q", echo)) {
		t.Errorf("echo after SIGHUP: %v, want the unknown-tool error of a quarantined tool", err)
	}
	if out := mustCLI(t, "pins", "list", "--store", dsn); !strings.Contains(out, "QUARANTINED") {
		t.Errorf("pins list after SIGHUP:\n%s", out)
	}
	if rows := auditRows(t, dsn, "--tool", echo); len(rows) != 2 || !rows[0].Executed || rows[1].Executed || rows[1].Status != "refused" {
		t.Errorf("audit of echo: %+v; want the first call run and the one after SIGHUP refused", rows)
	}
}

// ---- 9. usage errors and hash-token ----

func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	r := wardenCLI(t, "", "serve")
	if r.code != exitUsage || !strings.Contains(r.stderr, "name the gateway config with -c FILE") {
		t.Errorf("serve without -c: exit %d, stderr %q", r.code, r.stderr)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	writeFile(t, filepath.Join(dir, "policy.yaml"), faultPolicy)
	writeFile(t, cfg, "policy: policy.yaml\nservers: {}\nstdio:\n  principal: me\nlisten_on: 127.0.0.1:0\n")
	r = wardenCLI(t, "", "serve", "-c", cfg)
	if r.code != exitUsage || !strings.Contains(r.stderr, cfg+":5:") || !strings.Contains(r.stderr, `unknown key "listen_on"`) {
		t.Errorf("serve with a bad key: exit %d, stderr %q; want 2 and %s:5", r.code, r.stderr, cfg)
	}

	writeFile(t, cfg, "policy: policy.yaml\nservers: {}\n")
	r = wardenCLI(t, "", "serve", "-c", cfg)
	if r.code != exitUsage || !strings.Contains(r.stderr, "sets no listen address") {
		t.Errorf("serve without listen or --stdio: exit %d, stderr %q", r.code, r.stderr)
	}

	r = wardenCLI(t, "", "serve", "-c", filepath.Join(dir, "missing.yaml"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "missing.yaml") {
		t.Errorf("serve with a missing config: exit %d, stderr %q", r.code, r.stderr)
	}

	r = wardenCLI(t, "short-token\n", "serve", "hash-token")
	if r.code != exitUsage || !strings.Contains(r.stderr, "at least 16") || r.stdout != "" {
		t.Errorf("hash-token with a short token: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, in := range []string{demoWriterToken + "\n", demoWriterToken} {
		r = wardenCLI(t, in, "serve", "hash-token")
		if r.code != 0 || r.stdout != inbox.HashToken(demoWriterToken)+"\n" || !regexp.MustCompile(`^sha256:[0-9a-f]{64}\n$`).MatchString(r.stdout) {
			t.Errorf("hash-token %q: exit %d, stdout %q, stderr %q", in, r.code, r.stdout, r.stderr)
		}
	}
	if want := "sha256:3e1e215055b345dc8cf1edd3d35dbd3288e1d98bf295d40588b6ac7397e3688b\n"; r.stdout != want {
		t.Errorf("hash-token of the example's writer token: %q, want the example's %q", r.stdout, want)
	}
}

// ---- 10. --stdio ----

func TestServeStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "warden.db")
	policy := mcptest.CopyExamplePolicy(t, dir)
	cfg := gwConfig{
		policy: policy, store: dsn, wait: "1s",
		servers:   notesServerBlock(filepath.Join(dir, "notes")),
		commands:  []string{"notes-server"},
		stdioRole: "reader",
	}
	cfgPath := filepath.Join(dir, "gateway.yaml")
	// The HTTP front's client and operator name token variables this process does not
	// have: --stdio serves no HTTP, so it does not need them.
	writeFile(t, cfgPath, cfg.yaml()+"listen: 127.0.0.1:0\nclients:\n  - principal: web-agent\n    role: reader\n    token_env: WARDEN_TEST_UNSET_CLIENT_TOKEN\n"+
		"operators:\n  - name: op\n    token_env: WARDEN_TEST_UNSET_OPERATOR_TOKEN\n")
	if err := os.Mkdir(filepath.Join(dir, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "notes", "hello"), "hello from disk")

	cmd := exec.Command(wardenBinary(t), "serve", "-c", cfgPath, "--stdio")
	cmd.Env = peerEnv(t, "./examples/gateway/notes-server")
	stderr := &mcptest.LogBuffer{}
	cmd.Stderr = stderr
	stderr.LogOnFailure(t, "gateway stderr") // runs after the cleanup below closes the session
	client := sdk.NewClient(&sdk.Implementation{Name: "warden-serve-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("starting warden serve --stdio: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			cs.Close()
		}
	})

	// The stdio identity is a reader: it sees and may call the reading tools only.
	want := []string{toolListNotes, toolReadNote, toolSearchNote}
	if got := listToolNames(t, cs); !slices.Equal(got, want) {
		t.Errorf("stdio client sees tools %v, want %v", got, want)
	}
	wantOK(t, callTool(t, cs, toolReadNote, map[string]any{"name": "hello"}), "hello from disk")
	// A tool outside the role answers like one that does not exist.
	if err := callToolErr(t, cs, toolWriteNote, map[string]any{"name": "x", "text": "y"}); !strings.Contains(err.Error(), fmt.Sprintf("unknown tool %q", toolWriteNote)) {
		t.Errorf("write as a reader: %v, want the unknown-tool error", err)
	}

	closed = true
	if err := cs.Close(); err != nil {
		t.Errorf("closing the stdio session (the gateway's exit): %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("warden serve --stdio exited %d after the client closed stdin, want 0", code)
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("errors in the log:\n%s", stderr.String())
	}
	rows := auditRows(t, dsn)
	if len(rows) != 2 {
		t.Fatalf("audit rows %+v, want 2", rows)
	}
	for _, row := range rows {
		if row.Principal != "local-user" {
			t.Errorf("audit row %+v, want principal local-user", row)
		}
	}
	if rows[0].Status != "ran" || rows[1].Status != "refused" {
		t.Errorf("audit rows %+v, want ran then refused", rows)
	}
}

// processesMentioning returns the pids of live processes whose command line mentions
// s (Linux /proc only; zombies, which have no command line, are not listed).
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestServeLogFormatAndLevel runs the gateway on stdio until its client closes stdin:
// --log-format json writes one JSON object per line with the level and message,
// --log-level warn leaves out the info records, and bad values are usage errors
// that name the flag and what it takes.
func TestServeLogFormatAndLevel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	writeFile(t, filepath.Join(dir, "policy.yaml"), faultPolicy)
	writeFile(t, cfg, "policy: policy.yaml\nstore: sqlite://"+filepath.Join(dir, "warden.db")+"\nservers: {}\nstdio:\n  principal: me\n")

	r := wardenCLI(t, "", "serve", "-c", cfg, "--stdio", "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("serve --log-format json: exit %d, stderr %q", r.code, r.stderr)
	}
	var msgs []string
	for line := range strings.Lines(r.stderr) {
		var rec struct {
			Time  time.Time `json:"time"`
			Level string    `json:"level"`
			Msg   string    `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("--log-format json wrote a line that is not JSON: %q: %v", line, err)
		}
		if rec.Time.IsZero() || rec.Level == "" || rec.Msg == "" {
			t.Errorf("JSON log record without time, level or msg: %q", line)
		}
		msgs = append(msgs, rec.Level+" "+rec.Msg)
	}
	if !slices.Contains(msgs, "INFO gateway configuration in force") {
		t.Errorf("JSON log records %q; want the info record \"gateway configuration in force\"", msgs)
	}

	r = wardenCLI(t, "", "serve", "-c", cfg, "--stdio")
	if r.code != 0 || !strings.Contains(r.stderr, `level=INFO msg="gateway configuration in force"`) {
		t.Errorf("serve with the default text log: exit %d, stderr %q; want key=value lines at info", r.code, r.stderr)
	}
	r = wardenCLI(t, "", "serve", "-c", cfg, "--stdio", "--log-level", "warn")
	if r.code != 0 || strings.Contains(r.stderr, "level=INFO") {
		t.Errorf("serve --log-level warn: exit %d, stderr %q; want no info records", r.code, r.stderr)
	}

	for _, c := range []struct{ flag, value, want string }{
		{"--log-format", "yaml", `--log-format "yaml": want text or json`},
		{"--log-level", "verbose", `--log-level "verbose": want debug, info, warn or error`},
	} {
		r = wardenCLI(t, "", "serve", "-c", cfg, "--stdio", c.flag, c.value)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("serve %s %s: exit %d, stderr %q; want %d and %q", c.flag, c.value, r.code, r.stderr, exitUsage, c.want)
		}
	}
}
