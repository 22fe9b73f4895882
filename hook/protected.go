package hook

// This file keeps the files a running Warden reads out of reach of the tools it
// governs: the protected set and how a path (in every form it can take) reaches it.

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

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
	if re, ok := procPattern(filepath.Clean(p)); ok {
		// Where it leads depends on the process that opens it, not on this one.
		if h, ok := pr.namesPattern(re); ok {
			return h, true
		}
	}
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

// procPattern returns, for a clean absolute path through another process's links
// into the filesystem (/proc/<pid>/cwd, /proc/<pid>/root, /proc/<pid>/fd/<n>, the
// same below /proc/<pid>/task/<tid>, /dev/fd/<n>, /dev/stdin and friends), the pattern
// of what it can name: what such a path names depends on the process that opens it,
// which is the tool's, not Warden's. "/proc/self/cwd/.claude/x" can be any ".claude/x",
// "/proc/1/root/etc/x" any "etc/x" (fail closed). ok is false for any other path
// (/proc/cpuinfo included).
func procPattern(p string) (*regexp.Regexp, bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	rest := -1 // index of the first component after the link
	switch {
	case len(parts) >= 2 && parts[0] == "dev" && (parts[1] == "stdin" || parts[1] == "stdout" || parts[1] == "stderr"):
		rest = 2
	case len(parts) >= 3 && parts[0] == "dev" && parts[1] == "fd":
		rest = 3
	case len(parts) >= 3 && parts[0] == "proc":
		for i := 2; i < len(parts) && rest < 0; i++ {
			switch parts[i] {
			case "cwd", "root", "exe":
				rest = i + 1
			case "fd", "map_files":
				rest = i + 2
			}
		}
	}
	if rest < 0 {
		return nil, false
	}
	tail := ""
	if rest < len(parts) {
		tail = strings.Join(parts[rest:], "/")
	}
	return candidateRegexp(string(anyRune) + "/" + tail), true
}

// namesPattern is [Protected.Names] for a pattern: a protected file re matches.
func (pr *Protected) namesPattern(re *regexp.Regexp) (Hit, bool) {
	for _, f := range pr.files {
		for _, prot := range f.forms {
			if re.MatchString(prot) {
				return Hit{f.path, f.what}, true
			}
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
