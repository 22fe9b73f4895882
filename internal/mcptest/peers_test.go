package mcptest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

func TestRepoRoot(t *testing.T) {
	root := mcptest.RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "upstream", "servers.go")); err != nil {
		t.Errorf("RepoRoot() = %s, which does not hold upstream/servers.go: %v", root, err)
	}
}

// The pinned reference server starts over stdio and answers initialize and
// tools/list.
func TestEverythingServer(t *testing.T) {
	command, args := mcptest.EverythingServer(t)
	if command != "node" || len(args) != 2 || args[1] != "stdio" || !filepath.IsAbs(args[0]) {
		t.Fatalf("EverythingServer() = %q %q", command, args)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(command, args...), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name == "" {
		t.Errorf("initialize: no server info")
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "echo") {
		t.Errorf("tools/list = %q, want it to hold echo", names)
	}
}

func TestBuildBinary(t *testing.T) {
	first := mcptest.BuildBinary(t, "./examples/gateway/notes-server")
	if second := mcptest.BuildBinary(t, "./examples/gateway/notes-server"); second != first {
		t.Errorf("second BuildBinary = %s, want the cached %s", second, first)
	}
	if info, err := os.Stat(first); err != nil || info.Mode()&0o111 == 0 {
		t.Errorf("built binary %s: %v", first, err)
	}
}
