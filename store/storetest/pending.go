package storetest

// The cases about pending decisions, waiting for them and the approvals they give.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

func newPending(t *testing.T, s store.Store, p store.Pending) store.Pending {
	t.Helper()
	got, err := s.CreatePending(ctxFor(t), p)
	check(t, err)
	return got
}

func approve(t *testing.T, s store.Store, id string, v store.Verdict) store.Pending {
	t.Helper()
	v.Approve = true
	p, err := s.Decide(ctxFor(t), id, v)
	check(t, err)
	return p
}

func samplePending() store.Pending {
	args := warden.MustParseArgs(`{"to":"ops@example.com","body":"hi"}`)
	return store.Pending{
		Kind: warden.KindCheckIn, Question: "Send this mail?", Detail: "external recipient",
		Tool: "send_mail", Args: json.RawMessage(`{"to":"ops@example.com","body":"hi"}`),
		Digest: args.Digest(), Evidence: json.RawMessage(`{"does":"sends mail"}`),
		Identity: warden.Identity{Tenant: "acme", Principal: "alice"}, Session: "sess-1",
		Revision: "rev-3", Expires: time.Now().Add(time.Hour),
		Decision: json.RawMessage(`{"resume_stage":"human"}`),
	}
}

func testPendingCreateGet(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	in := samplePending()
	before := time.Now().Add(-time.Second)
	p := newPending(t, s, in)
	if !strings.HasPrefix(p.ID, "apv_") || len(p.ID) != 20 || strings.Trim(p.ID[4:], "abcdefghijklmnopqrstuvwxyz234567") != "" {
		t.Errorf("assigned ID %q, want apv_ and 16 base32 characters", p.ID)
	}
	if p.Created.Before(before) || p.State != store.StatePending || p.Scope != store.ScopeOnce {
		t.Errorf("created %+v, want Created now, State pending, Scope once", p)
	}
	want := in
	want.ID, want.Created, want.State, want.Scope = p.ID, p.Created, store.StatePending, store.ScopeOnce
	want.Expires = in.Expires.UTC().Truncate(time.Microsecond)
	got, err := s.GetPending(ctx, p.ID)
	check(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetPending (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("CreatePending result (-want +got):\n%s", diff)
	}
	_, err = s.GetPending(ctx, "apv_doesnotexist0000")
	wantErr(t, "GetPending of an unknown ID", err, store.ErrNotFound)

	explicit := samplePending()
	explicit.ID = "my-id"
	explicit.Created = time.Date(2025, 5, 5, 5, 5, 5, 5000, time.UTC)
	got = newPending(t, s, explicit)
	if got.ID != "my-id" || !got.Created.Equal(explicit.Created) {
		t.Errorf("explicit ID and Created not kept: %s %v", got.ID, got.Created)
	}
	if _, err := s.CreatePending(ctx, explicit); err == nil {
		t.Error("CreatePending with an existing ID succeeded")
	}
	other := newPending(t, s, samplePending())
	if other.ID == p.ID {
		t.Error("two decisions got the same ID")
	}
}

// A plain ask has no evidence, and a caller may store no args or resume state: such a
// decision must read back, list, and wait like any other.
func testPendingEmptyFields(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, store.Pending{Tool: "t", Digest: "sha256:empty"})
	got, err := s.GetPending(ctx, p.ID)
	check(t, err)
	if got.Args != nil || got.Evidence != nil || got.Decision != nil {
		t.Errorf("empty fields read back as %q %q %q", got.Args, got.Evidence, got.Decision)
	}
	list, err := s.ListPending(ctx, store.PendingFilter{})
	check(t, err)
	if len(list) != 1 || list[0].ID != p.ID {
		t.Errorf("ListPending = %s, want %s", ids(list), p.ID)
	}
	approve(t, s, p.ID, store.Verdict{Approve: true, By: "ann"})
	waited, err := s.WaitDecision(ctx, p.ID)
	check(t, err)
	if waited.State != "approved" {
		t.Errorf("WaitDecision state %q", waited.State)
	}
}

// Arguments may be left out of the log (redaction): the record still reads back.
func testRedactedArgs(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	check(t, s.RecordCall(ctx, store.CallRecord{CallID: "r1", Tool: "t", ArgsDigest: "sha256:x", Status: warden.StatusRefused}))
	ref, err := s.BeginCall(ctx, store.CallRecord{CallID: "r2", Tool: "t", ArgsDigest: "sha256:y", Executed: true})
	check(t, err)
	check(t, s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan}))
	recs := query(t, s, store.CallFilter{})
	if len(recs) != 2 || recs[0].Args != nil || recs[1].Args != nil {
		t.Fatalf("records %+v", recs)
	}
	mustVerifyOK(t, s, 3)
}

