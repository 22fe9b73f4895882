package shell

import (
	"slices"
	"strings"
	"unicode"
)

// This file holds the wrappers judged through besides the classic ones in
// wrappers.go: scheduling, namespace, tracing and user-switching tools,
// watch, script, systemd-run, ssh, and git's command-running options. Each
// option table is the tool's own (util-linux, procps, coreutils, strace,
// OpenSSH, systemd) and is strict: an option not in it is refused, since it
// might be a newer one that takes a value and moves the command.

func lo(name string, kind argKind) longOpt { return longOpt{name, kind} }

var (
	stdbufSpec = optSpec{short: "+i:o:e:", strict: true, long: []longOpt{
		lo("input", argRequired), lo("output", argRequired), lo("error", argRequired),
		lo("help", argNone), lo("version", argNone),
	}}
	ioniceSpec = optSpec{short: "+c:n:p:P:tu:hV", strict: true, long: []longOpt{
		lo("class", argRequired), lo("classdata", argRequired), lo("pid", argRequired),
		lo("pgid", argRequired), lo("ignore", argNone), lo("uid", argRequired),
		lo("help", argNone), lo("version", argNone),
	}}
	chrtSpec = optSpec{short: "+bdfiorRT:P:D:ampvhV", strict: true, long: []longOpt{
		lo("batch", argNone), lo("deadline", argNone), lo("fifo", argNone), lo("idle", argNone),
		lo("other", argNone), lo("rr", argNone), lo("reset-on-fork", argNone),
		lo("sched-runtime", argRequired), lo("sched-period", argRequired),
		lo("sched-deadline", argRequired), lo("all-tasks", argNone), lo("max", argNone),
		lo("pid", argNone), lo("verbose", argNone), lo("help", argNone), lo("version", argNone),
	}}
	tasksetSpec = optSpec{short: "+apchV", strict: true, long: []longOpt{
		lo("all-tasks", argNone), lo("pid", argNone), lo("cpu-list", argNone),
		lo("help", argNone), lo("version", argNone),
	}}
	// flock's -c is not an option: it is recognized only right after the
	// lock file, as "flock FILE -c COMMAND".
	flockSpec = optSpec{short: "+sxenouw:E:FhV", strict: true, long: []longOpt{
		lo("shared", argNone), lo("exclusive", argNone), lo("unlock", argNone),
		lo("nonblock", argNone), lo("nb", argNone), lo("close", argNone),
		lo("timeout", argRequired), lo("wait", argRequired),
		lo("conflict-exit-code", argRequired), lo("no-fork", argNone),
		lo("verbose", argNone), lo("help", argNone), lo("version", argNone),
	}}
	unshareSpec = optSpec{short: "+muinpUCTfrcR:w:S:G:l:hV", strict: true, long: []longOpt{
		lo("mount", argOptional), lo("uts", argOptional), lo("ipc", argOptional),
		lo("net", argOptional), lo("pid", argOptional), lo("user", argOptional),
		lo("cgroup", argOptional), lo("time", argOptional), lo("fork", argNone),
		lo("map-user", argRequired), lo("map-group", argRequired),
		lo("map-root-user", argNone), lo("map-current-user", argNone),
		lo("map-auto", argNone), lo("map-users", argRequired), lo("map-groups", argRequired),
		lo("kill-child", argOptional), lo("mount-proc", argOptional),
		lo("mount-binfmt", argOptional), lo("propagation", argRequired),
		lo("setgroups", argRequired), lo("keep-caps", argNone), lo("root", argRequired),
		lo("wd", argRequired), lo("setuid", argRequired), lo("setgid", argRequired),
		lo("monotonic", argRequired), lo("boottime", argRequired),
		lo("load-interp", argRequired), lo("help", argNone), lo("version", argNone),
	}}
	nsenterSpec = optSpec{short: "+at:m::u::i::n::p::C::U::T::S:G:r::w::W:FZcehV", strict: true, long: []longOpt{
		lo("all", argNone), lo("target", argRequired), lo("mount", argOptional),
		lo("uts", argOptional), lo("ipc", argOptional), lo("net", argOptional),
		lo("pid", argOptional), lo("cgroup", argOptional), lo("user", argOptional),
		lo("time", argOptional), lo("setuid", argRequired), lo("setgid", argRequired),
		lo("preserve-credentials", argNone), lo("root", argOptional), lo("wd", argOptional),
		lo("wdns", argRequired), lo("no-fork", argNone), lo("follow-context", argNone),
		lo("join-cgroup", argNone), lo("env", argNone), lo("keep-caps", argNone),
		lo("user-parent", argNone), lo("help", argNone), lo("version", argNone),
	}}
	watchSpec = optSpec{short: "+bcCd::egn:pq:rs:twxhv", strict: true, long: []longOpt{
		lo("beep", argNone), lo("color", argNone), lo("no-color", argNone),
		lo("differences", argOptional), lo("errexit", argNone), lo("chgexit", argNone),
		lo("equexit", argRequired), lo("interval", argRequired), lo("precise", argNone),
		lo("no-rerun", argNone), lo("shotsdir", argRequired), lo("no-title", argNone),
		lo("no-wrap", argNone), lo("exec", argNone), lo("help", argNone), lo("version", argNone),
	}}
	straceSpec = optSpec{short: "+a:Ab:cCdDe:E:fFhiI:knNo:O:p:P:qrs:S:tTu:U:vVwxX:yYzZ", strict: true, long: []longOpt{
		lo("columns", argRequired), lo("output-append-mode", argNone),
		lo("detach-on", argRequired), lo("summary-only", argNone), lo("summary", argNone),
		lo("debug", argNone), lo("daemonize", argOptional), lo("env", argRequired),
		lo("follow-forks", argNone), lo("output-separately", argNone), lo("help", argNone),
		lo("instruction-pointer", argNone), lo("interruptible", argRequired),
		lo("stack-traces", argNone), lo("syscall-number", argNone), lo("output", argRequired),
		lo("summary-syscall-overhead", argRequired), lo("attach", argRequired),
		lo("trace-path", argRequired), lo("quiet", argOptional),
		lo("relative-timestamps", argOptional), lo("string-limit", argRequired),
		lo("summary-sort-by", argRequired), lo("absolute-timestamps", argOptional),
		lo("syscall-times", argOptional), lo("user", argRequired),
		lo("summary-columns", argRequired), lo("no-abbrev", argNone), lo("version", argNone),
		lo("summary-wall-clock", argNone), lo("strings-in-hex", argOptional),
		lo("const-print-style", argRequired), lo("decode-fds", argOptional),
		lo("decode-pids", argRequired), lo("successful-only", argNone),
		lo("failed-only", argNone), lo("trace", argRequired), lo("signal", argRequired),
		lo("status", argRequired), lo("abbrev", argRequired), lo("verbose", argRequired),
		lo("raw", argRequired), lo("read", argRequired), lo("write", argRequired),
		lo("kvm", argRequired), lo("inject", argRequired), lo("fault", argRequired),
		lo("seccomp-bpf", argNone), lo("tips", argOptional), lo("timestamps", argOptional),
	}}
	ltraceSpec = optSpec{short: "+a:A:bcCD:e:fF:ghiLl:n:o:p:rs:StTu:Vw:x:", strict: true, long: []longOpt{
		lo("align", argRequired), lo("demangle", argNone), lo("debug", argRequired),
		lo("help", argNone), lo("indent", argRequired), lo("library", argRequired),
		lo("output", argRequired), lo("version", argNone), lo("where", argRequired),
		lo("no-signals", argNone), lo("config", argRequired),
	}}
	// suSpec is util-linux su and runuser; they permute, so options may
	// follow the user name.
	suSpec = optSpec{short: "c:fg:G:lmpPs:u:w:hV", strict: true, long: []longOpt{
		lo("command", argRequired), lo("session-command", argRequired), lo("fast", argNone),
		lo("group", argRequired), lo("supp-group", argRequired), lo("login", argNone),
		lo("preserve-environment", argNone), lo("pty", argNone), lo("shell", argRequired),
		lo("user", argRequired), lo("whitelist-environment", argRequired),
		lo("help", argNone), lo("version", argNone),
	}}
	setprivSpec = optSpec{short: "+dhvV", strict: true, long: []longOpt{
		lo("dump", argNone), lo("no-new-privs", argNone), lo("nnp", argNone),
		lo("ambient-caps", argRequired), lo("inh-caps", argRequired),
		lo("bounding-set", argRequired), lo("ruid", argRequired), lo("euid", argRequired),
		lo("rgid", argRequired), lo("egid", argRequired), lo("reuid", argRequired),
		lo("regid", argRequired), lo("clear-groups", argNone), lo("keep-groups", argNone),
		lo("init-groups", argNone), lo("groups", argRequired), lo("securebits", argRequired),
		lo("pdeathsig", argRequired), lo("selinux-label", argRequired),
		lo("apparmor-profile", argRequired), lo("landlock-access", argRequired),
		lo("landlock-rule", argRequired), lo("reset-env", argNone),
		lo("help", argNone), lo("version", argNone),
	}}
	chrootSpec = optSpec{short: "+", strict: true, long: []longOpt{
		lo("groups", argRequired), lo("userspec", argRequired), lo("skip-chdir", argNone),
		lo("help", argNone), lo("version", argNone),
	}}
	scriptSpec = optSpec{short: "aB:c:eE:fI:m:o:O:qT:t::hV", strict: true, long: []longOpt{
		lo("append", argNone), lo("log-io", argRequired), lo("command", argRequired),
		lo("return", argNone), lo("echo", argRequired), lo("flush", argNone),
		lo("force", argNone), lo("log-in", argRequired), lo("logging-format", argRequired),
		lo("output-limit", argRequired), lo("log-out", argRequired), lo("quiet", argNone),
		lo("log-timing", argRequired), lo("timing", argOptional),
		lo("help", argNone), lo("version", argNone),
	}}
	systemdRunSpec = optSpec{short: "+hu:p:rE:dtPqGSH:M:", strict: true, long: []longOpt{
		lo("help", argNone), lo("version", argNone), lo("no-ask-password", argNone),
		lo("user", argNone), lo("system", argNone), lo("host", argRequired),
		lo("machine", argRequired), lo("scope", argNone), lo("unit", argRequired),
		lo("property", argRequired), lo("description", argRequired), lo("slice", argRequired),
		lo("slice-inherit", argNone), lo("no-block", argNone),
		lo("remain-after-exit", argNone), lo("wait", argNone), lo("send-sighup", argNone),
		lo("service-type", argRequired), lo("uid", argRequired), lo("gid", argRequired),
		lo("nice", argRequired), lo("working-directory", argRequired), lo("same-dir", argNone),
		lo("setenv", argRequired), lo("pty", argNone), lo("pipe", argNone),
		lo("quiet", argNone), lo("collect", argNone), lo("shell", argNone),
		lo("path-property", argRequired), lo("socket-property", argRequired),
		lo("timer-property", argRequired),
	}}
	sshSpec = optSpec{short: "+46AaCfGgKkMNnqsTtVvXxYyB:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:", strict: true}
)

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
