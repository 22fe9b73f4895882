package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/sqlite"
)

// TestInspectorSeesOnlyPermittedTools connects the MCP Inspector's command-line client
// (a black-box MCP client from npm) to the gateway over streamable HTTP with each
// client token, as a person following the README would.
func TestInspectorSeesOnlyPermittedTools(t *testing.T) {
	inspector, inspectorArgs := mcptest.InspectorCLI(t)
	mcptest.PeersOnPATH(t, "./examples/gateway/notes-server")
	dir := t.TempDir()
	mcptest.CopyExamplePolicy(t, dir)
	const readerToken, writerToken = "inspector-reader-token-1", "inspector-writer-token-2"
	cfgText := `
policy: policy.yaml
store: sqlite://w.db
transport: {allow_commands: true, commands: [notes-server]}
servers:
  notes: {command: notes-server, args: [-dir, notes]}
listen: 127.0.0.1:0
clients:
  - {principal: r, role: reader, token_sha256: ` + inbox.HashToken(readerToken) + `}
  - {principal: w, role: writer, token_sha256: ` + inbox.HashToken(writerToken) + `}
`
	cfg, err := gateway.ParseFile(filepath.Join(dir, "gateway.yaml"), []byte(cfgText), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gw, err := gateway.New(cfg, &gateway.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	if err := gw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(cfg.Path, gw.MCPHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	list := func(token string) ([]string, error) {
		args := append(slices.Clone(inspectorArgs), srv.URL+cfg.Path, "--transport", "http",
			"--header", "Authorization: Bearer "+token, "--method", "tools/list")
		out, err := exec.CommandContext(ctx, inspector, args...).Output()
		if err != nil {
			return nil, err
		}
		var res struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("inspector output is not a tools/list result: %v\n%s", err, out)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		return names, nil
	}
	got, err := list(readerToken)
	if err != nil {
		t.Fatalf("inspector with the reader token: %v", err)
	}
	want := []string{"mcp__notes__list_notes", "mcp__notes__read_note", "mcp__notes__search_notes"}
	if !slices.Equal(got, want) {
		t.Errorf("reader sees %v, want %v", got, want)
	}
	got, err = list(writerToken)
	if err != nil {
		t.Fatalf("inspector with the writer token: %v", err)
	}
	want = []string{"mcp__notes__delete_note", "mcp__notes__list_notes", "mcp__notes__read_note", "mcp__notes__search_notes", "mcp__notes__write_note"}
	if !slices.Equal(got, want) {
		t.Errorf("writer sees %v, want %v", got, want)
	}
	if got, err := list("not-a-configured-token"); err == nil {
		t.Errorf("an unknown token listed tools: %v", got)
	}
}
