package shell

// The execution oracle for Analyze: every command Analyze calls simple is
// run under real bash, in a sandbox (oracle_sandbox_test.go), with strace
// recording every program that starts (oracle_trace_test.go), and every
// program that starts must be among Analysis.Commands. The corpus is in
// oracle_corpus_test.go and testdata/oracle/seeds.txt.

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// oracleVerdict is what the oracle found for one command.
type oracleVerdict struct {
	Command  string
	Analysis Analysis
	Execs    []oracleExec // every program the command started
	Unjudged []oracleExec // those not among Analysis.Commands
	// InCode are programs that an interpreter (oracleRunsCode), itself
	// judged, started: the code it ran was its argument or a file, outside
	// what the analyzer claims to judge. Counted, never a finding, and
	// never anything else.
	InCode   []oracleExec
	TimedOut bool
	Stderr   string
}

func (v oracleVerdict) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "command %s\n  Analysis.Commands %q\n  bash ran, unjudged:", strconv.Quote(v.Command), v.Analysis.Commands)
	for _, e := range v.Unjudged {
		fmt.Fprintf(&b, "\n    %v = %q, started by %q [%s]", e, oracleForms(e), e.Runner, oracleClass(e, v.Analysis.Commands))
	}
	if v.TimedOut {
		b.WriteString("\n  (timed out)")
	}
	return b.String()
}

// oracleCheck runs command in the sandbox if Analyze calls it simple. It
// returns ran=false for a refused command. A sandbox or trace failure is an
// error: the oracle could not see what ran, which is never a pass.
func oracleCheck(sb *oracleSandbox, command string) (v oracleVerdict, ran bool, err error) {
	// strace can lose the parent of a program (a thread of a process that is
	// exiting, on a loaded machine), and the git and interpreter exemptions
	// need the whole chain of parents: a verdict with a finding whose chain does
	// not reach the command's own bash is run again, up to twice, and a run
	// whose findings all name their whole chain decides. A real finding
	// reproduces with its chain named, so this never hides one.
	// Under the same load strace writes lines it cannot decode (an execve whose
	// tracee memory is gone, "???()", a syscall of a thread that vanished): a run
	// whose trace could not be read is run again too, up to twice, and a trace
	// that still cannot be read is an error (never a pass).
	for try := 0; ; try++ {
		v, ran, err = oracleCheckOnce(sb, command)
		if err != nil && try < 2 {
			continue
		}
		if err != nil || try == 2 || !slices.ContainsFunc(v.Unjudged, func(e oracleExec) bool { return !oracleChainComplete(e, command) }) {
			return v, ran, err
		}
	}
}

// oracleChainComplete reports whether e's lineage reaches the command's own
// bash (bash -c COMMAND), so that every program between them is known.
func oracleChainComplete(e oracleExec, command string) bool {
	n := len(e.Lineage)
	if n == 0 {
		return false
	}
	root := e.Lineage[n-1]
	return baseName(root.Path) == "bash" && len(root.Argv) == 3 && root.Argv[1] == "-c" && root.Argv[2] == command
}

// oracleCheckOnce is one run of oracleCheck.
func oracleCheckOnce(sb *oracleSandbox, command string) (v oracleVerdict, ran bool, err error) {
	v.Command = command
	v.Analysis = Analyze(command)
	if !v.Analysis.Simple {
		return v, false, nil
	}
	// A command with glob characters also runs in the second box, where
	// "*" is exactly "1 rm sub".
	boxes := []string{""}
	if strings.ContainsAny(command, "*?[") {
		boxes = append(boxes, "pair")
	}
	for _, box := range boxes {
		resp, err := sb.RunIn(box, command)
		if err != nil {
			return v, true, fmt.Errorf("%q: %v", command, err)
		}
		v.TimedOut = v.TimedOut || resp.TimedOut
		v.Stderr += resp.Stderr
		execs, err := parseOracleTrace(resp.Trace, command)
		if err != nil {
			return v, true, fmt.Errorf("%q: %v", command, err)
		}
		v.Execs = append(v.Execs, execs...)
		for _, e := range execs {
			switch {
			case oracleJudged(e, v.Analysis.Commands) || oracleGitSelf(e):
			case oracleInCode(e, v.Analysis.Commands):
				v.InCode = append(v.InCode, e)
			default:
				v.Unjudged = append(v.Unjudged, e)
			}
		}
	}
	return v, true, nil
}

