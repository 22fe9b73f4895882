package workspace

// This file is the tools themselves: what each does once its path is judged.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/shell"
)

func objectSchema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `,"additionalProperties":false}`)
}

// Tools returns the four built-in tools (reader, editor, search, bash), each with the
// preprocessor that confines its path arguments to w. They share w: close w only once
// none of them runs any more.
func (w *Workspace) Tools() []warden.Executable {
	return []warden.Executable{
		{
			Tool: warden.Tool{
				Name:        "reader",
				Description: "Read a text file in the workspace.",
				InputSchema: objectSchema(`"path":{"type":"string","description":"the file, relative to the workspace"}`, "path"),
				Source:      "builtin",
			},
			Pre: w.confine("path", false),
			Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
				p, _ := a.String("path")
				return w.readFile(p)
			},
		},
		{
			Tool: warden.Tool{
				Name:        "editor",
				Description: "Write or append text to a file in the workspace.",
				InputSchema: objectSchema(`"file_path":{"type":"string","description":"the file, relative to the workspace"},"action":{"type":"string","enum":["write","append"]},"content":{"type":"string"}`, "file_path", "action", "content"),
				Source:      "builtin",
			},
			Pre: w.confine("file_path", true),
			Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
				p, _ := a.String("file_path")
				action, _ := a.String("action")
				content, _ := a.String("content")
				return w.edit(p, action, content)
			},
		},
		{
			Tool: warden.Tool{
				Name:        "search",
				Description: "Find the lines that contain a text (plain substring, case-sensitive) in the files under a path of the workspace.",
				InputSchema: objectSchema(`"pattern":{"type":"string","minLength":1},"path":{"type":"string","description":"a file or directory, relative to the workspace (default: the whole workspace)"}`, "pattern"),
				Source:      "builtin",
			},
			Pre: w.confine("path", false),
			Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
				pattern, _ := a.String("pattern")
				p, ok := a.String("path")
				if !ok || p == "" {
					p = "."
				}
				return w.search(pattern, p)
			},
		},
		{
			Tool: warden.Tool{
				Name:        "bash",
				Description: "Run one command in the workspace. A small in-process shell: only ls [DIR], cat FILE..., echo ..., pwd and wc -l FILE... are supported, without pipes, redirections or variables.",
				InputSchema: objectSchema(`"command":{"type":"string"}`, "command"),
				Source:      "builtin",
			},
			Pre: w.confineShell,
			Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
				c, _ := a.String("command")
				return w.bash(c)
			},
		},
	}
}

