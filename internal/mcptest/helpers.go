package mcptest

// Small helpers the gateway's tests share: a log buffer, bearer tokens, MCP clients
// over streamable HTTP, polling, and the files and binaries a gateway runs with.

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LogBuffer collects a log (a gateway's slog output, a process's stderr). It is safe
// for concurrent use; the zero value is empty and ready to use.
type LogBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // closed (and replaced) by every Write
}

// Write appends p to the log.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.buf.Write(p)
}

// WaitCount waits until at least n lines of the log hold every one of parts (see
// [LogBuffer.Count]), woken by each Write (no polling); it fails tb when timeout
// passes first. Use [LogBuffer.Await] on goroutines other than the test's.
func (b *LogBuffer) WaitCount(tb testing.TB, timeout time.Duration, n int, parts ...string) {
	tb.Helper()
	if !b.Await(timeout, n, parts...) {
		tb.Fatalf("%d log lines hold %q after %s, want at least %d", b.Count(parts...), parts, timeout, n)
	}
}

// Await is WaitCount reporting whether the count was reached before timeout passed.
func (b *LogBuffer) Await(timeout time.Duration, n int, parts ...string) bool {
	expired := time.After(timeout)
	for {
		b.mu.Lock()
		if b.written == nil {
			b.written = make(chan struct{})
		}
		written := b.written
		b.mu.Unlock()
		// Counted after taking the channel: a Write in between closes it.
		if b.Count(parts...) >= n {
			return true
		}
		select {
		case <-written:
		case <-expired:
			return b.Count(parts...) >= n
		}
	}
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many lines of the log hold every one of parts.
func (b *LogBuffer) Count(parts ...string) int {
	n := 0
	for line := range strings.Lines(b.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// LogOnFailure has tb, when it ends failed, log the whole log under heading. The
// cleanup runs after those registered later, so it shows what they still logged.
func (b *LogBuffer) LogOnFailure(tb testing.TB, heading string) {
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("%s:\n%s", heading, b.String())
		}
	})
}

// Bearer is an http.RoundTripper that sends every request through Next with the
// header "Authorization: Bearer Token", or unchanged when Token is empty.
type Bearer struct {
	Token string
	Next  http.RoundTripper
}

// RoundTrip sends a copy of r with the token.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.Token != "" {
		r.Header.Set("Authorization", "Bearer "+b.Token)
	}
	return b.Next.RoundTrip(r)
}

// SessionProtocolVersion is the protocol version ConnectHTTP asks for: the newest
// one with sessions (initialize, server-to-client requests). The go-sdk client's own
// default is newer (2026-07-28, stateless); tests of that line connect with
// mcp.ClientSessionOptions.ProtocolVersion set to it.
const SessionProtocolVersion = "2025-11-25"

// ConnectHTTP connects client to the MCP endpoint over streamable HTTP at
// [SessionProtocolVersion], sending token as a bearer token (none when it is empty)
// through next, and closes the session when tb ends. With a nil next the session gets an HTTP transport of its own (a clone of
// http.DefaultTransport) whose idle connections are closed when tb ends. Connecting
// gives up after timeout; 0 means no limit. The error is the SDK's: callers decide
// whether a refused connection fails the test.
func ConnectHTTP(tb testing.TB, client *mcp.Client, endpoint, token string, next http.RoundTripper, timeout time.Duration) (*mcp.ClientSession, error) {
	tb.Helper()
	if next == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tb.Cleanup(tr.CloseIdleConnections)
		next = tr
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: Bearer{token, next}}},
		&mcp.ClientSessionOptions{ProtocolVersion: SessionProtocolVersion})
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { cs.Close() })
	return cs, nil
}

// CallTool calls tool with args on cs and returns the result, which may be a tool
// error; a protocol error, or no answer within timeout, fails tb.
func CallTool(tb testing.TB, cs *mcp.ClientSession, timeout time.Duration, tool string, args any) *mcp.CallToolResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		tb.Fatalf("call %s %v: %v", tool, args, err)
	}
	return res
}

// ResultText joins the text contents of a tool result with newlines, leaving out
// contents of other kinds.
func ResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolNames lists the tools cs is offered, by name in sorted order; an error, or no
// answer within timeout, fails tb.
func ToolNames(tb testing.TB, cs *mcp.ClientSession, timeout time.Duration) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		tb.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// WaitFor polls cond every 25ms until it holds, failing tb once timeout has passed.
// what names the awaited state as a clause after "until", e.g. "the gateway is
// ready", for the failure message.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return
			}
		case <-deadline.C:
			if cond() {
				return
			}
			tb.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
	}
}

// BuildPeers builds the Go main packages pkgs with [BuildBinary] and returns the one
// directory that holds them all, to put first on an upstream's PATH: the gateway's
// transport policy admits bare command names only, and each binary is named after
// its package's directory (e.g. "faultserver").
func BuildPeers(tb testing.TB, pkgs ...string) string {
	tb.Helper()
	var dir string
	for _, pkg := range pkgs {
		d := filepath.Dir(BuildBinary(tb, pkg))
		if dir != "" && d != dir {
			tb.Fatalf("mcptest: built binaries in two directories: %s, %s", dir, d)
		}
		dir = d
	}
	return dir
}

// PeersOnPATH builds pkgs with [BuildPeers] and puts their directory first on PATH
// until tb ends, for a gateway running in the test process. It uses tb.Setenv, so
// it cannot be used in parallel tests.
func PeersOnPATH(tb testing.TB, pkgs ...string) {
	tb.Helper()
	tb.Setenv("PATH", BuildPeers(tb, pkgs...)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// CopyExamplePolicy copies the example gateway's policy, examples/gateway/policy.yaml,
// into dir as policy.yaml and returns the copy's path.
func CopyExamplePolicy(tb testing.TB, dir string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(tb), "examples", "gateway", "policy.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	return WriteFile(tb, dir, "policy.yaml", data)
}

// WriteFile writes data to the file name in dir, readable by its owner only, and
// returns the file's path; an error fails tb.
func WriteFile(tb testing.TB, dir, name string, data []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
