package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store"
)

// watchPolicy is a policy whose revision says which edit is in force.
func watchPolicy(n int) string {
	return "version: 1\nmode: rules\nrules:\n  deny:\n    echo: [\"edit-" + strings.Repeat("x", n) + "\"]\n"
}

// revisionOf is the revision a policy file's content has.
func revisionOf(t *testing.T, content string) string {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(content), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.Revision()
}

// TestServeReloadRace drives the serve loop's reload with edits injected at the
// moments a reload can race them (no timing: a hook at each moment), against a real
// gateway that reads the files itself. An edit saved while a reload is in progress is
// applied by the next check, wherever it lands; an edit that keeps the file's size
// and time is seen.
func TestServeReloadRace(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	conf := filepath.Join(dir, "gateway.yaml")
	writeFile(t, pol, watchPolicy(1))
	writeFile(t, conf, "policy: policy.yaml\nstore: sqlite://warden.db\nservers: {}\nstdio:\n  principal: me\n")

	w := &configWatch{config: conf}
	cfg, err := w.load(nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs mcptest.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	logs.LogOnFailure(t, "serve log")
	ctx := context.Background()
	gw, err := gateway.New(cfg, &gateway.Options{Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	if err := gw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	want := func(n int) {
		t.Helper()
		if got, w := gw.Revision(), revisionOf(t, watchPolicy(n)); got != w {
			t.Fatalf("revision in force %s, want edit %d's %s", got, n, w)
		}
	}
	want(1)
	if w.changed() {
		t.Fatal("changed right after the first load")
	}

	// An edit saved after the gateway read the policy, while the reload is still in
	// progress: the reload applies the edit before it, and the check after it sees
	// the later one. (Stamped after reading, the later edit was never applied.)
	writeFile(t, pol, watchPolicy(2))
	if !w.changed() {
		t.Fatal("an edit is not seen")
	}
	w.hook = func(stage string) {
		if stage == "loaded" {
			writeFile(t, pol, watchPolicy(3))
		}
	}
	reloadGateway(ctx, gw, w, log, "file change", nil)
	want(2)
	w.hook = nil
	if !w.changed() {
		t.Fatal("an edit saved while the reload was in progress is not seen: the gateway would serve edit 2 forever")
	}
	reloadGateway(ctx, gw, w, log, "file change", nil)
	want(3)
	if w.changed() {
		t.Fatal("changed after reloading every edit")
	}

	// An edit saved between the hashing and the read: the reload reads it, and one
	// more reload (of the same content) follows; nothing is lost either way.
	w.hook = func(stage string) {
		if stage == "stamped" {
			writeFile(t, pol, watchPolicy(4))
		}
	}
	reloadGateway(ctx, gw, w, log, "SIGHUP", nil)
	want(4)
	w.hook = nil
	if !w.changed() {
		t.Fatal("an edit made after the hashing is not seen")
	}
	reloadGateway(ctx, gw, w, log, "file change", nil)
	want(4)
	if w.changed() {
		t.Fatal("changed after reloading every edit")
	}

	// An edit of the same size and modification time (a coarse clock, or a replace
	// by rename) is seen: contents are compared.
	fi, err := os.Stat(pol)
	if err != nil {
		t.Fatal(err)
	}
	same := strings.Replace(watchPolicy(4), "edit-xxxx", "edit-yyyy", 1)
	if len(same) != len(watchPolicy(4)) || same == watchPolicy(4) {
		t.Fatal("the test's edit must keep the size")
	}
	writeFile(t, pol, same)
	if err := os.Chtimes(pol, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(pol); fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the edit changed the stamp: %d %s, was %d %s", fi2.Size(), fi2.ModTime(), fi.Size(), fi.ModTime())
	}
	if !w.changed() {
		t.Fatal("an edit that keeps the size and time is not seen")
	}

	// A broken policy is refused and not retried until it changes again.
	writeFile(t, pol, "version: 1\nrolez: {}\n")
	reloadGateway(ctx, gw, w, log, "file change", nil)
	want(4)
	if !bytes.Contains([]byte(logs.String()), []byte("reload refused")) {
		t.Error("the refused reload is not logged")
	}
	if w.changed() {
		t.Error("a refused file is reloaded again without a change")
	}
	writeFile(t, pol, watchPolicy(6))
	if !w.changed() {
		t.Fatal("the fixed policy is not seen")
	}
	reloadGateway(ctx, gw, w, log, "file change", nil)
	want(6)
}

// The shadow policy is watched like the policy: an edit reloads it, and a broken one
// is refused, leaving the one in force.
func TestServeReloadShadowPolicy(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "candidate.yaml")
	conf := filepath.Join(dir, "gateway.yaml")
	writeFile(t, filepath.Join(dir, "policy.yaml"), watchPolicy(1))
	writeFile(t, cand, "version: 1\nenforce: false\n"+strings.TrimPrefix(watchPolicy(2), "version: 1\n"))
	writeFile(t, conf, "policy: policy.yaml\nshadow_policy: candidate.yaml\nstore: sqlite://warden.db\nservers: {}\nstdio:\n  principal: me\n")
	w := &configWatch{config: conf}
	cfg, err := w.load(nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs mcptest.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	logs.LogOnFailure(t, "serve log")
	ctx := context.Background()
	gw, err := gateway.New(cfg, &gateway.Options{Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	if err := gw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	want := func(n int) {
		t.Helper()
		if got, w := gw.ShadowRevision(), revisionOf(t, watchPolicy(n)); got != w {
			t.Fatalf("shadow revision in force %s, want edit %d's %s", got, n, w)
		}
	}
	want(2) // enforce: false is not part of the revision
	if w.changed() {
		t.Fatal("changed right after the first load")
	}
	writeFile(t, cand, watchPolicy(3))
	if !w.changed() {
		t.Fatal("an edit of the shadow policy is not seen")
	}
	reloadGateway(ctx, gw, w, log, "file change", nil)
	want(3)
	writeFile(t, cand, "version: 1\nrulez: {}\n")
	if !w.changed() {
		t.Fatal("an edit of the shadow policy is not seen")
	}
	reloadGateway(ctx, gw, w, log, "file change", nil)
	want(3)
	if !strings.Contains(logs.String(), "reload refused") || w.changed() {
		t.Fatal("a broken shadow policy is not refused once")
	}
	if got, want := gw.Revision(), revisionOf(t, watchPolicy(1)); got != want {
		t.Fatalf("enforcing revision %s, want %s", got, want)
	}
}
