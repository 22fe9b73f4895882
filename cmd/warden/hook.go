package main

// This file is `warden hook`: its claude-code subcommand (Warden as Claude Code's
// PreToolUse hook, and install) is package hook/cli, which the slim warden-hook binary
// runs too, so that both answer alike.

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/hook/cli"
)

// newHookCommand is `warden hook`, the parent of the agent-CLI hook adapters.
func newHookCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Decide an agent CLI's tool calls from its own hook (claude-code)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(cli.NewClaudeCodeCommand(stdout, stderr))
	return cmd
}

// hookExitError is the *exitError for an error of package hook/cli (which carries its
// exit code as a *cli.Error), so that exitCode and reportError treat it as their own.
func hookExitError(err error) (*exitError, bool) {
	var ce *cli.Error
	if !errors.As(err, &ce) {
		return nil, false
	}
	return &exitError{code: ce.Code, err: ce.Err, usage: ce.Usage}, true
}
