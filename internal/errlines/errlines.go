// Package errlines prints errors for a person at a terminal: one line per error of an
// errors.Join (nested joins flattened), with the continuation lines of a multi-line
// message (a CEL error with its caret, a YAML excerpt) indented under their first.
package errlines

import (
	"fmt"
	"io"
	"strings"
)

// Write prints err to w as the package comment describes. A trailing newline of a
// message is dropped, so every error ends in exactly one.
func Write(w io.Writer, err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if _, ok := e.(interface{ Unwrap() []error }); ok {
			Write(w, e)
			continue
		}
		msg := strings.TrimRight(e.Error(), "\n")
		fmt.Fprintln(w, strings.ReplaceAll(msg, "\n", "\n    "))
	}
}
