package shell_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/shell"
)

// Each row is a command that, at commit 445888d, Analyze called simple while
// bash 5.2 ran something its Commands did not show (or ran a program the
// policy could not see). Every one must now be refused with the problem given.
var bypassTests = []struct {
	class, in, problem string
}{
	// 1. Line continuations that bash deletes before reading words.
	{"continuation", "cat \"$\\\n(touch x)\"", "after joining line continuations: command substitution"},
	{"continuation", "cat $\\\n{HOME}", "after joining line continuations: parameter expansion"},
	{"continuation", "cat \"$\\\n{HOME}\"", "after joining line continuations: parameter expansion"},
	{"continuation", "echo $\\\n'\\x72m'", "after joining line continuations: ANSI-C quoting"},
	{"continuation", "echo $\\\n\"x\"", "after joining line continuations: locale quoting"},
	{"continuation", "echo $\\\n[1+2]", "after joining line continuations: arithmetic expansion"},
	{"continuation", "echo \"$\\\n\\\n(id)\"", "after joining line continuations: command substitution"},
	{"continuation", "sh -c 'cat \"$\\\n(touch x)\"'", "in sh -c script: after joining line continuations: command substitution"},
	{"continuation", "sh -c \"cat \\\"\\$\\\n(touch x)\\\"\"", "in sh -c script: command substitution"},
	{"continuation", "eval 'cat $\\\n{x}'", "in eval script: after joining line continuations: parameter expansion"},

	// 2. Builtins that evaluate names, subscripts or code from literal arguments.
	{"builtin", "printf -v 'a[$(touch x)]' y", "printf -v with a name that is not an identifier"},
	{"builtin", "printf '-va[$(touch x)]' y", "printf -v with a name that is not an identifier"},
	{"builtin", "test -v 'a[$(touch x)]'", "test -v with a name that is not an identifier"},
	{"builtin", "[ -v 'a[$(touch x)]' ]", "[ -v with a name that is not an identifier"},
	{"builtin", "[ -R 'a[$(touch x)]' ]", "[ -R with a name that is not an identifier"},
	{"builtin", "read 'a[$(touch x)]'", "read with a variable name that is not an identifier"},
	{"builtin", "read -a 'a[$(touch x)]'", "read -a with a name that is not an identifier"},
	{"builtin", "mapfile 'a[$(touch x)]'", "mapfile with a variable name that is not an identifier"},
	{"builtin", "readarray -C 'touch x' a", "readarray -C callback"},
	{"builtin", "getopts a 'a[$(touch x)]' -a", "getopts variable name is not an identifier"},
	{"builtin", "wait -n -p 'a[$(touch x)]'", "wait -p with a name that is not an identifier"},
	{"builtin", "unset 'BASH_VERSINFO[$(touch x)]'", "unset with a variable name that is not an identifier"},
	{"builtin", "compgen -W '$(touch x)'", "compgen -W (evaluates its argument)"},
	{"builtin", "compgen -C 'touch x' y", "compgen -C"},
	{"builtin", "compgen -F f y", "compgen -F"},
	{"builtin", "complete -C 'touch x' y", "complete -C"},
	{"builtin", "builtin declare 'a[$(touch x)]=1'", "declaration builtin 'declare'"},
	{"builtin", "command export 'a=1'", "declaration builtin 'export'"},
	{"builtin", "builtin local 'a[$(touch x)]=1'", "declaration builtin 'local'"},
	{"builtin", "builtin typeset x", "declaration builtin 'typeset'"},
	{"builtin", "builtin readonly x", "declaration builtin 'readonly'"},
	{"builtin", "builtin let 'a[$(touch x)]'", "let (arithmetic evaluation)"},
	{"builtin", "fc -e 'touch x' -1", "fc (runs commands"},
	{"builtin", "sudo printf -v 'a[$(touch x)]' y", "printf -v with a name"},

	// 3. Globs in arguments of wrappers and action-selecting programs.
	{"glob", "timeout * ls -rf DIR", "glob in an argument of 'timeout'"},
	{"glob", "find . -exe[c] rm {} +", "glob in an argument of 'find'"},
	{"glob", "find . -delet[e]", "glob in an argument of 'find'"},
	{"glob", "sudo ?? -rf /", "glob in an argument of 'sudo'"},
	{"glob", "env * ls", "glob in an argument of 'env'"},
	{"glob", "git push --forc[e]", "glob in an argument of 'git'"},
	{"glob", "sed -n p *", "glob in an argument of 'sed'"},
	{"glob", "python3.12 *", "glob in an argument of 'python3.12'"},
	{"glob", "bash -c ls *", "glob in an argument of 'bash'"},
	{"glob", "eval ls *", "glob in an argument of 'eval'"},
	{"glob", "eval 'timeout * ls'", "in eval script: glob in an argument of 'timeout'"},
	{"glob", "sh -c 'nice [r]m x'", "in sh -c script: glob in an argument of 'nice'"},
	{"glob", "time timeout * ls", "glob in an argument of 'timeout'"},
	{"glob", "rm -rf *", "glob that can expand to an option: write ./* or put -- before it"},
	{"glob", "ls - *", "glob that can expand to an option"},
	{"glob", "date ?", "glob that can expand to an option"},
	{"glob", "stat . [-]exec", "glob that can expand to an option"},
	{"glob", "tee * x", "glob that can expand to an option"},
	{"glob", "ln -s x -exe[c]", "glob that can expand to an option"},
	{"glob", "cat *.go", "glob that can expand to an option"},
	{"glob", "cat \"\"*.go", "glob that can expand to an option"},
	{"glob", "cat ''?", "glob that can expand to an option"},
	{"glob", "cat '-'*", "glob that can expand to an option"},

	// 4. xargs appends words nobody judged.
	{"xargs", "xargs -a FILE rm", "xargs"},
	{"xargs", "xargs --arg-file=FILE rm", "xargs"},
	{"xargs", "xargs rm", "xargs"},
	{"xargs", "sudo xargs echo", "xargs"},

	// 5. Wrappers judged through: the inner command must be judged too.
	{"wrapper", "stdbuf -o0 bash -c 'a; b'", "in sh -c script: control operator ';'"},
	{"wrapper", "watch 'ls; rm -rf /'", "in watch command: control operator ';'"},
	{"wrapper", "watch -n 1 ls \\; rm x", "in watch command: control operator ';'"},
	{"wrapper", "su -c 'ls; rm x' root", "in su -c command: control operator ';'"},
	{"wrapper", "su root -c 'ls && rm x'", "in su -c command: control operator '&&'"},
	{"wrapper", "runuser bob -c 'a|b'", "in runuser -c command: pipe"},
	{"wrapper", "script -qc 'a;b' /dev/null", "in script -c command: control operator ';'"},
	{"wrapper", "flock /tmp/l -c 'a;b'", "in flock -c command: control operator ';'"},
	{"wrapper", "ssh host 'ls; rm -rf /'", "in ssh remote command: control operator ';'"},
	{"wrapper", "ssh host ls \\; rm x", "in ssh remote command: control operator ';'"},
	{"wrapper", "ssh -o ProxyCommand='touch x' host ls", "ssh -o ProxyCommand"},
	{"wrapper", "ssh host -oLocalCommand=x ls", "ssh -o LocalCommand"},
	{"wrapper", "ssh -F ./cfg host", "ssh -F"},
	{"wrapper", "strace -o '|touch x' ls", "strace -o with a pipe"},
	{"wrapper", "strace -E LD_PRELOAD=/tmp/x.so ls", "strace -E sets environment variable 'LD_PRELOAD'"},
	{"wrapper", "systemd-run -p ExecStartPre=/tmp/x ls", "systemd-run unit properties"},
	{"wrapper", "systemd-run --shell", "systemd-run --shell"},
	{"wrapper", "su -s /tmp/evil root", "su -s"},
	{"wrapper", "busybox sh -c 'a;b'", "in sh -c script: control operator ';'"},
	{"wrapper", "busybox hush -c 'a;b'", "in sh -c script: control operator ';'"},
	{"wrapper", "stdbuf --newer-option=x ls", "stdbuf: unknown option '--newer-option'"},
	{"wrapper", "timeout --newer-option 5 ls", "timeout: unknown option '--newer-option'"},
	{"wrapper", "env -P /tmp ls", "env -P"},

	// Found by the execution oracle: builtins and wrappers that run a
	// command, wrappers that start a shell on standard input, script files.
	{"oracle", "jobs -x sh -c 'a;b'", "in sh -c script: control operator ';'"},
	{"oracle", "tar xIf 'touch pwned' a.tar", "tar xIf"},
	{"oracle", "command jobs -x sh -c 'a;b'", "in sh -c script: control operator ';'"},
	{"oracle", "bash script.sh", "bash without a -c script runs a script from a file"},
	{"oracle", "sh -x script.sh", "sh without a -c script"},
	{"oracle", "bash", "bash without a -c script"},
	{"oracle", "bash -lc 'ls'", "bash option '-l'"},
	{"oracle", "bash --login -c 'ls'", "bash option '--login'"},
	{"oracle", "bash -i -c 'ls'", "bash option '-i'"},
	{"oracle", "bash -kc 'ls PATH=/tmp'", "bash option '-k'"},
	{"oracle", "bash -s", "bash option '-s'"},
	{"oracle", "bash -O extglob -c 'ls !(x)'", "bash option '-O'"},
	{"oracle", "bash +B -c ls", "bash option '+B'"},
	{"oracle", "bash --init-file x -c ls", "bash option '--init-file'"},
	{"oracle", "su root -- -lc 'ls'", "su option '-l'"},
	{"oracle", ". script.sh", ". (runs a script file the policy cannot see)"},
	{"oracle", "source script.sh", "source (runs a script file"},
	{"oracle", "chroot /", "chroot without a command starts a shell"},
	{"oracle", "unshare -r", "unshare without a command starts a shell"},
	{"oracle", "nsenter -t 1 -a", "nsenter without a command starts a shell"},
	{"oracle", "su - root", "su - (a login shell"},
	{"oracle", "su - root -c 'rm x'", "su - (a login shell"},
	{"oracle", "su root", "su without a command starts a shell"},
	{"oracle", "runuser -l root -c 'rm x'", "runuser -l (a login shell"},
	{"oracle", "su root script.sh", "su hands its arguments to a shell"},
	{"oracle", "runuser bob", "runuser without a command starts a shell"},
	{"oracle", "script -q /dev/null", "script without a command starts a shell"},
	{"oracle", "sudo -s", "sudo -s or -i without a command starts a shell"},
	{"oracle", "doas -s", "doas -s without a command starts a shell"},
	{"oracle", "newgrp root", "newgrp without a command starts a shell"},
	{"oracle", "sg root 'a;b'", "in sg command: control operator ';'"},
	{"oracle", "run-parts sub", "run-parts"},
	{"oracle", "find . -exec sh -c 'echo {}' \\;", "find -exec hands found file names to 'sh'"},
	{"oracle", "find . -exec bash -c {} \\;", "find -exec hands found file names to 'bash'"},
	{"oracle", "find . -execdir nice sh -c 'cat {}' +", "find -exec hands found file names to 'nice'"},
	{"oracle", "eval 'find . -exec sh -c '\\''echo {}'\\'' \\;'", "in eval script: find -exec hands found file names to 'sh'"},
	{"oracle", "logsave /dev/null sh -c 'a;b'", "in sh -c script: control operator ';'"},
	{"oracle", "prlimit --nofile=10 sh -c 'a;b'", "in sh -c script: control operator ';'"},
	{"oracle", "dbus-run-session -- rm x", "dbus-run-session (starts a dbus-daemon"},
	{"oracle", "fakeroot touch pwned", "fakeroot (a script"},
	{"oracle", "rsync -e 'touch pwned' x:y z", "rsync -e (an option that runs a command)"},
	{"oracle", "rsync --rsh='touch pwned' x:y z", "rsync --rsh (runs a command)"},
	{"oracle", "scp -S touch x:y z", "scp -S"},
	{"oracle", "tar --to-command='touch pwned' -xf a.tar", "tar --to-command"},
	{"oracle", "tar -I 'touch pwned' -xf a.tar", "tar -I"},
	{"oracle", "man -P 'touch pwned' ls", "man -P"},
	{"oracle", "sort --compress-program=sh x", "sort --compress-program"},
	{"oracle", "sort --compress=sh x", "sort --compress-program"},
	{"oracle", "rsync --rs='touch pwned' x:y z", "rsync --rsh"},
	{"oracle", "rg --pre=sh x", "rg --pre"},

	// 6. git's command-running configuration.
	{"git", "git -c alias.x='!touch y' x", "git -c (git configuration can run commands)"},
	{"git", "git -c core.fsmonitor='touch y' status", "git -c"},
	{"git", "git -c core.pager='touch y' log", "git -c"},
	{"git", "git --config-env=core.sshCommand=X fetch", "git --config-env"},
	{"git", "git --config-env core.editor=X commit", "git --config-env"},
	{"git", "git --exec-path=/tmp/evil status", "git --exec-path"},
	{"git", "git -C /tmp/bare -p log", "git -C (another repository's configuration can run commands)"},
	{"git", "git --git-dir=/tmp/bare log", "git --git-dir (another repository's"},
	{"git", "git --work-tree=. -c diff.external=x diff", "git -c"},
	{"git", "git config alias.x '!touch y'", "git config writing"},
	{"git", "git config --global core.hooksPath /tmp", "git config writing"},
	{"git", "git rebase -x 'touch y' main", "git rebase -x (runs a command)"},
	{"git", "git rebase --exec='touch y' main", "git rebase --exec (runs a command)"},
	{"git", "git bisect run touch y", "git bisect run"},
	{"git", "git daemon --help", "git daemon --help (runs man"},
	{"git", "git log --hel", "git log --hel (runs man"},
	{"git", "git help log", "git help NAME (runs man"},
	{"git", "git mergetool --tool-help", "git mergetool (runs a tool its configuration names)"},
	{"oracle", `flock lockf -c 'time "-p" dd -i'`, "command name starts with '-'"},
	{"oracle", `time "-p" rm x`, "command name starts with '-'"},
	{"git", "git difftool HEAD", "git difftool (runs a tool"},
	{"git", "git archive --remote=. HEAD", "git archive --remote (runs a command)"},
	{"git", "git archive --rem=. HEAD", "git archive --rem (runs a command)"},
	{"git", "git rebase --exe='touch y' main", "git rebase --exe (runs a command)"},
	{"git", "git fetch --upload='touch y' origin", "git fetch --upload (runs a command)"},
	{"git", "git clone --template=/tmp/hooks repo", "git clone --template (runs a command)"},
	{"git", "git send-email --sendmail-cmd='touch y' x.patch", "git send-email --sendmail-cmd"},
	{"oracle", "start-stop-daemon -S -x /usr/bin/touch -- pwned", "start-stop-daemon"},
	{"oracle", "exec -a ls touch pwned", "exec -a"},
	{"oracle", "exec -cla sh busybox -c x", "exec -a"},
	{"oracle", "unbuffer touch pwned", "unbuffer runs a command whose place"},
	{"oracle", "setarch x86_64 touch pwned", "setarch runs a command"},
	{"oracle", "ip netns exec ns touch pwned", "ip netns exec runs a command"},
	{"oracle", "ip vrf e red touch pwned", "ip vrf exec runs a command"},
	{"oracle", "less '+!touch pwned' x", "less +!touch pwned (runs a command at start)"},
	{"oracle", "vim -c '!touch pwned' -c q", "vim -c"},
	{"oracle", "vim +'!touch pwned' x", "vim +!touch pwned"},
	{"oracle", "tcpdump -z 'touch pwned' -w x", "tcpdump -z"},
	{"git", "git submodule foreach 'touch y'", "git submodule foreach"},
	{"git", "git fetch --upload-pack='touch y' origin", "git fetch --upload-pack"},
	{"git", "git clone -u 'touch y' repo", "git clone -u"},
	{"git", "git grep -O'touch y' x", "git grep -Otouch y (runs a command)"},
	{"git", "git filter-branch --tree-filter 'touch y'", "git filter-branch"},
	{"git", "sudo git -c alias.x='!touch y' x", "git -c"},
	{"git", "git --some-new-option value config alias.x '!y'", "git: unknown global option '--some-new-option'"},
	{"builtin", "compgen -V 'a[$(touch x)]' -W y", "compgen: unknown option '-V'"},

	// 7. Environment settings that change what runs.
	{"env", "env PATH=/tmp ls", "env sets environment variable 'PATH'"},
	{"env", "env LD_PRELOAD=/tmp/x.so ls", "env sets environment variable 'LD_PRELOAD'"},
	{"env", "env BASH_ENV=/tmp/x bash -c ls", "env sets environment variable 'BASH_ENV'"},
	{"env", "env 'BASH_FUNC_ls%%=() { touch x; }' bash -c ls", "env sets environment variable 'BASH_FUNC_ls%%'"},
	{"env", "env SHELLOPTS=xtrace PS4='$(touch x)' bash -c ls", "env sets environment variable 'SHELLOPTS'"},
	{"env", "env GIT_SSH_COMMAND='touch x' git fetch", "env sets environment variable 'GIT_SSH_COMMAND'"},
	{"env", "env PAGER='touch x' git log", "env sets environment variable 'PAGER'"},
	{"env", "env -i IFS=/ ls", "env sets environment variable 'IFS'"},
	{"env", "sudo LD_LIBRARY_PATH=/tmp ls", "sudo sets environment variable 'LD_LIBRARY_PATH'"},
	{"env", "sudo -u root EDITOR=x ls", "sudo sets environment variable 'EDITOR'"},
	{"env", "env LC_ALL=/tmp/loc ls", "env sets 'LC_ALL' to a path"},
}

