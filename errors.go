package warden

import (
	"fmt"
	"strings"
)

// ConfigError is a problem in a configuration or policy file, located by file, line and
// column (1-based; 0 when unknown), with a hint saying how to fix it.
type ConfigError struct {
	File   string
	Line   int
	Column int
	Msg    string
	Hint   string
}

// Error renders "file:line:col: msg (hint)".
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("<input>")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}