func testPendingCreateRejects(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	bad := []store.Pending{
		{State: store.StateApproved, Question: "decided already"},
		{DecidedBy: "mallory", Question: "carries a verdict"},
		{Scope: "forever", Question: "unknown scope"},
		{Consumed: true, Question: "consumed"},
	}
	for _, p := range bad {
		if _, err := s.CreatePending(ctx, p); err == nil {
			t.Errorf("CreatePending(%q) succeeded, want an error", p.Question)
		}
	}
	if l, err := s.ListPending(ctx, store.PendingFilter{All: true}); err != nil || len(l) != 0 {
		t.Errorf("rejected decisions were stored: %v %v", l, err)
	}
}

func ids(ps []store.Pending) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID+"="+p.State)
	}
	return strings.Join(out, ",")
}

func testPendingList(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	t0 := time.Now().Add(-time.Hour)
	mk := func(id, session string, created time.Time, expires time.Time) {
		p := samplePending()
		p.ID, p.Session, p.Created, p.Expires = id, session, created, expires
		newPending(t, s, p)
	}
	mk("p1", "s1", t0, time.Time{})
	mk("p2", "s2", t0.Add(time.Minute), time.Now().Add(time.Hour))
	mk("p3", "s1", t0.Add(2*time.Minute), time.Now().Add(-time.Second)) // expired
	mk("p4", "s1", t0.Add(3*time.Minute), time.Time{})
	approve(t, s, "p4", store.Verdict{By: "bob"})

	cases := []struct {
		f    store.PendingFilter
		want string
	}{
		{store.PendingFilter{}, "p1=pending,p2=pending"},
		{store.PendingFilter{All: true}, "p1=pending,p2=pending,p3=expired,p4=approved"},
		{store.PendingFilter{Session: "s1"}, "p1=pending"},
		{store.PendingFilter{All: true, Session: "s1"}, "p1=pending,p3=expired,p4=approved"},
		{store.PendingFilter{All: true, Limit: 2}, "p1=pending,p2=pending"},
	}
	for _, c := range cases {
		l, err := s.ListPending(ctx, c.f)
		check(t, err)
		if got := ids(l); got != c.want {
			t.Errorf("ListPending(%+v) = %s, want %s", c.f, got, c.want)
		}
	}
	p3, err := s.GetPending(ctx, "p3")
	check(t, err)
	if p3.State != store.StateExpired {
		t.Errorf("GetPending of an expired decision: state %q, want expired", p3.State)
	}
}

func testDecideOnce(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	before := time.Now().Add(-time.Second)
	d, err := s.Decide(ctx, p.ID, store.Verdict{Approve: true, By: "bob", Note: "fine"})
	check(t, err)
	if d.State != store.StateApproved || d.DecidedBy != "bob" || d.Note != "fine" || d.DecidedAt.Before(before) || d.Scope != store.ScopeOnce || d.Consumed {
		t.Errorf("Decide returned %+v", d)
	}
	got, err := s.GetPending(ctx, p.ID)
	check(t, err)
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("GetPending after Decide (-decide +get):\n%s", diff)
	}
	_, err = s.Decide(ctx, p.ID, store.Verdict{Approve: false, By: "mallory"})
	wantErr(t, "second decision", err, store.ErrAlreadyDecided)
	_, err = s.Decide(ctx, p.ID, store.Verdict{Approve: true, By: "bob", Note: "fine"})
	wantErr(t, "identical second decision", err, store.ErrAlreadyDecided)
	got, _ = s.GetPending(ctx, p.ID)
	if got.DecidedBy != "bob" || got.State != store.StateApproved {
		t.Errorf("a refused second decision changed the first: %+v", got)
	}
	_, err = s.Decide(ctx, "apv_unknown", store.Verdict{Approve: true})
	wantErr(t, "Decide of an unknown ID", err, store.ErrNotFound)

	q := newPending(t, s, samplePending())
	d, err = s.Decide(ctx, q.ID, store.Verdict{Approve: false, By: "bob", Note: "no"})
	check(t, err)
	if d.State != store.StateDeclined {
		t.Errorf("declined decision has state %q", d.State)
	}
	_, err = s.Decide(ctx, q.ID, store.Verdict{Approve: true, By: "bob"})
	wantErr(t, "approving a declined decision", err, store.ErrAlreadyDecided)
}

