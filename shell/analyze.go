package shell

import (
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// MaxCommandLength is the longest command, in bytes, that Analyze examines.
// Anything longer is reported as not simple.
const MaxCommandLength = 64 << 10

// MaxNesting bounds how many wrappers and nested scripts Analyze follows
// from the outermost command. A deeper chain is reported as not simple.
const MaxNesting = 16

// Analysis is the result of analyzing one bash command.
type Analysis struct {
	// Simple is true only when the whole command, and every script a
	// wrapper hands to a shell, is exactly one simple command made of
	// literal words.
	Simple bool

	// Problem is a short human-readable reason when Simple is false, such
	// as "control operator '&&'", "command substitution" or
	// "parse error: ...". It is empty when Simple is true.
	Problem string

	// Commands holds, when Simple is true, the normalized command first and
	// then every command a known wrapper runs, in the order they were
	// unwrapped. It is nil when Simple is false.
	Commands []string
}

// Options relax the analysis where a policy has explicitly opted in. The
// zero value is the strict analysis that Analyze performs.
type Options struct {
	// AllowGitConfig accepts git's configuration options (git -c NAME=VALUE,
	// --config-env, --exec-path=DIR) and git config writes, which can make
	// git run any command (alias.x=!cmd, core.pager, core.fsmonitor, ...).
	// Only a policy that says so explicitly should set it.
	AllowGitConfig bool
}

// Analyze parses command as bash and reports whether it is exactly one
// simple command. When it is, Analyze also normalizes it and judges through
// known wrappers (sudo, env, sh -c, find -exec, ...), listing every command
// that would run. Analyze never panics and is safe for concurrent use.
func Analyze(command string) Analysis {
	return AnalyzeWith(command, nil)
}

// AnalyzeWith is Analyze with the relaxations in opts; nil (like the zero Options)
// relaxes nothing.
func AnalyzeWith(command string, opts *Options) (result Analysis) {
	defer func() {
		if recover() != nil {
			result = Analysis{Problem: "internal error"}
		}
	}()
	if len(command) > MaxCommandLength {
		return Analysis{Problem: "command too long"}
	}
	an := analyzer{}
	if opts != nil {
		an.opts = *opts
	}
	if problem := an.script(command, 0); problem != "" {
		return Analysis{Problem: problem}
	}
	if len(an.cmds) == 0 {
		// Unreachable: a simple command always yields its own form.
		return Analysis{Problem: "internal error"}
	}
	return Analysis{Simple: true, Commands: an.cmds}
}

// Normalize returns the normalized form of command, the first element of
// Analyze(command).Commands, and true when the command is simple. It
// returns "" and false otherwise.
func Normalize(command string) (string, bool) {
	a := Analyze(command)
	if !a.Simple {
		return "", false
	}
	return a.Commands[0], true
}

// parserPool holds bash parsers; a syntax.Parser must not be used by two
// goroutines at once, but it can be reused after Parse returns.
var parserPool = sync.Pool{
	New: func() any {
		return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
	},
}

func parse(src string) (*syntax.File, error) {
	p := parserPool.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	// A parser that panicked is simply dropped, not put back.
	parserPool.Put(p)
	return f, err
}

// analyzer accumulates the commands found while analyzing one input.
type analyzer struct {
	cmds []string
	opts Options
}

// script analyzes src as a bash script that must consist of exactly one
// simple command, records that command and everything it wraps, and returns
// a problem, or "" when the script is simple.
func (an *analyzer) script(src string, depth int) string {
	if depth > MaxNesting {
		return "wrapper nesting too deep"
	}
	pw, problem := parseWords(src)
	if problem != "" {
		return problem
	}
	argv, timeOpts := pw.argv, pw.timeOpts
	if pw.argGlob {
		// The glob's matches, not its text, are what the command gets: with
		// files named "1" and "rm" here, "timeout * ls" runs rm, and a file
		// named -exec turns "find . -exe[c] ..." into an exec.
		if name := strings.ToLower(baseName(argv[max(timeOpts, 0)])); isGlobSensitive(name) {
			return "glob in an argument of '" + name + "' (file names could become options or commands)"
		}
		if pw.optionGlob != "" {
			return pw.optionGlob
		}
	}
	if timeOpts < 0 {
		return an.emit(argv, depth, false)
	}
	// "time [-p] [--] command" is a bash keyword, not a command: it takes
	// no other option, and what follows is the command it runs.
	an.cmds = append(an.cmds, joinCommand("time", argv))
	inner := argv[timeOpts:]
	if len(inner) > 0 && inner[0] == "--" {
		inner = inner[1:]
	}
	return an.wrap(inner, depth)
}

// parseSimple parses src, checks that it is exactly one simple command of
// literal words and returns their values. For the bash keyword "time",
// argv holds the keyword's options (-p, if given) followed by the timed
// command, and timeOpts is the number of those options; otherwise timeOpts
// is -1.
func parseSimple(src string) (argv []string, timeOpts int, problem string) {
	pw, problem := parseWords(src)
	if problem != "" {
		return nil, -1, problem
	}
	return pw.argv, pw.timeOpts, ""
}

// parsedWords is what parseWords finds in one simple command.
type parsedWords struct {
	argv     []string
	timeOpts int
	// argGlob is true when an argument (a word after the command name)
	// holds an unquoted glob, which bash replaces by matching file names.
	argGlob bool
	// optionGlob, when not empty, describes the first such argument whose
	// matches could begin with '-' (and so become options), unless it
	// follows a "--" argument.
	optionGlob string
}

// parseWords is parseSimple that also reports whether an argument (a word
// after the command name) holds an unquoted glob, which bash would replace
// by the names of matching files.
func parseWords(src string) (pw parsedWords, problem string) {
	if len(src) > MaxCommandLength {
		return parsedWords{}, "command too long"
	}
	if strings.IndexByte(src, 0) >= 0 {
		// The parser silently drops NUL bytes, and so may a shell.
		return parsedWords{}, "NUL byte"
	}
	if strings.IndexByte(src, '\r') >= 0 {
		// The parser splits words at a carriage return and drops one
		// before a newline, where bash keeps it as data; a terminal
		// showing the command to a reviewer lets it hide text.
		return parsedWords{}, "carriage return"
	}
	if trailing := len(src) - len(strings.TrimRight(src, "\\")); trailing%2 == 1 {
		// bash keeps a lone backslash at the very end of a one-line
		// command but drops it after a quoted newline.
		return parsedWords{}, "trailing backslash"
	}
	if backslashAfterHighByte(src) {
		return parsedWords{}, "backslash after a non-ASCII character"
	}
	f, err := parse(src)
	if err != nil {
		return parsedWords{}, "parse error: " + err.Error()
	}
	switch {
	case len(f.Stmts) == 0 && len(f.Last) > 0:
		return parsedWords{}, "comment"
	case len(f.Stmts) == 0:
		return parsedWords{}, "empty command"
	case len(f.Stmts) > 1:
		return parsedWords{}, separatorProblem(src, f.Stmts[0])
	case len(f.Last) > 0:
		return parsedWords{}, "comment"
	}
	st := f.Stmts[0]
	if problem := stmtProblem(src, st); problem != "" {
		return parsedWords{}, problem
	}
	timeOpts := -1
	var words []*syntax.Word
	switch cmd := st.Cmd.(type) {
	case *syntax.CallExpr:
		if problem := callProblem(cmd); problem != "" {
			return parsedWords{}, problem
		}
		words = cmd.Args
	case *syntax.TimeClause:
		timeOpts = 0
		if cmd.PosixFormat {
			timeOpts = 1
		}
		if cmd.Stmt != nil {
			if problem := stmtProblem(src, cmd.Stmt); problem != "" {
				return parsedWords{}, problem
			}
			call, ok := cmd.Stmt.Cmd.(*syntax.CallExpr)
			if !ok {
				return parsedWords{}, commandProblem(cmd.Stmt.Cmd)
			}
			if problem := callProblem(call); problem != "" {
				return parsedWords{}, problem
			}
			words = call.Args
		}
	default:
		return parsedWords{}, commandProblem(st.Cmd)
	}
	for _, w := range words {
		if problem := wordProblem(w); problem != "" {
			return parsedWords{}, problem
		}
	}
	if problem := newlineProblem(src, words); problem != "" {
		return parsedWords{}, problem
	}
	if timeOpts < 0 && unquotedGlob(words[0]) {
		return parsedWords{}, "glob in command name"
	}
	if strings.Contains(src, "\\\n") {
		if joined, changed := removeContinuations(src, words); changed {
			// bash deletes every line continuation before it reads
			// words, so what it runs is the joined text: "$\<newline>(x)"
			// is a command substitution there although the parser saw
			// a literal '$'. Judge the joined text, with every rule.
			pw, problem := parseWords(joined)
			if problem != "" {
				return parsedWords{}, "after joining line continuations: " + problem
			}
			return pw, ""
		}
	}
	argv := make([]string, 0, max(timeOpts, 0)+len(words))
	if timeOpts > 0 {
		argv = append(argv, "-p")
	}
	afterDashDash := false
	for i, w := range words {
		v := wordValue(w)
		argv = append(argv, v)
		if i == 0 {
			continue
		}
		if unquotedGlob(w) {
			pw.argGlob = true
			// A glob whose matches can begin with '-' becomes options:
			// with a file named -rf, "rm *" runs rm -rf.
			if !afterDashDash && pw.optionGlob == "" && (strings.HasPrefix(v, "-") || leadingGlob(w)) {
				pw.optionGlob = "glob that can expand to an option: write ./" + v + " or put -- before it"
			}
		}
		if v == "--" {
			afterDashDash = true
		}
	}
	pw.argv, pw.timeOpts = argv, timeOpts
	return pw, ""
}

// removeContinuations deletes every line continuation of src the way bash
// does before it splits words: a backslash-newline pair, whose backslash is
// not itself escaped, anywhere but inside single quotes. words are the
// parsed words of src, which must be one simple command (so it holds no
// comment or here-document, where bash keeps the pair). It reports whether
// anything was deleted.
//
// The single-quoted spans come from the parse of src. bash could only
// disagree about one of them if a deleted continuation before it had
// turned the text into something else ("$\<newline>'...'" into $'...'),
// and that earlier join is in the result, where it is refused.
func removeContinuations(src string, words []*syntax.Word) (string, bool) {
	var b []byte
	last := 0
	for i := strings.Index(src, "\\\n"); i >= 0; {
		k := i
		for k > 0 && src[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 && !insideSingleQuotes(uint(i), words) {
			if b == nil {
				b = make([]byte, 0, len(src))
			}
			b = append(b, src[last:i]...)
			last = i + 2
		}
		next := strings.Index(src[i+2:], "\\\n")
		if next < 0 {
			break
		}
		i += next + 2
	}
	if b == nil {
		return src, false
	}
	b = append(b, src[last:]...)
	return string(b), true
}

// insideSingleQuotes reports whether byte offset off of the source lies
// inside a single-quoted part of one of words.
func insideSingleQuotes(off uint, words []*syntax.Word) bool {
	for _, w := range words {
		for _, part := range w.Parts {
			if _, ok := part.(*syntax.SglQuoted); ok && part.Pos().Offset() < off && off < part.End().Offset() {
				return true
			}
		}
	}
	return false
}

// backslashAfterHighByte reports whether a backslash in src follows a byte
// of 0x80 or above. In a GBK, Big5 or Shift-JIS locale bash reads such a
// byte and the backslash as one character, so the backslash escapes
// nothing there and, say, a \" meant to stay inside double quotes would
// close them.
func backslashAfterHighByte(src string) bool {
	for i := strings.IndexByte(src, '\\'); i >= 0; {
		if i > 0 && src[i-1] >= 0x80 {
			return true
		}
		next := strings.IndexByte(src[i+1:], '\\')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return false
}

// stmtProblem refuses anything around a statement's command: negation,
// control operators ending it, redirections and comments.
func stmtProblem(src string, st *syntax.Stmt) string {
	switch {
	case st.Negated:
		return "negation '!'"
	case st.Background:
		return "control operator '&'"
	case st.Coprocess:
		return "coprocess"
	case st.Disown:
		return "control operator '&|'"
	case st.Semicolon.IsValid():
		return terminatorProblem(src, st)
	case len(st.Redirs) > 0:
		return redirectProblem(st.Redirs[0])
	case len(st.Comments) > 0:
		return "comment"
	}
	return ""
}

// callProblem refuses assignments and empty calls.
func callProblem(call *syntax.CallExpr) string {
	switch {
	case len(call.Assigns) > 0 && len(call.Args) == 0:
		return "variable assignment"
	case len(call.Assigns) > 0:
		return "assignment before the command"
	case len(call.Args) == 0:
		return "empty command"
	}
	return ""
}

// separatorProblem describes what separates the first of several statements
// from the next one.
func separatorProblem(src string, first *syntax.Stmt) string {
	if first.Background {
		return "control operator '&'"
	}
	if first.Semicolon.IsValid() {
		return terminatorProblem(src, first)
	}
	return "newline"
}

// terminatorProblem describes the operator that ends st.
func terminatorProblem(src string, st *syntax.Stmt) string {
	if st.Background {
		return "control operator '&'"
	}
	if off := st.Semicolon.Offset(); off < uint(len(src)) {
		switch src[off] {
		case ';':
			return "control operator ';'"
		case '&':
			return "control operator '&'"
		case '|':
			return "control operator '|&'"
		}
	}
	return "control operator"
}

func redirectProblem(r *syntax.Redirect) string {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		return "here-document '" + r.Op.String() + "'"
	case syntax.WordHdoc:
		return "redirection '<<<' (here-string)"
	}
	return "redirection '" + r.Op.String() + "'"
}

// commandProblem describes a compound or otherwise non-simple command.
func commandProblem(cmd syntax.Command) string {
	switch c := cmd.(type) {
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			return "control operator '&&'"
		case syntax.OrStmt:
			return "control operator '||'"
		case syntax.Pipe:
			return "pipe '|'"
		case syntax.PipeAll:
			return "pipe '|&'"
		}
		return "binary command"
	case *syntax.Subshell:
		return "subshell"
	case *syntax.Block:
		return "command group '{ }'"
	case *syntax.IfClause:
		return "if clause"
	case *syntax.WhileClause:
		if c.Until {
			return "until loop"
		}
		return "while loop"
	case *syntax.ForClause:
		if c.Select {
			return "select loop"
		}
		return "for loop"
	case *syntax.CaseClause:
		return "case clause"
	case *syntax.FuncDecl:
		return "function declaration"
	case *syntax.ArithmCmd:
		return "arithmetic command '(( ))'"
	case *syntax.TestClause:
		return "test clause '[[ ]]'"
	case *syntax.DeclClause:
		if c.Variant != nil && c.Variant.Value != "" {
			return "declaration clause '" + c.Variant.Value + "'"
		}
		return "declaration clause"
	case *syntax.LetClause:
		return "let clause"
	case *syntax.CoprocClause:
		return "coprocess"
	case *syntax.TimeClause:
		return "time clause"
	}
	return "unsupported command"
}

// newlineProblem reports an unquoted newline in src, which bash treats as a
// command separator. Newlines inside quotes are data, and a backslash-newline
// outside quotes is a line continuation that bash removes.
func newlineProblem(src string, words []*syntax.Word) string {
	for i := strings.IndexByte(src, '\n'); i >= 0; {
		if !insideQuotes(uint(i), words) {
			k := i
			for k > 0 && src[k-1] == '\\' {
				k--
			}
			if (i-k)%2 == 0 {
				return "newline"
			}
		}
		next := strings.IndexByte(src[i+1:], '\n')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return ""
}

// insideQuotes reports whether byte offset off of the source lies strictly
// inside a quoted part of one of words.
func insideQuotes(off uint, words []*syntax.Word) bool {
	for _, w := range words {
		for _, part := range w.Parts {
			switch part.(type) {
			case *syntax.SglQuoted, *syntax.DblQuoted:
				if part.Pos().Offset() < off && off < part.End().Offset() {
					return true
				}
			}
		}
	}
	return false
}
