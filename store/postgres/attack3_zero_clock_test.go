package postgres_test

// attack3: stores take an injected clock (Options.Now). A clock that returns the zero
// time does not know what time it is; judged at the zero time nothing ever expires, so
// an approval whose Expires passed (or a session approval past its TTL) was still
// consumed. A store that cannot tell the time must fail closed: every decision that
// can expire is judged expired.

import (
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/store"
)

func TestAttack3ZeroClockConsumesNoExpiringApproval(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := t0
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	set := func(at time.Time) { mu.Lock(); clock = at; mu.Unlock() }
	s := open(t, freshSchema(t), now)
	ctx := t.Context()
	mk := func(id, digest, scope string) {
		t.Helper()
		if _, err := s.CreatePending(ctx, store.Pending{ID: id, Tool: "deploy", Digest: digest, Session: "s1", Kind: "escalate", Expires: t0.Add(time.Minute), Scope: scope, SessionTTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decide(ctx, id, store.Verdict{Approve: true, By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	mk("apv_once", "sha256:once", store.ScopeOnce)
	mk("apv_session", "sha256:session", store.ScopeSession)

	set(time.Time{}) // the clock breaks
	if p, ok, err := s.ConsumeApproval(ctx, "sha256:once", ""); err != nil || ok {
		t.Errorf("zero clock: once approval consumed: %+v %v %v", p, ok, err)
	}
	if p, ok, err := s.ConsumeApproval(ctx, "sha256:session", "s1"); err != nil || ok {
		t.Errorf("zero clock: session approval used: %+v %v %v", p, ok, err)
	}

	set(t0.Add(time.Hour)) // a working clock, long after both expired
	if _, ok, _ := s.ConsumeApproval(ctx, "sha256:once", ""); ok {
		t.Error("an expired once approval was consumed")
	}
	if _, ok, _ := s.ConsumeApproval(ctx, "sha256:session", "s1"); ok {
		t.Error("a session approval past its TTL was used")
	}
}
