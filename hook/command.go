package hook

// This file finds the protected files a bash command can reach: every word of the
// command, as the shell would expand it, taken as a path.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// CommandReaches returns what protected file a bash command's words name, or "" with
// false when none does. Every word of the command (arguments, redirection targets,
// assignments, the scripts inside quotes, such as sh -c '...' or python -c "...") is
// taken as a path relative to cwd, and also each piece of it between spaces and shell
// punctuation; a word naming a protected file or a directory below cwd (or beside it)
// holding one (".claude", "~/.claude") is a match. The working directory itself and its
// ancestors (".", "..", "/", "~" when cwd is under it) are not: every everyday command
// ("git add .", "go build .", "ls") names them, so what may run there, "rm -rf ." included,
// is the policy's decision. Parameter expansions, command substitutions and
// ANSI-C quoting stand for anything, and glob characters for what they can match, so
// such a word matches whenever it could expand to a protected path. After a cd, pushd or
// popd, a relative word is also matched against the end of every protected path, since
// the directory it is relative to is no longer known.
//
// This refuses more than it must ("cat .claude/settings.json" only reads), and it
// cannot see a file name a program computes at run time: the policy decides which
// programs may run at all. A command that does not parse is matched piece
// by piece.
func (pr *Protected) CommandReaches(command, cwd, home string) (Hit, bool) {
	if len(pr.files) == 0 {
		return Hit{}, false
	}
	words := commandWords(command)
	moved := false
	for _, w := range words {
		if w.cd || pr.changesDir(w, cwd) {
			moved = true
		}
	}
	for _, w := range words {
		cands := w.candidates()
		for _, cand := range cands {
			if h, ok := pr.candidateReaches(cand, cwd, home, moved); ok {
				return h, true
			}
		}
		for _, tail := range optionTails(cands) {
			if h, ok := pr.candidateReaches(tail, cwd, home, moved && strings.ContainsAny(tail, "/.~")); ok {
				return h, true
			}
		}
	}
	return Hit{}, false
}

// anyRune stands, in a candidate, for a part of a word whose value is not known
// (a parameter expansion, a command substitution): it can be anything, '/' included.
// A command line cannot hold a NUL byte, so it never stands for itself.
const anyRune = '\x00'

// globRune stands, in a candidate, for an unquoted glob character's match: anything but
// '/'.
const globRune = '\x01'

// changesDir reports whether a word may mean that what follows runs in another
// directory than cwd: a piece that is cd, pushd or popd (builtin cd, command cd, sh -c
// 'cd ..; ...'), or a word naming cwd's parent or another ancestor of it, which a program
// can be told to work in (env -C .., git -C .., make -C .., tar -C ~). The ancestors
// themselves are not matches (see [Protected.CommandReaches]), so the words relative to
// them must be matched against the end of every protected path.
func (pr *Protected) changesDir(w shellWord, cwd string) bool {
	cands := w.candidates()
	for _, cand := range append(cands, optionTails(cands)...) {
		if cand == "cd" || cand == "pushd" || cand == "popd" {
			return true
		}
		if strings.ContainsAny(cand, string(anyRune)+string(globRune)) || !filepath.IsAbs(cwd) {
			continue
		}
		if i := strings.IndexByte(cand, '='); i >= 0 && strings.HasPrefix(cand, "-") {
			cand = cand[i+1:] // --chdir=.., --directory=..
		} else if strings.HasPrefix(cand, "-C") && len(cand) > 2 {
			cand = cand[2:] // make -C.., tar -C..
		}
		if cand == "~" || strings.HasPrefix(cand, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return true // fail closed: where ~ is is unknown
			}
			cand = home + cand[1:]
		}
		abs := cand
		if !filepath.IsAbs(cand) {
			abs = filepath.Join(cwd, cand)
		}
		c := fold(filepath.Clean(cwd))
		for _, form := range pathForms(filepath.Clean(abs)) {
			if form != c && holdsCwd(form, cwd) {
				return true
			}
		}
	}
	return false
}

// hasDotDot reports whether the relative candidate climbs with a ".." component.
func hasDotDot(cand string) bool {
	return slices.Contains(strings.Split(cand, "/"), "..")
}

func (pr *Protected) candidateReaches(cand, cwd, home string, moved bool) (Hit, bool) {
	if cand == "" {
		return Hit{}, false
	}
	if cand == "~" || strings.HasPrefix(cand, "~/") {
		if home == "" {
			cand = string(anyRune) + cand[1:]
		} else {
			cand = home + cand[1:]
		}
	}
	abs := cand
	if !strings.HasPrefix(cand, "/") && !strings.HasPrefix(cand, string(anyRune)) {
		if !filepath.IsAbs(cwd) {
			abs = string(anyRune) + "/" + cand
		} else {
			abs = cwd + "/" + cand
		}
	}
	if re, ok := procPattern(filepath.Clean(abs)); ok && !strings.ContainsAny(abs, string(anyRune)+string(globRune)) {
		// Through another process's links: matched as whatever it can name.
		if h, ok := pr.reachesPattern(re, cwd); ok {
			return h, true
		}
	} else if !strings.ContainsAny(abs, string(anyRune)+string(globRune)) {
		if h, ok := pr.reaches(filepath.Clean(abs), cwd); ok {
			return h, true
		}
	} else if h, ok := pr.reachesPattern(candidateRegexp(abs), cwd); ok {
		return h, true
	}
	if (moved || hasDotDot(cand)) && !strings.HasPrefix(cand, "/") {
		// Relative to a directory a cd chose, or climbing out of one a program was told
		// to work in (env -C /tmp/a cp x ../../home/u/p.yaml): match the end of every
		// protected path.
		rel := strings.TrimLeft(filepath.Clean(cand), "./")
		for strings.HasPrefix(rel, "../") {
			rel = strings.TrimPrefix(rel, "../")
		}
		if rel != "" && rel != "." && rel != ".." {
			if h, ok := pr.reachesPattern(candidateRegexp(string(anyRune)+"/"+rel), cwd); ok {
				return h, true
			}
		}
	}
	return Hit{}, false
}

