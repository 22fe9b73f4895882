package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/errlines"
)

// Exit codes of the hook commands. Claude Code blocks a tool call only on exit 2, so
// every PreToolUse failure exits 2; a PostToolUse failure (the tool already ran) and an
// install that broke exit 1.
const (
	ExitOK       = 0 // a decision was written, or the command did what it was asked
	ExitInternal = 1 // something broke where nothing can be blocked any more
	ExitUsage    = 2 // a refusal (deny on stdout), bad usage, or a file that cannot be used
)

// Error ends a command with an exit code. A nil Err means the command already said
// everything it had to say (a refusal on stdout and stderr): nothing more is printed.
type Error struct {
	Code int
	Err  error
	// Usage marks errors about how the command was called; [Report] follows them with
	// a pointer to --help.
	Usage bool
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the process exit code for what a command returned: 0 for nil, an
// [*Error]'s code, and 2 for anything else (cobra's own parsing errors are usage
// errors).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitUsage
}

// Report prints what a command returned the way `warden` prints it: a usage error
// (ours or cobra's) as "warden: ERR" and a pointer to cmd's --help, another error as
// it is, one line per joined error, continuation lines indented.
func Report(stderr io.Writer, cmd *cobra.Command, err error) {
	var e *Error
	if errors.As(err, &e) && !e.Usage {
		if e.Err != nil {
			errlines.Write(stderr, e.Err)
		}
		return
	}
	fmt.Fprintf(stderr, "warden: %v\n", err)
	if cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
}

func usageErrorf(format string, args ...any) error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, args...), Usage: true}
}

func configError(err error) error { return &Error{Code: ExitUsage, Err: err} }

func internalError(err error) error { return &Error{Code: ExitInternal, Err: err} }

func silentExit(code int) error {
	if code == 0 {
		return nil
	}
	return &Error{Code: code}
}
