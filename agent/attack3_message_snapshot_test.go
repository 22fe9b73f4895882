package agent_test

// attack3: agent.New checks the message chain (warden.CheckMessageMiddleware) but kept
// the caller's *Middleware values, so a link edited after New (its OnMessage cleared, a
// tool hook added) silently stopped running: RunMessageMiddleware skips a link without
// OnMessage. Like Bind, New keeps its own copy of every link: what it checked is what
// runs.

import (
	"context"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
)

func TestAttack3MessageChainIsSnapshotAtNew(t *testing.T) {
	var p probe
	g := bind(t, warden.Config{Ungoverned: true}, p.tool("a", ""))
	sc := script(say("never"))
	m := messageGuard("input")
	a := newAgent(t, sc, g, &agent.Options{MessageMiddleware: []*warden.Middleware{m}})
	m.OnMessage = nil // edited after New: would never run, and New never saw this
	m.Name = "renamed"
	_, err := a.Run(context.Background(), "use the key "+secret)
	md := asError[*warden.MessageDeniedError](t, err)
	if md.Middleware != "secret-scanner" {
		t.Errorf("denied by %q, want the link as New checked it", md.Middleware)
	}
	if sc.calls() != 0 {
		t.Errorf("the model was called %d times with the key", sc.calls())
	}
}
