package shell

import (
	"slices"
	"strings"
)

// emit records the command argv, whose words are already literal values,
// and judges through it when its name is a known wrapper. wrapped is true
// for a command that a wrapper runs rather than the shell itself.
func (an *analyzer) emit(argv []string, depth int, wrapped bool) string {
	if depth > MaxNesting {
		return "wrapper nesting too deep"
	}
	name := argv[0]
	if problem := nameProblem(name, wrapped); problem != "" {
		return problem
	}
	base := baseName(name)
	an.cmds = append(an.cmds, joinCommand(base, argv[1:]))
	lower := strings.ToLower(base)
	if problem := builtinProblem(lower, argv[1:]); problem != "" {
		return problem
	}
	if problem := commandOptionProblem(lower, argv[1:]); problem != "" {
		return problem
	}
	return an.unwrap(lower, argv[1:], depth)
}

// nameProblem refuses command names that cannot be judged by their text.
func nameProblem(name string, wrapped bool) string {
	if name == "" {
		return "empty command name"
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c == 0x7f {
			return "unusual command name"
		}
	}
	if name[len(name)-1] == '/' {
		return "unusual command name"
	}
	// A name that starts with '-' is an option to whatever reads it as one:
	// bash's time keyword takes only an unquoted -p, while sh (dash) runs
	// /usr/bin/time, which takes a quoted "-p" too and runs what follows.
	if name[0] == '-' {
		return "command name starts with '-'"
	}
	// A wrapper's command is literal text, but refusing glob characters
	// in it too costs nothing and keeps one rule for every command name.
	if wrapped && globChars(name) {
		return "glob in command name"
	}
	return ""
}

