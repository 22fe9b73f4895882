package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/errlines"
)

// run executes the warden command line args (without the program name) and returns the
// process exit code. It is what tests call in-process: nothing process-wide changes.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIn(ctx, &process{}, args, stdout, stderr)
}

// runIn is run in the process proc: main's, or a zero one that changes nothing
// process-wide.
func runIn(ctx context.Context, proc *process, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr, proc)
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		reportError(stderr, cmd, err)
	}
	return exitCode(err)
}

// newRootCommand builds the command tree. Output goes to stdout, diagnostics to stderr.
// Every subcommand parses its flags into the options of its program (see program),
// builds the program and executes it; the error it returns carries the exit code.
func newRootCommand(stdout, stderr io.Writer, proc *process) *cobra.Command {
	root := &cobra.Command{
		Use:   "warden",
		Short: "Fail-closed governance for AI-agent tool calls",
		Long: `Warden decides whether an AI agent's tool call may run.

Exit codes: 0 allow (or success), 1 internal error or failing tests,
2 bad usage or a bad policy or test file, 3 deny, 4 ask, 5 halt.`,
		SilenceErrors: true, // run prints errors itself, so that it controls the exit code
		SilenceUsage:  true, // a wrong flag gets a pointer to --help, not the whole usage text
	}
	root.CompletionOptions.DisableDefaultCmd = true
	// --version prints what `warden version` prints.
	root.Version = versionText()
	root.SetVersionTemplate("{{.Version}}")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err, usage: true}
	})
	root.AddCommand(
		newCheckCommand(stdout),
		newTestCommand(stdout, stderr),
		newValidateCommand(stdout, stderr),
		newHookCommand(stdout, stderr),
		newApprovalsCommand(stdout, proc),
		newAuditCommand(stdout, proc),
		newDemoCommand(stdout),
		newRunCommand(stdout, stderr),
		newServeCommand(stdout, stderr, proc),
		newPinsCommand(stdout),
		newVersionCommand(stdout),
		newCompletionCommand(stdout),
	)
	return root
}

// reportError prints what a command returned: usage errors with a pointer to the
// command's help, other errors as they are (located policy errors are one per line).
func reportError(stderr io.Writer, cmd *cobra.Command, err error) {
	if he, ok := hookExitError(err); ok {
		err = he
	}
	var ee *exitError
	if errors.As(err, &ee) && !ee.usage {
		if ee.err != nil {
			errlines.Write(stderr, ee.err)
		}
		return
	}
	// A usage error, ours or cobra's.
	fmt.Fprintf(stderr, "warden: %v\n", err)
	if cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
}