// oracleClass names the kind of a finding, for reading a long list; it
// never decides whether something is a finding.
func oracleClass(e oracleExec, commands []string) string {
	forms := oracleForms(e)
	switch {
	case len(forms) == 0:
		return "argv unreadable"
	case oracleJudgedIfOptionGlobs(e, commands):
		return "a glob expanded to an option"
	case len(forms) == 2 && slices.Contains(commands, forms[1]):
		return "argv[0] is not the file run (exec -a)"
	}
	if a := e.Argv; len(a) >= 3 && a[1] == "-c" && slices.Contains([]string{"sh", "bash", "dash", "-sh", "-bash", "-dash"}, baseName(a[0])) {
		if an := Analyze(a[2]); an.Simple && !slices.ContainsFunc(an.Commands, func(c string) bool { return !slices.Contains(commands, c) }) {
			return "the shell a wrapper starts for the judged script"
		}
	}
	for _, anc := range e.Lineage {
		if a0 := baseName(anc.Argv0()); strings.HasPrefix(a0, "-") || slices.ContainsFunc(anc.Argv, func(x string) bool {
			return x == "--login" || x == "-l" || (len(x) > 1 && x[0] == '-' && x[1] != '-' && strings.Contains(x, "l") && strings.Contains(x, "c"))
		}) && slices.Contains([]string{"sh", "bash", "dash", "-sh", "-bash", "-dash"}, a0) {
			return "a login shell's startup files"
		}
	}
	for _, anc := range e.Lineage {
		if oracleJudged(anc, commands) {
			if anc.Path == e.Runner {
				return "started by a judged program (its option, config or own helper)"
			}
			return "started under a judged program"
		}
	}
	if len(e.Lineage) == 0 {
		return "started by a program the trace does not name"
	}
	return "run by bash itself, unjudged"
}

// oracleInCode reports whether e descends from a program that runs code
// (oracleRunsCode) whose own exec was judged, or from one of git's own
// shell scripts (oracleGitScript) that git started: the scripts in git's
// exec-path (git-mergetool, git-submodule, git-web--browse, ...) are git's
// implementation, written in sh, and run sed, basename, gettext and the like
// as any interpreter runs its helpers. The analyzer refuses the script
// subcommands' forms that take a command to run (bisect run, submodule
// foreach, filter-branch, difftool -x, ...); what else a script starts is
// counted apart, as for interpreters, never silently.
func oracleInCode(e oracleExec, commands []string) bool {
	for k, a := range e.Lineage {
		if (oracleRunsCode(baseName(a.Path)) || oracleRunsCode(baseName(a.Argv0()))) && oracleJudged(a, commands) {
			return true
		}
		if k+1 < len(e.Lineage) && oracleGitScript(a.Path) && oracleIsGit(e.Lineage[k+1].Path) {
			return true
		}
	}
	return false
}

// oracleGitScript reports whether path is a program in git's exec-path that
// is a script (it starts with "#!").
func oracleGitScript(path string) bool {
	if !strings.HasPrefix(path, "/usr/lib/git-core/") {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [2]byte
	n, _ := io.ReadFull(f, head[:])
	return n == 2 && string(head[:]) == "#!"
}

// oracleCorpus returns the commands of one run: every seed, then mutations
// of the seeds, then generated commands, n in all (at least the seeds),
// from a fixed random seed so that a run is reproducible.
func oracleCorpus(t testing.TB, n int, seed uint64) []string {
	seeds, err := oracleLoadSeeds()
	if err != nil {
		t.Fatal(err)
	}
	out := slices.Clone(seeds)
	g := newOracleGen(seed, seeds)
	for i := 0; len(out) < n; i++ {
		if i%3 == 0 {
			out = append(out, g.Mutate(seeds[i/3%len(seeds)]))
		} else {
			out = append(out, g.Command())
		}
	}
	return out
}

// oracleSize reads WARDEN_SHELL_ORACLE: unset for the bounded CI slice,
// "long" for a long run, or a number of corpus commands.
func oracleSize() (n int, mode string) {
	const bounded, long = 15000, 200000
	switch v := os.Getenv("WARDEN_SHELL_ORACLE"); v {
	case "":
		return bounded, "bounded"
	case "long":
		return long, "long"
	default:
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n, "custom"
		}
		return bounded, "bounded"
	}
}

