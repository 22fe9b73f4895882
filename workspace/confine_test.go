package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/schema"
)

// allowEverything is a policy that allows every call of the four tools: whatever is
// refused below is refused by the workspace's own confinement.
const allowEverything = `version: 1
mode: rules
match:
  search: "{path}"
rules:
  allow:
    reader: ["*"]
    editor: ["*"]
    search: ["*"]
    bash: ["*"]
`

// confined is a workspace with a sibling directory outside it holding a secret, a
// link inside to that directory and a link inside to the secret file, and a Guard
// governing the workspace's tools under allowEverything.
type confined struct {
	ws      *Workspace
	guard   *warden.Guard
	outside string // the directory next to the workspace
}

func newConfined(t *testing.T) *confined {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{dir, outside, filepath.Join(dir, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(outside, "secret"), "TOPSECRET\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "notes\n")
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "secret-link")); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(dir, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	pol, err := policy.Parse("policy.yaml", []byte(allowEverything), nil)
	if err != nil {
		t.Fatal(err)
	}
	var reg warden.Registry
	for _, e := range ws.Tools() {
		if err := reg.Register(e); err != nil {
			t.Fatal(err)
		}
	}
	g, err := reg.Bind(warden.Config{Checkers: []warden.Checker{pol}, Schemas: schema.Compiler{}, Revision: pol.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	return &confined{ws: ws, guard: g, outside: outside}
}

func (c *confined) call(t *testing.T, tool string, args ...any) warden.Outcome {
	t.Helper()
	a, err := warden.NewArgs(args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.guard.Call(context.Background(), warden.Call{Tool: tool, Args: a})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return out
}

// TestConfinementEscapes: a path that leaves the workspace, by "..", as an absolute
// path or through a symbolic link, is refused by each tool's preprocessor before
// anything runs, whatever the policy allows; and nothing outside is read or written.
func TestConfinementEscapes(t *testing.T) {
	c := newConfined(t)
	secret := filepath.Join(c.outside, "secret")
	escapes := []string{
		"..", "../outside/secret", "sub/../../outside/secret", // lexically out
		secret, "/etc/passwd", filepath.Dir(c.ws.Dir()), // absolute, outside
		"out/secret", "out", "secret-link", "sub/../out/secret", // through a link out
	}
	for _, p := range escapes {
		for _, tc := range []struct {
			tool string
			args []any
		}{
			{"reader", []any{"path", p}},
			{"editor", []any{"file_path", p, "action", "write", "content", "x"}},
			{"search", []any{"pattern", "TOP", "path", p}},
			{"bash", []any{"command", "cat " + p}},
		} {
			out := c.call(t, tc.tool, tc.args...)
			if out.Executed || !strings.Contains(out.ModelText, "is outside the workspace; use a path inside it") {
				t.Errorf("%s %q: executed %v, model reads %q; want the escape refused before it runs", tc.tool, p, out.Executed, out.ModelText)
			}
			if strings.Contains(out.ModelText, "TOPSECRET") {
				t.Errorf("%s %q leaked the secret: %q", tc.tool, p, out.ModelText)
			}
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "TOPSECRET\n" {
		t.Errorf("the secret outside is now %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(c.outside); len(entries) != 1 {
		t.Errorf("files were created outside the workspace: %v", entries)
	}
	// The tools themselves refuse the same paths when called without the
	// preprocessor: the path they are given must be the canonical one.
	for _, p := range escapes {
		if got, err := c.ws.readFile(p); err == nil {
			t.Errorf("readFile(%q) = %q, want a refusal", p, got)
		}
		if got, err := c.ws.edit(p, "append", "x"); err == nil {
			t.Errorf("edit(%q) = %q, want a refusal", p, got)
		}
	}
	// An absolute path inside the workspace is its canonical relative form.
	out := c.call(t, "reader", "path", filepath.Join(c.ws.Dir(), "notes.txt"))
	if !out.Executed || out.ModelText != "notes\n" {
		t.Errorf("reader of the absolute path inside: executed %v, %q", out.Executed, out.ModelText)
	}
	if p, _ := out.Args.String("path"); p != "notes.txt" {
		t.Errorf("the reader ran with path %q, want the canonical notes.txt", p)
	}
}

// TestProtectedFiles: the editor never writes a protected file (named directly,
// through a link inside the workspace, or in another case) nor a checkpoint in the
// checkpoint directory, whatever the policy allows; reading them is the policy's
// business.
func TestProtectedFiles(t *testing.T) {
	c := newConfined(t)
	dir := c.ws.Dir()
	writeFile(t, filepath.Join(dir, "policy.yaml"), "the policy\n")
	writeFile(t, filepath.Join(dir, "warden-checkpoint-0123.json"), "{}\n")
	if err := os.Symlink("policy.yaml", filepath.Join(dir, "pol-link")); err != nil {
		t.Fatal(err)
	}
	c.ws.Protect(filepath.Join(dir, "policy.yaml"), "the Warden policy")
	c.ws.Protect("relative.yaml", "ignored: not absolute")
	if err := c.ws.ProtectCheckpoints(dir); err != nil {
		t.Fatal(err)
	}
	for p, what := range map[string]string{
		"policy.yaml":                 "the Warden policy",
		"pol-link":                    "the Warden policy",
		"sub/../policy.yaml":          "the Warden policy",
		"warden-checkpoint-0123.json": "a Warden checkpoint",
		"Warden-Checkpoint-new.JSON":  "a Warden checkpoint",
	} {
		for _, action := range []string{"write", "append"} {
			out := c.call(t, "editor", "file_path", p, "action", action, "content", "x")
			want := "Warden refused this write: " + p + " is " + what + ", which no tool call may change, whatever the policy says."
			if out.Executed || out.ModelText != want {
				t.Errorf("editor %s %q: executed %v, model reads %q; want %q", action, p, out.Executed, out.ModelText, want)
			}
		}
	}
	// The tool itself refuses too, without the preprocessor.
	if _, err := c.ws.edit("policy.yaml", "write", "x"); err == nil || !strings.Contains(err.Error(), "the Warden policy") {
		t.Errorf("edit(policy.yaml) = %v, want the protected-file refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "policy.yaml")); string(b) != "the policy\n" {
		t.Errorf("policy.yaml is now %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "Warden-Checkpoint-new.JSON")); !os.IsNotExist(err) {
		t.Errorf("a checkpoint file was created: %v", err)
	}
	// Other files, and checkpoint-like names elsewhere, are the policy's business.
	for _, p := range []string{"notes.txt", "relative.yaml", "sub/warden-checkpoint-0123.json", "warden-checkpoint-0123.txt"} {
		if out := c.call(t, "editor", "file_path", p, "action", "append", "content", "x"); !out.Executed {
			t.Errorf("editor %q: refused: %q", p, out.ModelText)
		}
	}
	if out := c.call(t, "reader", "path", "policy.yaml"); !out.Executed || out.ModelText != "the policy\n" {
		t.Errorf("reader policy.yaml: executed %v, %q", out.Executed, out.ModelText)
	}
}

// TestSearchWithoutMaySearch: with no MaySearch (the strictest default), a directory
// search reads no file and says how many it skipped; a search of one named file,
// judged as such, reads it.
func TestSearchWithoutMaySearch(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "needle\n")
	writeFile(t, filepath.Join(dir, "b.txt"), "needle\n")
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, err := w.search("needle", "."); err != nil || got != "(2 files not searched: the policy does not allow searching them)" {
		t.Errorf("search . = %q, %v", got, err)
	}
	if got, err := w.search("needle", "a.txt"); err != nil || got != "a.txt:1: needle" {
		t.Errorf("search a.txt = %q, %v", got, err)
	}
}
