// Package shell decides whether a bash command line is a single simple
// command that a rule policy can judge by its text, and if so puts it in a
// normalized form and lists every command it runs through known wrappers.
//
// # Model
//
// A rule policy matches globs against the command of a bash tool call. A
// glob can only be trusted on a command whose text says everything that
// will run, so before any glob is tried the command must be exactly one
// simple command: a command name and arguments made only of literal text.
// Analyze checks this with a real bash parser (mvdan.cc/sh/v3/syntax in its
// bash dialect), not with regular expressions, so that quoting is read the
// way bash reads it: "echo 'a|b'" is one simple command whose argument
// happens to hold a '|', while "echo a|b" is a pipeline.
//
// The package fails closed. Whatever it cannot prove to be one simple
// command of literal words is reported as not simple, with a short reason
// in Analysis.Problem, and the policy is expected to refuse it or to send
// it for review. Analyze never reports a command as simple when bash would
// run more than one command for it, and it never panics.
//
// # What is refused
//
//   - More than one statement, or any control operator: ';', '&&', '||',
//     '&', a trailing ';' or '&', and unquoted newlines.
//   - Pipes '|' and '|&', negation '!', coprocesses.
//   - Any redirection, here-document or here-string: they write or read
//     files the policy never sees.
//   - Compound commands: subshells, { } groups, if, for, while, until,
//     case, select, function declarations, [[ ]], (( )), let, and
//     declaration builtins such as export and declare.
//   - Assignments, alone or before a command (FOO=1 cmd), which can change
//     what the command does (PATH, LD_PRELOAD, ...).
//   - Every expansion that computes text at run time: parameters ($VAR,
//     ${...}), command substitution ($(...) and backticks), arithmetic
//     ($((...)) and $[...]), process substitution (<(...), >(...)),
//     extended globs, and the $'...' and $"..." quotes.
//   - Brace expansion ({rm,-rf,/} becomes three words), and pathname
//     expansion characters (*, ?, [...]) in a command name, where
//     /???/r? could expand to /bin/rm. Globs in arguments: see below.
//   - Comments, which could mislead a reviewer reading the raw text.
//   - Bytes that the parser and bash read differently: NUL, carriage
//     return (which can also hide text on a terminal), a lone backslash at
//     the very end, and a backslash right after a non-ASCII byte (in a
//     GBK, Big5 or Shift-JIS locale bash takes the two as one character).
//   - Empty or blank commands, and command names that are empty, contain
//     blanks or control characters, or end in '/'.
//   - Commands longer than MaxCommandLength bytes, and wrapper chains
//     deeper than MaxNesting.
//
// The command is assumed to run in a non-interactive bash (or a POSIX sh),
// as with bash -c: aliases and history expansion ("!!") are not expanded
// there, and are not considered here.
//
// # Line continuations
//
// bash deletes every backslash-newline pair (whose backslash is not itself
// escaped) before it splits words, everywhere but inside single quotes, so
// "$\<newline>(touch x)" is a command substitution to bash while a parser
// reading the text as written sees a literal '$' followed by "(touch x)".
// The same join hides ${...}, $[...], $'...' and $"...". So whenever a
// command holds a line continuation, it is judged in the form bash reads:
// the continuations are deleted, the result is parsed again, and every rule
// of this package applies to it; a refusal there is reported as "after
// joining line continuations: ...". The single-quoted spans that keep their
// backslash-newline come from the first parse; bash could only disagree
// about one of them after an earlier join had changed the text, and that
// join is in the result, where it is refused. Scripts that a wrapper hands
// to a shell (sh -c, eval, watch, su -c, ssh, ...) are values, and are
// judged the same way when they are parsed in their turn.
//
// # Builtins that evaluate their arguments
//
// bash evaluates the array subscript of a variable name given to several
// builtins as arithmetic, and arithmetic runs command substitutions:
// printf -v 'a[$(cmd)]' runs cmd. Verified against bash 5.2, and decided
// per builtin (wherever the command appears, also under a wrapper):
//
//   - declare, typeset, local, export, readonly, let: refused. At the start
//     of a command the parser already reports them as clauses; through
//     builtin or command they are refused by name.
//   - fc: refused; it runs commands from the history or an editor.
//   - printf -v NAME, read [-a NAME] NAME..., mapfile/readarray ARRAY,
//     getopts OPTSTRING NAME, wait -p NAME, unset NAME...: every name must
//     be a plain identifier ([A-Za-z_][A-Za-z0-9_]*), and an option the
//     builtin does not have is refused. mapfile and readarray -C CALLBACK
//     are refused.
//   - test and [: -v NAME and -R NAME need a plain identifier. Their
//     numeric operators (-eq, ...) do not evaluate arithmetic in bash 5.2.
//   - compgen and complete: -W (a word list bash expands), -C (a command)
//     and -F (a function) are refused.
//   - trap with an action, and enable -f (loads a shared object): refused.
//   - source and . FILE: refused; they run a script file whose text the
//     policy never sees (run the file itself, ./FILE, to have it judged by
//     its name).
//   - jobs -x COMMAND: judged through, as a wrapper.
//   - The rest are judged by the policy like any program: hash -p, alias,
//     shopt, set, cd, ulimit, bind, history, kill, shift, exit and the
//     like (none of them evaluates a literal argument as code in bash 5.2,
//     and a simple command has no later command for a changed setting to
//     act on).
//
// # Globs in arguments
//
// An unquoted glob (*, ?, or [ closed by ], after quotes and escapes are
// resolved) in an argument is replaced by bash with the names of matching
// files, and files can be named anything: with files "1" and "rm" here,
// "timeout * ls -rf DIR" runs rm; a file named -exec turns
// "find . -exe[c] rm {} +" into an exec; -delet[e] dodges a deny on
// "find *-delete*". So a glob in any argument is refused when the command
// is one whose arguments choose what runs or what it does:
//
//   - every wrapper judged through (see below), sh and the other shells,
//     eval, source and ., trap, newgrp, run-parts;
//   - the builtins above that take names or callbacks: printf, read,
//     mapfile, readarray, wait, unset, getopts, test, [, compgen, complete,
//     enable (a file can be named a[$(cmd)]);
//   - git, tar, rsync, scp, sftp, sed, awk (gawk, mawk, nawk), perl,
//     python, ruby, node, php, lua, sort (--compress-program), rg (--pre),
//     less, more, man, vi, vim, nvim, emacs, make, zip, 7z, wget, curl,
//     parallel, docker, podman, kubectl, npm, npx, go, cargo, gdb, tmux,
//     screen, ssh-agent, fakeroot, crontab, at, systemctl, dpkg, apt,
//     apt-get, pip; a version suffix is ignored (python3.12, perl5).
//
// Names are compared lower-cased, by base name. For every other program a
// glob is accepted only where no match can be an option: a glob word that
// starts with '-' or with a glob character (*, ?, [) is refused unless a
// "--" argument comes before it, since a file named -rf turns rm * into
// rm -rf .... Write ./*.go, or put -- before the glob: ls ./*.go,
// ls -- *.go and ls src/*.go are accepted, ls *.go is not.
//
// # Environment settings
//
// env NAME=VALUE, sudo NAME=VALUE, strace -E and systemd-run -E are
// accepted only for names that cannot change which program runs or make it
// load other code: LANG, LANGUAGE, LC_*, TZ, TERM, NO_COLOR, CLICOLOR,
// CLICOLOR_FORCE, FORCE_COLOR, COLUMNS, LINES, DEBIAN_FRONTEND and CI (a
// locale value holding '/', which names locale files by path, is refused).
// Everything else is refused (PATH, LD_PRELOAD and every LD_*, BASH_ENV,
// ENV, SHELLOPTS, BASHOPTS, PS4, IFS, BASH_FUNC_*, GIT_*, PAGER, EDITOR,
// PYTHONSTARTUP, NODE_OPTIONS, ...): the names programs read to find code
// are an open list, so only a closed one is allowed.
//
// # Wrappers
//
// Some commands run another command given in their arguments. Analyze
// judges through them: after the wrapper's own normalized form it appends
// the command the wrapper runs, recursively, so
//
//	sudo env timeout 5 rm x
//
// yields "sudo env timeout 5 rm x", "env timeout 5 rm x",
// "timeout 5 rm x" and "rm x". The policy takes the most restrictive answer
// over all of them, so the inner command decides and deny beats ask. The
// wrappers known, by the base name of the command and ignoring case, are:
//
//   - sudo (its options, including the ones taking a value, and NAME=VALUE
//     settings; with -s or -i the command is handed to a shell, so it is
//     analyzed as a script; -e edits files and runs no command) and doas;
//   - env (options, "-", NAME=VALUE; -S is refused, its splitting rules
//     are not analyzed; -P, which searches its own path, is refused);
//   - command, builtin, exec, nice, nohup, setsid, time (the bash keyword,
//     time -p, and GNU time), timeout (options, then the duration);
//   - stdbuf, ionice (with -p, -P or -u it runs nothing), chrt (then the
//     priority; with -p or -m nothing), taskset (then the mask; with -p
//     nothing), flock (then the lock file; "FILE -c SCRIPT" is a script),
//     unshare, nsenter, setpriv (--dump runs nothing), chroot (then the new
//     root, in which the command is looked up: its name is only as
//     trustworthy as that directory), systemd-run (unit properties,
//     --shell, --host and --machine are refused);
//   - strace and ltrace (-o |CMD, which pipes output into a shell command,
//     is refused, and -E is an environment setting);
//   - watch, whose words joined by spaces are a script for sh -c (with -x,
//     the command itself);
//   - su and runuser, which permute their options: -c and --session-command
//     are scripts, as is a -c among the arguments after the user, which su
//     hands to the shell; runuser -u USER COMMAND runs the command; -s
//     (which chooses the program that runs the command), -w, and a login
//     shell (-, -l, --login: the account's startup files run) are refused;
//   - script, whose -c is a script;
//   - ssh, whose options may also follow the destination: the words after
//     the destination joined by spaces are a script for the remote shell;
//     -F (a config file), -I (a PKCS#11 library) and -o keys other than a
//     short list that runs nothing (StrictHostKeyChecking, ConnectTimeout,
//     Port, User, IdentityFile, BatchMode, ...) are refused;
//   - logsave (then the log file), prlimit (with --pid nothing), jobs -x,
//     and sg GROUP [-c] COMMAND, whose
//     words joined by spaces are a script for sh -c;
//   - find, whose every -exec, -execdir, -ok and -okdir runs the words up
//     to ";" or to a "+" after "{}"; find puts each found file name wherever
//     "{}" appears, even inside a longer word, so "{}" in an argument of a
//     command whose arguments choose what runs (find -exec sh -c 'echo {}')
//     is refused like a glob;
//   - sh, bash, zsh, dash, ksh, ash, mksh, rbash and hush with -c (also
//     inside a cluster such as -ec): the script is analyzed with all the
//     rules above, and must itself be simple. Before the script only flags
//     that change how it runs are accepted (-e -u -x -f -v -n -a -C -E -T
//     -P -h -p, -o with errexit, nounset, pipefail, xtrace, noglob,
//     verbose, noexec, noclobber, errtrace, functrace, allexport or
//     physical, --norc, --noprofile, --verbose); -l, --login, -i, -s,
//     --rcfile, --init-file (startup files and standard input), -k, -O,
//     -H, -B, --posix, any +option and -o otherwise (parsing) are refused.
//     A shell without a -c script runs a script file or its standard
//     input, which the policy never sees, and is refused (only --version
//     and --help are accepted);
//   - eval, whose arguments joined by spaces are analyzed as a script;
//   - busybox, whose first argument is the applet to run (so busybox sh,
//     ash and hush are shells as above).
//
// A wrapper that hands its command to a shell (watch, script -c, flock
// FILE -c, sg, ssh, su -c, runuser -c) also lists that shell's own form
// before the script's commands, as the tool runs it: "sh -c SCRIPT", or for
// su and runuser the target user's shell, "bash -c SCRIPT" (the shell of
// root on the systems modeled). exec -a NAME is refused: the program would
// run under another name (a multi-call program such as busybox acts as
// NAME). Programs that run a command from their arguments with an option
// syntax not modeled here are refused by name: unbuffer, firejail, bwrap,
// setarch, linux32, linux64, numactl, cpulimit, catchsegv, valgrind, gdb,
// caffeinate, chpst, sem, parallel, ssh-agent, dbus-launch, xvfb-run,
// torsocks, proxychains, chronic, entr, daemonize, setuidgid, softlimit,
// envdir, envuidgid, schedtool, trickle, tsp, expect, tmux, screen, at,
// batch, crontab, pkexec, machinectl, systemd-nspawn, flatpak-spawn,
// nocache, eatmydata, faketime; so is ip netns exec and ip vrf exec.
//
// A wrapper with no command after its options contributes only its own
// form, except where the wrapper then starts a shell that reads standard
// input: chroot, unshare and nsenter without a command, su and runuser
// without -c (su - root), script without -c, sudo -s and -i, doas -s,
// newgrp, and sg without a command are refused, as is su with arguments
// for the shell that name a script file. run-parts (every program in a
// directory), start-stop-daemon (which runs the program its options name)
// dbus-run-session (which starts a dbus-daemon first) and fakeroot (a
// script that starts faked and runs the command through env) are refused. Options are read the way the real tool reads them
// (getopt_long with unambiguous long-option prefixes, permuted where the
// tool permutes), and every wrapper's option table is strict: an option not
// in it is refused, since a newer option that takes a value would move the
// command. A command name that the wrapper fills in at run time, such as
// find -exec {}, is refused.
//
// Some programs take a command in an option whose syntax is their own;
// those options are refused: rsync -e/--rsh/--rsync-path, scp -S/-o/-F,
// sftp -S/-o/-F/-D, tar -I/-F/--to-command/--use-compress-program/
// --checkpoint-action/--info-script/--new-volume-script/--rsh-command/
// --rmt-command (also in tar's old-style first word), man -P/-H/-X/--pager/
// --html/--browser, sort --compress-program, rg --pre, zip -T/
// --unzip-command, tcpdump -z, vim, vi, nvim and view -c/--cmd/-S/-s/-u,
// and a +CMD argument of vim, vi, nvim, view, ex, less and more (less
// +!cmd runs a shell command).
//
// Interpreters whose arguments are a program (awk, sed with its e command,
// perl -e, python -c, node -e, make and its Makefile, ...) are not judged
// through and not refused: a policy that allows one with a trailing *
// allows whatever that program can do. RunsCode reports them, and
// RunsCodePrograms lists them, so that a policy linter can warn. The same holds for a program run by path
// (./build.sh): its name is judged, its contents are not. A login shell
// (bash -l) also runs the profile scripts of the account.
//
// xargs is refused outright: it appends words read from its input, standard
// input (which a command run by bash -c inherits) or an -a FILE, to its
// command, and no policy can see them.
//
// # git
//
// git runs commands named by its configuration: alias.x=!cmd, core.pager,
// core.fsmonitor, core.sshCommand, core.editor, core.hooksPath,
// diff.external, credential.helper, sequence.editor, gpg.program and more.
// Unless the caller opts in with Options.AllowGitConfig (AnalyzeWith), the
// global options that set configuration, choose another repository with
// its own configuration (-C, --git-dir; a bare repository written anywhere,
// /tmp say, carries a config file) or where git finds its programs (-c,
// --config-env, --exec-path=DIR) are refused, and so is git config
// unless it only reads (--get, --list, get, list, ...), and so are the
// subcommands and options that run a command from the command line: rebase
// and difftool -x/--exec/--extcmd, bisect run, submodule foreach,
// filter-branch, --upload-pack, --receive-pack and --exec of the transport
// commands (clone -u, and clone -c/--config and --template, whose hooks
// run), grep -O, and send-email's command options; git accepts any
// unambiguous prefix of a long option, so prefixes of these (--exe=...)
// are refused as well; so are mergetool, difftool, web--browse and instaweb,
// which run the tool a configuration key names (mergetool.<tool>.cmd, ...)
// through a shell, and archive --remote (git starts the remote side
// through a shell). Whatever the opt-in, git help NAME and git SUB --help are
// refused: git runs man for a page the command names, which the check would
// not list (call man directly; man is judged as itself, and is one of the
// programs RunsCode reports, since it formats pages through its own helpers).
// The configuration of the repository git finds from the working directory is
// trusted as much as the working directory is (a policy must keep the editor
// away from .git/config); GIT_* variables set through env are refused as
// environment settings. The subcommands git implements as shell scripts
// (mergetool, submodule, web--browse, ...) run helpers of their own (sed,
// basename, gettext); the execution oracle counts those apart, as it counts
// what an interpreter runs.
//
// # Matching is not done here
//
// This package only parses, normalizes and unwraps. Matching globs against
// Analysis.Commands, case-insensitively and taking the most restrictive
// effect over all of them, is the job of the policy package.
package shell
