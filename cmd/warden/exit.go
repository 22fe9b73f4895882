package main

import (
	"errors"
	"fmt"

	"github.com/wardenhq/warden"
)

// Exit codes. A check reports its verdict through the exit code so that scripts can
// branch on it without parsing output; everything that is not a verdict is 1 or 2.
const (
	exitAllow    = 0 // the call would run
	exitInternal = 1 // something broke, or (warden test) a case failed
	exitUsage    = 2 // bad flags or arguments, or a bad policy or test file
	exitDeny     = 3 // the call would be refused
	exitAsk      = 4 // a person would be asked
	exitHalt     = 5 // the call would be refused and the run ended
)

// exitError carries an exit code out of a command. A nil err means the command already
// said everything it had to say (a check verdict, a test failure) and nothing more is
// printed.
type exitError struct {
	code int
	err  error
	// usage marks errors about how the command was called; they are followed by a pointer
	// to --help.
	usage bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf reports a command-line mistake: exit 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...), usage: true}
}

// configError reports a policy or test file that cannot be used: exit 2. err is printed
// as is; it is usually one or more located *warden.ConfigError joined with errors.Join.
func configError(err error) error {
	return &exitError{code: exitUsage, err: err}
}

// internalError reports a failure that is not the user's: exit 1.
func internalError(err error) error {
	return &exitError{code: exitInternal, err: err}
}

// cmdError ends a command with code and a message (not a usage error: no pointer to
// --help).
func cmdError(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf("warden: "+format, args...)}
}

// silentExit ends the command with code and prints nothing more.
func silentExit(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

// effectExitCode maps a decision's effect to the exit code of `warden check`. An effect
// outside the vocabulary refuses, like everywhere else (fail closed).
func effectExitCode(e warden.Effect) int {
	switch e {
	case warden.Allow:
		return exitAllow
	case warden.Ask:
		return exitAsk
	case warden.Halt:
		return exitHalt
	}
	return exitDeny
}

// exitCode returns the process exit code for what a command returned. An error that is
// not an *exitError comes from cobra's own parsing (unknown command, unknown flag,
// missing required flag, wrong number of arguments), so it is a usage error.
func exitCode(err error) int {
	if err == nil {
		return exitAllow
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if he, ok := hookExitError(err); ok {
		return he.code
	}
	return exitUsage
}
