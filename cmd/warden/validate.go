package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/policy"
)

func newValidateCommand(stdout, stderr io.Writer) *cobra.Command {
	var role string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Validate policy files",
		Long: `Validate loads each policy file strictly and prints its revision, or every
problem found, each located by file, line and column with a hint. The exit code is 2
when any file is invalid.`,
		Args: func(_ *cobra.Command, files []string) error {
			if len(files) == 0 {
				return usageErrorf("name at least one policy file")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, files []string) error {
			return runValidate(stdout, stderr, files, role)
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "active role to select (default: each file's active_role)")
	return cmd
}

// runValidate loads each file and prints "<file>: ok (revision sha256:...)" to stdout,
// or the file's errors to stderr, one per line. It returns an exit-2 error when any file
// is invalid.
func runValidate(stdout, stderr io.Writer, files []string, role string) error {
	invalid := false
	for _, file := range files {
		pol, err := policy.LoadFile(file, &policy.LoadOptions{Role: role})
		if err != nil {
			invalid = true
			writeErrors(stderr, err)
			continue
		}
		if _, err := fmt.Fprintf(stdout, "%s: ok (revision %s)\n", file, pol.Revision()); err != nil {
			return internalError(err)
		}
	}
	if invalid {
		return silentExit(exitUsage)
	}
	return nil
}
