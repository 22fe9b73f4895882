package main

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestServeInProcess drives the serve program in-process, as a test can: it starts the
// gateway on stdio, ends when the client's stdin ends, and leaves the test process's
// GC setting as it was (what only main may change is asked of a process, which a test
// leaves at zero).
func TestServeInProcess(t *testing.T) {
	t.Setenv("GOGC", "") // unset: the live process would tune the GC now
	dir := t.TempDir()
	policy, err := filepath.Abs(filepath.Join("..", "..", "examples", "gateway", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := gwConfig{policy: policy, store: "sqlite://" + filepath.Join(dir, "warden.db"), wait: "1s",
		servers: "  notes:\n    command: not-admitted\n", stdioRole: "reader"}
	config := filepath.Join(dir, "gateway.yaml")
	writeFile(t, config, cfg.yaml())

	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	p, err := newServeProgram(serveOptions{config: config, stdio: true}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v\nstderr: %s", err, p.stderr)
	}
	now := debug.SetGCPercent(-1)
	debug.SetGCPercent(now)
	if now != before {
		t.Errorf("the GC percent changed from %d to %d in the test process", before, now)
	}

	for _, o := range []serveOptions{{}, {config: config, watch: -1}} {
		if _, err := newServeProgram(o, nil, nil, nil, nil); exitCode(err) != exitUsage {
			t.Errorf("newServeProgram(%+v) = %v, want a usage error", o, err)
		}
	}
}
