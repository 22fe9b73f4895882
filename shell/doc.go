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
//     '&', a trailing ';' or '&', and unquoted newlines (a backslash-newline
//     line continuation is allowed, since bash deletes it before reading
//     words).
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
//     ($((...))), process substitution (<(...), >(...)), extended globs,
//     and the $'...' and $"..." quotes.
//   - Brace expansion ({rm,-rf,/} becomes three words), and pathname
//     expansion characters (*, ?, [...]) in a command name, where
//     /???/r? could expand to /bin/rm. Globs in arguments are allowed.
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
// # Normalization
//
// Each word is replaced by its value: quotes are removed and backslash
// escapes resolved as bash would, so r\m, "rm" and 'r'm all become rm.
// Words are joined by single spaces; blanks inside a quoted argument fold
// to one space and an argument left empty is dropped, so no form has two
// spaces in a row. The command name loses its directory (/bin/rm becomes
// rm); arguments keep theirs. Case is preserved and the tilde is left as
// written.
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
// "timeout 5 rm x" and "rm x". The wrappers known, by the base name of the
// command and ignoring case, are:
//
//   - sudo (its options, including the ones taking a value, and NAME=VALUE
//     settings; with -s or -i the command is handed to a shell, so it is
//     analyzed as a script; -e edits files and runs no command) and doas;
//   - env (options, "-", NAME=VALUE; -S is refused, its splitting rules
//     are not analyzed);
//   - command, builtin, exec, nice, nohup, setsid, time (the bash keyword,
//     time -p, and GNU time), timeout (options, then the duration);
//   - xargs (options; the command defaults to echo);
//   - find, whose every -exec, -execdir, -ok and -okdir runs the words up
//     to ";" or to a "+" after "{}";
//   - sh, bash, zsh, dash, ksh, ash, mksh and rbash with -c (also inside a
//     cluster such as -lc): the script is analyzed with all the rules
//     above, and must itself be simple;
//   - eval, whose arguments joined by spaces are analyzed as a script;
//   - busybox, whose first argument is the applet to run.
//
// A wrapper with no command after its options contributes only its own
// form. Options are read the way the real tool reads them (getopt_long
// with unambiguous long-option prefixes); an option a tool does not know
// makes it fail without running anything. A command name that the wrapper
// fills in at run time, such as find -exec {} or xargs -I % %, is refused.
//
// # Matching is not done here
//
// This package only parses, normalizes and unwraps. Matching globs against
// Analysis.Commands, case-insensitively and taking the most restrictive
// effect over all of them, is the job of the policy package.
package shell
