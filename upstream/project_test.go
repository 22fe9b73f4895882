package upstream_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/upstream"
)

func writeProjectFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadProjectServers(t *testing.T) {
	t.Setenv("WARDEN_TEST_PROJECT_BEARER", "t0ken")
	path := writeProjectFile(t, `{
  "mcpServers": {
    "notes": {"command": "notes-server", "args": ["-dir", "notes"], "env": {"NOTES_MODE": "rw"}},
    "everything": {"type": "stdio", "command": "node", "args": []},
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${WARDEN_TEST_PROJECT_BEARER}"}},
    "plain": {"url": "https://other.example.com/mcp"},
    "streamy": {"type": "streamable-http", "url": "https://s.example.com/mcp"}
  }
}`)
	got, err := upstream.LoadProjectServers(path, true)
	if err != nil {
		t.Fatalf("LoadProjectServers: %v", err)
	}
	dir := filepath.Dir(path)
	want := []upstream.ServerConfig{
		{Name: "everything", Command: "node", Args: []string{}, Dir: dir},
		{Name: "notes", Command: "notes-server", Args: []string{"-dir", "notes"}, Env: map[string]string{"NOTES_MODE": "rw"}, Dir: dir},
		{Name: "plain", URL: "https://other.example.com/mcp"},
		{Name: "remote", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer t0ken"}, EnvRefs: []string{"WARDEN_TEST_PROJECT_BEARER"}},
		{Name: "streamy", URL: "https://s.example.com/mcp"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadProjectServers (-want +got):\n%s", diff)
	}

	// Trust is not permission: the loaded servers still meet the transport policy.
	var zero upstream.TransportPolicy
	for _, s := range got {
		var d *upstream.DeniedError
		if err := zero.Admit(context.Background(), s, nil); !errors.As(err, &d) {
			t.Errorf("Admit(%s) with the zero policy = %v, want *DeniedError", s.Name, err)
		}
	}
}

func TestLoadProjectServersEmpty(t *testing.T) {
	got, err := upstream.LoadProjectServers(writeProjectFile(t, `{"mcpServers": {}}`), true)
	if err != nil || len(got) != 0 {
		t.Fatalf("LoadProjectServers(empty) = %v, %v; want no servers, no error", got, err)
	}
}

func TestLoadProjectServersUntrusted(t *testing.T) {
	// The file does not even exist: untrusted means nothing is read.
	path := filepath.Join(t.TempDir(), "missing", ".mcp.json")
	got, err := upstream.LoadProjectServers(path, false)
	if got != nil || !errors.Is(err, upstream.ErrUntrustedProjectFile) {
		t.Fatalf("LoadProjectServers(untrusted) = %v, %v; want nil, ErrUntrustedProjectFile", got, err)
	}
	for _, want := range []string{path, "project_file: {path: " + path + ", trust: true}", "does not allow its commands or URLs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q should contain %q", err, want)
		}
	}

	// A readable file changes nothing.
	real := writeProjectFile(t, `{"mcpServers": {"x": {"command": "node"}}}`)
	if got, err := upstream.LoadProjectServers(real, false); got != nil || !errors.Is(err, upstream.ErrUntrustedProjectFile) {
		t.Errorf("LoadProjectServers(untrusted, readable) = %v, %v", got, err)
	}
}

