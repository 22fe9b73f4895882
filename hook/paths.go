package hook

// This file judges paths the way the filesystem will use them: symbolic links resolved
// (ResolvePath, Inside), and says which arguments of a mapped call are paths.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
