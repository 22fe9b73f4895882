package shell

import (
	"strings"
	"unicode"
)

// This file holds the wrappers judged through besides the classic ones in
// wrappers.go: scheduling, namespace, tracing and user-switching tools,
// watch, script, systemd-run and ssh. Their option tables are in
// wrappers_options.go, git's command-running options in wrappers_git.go.

// chrt [OPTION]... PRIORITY COMMAND; with -p or -m nothing is run.
func (an *analyzer) chrt(args []string, depth int) string {
	noCommand := false
	i, _, problem := chrtSpec.scan(args, func(o opt) string {
		switch o.name {
		case "p", "pid", "m", "max", "h", "help", "V", "version":
			noCommand = true
		}
		return ""
	})
	if problem != "" {
		return "chrt: " + problem
	}
	rest := args[i:]
	if noCommand {
		return ""
	}
	if len(rest) > 0 && isNumber(rest[0]) {
		rest = rest[1:]
	}
	return an.wrap(rest, depth)
}

// flock [OPTION]... FILE COMMAND..., or FILE -c SCRIPT, or FD.
func (an *analyzer) flock(args []string, depth int) string {
	i, _, problem := flockSpec.scan(args, nil)
	if problem != "" {
		return "flock: " + problem
	}
	rest := args[i:]
	if len(rest) < 2 {
		return ""
	}
	if rest[1] == "-c" || rest[1] == "--command" {
		if len(rest) != 3 {
			return "flock -c takes exactly one command"
		}
		return an.viaShell("sh", "in flock -c command: ", rest[2], depth)
	}
	return an.wrap(rest[1:], depth)
}

// unshare and nsenter [OPTION]... [COMMAND...]; with no command they start
// $SHELL, which reads its commands from standard input.
func (an *analyzer) namespaced(name string, spec *optSpec, args []string, depth int) string {
	info := false
	i, _, problem := spec.scan(args, func(o opt) string {
		switch o.name {
		case "h", "help", "V", "version":
			info = true
		}
		return ""
	})
	if problem != "" {
		return name + ": " + problem
	}
	if i >= len(args) && !info {
		return defaultShell(name)
	}
	return an.wrap(args[i:], depth)
}

// watch [OPTION]... COMMAND: the words joined by spaces are a script for
// sh -c, or with -x the command itself.
func (an *analyzer) watch(args []string, depth int) string {
	exec := false
	i, _, problem := watchSpec.scan(args, func(o opt) string {
		if o.name == "x" || o.name == "exec" {
			exec = true
		}
		return ""
	})
	if problem != "" {
		return "watch: " + problem
	}
	rest := args[i:]
	if len(rest) == 0 {
		return ""
	}
	if exec {
		return an.wrap(rest, depth)
	}
	return an.viaShell("sh", "in watch command: ", strings.Join(rest, " "), depth)
}

// strace and ltrace [OPTION]... COMMAND. strace -o |CMD pipes its output
// into a shell command, and -E sets the traced command's environment.
func (an *analyzer) tracer(name string, spec *optSpec, args []string, depth int) string {
	i, _, problem := spec.scan(args, func(o opt) string {
		switch o.name {
		case "o", "output":
			if strings.HasPrefix(o.value, "|") || strings.HasPrefix(o.value, "!") {
				return name + " -o with a pipe runs a shell command"
			}
		case "E", "env":
			if name == "strace" {
				return envSettingProblem("strace -E", o.value)
			}
		}
		return ""
	})
	if problem != "" {
		if strings.HasPrefix(problem, "unknown option") {
			return name + ": " + problem
		}
		return problem
	}
	return an.wrap(args[i:], depth)
}