func TestLoadProjectServersErrors(t *testing.T) {
	t.Setenv("WARDEN_TEST_PROJECT_UNSET", "")
	tests := []struct {
		name    string
		content string
		want    string // the error, after "project file <path>: "
	}{
		{"not JSON", `mcpServers: {}`, "invalid JSON: *"},
		{"empty file", ``, "invalid JSON: EOF"},
		{"trailing data", `{"mcpServers": {}} {}`, "invalid JSON: data after the top-level value"},
		{"top level array", `[]`, "the file must be a JSON object, got an array"},
		{"missing mcpServers", `{}`, `no "mcpServers" object`},
		{"unknown top-level key", `{"mcpServers": {}, "servers": {}}`, `unknown key "servers" at the top level (known: mcpServers)`},
		{"mcpServers null", `{"mcpServers": null}`, `"mcpServers" must be a JSON object, got null`},
		{"mcpServers array", `{"mcpServers": []}`, `"mcpServers" must be a JSON object, got an array`},
		{"duplicate server", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `duplicate key "mcpServers.a"`},
		{"duplicate field", `{"mcpServers": {"a": {"command": "x", "command": "y"}}}`, `duplicate key "mcpServers.a.command"`},
		{"duplicate env key", `{"mcpServers": {"a": {"command": "x", "env": {"K": "1", "K": "2"}}}}`, `duplicate key "mcpServers.a.env.K"`},
		{"duplicate top-level key", `{"mcpServers": {}, "mcpServers": {}}`, `duplicate key "mcpServers"`},
		{"server not an object", `{"mcpServers": {"a": "node"}}`, `server "a": the server must be a JSON object, got a string`},
		{"unknown server key", `{"mcpServers": {"a": {"command": "x", "cwd": "/"}}}`, `server "a": unknown key "cwd" (known: type, command, args, env, url, headers)`},
		{"command not a string", `{"mcpServers": {"a": {"command": ["node"]}}}`, `server "a": "command" must be a string, got an array`},
		{"command null", `{"mcpServers": {"a": {"command": null}}}`, `server "a": "command" is null`},
		{"command empty", `{"mcpServers": {"a": {"command": ""}}}`, `server "a": "command" is empty`},
		{"args not strings", `{"mcpServers": {"a": {"command": "x", "args": ["-p", 3]}}}`, `server "a": "args" must be an array of strings, got an array`},
		{"args a string", `{"mcpServers": {"a": {"command": "x", "args": "-p 3"}}}`, `server "a": "args" must be an array of strings, got a string`},
		{"env value number", `{"mcpServers": {"a": {"command": "x", "env": {"PORT": 3}}}}`, `server "a": "env" must be an object of string values, got an object`},
		{"headers null", `{"mcpServers": {"a": {"url": "https://e.com", "headers": null}}}`, `server "a": "headers" is null`},
		{"type number", `{"mcpServers": {"a": {"type": 1, "command": "x"}}}`, `server "a": "type" must be a string, got a number`},
		{"both command and url", `{"mcpServers": {"a": {"command": "x", "url": "https://e.com"}}}`, `server "a": give either "command" or "url", not both`},
		{"neither", `{"mcpServers": {"a": {"args": ["x"]}}}`, `server "a": give "command" (a local server) or "url" (a remote one)`},
		{"args on a url server", `{"mcpServers": {"a": {"url": "https://e.com", "args": []}}}`, `server "a": "args" and "env" apply only to a "command" server`},
		{"headers on a command server", `{"mcpServers": {"a": {"command": "x", "headers": {}}}}`, `server "a": "headers" apply only to a "url" server`},
		{"sse", `{"mcpServers": {"a": {"type": "sse", "url": "https://e.com/sse"}}}`, `server "a": type "sse" (the deprecated HTTP+SSE transport) is not supported; use a streamable HTTP endpoint with type "http"`},
		{"unknown type", `{"mcpServers": {"a": {"type": "ws", "url": "wss://e.com"}}}`, `server "a": unknown type "ws" (known: stdio, http, streamable-http)`},
		{"stdio with url", `{"mcpServers": {"a": {"type": "stdio", "url": "https://e.com"}}}`, `server "a": type "stdio" needs "command", not "url"`},
		{"http with command", `{"mcpServers": {"a": {"type": "http", "command": "x"}}}`, `server "a": type "http" needs "url", not "command"`},
		{"bad server name", `{"mcpServers": {"my server": {"command": "x"}}}`, `server name "my server": use 1 to 64 letters, digits, '_' or '-'`},
		{"unset variable", `{"mcpServers": {"a": {"url": "https://e.com", "headers": {"Authorization": "Bearer ${WARDEN_TEST_PROJECT_UNSET}"}}}}`, `server "a": headers.Authorization names ${WARDEN_TEST_PROJECT_UNSET}, which is not set in the gateway's environment`},
		{"default form", `{"mcpServers": {"a": {"command": "x", "env": {"K": "${HOME:-/root}"}}}}`, `server "a": env.K: only ${VAR} is expanded (no defaults or other forms)`},
		{"variable in args", `{"mcpServers": {"a": {"command": "x", "args": ["--key", "${HOME}"]}}}`, `server "a": args[1]: "${...}" in args is not expanded; write the value itself`},
		{"variable in url", `{"mcpServers": {"a": {"url": "https://${HOST}/mcp"}}}`, `server "a": "${...}" in command or url is not expanded; write the value itself`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeProjectFile(t, tt.content)
			got, err := upstream.LoadProjectServers(path, true)
			if got != nil || err == nil {
				t.Fatalf("LoadProjectServers = %v, %v; want nil and an error", got, err)
			}
			want := "project file " + path + ": " + tt.want
			if prefix, ok := strings.CutSuffix(want, "*"); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("error\n got %q\nwant prefix %q", err, prefix)
				}
			} else if err.Error() != want {
				t.Errorf("error\n got %q\nwant %q", err, want)
			}
		})
	}
}

func TestLoadProjectServersMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".mcp.json")
	_, err := upstream.LoadProjectServers(path, true)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadProjectServers(missing) = %v, want a not-exist error naming the file", err)
	}
}

func TestLoadProjectServersTooDeep(t *testing.T) {
	deep := `{"mcpServers": {"a": {"command": "x", "env": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`
	_, err := upstream.LoadProjectServers(writeProjectFile(t, deep), true)
	if err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Errorf("LoadProjectServers(deep) = %v, want a nesting error", err)
	}
}