// baseName strips the directory from a command name: /bin/rm runs rm.
func baseName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// isSpace reports the ASCII whitespace that joinCommand folds.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// joinCommand joins a command name and its arguments with single spaces.
// Whitespace inside an argument is folded to one space and trimmed, and an
// argument left empty is dropped, so the result never holds two spaces in a
// row or begins or ends with one: a glob written against the canonical
// spelling (rm -rf /) also matches rm with an empty first argument, or with
// "-rf " quoted.
func joinCommand(name string, args []string) string {
	n := len(name)
	for _, a := range args {
		n += len(a) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(name)
	for _, a := range args {
		pending := true // a separator is owed before the next character
		for i := 0; i < len(a); i++ {
			c := a[i]
			if isSpace(c) {
				pending = true
				continue
			}
			if pending {
				b.WriteByte(' ')
				pending = false
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// wrap records the command a wrapper runs, if it names one.
func (an *analyzer) wrap(argv []string, depth int) string {
	if len(argv) == 0 {
		return ""
	}
	return an.emit(argv, depth+1, true)
}

// nested analyzes a script that a wrapper hands to a shell.
func (an *analyzer) nested(prefix, script string, depth int) string {
	if problem := an.script(script, depth+1); problem != "" {
		return prefix + problem
	}
	return ""
}

// unwrap judges through the wrapper named name (lower-cased base name),
// called with args.
func (an *analyzer) unwrap(name string, args []string, depth int) string {
	if w, ok := plainWrappers[name]; ok {
		return an.plain(name, w, args, depth)
	}
	switch name {
	case "sudo":
		return an.sudo(args, depth)
	case "doas":
		for _, a := range args {
			if a == "-s" {
				return defaultShell("doas -s")
			}
			if !strings.HasPrefix(a, "-") {
				break
			}
		}
		return an.plain(name, plainWrapper{spec: &doasSpec}, args, depth)
	case "env":
		return an.env(args, depth)
	case "exec":
		var problem string
		_, _, _ = execSpec.scan(args, func(o opt) string {
			if o.name == "a" && problem == "" {
				// argv[0] becomes NAME: a multi-call program (busybox) acts
				// as NAME, and a reader of the process list sees NAME.
				problem = "exec -a (the program runs under another name)"
			}
			return ""
		})
		if problem != "" {
			return problem
		}
		return an.plain(name, plainWrapper{spec: &execSpec}, args, depth)
	case "nice":
		// nice -N is GNU nice's old spelling of -n N.
		if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && isNumber(strings.TrimPrefix(args[0][1:], "-")) {
			args = args[1:]
		}
		return an.plain(name, plainWrapper{spec: &niceSpec}, args, depth)
	case "xargs":
		return an.xargs()
	case "find":
		return an.find(args, depth)
	case "busybox":
		// busybox APPLET ARGS runs the applet; options such as --list
		// run nothing.
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			return ""
		}
		return an.wrap(args, depth)
	case "chrt":
		return an.chrt(args, depth)
	case "flock":
		return an.flock(args, depth)
	case "unshare":
		return an.namespaced(name, &unshareSpec, args, depth)
	case "nsenter":
		return an.namespaced(name, &nsenterSpec, args, depth)
	case "watch":
		return an.watch(args, depth)
	case "strace":
		return an.tracer(name, &straceSpec, args, depth)
	case "ltrace":
		return an.tracer(name, &ltraceSpec, args, depth)
	case "su", "runuser":
		return an.su(name, args, depth)
	case "chroot":
		return an.chroot(args, depth)
	case "script":
		return an.scriptCmd(args, depth)
	case "systemd-run":
		return an.systemdRun(args, depth)
	case "ssh":
		return an.ssh(args, depth)
	case "git":
		return an.git(args)
	case "jobs":
		return an.jobs(args, depth)
	case "dbus-run-session":
		return "dbus-run-session (starts a dbus-daemon before the command)"
	case "fakeroot":
		return "fakeroot (a script that starts faked and runs the command through env)"
	case "sg":
		return an.sg(args, depth)
	case "newgrp":
		return defaultShell(name)
	case "run-parts":
		return "run-parts (runs every program in a directory)"
	case "start-stop-daemon":
		return "start-stop-daemon (runs the program its options name)"
	case "source", ".":
		return name + " (runs a script file the policy cannot see)"
	case "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "rbash", "hush":
		if problem := shellOptionsProblem(name, args); problem != "" {
			return problem
		}
		if script, ok := shellScript(args); ok {
			return an.nested("in sh -c script: ", script, depth)
		}
		if shellInfoOnly(args) {
			return ""
		}
		return name + " without a -c script runs a script from a file or standard input"
	case "trap":
		// trap ACTION SIGNAL... stores a script that bash runs later (on exit, on a
		// signal): a second command the policy would never see. Only the listing forms
		// (no arguments, -l, -p) are simple.
		for _, a := range args {
			if a != "-l" && a != "-p" && a != "--" {
				return "trap action (a script bash runs later)"
			}
		}
		return ""
	case "enable":
		// enable -f FILE loads a shared object into bash.
		for _, a := range args {
			if strings.HasPrefix(a, "-") && strings.Contains(a, "f") {
				return "enable -f (loads code into bash)"
			}
		}
		return ""
	case "eval":
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		if len(args) == 0 {
			return ""
		}
		return an.nested("in eval script: ", strings.Join(args, " "), depth)
	}
	return ""
}

// A plainWrapper runs the command that follows its options and a fixed number of
// operands: NAME [OPTION]... [OPERAND]... COMMAND [ARG]...
type plainWrapper struct {
	spec     *optSpec
	operands int      // the words between the options and the command
	runsNone []string // options (their short or long names) with which no command runs
}

// plainWrappers are the wrappers that [analyzer.plain] judges, by lower-cased name.
// doas, exec and nice are plain too once their own checks have passed.
var plainWrappers = map[string]plainWrapper{
	"command": {spec: &commandSpec},
	"builtin": {spec: &builtinSpec},
	"nohup":   {spec: &nohupSpec},
	"setsid":  {spec: &setsidSpec},
	"time":    {spec: &timeSpec},
	"stdbuf":  {spec: &stdbufSpec}, // stdbuf OPTION... COMMAND
	// timeout [OPTION]... DURATION COMMAND
	"timeout": {spec: &timeoutSpec, operands: 1},
	// ionice [OPTION]... COMMAND; with -p, -P or -u the operands are ids.
	"ionice": {spec: &ioniceSpec, runsNone: []string{"p", "P", "u", "pid", "pgid", "uid"}},
	// taskset [OPTION]... MASK COMMAND; with -p the operands are a mask and a pid.
	"taskset": {spec: &tasksetSpec, operands: 1, runsNone: []string{"p", "pid", "h", "help", "V", "version"}},
	// logsave [-asv] FILE COMMAND...
	"logsave": {spec: &logsaveSpec, operands: 1},
	// prlimit [OPTION]... [COMMAND...]; with --pid it changes a running process.
	"prlimit": {spec: &prlimitSpec, runsNone: []string{"p", "pid"}},
	// setpriv [OPTION]... COMMAND; --dump runs nothing.
	"setpriv": {spec: &setprivSpec, runsNone: []string{"d", "dump", "h", "help", "v", "V", "version"}},
}

// plain judges the command that the plain wrapper w, called name, runs with args: none
// when an option of w.runsNone is given or the operands are missing.
func (an *analyzer) plain(name string, w plainWrapper, args []string, depth int) string {
	runsNone := false
	var visit func(opt) string
	if len(w.runsNone) > 0 {
		visit = func(o opt) string {
			if slices.Contains(w.runsNone, o.name) {
				runsNone = true
			}
			return ""
		}
	}
	next, _, problem := w.spec.scan(args, visit)
	if problem != "" {
		return name + ": " + problem
	}
	if runsNone || next+w.operands > len(args) {
		return ""
	}
	return an.wrap(args[next+w.operands:], depth)
}

var (
	doasSpec    = optSpec{strict: true, short: "+C:Lnsu:"}
	commandSpec = optSpec{strict: true, short: "pvV"}
	builtinSpec = optSpec{strict: true}
	execSpec    = optSpec{strict: true, short: "cla:"}
	niceSpec    = optSpec{strict: true, short: "+n:", long: []longOpt{
		{"adjustment", argRequired}, {"help", argNone}, {"version", argNone},
	}}
	nohupSpec  = optSpec{strict: true, long: []longOpt{{"help", argNone}, {"version", argNone}}}
	setsidSpec = optSpec{strict: true, short: "+cfwhV", long: []longOpt{
		{"ctty", argNone}, {"fork", argNone}, {"wait", argNone},
		{"help", argNone}, {"version", argNone},
	}}
	// timeSpec covers both the bash keyword (time -p) and GNU time.
	timeSpec = optSpec{strict: true, short: "+ao:f:pqvV", long: []longOpt{
		{"append", argNone}, {"format", argRequired}, {"output", argRequired},
		{"portability", argNone}, {"quiet", argNone}, {"verbose", argNone},
		{"help", argNone}, {"version", argNone},
	}}
	timeoutSpec = optSpec{strict: true, short: "+k:s:v", long: []longOpt{
		{"kill-after", argRequired}, {"signal", argRequired},
		{"preserve-status", argNone}, {"foreground", argNone},
		{"verbose", argNone}, {"help", argNone}, {"version", argNone},
	}}
	// envSpec is GNU env plus the BSD -L and -P.
	envSpec = optSpec{strict: true, short: "+0a:C:iL:P:S:u:v", long: []longOpt{
		{"ignore-environment", argNone}, {"null", argNone},
		{"unset", argRequired}, {"chdir", argRequired},
		{"split-string", argRequired}, {"argv0", argRequired},
		{"block-signal", argOptional}, {"default-signal", argOptional},
		{"ignore-signal", argOptional}, {"list-signal-handling", argNone},
		{"debug", argNone}, {"help", argNone}, {"version", argNone},
	}}
	// sudoSpec is sudo 1.9's option table. -h takes the next word as a
	// host name unless it looks like an option; taking it always only
	// means judging one word less of a command sudo would not run.
	sudoSpec = optSpec{strict: true, short: "+Aa:BbC:c:D:Eeg:Hh:iKklNnPp:R:r:SsT:t:U:u:Vv", long: []longOpt{
		{"askpass", argNone}, {"auth-type", argRequired}, {"background", argNone},
		{"bell", argNone}, {"close-from", argRequired}, {"login-class", argRequired},
		{"chdir", argRequired}, {"preserve-env", argOptional}, {"edit", argNone},
		{"group", argRequired}, {"set-home", argNone}, {"help", argNone},
		{"host", argRequired}, {"login", argNone}, {"remove-timestamp", argNone},
		{"reset-timestamp", argNone}, {"list", argNone}, {"no-update", argNone},
		{"non-interactive", argNone}, {"preserve-groups", argNone},
		{"prompt", argRequired}, {"chroot", argRequired}, {"role", argRequired},
		{"stdin", argNone}, {"shell", argNone}, {"command-timeout", argRequired},
		{"type", argRequired}, {"other-user", argRequired}, {"user", argRequired},
		{"validate", argNone}, {"version", argNone},
	}}
)

// sudo skips sudo's options and the NAME=VALUE words it accepts among
// them. With -s or -i sudo hands its command to a shell, so the words are
// analyzed as a script; sudo -e edits files and runs no command.
func (an *analyzer) sudo(args []string, depth int) string {
	shellMode, edit := false, false
	visit := func(o opt) string {
		switch o.name {
		case "s", "i", "shell", "login":
			shellMode = true
		case "e", "edit":
			edit = true
		}
		return ""
	}
	i := 0
	for {
		next, dashdash, problem := sudoSpec.scan(args[i:], visit)
		if problem != "" {
			return "sudo: " + problem
		}
		i += next
		if dashdash || i >= len(args) || !sudoEnvVar(args[i]) {
			break
		}
		if problem := envSettingProblem("sudo", args[i]); problem != "" {
			return problem
		}
		i++
	}
	rest := args[i:]
	switch {
	case edit:
		return ""
	case len(rest) == 0 && shellMode:
		return defaultShell("sudo -s or -i")
	case len(rest) == 0:
		return ""
	case shellMode:
		return an.nested("in sudo shell command: ", strings.Join(rest, " "), depth)
	}
	return an.wrap(rest, depth)
}

// sudoEnvVar reports whether sudo takes a word as a NAME=VALUE setting.
func sudoEnvVar(s string) bool {
	return s != "" && s[0] != '/' && s[0] != '=' && strings.IndexByte(s, '=') >= 0
}

// env skips env's options, a lone "-" and NAME=VALUE words. env -S splits
// a string into words by its own rules, which are not analyzed.
func (an *analyzer) env(args []string, depth int) string {
	i, _, problem := envSpec.scan(args, func(o opt) string {
		switch o.name {
		case "S", "split-string":
			return "env -S cannot be analyzed"
		case "P":
			return "env -P (searches its own path for the command)"
		}
		return ""
	})
	if problem != "" {
		return problem
	}
	if i < len(args) && args[i] == "-" {
		i++
	}
	for i < len(args) && strings.IndexByte(args[i], '=') >= 0 {
		if problem := envSettingProblem("env", args[i]); problem != "" {
			return problem
		}
		i++
	}
	return an.wrap(args[i:], depth)
}

// xargs is refused: it appends words read from standard input (which a
// command run by bash -c inherits) or from -a FILE to its command, so no
// policy can see what that command will be.
func (an *analyzer) xargs() string {
	return "xargs (its command gets words from its input, which the policy never sees)"
}

// find judges each -exec, -execdir, -ok and -okdir command, made of the
// words up to ";" or to a "+" that follows "{}". A command name holding {}
// is a found file and cannot be judged.
func (an *analyzer) find(args []string, depth int) string {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		start := i + 1
		end := start
		for end < len(args) {
			if args[end] == ";" || (args[end] == "+" && end > start && args[end-1] == "{}") {
				break
			}
			end++
		}
		if end > start {
			if strings.Contains(args[start], "{}") {
				return "find -exec command name comes from the files found"
			}
			// find puts each found name wherever {} appears, also inside a
			// longer word: like a glob's matches, a file name there must not
			// reach a command whose arguments choose what runs (sh -c 'echo {}'
			// runs a file named $(cmd)).
			if name := strings.ToLower(baseName(args[start])); isGlobSensitive(name) {
				for _, a := range args[start+1 : end] {
					if strings.Contains(a, "{}") {
						return "find -exec hands found file names to '" + name + "'"
					}
				}
			}
			if problem := an.wrap(args[start:end], depth); problem != "" {
				return problem
			}
		}
		i = end
	}
	return ""
}

// shellScript finds the script of "sh -c SCRIPT": the first operand once a
// -c appeared among the options (also inside a cluster such as -ec). -o and
// -O take the next word whatever their place in a cluster.
func shellScript(args []string) (string, bool) {
	c := false
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" || a == "-" {
			i++
			break
		}
		if len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			break
		}
		i++
		if a[0] == '-' && a[1] == '-' {
			switch a[2:] {
			case "rcfile", "init-file", "emulate":
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'c':
				if a[0] == '-' {
					c = true
				}
			case 'o', 'O':
				i++
			}
		}
	}
	if !c || i >= len(args) {
		return "", false
	}
	return args[i], true
}

