package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/runfile"
)

// TestRunSearchSkipsDeniedFiles: a search of a directory reads every file below it,
// so each file is judged as a search of that file alone. Before this fix, under a
// policy denying search and reader of *.env, search "." (allowed by *) returned
// "x.env:1: TOPSECRET".
func TestRunSearchSkipsDeniedFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "x.env"), "TOPSECRET\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "y.env"), "TOPSECRET2\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "TOP of the notes\n")
	writeFile(t, filepath.Join(dir, "policy.yaml"), pathsPolicy)
	writeFile(t, filepath.Join(dir, "agent.yaml"), "provider:\n  name: scripted\n  replies:\n    - text: done\npolicy: policy.yaml\nworkspace: .\ncheckpoint_dir: .\n")
	cfg, err := runfile.Load(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime(cfg, nil, nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.close()
	var search warden.Executable
	for _, e := range rt.ws.Tools() {
		if e.Tool.Name == "search" {
			search = e
		}
	}
	for _, p := range []string{".", "sub"} {
		res, err := search.Run(context.Background(), warden.MustParseArgs(`{"pattern":"TOP","path":"`+p+`"}`), nil)
		if err != nil {
			t.Fatalf("search %s: %v", p, err)
		}
		out, _ := res.(string)
		if strings.Contains(out, "TOPSECRET") {
			t.Errorf("search %s returned a denied file's contents:\n%s", p, out)
		}
		if !strings.Contains(out, "not searched: the policy does not allow searching") {
			t.Errorf("search %s does not say that it skipped files:\n%s", p, out)
		}
		if p == "." && !strings.Contains(out, "notes.txt:1: TOP of the notes") {
			t.Errorf("search . lost an allowed file:\n%s", out)
		}
	}
}