// TestOracle is the execution oracle for the bash check. It runs every
// command of the corpus that Analyze calls simple under real bash
// (bash -c COMMAND, standard input /dev/null, oracleTimeout) in a sandbox
// whose only writable place is a fresh tmpfs seeded with hostile file names
// and a git repository, records with strace every program that starts, and
// fails when one of them is not among Analysis.Commands (same normalized
// form: base name of argv[0], arguments through joinCommand; see
// oracleJudged for the one placeholder, find's {}).
//
// Modes, by the environment variable WARDEN_SHELL_ORACLE:
//
//	unset   the bounded slice for CI: every seed plus generated commands,
//	        15,000 corpus commands in all (about two minutes on two cores)
//	long    200,000 corpus commands
//	N       N corpus commands
//
// What the oracle sees is every execve: it does not see what a command
// does without starting a program (a builtin's own effects, files written
// or deleted, network use), and it cannot see through programs that are
// not installed (sudo, doas, busybox, ltrace here: bash finds nothing to
// run), strace under strace (ptrace is taken), systemd-run (no systemd),
// or ssh to a host (no network). Those wrappers are covered by the
// analyzer's own tests.
//
// WARDEN_SHELL_ORACLE_SEED changes the random seed (default 1) and
// WARDEN_SHELL_ORACLE_PROCS the number of sandboxes run at once (default
// 2). Without root, strace, prlimit or user namespaces the test
// is skipped, except when CI=true, where it fails.
func TestOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("the execution oracle runs commands under bash: not in -short")
	}
	sb := oracleSandboxOrSkip(t)
	n, mode := oracleSize()
	seed := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("WARDEN_SHELL_ORACLE_SEED"), 10, 64); err == nil {
		seed = v
	}
	corpus := oracleCorpus(t, n, seed)
	start := time.Now()

	var (
		accepted, refused, executed, execs, inCode atomic.Int64
		mu                                         sync.Mutex
		failures                                   []oracleVerdict
		errs                                       []error
		seen                                       = map[string]bool{}
	)
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range oracleWorkers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				v, ran, err := oracleCheck(sb, c)
				if !ran {
					refused.Add(1)
					continue
				}
				if n := executed.Add(1); n%1000 == 0 {
					t.Logf("oracle progress: %d executed, %d refused, %v", n, refused.Load(), time.Since(start).Round(time.Second))
				}
				execs.Add(int64(len(v.Execs)))
				inCode.Add(int64(len(v.InCode)))
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if len(v.Unjudged) > 0 {
					failures = append(failures, v)
				}
				mu.Unlock()
			}
		}()
	}
	for _, c := range corpus {
		if seen[c] {
			continue
		}
		seen[c] = true
		if !Analyze(c).Simple {
			refused.Add(1)
			continue
		}
		accepted.Add(1)
		jobs <- c
	}
	close(jobs)
	wg.Wait()

	t.Logf("oracle %s run (seed %d): %d corpus commands, %d distinct: %d accepted and executed, %d refused; %d programs started, %d of them by judged interpreters (not claimed); %v",
		mode, seed, len(corpus), len(seen), executed.Load(), refused.Load(), execs.Load(), inCode.Load(), time.Since(start).Round(time.Millisecond))
	for _, err := range errs {
		t.Errorf("oracle could not judge: %v", err)
	}
	slices.SortFunc(failures, func(a, b oracleVerdict) int { return len(a.Command) - len(b.Command) })
	for i, v := range failures {
		if i == 200 {
			t.Errorf("... and %d more", len(failures)-i)
			break
		}
		t.Errorf("bash ran a program Analyze did not list:\n%v", v)
	}
	if len(failures) > 0 {
		classes := map[string]int{}
		for _, v := range failures {
			for _, e := range v.Unjudged {
				classes[oracleClass(e, v.Analysis.Commands)]++
			}
		}
		names := slices.Sorted(maps.Keys(classes))
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "\n  %5d  %s", classes[n], n)
		}
		t.Errorf("%d commands ran unjudged programs; unjudged programs by kind:%s", len(failures), b.String())
	}
}

