package upstream_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/upstream"
)

// mcpNode parses text, an agent configuration, and returns the value of its mcp key.
// toolsGetenv is the environment the decoding tests see.
func toolsGetenv(name string) string {
	return map[string]string{"REMOTE_TOKEN": "remote-secret"}[name]
}

func mcpNode(t *testing.T, text string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "mcp" {
			return root.Content[i+1]
		}
	}
	t.Fatal("no mcp key")
	return nil
}

// The MCP section of an agent configuration reuses the gateway configuration's
// servers and transport sections, key for key.
func TestDecodeToolsConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	text := `mcp:
  servers:
    notes:
      command: notes-server
      args: [-dir, notes]
      env: {NOTES_MODE: rw}
      dir: work
    remote:
      url: https://mcp.example.com/mcp
      headers: {Authorization: "Bearer ${REMOTE_TOKEN}"}
      prefix: ""
  transport:
    allow_commands: true
    commands: [notes-server]
    allow_urls: true
    hosts: [mcp.example.com]
    max_connections_per_server: 2
  project_file: .mcp.json
  trust_project_settings: true
`
	got, err := upstream.DecodeToolsConfig(file, mcpNode(t, text), "mcp.", toolsGetenv)
	if err != nil {
		t.Fatal(err)
	}
	empty := ""
	want := upstream.ToolsConfig{
		Servers: []upstream.ServerConfig{
			{Name: "notes", Command: "notes-server", Args: []string{"-dir", "notes"}, Env: map[string]string{"NOTES_MODE": "rw"}, Dir: filepath.Join(dir, "work")},
			{Name: "remote", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer remote-secret"}, Prefix: &empty},
		},
		Transport:            upstream.TransportPolicy{AllowCommands: true, Commands: []string{"notes-server"}, AllowURLs: true, Hosts: []string{"mcp.example.com"}, MaxConnectionsPerServer: 2},
		ProjectFile:          filepath.Join(dir, ".mcp.json"),
		TrustProjectSettings: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}

	// The zero section: nothing to start, every transport denied.
	got, err = upstream.DecodeToolsConfig(file, mcpNode(t, "mcp: {}\n"), "mcp.", toolsGetenv)
	if err != nil || !cmp.Equal(got, upstream.ToolsConfig{}) {
		t.Errorf("empty section: %+v, %v", got, err)
	}
}

// Every problem is a located error, all of them at once, named under the prefix.
func TestDecodeToolsConfigErrors(t *testing.T) {
	text := `mcp:
  servers:
    notes:
      command: notes-server
      url: https://x.example.com/
    ok: {command: faultserver, argz: []}
  transport:
    allow_commands: "yes"
    commands: [./faultserver]
  trust_project_settings: 1
  project_files: .mcp.json
`
	_, err := upstream.DecodeToolsConfig("agent.yaml", mcpNode(t, text), "mcp.", toolsGetenv)
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *warden.ConfigError
		if !errors.As(e, &ce) || ce.Line == 0 {
			t.Errorf("not located: %v", e)
		}
		got = append(got, e.Error())
	}
	want := []string{
		`agent.yaml:11:3: unknown key "project_files" in mcp (known keys in mcp: servers, transport, project_file, trust_project_settings; did you mean "project_file"?)`,
		`agent.yaml:3:5: server "notes": give either command or url, not both (see the servers section of examples/gateway/gateway.yaml)`,
		`agent.yaml:6:32: unknown key "argz" in mcp.servers.ok (known keys in mcp.servers.ok: command, args, env, dir, url, headers, prefix, protocol; did you mean "args"?)`,
		`agent.yaml:8:21: mcp.transport.allow_commands must be true or false, got a string (write true or false)`,
		`agent.yaml:8:5: mcp.transport: commands[0] "./faultserver": a bare command name holds no '/' or '\' (fix the transport section)`,
		`agent.yaml:10:27: mcp.trust_project_settings must be true or false, got a number (write true or false)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "agent.yaml:") {
		t.Error(err)
	}
}
