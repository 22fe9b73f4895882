package workspace

// This file opens what was judged: one path component at a time, never following a
// symbolic link, through an os.Root.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// errChanged is the error for a path that changed (a link put in its place) between
// the judgement and the open.
func errChanged(p string) error {
	return fmt.Errorf("%s changed since it was judged (a symbolic link or another file is in its place); nothing was done", p)
}

// stepDir opens the directory name (one component) of parent without following a
// symbolic link: it must be a directory and not a link, and the directory opened must
// be the one inspected. With create, a missing directory is made first.
func stepDir(parent *os.Root, name, shown string, create bool) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := parent.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, cleanPathError(err, shown)
		}
		fi, err = parent.Lstat(name)
	}
	if err != nil {
		return nil, cleanPathError(err, shown)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errChanged(shown)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", shown)
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, cleanPathError(err, shown)
	}
	now, err := sub.Stat(".")
	if err != nil || !os.SameFile(fi, now) {
		sub.Close()
		return nil, errChanged(shown)
	}
	return sub, nil
}

// openDir opens the workspace directory rel (canonical) without following any link;
// the caller closes it. With create, missing directories are made.
func (w *Workspace) openDir(rel string, create bool) (*os.Root, error) {
	cur, err := w.root.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return cur, nil
	}
	done := ""
	for _, name := range strings.Split(rel, "/") {
		done = path.Join(done, name)
		next, err := stepDir(cur, name, done, create)
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// openIn opens the file name (one component) of dir without following a link: an
// existing name must be a regular file and the file opened the one inspected; a missing
// one is created only with os.O_CREATE, exclusively. O_TRUNC applies only once the file
// is known to be the one inspected.
func openIn(dir *os.Root, name, shown string, flag int, perm fs.FileMode) (*os.File, error) {
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0:
		f, err := dir.OpenFile(name, flag|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			return nil, errChanged(shown)
		}
		if err != nil {
			return nil, cleanPathError(err, shown)
		}
		return f, nil
	case err != nil:
		return nil, cleanPathError(err, shown)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, errChanged(shown)
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory", shown)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", shown)
	}
	f, err := dir.OpenFile(name, flag&^(os.O_CREATE|os.O_TRUNC|os.O_EXCL)|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, cleanPathError(err, shown)
	}
	now, err := f.Stat()
	if err != nil || !os.SameFile(fi, now) {
		f.Close()
		return nil, errChanged(shown)
	}
	if flag&os.O_TRUNC != 0 {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, cleanPathError(err, shown)
		}
	}
	return f, nil
}

// openFile opens the workspace file rel (canonical) without following any link.
func (w *Workspace) openFile(rel string, flag int, perm fs.FileMode, mkdirs bool) (*os.File, error) {
	if rel == "." {
		return nil, errors.New(". is a directory")
	}
	dir, base := path.Split(rel)
	d, err := w.openDir(path.Clean("./"+dir), mkdirs)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return openIn(d, base, rel, flag, perm)
}

// readAll reads an open file of at most maxToolFile bytes.
func readAll(f *os.File, shown string) (string, error) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", cleanPathError(err, shown)
	}
	if fi.Size() > maxToolFile {
		return "", fmt.Errorf("%s is %d bytes, over the %d bytes these tools read", shown, fi.Size(), maxToolFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxToolFile+1))
	if err != nil {
		return "", cleanPathError(err, shown)
	}
	if len(b) > maxToolFile {
		return "", fmt.Errorf("%s is over the %d bytes these tools read", shown, maxToolFile)
	}
	return string(b), nil
}

func (w *Workspace) readFile(p string) (string, error) {
	rel, err := w.judged(p)
	if err != nil {
		return "", err
	}
	f, err := w.openFile(rel, os.O_RDONLY, 0, false)
	if err != nil {
		return "", err
	}
	return readAll(f, p)
}

// cleanPathError drops the absolute workspace path from a file error.
func cleanPathError(err error, p string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", p, pe.Err)
	}
	return err
}
