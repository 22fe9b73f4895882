package shell

// Reading strace's record of the execve calls, and deciding whether one
// executed program is among what Analyze reported.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// oracleExec is one successful execve (or execveat) seen by strace.
type oracleExec struct {
	PID    int
	Path   string   // the file the kernel ran
	Argv   []string // nil when strace could not read argv
	Runner string   // the file of the program that started it ("" if unknown)
	// Lineage is the chain of programs that led to it, nearest first: the
	// program it replaced or whose process cloned its own, and so on.
	Lineage []oracleExec
}

// String shows an exec as its Go-quoted argv.
func (e oracleExec) String() string {
	if e.Argv == nil {
		return fmt.Sprintf("%q with an unreadable argv", e.Path)
	}
	q := make([]string, len(e.Argv))
	for i, a := range e.Argv {
		q[i] = strconv.Quote(a)
	}
	s := "[" + strings.Join(q, " ") + "]"
	if len(e.Argv) > 0 && baseName(e.Path) != baseName(e.Argv0()) {
		s += " (file " + strconv.Quote(e.Path) + ")"
	}
	return s
}

// Argv0 is argv[0], or "" when there is none.
func (e oracleExec) Argv0() string {
	if len(e.Argv) == 0 {
		return ""
	}
	return e.Argv[0]
}

var (
	oracleLinePID   = regexp.MustCompile(`^(\d+) +(.*)$`)
	oracleResult    = regexp.MustCompile(`^\) *= (-?\d+|\?)`)
	oracleSupersede = regexp.MustCompile(`^\+\+\+ superseded by execve in pid (\d+) \+\+\+$`)
	oracleClone     = regexp.MustCompile(`^(clone|clone3|fork|vfork)\(`)
	oracleCloneRes  = regexp.MustCompile(`\) += (-?\d+|\?)(?: .*)?$`)
)