// FuzzOracle runs the oracle's check on fuzzed input: whatever Analyze
// calls simple runs in the sandbox, and every program it starts must be
// among Analysis.Commands. Run it with
//
//	go test ./shell -run '^$' -fuzz FuzzOracle
//
// Without a sandbox (see TestOracle) it is skipped.
func FuzzOracle(f *testing.F) {
	// When fuzzing, the seed tricks are the starting corpus; a plain go
	// test (where TestOracle already runs every seed) runs a few commands
	// only.
	seeds := []string{"ls -l", "touch 'a  b'", "git status", "find . -maxdepth 0 -exec touch {} \\;", "timeout 5 nice ls"}
	if fz := flag.Lookup("test.fuzz"); fz != nil && fz.Value.String() != "" {
		all, err := oracleLoadSeeds()
		if err != nil {
			f.Fatal(err)
		}
		seeds = all
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		if !Analyze(command).Simple {
			return
		}
		sb := oracleSandboxOrSkip(t)
		v, _, err := oracleCheck(sb, command)
		if err != nil {
			t.Fatalf("oracle could not judge: %v", err)
		}
		if len(v.Unjudged) > 0 {
			t.Fatalf("bash ran a program Analyze did not list:\n%v", v)
		}
	})
}

// TestOracleSandbox checks, from inside the sandbox, that a command cannot
// change anything outside its box, has no network and cannot stop the
// oracle; and that the oracle sees what bash runs, including what a
// builtin's subshell runs.
func TestOracleSandbox(t *testing.T) {
	sb := oracleSandboxOrSkip(t)
	outside, err := os.MkdirTemp("", "warden-oracle-outside-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	// World-writable, so that only the read-only mount can stop the write.
	if err := os.Chmod(outside, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cmd string
		wantErr   string // in the command's standard error
	}{
		{"write /", "touch /oracle-escape", "Read-only file system"},
		{"write /tmp", "touch " + outside + "/escape", "Read-only file system"},
		{"write /dev", "touch /dev/oracle-escape", "Read-only file system"},
		{"remount /", "mount -o remount,rw /", "permission denied"},
		{"unmount /", "umount -l " + outside, ""},
		{"no network", "bash -c 'echo > /dev/tcp/127.0.0.1/22'", "Network is unreachable"},
		{"no network ip", "ip -o link", ""},
		{"proc sys", "bash -c 'echo 3 > /proc/sys/vm/drop_caches'", "Permission denied"},
		{"uid outside", "bash -c 'tr -s \" \" < /proc/self/uid_map >&2; tr -s \" \" < /proc/self/gid_map >&2'", " 0 65534 1\n 0 65534 1\n"},
		{"kill all", "kill -9 -1", ""},
		{"rm everything", "rm -rf --no-preserve-root /", ""},
		{"fork bomb", "bash -c 'f() { f & f & }; f'", ""},
		{"reboot", "reboot -f", ""},
	} {
		resp, err := sb.Run(tc.cmd)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.wantErr != "" && !strings.Contains(resp.Stderr, tc.wantErr) {
			t.Errorf("%s: %q: stderr %q, want %q", tc.name, tc.cmd, resp.Stderr, tc.wantErr)
		}
	}
	if _, err := os.Stat("/oracle-escape"); err == nil {
		os.Remove("/oracle-escape")
		t.Error("a command wrote to /")
	}
	if _, err := os.Stat(outside + "/escape"); err == nil {
		t.Error("a command wrote to /tmp outside its box")
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("rm -rf / reached the host: %v", err)
	}
	// The network namespace has a loopback interface only, and it is down.
	resp, err := sb.Run("cat /proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	if resp.TimedOut {
		t.Fatal("cat timed out")
	}
	// The box is fresh every time: a file made by one command is gone for
	// the next, and the hostile names are there.
	for _, cmd := range []string{"touch made-here", "ls made-here"} {
		if _, err := sb.Run(cmd); err != nil {
			t.Fatal(err)
		}
	}
	resp, err = sb.Run("ls made-here")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Stderr, "No such file") {
		t.Errorf("box not fresh: ls made-here: %q", resp.Stderr)
	}

	// The oracle sees what bash runs, with exact argv, and what a builtin's
	// subshell runs. These commands are judged against fixed lists here,
	// not Analyze, so that the machinery itself is tested.
	for _, tc := range []struct {
		cmd      string
		commands []string
		unjudged []string // forms of the execs that must be reported
		box      string
	}{
		{"touch 'a  b' ''", []string{"touch a b"}, nil, ""},
		{"/usr/bin/touch x", []string{"touch x"}, nil, ""},
		{"echo $(touch pwned)", []string{"echo"}, []string{"touch pwned"}, ""},
		{"printf -v 'a[$(touch pwned)]' x", []string{"printf -v a[$(touch pwned)] x"}, []string{"touch pwned"}, ""},
		{"timeout [1] [r]m ls", []string{"timeout [1] [r]m ls", "[r]m ls"}, []string{"rm ls"}, ""},
		{"timeout * ls", []string{"timeout * ls", "ls"}, []string{"rm sub ls"}, "pair"},
		{"find . -maxdepth 1 -name '*touch*' -exec sh -c 'echo {}' \\;", []string{"find . -maxdepth 1 -name *touch* -exec sh -c echo {} ;", "sh -c echo {}", "echo {}"},
			[]string{"touch pwned-bq", "touch pwned-name"}, ""},
		{"find . -maxdepth 1 -name x -exec rm {} +", []string{"find . -maxdepth 1 -name x -exec rm {} +", "rm {}"}, nil, ""},
		{"find . -maxdepth 1 -name 'a*' -exec touch {}.t \\;", []string{"find . -maxdepth 1 -name a* -exec touch {}.t ;", "touch {}.t"}, nil, ""},
		{"xargs -a args.txt -I{} echo {}", []string{"xargs -a args.txt -I{} echo {}", "echo {}"}, []string{"echo touch pwned-args"}, ""},
		{"exec -a ls touch x", []string{"exec -a ls touch x", "touch x"}, []string{"ls x"}, ""},
		{"bash -c 'sh -c \"touch deep\"'", []string{"bash -c sh -c \"touch deep\"", "sh -c touch deep"}, []string{"touch deep"}, ""},
		{"find sub -maxdepth 1 -name rm -exec {} \\;", []string{"find sub -maxdepth 1 -name rm -exec {} ;", "{}"}, []string{"rm"}, ""},
	} {
		resp, err := sb.RunIn(tc.box, tc.cmd)
		if err != nil {
			t.Fatalf("%q: %v", tc.cmd, err)
		}
		execs, err := parseOracleTrace(resp.Trace, tc.cmd)
		if err != nil {
			t.Fatalf("%q: %v", tc.cmd, err)
		}
		var got []string
		for _, e := range execs {
			if !oracleJudged(e, tc.commands) {
				got = append(got, oracleUnjudgedForm(e, tc.commands))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.unjudged) {
			t.Errorf("%q: unjudged %q, want %q (execs %v, stderr %q)", tc.cmd, got, tc.unjudged, execs, resp.Stderr)
		}
	}
}

// TestOracleTraceParse checks the strace reader on the shapes strace
// prints: finished, unfinished and resumed calls, failed calls, execveat,
// NULL and unreadable argv, and refuses what it cannot read.
func TestOracleTraceParse(t *testing.T) {
	hex := func(s string) string {
		var b strings.Builder
		b.WriteByte('"')
		for _, c := range []byte(s) {
			fmt.Fprintf(&b, "\\x%02x", c)
		}
		b.WriteByte('"')
		return b.String()
	}
	argv := func(a ...string) string {
		q := make([]string, len(a))
		for i, s := range a {
			q[i] = hex(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	cmd := "touch a\nb"
	prefix := fmt.Sprintf("10 execve(%s, %s, 0x7ffe /* 5 vars */) = 0\n", hex("/usr/bin/prlimit"), argv("prlimit", "--"))
	prefix += fmt.Sprintf("10 execve(%s, %s, 0x7ffe /* 5 vars */) = 0\n", hex("/tmp/go-build1/shell.test"), argv("/tmp/go-build1/shell.test", "/usr/bin/bash", "-c", cmd))
	prefix += "10 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|CLONE_NEWUSER|SIGCHLD) = 9\n"
	prefix += fmt.Sprintf("9 execve(%s, %s, 0x7ffe /* 5 vars */) = 0\n", hex("/usr/bin/bash"), argv("/usr/bin/bash", "-c", cmd))
	good := prefix +
		"9 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x7f06) = 11\n" +
		"9 clone3({flags=CLONE_VM, exit_signal=SIGCHLD, stack=0x7f, stack_size=0x9000} <unfinished ...>\n" +
		fmt.Sprintf("11 execve(%s, %s, 0x55 /* 5 vars */) = -1 ENOENT (No such file or directory)\n", hex("/usr/local/bin/touch"), argv("touch", "a\nb")) +
		"9 <... clone3 resumed> => {parent_tid=[12]}, 88) = 12\n" +
		"9 vfork() = -1 EAGAIN (Resource temporarily unavailable)\n" +
		"9 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK, parent_tid=0xc0) = ? ERESTARTNOINTR (To be restarted)\n" +
		"9 vfork( <unfinished ...>\n" +
		fmt.Sprintf("15 execve(%s, %s, 0x55 /* 5 vars */) = 0\n", hex("/usr/bin/git"), argv("git")) +
		"9 <... vfork resumed>) = 15\n" +
		fmt.Sprintf("11 execve(%s, %s, 0x55 /* 5 vars */ <unfinished ...>\n", hex("/usr/bin/touch"), argv("touch", "a\nb", `"q"`)) +
		fmt.Sprintf("12 execveat(AT_FDCWD, %s, %s, 0x55 /* 5 vars */, 0) = 0\n", hex("/usr/bin/id"), argv("id")) +
		"11 <... execve resumed>)            = 0\n" +
		fmt.Sprintf("13 execve(%s, NULL, NULL) = 0\n", hex("/usr/bin/x")) +
		fmt.Sprintf("14 execve(%s, 0x1234, NULL) = 0\n", hex("/usr/bin/y")) +
		"11 +++ exited with 0 +++\n" +
		"16 ???( <detached ...>\n" +
		"17 ???( <unfinished ...>\n" +
		"17 <... ??? resumed>) = ?\n"
	execs, err := parseOracleTrace(good, cmd)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`15 ["git"] by /usr/bin/bash`, `12 ["id"] by /usr/bin/bash`, `11 ["touch" "a\nb" "\"q\""] by /usr/bin/bash`, `13 [] by `, `14 "/usr/bin/y" with an unreadable argv by `}
	var got []string
	for _, e := range execs {
		got = append(got, fmt.Sprintf("%d %v by %s", e.PID, e, e.Runner))
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsed %q, want %q", got, want)
	}
	if l := execs[2].Lineage; len(l) != 1 || l[0].Path != "/usr/bin/bash" || len(l[0].Lineage) != 0 {
		t.Errorf("lineage of %v: %v", execs[2], l)
	}
	if oracleJudged(execs[4], []string{"y"}) || oracleJudged(execs[3], []string{""}) {
		t.Error("an exec with no readable argv was judged")
	}
	for name, bad := range map[string]string{
		"truncated": prefix + fmt.Sprintf("11 execve(%s, [%s...], 0x55 /* 5 vars */) = 0\n", hex("/usr/bin/touch"), hex("touch")),
		"plain":     prefix + "11 execve(\"/usr/bin/touch\", [\"touch\"], 0x55 /* 5 vars */) = 0\n",
		"no start":  fmt.Sprintf("10 execve(%s, %s, 0x7ffe /* 5 vars */) = 0\n", hex("/usr/bin/bash"), argv("bash", "-c", cmd)),
		"no bash":   strings.Split(prefix, "10 clone")[0],
		"other cmd": strings.ReplaceAll(prefix, hex(cmd), hex("other")),
		"garbage":   prefix + "11 something else\n",
		"resumed":   prefix + "11 <... execve resumed>) = 0\n",
		"clone":     prefix + "9 <... clone resumed>) = 12\n",
		"empty":     "",
	} {
		if _, err := parseOracleTrace(bad, cmd); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestOracleJudged checks the matching of execs against Commands,
// including find's {} placeholder.
func TestOracleJudged(t *testing.T) {
	if oracleHomeDir == "" {
		oracleHomeDir = "/tmp/box"
	}
	ex := func(argv ...string) oracleExec { return oracleExec{Path: "/usr/bin/" + baseName(argv[0]), Argv: argv} }
	for _, tc := range []struct {
		e        oracleExec
		commands []string
		want     bool
	}{
		{ex("rm", "-rf", "x"), []string{"rm -rf x"}, true},
		{ex("/bin/rm", "-rf", "  x ", ""), []string{"rm -rf x"}, true},
		{ex("rm", "-rf", "x"), []string{"rm -rf"}, false},
		{ex("rm", "-rf", "x"), []string{"rm -r x"}, false},
		{ex("rm", "./a b"), []string{"rm {}"}, true},
		{ex("rm", "./a", "./b", "sub/x"), []string{"rm {}"}, true},
		{ex("rm", "-rf", "./a"), []string{"rm {}"}, false},
		{ex("rm", "./a", "-rf"), []string{"rm {}"}, false},
		{ex("rm", "-rf"), []string{"rm {}"}, false},
		{ex("echo", "touch pwned"), []string{"echo {}"}, false},
		{ex("echo", "{}", "touch", "pwned"), []string{"echo {}"}, false},
		{ex("echo", "{}"), []string{"echo {}"}, true},
		{ex("sh", "-c", "echo ./x"), []string{"sh -c echo {}"}, true},
		{ex("touch", "./x.t", "./x"), []string{"touch {}.t {}"}, true},
		{ex("touch", "./x.t", "./y"), []string{"touch {}.t {}"}, false},
		{ex("x"), []string{"{}"}, false},
		{ex("rm", "./x"), []string{"{} ./x"}, false},
		{ex("ls", "1", "rm", "rootlink"), []string{"ls [1r]*"}, true},
		{ex("ls", "1", "rm", "x"), []string{"ls [1r]*"}, false},
		{ex("ls", "[1r]*"), []string{"ls [1r]*"}, true},
		{ex("ls", "-rf", "x"), []string{"ls *"}, false},
		{ex("ls", "--", "-rf", "x"), []string{"ls -- *"}, true},
		{ex("find", ".", "-exec"), []string{"find . -exe[c]"}, false},
		{ex("find", "--", "-exec"), []string{"find -- -exe[c]"}, true},
		{ex("cat", "sub/a b", "sub/rm"), []string{"cat s*/*"}, true},
		{ex("cat", "sub/a b", ".x"), []string{"cat *"}, false},
		{ex("cat", "sub/x"), []string{"cat *"}, false},
		{ex("ls", oracleHomeDir+"/sub", "/root"), []string{"ls ~/sub ~root"}, true},
		{ex("env", "A="+oracleHomeDir+":"+oracleHomeDir+"/x"), []string{"env A=~:~/x"}, true},
		{ex("ls", "/etc"), []string{"ls ~"}, false},
		{oracleExec{Path: "/usr/bin/rm", Argv: []string{"ls", "x"}}, []string{"ls x"}, false},
		{oracleExec{Path: "/usr/bin/rm", Argv: []string{"ls", "x"}}, []string{"ls x", "rm x"}, true},
	} {
		if got := oracleJudged(tc.e, tc.commands); got != tc.want {
			t.Errorf("oracleJudged(%v, %q) = %v, want %v", tc.e, tc.commands, got, tc.want)
		}
	}
}

// TestOracleFnmatch checks the bash pattern reader on the edges where
// bash differs from Go's path.Match.
func TestOracleFnmatch(t *testing.T) {
	for _, tc := range []struct {
		p, n string
		want bool
	}{
		{"*", "abc", true}, {"a*c", "abbc", true}, {"a*c", "abd", false}, {"?", "a", true}, {"?", "", false},
		{"[-]exec", "-exec", true}, {"[-]exec", "xexec", false}, {"[*", "[", true}, {"[*", "[x", true}, {"[*", "x", false},
		{"[!a]", "b", true}, {"[!a]", "a", false}, {"[^a]", "a", false}, {"[]a]", "]", true}, {"[a-]", "-", true},
		{"[a-c]x", "bx", true}, {"[a-c]x", "dx", false}, {"[[:digit:]]", "7", true}, {"[[:digit:]]", "x", false},
		{"[![:alpha:]]*", "-rf", true}, {"[![:alpha:]]*", "rf", false}, {"a[", "a[", true}, {"[1r]*", "rootlink", true},
		{"[]-a]", "-", false}, {"[!]]", "]", false}, {"[!]]", "x", true},
	} {
		if got := oracleFnmatch(tc.p, tc.n); got != tc.want {
			t.Errorf("oracleFnmatch(%q, %q) = %v, want %v", tc.p, tc.n, got, tc.want)
		}
	}
}

// TestOracleInCode checks that only descendants of a judged interpreter
// are set aside.
func TestOracleInCode(t *testing.T) {
	saved := oracleRunsCode
	defer func() { oracleRunsCode = saved }()
	oracleRunsCode = func(name string) bool { return name == "awk" }
	awk := oracleExec{Path: "/usr/bin/awk", Argv: []string{"awk", "BEGIN{system(\"touch x\")}"}}
	sh := oracleExec{Path: "/bin/sh", Argv: []string{"sh", "-c", "touch x"}}
	touch := oracleExec{Path: "/usr/bin/touch", Argv: []string{"touch", "x"}, Lineage: []oracleExec{sh, awk}}
	judged := []string{`awk BEGIN{system("touch x")}`}
	if !oracleInCode(touch, judged) {
		t.Error("a program an allowed awk started is not set aside")
	}
	if oracleInCode(touch, []string{"awk x"}) {
		t.Error("a program an unjudged awk started is set aside")
	}
	if oracleInCode(oracleExec{Path: "/usr/bin/touch", Argv: []string{"touch"}, Lineage: []oracleExec{sh}}, judged) {
		t.Error("a program without an interpreter among its ancestors is set aside")
	}
}

// TestOracleGitSelf checks that only git starting git is git's own
// implementation.
func TestOracleGitSelf(t *testing.T) {
	for _, tc := range []struct {
		path, runner string
		want         bool
	}{
		{"/usr/bin/git", "/usr/bin/git", true},
		{"/usr/lib/git-core/git-submodule", "/usr/bin/git", true},
		{"/usr/bin/git", "/usr/lib/git-core/git-submodule", true},
		{"/usr/bin/sh", "/usr/bin/git", false},
		{"/usr/bin/sed", "/usr/lib/git-core/git-submodule", false},
		{"/usr/bin/git", "/usr/bin/bash", false},
		{"/usr/bin/git", "", false},
		{"/tmp/box/git", "/usr/bin/git", false},
	} {
		if got := oracleGitSelf(oracleExec{Path: tc.path, Argv: []string{"git"}, Runner: tc.runner}); got != tc.want {
			t.Errorf("oracleGitSelf(%s by %s) = %v, want %v", tc.path, tc.runner, got, tc.want)
		}
	}
}

// TestOracleCorpus checks that the seeds load, that generation is
// deterministic, and that the corpus exercises what it is meant to.
func TestOracleCorpus(t *testing.T) {
	seeds, err := oracleLoadSeeds()
	if err != nil {
		t.Fatal(err)
	}
	if len(seeds) < 300 {
		t.Errorf("only %d seeds", len(seeds))
	}
	a, b := oracleCorpus(t, 3000, 7), oracleCorpus(t, 3000, 7)
	if !slices.Equal(a, b) {
		t.Error("corpus generation is not deterministic")
	}
	if c := oracleCorpus(t, 3000, 8); slices.Equal(a, c) {
		t.Error("the seed does not change the corpus")
	}
	joined := strings.Join(a, "\x00")
	for _, want := range []string{"\\\n", "printf", "-exe[c]", "xargs -a", "git", "find", "sudo", "timeout", "$(", "a[", "'", "\""} {
		if !strings.Contains(joined, want) {
			t.Errorf("corpus never contains %q", want)
		}
	}
}
