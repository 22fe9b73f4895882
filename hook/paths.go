package hook

// This file judges paths the way the filesystem will use them: symbolic links resolved,
// and the files a running Warden reads kept out of reach of the tools it governs.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/syntax"
)

// maxSymlinks bounds the symbolic links [ResolvePath] follows for one path, as the
// kernel does (40 on Linux); more is an error, never a guess.
const maxSymlinks = 40

// ResolvePath returns the file the absolute path p names on the real filesystem, the way
// the kernel resolves it when a tool opens p: component by component from the root, every
// symbolic link replaced by its target (a relative target read from the link's
// directory), a ".." climbing from where the links led (so "proj/link/.." is the parent
// of the link's target, not proj). Below a component that does not exist, the path is
// taken lexically (nothing there can be a link yet, and a tool that creates the missing
// directories creates them as named); a ".." that climbs back to an existing directory
// resumes resolving ("proj/missing/../link/x" is where link leads, as it is once
// "missing" is created). The result is absolute and clean.
//
// It returns an error, and no path, when p is not absolute, holds a NUL byte, goes
// through more than 40 links, or when a component cannot be inspected for another
// reason than not existing (a directory without search permission): what the tool would
// reach is then unknown.
func ResolvePath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q holds a NUL byte", p)
	}
	sep := string(filepath.Separator)
	todo := strings.Split(p, sep) // components still to walk, in order
	done := sep                   // resolved so far: absolute, clean, no links in it
	missing := 0                  // how many trailing components of done do not exist
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			if missing > 0 {
				missing-- // back towards what exists: links count again from there
			}
			continue
		}
		next := filepath.Join(done, c)
		if missing > 0 {
			missing++
			done = next
			continue
		}
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			missing = 1
			done = next
			continue
		case err != nil:
			return "", fmt.Errorf("cannot tell what %q names: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("path %q goes through more than %d symbolic links", p, maxSymlinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("cannot read the symbolic link %q: %w", next, err)
		}
		if filepath.IsAbs(target) {
			done = sep
		}
		todo = append(strings.Split(target, sep), todo...)
	}
	return done, nil
}

// Protected is the set of files a running Warden reads (its policy, the Claude Code
// settings that run its hook, its audit store, its own executable): no tool call Warden
// governs may write them, whatever the policy says. The zero value protects nothing.
type Protected struct {
	files []protectedFile
}

type protectedFile struct {
	path  string      // the path as given, cleaned
	forms []string    // the path as given (cleaned) and as resolved, lower-cased
	info  fs.FileInfo // the file as it is now; nil when it does not exist
	what  string      // what the file is, for the refusal: "the Warden policy"
}

// Add protects the file at the absolute path p, which need not exist (a settings file
// Claude Code would read once it is created is protected as well). what says what the
// file is ("the Warden policy", "Claude Code settings"), for the refusal. A path that is
// not absolute or cannot be resolved is protected as written.
func (pr *Protected) Add(p, what string) {
	if !filepath.IsAbs(p) {
		return
	}
	f := protectedFile{path: filepath.Clean(p), what: what, forms: []string{fold(filepath.Clean(p))}}
	if r, err := ResolvePath(p); err == nil && fold(r) != f.forms[0] {
		f.forms = append(f.forms, fold(r))
	}
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		f.info = fi
	}
	pr.files = append(pr.files, f)
}

// fold is the form paths are compared in: lower-cased, since a case-insensitive
// filesystem (macOS, Windows) opens .Claude/Settings.json as .claude/settings.json.
// Comparing folded can only refuse more.
func fold(p string) string { return strings.ToLower(p) }

// Hit is a protected file a path or a command reaches.
type Hit struct {
	Path string // the protected file, as it was added (cleaned)
	What string // what it is, as it was added: "the Warden policy", ...
}

// Names returns the protected file, or false, that the
// absolute path p names: p as written (cleaned), p resolved with [ResolvePath], or, when
// p exists, the same file under another name (a hard link). A p that cannot be resolved
// is judged as written.
func (pr *Protected) Names(p string) (Hit, bool) {
	forms := pathForms(p)
	var fi fs.FileInfo
	if len(pr.files) > 0 {
		fi, _ = os.Stat(p)
	}
	for _, f := range pr.files {
		for _, form := range forms {
			if slices.Contains(f.forms, form) {
				return Hit{f.path, f.what}, true
			}
		}
		if fi != nil && f.info != nil && os.SameFile(fi, f.info) {
			return Hit{f.path, f.what}, true
		}
	}
	return Hit{}, false
}

// pathForms is p cleaned and p resolved, folded.
func pathForms(p string) []string {
	forms := []string{fold(filepath.Clean(p))}
	if r, err := ResolvePath(p); err == nil && fold(r) != forms[0] {
		forms = append(forms, fold(r))
	}
	return forms
}

// under reports whether the folded path form is the protected path prot or a directory
// holding it.
func under(prot, form string) bool {
	return prot == form || form == string(filepath.Separator) || strings.HasPrefix(prot, form+string(filepath.Separator))
}

// Reaches returns what a file a protected file is, or "" with false, when the absolute
// path p names one of them or a directory holding one (so that a command given p could
// remove, move or rewrite it), p taken as written (cleaned) and as resolved.
func (pr *Protected) Reaches(p string) (Hit, bool) { return pr.reaches(p, "") }

