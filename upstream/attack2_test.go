package upstream_test

// Attacks on issue 13's MCP adapter (attacker 2), against the fault server started as
// a real child process.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/upstream"
)

// Found by an attack, and fixed (admission refuses a project server whose ${VAR}
// names a secret): ChildEnv filters a child's environment by variable NAME only ("a
// secret named in a server's env is dropped too"), but a project file may expand
// ${VAR} from Warden's own environment into an env value under any name, so a trusted
// .mcp.json could rename a secret past the filter: {"env": {"NOTES":
// "${ATTACK2_API_KEY}"}}. Trusting a project file is documented as "not permission".
func TestAttack2ProjectFileRenamesASecretPastTheEnvFilter(t *testing.T) {
	faultOnPATH(t)
	t.Setenv("ATTACK2_API_KEY", "sk-attack2-secret")
	t.Setenv("ATTACK2_MODE", "plain")
	file := mcptest.WriteFile(t, t.TempDir(), ".mcp.json", []byte(`{"mcpServers": {
		"proj": {"command": "faultserver", "args": ["-mode", "ok"], "env": {"NOTES": "${ATTACK2_API_KEY}"}},
		"fine": {"command": "faultserver", "args": ["-mode", "ok"], "env": {"NOTES": "${ATTACK2_MODE}"}}}}`))
	reg, tools := registerTools(t, upstream.ToolsConfig{ProjectFile: file, TrustProjectSettings: true, Transport: admitFault}, nil)
	var denied *upstream.DeniedError
	var found bool
	for _, p := range tools.Problems() {
		if errors.As(p, &denied) && denied.Server == "proj" {
			found = true
			want := `server "proj": its project file passes ${ATTACK2_API_KEY}, a secret by the transport policy's env_deny patterns, into its env or headers; a project file does not get Warden's secrets (under any name): configure the server in Warden's own configuration, or set keep_secret_env`
			if denied.Message != want {
				t.Errorf("denial %q, want %q", denied.Message, want)
			}
		}
	}
	if !found {
		t.Errorf("the server passing a secret was not refused: problems %v", tools.Problems())
	}
	g := bind(t, reg, mustPolicy(t, "version: 1\nmode: rules\nrules:\n  allow:\n    mcp__proj__getenv: ['*']\n    mcp__fine__getenv: ['*']\n"))
	if _, ok := g.Tool("mcp__proj__getenv"); ok {
		t.Error("the refused server's tools were registered")
	}
	out, err := g.Call(context.Background(), warden.Call{ID: "1", Tool: "mcp__fine__getenv", Args: mustArgs(t, "name", "NOTES")})
	if err != nil || out.Status != warden.StatusRan || !strings.Contains(out.ModelText, "plain") {
		t.Errorf("a non-secret reference: %v %+v", err, out)
	}
}

// Held: a trusted project file whose server the transport policy denies starts
// nothing (no process ever wrote the marker) and registers nothing, and the deny_all
// policy refuses an admitted server's tools at call time without calling upstream.
func TestAttack2DeniedProjectServerNeverStarts(t *testing.T) {
	faultOnPATH(t)
	marker := filepath.Join(t.TempDir(), "pids")
	file := mcptest.WriteFile(t, t.TempDir(), ".mcp.json", []byte(`{"mcpServers": {"proj": {"command": "faultserver", "args": ["-mode", "ok", "-marker", "`+marker+`"]}}}`))
	_, tools := registerTools(t, upstream.ToolsConfig{ProjectFile: file, TrustProjectSettings: true,
		Transport: upstream.TransportPolicy{AllowCommands: true, Commands: []string{"other"}}}, nil)
	if n := tools.Names(); len(n) != 0 {
		t.Errorf("registered %v", n)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the denied server was started: %v", err)
	}

	reg, _ := registerTools(t, upstream.ToolsConfig{Servers: []upstream.ServerConfig{faultConfig("-marker", marker)}, Transport: admitFault}, nil)
	g := bind(t, reg, mustPolicy(t, "version: 1\nmode: deny_all\n"))
	before, _ := os.ReadFile(marker)
	out, _ := g.Call(context.Background(), warden.Call{ID: "1", Tool: "mcp__fault__pid", Args: warden.Args{}})
	if out.Status == warden.StatusRan || out.Executed {
		t.Errorf("deny_all ran a discovered tool: %+v", out)
	}
	if after, _ := os.ReadFile(marker); string(after) != string(before) {
		t.Errorf("a call under deny_all started a server")
	}
}

func mustArgs(t *testing.T, kv ...any) warden.Args {
	t.Helper()
	a, err := warden.NewArgs(kv...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
