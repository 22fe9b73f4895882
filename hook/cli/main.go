package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"
)

// Main runs the warden-hook program: args (without the program name) are a
// `warden hook` command line, so `warden-hook claude-code --policy FILE` is
// `warden hook claude-code --policy FILE`, with the same flags, output and exit code.
// It returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:   HookBinary,
		Short: "Warden as an agent CLI's hook (claude-code): what 'warden hook' does, in a binary that starts fast",
		Long: `warden-hook is 'warden hook' in a binary that links only what the hook needs, so that
Claude Code, which runs it before every tool call, waits a few milliseconds for it
rather than the whole warden's start-up. 'warden-hook claude-code ...' behaves exactly
as 'warden hook claude-code ...'; 'warden hook claude-code install' writes hooks that
run it.`,
		SilenceErrors: true, // Report prints errors, so that the exit code is ours
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(stdin)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &Error{Code: ExitUsage, Err: err, Usage: true}
	})
	root.AddCommand(NewClaudeCodeCommand(stdout, stderr))
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		Report(stderr, cmd, err)
	}
	return ExitCode(err)
}