// candidateRegexp turns a candidate into a regular expression over folded absolute
// paths: anyRune matches anything, globRune anything but '/', "//" and "/./" collapse.
func candidateRegexp(cand string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range fold(cand) {
		switch r {
		case anyRune:
			b.WriteString(".*")
		case globRune:
			b.WriteString("[^/]*")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("/?$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile("") // matches everything: fail closed
	}
	return re
}

// braceSequence is a bash sequence expression's body: 1..9, a..z, 1..9..2.
var braceSequence = regexp.MustCompile(`^-?[0-9A-Za-z]+\.\.-?[0-9A-Za-z]+(\.\.-?[0-9]+)?$`)

// shellWord is one word of a command, as candidate text.
type shellWord struct {
	text string // the word's value: literal runes, anyRune and globRune
	cd   bool   // the word is a cd, pushd or popd command name
}

// wordSeparators split a word into the pieces an embedded script or an option value
// can name a path with.
const wordSeparators = " \t\n;|&<>()'\"`=,:{}"

// candidates are the word itself and its pieces between separators (see
// optionTails for the tails of short option clusters).
func (w shellWord) candidates() []string {
	out := []string{w.text}
	for _, piece := range strings.FieldsFunc(w.text, func(r rune) bool { return strings.ContainsRune(wordSeparators, r) }) {
		if piece != w.text {
			out = append(out, piece)
		}
	}
	return out
}

// optionTails are, for each candidate that is a cluster of short options
// ("-o.claude/x", "-Dt.claude"), every tail of it after an option letter: a short
// option takes its argument attached, so any tail can be a path (sort
// -o.claude/settings.json, cp -t.claude). A tail is one more candidate, except that it
// is matched against the end of the protected paths (after a cd, see
// [Protected.CommandReaches]) only when it holds a '/', '.' or '~': "f" in "rm -rf .."
// is an option letter far more often than a file.
func optionTails(cands []string) []string {
	var out []string
	for _, c := range cands {
		if len(c) > 2 && c[0] == '-' && c[1] != '-' {
			for k := 2; k < len(c); k++ {
				out = append(out, c[k:])
			}
		}
	}
	return out
}

// commandWords returns every word of the command, each with what bash would make of it
// as far as can be told without running anything. A command that does not parse yields
// its pieces between separators, quotes dropped.
func commandWords(command string) []shellWord {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		raw := strings.NewReplacer("'", "", `"`, "", `\`, string(anyRune), "$", string(anyRune)).Replace(command)
		return []shellWord{{text: raw}, {text: "~"}} // unparsed: anything, home included
	}
	var words []shellWord
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				name := n.Args[0].Lit()
				if name == "cd" || name == "pushd" || name == "popd" {
					words = append(words, shellWord{text: wordText(n.Args[0]), cd: true})
					if len(n.Args) == 1 {
						words = append(words, shellWord{text: "~"}) // cd alone goes home
					}
				}
			}
		case *syntax.Word:
			words = append(words, shellWord{text: wordText(n)})
		}
		return true
	})
	return words
}

// wordText is a word's value: quoted and escaped text as it is, unquoted glob
// characters as globRune, anything expanded at run time as anyRune.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unquotedText(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteRune(anyRune) // $'...': escapes can spell anything
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, dp := range p.Parts {
				if l, ok := dp.(*syntax.Lit); ok && !strings.Contains(l.Value, `\`) {
					b.WriteString(l.Value)
				} else {
					b.WriteRune(anyRune)
				}
			}
		default:
			b.WriteRune(anyRune)
		}
	}
	return b.String()
}

// unquotedText is an unquoted literal's value: a backslash escapes the next character,
// glob characters and braces become globRune or anyRune.
func unquotedText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '*', '?':
			b.WriteRune(globRune)
		case '[':
			if j := strings.IndexByte(s[i:], ']'); j > 0 {
				i += j
			}
			b.WriteRune(globRune)
		case '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				b.WriteByte(c)
				continue
			}
			group := s[i+1 : i+j]
			switch {
			case !strings.Contains(group, ",") && !strings.Contains(group, ".."):
				b.WriteByte(c) // not an expansion: "{}" and "{x}" are literal
				continue
			case braceSequence.MatchString(group):
				b.WriteRune(globRune) // {1..9}, {a..z}: one name
			case strings.ContainsAny(group, "/~$`\\") || strings.Contains(group, ".."):
				b.WriteRune(anyRune) // alternatives that can leave the directory
			default:
				b.WriteRune(globRune) // {a,b}: a name
			}
			i += j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
