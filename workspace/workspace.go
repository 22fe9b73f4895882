// Package workspace is the directory an agent's built-in tools may touch, and those
// tools: a reader, an editor, a plain-text search and a tiny in-process shell (ls,
// cat, echo, pwd, wc -l), each confined to the directory.
//
// Paths are judged in the form the tools act on, and the tools act on exactly that form:
//
//   - Each tool's preprocessor turns every path argument into its canonical form: the
//     path relative to the workspace, slash-separated and clean, with every symbolic
//     link resolved the way the kernel would resolve it ("x.env/", "x.env/.",
//     "./x.env" and "sub/../x.env" are all "x.env"; a link inside the workspace becomes
//     its target). A path that leaves the workspace, lexically or through a link, is
//     refused. When the canonical form differs from the written one, the call goes on
//     with the canonical form, and the Guard judges it again (the second permission
//     pass): the written form and the canonical form are both judged, and a refusal of
//     either refuses the call.
//   - A tool refuses a path argument that is not already canonical, so what it opens is
//     the string that was judged; and it opens that path one component at a time
//     without following any symbolic link (each directory and the file is checked to be
//     no link, then opened, then checked to be the same file that was checked), through
//     an os.Root, which cannot leave the workspace whatever happens in between. A link
//     put in place after the judgement makes the call fail; it is never followed.
//   - The files the caller protects ([Workspace.Protect], [Workspace.ProtectCheckpoints];
//     for warden run: the policy, agent.yaml, the directives pack, the MCP project
//     file, the checkpoint files and the store's files) are never written by the
//     editor, whatever the policy says.
//   - A search of a directory reads every file below it, so each file is judged as a
//     search of that file alone ({pattern, path: the file}); a file the policy does not
//     allow is not opened, and the answer says how many were skipped.
//
// It is its own package because confinement is a security boundary with its own
// tests: the command that runs an agent (warden run) opens a workspace, says which
// files it protects and registers the tools; how a path is resolved and opened is
// decided here alone.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/internal/fileerr"
	"github.com/wardenhq/warden/shell"
)

// Options configure a [Workspace]. The zero value is the strictest.
type Options struct {
	// MaySearch reports whether the policy allows searching the one file rel (canonical,
	// relative to the workspace) for pattern: a search of a directory reads every file
	// below it, and each is judged as a search of that file alone. Nil allows none: a
	// directory search then reads no file and says how many it skipped (a search
	// naming one file was judged as such and is not affected).
	MaySearch func(pattern, rel string) bool
}

// A Workspace is an open directory and the tools confined to it. Its methods other
// than the tools' own are not safe to call while a tool runs.
type Workspace struct {
	dir  string // absolute, symlinks resolved
	root *os.Root
	opts Options
	// protected is what the editor refuses to write: absolute paths, and the
	// checkpoint directory whose warden-checkpoint-*.json files are protected.
	protected     hook.Protected
	checkpointDir string
}

// Open opens the directory dir (which must exist) as a workspace. Nil opts are the
// defaults. The caller closes it.
func Open(dir string, opts *Options) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", dir, fileerr.Text(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	w := &Workspace{dir: real, root: root}
	if opts != nil {
		w.opts = *opts
	}
	return w, nil
}

// Dir is the workspace's absolute path, with every symbolic link resolved.
func (w *Workspace) Dir() string { return w.dir }

// Close closes the workspace's directory; its tools fail from then on.
func (w *Workspace) Close() error { return w.root.Close() }

// Protect keeps the editor from writing the file at the absolute path p (which need
// not exist), whatever the policy says; what says what the file is, for the refusal
// ("the Warden policy"). A path that is not absolute is ignored.
func (w *Workspace) Protect(p, what string) { w.protected.Add(p, what) }

// ProtectCheckpoints keeps the editor from writing the files warden-checkpoint-*.json
// (any case) directly in the directory dir, where a paused run keeps its checkpoints.
func (w *Workspace) ProtectCheckpoints(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if real, err := hook.ResolvePath(dir); err == nil {
		dir = real
	}
	w.checkpointDir = dir
	return nil
}

// protectedFile returns what the workspace file rel (canonical) is, when it is one the
// editor must not write.
func (w *Workspace) protectedFile(rel string) (hook.Hit, bool) {
	abs := filepath.Join(w.dir, filepath.FromSlash(rel))
	if h, ok := w.protected.Names(abs); ok {
		return h, true
	}
	if w.checkpointDir != "" && strings.EqualFold(filepath.Dir(abs), w.checkpointDir) {
		base := strings.ToLower(filepath.Base(abs))
		if strings.HasPrefix(base, "warden-checkpoint-") && strings.HasSuffix(base, ".json") {
			return hook.Hit{Path: abs, What: "a Warden checkpoint"}, true
		}
	}
	return hook.Hit{}, false
}

// maxToolFile bounds what the reader, cat and search read from one file.
const maxToolFile = 1 << 20

// maxSearchMatches bounds the lines search returns.
const maxSearchMatches = 100

