package core

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/store"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func approved(scope string, mut func(*store.Pending)) store.Pending {
	p := store.Pending{ID: "apv_x", Digest: "sha256:d", Session: "s1", State: store.StateApproved,
		Scope: scope, DecidedAt: t0, SessionTTL: time.Minute, Expires: t0.Add(time.Hour)}
	if mut != nil {
		mut(&p)
	}
	return p
}

func TestAuthorizes(t *testing.T) {
	cases := []struct {
		name            string
		p               store.Pending
		digest, session string
		now             time.Time
		want            bool
	}{
		{"once", approved("once", nil), "sha256:d", "", t0, true},
		{"once other session", approved("once", nil), "sha256:d", "s2", t0, true},
		{"once other digest", approved("once", nil), "sha256:e", "s1", t0, false},
		{"once consumed", approved("once", func(p *store.Pending) { p.Consumed = true }), "sha256:d", "s1", t0, false},
		{"once at expiry", approved("once", nil), "sha256:d", "s1", t0.Add(time.Hour), false},
		{"once never expires", approved("once", func(p *store.Pending) { p.Expires = time.Time{} }), "sha256:d", "", t0.Add(1000 * time.Hour), true},
		{"session", approved("session", nil), "sha256:d", "s1", t0.Add(59 * time.Second), true},
		{"session at TTL", approved("session", nil), "sha256:d", "s1", t0.Add(time.Minute), false},
		{"session other session", approved("session", nil), "sha256:d", "s2", t0, false},
		{"session empty session", approved("session", func(p *store.Pending) { p.Session = "" }), "sha256:d", "", t0, false},
		{"session ignores Expires", approved("session", func(p *store.Pending) { p.Expires = t0.Add(time.Second) }), "sha256:d", "s1", t0.Add(30 * time.Second), true},
		{"session default TTL", approved("session", func(p *store.Pending) { p.SessionTTL = 0 }), "sha256:d", "s1", t0.Add(59 * time.Minute), true},
		{"declined", approved("once", func(p *store.Pending) { p.State = store.StateDeclined }), "sha256:d", "s1", t0, false},
		{"pending", approved("once", func(p *store.Pending) { p.State = store.StatePending }), "sha256:d", "s1", t0, false},
		{"empty digest", approved("once", func(p *store.Pending) { p.Digest = "" }), "", "s1", t0, false},
		{"unknown scope", approved("forever", nil), "sha256:d", "s1", t0, false},
	}
	for _, c := range cases {
		if got := Authorizes(c.p, c.digest, c.session, c.now); got != c.want {
			t.Errorf("%s: Authorizes = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecide(t *testing.T) {
	pending := store.Pending{ID: "apv_x", State: store.StatePending, Scope: store.ScopeOnce, Session: "s1", Expires: t0.Add(time.Hour)}
	d, err := Decide(pending, store.Verdict{Approve: true, By: "bob", Note: "ok", Scope: store.ScopeSession}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != store.StateApproved || d.Scope != store.ScopeSession || d.SessionTTL != store.DefaultSessionTTL || !d.DecidedAt.Equal(t0) || d.DecidedBy != "bob" {
		t.Errorf("Decide = %+v", d)
	}
	if _, err := Decide(d, store.Verdict{Approve: false}, t0); !errors.Is(err, store.ErrAlreadyDecided) {
		t.Errorf("second decision: %v", err)
	}
	if _, err := Decide(pending, store.Verdict{Approve: true}, t0.Add(time.Hour)); !errors.Is(err, store.ErrExpired) {
		t.Errorf("decision at expiry: %v", err)
	}
	if _, err := Decide(pending, store.Verdict{Approve: true, SessionTTL: -1}, t0); !errors.Is(err, store.ErrInvalidVerdict) {
		t.Errorf("negative TTL: %v", err)
	}
	d, err = Decide(pending, store.Verdict{Approve: false, Scope: store.ScopeSession}, t0)
	if err != nil || d.State != store.StateDeclined {
		t.Errorf("declining with a session scope: %+v, %v", d, err)
	}
	noSession := pending
	noSession.Session = ""
	if _, err := Decide(noSession, store.Verdict{Approve: true, Scope: store.ScopeSession}, t0); !errors.Is(err, store.ErrInvalidVerdict) {
		t.Errorf("session approval without a session: %v", err)
	}
}

// TestWaitRespectsExpiry runs in a synctest bubble (fake time): a decision that expires
// while Wait sleeps is reported at its expiry exactly, not at the next 1s poll.
func TestWaitRespectsExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := store.Pending{ID: "apv_x", State: store.StatePending, Expires: time.Now().Add(50 * time.Millisecond)}
		get := func(context.Context, string) (store.Pending, error) { return View(p, time.Now()), nil }
		start := time.Now()
		_, err := Wait(context.Background(), p.ID, get, nil, WaitOptions{Min: time.Second, Max: time.Second, Now: time.Now})
		if !errors.Is(err, store.ErrExpired) {
			t.Fatalf("Wait = %v, want ErrExpired", err)
		}
		if took := time.Since(start); took != 50*time.Millisecond {
			t.Errorf("Wait noticed expiry after %v, want at Expires (50ms) despite a 1s poll", took)
		}
	})
}