// parseOracleTrace reads the output of strace -f -xx -e trace=execve,execveat
// (-o FILE, so every line starts with a PID) and returns the successful execs
// that the traced command caused: everything after the sandbox's own
// prlimit, the launcher and bash -c COMMAND, which must come first, in that order,
// in the first process. An unexpected line, a truncated string or a missing
// start is an error, never an empty list.
func parseOracleTrace(trace, command string) ([]oracleExec, error) {
	type call struct {
		exec oracleExec
	}
	pending := map[int]*call{}
	// Every successful exec is a node; its parent is the exec that ran in
	// the same process before it, or else the exec that was running in the
	// process that cloned it. With vfork the child may exec before strace
	// prints the parent's clone result, so such parents are joined at the
	// end.
	cur := map[int]int{}          // pid: node it runs now
	creatorNode := map[int]int{}  // pid: node of the process that cloned it
	clonePending := map[int]int{} // pid: node at an unfinished clone
	var parentOf []int            // per node: parent node, -1 none, -2 not known yet
	node := func(pid int) int {
		if n, ok := cur[pid]; ok {
			return n
		}
		return -1
	}
	var all []oracleExec
	root := -1
	for n, line := range strings.Split(trace, "\n") {
		if line == "" {
			continue
		}
		m := oracleLinePID.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("trace line %d: no pid: %q", n+1, line)
		}
		pid, _ := strconv.Atoi(m[1])
		rest := m[2]
		if root < 0 {
			root = pid
		}
		var c *call
		var tail string
		switch {
		case strings.HasPrefix(rest, "execve(") || strings.HasPrefix(rest, "execveat("):
			e, after, err := parseOracleCall(rest)
			if err != nil {
				return nil, fmt.Errorf("trace line %d: %v: %q", n+1, err, line)
			}
			e.PID = pid
			c = &call{exec: e}
			if after == " <unfinished ...>" {
				pending[pid] = c
				continue
			}
			tail = after
		case strings.HasPrefix(rest, "<... execve resumed>") || strings.HasPrefix(rest, "<... execveat resumed>"):
			c = pending[pid]
			if c == nil {
				return nil, fmt.Errorf("trace line %d: resumed call never started: %q", n+1, line)
			}
			delete(pending, pid)
			tail = rest[strings.IndexByte(rest, '>')+1:]
			// execveat prints its flags when resumed only if they were not
			// printed before; execve has nothing left to print.
			tail = strings.TrimLeft(tail, " ")
			if strings.HasPrefix(tail, ", ") {
				tail = tail[strings.IndexByte(tail, ')'):]
			}
		case oracleClone.MatchString(rest) || strings.HasPrefix(rest, "<... clone resumed>") ||
			strings.HasPrefix(rest, "<... clone3 resumed>") || strings.HasPrefix(rest, "<... fork resumed>") ||
			strings.HasPrefix(rest, "<... vfork resumed>"):
			if strings.HasSuffix(rest, " <unfinished ...>") {
				clonePending[pid] = node(pid)
				continue
			}
			parent := node(pid)
			if strings.HasPrefix(rest, "<...") {
				p, ok := clonePending[pid]
				if !ok {
					return nil, fmt.Errorf("trace line %d: resumed clone never started: %q", n+1, line)
				}
				delete(clonePending, pid)
				parent = p
			}
			r := oracleCloneRes.FindStringSubmatch(rest)
			if r == nil {
				return nil, fmt.Errorf("trace line %d: clone without result: %q", n+1, line)
			}
			if child, _ := strconv.Atoi(r[1]); child > 0 {
				creatorNode[child] = parent
				if _, ok := cur[child]; !ok && parent >= 0 {
					cur[child] = parent
				}
			}
			continue
		default:
			if sm := oracleSupersede.FindStringSubmatch(rest); sm != nil {
				// A thread other than the leader called execve; the
				// process goes on under the leader's pid.
				other, _ := strconv.Atoi(sm[1])
				if p := pending[other]; p != nil {
					delete(pending, other)
					p.exec.PID = pid
					pending[pid] = p
				}
				continue
			}
			// Exit and signal notes, and a thread that strace lost while
			// its process exited (a Go launcher's threads): strace could not
			// even read the system call's number, so the process is gone and
			// ran no exec there.
			if strings.HasPrefix(rest, "+++ ") || strings.HasPrefix(rest, "--- ") ||
				rest == "???( <detached ...>" || rest == "???( <unfinished ...>" || strings.HasPrefix(rest, "<... ??? resumed>") {
				continue
			}
			return nil, fmt.Errorf("trace line %d: unexpected: %q", n+1, line)
		}
		r := oracleResult.FindStringSubmatch(tail)
		if r == nil {
			return nil, fmt.Errorf("trace line %d: no result: %q", n+1, line)
		}
		// "= ?" is a call whose process died in it: whether the program
		// started is unknown, so it counts as started.
		if r[1] == "0" || r[1] == "?" {
			c.exec.PID = pid
			p, ok := cur[pid]
			if !ok {
				p = -2
			}
			parentOf = append(parentOf, p)
			cur[pid] = len(all)
			all = append(all, c.exec)
		}
	}
	// A call still pending when strace stopped never returned: with
	// execve that only happens when the process was killed mid-call, and
	// such a program never started. It is still reported, to be safe.
	for _, c := range pending {
		p, ok := cur[c.exec.PID]
		if !ok {
			p = -2
		}
		parentOf = append(parentOf, p)
		all = append(all, c.exec)
	}
	// A clone whose result strace never printed (the parent was killed in
	// it) leaves its child without a creator; with one such clone, it is
	// the creator. Otherwise the parent stays unknown, which only ever
	// makes the oracle stricter.
	var lone []int
	for _, n := range clonePending {
		lone = append(lone, n)
	}
	for i, p := range parentOf {
		if p == -2 {
			parentOf[i] = -1
			if n, ok := creatorNode[all[i].PID]; ok {
				parentOf[i] = n
			} else if len(lone) == 1 {
				parentOf[i] = lone[0]
			}
		}
	}
	for i := range all {
		seen := map[int]bool{i: true}
		for p := parentOf[i]; p >= 0 && !seen[p]; p = parentOf[p] {
			seen[p] = true
			anc := all[p]
			anc.Lineage = nil
			all[i].Lineage = append(all[i].Lineage, anc)
		}
		if len(all[i].Lineage) > 0 {
			all[i].Runner = all[i].Lineage[0].Path
		}
	}
	// The sandbox's own start: prlimit, which execs the launcher, in the
	// first process, then bash -c COMMAND, started by the launcher.
	var rest []oracleExec
	started := 0
	for _, e := range all {
		switch {
		case started == 0 && e.PID == root && baseName(e.Path) == "prlimit":
			started++
			continue
		case started == 1 && e.PID == root:
			// The launcher: the test binary itself.
			started++
			continue
		case started == 2:
			if baseName(e.Path) != "bash" || len(e.Argv) != 3 || e.Argv[1] != "-c" || e.Argv[2] != command {
				return nil, fmt.Errorf("trace: the sandbox started %v, not bash with the command", e)
			}
			started++
			continue
		case started < 3:
			return nil, fmt.Errorf("trace: %v ran before the sandbox's bash", e)
		}
		// The sandbox's own execs are not the command's: drop them from the
		// lineage too.
		if n := len(e.Lineage); n >= 2 {
			e.Lineage = e.Lineage[:n-2]
		}
		rest = append(rest, e)
	}
	if started < 3 {
		return nil, fmt.Errorf("trace: the sandbox's bash never started (%d of 3 start execs)", started)
	}
	return rest, nil
}

