package errlines

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"one", errors.New("policy.yaml:3: unknown key"), "policy.yaml:3: unknown key\n"},
		{"trailing newline", errors.New("bad\n\n"), "bad\n"},
		{"multi-line", errors.New("ERROR: <input>:1:5: undeclared\n | args.x\n | ....^"),
			"ERROR: <input>:1:5: undeclared\n     | args.x\n     | ....^\n"},
		{"joined and nested", errors.Join(errors.New("a"), errors.Join(errors.New("b"), errors.New("c\nd"))),
			"a\nb\nc\n    d\n"},
		{"a wrapped join is one error", fmt.Errorf("load: %w", errors.Join(errors.New("x"), errors.New("y"))), "load: x\n    y\n"},
	} {
		var b strings.Builder
		Write(&b, c.err)
		if b.String() != c.want {
			t.Errorf("%s: got %q, want %q", c.name, b.String(), c.want)
		}
	}
}
