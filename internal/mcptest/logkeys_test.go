package mcptest

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
)

// errorsTB records what KeysOnce reports instead of failing the test.
type errorsTB struct {
	testing.TB
	errs []string
}

func (e *errorsTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func TestKeysOnce(t *testing.T) {
	var logs LogBuffer
	rec := &errorsTB{TB: t}
	log := slog.New(KeysOnce(rec, slog.NewTextHandler(&logs, nil)))
	srv := log.With("server", "notes")
	srv.Info("fine", "tool", "read", "call", 1)
	srv.WithGroup("upstream").Info("a group's key is its own", "server", "x")
	srv.Info("twice", "server", "notes")
	log.Info("own twice", "k", 1, "k", 2)
	log.With("a", 1).With("a", 2).Info("With twice")
	log.Info("in a group", slog.Group("g", "x", 1, "x", 2))
	want := []string{
		`log line "twice" carries the key "server" twice`,
		`log line "own twice" carries the key "k" twice`,
		`log line "(a logger's With)" carries the key "a" twice`,
		`log line "in a group" carries the key "g.x" twice`,
	}
	if !slices.Equal(rec.errs, want) {
		t.Errorf("reports:\n%q\nwant\n%q", rec.errs, want)
	}
	if n := logs.Count("level=INFO"); n != 6 {
		t.Errorf("%d lines logged, want all 6:\n%s", n, logs.String())
	}
}
