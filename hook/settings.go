package hook

// This file adds Warden's hook to a Claude Code settings file.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wardenhq/warden"
)

// ClaudeHook is one command hook to install in a Claude Code settings file.
type ClaudeHook struct {
	Event   string // the hook event: EventPreToolUse or EventPostToolUse
	Command string // the command line Claude Code runs, through a shell
}

// ClaudeMatchAll is the matcher installed hooks use: every tool.
const ClaudeMatchAll = "*"

// ErrInvalidSettings is wrapped by the errors for a settings file that is not a JSON
// object, or whose "hooks" (or an event list in it) has the wrong type.
var ErrInvalidSettings = errors.New("invalid Claude Code settings")

// MergeClaudeSettings returns the settings file contents settings with hooks added, each
// as its own matcher group for every tool:
//
//	{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "..."}]}]}}
//
// Everything already in settings is kept, in its order: other keys, other events, other
// matcher groups and other hooks. A hook whose exact command already runs for every
// tool (matcher "*", "" or none) on its event is not added again, so merging twice
// changes nothing. changed reports whether anything was added; when it is false, out is
// settings itself. The result is indented with two spaces.
//
// Pass []byte("{}") for a file that does not exist yet. MergeClaudeSettings returns an
// error wrapping [ErrInvalidSettings], and no output, when settings is not exactly one
// JSON object (an empty file is not), has duplicate keys, or has a "hooks" that is not an
// object or an event entry that is not an array.
func MergeClaudeSettings(settings []byte, hooks ...ClaudeHook) (out []byte, changed bool, err error) {
	top, err := warden.ParseArgs(settings)
	if err != nil {
		if len(bytes.TrimSpace(settings)) == 0 {
			return nil, false, fmt.Errorf("%w: the file is empty, not a JSON object", ErrInvalidSettings)
		}
		return nil, false, fmt.Errorf("%w: not a valid JSON object: %s", ErrInvalidSettings, strings.TrimPrefix(err.Error(), "arguments: "))
	}
	var events warden.Args
	if v, ok := top.Get("hooks"); ok {
		if events, ok = v.(warden.Args); !ok {
			return nil, false, fmt.Errorf("%w: \"hooks\" is %s, not an object", ErrInvalidSettings, jsonKind(v))
		}
	}
	for _, h := range hooks {
		var groups []any
		if v, ok := events.Get(h.Event); ok {
			arr, ok := v.(warden.Array)
			if !ok {
				return nil, false, fmt.Errorf("%w: \"hooks.%s\" is %s, not an array", ErrInvalidSettings, h.Event, jsonKind(v))
			}
			groups = arr.Slice()
		}
		if installed(groups, h.Command) {
			continue
		}
		cmd := warden.Args{}.With("type", "command").With("command", h.Command)
		group := warden.Args{}.With("matcher", ClaudeMatchAll).With("hooks", []any{cmd})
		events = events.With(h.Event, append(groups, group))
		changed = true
	}
	if !changed {
		return settings, false, nil
	}
	top = top.With("hooks", events)
	var b bytes.Buffer
	if err := json.Indent(&b, top.AppendJSON(nil), "", "  "); err != nil {
		return nil, false, fmt.Errorf("hook: indenting settings: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), true, nil
}

// installed reports whether one of the matcher groups runs command for every tool.
// Groups of another shape are someone else's business and are skipped.
func installed(groups []any, command string) bool {
	for _, g := range groups {
		group, ok := g.(warden.Args)
		if !ok {
			continue
		}
		if m, ok := group.Get("matcher"); ok && m != nil && m != "" && m != ClaudeMatchAll {
			continue
		}
		list, _ := group.Get("hooks")
		hooks, _ := list.(warden.Array)
		for _, h := range hooks.All() {
			h, ok := h.(warden.Args)
			if !ok {
				continue
			}
			if t, _ := h.String("type"); t != "command" {
				continue
			}
			if c, _ := h.String("command"); c == command {
				return true
			}
		}
	}
	return false
}

// ClaudeHooksBlock returns the settings that hold only hooks, for printing.
func ClaudeHooksBlock(hooks ...ClaudeHook) []byte {
	out, _, err := MergeClaudeSettings([]byte("{}"), hooks...)
	if err != nil {
		panic("hook: merging into an empty settings file failed: " + err.Error())
	}
	return out
}

// InstallClaudeSettings merges hooks into the settings file at path with
// [MergeClaudeSettings], creating the file (and its directory) when it does not exist.
// When path is a symbolic link, the file it points to is updated. The new contents are
// written to a temporary file in the same directory, with the old file's permissions,
// and renamed over the old file, so a reader sees the old file or the new one and never
// a part. It reports whether the file changed; when nothing needs adding the file is not
// written at all. On any error the file is left as it was; an error wrapping
// [ErrInvalidSettings] means the existing file is not valid settings.
func InstallClaudeSettings(path string, hooks ...ClaudeHook) (changed bool, err error) {
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
	}
	perm := fs.FileMode(0o644)
	data, err := os.ReadFile(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = []byte("{}")
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return false, err
		}
	case err != nil:
		return false, err
	default:
		fi, err := os.Stat(target)
		if err != nil {
			return false, err
		}
		perm = fi.Mode().Perm()
	}
	out, changed, err := MergeClaudeSettings(data, hooks...)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return false, nil
	}
	if err := writeFileAtomic(target, out, perm); err != nil {
		return false, err
	}
	return true, nil
}

// writeFileAtomic replaces path with data: a temporary file in the same directory,
// synced, then renamed over path.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