// maxSearchDepth bounds how deep search descends below the path it is given.
const maxSearchDepth = 64

// escapeError is the error for a path outside the workspace.
func escapeError(p string) error {
	return fmt.Errorf("path %q is outside the workspace; use a path inside it", p)
}

// resolve returns the canonical form of p: relative to the workspace, slash-separated,
// clean, with every symbolic link resolved as the kernel resolves it (see
// [hook.ResolvePath]); "." is the workspace itself. It refuses a path that leaves the
// workspace: lexically after cleaning, or through a link.
func (w *Workspace) resolve(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("the path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	raw := p
	if !filepath.IsAbs(p) {
		raw = w.dir + string(filepath.Separator) + p // not cleaned: "link/.." climbs from the target
	}
	if !w.inside(filepath.Clean(raw)) {
		return "", escapeError(p)
	}
	real, err := hook.ResolvePath(raw)
	if err != nil {
		return "", fmt.Errorf("path %q: %v", p, err)
	}
	if !w.inside(real) {
		return "", escapeError(p)
	}
	rel, err := filepath.Rel(w.dir, real)
	if err != nil {
		return "", escapeError(p)
	}
	return filepath.ToSlash(rel), nil
}

func (w *Workspace) inside(abs string) bool {
	rel, err := filepath.Rel(w.dir, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// judged returns p when it is already in canonical form, and refuses it otherwise: a
// tool acts only on the form its preprocessor produced and the policy judged.
func (w *Workspace) judged(p string) (string, error) {
	rel, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	if rel != p {
		return "", fmt.Errorf("path %q is not in the form that was judged (%q); nothing was done", p, rel)
	}
	return rel, nil
}

// confine is a tool's own preprocessor for the path argument key: a path that leaves
// the workspace is refused; any other is replaced by its canonical form, which the
// Guard then judges again. With write set, a protected file is refused whatever the
// policy says.
func (w *Workspace) confine(key string, write bool) func(context.Context, warden.ToolCall) warden.CallOutcome {
	return func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
		v, present := c.Args.Get(key)
		if !present {
			return warden.AllowCall()
		}
		p, ok := v.(string)
		if !ok {
			return warden.AllowCall() // the schema refuses it
		}
		rel, err := w.resolve(p)
		if err != nil {
			return warden.DenyCall(err.Error())
		}
		if write {
			if h, ok := w.protectedFile(rel); ok {
				return warden.DenyCall(protectedWriteText(p, h))
			}
		}
		if rel == p {
			return warden.AllowCall()
		}
		return warden.TransformCall(c.Args.With(key, rel), fmt.Sprintf("%s %q judged as the file it opens, %q", key, p, rel))
	}
}

// protectedWriteText is what the model reads when the editor refuses a protected file.
func protectedWriteText(p string, h hook.Hit) string {
	return fmt.Sprintf("Warden refused this write: %s is %s, which no tool call may change, whatever the policy says.", p, h.What)
}

// confineShell is the bash tool's preprocessor: the file arguments of cat, wc -l and
// ls are replaced by their canonical form (see confine), so that the policy judges the
// command the demo shell will run. A command the demo shell does not run is left as it
// is (it runs nothing).
func (w *Workspace) confineShell(_ context.Context, c warden.ToolCall) warden.CallOutcome {
	command, _ := c.Args.String("command")
	argv, paths, ok := demoShellPaths(command)
	if !ok {
		return warden.AllowCall()
	}
	changed := false
	for _, i := range paths {
		rel, err := w.resolve(argv[i])
		if err != nil {
			return warden.DenyCall(err.Error())
		}
		if rel != argv[i] {
			if strings.Trim(rel, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+,@%") != "" {
				return warden.DenyCall(fmt.Sprintf("path %q leads to %q, which the demo shell cannot take as one word; use the reader tool", argv[i], rel))
			}
			argv[i], changed = rel, true
		}
	}
	if !changed {
		return warden.AllowCall()
	}
	return warden.TransformCall(c.Args.With("command", strings.Join(argv, " ")), "file arguments judged as the files the demo shell opens")
}

// demoShellPaths splits a command the demo shell runs into its words and the indexes of
// those that name files; ok is false for anything it does not run.
func demoShellPaths(command string) (argv []string, paths []int, ok bool) {
	a := shell.Analyze(command)
	if !a.Simple || len(a.Commands) != 1 {
		return nil, nil, false
	}
	argv = strings.Fields(a.Commands[0])
	if len(argv) == 0 {
		return nil, nil, false
	}
	switch name, n := argv[0], len(argv); {
	case name == "ls" && n == 2:
		paths = []int{1}
	case name == "cat" && n >= 2:
		for i := 1; i < n; i++ {
			paths = append(paths, i)
		}
	case name == "wc" && n >= 3 && argv[1] == "-l":
		for i := 2; i < n; i++ {
			paths = append(paths, i)
		}
	default:
		return nil, nil, false
	}
	return argv, paths, true
}