// su and runuser: -c COMMAND (and --session-command) is a script for the
// user's shell; operands are an optional "-", the user, and arguments
// handed to that shell (which may themselves hold -c SCRIPT). runuser -u
// USER COMMAND... runs the command itself. -s picks the program that runs
// the command and is refused.
func (an *analyzer) su(name string, args []string, depth int) string {
	var scripts []string
	user, info := false, false
	operands, problem := suSpec.scanPermuted(args, func(o opt) string {
		switch o.name {
		case "s", "shell":
			return name + " -s (chooses the program that runs the command)"
		case "w", "whitelist-environment":
			return name + " -w (keeps environment variables that can change what runs)"
		case "c", "command", "session-command":
			scripts = append(scripts, o.value)
		case "u", "user":
			if name != "runuser" {
				return name + ": unknown option '-u'"
			}
			user = true
		case "h", "help", "V", "version":
			info = true
		case "l", "login":
			return name + " -l (a login shell runs the account's startup files)"
		}
		return ""
	})
	if problem != "" {
		if strings.HasPrefix(problem, "unknown option") {
			return name + ": " + problem
		}
		return problem
	}
	if user {
		if len(scripts) > 0 {
			return ""
		}
		return an.wrap(operands, depth)
	}
	if len(operands) > 0 && operands[0] == "-" {
		return name + " - (a login shell runs the account's startup files)"
	}
	if len(operands) > 1 {
		if problem := shellOptionsProblem(name, operands[1:]); problem != "" {
			return problem
		}
		if script, ok := shellScript(operands[1:]); ok {
			scripts = append(scripts, script)
		}
	}
	if len(scripts) == 0 {
		if info {
			return ""
		}
		if len(operands) > 1 {
			return name + " hands its arguments to a shell that runs a script file"
		}
		return defaultShell(name)
	}
	for _, s := range scripts {
		if problem := an.viaShell("bash", "in "+name+" -c command: ", s, depth); problem != "" {
			return problem
		}
	}
	return ""
}

// chroot [OPTION]... NEWROOT [COMMAND...]. The command is looked up inside
// NEWROOT, so its name says which program runs only as far as the policy
// trusts NEWROOT.
func (an *analyzer) chroot(args []string, depth int) string {
	i, _, problem := chrootSpec.scan(args, nil)
	if problem != "" {
		return "chroot: " + problem
	}
	if i >= len(args) {
		return ""
	}
	if i+1 >= len(args) {
		return defaultShell("chroot")
	}
	return an.wrap(args[i+1:], depth)
}

// script [OPTION]... [FILE]: -c COMMAND is a script for $SHELL -c.
func (an *analyzer) scriptCmd(args []string, depth int) string {
	var scripts []string
	info := false
	_, problem := scriptSpec.scanPermuted(args, func(o opt) string {
		switch o.name {
		case "c", "command":
			scripts = append(scripts, o.value)
		case "h", "help", "V", "version":
			info = true
		}
		return ""
	})
	if problem != "" {
		return "script: " + problem
	}
	if len(scripts) == 0 && !info {
		return defaultShell("script")
	}
	for _, s := range scripts {
		if problem := an.viaShell("sh", "in script -c command: ", s, depth); problem != "" {
			return problem
		}
	}
	return ""
}

// systemd-run [OPTION]... COMMAND. Unit properties (ExecStartPre= and the
// like), --shell, and remote hosts or machines run or decide more than the
// command, and are refused.
func (an *analyzer) systemdRun(args []string, depth int) string {
	i, _, problem := systemdRunSpec.scan(args, func(o opt) string {
		switch o.name {
		case "p", "property", "path-property", "socket-property", "timer-property":
			return "systemd-run unit properties can run other commands"
		case "S", "shell":
			return "systemd-run --shell runs an interactive shell"
		case "H", "host", "M", "machine":
			return "systemd-run on another host or machine"
		case "E", "setenv":
			return envSettingProblem("systemd-run -E", o.value)
		}
		return ""
	})
	if problem != "" {
		if strings.HasPrefix(problem, "unknown option") {
			return "systemd-run: " + problem
		}
		return problem
	}
	return an.wrap(args[i:], depth)
}

// sshOptions lists the -o keys (lower-cased) that choose nothing that
// runs. ProxyCommand, LocalCommand, KnownHostsCommand, RemoteCommand,
// PKCS11Provider, Match exec and the rest are refused.
var sshOptions = map[string]bool{
	"stricthostkeychecking": true, "userknownhostsfile": true, "connecttimeout": true,
	"batchmode": true, "port": true, "user": true, "identityfile": true,
	"identitiesonly": true, "loglevel": true, "serveraliveinterval": true,
	"serveralivecountmax": true, "compression": true, "connectionattempts": true,
	"addressfamily": true, "passwordauthentication": true, "pubkeyauthentication": true,
	"preferredauthentications": true, "requesttty": true, "tcpkeepalive": true,
	"checkhostip": true, "numberofpasswordprompts": true, "updatehostkeys": true,
	"hashknownhosts": true, "visualhostkey": true, "globalknownhostsfile": true,
}

