package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

// Found by an attack (finding A4-2), and fixed: "before Start the gateway serves
// nothing", but Reload did not check that Start had run. A Reload before Start (a
// file watcher or SIGHUP handler of an embedding program that runs before Start)
// loaded the policy, started and discovered the upstream servers and put a revision
// in force: the fronts listed and served tools, and accepted the HTTP clients'
// tokens, while Ready still said "starting" and the pin re-check that Start starts
// was not running. Reload before Start is now refused and changes nothing.
func TestAttack4ReloadBeforeStartServesNothing(t *testing.T) {
	mcptest.PeersOnPATH(t, "./internal/faultserver", "./examples/gateway/notes-server")
	dir := t.TempDir()
	mcptest.WriteFile(t, dir, "policy.yaml", []byte(gwPolicy))
	data := []byte("policy: policy.yaml\nstore: sqlite://warden.db\n" + gwDefaultTransport +
		"servers:\n  fault:\n    command: faultserver\n" + gwDefaultIdentities)
	file := mcptest.WriteFile(t, dir, "gateway.yaml", data)
	cfg, err := gateway.ParseFile(file, data, gwGetenv)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	gw, err := gateway.New(cfg, &gateway.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		gw.Close(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := gw.Reload(ctx, cfg); err == nil {
		t.Error("Reload before Start succeeded")
	}
	if rev := gw.Revision(); rev != "" {
		t.Errorf("after a Reload before Start the revision %s is in force", rev)
	}
	e := &gwEnv{gw: gw}
	cs := e.connectStdio(t, nil)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 0 {
		t.Errorf("before Start the stdio front lists %d tools (%s, ...)", len(res.Tools), res.Tools[0].Name)
	}
	got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fault__echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil && !got.IsError {
		t.Errorf("before Start a tool call ran: %+v", got.Content)
	}
}
