package shell_test

import (
	"testing"

	"github.com/wardenhq/warden/shell"
)

func TestZZBase(t *testing.T) {
	n := 0
	for _, tt := range bypassTests {
		if a := shell.Analyze(tt.in); a.Simple {
			n++
		}
	}
	t.Logf("%d of %d simple on base", n, len(bypassTests))
}