// parseOracleCall parses `execve("PATH", [ARGV], ENV` or
// `execveat(FD, "PATH", [ARGV], ENV, FLAGS` and returns the exec and what
// follows the arguments: ") = N ..." or " <unfinished ...>".
func parseOracleCall(s string) (oracleExec, string, error) {
	var e oracleExec
	at := strings.HasPrefix(s, "execveat(")
	s = s[strings.IndexByte(s, '(')+1:]
	if at {
		i := strings.Index(s, ", ")
		if i < 0 {
			return e, "", fmt.Errorf("execveat without a path")
		}
		s = s[i+2:]
	}
	path, s, err := parseOracleString(s)
	if err != nil {
		return e, "", fmt.Errorf("path: %v", err)
	}
	e.Path = path
	if !strings.HasPrefix(s, ", ") {
		return e, "", fmt.Errorf("no argv")
	}
	s = s[2:]
	switch {
	case strings.HasPrefix(s, "NULL"):
		e.Argv = []string{}
		s = s[4:]
	case strings.HasPrefix(s, "["):
		s = s[1:]
		e.Argv = []string{}
		for !strings.HasPrefix(s, "]") {
			if len(e.Argv) > 0 {
				if !strings.HasPrefix(s, ", ") {
					return e, "", fmt.Errorf("argv: no separator")
				}
				s = s[2:]
			}
			var a string
			a, s, err = parseOracleString(s)
			if err != nil {
				return e, "", fmt.Errorf("argv: %v", err)
			}
			e.Argv = append(e.Argv, a)
		}
		s = s[1:]
	default:
		// An address strace could not read: the argv is unknown, which the
		// caller treats as unjudged.
		i := strings.Index(s, ", ")
		if i < 0 {
			return e, "", fmt.Errorf("argv: unreadable and unterminated")
		}
		e.Argv = nil
		s = s[i:]
	}
	// The environment (an address with a count, or an array) and, for
	// execveat, the flags: skip to the end of the arguments. Every string
	// is hex-escaped, so no ')' or '<' can hide in them.
	if i := strings.Index(s, " <unfinished ...>"); i >= 0 && !strings.Contains(s[:i], ")") {
		return e, s[i:], nil
	}
	i := strings.IndexByte(s, ')')
	if i < 0 {
		return e, "", fmt.Errorf("unterminated call")
	}
	return e, s[i:], nil
}

// parseOracleString parses one strace string printed with -xx: a quoted
// run of \xHH escapes. A truncated string ("..." after the quote) is an
// error, never a shorter value.
func parseOracleString(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, fmt.Errorf("not a string: %.20q", s)
	}
	var b strings.Builder
	i := 1
	for {
		if i >= len(s) {
			return "", s, fmt.Errorf("unterminated string")
		}
		if s[i] == '"' {
			i++
			break
		}
		if i+4 > len(s) || s[i] != '\\' || s[i+1] != 'x' {
			return "", s, fmt.Errorf("string not hex-escaped at %.10q", s[i:])
		}
		v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
		if err != nil {
			return "", s, fmt.Errorf("bad escape %q", s[i:i+4])
		}
		b.WriteByte(byte(v))
		i += 4
	}
	if strings.HasPrefix(s[i:], "...") {
		return "", s, fmt.Errorf("truncated string")
	}
	return b.String(), s[i:], nil
}

// oracleForms is the normalized form of an exec, the way Analyze writes
// its Commands: the base name of argv[0], then the arguments, through the
// package's own joinCommand. When the file run has another base name than
// argv[0] (exec -a, a multi-call binary), the file's form is returned too:
// both must be judged.
func oracleForms(e oracleExec) []string {
	if len(e.Argv) == 0 {
		return nil
	}
	forms := []string{joinCommand(baseName(e.Argv[0]), e.Argv[1:])}
	if pb := baseName(e.Path); pb != baseName(e.Argv[0]) {
		forms = append(forms, joinCommand(pb, e.Argv[1:]))
	}
	return forms
}