func testDecideConcurrent(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	wins := race(8, func(i int) bool {
		_, err := s.Decide(ctx, p.ID, store.Verdict{Approve: i%2 == 0, By: fmt.Sprint("p", i)})
		if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
			t.Errorf("Decide: %v", err)
		}
		return err == nil
	})
	if wins != 1 {
		t.Errorf("%d concurrent decisions succeeded, want exactly 1", wins)
	}
}

func testDecideExpired(t *testing.T, s *subject) {
	p := samplePending()
	p.Expires = s.clock.Now().Add(time.Hour)
	p = newPending(t, s, p)
	s.clock.Advance(time.Hour + time.Millisecond)
	_, err := s.Decide(ctxFor(t), p.ID, store.Verdict{Approve: true, By: "bob"})
	wantErr(t, "Decide after expiry", err, store.ErrExpired)
}

func testDecideInvalid(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	_, err := s.Decide(ctx, p.ID, store.Verdict{Approve: true, Scope: "forever"})
	wantErr(t, "unknown scope", err, store.ErrInvalidVerdict)
	noSession := samplePending()
	noSession.Session = ""
	q := newPending(t, s, noSession)
	_, err = s.Decide(ctx, q.ID, store.Verdict{Approve: true, Scope: store.ScopeSession})
	wantErr(t, "session scope without a session", err, store.ErrInvalidVerdict)
	for _, id := range []string{p.ID, q.ID} {
		got, err := s.GetPending(ctx, id)
		check(t, err)
		if got.State != store.StatePending {
			t.Errorf("an invalid verdict changed %s to %q", id, got.State)
		}
	}
}