// reaches is [Protected.Reaches], except that a directory that is cwd or one of its
// ancestors is not a match (see [Protected.CommandReaches]); cwd "" excepts nothing.
func (pr *Protected) reaches(p, cwd string) (Hit, bool) {
	if h, ok := pr.Names(p); ok {
		return h, true
	}
	forms := pathForms(p)
	for _, f := range pr.files {
		for _, prot := range f.forms {
			for _, form := range forms {
				if under(prot, form) && (form == prot || !holdsCwd(form, cwd)) {
					return Hit{f.path, f.what}, true
				}
			}
		}
	}
	return Hit{}, false
}

// holdsCwd reports whether the folded directory form is cwd or one of its ancestors.
func holdsCwd(form, cwd string) bool {
	if cwd == "" {
		return false
	}
	c := fold(filepath.Clean(cwd))
	return c == form || form == string(filepath.Separator) || strings.HasPrefix(c, form+string(filepath.Separator))
}

// reachesPattern is [Protected.Reaches] for a word that bash expands: re matches the
// absolute paths the word can stand for; directories that hold cwd are excepted as in
// reaches.
func (pr *Protected) reachesPattern(re *regexp.Regexp, cwd string) (Hit, bool) {
	for _, f := range pr.files {
		for _, prot := range f.forms {
			for a := prot; ; a = filepath.Dir(a) {
				if re.MatchString(a) && (a == prot || !holdsCwd(a, cwd)) {
					return Hit{f.path, f.what}, true
				}
				if a == filepath.Dir(a) {
					break
				}
			}
		}
	}
	return Hit{}, false
}

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
		if w.cd {
			moved = true
		}
	}
	for _, w := range words {
		for _, cand := range w.candidates() {
			if h, ok := pr.candidateReaches(cand, cwd, home, moved); ok {
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
	if !strings.ContainsAny(abs, string(anyRune)+string(globRune)) {
		if h, ok := pr.reaches(filepath.Clean(abs), cwd); ok {
			return h, true
		}
	} else if h, ok := pr.reachesPattern(candidateRegexp(abs), cwd); ok {
		return h, true
	}
	if moved && !strings.HasPrefix(cand, "/") {
		// Relative to a directory a cd chose: match the end of every protected path.
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

// candidates are the word itself and its pieces between separators.
func (w shellWord) candidates() []string {
	out := []string{w.text}
	for _, piece := range strings.FieldsFunc(w.text, func(r rune) bool { return strings.ContainsRune(wordSeparators, r) }) {
		if piece != w.text {
			out = append(out, piece)
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

// pathArgs are the arguments of the canonical tools [MapClaudeTool] produces that name a
// file or directory the tool acts on.
var pathArgs = map[string][]string{
	"reader": {"path"},
	"editor": {"file_path"},
	"search": {"path"},
}

// IsWrite reports whether call (from [MapClaudeTool]) writes the file its file_path
// names: Write, Edit, MultiEdit and NotebookEdit, all judged as editor.
func (c Call) IsWrite() bool { return c.Tool == "editor" }

// Paths returns the values of the call's path arguments (reader's path, editor's
// file_path, search's path), absolute and clean as [MapClaudeTool] made them.
func (c Call) Paths() []string {
	var out []string
	for _, k := range pathArgs[c.Tool] {
		if s, ok := c.Args.String(k); ok {
			out = append(out, s)
		}
	}
	return out
}

// ManagedSettingsFiles are the managed (enterprise) Claude Code settings files, which
// can hold hooks: Linux's and macOS's.
var ManagedSettingsFiles = []string{
	"/etc/claude-code/managed-settings.json",
	"/Library/Application Support/ClaudeCode/managed-settings.json",
}

// AddClaudeSettings protects every Claude Code settings file that can hold the hook
// that runs Warden: .claude/settings.json and .claude/settings.local.json in each of
// dirs and each directory above them, the user's settings in configDir (Claude Code's
// CLAUDE_CONFIG_DIR; home/.claude when empty), and the managed settings. A directory
// that is not absolute is skipped.
func (pr *Protected) AddClaudeSettings(dirs []string, home, configDir string) {
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			pr.Add(p, "the Claude Code settings that run Warden's hook")
		}
	}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			continue
		}
		for d = filepath.Clean(d); ; d = filepath.Dir(d) {
			add(filepath.Join(d, ".claude", "settings.json"))
			add(filepath.Join(d, ".claude", "settings.local.json"))
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	if configDir == "" && filepath.IsAbs(home) {
		configDir = filepath.Join(home, ".claude")
	}
	if filepath.IsAbs(configDir) {
		add(filepath.Join(configDir, "settings.json"))
		add(filepath.Join(configDir, "settings.local.json"))
	}
	for _, m := range ManagedSettingsFiles {
		add(m)
	}
}

// Inside reports whether the absolute path p, resolved with [ResolvePath], is dir
// (resolved too) or inside it. Paths that cannot be resolved are compared as written.
func Inside(p, dir string) bool {
	if !filepath.IsAbs(p) || !filepath.IsAbs(dir) {
		return false
	}
	for _, pf := range pathForms(p) {
		for _, df := range pathForms(dir) {
			if pf == df || df == string(filepath.Separator) || strings.HasPrefix(pf, df+string(filepath.Separator)) {
				return true
			}
		}
	}
	return false
}