// oracleJudged reports whether the exec is among commands, in every form
// of oracleForms. An exec whose argv could not be read is never judged.
// Analyze writes some words as bash will change them at run time, so an
// entry of commands also matches an exec whose arguments are those words
// as bash and the wrappers changed them, and nothing more:
//
//   - a word with glob characters (*, ?, [) matches the arguments bash's
//     pathname expansion can make of it (oracleGlobMatch), one or more,
//     except that an expansion starting with "-" matches only after a
//     literal "--" argument: a glob that turns into an option the policy
//     never saw (rm * with a file -rf, find . -exe[c]) is a finding;
//   - a word with a tilde prefix matches its expansion (the box, or /root);
//   - "{}", where find -exec or xargs -I put a found path, matches in its
//     place one path find could have produced (oracleProducible), the same
//     in every place, and as the last and only "{}" of the entry one or
//     more such paths (find -exec ... {} +).
//
// The command name itself is always compared literally.
func oracleJudged(e oracleExec, commands []string) bool {
	forms := oracleForms(e)
	if forms == nil {
		return false
	}
	for i, form := range forms {
		if !oracleFormJudged(form, oracleFormName(e, i), e.Argv[1:], commands) {
			return false
		}
	}
	return true
}

// oracleGitSelf reports whether e is git running a part of itself: the
// git binary or a program in git's exec-path, started by git or by such a
// program (git commit runs git maintenance, git stash runs git
// update-index). Git's own parts are its implementation; whatever else they
// start (a shell, a pager, an editor, sed) is still judged on its own.
func oracleGitSelf(e oracleExec) bool {
	return oracleIsGit(e.Path) && oracleIsGit(e.Runner)
}

func oracleIsGit(p string) bool {
	return p == "/usr/bin/git" || strings.HasPrefix(p, "/usr/lib/git-core/")
}

// oracleFormName is the command name of form i of oracleForms(e).
func oracleFormName(e oracleExec, i int) string {
	if i == 1 {
		return baseName(e.Path)
	}
	return baseName(e.Argv[0])
}

// oracleFormJudged reports whether one form is among commands, literally
// or through a "{}" placeholder.
func oracleFormJudged(form, name string, args, commands []string) bool {
	return slices.Contains(commands, form) || slices.ContainsFunc(commands, func(c string) bool {
		return strings.ContainsAny(c, "{*?[~") && oracleTemplateMatch(c, name, args)
	})
}

// oracleUnjudgedForm is the first form of e that commands do not judge,
// for messages.
func oracleUnjudgedForm(e oracleExec, commands []string) string {
	forms := oracleForms(e)
	for i, f := range forms {
		if !oracleFormJudged(f, oracleFormName(e, i), e.Argv[1:], commands) {
			return f
		}
	}
	return ""
}

// oracleFold is the form joinCommand gives one argument.
func oracleFold(a string) string {
	return strings.TrimPrefix(joinCommand("", []string{a}), " ")
}

// oracleProducible reports whether p (raw or folded) can be a path that find
// passes for "{}": never an option, and either ".", "..", an absolute or
// ./ or ../ path, or a path under one of the names in the box's top level.
func oracleProducible(p string) bool {
	if p == "" || p[0] == '-' {
		return false
	}
	if p == "." || p == ".." || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") {
		return true
	}
	first, _, _ := strings.Cut(p, "/")
	return oracleTopNames[first]
}

// oracleTopNames holds the box's top-level names, raw and folded.
var oracleTopNames = func() map[string]bool {
	m := map[string]bool{}
	add := func(n string) {
		if n = strings.SplitN(n, "/", 2)[0]; n != "" {
			m[n] = true
			m[oracleFold(n)] = true
		}
	}
	for n := range oracleHostileNames {
		add(n)
	}
	for _, n := range oracleExecutables {
		add(n)
	}
	for _, n := range []string{"sub", "link", "rootlink", "sublink", "dangling", ".git"} {
		add(n)
	}
	return m
}()

// oracleTemplateMatch matches command c, which holds "{}", a glob or a
// tilde, against the exec name args (see oracleJudged).
func oracleTemplateMatch(c, name string, args []string) bool {
	if !strings.HasPrefix(c, name) {
		return false
	}
	return oracleMatchArgs(c, len(name), args, "", false)
}