func testWaitWakes(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	type result struct {
		p   store.Pending
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	read := s.clock.nextRead()
	go func() {
		got, err := s.WaitDecision(ctx, p.ID)
		done <- result{got, err, time.Now()}
	}()
	// The waiter has read the decision (and registered for its wake-up) once it read the
	// clock: the decision below is made while it waits.
	awaitRead(t, read, "WaitDecision")
	select {
	case r := <-done:
		t.Fatalf("WaitDecision returned before the decision: %+v", r)
	default:
	}
	decided := time.Now()
	approve(t, s, p.ID, store.Verdict{By: "bob"})
	select {
	case r := <-done:
		check(t, r.err)
		if r.p.State != store.StateApproved || r.p.DecidedBy != "bob" {
			t.Errorf("WaitDecision returned %+v", r.p)
		}
		if lag := r.at.Sub(decided); lag > time.Second {
			t.Errorf("WaitDecision woke %v after the decision, want well within a second", lag)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitDecision did not return after the decision")
	}
}

func testWaitDecided(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	if _, err := s.Decide(ctx, p.ID, store.Verdict{By: "bob"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.WaitDecision(ctx, p.ID)
	check(t, err)
	if got.State != store.StateDeclined {
		t.Errorf("WaitDecision of a declined decision: state %q", got.State)
	}
	_, err = s.WaitDecision(ctx, "apv_unknown")
	wantErr(t, "WaitDecision of an unknown ID", err, store.ErrNotFound)
}

func testWaitExpires(t *testing.T, s *subject) {
	// Expired before the wait: WaitDecision says so at once.
	p := samplePending()
	p.Expires = s.clock.Now().Add(time.Hour)
	p = newPending(t, s, p)
	s.clock.Advance(time.Hour + time.Second)
	_, err := s.WaitDecision(ctxFor(t), p.ID)
	wantErr(t, "WaitDecision past expiry", err, store.ErrExpired)

	// Expiring during the wait: the waiter notices on its own.
	q := samplePending()
	q.Expires = s.clock.Now().Add(time.Hour)
	q = newPending(t, s, q)
	done := make(chan error, 1)
	read := s.clock.nextRead()
	ctx := ctxFor(t)
	go func() {
		_, err := s.WaitDecision(ctx, q.ID)
		done <- err
	}()
	awaitRead(t, read, "WaitDecision")
	s.clock.Advance(time.Hour + time.Second)
	start := time.Now()
	select {
	case err := <-done:
		wantErr(t, "WaitDecision across expiry", err, store.ErrExpired)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitDecision did not notice that the decision expired while it waited")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("WaitDecision took %v to notice expiry", took)
	}
}

func testWaitContext(t *testing.T, s *subject) {
	p := newPending(t, s, samplePending())
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := s.WaitDecision(ctx, p.ID)
	wantErr(t, "WaitDecision with a deadline", err, context.DeadlineExceeded)
}

// ---- approvals ----

func consume(t *testing.T, s store.Store, digest, session string) (store.Pending, bool) {
	t.Helper()
	p, ok, err := s.ConsumeApproval(ctxFor(t), digest, session)
	check(t, err)
	return p, ok
}

func testConsumeOnce(t *testing.T, s *subject) {
	p := newPending(t, s, samplePending())
	if _, ok := consume(t, s, p.Digest, p.Session); ok {
		t.Fatal("an undecided decision authorized a call")
	}
	approve(t, s, p.ID, store.Verdict{By: "bob"})
	got, ok := consume(t, s, p.Digest, "another-session")
	if !ok || got.ID != p.ID || !got.Consumed || got.State != store.StateApproved {
		t.Fatalf("ConsumeApproval = %+v, %v; want the approval, consumed", got, ok)
	}
	if _, ok := consume(t, s, p.Digest, p.Session); ok {
		t.Error("a once approval authorized a second call")
	}
	stored, err := s.GetPending(ctxFor(t), p.ID)
	check(t, err)
	if !stored.Consumed {
		t.Error("GetPending does not show the approval consumed")
	}
}

func testConsumeConcurrent(t *testing.T, s *subject) {
	p := newPending(t, s, samplePending())
	approve(t, s, p.ID, store.Verdict{By: "bob"})
	ctx := ctxFor(t)
	wins := race(8, func(int) bool {
		_, ok, err := s.ConsumeApproval(ctx, p.Digest, "")
		if err != nil {
			t.Error(err)
		}
		return ok
	})
	if wins != 1 {
		t.Errorf("%d concurrent consumers got the once approval, want exactly 1", wins)
	}
}

// testZeroClockExpiresAll: a clock that returns the zero time does not know what time
// it is. Judged at the zero time nothing would ever expire, so an approval whose
// Expires passed, or a session approval past its TTL, would still be usable; a store
// that cannot tell the time fails closed and judges every decision that can expire
// expired. Once the clock works again, both are expired for real.
func testZeroClockExpiresAll(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	mk := func(id, digest, scope string) {
		t.Helper()
		p := store.Pending{ID: id, Tool: "deploy", Digest: digest, Session: "s1", Kind: "escalate",
			Expires: s.clock.Now().Add(time.Minute), Scope: scope, SessionTTL: time.Minute}
		_, err := s.CreatePending(ctx, p)
		check(t, err)
		_, err = s.Decide(ctx, id, store.Verdict{Approve: true, By: "alice"})
		check(t, err)
	}
	mk("apv_once", "sha256:once", store.ScopeOnce)
	mk("apv_session", "sha256:session", store.ScopeSession)

	s.clock.Break()
	if p, ok, err := s.ConsumeApproval(ctx, "sha256:once", ""); err != nil || ok {
		t.Errorf("zero clock: once approval consumed: %+v %v %v", p, ok, err)
	}
	if p, ok, err := s.ConsumeApproval(ctx, "sha256:session", "s1"); err != nil || ok {
		t.Errorf("zero clock: session approval used: %+v %v %v", p, ok, err)
	}

	// Nor is anything written to the audit log undated: it would hide from every
	// time filter. The call is refused as unrecorded instead.
	if _, err := s.BeginCall(ctx, store.CallRecord{CallID: "c-undated", Tool: "deploy"}); !errors.Is(err, store.ErrUndated) {
		t.Errorf("BeginCall with a zero clock: %v, want store.ErrUndated", err)
	}
	if err := s.RecordCall(ctx, store.CallRecord{CallID: "c-undated-2", Tool: "deploy"}); !errors.Is(err, store.ErrUndated) {
		t.Errorf("RecordCall with a zero clock: %v, want store.ErrUndated", err)
	}

	s.clock.Repair()
	ref, err := s.BeginCall(ctx, store.CallRecord{CallID: "c-dated", Tool: "deploy"})
	check(t, err)
	s.clock.Break()
	if err := s.EndCall(ctx, ref, store.Completion{Status: "ran"}); !errors.Is(err, store.ErrUndated) {
		t.Errorf("EndCall with a zero clock: %v, want store.ErrUndated", err)
	}
	// A deferred write is refused at once, and not queued (its done is never called).
	undone := func(error) { t.Error("done called for a deferred write that was refused") }
	if err := s.EndCallLater(ctx, ref, store.Completion{Status: "ran"}, undone); !errors.Is(err, store.ErrUndated) {
		t.Errorf("EndCallLater with a zero clock: %v, want store.ErrUndated", err)
	}
	if err := s.RecordCallLater(ctx, store.CallRecord{CallID: "c-undated-3", Tool: "deploy"}, undone); !errors.Is(err, store.ErrUndated) {
		t.Errorf("RecordCallLater with a zero clock: %v, want store.ErrUndated", err)
	}
	check(t, s.Flush(ctx))
	s.clock.Repair()
	s.clock.Advance(time.Hour) // long after both expired
	if _, ok, err := s.ConsumeApproval(ctx, "sha256:once", ""); err != nil || ok {
		t.Errorf("an expired once approval was consumed (%v)", err)
	}
	if _, ok, err := s.ConsumeApproval(ctx, "sha256:session", "s1"); err != nil || ok {
		t.Errorf("a session approval past its TTL was used (%v)", err)
	}
}

func testOnceExpires(t *testing.T, s *subject) {
	p := samplePending()
	p.Expires = s.clock.Now().Add(time.Hour)
	p = newPending(t, s, p)
	approve(t, s, p.ID, store.Verdict{By: "bob"})
	s.clock.Advance(time.Hour + time.Millisecond)
	if _, ok := consume(t, s, p.Digest, p.Session); ok {
		t.Error("an expired once approval authorized a call")
	}
}

func testNeverAuthorizes(t *testing.T, s *subject) {
	approved := newPending(t, s, samplePending())
	approve(t, s, approved.ID, store.Verdict{By: "bob", Scope: store.ScopeSession})
	otherDigest := warden.MustParseArgs(`{"to":"ops@example.com","body":"hi!"}`).Digest()
	if _, ok := consume(t, s, otherDigest, approved.Session); ok {
		t.Error("an approval authorized a call with different arguments")
	}
	if _, ok := consume(t, s, "", approved.Session); ok {
		t.Error("an empty digest was authorized")
	}

	declinedP := samplePending()
	declinedP.Digest = "sha256:declined"
	declined := newPending(t, s, declinedP)
	if _, err := s.Decide(ctxFor(t), declined.ID, store.Verdict{By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := consume(t, s, declined.Digest, declined.Session); ok {
		t.Error("a declined decision authorized a call")
	}

	emptyP := samplePending()
	emptyP.Digest = ""
	empty := newPending(t, s, emptyP)
	approve(t, s, empty.ID, store.Verdict{By: "bob"})
	if _, ok := consume(t, s, "", empty.Session); ok {
		t.Error("an approval without a digest authorized a call")
	}
}

func testSessionScope(t *testing.T, s *subject) {
	p := newPending(t, s, samplePending())
	const ttl = time.Hour
	d := approve(t, s, p.ID, store.Verdict{By: "bob", Scope: store.ScopeSession, SessionTTL: ttl})
	if d.Scope != store.ScopeSession || d.SessionTTL != ttl {
		t.Fatalf("decided %+v, want scope session with TTL %v", d, ttl)
	}
	for i := range 3 {
		got, ok := consume(t, s, p.Digest, p.Session)
		if !ok || got.ID != p.ID || got.Consumed {
			t.Fatalf("use %d in the session: %+v, %v; want authorized, not consumed", i, got, ok)
		}
	}
	if _, ok := consume(t, s, p.Digest, "another-session"); ok {
		t.Error("a session approval authorized a call in another session")
	}
	if _, ok := consume(t, s, p.Digest, ""); ok {
		t.Error("a session approval authorized a call without a session")
	}
	s.clock.Advance(d.DecidedAt.Add(ttl).Sub(s.clock.Now()) + time.Millisecond)
	if _, ok := consume(t, s, p.Digest, p.Session); ok {
		t.Error("a session approval authorized a call after its TTL")
	}

	qp := samplePending()
	qp.Expires = s.clock.Now().Add(time.Hour) // the clock moved past samplePending's
	q := newPending(t, s, qp)
	d = approve(t, s, q.ID, store.Verdict{By: "bob", Scope: store.ScopeSession})
	if d.SessionTTL != store.DefaultSessionTTL {
		t.Errorf("session approval without a TTL got %v, want the default %v", d.SessionTTL, store.DefaultSessionTTL)
	}
}
