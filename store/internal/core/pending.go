// Package core holds what every SQL store implementation does the same way: the rules
// of pending decisions (what a new decision looks like, how a verdict changes it, when
// it expires and what an approval authorizes), the decoding of rows into store types,
// the batching queue of writes and the wait for a decision. The implementations keep
// their own SQL and only make these steps atomic in their database; it is internal so
// that these shared parts are not an API of the store module.
package core

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wardenhq/warden/store"
)

// PrepareNew validates a decision given to CreatePending and fills in its defaults: ID,
// Created (now), State "pending", Scope "once". Decision fields (DecidedBy, Note,
// DecidedAt, Consumed) must be empty: a decision is created undecided.
func PrepareNew(p store.Pending, now time.Time) (store.Pending, error) {
	if p.ID == "" {
		p.ID = store.NewPendingID()
	}
	if p.State != "" && p.State != store.StatePending {
		return store.Pending{}, fmt.Errorf("store: a new decision must be pending, not %q", p.State)
	}
	if p.DecidedBy != "" || p.Note != "" || !p.DecidedAt.IsZero() || p.Consumed {
		return store.Pending{}, fmt.Errorf("store: a new decision cannot carry a verdict")
	}
	p.State = store.StatePending
	if p.Scope == "" {
		p.Scope = store.ScopeOnce
	}
	if p.Scope != store.ScopeOnce && p.Scope != store.ScopeSession {
		return store.Pending{}, fmt.Errorf("store: unknown scope %q (want once or session)", p.Scope)
	}
	if p.SessionTTL < 0 {
		return store.Pending{}, fmt.Errorf("store: negative session TTL %v", p.SessionTTL)
	}
	if p.Created.IsZero() {
		p.Created = now
	}
	p.Created = store.NormalizeTime(p.Created)
	p.Expires = store.NormalizeTime(p.Expires)
	for _, s := range []*string{&p.ID, (*string)(&p.Kind), &p.Question, &p.Detail, &p.Tool,
		&p.Digest, &p.Identity.Tenant, &p.Identity.Principal, &p.Identity.Conversation,
		&p.Session, &p.Revision} {
		*s = store.CleanString(*s)
	}
	p.Args = cloneJSON(p.Args)
	p.Evidence = cloneJSON(p.Evidence)
	p.Decision = cloneJSON(p.Decision)
	return p, nil
}

func cloneJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// Expired reports whether p was still undecided when Expires passed (as of now). A
// zero now is a clock that does not know the time: every decision that can expire is
// judged expired (fail closed).
func Expired(p store.Pending, now time.Time) bool {
	return !p.Expires.IsZero() && (now.IsZero() || !now.Before(p.Expires))
}

// View returns p as callers see it at now: an undecided decision past Expires reports
// State "expired".
func View(p store.Pending, now time.Time) store.Pending {
	if p.State == store.StatePending && Expired(p, now) {
		p.State = store.StateExpired
	}
	return p
}

// Decide applies verdict v to p at now and returns the decided p. Errors:
// store.ErrAlreadyDecided, store.ErrExpired, store.ErrInvalidVerdict.
func Decide(p store.Pending, v store.Verdict, now time.Time) (store.Pending, error) {
	if p.State != store.StatePending {
		return store.Pending{}, fmt.Errorf("%w: %s was %s by %q at %s", store.ErrAlreadyDecided,
			p.ID, p.State, p.DecidedBy, p.DecidedAt.Format(time.RFC3339))
	}
	if Expired(p, now) {
		return store.Pending{}, fmt.Errorf("%w: %s expired at %s", store.ErrExpired, p.ID, p.Expires.Format(time.RFC3339))
	}
	scope := v.Scope
	if scope == "" {
		scope = p.Scope
	}
	if scope == "" {
		scope = store.ScopeOnce
	}
	switch {
	case scope != store.ScopeOnce && scope != store.ScopeSession:
		return store.Pending{}, fmt.Errorf("%w: unknown scope %q (want once or session)", store.ErrInvalidVerdict, scope)
	case v.SessionTTL < 0:
		return store.Pending{}, fmt.Errorf("%w: negative session TTL %v", store.ErrInvalidVerdict, v.SessionTTL)
	case scope == store.ScopeSession && v.Approve && p.Session == "":
		// Fail closed: a session approval for no session would have to match either
		// nothing or everything; refuse it rather than guess.
		return store.Pending{}, fmt.Errorf("%w: %s names no session, so it cannot be approved for the session", store.ErrInvalidVerdict, p.ID)
	}
	p.Scope = scope
	if v.SessionTTL > 0 {
		p.SessionTTL = v.SessionTTL
	}
	if scope == store.ScopeSession && p.SessionTTL == 0 {
		p.SessionTTL = store.DefaultSessionTTL
	}
	p.State = store.StateDeclined
	if v.Approve {
		p.State = store.StateApproved
	}
	p.DecidedBy = store.CleanString(v.By)
	p.Note = store.CleanString(v.Note)
	p.DecidedAt = store.NormalizeTime(now)
	return p, nil
}

// SessionUntil returns when a session approval stops authorizing calls.
func SessionUntil(p store.Pending) time.Time {
	ttl := p.SessionTTL
	if ttl <= 0 {
		ttl = store.DefaultSessionTTL
	}
	return p.DecidedAt.Add(ttl)
}

// Authorizes reports whether p authorizes a call with this digest in this session at
// now. The stores select candidates in SQL; this is the rule they implement, and they
// check every candidate against it again before using it.
func Authorizes(p store.Pending, digest, session string, now time.Time) bool {
	if digest == "" || p.Digest != digest || p.State != store.StateApproved {
		return false
	}
	switch p.Scope {
	case store.ScopeOnce:
		return !p.Consumed && !Expired(p, now)
	case store.ScopeSession:
		return session != "" && p.Session == session && !now.IsZero() && now.Before(SessionUntil(p))
	}
	return false // unknown scope: fail closed
}

// Listed reports whether ListPending with filter f shows p at now.
func Listed(p store.Pending, f store.PendingFilter, now time.Time) bool {
	if f.Session != "" && p.Session != f.Session {
		return false
	}
	return f.All || (p.State == store.StatePending && !Expired(p, now))
}

// ListedView is [Listed] and [View] as a keep function for [Select].
func ListedView(f store.PendingFilter, now time.Time) func(store.Pending) (store.Pending, bool) {
	return func(p store.Pending) (store.Pending, bool) {
		if !Listed(p, f, now) {
			return store.Pending{}, false
		}
		return View(p, now), true
	}
}

// AuthorizesAt is [Authorizes] as a match function for [First].
func AuthorizesAt(digest, session string, now time.Time) func(store.Pending) bool {
	return func(p store.Pending) bool { return Authorizes(p, digest, session, now) }
}
