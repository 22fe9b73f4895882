package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/upstream"
)

// TestSoakProbe checks the soak's own instruments on an in-process SDK server over
// streamable HTTP: an answered call is traced on both sides of HTTP, and a call whose
// tool never answers is counted as unanswered, with its trace and a goroutine profile
// that shows the tool's handler still waiting.
func TestSoakProbe(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "soak-probe", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in soakEchoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	release := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "stall"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ soakEchoIn) (*mcp.CallToolResult, any, error) {
		return soakStall(ctx, release)
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	probe := &soakProbe{keep: true}
	s := soakSettings{conc: 1, timeout: 300 * time.Millisecond, dumpDir: t.TempDir(), idle: 4}
	sessions := soakSessions(t, s, probe, h, "/mcp")
	// Before the sessions close (cleanups run last first): a stalled handler still
	// running would hold up the server session's Close.
	t.Cleanup(func() { close(release) })

	answered := (&soakTarget{name: "probe", tool: "echo", sessions: sessions}).run(s, probe)
	if answered.answered != 1 || answered.errors+answered.unanswered != 0 || answered.dumpFile != "" {
		t.Fatalf("one echo call: %+v, want 1 answered and no profile", answered)
	}
	tr := probe.trace("soak/probe/s0/n0")
	if tr == nil {
		t.Fatal("the echo call left no trace")
	}
	// Both sides go on after the answer arrives (the server returns from its
	// handler, the client drains and closes the body): wait for their last notes.
	if !tr.await(5*time.Second, "server: handler returned", "client: body closed") {
		t.Fatalf("the echo call's trace does not end on both sides:\n%s", tr)
	}
	// Each side in its own order; between them, the order depends on scheduling.
	soakWantInOrder(t, tr.String(), "JSON-RPC id ", "session "+sessions[0].ID(),
		"client: POST sent", "client: response headers: 200 text/event-stream", "client: read the answer", "client: body closed")
	soakWantInOrder(t, tr.String(), "server: POST received", "server: answer written", "server: answer flushed", "server: handler returned")

	stalled := (&soakTarget{name: "stalled", tool: "stall", sessions: sessions}).run(s, probe)
	if stalled.unanswered != 1 || stalled.answered+stalled.errors != 0 || len(stalled.unansweredCalls) != 1 {
		t.Fatalf("one call of a tool that never answers: %+v, want 1 unanswered", stalled)
	}
	soakWantInOrder(t, stalled.unansweredCalls[0], "call soak/stalled/s0/n0 (JSON-RPC id ", "got no answer within 300ms",
		"client: POST sent", "server: POST received", "client: no answer after 300ms")
	if strings.Contains(stalled.unansweredCalls[0], "server: answer written") {
		t.Errorf("the unanswered call's trace says an answer was written:\n%s", stalled.unansweredCalls[0])
	}
	if stalled.dumpErr != nil {
		t.Fatal(stalled.dumpErr)
	}
	dump, err := os.ReadFile(stalled.dumpFile)
	if err != nil {
		t.Fatal(err)
	}
	soakWantInOrder(t, string(dump), "front stalled", "Calls in flight:", "call soak/stalled/s0/n0",
		"Goroutines (debug=2):", "gateway_test.soakStall")
}

// soakStall is a tool that answers only when its call is cancelled or release is
// closed.
func soakStall(ctx context.Context, release <-chan struct{}) (*mcp.CallToolResult, any, error) {
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-release:
		return nil, nil, errors.New("released")
	}
}

// soakWantInOrder fails t unless text holds every one of parts, in that order.
func soakWantInOrder(t *testing.T, text string, parts ...string) {
	t.Helper()
	rest := text
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Fatalf("no %q (in order) in:\n%s", p, text)
		}
		rest = rest[i+len(p):]
	}
}

type soakEchoIn struct {
	Text string `json:"text"`
}

// TestSoakWireVerdict checks the soak's stdio instruments on the governed front: a
// call the fault server never answers (hang) is unanswered, and the dump holds
// the stdio wire logs and the fault server's own, whose verdict is that the call
// was written to the server, which received it and sent no response, and that no
// response with its id was read back.
func TestSoakWireVerdict(t *testing.T) {
	soakServer(t)
	s := soakSettings{conc: 1, timeout: 500 * time.Millisecond, dumpDir: t.TempDir(), idle: 4}
	probe := &soakProbe{}
	dir := t.TempDir()
	probe.wire, probe.wireDir = upstream.StdioWireLogs, soakWireDir(t, s)
	policy := strings.Replace(soakPolicy, "agent: [mcp__soak__echo]", "agent: [mcp__soak__echo, mcp__soak__hang]", 1)
	data := fmt.Appendf(nil, soakGatewayConfig, s.conc, strconv.Quote(probe.wireDir), "", inbox.HashToken(soakToken))
	mux, path := serveGatewayConfig(t, dir, data, policy, nil)
	sessions := soakSessions(t, s, probe, mux, path)

	hang := &soakTarget{name: "hung", tool: "mcp__soak__hang", sessions: sessions, args: func(string) map[string]any { return map[string]any{} }}
	r := hang.run(s, probe)
	if r.unanswered != 1 || r.answered+r.errors != 0 || r.dumpErr != nil {
		t.Fatalf("one call of a tool that never answers: %+v (first error %v), want 1 unanswered", r, r.firstErr)
	}
	verdict := regexp.MustCompile(`^  server process ([0-9]+), id ([0-9]+): tools/call written to the server at [^;]+; no response with that id read back from the server \([0-9.]+m?s before the dump\)
  fault server ([0-9]+): [0-9:.]+ received call +id=([0-9]+) tools/call  <- no response sent
  fault server ([0-9]+) on id ([0-9]+): [0-9:.]+ received call +id=([0-9]+) tools/call  <- no response sent
$`)
	m := verdict.FindStringSubmatch(r.wireVerdict)
	if m == nil {
		t.Fatalf("wire verdict:\n%s\nwant the call written, received by the server, and never answered", r.wireVerdict)
	}
	if pid, id := m[1], m[2]; m[3] != pid || m[5] != pid || m[4] != id || m[6] != id || m[7] != id {
		t.Errorf("the verdict names more than one process or id:\n%s", r.wireVerdict)
	}
	dump, err := os.ReadFile(r.dumpFile)
	if err != nil {
		t.Fatal(err)
	}
	soakWantInOrder(t, string(dump), "front hung", "Goroutines (debug=2):", "Stdio wire logs (1 connections):",
		"stdio connection to server process "+m[1], "written      call         id="+m[2]+" tools/call",
		"Fault server "+m[1]+"'s own wire log", "received call         id="+m[2]+" tools/call  <- no response sent")
}