// shellInfoOnly reports whether a shell's arguments only ask for its
// version or help, which runs no script.
func shellInfoOnly(args []string) bool {
	if len(args) == 0 {
		return false
	}
	for _, a := range args {
		switch a {
		case "--version", "--help", "-version", "-help":
		default:
			return false
		}
	}
	return true
}

// shellSetOptions are the -o names a shell may be given: they change how
// the script runs (exit on error, tracing), not how it is read or what it
// reads at startup.
var shellSetOptions = map[string]bool{
	"errexit": true, "nounset": true, "pipefail": true, "xtrace": true, "noglob": true,
	"verbose": true, "noexec": true, "noclobber": true, "errtrace": true,
	"functrace": true, "allexport": true, "physical": true,
}

// shellOptionsProblem refuses the shell options, before the script, that
// make the shell read startup files or another script (-l, --login, -i,
// --rcfile, --init-file, -s), change how the script is parsed (-k, -H, -B,
// -O, +O, --posix, -o for anything outside shellSetOptions), or that are
// not modeled. Flags that only change how the script runs (-e, -u, -x, -f,
// -v, -n, -a, -C, -E, -T, -P, -h, -p) are accepted.
func shellOptionsProblem(name string, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			return ""
		}
		if a[0] == '+' {
			return name + " option '" + a + "'"
		}
		if a[1] == '-' {
			switch a {
			case "--norc", "--noprofile", "--verbose", "--version", "--help":
				continue
			}
			return name + " option '" + a + "' (startup files or parsing)"
		}
		for j := 1; j < len(a); j++ {
			switch c := a[j]; c {
			case 'c', 'e', 'u', 'x', 'f', 'v', 'n', 'a', 'C', 'E', 'T', 'P', 'h', 'p':
			case 'o':
				i++
				if i >= len(args) || !shellSetOptions[args[i]] {
					return name + " -o option that is not a plain run-time setting"
				}
			default:
				return name + " option '-" + string(c) + "' (startup files, input or parsing)"
			}
		}
		if strings.ContainsRune(a, 'c') {
			return "" // what follows is the script and its arguments
		}
	}
	return ""
}
