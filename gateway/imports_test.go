package gateway_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The import rules of the MCP packages, checked on the real package graph (go list
// -deps, so indirect imports count): pin is below upstream, upstream below the
// gateway, and the inbox uses neither the gateway nor the upstream client. Nothing
// here imports a command.
func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	const mod = "github.com/wardenhq/warden/"
	forbidden := map[string][]string{
		"pin":             {"upstream", "gateway", "inbox", "cmd/"},
		"upstream":        {"gateway", "inbox", "cmd/"},
		"gateway":         {"cmd/"},
		"inbox":           {"gateway", "upstream", "cmd/"},
		"internal/fanout": {"pin", "upstream", "gateway", "inbox", "cmd/"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			rest, ok := strings.CutPrefix(dep, mod)
			if !ok {
				continue
			}
			for _, b := range bad {
				if rest == b || strings.HasPrefix(rest, strings.TrimSuffix(b, "/")+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