// ssh [OPTION]... DESTINATION [OPTION]... [COMMAND...]: OpenSSH reads
// options again after the destination unless "--" came first. The command
// words joined by spaces are a script for the remote user's shell. -F (a
// config file), -I (a PKCS#11 library) and -o keys outside sshOptions can
// run local commands and are refused.
func (an *analyzer) ssh(args []string, depth int) string {
	noCommand := false
	visit := func(o opt) string {
		switch o.name {
		case "F":
			return "ssh -F (a config file can run commands)"
		case "I":
			return "ssh -I (loads a PKCS#11 library)"
		case "o":
			key, _, _ := strings.Cut(strings.TrimLeftFunc(o.value, unicode.IsSpace), "=")
			key, _, _ = strings.Cut(key, " ")
			key, _, _ = strings.Cut(key, "\t")
			if !sshOptions[strings.ToLower(key)] {
				return "ssh -o " + key + " (only options that run nothing are allowed)"
			}
		case "s", "N", "G", "Q", "V":
			noCommand = true
		}
		return ""
	}
	i, dashdash, problem := sshSpec.scan(args, visit)
	if problem == "" && !dashdash && i+1 < len(args) {
		var j int
		j, _, problem = sshSpec.scan(args[i+1:], visit)
		if problem == "" {
			args = append([]string{args[i]}, args[i+1+j:]...)
			i = 0
		}
	}
	if problem != "" {
		if strings.HasPrefix(problem, "unknown option") {
			return "ssh: " + problem
		}
		return problem
	}
	if noCommand || i+1 >= len(args) {
		return ""
	}
	return an.viaShell("sh", "in ssh remote command: ", strings.Join(args[i+1:], " "), depth)
}

// isNumber reports whether s is a decimal number.
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

var (
	jobsSpec    = optSpec{short: "lnprsx", strict: true}
	logsaveSpec = optSpec{short: "+asv", strict: true}
	prlimitSpec = optSpec{short: "+p:o:vhVABCDEFILMNOPRSTUy", strict: true, long: []longOpt{
		lo("pid", argRequired), lo("output", argRequired), lo("noheadings", argNone),
		lo("raw", argNone), lo("verbose", argNone), lo("help", argNone), lo("version", argNone),
		lo("as", argOptional), lo("core", argOptional), lo("cpu", argOptional),
		lo("data", argOptional), lo("fsize", argOptional), lo("locks", argOptional),
		lo("memlock", argOptional), lo("msgqueue", argOptional), lo("nice", argOptional),
		lo("nofile", argOptional), lo("nproc", argOptional), lo("rss", argOptional),
		lo("rtprio", argOptional), lo("rttime", argOptional), lo("sigpending", argOptional),
		lo("stack", argOptional),
	}}
)

// jobs -x COMMAND [ARG...] runs the command with job specs replaced.
func (an *analyzer) jobs(args []string, depth int) string {
	x := false
	i, _, problem := jobsSpec.scan(args, func(o opt) string {
		if o.name == "x" {
			x = true
		}
		return ""
	})
	if problem != "" {
		return "jobs: " + problem
	}
	if !x {
		return ""
	}
	return an.wrap(args[i:], depth)
}

// defaultShell refuses a wrapper that, given no command, starts a shell
// that reads its commands from standard input: nothing in the command line
// says what that shell will run.
func defaultShell(name string) string {
	return name + " without a command starts a shell that reads standard input"
}

// sg GROUP [-c] COMMAND: the command is a script for /bin/sh -c.
func (an *analyzer) sg(args []string, depth int) string {
	if len(args) > 0 && args[0] == "-" {
		args = args[1:]
	}
	if len(args) < 2 {
		return defaultShell("sg")
	}
	rest := args[1:]
	if rest[0] == "-c" {
		rest = rest[1:]
	}
	return an.viaShell("sh", "in sg command: ", strings.Join(rest, " "), depth)
}

