package hook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden"
)

// tree makes base/{real/sub/f, etc/shadow, proj/link -> ../etc, proj/rel -> real/sub,
// proj/abs -> base/real, proj/loop -> loop} and returns base with links resolved.
func tree(t *testing.T) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"real/sub", "etc", "proj"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"real/sub/f", "etc/shadow"} {
		if err := os.WriteFile(filepath.Join(base, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"proj/link": "../etc", "proj/rel": "../real/sub", "proj/abs": filepath.Join(base, "real"), "proj/loop": "loop"} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

func TestResolvePath(t *testing.T) {
	base := tree(t)
	for in, want := range map[string]string{
		"proj/link/shadow":       "etc/shadow",
		"proj/link/cron.d/x":     "etc/cron.d/x", // the missing rest is cleaned
		"proj/link/../x":         "x",            // ".." climbs from the link's target
		"proj/link/":             "etc",
		"proj//link/./shadow":    "etc/shadow",
		"proj/rel/f":             "real/sub/f",
		"proj/abs/sub/../sub/f":  "real/sub/f",
		"proj/missing/../link/x": "etc/x",
		"proj/x.env/":            "proj/x.env",
		"real/sub/f/x":           "real/sub/f/x", // below a file: nothing to resolve
	} {
		got, err := ResolvePath(base + "/" + in)
		if err != nil || got != filepath.Join(base, want) {
			t.Errorf("ResolvePath(%s) = %q, %v; want %s", in, got, err, filepath.Join(base, want))
		}
	}
	for _, in := range []string{"relative/path", base + "/proj/loop/x", base + "/a\x00b"} {
		if got, err := ResolvePath(in); err == nil {
			t.Errorf("ResolvePath(%q) = %q, want an error", in, got)
		}
	}
}

func TestResolveClaudeTool(t *testing.T) {
	base := tree(t)
	proj := filepath.Join(base, "proj")
	for _, tt := range []struct {
		tool, key, value, arg, want string
	}{
		{"Read", "file_path", "link/shadow", "path", "etc/shadow"},
		{"Read", "file_path", "link/../x", "path", "x"},
		{"Write", "file_path", proj + "/link/cron.d/x", "file_path", "etc/cron.d/x"},
		{"NotebookEdit", "notebook_path", "rel/n.ipynb", "file_path", "real/sub/n.ipynb"},
		{"Grep", "path", "abs", "path", "real"},
		{"Glob", "pattern", "link/*", "path", "etc"},
	} {
		input := warden.Args{}.With(tt.key, tt.value)
		if tt.tool == "Grep" || tt.tool == "Glob" {
			if tt.key != "pattern" {
				input = input.With("pattern", "x")
			}
		}
		call, err := ResolveClaudeTool(tt.tool, input, proj)
		if err != nil {
			t.Errorf("%s %s: %v", tt.tool, tt.value, err)
			continue
		}
		if got, _ := call.Args.String(tt.arg); got != filepath.Join(base, tt.want) {
			t.Errorf("%s %s: %s = %q, want %s", tt.tool, tt.value, tt.arg, got, filepath.Join(base, tt.want))
		}
		written, err := MapClaudeTool(tt.tool, input, proj)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := written.Args.String(tt.arg); !filepath.IsAbs(got) || got == filepath.Join(base, tt.want) {
			t.Errorf("%s %s: the written form %q should differ from the resolved one", tt.tool, tt.value, got)
		}
	}
	if _, err := ResolveClaudeTool("Read", warden.Args{}.With("file_path", "loop/x"), proj); err == nil {
		t.Error("a link loop resolved")
	}
}
