package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// completionShells are the shells `warden completion` writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

// newCompletionCommand is `warden completion SHELL`: the shell completion script for
// the command tree, from cobra's generators. (Cobra's own default completion command
// is turned off so that an unknown shell is a usage error like every other.)
func newCompletionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print the completion script for bash, zsh or fish to stdout. For example:

  source <(warden completion bash)                      # bash, this shell
  warden completion zsh > "${fpath[1]}/_warden"         # zsh, new shells
  warden completion fish > ~/.config/fish/completions/warden.fish

The bash script needs the bash-completion package. Exit code 2 for a shell other
than bash, zsh or fish.`,
		ValidArgs: completionShells,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("name one shell: %s", strings.Join(completionShells, ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(stdout, true)
			case "zsh":
				err = root.GenZshCompletion(stdout)
			case "fish":
				err = root.GenFishCompletion(stdout, true)
			default:
				return usageErrorf("unknown shell %q: warden completion supports %s", args[0], strings.Join(completionShells, ", "))
			}
			if err != nil {
				return internalError(err)
			}
			return nil
		},
	}
}
