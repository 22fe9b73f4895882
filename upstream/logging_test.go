//lint:file-ignore SA1019 the upstream log messages of the 2025 protocol line, deprecated from 2026-07-28 on

package upstream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

// The log messages an upstream sends during a call reach that call's Log hook, in
// order, whatever level: the Server asked the upstream for every level.
func TestUpstreamCallLogs(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	cfg := ServerConfig{Name: "conf", Command: "conformanceserver", Args: []string{"-stdio"}}
	policy := &TransportPolicy{AllowCommands: true, Commands: []string{"conformanceserver"}}
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	u, err := New(cfg, &Options{Policy: policy, Pins: openPinStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close(context.Background()) })
	if _, _, err := u.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	res, err := u.Call(context.Background(), "test_tool_with_logging", nil, &CallOptions{
		Log: func(_ context.Context, p *mcp.LoggingMessageParams) {
			got = append(got, fmt.Sprintf("%s %s %v", p.Level, p.Logger, p.Data))
		},
	})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	want := []string{
		"info test_tool_with_logging Tool execution started",
		"info test_tool_with_logging Tool processing data",
		"info test_tool_with_logging Tool execution completed",
	}
	if !slices.Equal(got, want) {
		t.Errorf("log messages %q, want %q", got, want)
	}
	// Without a hook the messages go to the Server's log, and the call is unaffected.
	if res, err := u.Call(context.Background(), "test_tool_with_logging", nil, nil); err != nil || res.IsError {
		t.Fatalf("call without a hook: %v %+v", err, res)
	}
}
