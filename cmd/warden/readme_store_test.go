package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

// TestREADMENamesExampleStore: the store the README tells the CLI to use, run from the
// repository root, is the example gateway's own (its store: is relative to the config,
// the CLI's default ./warden.db is not it), and the CLI opens it as written.
func TestREADMENamesExampleStore(t *testing.T) {
	root := mcptest.RepoRoot(t)
	readme := readFile(t, filepath.Join(root, "README.md"))
	const cmdPrefix = "bin/warden approvals list --store "
	var dsn string
	for _, block := range strings.Split(readme, "```sh\n")[1:] {
		block = block[:strings.Index(block, "```")]
		if line, ok := strings.CutPrefix(strings.TrimSpace(block), cmdPrefix); ok {
			dsn = line
			break
		}
	}
	rel, ok := strings.CutPrefix(dsn, "sqlite://")
	if !ok || rel == "" || filepath.IsAbs(rel) {
		t.Fatalf("README.md has no ```sh block `%ssqlite://RELATIVE-PATH` for the example gateway's store (got %q)", cmdPrefix, dsn)
	}
	cfg, err := gateway.LoadFile(filepath.Join(root, "examples", "gateway", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "sqlite://" + filepath.Join(root, rel); cfg.Store != want {
		t.Fatalf("the README's store %s, from the repository root, is %s; the example gateway's is %s", dsn, want, cfg.Store)
	}

	// The CLI reads the relative DSN against its working directory, as the README runs it.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if r := execWarden(t, dir, nil, "approvals", "list", "--store", dsn); r.code != 0 {
		t.Fatalf("warden approvals list --store %s in a directory holding it: exit %d\n%s%s", dsn, r.code, r.stdout, r.stderr)
	}
}