func (w *Workspace) edit(p, action, content string) (string, error) {
	rel, err := w.judged(p)
	if err != nil {
		return "", err
	}
	if h, ok := w.protectedFile(rel); ok {
		return "", errors.New(protectedWriteText(p, h))
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	verb := "wrote"
	switch action {
	case "write":
	case "append":
		flag, verb = os.O_WRONLY|os.O_CREATE|os.O_APPEND, "appended"
	default:
		return "", fmt.Errorf("unknown action %q (want write or append)", action)
	}
	f, err := w.openFile(rel, flag, 0o644, true)
	if err != nil {
		return "", err
	}
	_, werr := f.WriteString(content)
	if err := errors.Join(werr, f.Close()); err != nil {
		return "", cleanPathError(err, p)
	}
	return fmt.Sprintf("%s %d bytes to %s", verb, len(content), p), nil
}

func (w *Workspace) search(pattern, p string) (string, error) {
	rel, err := w.judged(p)
	if err != nil {
		return "", err
	}
	var out []string
	more := false
	skipped := 0
	// scan adds the matching lines of one open file.
	scan := func(f *os.File, name string) {
		text, err := readAll(f, name)
		if err != nil || strings.IndexByte(text, 0) >= 0 {
			return // unreadable, too large and binary files are skipped
		}
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 0, 64<<10), maxToolFile)
		for line := 1; sc.Scan(); line++ {
			if strings.Contains(sc.Text(), pattern) {
				if len(out) == maxSearchMatches {
					more = true
					return
				}
				out = append(out, fmt.Sprintf("%s:%d: %s", name, line, sc.Text()))
			}
		}
	}
	// walk searches an open directory, never following a link.
	var walk func(d *os.Root, prefix string, depth int)
	walk = func(d *os.Root, prefix string, depth int) {
		entries, err := fs.ReadDir(d.FS(), ".")
		if err != nil {
			return // unreadable directories are skipped
		}
		for _, e := range entries {
			if more {
				return
			}
			name := path.Join(prefix, e.Name())
			switch {
			case e.IsDir() && depth < maxSearchDepth:
				if sub, err := stepDir(d, e.Name(), name, false); err == nil {
					walk(sub, name, depth+1)
					sub.Close()
				}
			case e.Type().IsRegular():
				if w.opts.MaySearch == nil || !w.opts.MaySearch(pattern, name) {
					skipped++ // the policy would refuse searching this file by name
					continue
				}
				if f, err := openIn(d, e.Name(), name, os.O_RDONLY, 0); err == nil {
					scan(f, name)
				}
			}
		}
	}
	if fi, err := w.root.Lstat(rel); err == nil && fi.Mode().IsRegular() {
		f, err := w.openFile(rel, os.O_RDONLY, 0, false)
		if err != nil {
			return "", err
		}
		scan(f, rel)
	} else {
		d, err := w.openDir(rel, false)
		if err != nil {
			return "", err
		}
		walk(d, rel, 0)
		d.Close()
	}
	if more {
		out = append(out, fmt.Sprintf("(stopped after %d matches; narrow the search)", maxSearchMatches))
	}
	if skipped > 0 {
		out = append(out, fmt.Sprintf("(%d %s not searched: the policy does not allow searching %s)", skipped, pluralWord(skipped, "file", "files"), pluralWord(skipped, "it", "them")))
	}
	if len(out) == 0 {
		return "no matches", nil
	}
	return strings.Join(out, "\n"), nil
}

// errDemoShell is what the demo shell answers for anything it does not run.
var errDemoShell = errors.New("this demo shell supports only ls, cat, echo, pwd, wc -l")

// bash runs one command of the demo shell's tiny subset, in-process. The command is
// parsed with package shell; anything but one simple command of literal words, and
// anything but the supported commands, is refused without running anything. A file
// argument must be in the canonical form the preprocessor gave it.
func (w *Workspace) bash(command string) (string, error) {
	a := shell.Analyze(command)
	if !a.Simple {
		return "", fmt.Errorf("%w (one simple command; this one has %s)", errDemoShell, a.Problem)
	}
	if len(a.Commands) != 1 {
		return "", errDemoShell
	}
	argv := strings.Fields(a.Commands[0])
	name, args := argv[0], argv[1:]
	switch {
	case name == "pwd" && len(args) == 0:
		return w.dir + "\n", nil
	case name == "echo":
		return strings.Join(args, " ") + "\n", nil
	case name == "ls" && len(args) <= 1:
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		return w.ls(dir)
	case name == "cat" && len(args) >= 1:
		var b strings.Builder
		for _, f := range args {
			s, err := w.readFile(f)
			if err != nil {
				return "", fmt.Errorf("cat: %w", err)
			}
			b.WriteString(s)
		}
		return b.String(), nil
	case name == "wc" && len(args) >= 2 && args[0] == "-l":
		var b strings.Builder
		for _, f := range args[1:] {
			s, err := w.readFile(f)
			if err != nil {
				return "", fmt.Errorf("wc: %w", err)
			}
			fmt.Fprintf(&b, "%d %s\n", strings.Count(s, "\n"), f)
		}
		return b.String(), nil
	}
	return "", errDemoShell
}

func (w *Workspace) ls(p string) (string, error) {
	rel, err := w.judged(p)
	if err != nil {
		return "", fmt.Errorf("ls: %w", err)
	}
	d, err := w.openDir(rel, false)
	if err != nil {
		return "", fmt.Errorf("ls: %w", err)
	}
	defer d.Close()
	entries, err := fs.ReadDir(d.FS(), ".")
	if err != nil {
		return "", fmt.Errorf("ls: %w", cleanPathError(err, p))
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Name())
		if e.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// pluralWord is one when n is 1, many otherwise.
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
