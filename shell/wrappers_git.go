package shell

import (
	"slices"
	"strings"
)

// This file holds git's judging: the global options and subcommand options that
// set configuration or run a command given on the command line.

// git refuses, unless the analysis allows git configuration, the global
// options that set configuration, choose another repository (and so its
// configuration) or where git finds its programs (-c, --config-env, -C,
// --git-dir, --exec-path=DIR): configuration keys such as alias.*,
// core.pager, core.fsmonitor, core.sshCommand, core.editor, core.hooksPath,
// diff.external, credential.helper, sequence.editor and gpg.program run
// commands. Without the opt-in it also refuses the subcommands and options
// that run a command given on the command line, and git config writes.
func (an *analyzer) git(args []string) string {
	i := 0
	for i < len(args) {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			break
		}
		i++
		switch {
		case a == "--":
			return ""
		case a == "-c", strings.HasPrefix(a, "--config-env"), strings.HasPrefix(a, "--exec-path="):
			if !an.opts.AllowGitConfig {
				name, _, _ := strings.Cut(a, "=")
				return "git " + name + " (git configuration can run commands)"
			}
			if a == "-c" || a == "--config-env" {
				i++
			}
		case a == "-C", a == "--git-dir", strings.HasPrefix(a, "--git-dir="):
			// Another repository brings its own configuration: a bare
			// repository anyone could write (in /tmp, say) holds a config
			// file with core.pager or core.fsmonitor.
			if !an.opts.AllowGitConfig {
				name, _, _ := strings.Cut(a, "=")
				return "git " + name + " (another repository's configuration can run commands)"
			}
			if !strings.Contains(a, "=") {
				i++
			}
		case a == "--work-tree", a == "--namespace",
			a == "--super-prefix", a == "--attr-source", a == "--list-cmds":
			i++
		case gitFlags[a], strings.HasPrefix(a, "--work-tree="), strings.HasPrefix(a, "--namespace="),
			strings.HasPrefix(a, "--super-prefix="), strings.HasPrefix(a, "--attr-source="),
			strings.HasPrefix(a, "--list-cmds="):
		default:
			// A global option not modeled could take a value and move the
			// subcommand.
			return "git: unknown global option '" + a + "'"
		}
	}
	if i >= len(args) {
		return ""
	}
	sub, rest := args[i], args[i+1:]
	// git help NAME and git SUB --help show a manual page: git runs man (and man its
	// formatters) for a page the command names, none of which the check would list.
	// man can be called directly, and is judged as itself.
	if sub == "help" && slices.ContainsFunc(rest, func(a string) bool { return a == "--" || !strings.HasPrefix(a, "-") }) {
		return "git help NAME (runs man for the page; call man directly)"
	}
	for _, a := range rest {
		if a == "--" {
			break
		}
		if len(a) >= 4 && strings.HasPrefix("--help", a) {
			return "git " + sub + " " + a + " (runs man for the page; call man directly)"
		}
	}
	if an.opts.AllowGitConfig {
		return ""
	}
	switch sub {
	case "mergetool", "difftool", "web--browse", "instaweb":
		// These run the tool a configuration key names (mergetool.<tool>.cmd,
		// difftool.<tool>.cmd, browser.<tool>.cmd, instaweb.httpd) through a shell.
		return "git " + sub + " (runs a tool its configuration names)"
	case "filter-branch":
		return "git filter-branch (runs its filters as shell commands)"
	case "bisect":
		if len(rest) > 0 && rest[0] == "run" {
			return "git bisect run (runs a command)"
		}
	case "submodule":
		for _, a := range rest {
			if a == "foreach" {
				return "git submodule foreach (runs a command)"
			}
		}
	case "config":
		if !gitConfigReadOnly(rest) {
			return "git config writing (keys such as alias.* and core.pager run commands)"
		}
	}
	for _, a := range rest {
		if a == "--" {
			break
		}
		if gitRunsCommand(sub, a) {
			name, _, _ := strings.Cut(a, "=")
			return "git " + sub + " " + name + " (runs a command)"
		}
	}
	return ""
}

// gitFlags are git's global options that take no value.
var gitFlags = map[string]bool{
	"-p": true, "--paginate": true, "-P": true, "--no-pager": true, "--bare": true,
	"--no-replace-objects": true, "--no-lazy-fetch": true, "--no-optional-locks": true,
	"--no-advice": true, "--literal-pathspecs": true, "--glob-pathspecs": true,
	"--noglob-pathspecs": true, "--icase-pathspecs": true, "--exec-path": true,
	"--html-path": true, "--man-path": true, "--info-path": true, "-v": true,
	"--version": true, "-h": true, "--help": true,
}

// gitCommandOptions lists, per subcommand ("" for any), the long options
// that take a command to run. git accepts any unambiguous prefix of a long
// option, so a prefix of one of these (at least "--" and two letters) is
// refused too, within the subcommands that have it.
var gitCommandOptions = map[string][]string{
	"":           {"--upload-pack", "--receive-pack"},
	"rebase":     {"--exec"},
	"archive":    {"--exec", "--remote"},
	"push":       {"--exec"},
	"send-pack":  {"--exec"},
	"difftool":   {"--extcmd"},
	"grep":       {"--open-files-in-pager"},
	"clone":      {"--config", "--template"},
	"send-email": {"--sendmail-cmd", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd"},
}

// gitRunsCommand reports whether a is a subcommand option that takes a
// command to run.
func gitRunsCommand(sub, a string) bool {
	if strings.HasPrefix(a, "--") {
		given, _, _ := strings.Cut(a, "=")
		for _, key := range []string{"", sub} {
			for _, p := range gitCommandOptions[key] {
				if given == p || (len(given) >= 4 && strings.HasPrefix(p, given)) {
					return true
				}
			}
		}
		return false
	}
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	flags := a[1:]
	switch sub {
	case "rebase", "difftool":
		return strings.ContainsRune(flags, 'x')
	case "grep":
		return strings.ContainsRune(flags, 'O')
	case "clone", "fetch", "pull", "ls-remote", "archive":
		return strings.ContainsRune(flags, 'u') || (sub == "clone" && strings.ContainsRune(flags, 'c'))
	}
	return false
}

// gitConfigReadOnly reports whether git config args only read.
func gitConfigReadOnly(args []string) bool {
	read := false
	for _, a := range args {
		switch a {
		case "get", "list", "--get", "--get-all", "--get-regexp", "--get-urlmatch",
			"--list", "-l", "--get-color", "--get-colorbool":
			read = true
		case "set", "unset", "rename-section", "remove-section", "edit", "--add",
			"--unset", "--unset-all", "--replace-all", "--rename-section",
			"--remove-section", "-e", "--edit":
			return false
		}
	}
	return read
}