// oracleJudgedIfOptionGlobs reports whether e would be judged if a glob
// could expand to an option anywhere: only used to name a finding's class.
func oracleJudgedIfOptionGlobs(e oracleExec, commands []string) bool {
	forms := oracleForms(e)
	if forms == nil {
		return false
	}
	for i, form := range forms {
		name := oracleFormName(e, i)
		if !slices.Contains(commands, form) && !slices.ContainsFunc(commands, func(c string) bool {
			return strings.HasPrefix(c, name) && oracleMatchArgs(c, len(name), e.Argv[1:], "", true)
		}) {
			return false
		}
	}
	return true
}

// oracleHomeDir is HOME (and the working directory) of every command: the
// box.
var oracleHomeDir string

func oracleMatchArgs(c string, pos int, args []string, bound string, dashdash bool) bool {
	if len(args) == 0 {
		return pos == len(c)
	}
	f := oracleFold(args[0])
	if f == "" {
		return oracleMatchArgs(c, pos, args[1:], bound, dashdash)
	}
	if pos < len(c) && c[pos] == ' ' {
		tok, _, _ := strings.Cut(c[pos+1:], " ")
		next := pos + 1 + len(tok)
		// A glob word: the arguments it expanded to. An expansion that
		// starts with "-" is an option the written word did not show,
		// unless it follows a "--".
		if strings.ContainsAny(tok, "*?[") {
			for j := 0; j < len(args) && oracleGlobMatch(tok, args[j]) &&
				(dashdash || args[j][0] != '-'); j++ {
				if oracleMatchArgs(c, next, args[j+1:], bound, dashdash) {
					return true
				}
			}
		}
		// A tilde word: what bash expanded it to.
		for _, x := range oracleTildeExpansions(tok) {
			if f == oracleFold(x) && oracleMatchArgs(c, next, args[1:], bound, dashdash) {
				return true
			}
		}
	}
	// A last, whole-argument "{}", the only one, taking one or more paths
	// (find -exec ... {} +).
	if pos+3 == len(c) && c[pos:] == " {}" && strings.Count(c, "{}") == 1 {
		for j := 0; j < len(args) && oracleProducible(args[j]); j++ {
			if oracleMatchArgs(c, pos+3, args[j+1:], bound, dashdash) {
				return true
			}
		}
	}
	// The argument, literally or with one path in place of each "{}".
	for _, end := range oracleMatchSegment(c, pos, " "+f, 0, bound) {
		if oracleMatchArgs(c, end.pos, args[1:], end.bound, dashdash || args[0] == "--") {
			return true
		}
	}
	return false
}

// oracleGlobMatch reports whether bash's pathname expansion of pattern can
// yield name: component by component ("/" matched only by itself), a
// leading "." only matched by a leading "." (dotglob is off), "." and ".."
// never (globskipdots), each component as oracleFnmatch matches it.
func oracleGlobMatch(pattern, name string) bool {
	pp, np := strings.Split(pattern, "/"), strings.Split(name, "/")
	if len(pp) != len(np) {
		return false
	}
	for i := range pp {
		p, n := pp[i], np[i]
		if !strings.ContainsAny(p, "*?[") {
			if p != n {
				return false
			}
			continue
		}
		if n == "." || n == ".." || (strings.HasPrefix(n, ".") && !strings.HasPrefix(p, ".")) {
			return false
		}
		if !oracleFnmatch(p, n) {
			return false
		}
	}
	return true
}

// oracleTildeExpansions lists what bash makes of a word with a tilde
// prefix, at its start or, in a NAME=VALUE word, at the start of the
// value or after a colon in it: ~ and ~/x use HOME, ~+ the working
// directory (both the box), ~root is /root.
func oracleTildeExpansions(tok string) []string {
	expand := func(w string) (string, bool) {
		if !strings.HasPrefix(w, "~") {
			return w, false
		}
		user, rest, _ := strings.Cut(w[1:], "/")
		if rest != "" || strings.Contains(w, "/") {
			rest = "/" + rest
		}
		switch user {
		case "", "+":
			return oracleHomeDir + rest, true
		case "root":
			return "/root" + rest, true
		}
		return w, false
	}
	var out []string
	if x, ok := expand(tok); ok {
		out = append(out, x)
	}
	if name, value, ok := strings.Cut(tok, "="); ok && oracleIdentifier(name) {
		parts := strings.Split(value, ":")
		changed := false
		for i, p := range parts {
			if x, ok := expand(p); ok {
				parts[i], changed = x, true
			}
		}
		if changed {
			out = append(out, name+"="+strings.Join(parts, ":"))
		}
	}
	return out
}

