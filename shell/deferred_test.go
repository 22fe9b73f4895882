package shell_test

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/shell"
)

// Builtins that store a script for bash to run later, or load code, are a second command
// the policy would never see: they are not simple. Their listing forms are.
func TestDeferredScriptsAreRefused(t *testing.T) {
	refused := map[string]string{
		"trap 'rm -rf /' EXIT":                    "trap action",
		"trap -- 'rm -rf /' INT":                  "trap action",
		"trap '' INT":                             "trap action",
		"sudo trap 'rm -rf /' EXIT":               "trap action",
		"mapfile -C 'rm -rf /' -c 1 arr":          "mapfile -C callback",
		"readarray -tC 'touch /tmp/x' arr":        "readarray -C callback",
		"enable -f /tmp/evil.so evil":             "enable -f",
		"env LANG=C bash -c \"trap 'rm x' EXIT\"": "trap action",
	}
	for cmd, want := range refused {
		a := shell.Analyze(cmd)
		if a.Simple || !strings.Contains(a.Problem, want) {
			t.Errorf("Analyze(%q) = simple %v, problem %q; want refused with %q", cmd, a.Simple, a.Problem, want)
		}
	}
	for _, cmd := range []string{"trap", "trap -l", "trap -p", "mapfile -t arr", "enable -n echo", "enable"} {
		if a := shell.Analyze(cmd); !a.Simple {
			t.Errorf("Analyze(%q) refused (%s); the listing form runs no script", cmd, a.Problem)
		}
	}
}
