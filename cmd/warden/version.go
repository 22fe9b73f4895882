package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// newVersionCommand is `warden version`; `warden --version` prints the same text.
func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the source revision this binary was built from",
		Long: `Print the module version of this binary and the version control revision it was
built from, its commit time and whether the work tree had uncommitted changes, as the
Go toolchain recorded them. A binary built by go run or go test records no revision:
the fields then say unknown. warden --version prints the same.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if _, err := io.WriteString(stdout, versionText()); err != nil {
				return internalError(err)
			}
			return nil
		},
	}
}

// versionText describes the running binary's build.
func versionText() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return formatVersion(bi)
}

// formatVersion renders build information (nil: none was recorded): the module
// version on the first line, then the revision, its time and the modified flag.
// A field that was not recorded says so: "(devel)" for a version-less module version,
// "unknown" for the VCS fields.
func formatVersion(bi *debug.BuildInfo) string {
	const unknown = "unknown (no version control information recorded, e.g. built by go run or go test)"
	version, module, goVersion := "(devel)", "unknown", "unknown"
	settings := map[string]string{}
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.Main.Path != "" {
			module = bi.Main.Path
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	field := func(key string) string {
		if v := settings[key]; v != "" {
			return v
		}
		return "unknown"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "warden %s\n", version)
	fmt.Fprintf(&b, "  module:   %s\n", module)
	fmt.Fprintf(&b, "  go:       %s\n", goVersion)
	if settings["vcs.revision"] == "" {
		fmt.Fprintf(&b, "  revision: %s\n", unknown)
	} else {
		fmt.Fprintf(&b, "  revision: %s\n", settings["vcs.revision"])
	}
	fmt.Fprintf(&b, "  time:     %s\n", field("vcs.time"))
	fmt.Fprintf(&b, "  modified: %s\n", field("vcs.modified"))
	return b.String()
}