// oracleIdentifier reports whether s is a bash variable name.
func oracleIdentifier(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

type oracleSegEnd struct {
	pos   int
	bound string
}

// oracleMatchSegment matches all of s against c from ci, where each "{}" in
// c stands for the same producible path. It returns every position in c
// where s can end.
func oracleMatchSegment(c string, ci int, s string, si int, bound string) []oracleSegEnd {
	if si == len(s) {
		return []oracleSegEnd{{ci, bound}}
	}
	var ends []oracleSegEnd
	if strings.HasPrefix(c[ci:], "{}") {
		if bound != "" {
			if strings.HasPrefix(s[si:], bound) {
				ends = append(ends, oracleMatchSegment(c, ci+2, s, si+len(bound), bound)...)
			}
		} else {
			for e := si + 1; e <= len(s); e++ {
				if p := s[si:e]; oracleProducible(p) {
					ends = append(ends, oracleMatchSegment(c, ci+2, s, e, p)...)
				}
			}
		}
	}
	if ci < len(c) && c[ci] == s[si] {
		ends = append(ends, oracleMatchSegment(c, ci+1, s, si+1, bound)...)
	}
	return ends
}

// oracleRunsCode reports whether a program runs code given as its argument
// or in a file (awk, perl, python, make, ...), which the analyzer does not
// claim to judge. It is the analyzer's own exported list, so the oracle and
// shell/doc.go name the same programs.
var oracleRunsCode = RunsCode

// oracleFnmatch matches one path component against a bash pattern: * and ?
// for any run and any one character (byte), [...] for a set with ranges,
// [:class:] names, and ! or ^ to negate; a ] first in the set and a - first
// or last are literal, and a [ without its ] is literal, all as bash has
// them.
func oracleFnmatch(p, n string) bool {
	if p == "" {
		return n == ""
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(n); i++ {
			if oracleFnmatch(p[1:], n[i:]) {
				return true
			}
		}
		return false
	case '?':
		return n != "" && oracleFnmatch(p[1:], n[1:])
	case '[':
		if end, ok := oracleSetEnd(p); ok {
			return n != "" && oracleInSet(p[1:end], n[0]) && oracleFnmatch(p[end+1:], n[1:])
		}
	}
	return n != "" && p[0] == n[0] && oracleFnmatch(p[1:], n[1:])
}

// oracleSetEnd finds the ] that closes the set opening p.
func oracleSetEnd(p string) (int, bool) {
	i := 1
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		i++
	}
	if i < len(p) && p[i] == ']' {
		i++
	}
	for i < len(p) {
		if p[i] == '[' && i+1 < len(p) && p[i+1] == ':' {
			if j := strings.Index(p[i+2:], ":]"); j >= 0 {
				i += j + 4
				continue
			}
		}
		if p[i] == ']' {
			return i, true
		}
		i++
	}
	return 0, false
}

// oracleInSet reports whether c is in the set body (between [ and ]).
func oracleInSet(body string, c byte) bool {
	neg := false
	if body != "" && (body[0] == '!' || body[0] == '^') {
		neg, body = true, body[1:]
	}
	in := false
	for i := 0; i < len(body); i++ {
		if body[i] == '[' && i+1 < len(body) && body[i+1] == ':' {
			if j := strings.Index(body[i+2:], ":]"); j >= 0 {
				if oracleInClass(body[i+2:i+2+j], c) {
					in = true
				}
				i += j + 3
				continue
			}
		}
		lo := body[i]
		if i+2 < len(body) && body[i+1] == '-' {
			if lo <= c && c <= body[i+2] {
				in = true
			}
			i += 2
			continue
		}
		if lo == c {
			in = true
		}
	}
	return in != neg
}

// oracleInClass is a [:name:] class, in the C locale's ASCII.
func oracleInClass(name string, c byte) bool {
	lower, upper, digit := c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9'
	switch name {
	case "alpha":
		return lower || upper
	case "digit":
		return digit
	case "alnum":
		return lower || upper || digit
	case "upper":
		return upper
	case "lower":
		return lower
	case "space":
		return c == ' ' || (c >= '\t' && c <= '\r')
	case "blank":
		return c == ' ' || c == '\t'
	case "punct":
		return c > ' ' && c < 0x7f && !(lower || upper || digit)
	case "xdigit":
		return digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
	case "print":
		return c >= ' ' && c < 0x7f
	case "graph":
		return c > ' ' && c < 0x7f
	case "cntrl":
		return c < ' ' || c == 0x7f
	case "word":
		return lower || upper || digit || c == '_'
	}
	return false
}