func TestBypassesRefused(t *testing.T) {
	for _, tt := range bypassTests {
		a := shell.Analyze(tt.in)
		if a.Simple || !strings.Contains(a.Problem, tt.problem) || a.Commands != nil {
			t.Errorf("%s: Analyze(%q) = simple %v, problem %q, commands %q; want refused with %q",
				tt.class, tt.in, a.Simple, a.Problem, a.Commands, tt.problem)
		}
	}
}

// What the new rules keep accepting, and what each command judged through is.
func TestBypassRulesKeepOrdinaryCommands(t *testing.T) {
	tests := []struct {
		in   string
		cmds []string
	}{
		// Continuations that join nothing into an expansion.
		{"docker run \\\n  --rm \\\n  img", ok("docker run --rm img")},
		{"r\\\nm x", ok("rm x")},
		{"echo '$\\\n(x)'", ok("echo $\\ (x)")},
		{"echo \"a\\\nb\"", ok("echo ab")},
		// Builtins with plain names.
		{"printf -v out '%s' x", ok("printf -v out %s x")},
		{"printf '[%s]\\n' x", ok("printf [%s]\\n x")},
		{"read -r -p 'go [y/n]? ' answer", ok("read -r -p go [y/n]? answer")},
		{"test -v HOME", ok("test -v HOME")},
		{"[ -f 'a[1]' ]", ok("[ -f a[1] ]")},
		{"mapfile -t lines", ok("mapfile -t lines")},
		{"getopts ab opt -a", ok("getopts ab opt -a")},
		{"unset -v x y", ok("unset -v x y")},
		{"compgen -c gi", ok("compgen -c gi")},
		// Globs for plain programs.
		{"ls ./*.go", ok("ls ./*.go")},
		{"cat -- * ", ok("cat -- *")},
		{"ls src/*.go x?", ok("ls src/*.go x?")},
		{"rm -f ./*.tmp", ok("rm -f ./*.tmp")},
		{"timeout 5 ls '*'", ok("timeout 5 ls *", "ls *")},
		{"find . -name '*.go' -delete", ok("find . -name *.go -delete")},
		// Environment settings that change nothing that runs.
		{"env LANG=C LC_ALL=C TZ=UTC sort x", ok("env LANG=C LC_ALL=C TZ=UTC sort x", "sort x")},
		{"sudo TERM=dumb ls", ok("sudo TERM=dumb ls", "ls")},
		// git without command-running configuration.
		{"git --no-pager log -n 3", ok("git --no-pager log -n 3")},
		{"git commit -c HEAD", ok("git commit -c HEAD")},
		{"git config --get user.name", ok("git config --get user.name")},
		{"git log --cc -p", ok("git log --cc -p")},
		{"git format-patch --to=x@y HEAD~1", ok("git format-patch --to=x@y HEAD~1")},
		{"git --exec-path", ok("git --exec-path")},
		// New wrappers, judged through.
		{"stdbuf -oL -e 0 rm x", ok("stdbuf -oL -e 0 rm x", "rm x")},
		{"ionice -c3 -n7 rm x", ok("ionice -c3 -n7 rm x", "rm x")},
		{"ionice -p 42", ok("ionice -p 42")},
		{"chrt -f 10 rm x", ok("chrt -f 10 rm x", "rm x")},
		{"chrt -p 10 42", ok("chrt -p 10 42")},
		{"taskset -c 0-1 rm x", ok("taskset -c 0-1 rm x", "rm x")},
		{"taskset -p 42", ok("taskset -p 42")},
		{"flock -w 5 /tmp/l rm x", ok("flock -w 5 /tmp/l rm x", "rm x")},
		{"flock /tmp/l -c 'rm x'", ok("flock /tmp/l -c rm x", "sh -c rm x", "rm x")},
		{"unshare -r --mount=/m rm x", ok("unshare -r --mount=/m rm x", "rm x")},
		{"nsenter -t 1 -m -n rm x", ok("nsenter -t 1 -m -n rm x", "rm x")},
		{"watch -n 2 'rm x'", ok("watch -n 2 rm x", "sh -c rm x", "rm x")},
		{"watch -x rm x", ok("watch -x rm x", "rm x")},
		{"strace -f -e trace=execve rm x", ok("strace -f -e trace=execve rm x", "rm x")},
		{"ltrace -o out rm x", ok("ltrace -o out rm x", "rm x")},
		{"su -c 'rm x' root", ok("su -c rm x root", "bash -c rm x", "rm x")},
		{"su root -c 'rm x'", ok("su root -c rm x", "bash -c rm x", "rm x")},
		{"su root -- -c 'rm x'", ok("su root -- -c rm x", "bash -c rm x", "rm x")},
		{"runuser -u bob -- rm -l", ok("runuser -u bob -- rm -l", "rm -l")},
		{"setpriv --reuid=1000 --clear-groups rm x", ok("setpriv --reuid=1000 --clear-groups rm x", "rm x")},
		{"chroot --userspec=1:1 /srv rm x", ok("chroot --userspec=1:1 /srv rm x", "rm x")},
		{"script -q -c 'rm x' /dev/null", ok("script -q -c rm x /dev/null", "sh -c rm x", "rm x")},
		{"systemd-run --user --wait rm x", ok("systemd-run --user --wait rm x", "rm x")},
		{"ssh -p 2222 host -l me rm x", ok("ssh -p 2222 host -l me rm x", "sh -c rm x", "rm x")},
		{"ssh -o StrictHostKeyChecking=no host 'rm x'", ok("ssh -o StrictHostKeyChecking=no host rm x", "sh -c rm x", "rm x")},
		{"ssh host", ok("ssh host")},
		{"busybox ash -c 'rm x'", ok("busybox ash -c rm x", "ash -c rm x", "rm x")},
		{"nice -10 rm x", ok("nice -10 rm x", "rm x")},
		{"jobs -l", ok("jobs -l")},
		{"jobs -x rm x", ok("jobs -x rm x", "rm x")},
		{"logsave -a /tmp/log rm x", ok("logsave -a /tmp/log rm x", "rm x")},
		{"prlimit --nofile=10 rm x", ok("prlimit --nofile=10 rm x", "rm x")},
		{"sg root 'rm x'", ok("sg root rm x", "sh -c rm x", "rm x")},
		{"bash --version", ok("bash --version")},
		{"rsync -av src/ dst/", ok("rsync -av src/ dst/")},
		{"tar -xzf a.tgz", ok("tar -xzf a.tgz")},
	}
	for _, tt := range tests {
		a := shell.Analyze(tt.in)
		if !a.Simple {
			t.Errorf("Analyze(%q) refused: %s", tt.in, a.Problem)
			continue
		}
		if diff := cmp.Diff(tt.cmds, a.Commands); diff != "" {
			t.Errorf("Analyze(%q).Commands (-want +got):\n%s", tt.in, diff)
		}
	}
}

