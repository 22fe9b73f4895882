package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allowAll lets a directory search read every file below it.
var allowAll = &Options{MaySearch: func(string, string) bool { return true }}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestToolsOpenWhatWasJudged: a tool refuses a path that is not in the form its
// preprocessor judged, and never follows a link put in place after the judgement
// (a directory or the file swapped for a link to the secret).
func TestToolsOpenWhatWasJudged(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	for _, d := range []string{"ws/d", "ws/secret"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(ws, "d", "f"), "public\n")
	writeFile(t, filepath.Join(ws, "secret", "f"), "TOPSECRET\n")
	w, err := Open(ws, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for _, p := range []string{"d/f/", "./d/f", "d//f"} {
		if got, err := w.readFile(p); err == nil || !strings.Contains(err.Error(), "is not in the form that was judged") {
			t.Errorf("readFile(%q) = %q, %v; want a refusal", p, got, err)
		}
	}
	if got, err := w.readFile("d/f"); err != nil || got != "public\n" {
		t.Fatalf("readFile(d/f) = %q, %v", got, err)
	}

	// The judged form was "d/f"; then d becomes a link to secret. The open must not
	// follow it, whatever the caller checked before.
	if err := os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "d.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("secret", filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	if got, err := w.readFile("d/f"); err == nil {
		t.Errorf("readFile(d/f) through a new link = %q, want a refusal", got)
	}
	f, err := w.openFile("d/f", os.O_RDONLY, 0, false)
	if err == nil {
		f.Close()
		t.Fatal("openFile followed a directory link")
	}
	if !strings.Contains(err.Error(), "changed since it was judged") {
		t.Errorf("openFile: %v", err)
	}
	// The same for the last component, and for a write (O_TRUNC must not reach the
	// link's target).
	if err := os.Symlink("../secret/f", filepath.Join(ws, "d.old", "g")); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_TRUNC | os.O_CREATE} {
		f, err := w.openFile("d.old/g", flag, 0o644, false)
		if err == nil {
			f.Close()
			t.Errorf("openFile(d.old/g, %#x) followed a file link", flag)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "secret", "f")); string(b) != "TOPSECRET\n" {
		t.Errorf("the link's target was changed: %q", b)
	}
	// search and ls skip links instead of following them.
	if got, err := w.search("TOPSECRET", "d.old"); err != nil || got != "no matches" {
		t.Errorf("search = %q, %v; want no matches", got, err)
	}
	if got, err := w.search("public", "."); err != nil || got != "d.old/f:1: public" {
		t.Errorf("search = %q, %v", got, err)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ws", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "ws", "inner")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(dir, "ws", "up")); err != nil {
		t.Fatal(err)
	}
	w, err := Open(filepath.Join(dir, "ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for p, want := range map[string]string{
		"a.txt": "a.txt", "sub/../a.txt": "a.txt", "./sub/new/file": "sub/new/file", "inner/x": "sub/x", "inner/../a.txt": "a.txt",
		"sub//x/./": "sub/x",
		".":         ".", filepath.Join(w.dir, "b"): "b",
	} {
		if got, err := w.resolve(p); err != nil || got != want {
			t.Errorf("resolve(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	for _, p := range []string{"..", "../x", "sub/../../x", "/etc/passwd", "up/x", "up", "", "a\x00b", filepath.Dir(w.dir)} {
		if got, err := w.resolve(p); err == nil {
			t.Errorf("resolve(%q) = %q, want a refusal", p, got)
		}
	}
	// The editor creates directories inside, and never writes outside.
	if _, err := w.edit("sub/deep/n.txt", "write", "x"); err != nil {
		t.Error(err)
	}
	if _, err := w.edit("up/escaped.txt", "write", "x"); err == nil {
		t.Error("wrote through a symlink out of the workspace")
	}
	if _, err := os.Stat(filepath.Join(dir, "escaped.txt")); !os.IsNotExist(err) {
		t.Error("a file was written outside the workspace")
	}
}

// TestDemoShell: the demo shell runs its few commands in the workspace and refuses
// everything else without running anything.
func TestDemoShell(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "workspace", "notes.txt"), "hello from the workspace\nsecond line\n")
	w, err := Open(filepath.Join(dir, "workspace"), allowAll)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for cmd, want := range map[string]string{
		"ls":               "notes.txt\n",
		"cat notes.txt":    "hello from the workspace\nsecond line\n",
		"wc -l notes.txt":  "2 notes.txt\n",
		"echo a   b":       "a b\n",
		"pwd":              w.dir + "\n",
		"/bin/echo hi":     "hi\n",
		"search-it second": "",
	} {
		if cmd == "search-it second" {
			got, err := w.search("second", ".")
			if err != nil || got != "notes.txt:2: second line" {
				t.Errorf("search = %q, %v", got, err)
			}
			continue
		}
		got, err := w.bash(cmd)
		if err != nil || got != want {
			t.Errorf("bash(%q) = %q, %v; want %q", cmd, got, err, want)
		}
	}
	for _, cmd := range []string{"rm notes.txt", "ls | wc -l", "echo $HOME", "cat notes.txt > x", "sudo ls", "sh -c ls", "wc notes.txt", "ls a b", "pwd x", "cat", "curl http://example.com"} {
		if got, err := w.bash(cmd); err == nil || !strings.Contains(err.Error(), "this demo shell supports only ls, cat, echo, pwd, wc -l") {
			t.Errorf("bash(%q) = %q, %v; want the demo shell's refusal", cmd, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "notes.txt")); err != nil {
		t.Errorf("notes.txt: %v", err)
	}
}
