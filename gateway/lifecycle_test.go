package gateway_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/store"
)

// New does no I/O: a file whose policy does not exist builds a Gateway that serves
// nothing and says it is starting; Start is what reads the policy, and fails on it.
// Start runs once, never after Close, and Close is safe to repeat.
func TestGatewayNewDoesNoIO(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gateway.yaml")
	cfg, err := gateway.ParseFile(file, []byte("policy: missing.yaml\nstore: sqlite://w.db\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.New(cfg, nil); err == nil {
		t.Error("New without a store succeeded")
	}
	if _, err := gateway.New(nil, &gateway.Options{}); err == nil {
		t.Error("New without a file succeeded")
	}
	st, err := store.Open(context.Background(), cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	gw, err := gateway.New(cfg, &gateway.Options{Store: st})
	if err != nil {
		t.Fatalf("New with a policy file that does not exist: %v (it must not read it)", err)
	}
	if err := gw.Ready(); err == nil || err.Error() != "starting" {
		t.Errorf("Ready before Start: %v, want starting", err)
	}
	if gw.File() != cfg || gw.Revision() != "" {
		t.Errorf("before Start: File %p (want %p), Revision %q (want none)", gw.File(), cfg, gw.Revision())
	}
	err = gw.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Start with a missing policy: %v, want an error naming it", err)
	}
	if err := gw.Start(context.Background()); err == nil {
		t.Error("a second Start succeeded")
	}
	if err := gw.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := gw.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Start after Close is refused, before anything is read.
	policy := filepath.Join(dir, "missing.yaml")
	if err := os.WriteFile(policy, []byte("mode: deny_all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw2, err := gateway.New(cfg, &gateway.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := gw2.Start(context.Background()); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start after Close: %v, want a refusal", err)
	}
}