// git configuration is accepted only when the caller opts in, and then
// what git runs is still judged.
func TestAllowGitConfig(t *testing.T) {
	opts := &shell.Options{AllowGitConfig: true}
	for _, in := range []string{
		"git -c user.name=x commit -m y",
		"git --config-env=core.editor=EDITOR commit",
		"git config alias.st status",
		"git -C sub log",
	} {
		if a := shell.Analyze(in); a.Simple {
			t.Errorf("Analyze(%q) simple without the opt-in", in)
		}
		if a := shell.AnalyzeWith(in, opts); !a.Simple {
			t.Errorf("AnalyzeWith(%q, AllowGitConfig) refused: %s", in, a.Problem)
		}
	}
	// The opt-in covers the subcommands that run a command line too, and
	// what git runs through other wrappers is still judged.
	if a := shell.AnalyzeWith("git rebase -x 'touch y' main", opts); !a.Simple {
		t.Errorf("git rebase -x refused with AllowGitConfig: %s", a.Problem)
	}
	if a := shell.AnalyzeWith("sudo env PATH=/tmp git -c a=b log", opts); a.Simple {
		t.Errorf("an environment setting accepted because of AllowGitConfig")
	}
}

func TestRunsCode(t *testing.T) {
	for _, name := range []string{"awk", "/usr/bin/perl", "python3.12", "Ruby", "sed", "make", "node"} {
		if !shell.RunsCode(name) {
			t.Errorf("RunsCode(%q) = false", name)
		}
	}
	for _, name := range []string{"ls", "cat", "rm", "git", "", "3"} {
		if shell.RunsCode(name) {
			t.Errorf("RunsCode(%q) = true", name)
		}
	}
	list := shell.RunsCodePrograms()
	if len(list) < 20 || !slices.IsSorted(list) {
		t.Errorf("RunsCodePrograms() = %q", list)
	}
	list[0] = "changed"
	if shell.RunsCodePrograms()[0] == "changed" {
		t.Errorf("RunsCodePrograms hands out its internal slice")
	}
}
