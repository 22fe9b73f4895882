//lint:file-ignore SA1019 logging is deprecated from 2026-07-28 on, but upstreams still send log messages the gateway routes

package upstream

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

// startURLFixture runs the conformance fixture over streamable HTTP (both protocol
// lines: 2026-07-28 requests go to its stateless handler) and returns its endpoint.
func startURLFixture(t *testing.T, args ...string) string {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	cmd := exec.Command(bin, append([]string{"-listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(time.Minute):
		t.Fatal("the fixture did not say where it listens within a minute")
		return ""
	}
}

// A url server that offers protocol 2026-07-28 is spoken to at it, and keeps what
// the session-based line gave: a call's log messages reach its Log hook (asked for
// in each request's _meta), a subscription's updates reach OnResourceUpdated, and a
// relayed call gets the upstream's input_required round.
func TestURLUpstreamAt2026(t *testing.T) {
	t.Parallel()
	endpoint := startURLFixture(t, "-test-tools")
	ch := make(subUpdates, 10)
	u := newUpstream(t, ServerConfig{Name: "conf", URL: endpoint}, Options{
		Policy:            &TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}},
		OnResourceUpdated: ch.hook,
	})
	discover(t, u)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := u.acquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	version := c.cs.InitializeResult().ProtocolVersion
	u.release(c, true)
	if version != "2026-07-28" {
		t.Fatalf("negotiated protocol %q, want 2026-07-28", version)
	}

	var logs []string
	res, err := u.Call(ctx, "test_tool_with_logging", nil, &CallOptions{Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
		logs = append(logs, string(p.Level)+" "+p.Logger+" "+toString(p.Data))
	}})
	if err != nil || res.IsError {
		t.Fatalf("test_tool_with_logging: %v %+v", err, res)
	}
	if len(logs) != 3 || !strings.Contains(logs[0], "Tool execution started") {
		t.Errorf("log messages of the call = %q, want the fixture's three", logs)
	}

	if err := u.Subscribe(ctx, subWatched); err != nil {
		t.Fatalf("Subscribe at 2026-07-28: %v", err)
	}
	if _, err := u.Call(ctx, "warden_test_update_resource", []byte(`{"uri":"`+subWatched+`"}`), nil); err != nil {
		t.Fatal(err)
	}
	ch.next(t, "conf "+subWatched)

	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	round, err := u.Call(ctx, "test_input_required_result_request_state", nil, &CallOptions{Relay: &Relay{Capabilities: caps}})
	if err != nil || !round.NeedsInput() || round.RequestState == "" {
		t.Fatalf("relayed call: %v %+v, want an input_required round", err, round)
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