// commandOptions lists, per program, option words that hand it a command to
// run (a long option, or a short option letter anywhere in a cluster). They
// are refused: the command's syntax is the program's own.
var commandOptions = map[string]struct {
	short string
	long  []string
}{
	"rsync": {"e", []string{"--rsh", "--rsync-path"}},
	"scp":   {"SoF", nil},
	"sftp":  {"SoFD", nil},
	"tar": {"IF", []string{"--to-command", "--use-compress-program", "--checkpoint-action",
		"--info-script", "--new-volume-script", "--rsh-command", "--rmt-command"}},
	"man":  {"PHX", []string{"--pager", "--html", "--gxditview", "--browser"}},
	"sort": {"", []string{"--compress-program"}},
	"rg":   {"", []string{"--pre"}},
	"zip":  {"T", []string{"--unzip-command"}},
	// Editors and pagers: -c, --cmd, -S, -s and -u run editor commands or
	// scripts, and a +CMD argument runs a command at start (less +!cmd).
	"vim":     {"cSsuU", []string{"--cmd", "--startuptime"}},
	"vi":      {"cSsuU", []string{"--cmd"}},
	"nvim":    {"cSsuU", []string{"--cmd", "--headless", "--listen", "--remote"}},
	"view":    {"cSsuU", []string{"--cmd"}},
	"less":    {"", []string{"--lesskey-src", "--lesskey-file"}},
	"more":    {"", nil},
	"tcpdump": {"z", nil},
}

// plusCommand lists the programs that run a +CMD argument.
var plusCommand = map[string]bool{"vim": true, "vi": true, "nvim": true, "view": true, "less": true, "more": true, "ex": true}

// refusedWrappers are programs that run a command given in their arguments
// whose option syntax is not modeled here, so where their command starts
// cannot be found exactly. They are refused rather than judged through.
var refusedWrappers = map[string]bool{
	"unbuffer": true, "firejail": true, "bwrap": true, "setarch": true, "linux32": true,
	"linux64": true, "numactl": true, "cpulimit": true, "catchsegv": true, "valgrind": true,
	"gdb": true, "caffeinate": true, "chpst": true, "sem": true, "parallel": true,
	"ssh-agent": true, "dbus-launch": true, "xvfb-run": true, "torsocks": true,
	"proxychains": true, "proxychains4": true, "chronic": true, "entr": true,
	"daemonize": true, "setuidgid": true, "softlimit": true, "envdir": true,
	"envuidgid": true, "schedtool": true, "trickle": true, "tsp": true, "expect": true,
	"tmux": true, "screen": true, "at": true, "batch": true, "crontab": true,
	"pkexec": true, "machinectl": true, "systemd-nspawn": true, "flatpak-spawn": true,
	"nocache": true, "eatmydata": true, "faketime": true, "ltrace-wrapper": true,
}

// commandOptionProblem applies commandOptions, plusCommand and
// refusedWrappers to a program's arguments.
func commandOptionProblem(name string, args []string) string {
	if refusedWrappers[name] {
		return name + " runs a command whose place in its arguments is not modeled"
	}
	if name == "ip" {
		for i := 0; i+1 < len(args); i++ {
			if (args[i] == "netns" || args[i] == "vrf") && strings.HasPrefix("exec", args[i+1]) && args[i+1] != "" {
				return "ip " + args[i] + " exec runs a command"
			}
		}
	}
	if plusCommand[name] {
		for _, a := range args {
			if strings.HasPrefix(a, "+") {
				return name + " " + a + " (runs a command at start)"
			}
		}
	}
	co, ok := commandOptions[name]
	if !ok {
		return ""
	}
	for i, a := range args {
		if a == "--" {
			break
		}
		if i == 0 && name == "tar" && a != "" && a[0] != '-' {
			a = "-" + a // tar's old style: the first word is a cluster of option letters
		}
		if strings.HasPrefix(a, "--") {
			for _, l := range co.long {
				given, _, _ := strings.Cut(a, "=")
				if len(given) > 3 && strings.HasPrefix(l, given) {
					return name + " " + l + " (runs a command)"
				}
			}
			continue
		}
		if len(a) > 1 && a[0] == '-' && strings.ContainsAny(a[1:], co.short) {
			return name + " " + args[i] + " (an option that runs a command)"
		}
	}
	return ""
}

// viaShell records the shell a wrapper starts to run script ("sh -c
// SCRIPT": watch, script -c, flock -c, sg and, on the remote side, ssh run
// sh -c; su -c and runuser -c run the target user's shell, bash on the
// systems modeled) and then analyzes the script. The policy so judges both
// the shell and what it runs.
func (an *analyzer) viaShell(shell, prefix, script string, depth int) string {
	if depth+1 > MaxNesting {
		return "wrapper nesting too deep"
	}
	an.cmds = append(an.cmds, joinCommand(shell, []string{"-c", script}))
	return an.nested(prefix, script, depth+1)
}
