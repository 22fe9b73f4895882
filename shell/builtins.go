package shell

import (
	"slices"
	"strings"
)

// builtinProblem refuses the bash builtins that evaluate their literal
// arguments as code: arithmetic, in which an array subscript such as
// a[$(cmd)] runs a command substitution, word expansion, or a callback.
// name is the lower-cased base name of the command; args are its
// arguments. The check applies wherever the command appears, also under
// a wrapper that would run an external program of that name instead: a
// refusal there costs nothing and needs no model of which one runs.
func builtinProblem(name string, args []string) string {
	switch name {
	case "declare", "typeset", "local", "export", "readonly":
		// Assignments and names with subscripts are evaluated; the
		// parser reports these as declaration clauses when they come
		// first, and here they come through builtin or command.
		return "declaration builtin '" + name + "'"
	case "let":
		return "let (arithmetic evaluation)"
	case "fc":
		return "fc (runs commands from the history or an editor)"
	case "printf":
		return namesProblem(name, &printfSpec, args, false)
	case "read":
		return namesProblem(name, &readSpec, args, true)
	case "mapfile", "readarray":
		return namesProblem(name, &mapfileSpec, args, true)
	case "wait":
		return namesProblem(name, &waitSpec, args, false)
	case "unset":
		return namesProblem(name, &unsetSpec, args, true)
	case "getopts":
		// getopts OPTSTRING NAME [ARG...]: NAME is assigned.
		i, _, problem := getoptsSpec.scan(args, nil)
		if problem != "" {
			return "getopts: " + problem
		}
		if i+1 < len(args) && !isIdentifier(args[i+1]) {
			return "getopts variable name is not an identifier"
		}
		return ""
	case "test", "[":
		// test -v NAME and -R NAME evaluate NAME's subscript.
		for i, a := range args {
			if (a == "-v" || a == "-R") && (i+1 >= len(args) || !isIdentifier(args[i+1])) {
				return name + " " + a + " with a name that is not an identifier"
			}
		}
		return ""
	case "compgen", "complete":
		// -W expands a word list, -C runs a command, -F a function.
		_, _, problem := compgenSpec.scan(args, func(o opt) string {
			switch o.name {
			case "W", "C", "F":
				return name + " -" + o.name + " (evaluates its argument)"
			}
			return ""
		})
		if strings.HasPrefix(problem, "unknown option") {
			return name + ": " + problem
		}
		return problem
	}
	return ""
}

var (
	printfSpec   = optSpec{short: "v:", strict: true}
	readSpec     = optSpec{short: "ersa:d:i:n:N:p:t:u:", strict: true}
	mapfileSpec  = optSpec{short: "d:u:n:O:s:tC:c:", strict: true}
	waitSpec     = optSpec{short: "fnp:", strict: true}
	unsetSpec    = optSpec{short: "fnv", strict: true}
	getoptsSpec  = optSpec{strict: true}
	compgenSpec  = optSpec{short: "abcdefgjksuvo:A:G:W:P:S:X:F:C:DEIpr", strict: true}
	identOptions = map[string]bool{"v": true, "a": true, "p": true}
)

// namesProblem checks a builtin that assigns to variables: the value of
// every option that names a variable (-v, -a, -p), and with operandsAreNames
// every operand, must be a plain identifier. An option the builtin does not
// have makes bash refuse the command, but is refused here too.
func namesProblem(name string, spec *optSpec, args []string, operandsAreNames bool) string {
	i, _, problem := spec.scan(args, func(o opt) string {
		if name == "mapfile" || name == "readarray" {
			if o.name == "C" {
				return name + " -C callback (a script bash runs per line)"
			}
			return ""
		}
		if identOptions[o.name] && o.hasVal && (name != "read" || o.name == "a") && !isIdentifier(o.value) {
			return name + " -" + o.name + " with a name that is not an identifier"
		}
		return ""
	})
	if problem != "" {
		if strings.HasPrefix(problem, "unknown option") {
			return name + ": " + problem
		}
		return problem
	}
	if operandsAreNames {
		for _, a := range args[i:] {
			if !isIdentifier(a) {
				return name + " with a variable name that is not an identifier"
			}
		}
	}
	return ""
}

