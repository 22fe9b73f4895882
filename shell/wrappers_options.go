package shell

// This file holds the option tables of the wrappers in wrappers_more.go, each the
// tool's own (util-linux, procps, coreutils, strace, OpenSSH, systemd) and strict: an
// option not in a table is refused, since it might be a newer one that takes a value
// and moves the command.

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