// isIdentifier reports whether s is a bash name: a letter or underscore,
// then letters, digits and underscores.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// globSensitive lists, by lower-cased base name, the commands whose
// arguments choose what runs or what action is taken: every wrapper judged
// through, and programs with options or operands that run commands or
// select actions. An unquoted glob in an argument of one of them is refused,
// since a file name can turn into an option, a command or an action word.
var globSensitive = map[string]bool{
	// Wrappers judged through, and shells and eval.
	"sudo": true, "doas": true, "env": true, "command": true, "builtin": true,
	"exec": true, "nice": true, "nohup": true, "setsid": true, "time": true,
	"timeout": true, "xargs": true, "find": true, "busybox": true, "eval": true,
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true,
	"mksh": true, "rbash": true, "hush": true, "stdbuf": true, "ionice": true,
	"chrt": true, "taskset": true, "flock": true, "unshare": true, "nsenter": true,
	"watch": true, "strace": true, "ltrace": true, "su": true, "runuser": true,
	"setpriv": true, "chroot": true, "script": true, "systemd-run": true, "ssh": true,
	"source": true, ".": true, "trap": true, "jobs": true, "logsave": true,
	"prlimit": true, "dbus-run-session": true, "sg": true, "newgrp": true,
	"run-parts": true, "start-stop-daemon": true,
	// Builtins that take variable names or callbacks.
	"printf": true, "read": true, "mapfile": true, "readarray": true, "wait": true,
	"unset": true, "getopts": true, "test": true, "[": true, "compgen": true,
	"complete": true, "enable": true,
	// Programs whose options run commands or select actions.
	"git": true, "tar": true, "rsync": true, "scp": true, "sftp": true, "sed": true,
	"awk": true, "gawk": true, "mawk": true, "nawk": true, "perl": true, "python": true,
	"ruby": true, "node": true, "php": true, "lua": true, "sort": true, "rg": true,
	"less": true, "more": true, "man": true, "vi": true, "vim": true, "nvim": true,
	"emacs": true, "make": true, "zip": true, "7z": true, "wget": true, "curl": true,
	"parallel": true, "docker": true, "podman": true, "kubectl": true, "npm": true,
	"npx": true, "go": true, "cargo": true, "gdb": true, "tmux": true, "screen": true,
	"fakeroot": true, "ip": true, "tcpdump": true,
	"systemctl": true, "dpkg": true, "apt": true, "apt-get": true, "pip": true,
}

// isGlobSensitive reports whether name (lower-cased base name) is in
// globSensitive, also with a version suffix such as python3.12 or perl5.
func isGlobSensitive(name string) bool {
	if globSensitive[name] {
		return true
	}
	trimmed := strings.TrimRight(name, "0123456789.")
	return trimmed != name && trimmed != "" && globSensitive[trimmed]
}

// harmlessEnv reports whether setting the environment variable name, in
// env NAME=VALUE or sudo NAME=VALUE, cannot change which program runs or
// make it run other code. Everything else (PATH, LD_PRELOAD and every LD_*,
// BASH_ENV, ENV, SHELLOPTS, BASHOPTS, PS4, IFS, BASH_FUNC_*, GIT_*, PAGER,
// EDITOR, PYTHONSTARTUP, NODE_OPTIONS, ...) is refused: the list of names
// programs read to find code is open-ended, so only these are allowed.
func harmlessEnv(name string) bool {
	switch name {
	case "LANG", "LANGUAGE", "LC_ALL", "TZ", "TERM", "NO_COLOR", "CLICOLOR",
		"CLICOLOR_FORCE", "FORCE_COLOR", "COLUMNS", "LINES", "DEBIAN_FRONTEND",
		"CI":
		return true
	}
	return strings.HasPrefix(name, "LC_") && isIdentifier(name)
}

// envSettingProblem refuses a NAME=VALUE word handed to env, sudo or a
// similar wrapper unless harmlessEnv allows NAME.
func envSettingProblem(wrapper, setting string) string {
	name, value, _ := strings.Cut(setting, "=")
	if harmlessEnv(name) {
		if (strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, "LANG")) && strings.IndexByte(value, '/') >= 0 {
			// A locale name with a '/' is a path to locale files.
			return wrapper + " sets '" + name + "' to a path"
		}
		return ""
	}
	return wrapper + " sets environment variable '" + name + "' (only locale, time zone and terminal settings are allowed)"
}

// runsCode lists, by lower-cased base name, interpreters: programs whose
// arguments (or the files they name) are a program of their own, which this
// package does not judge. They are accepted like any program, so a policy
// that allows one with a trailing * allows any command.
var runsCode = []string{
	"awk", "bun", "deno", "ed", "emacs", "ex", "gawk", "gmake", "groovy", "gsed", "irb",
	"jshell", "lua", "luajit", "make", "man", "mawk", "nawk", "node", "nodejs", "osascript",
	"perl", "php", "pwsh", "pypy", "python", "r", "red", "rscript", "ruby", "sed", "tclsh",
	"vi", "vim", "nvim", "wish", "zx",
}

var runsCodeSet = func() map[string]bool {
	m := make(map[string]bool, len(runsCode))
	for _, n := range runsCode {
		m[n] = true
	}
	return m
}()

// RunsCode reports whether the program name (a command name as written or a
// base name, any case, with a version suffix such as python3.12 ignored) is
// an interpreter whose arguments are code that the analyzer does not judge:
// awk, sed, perl, python, ruby, node, php, lua, make, vim, ... Allowing such a
// program with a trailing * in a policy allows whatever it can run.
func RunsCode(name string) bool {
	name = strings.ToLower(baseName(name))
	if runsCodeSet[name] {
		return true
	}
	trimmed := strings.TrimRight(name, "0123456789.")
	return trimmed != name && trimmed != "" && runsCodeSet[trimmed]
}

// RunsCodePrograms returns the base names RunsCode recognizes, sorted.
func RunsCodePrograms() []string {
	out := slices.Clone(runsCode)
	slices.Sort(out)
	return out
}
