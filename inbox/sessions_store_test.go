package inbox_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/postgres" // registers postgres://
)

// Operator sessions live in the store: a sign-in survives a restart of the process,
// holds on every replica sharing the store, and a sign-out on one replica ends it on
// all of them. A store that cannot be read or written signs nobody in.

// openDSN opens the store at dsn, closed when the test ends.
func openDSN(t *testing.T, dsn string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("store.Open(%s): %v", dsn, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// pendingStatus is the status of c's GET of the pending page on f: 200 signed in,
// 303 (to the login form) signed out.
func pendingStatus(f *fixture, c *http.Client) int {
	f.t.Helper()
	resp, _ := f.get(c, "/ui/pending")
	return resp.StatusCode
}

func TestSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "w.db")
	st1, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	first := newFixture(t, fixtureOptions{store: st1})
	c, csrf := first.signedIn()
	// The process ends: its inbox, its server and its store go away.
	first.ib.Close()
	first.srv.Close()
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}

	second := newFixture(t, fixtureOptions{store: openDSN(t, dsn)})
	// The cookie jar holds the cookie for 127.0.0.1, whatever the port.
	resp, body := second.get(c, "/ui/pending")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, operatorName) {
		t.Fatalf("after a restart the session cookie gets status %d (body %q); want the pending page of %s", resp.StatusCode, body, operatorName)
	}
	if got := csrfFrom(t, body); got != csrf {
		t.Errorf("after a restart the session's CSRF token is %q, want the one it signed in with %q", got, csrf)
	}
	if resp, _ := second.post(c, "/ui/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out after the restart: status %d, want 303", resp.StatusCode)
	}
	if got := pendingStatus(second, c); got != http.StatusSeeOther {
		t.Errorf("after sign-out the pending page answers %d, want 303 to the login form", got)
	}
}

func TestSessionExpiresInTheStore(t *testing.T) {
	t.Parallel()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "w.db")
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	a := newFixture(t, fixtureOptions{store: openDSN(t, dsn), modify: withClockAndTTL(clock, time.Hour)})
	b := newFixture(t, fixtureOptions{store: openDSN(t, dsn), modify: withClockAndTTL(clock, time.Hour)})
	c, _ := a.signedIn()
	clock.Advance(59 * time.Minute)
	if got := pendingStatus(b, c); got != http.StatusOK {
		t.Fatalf("59 minutes into a one-hour session the other replica answers %d, want 200", got)
	}
	clock.Advance(time.Minute)
	for name, f := range map[string]*fixture{"signing replica": a, "other replica": b} {
		if got := pendingStatus(f, c); got != http.StatusSeeOther {
			t.Errorf("%s: an expired session gets %d, want 303 to the login form", name, got)
		}
	}
}

func TestSessionsSharedByReplicasOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := postgresTestDSN(t)
	a := newFixture(t, fixtureOptions{store: openDSN(t, dsn)})
	b := newFixture(t, fixtureOptions{store: openDSN(t, dsn)})
	c, csrf := a.signedIn()
	resp, body := b.get(c, "/ui/pending")
	if resp.StatusCode != http.StatusOK || csrfFrom(t, body) != csrf {
		t.Fatalf("a session signed in on replica A gets %d on replica B (or another CSRF token); want the pending page", resp.StatusCode)
	}
	saved := c.Jar.Cookies(mustURL(t, a.base))
	if len(saved) != 1 {
		t.Fatalf("the jar holds cookies %v, want the one session cookie", saved)
	}
	if resp, _ := b.post(c, "/ui/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out on replica B: status %d, want 303", resp.StatusCode)
	}
	// The cookie, replayed after the sign-out (as a stolen copy would be), is refused
	// on both replicas.
	for name, f := range map[string]*fixture{"replica A": a, "replica B": b} {
		replay := f.client()
		replay.Jar.SetCookies(mustURL(t, f.base), saved)
		if got := pendingStatus(f, replay); got != http.StatusSeeOther {
			t.Errorf("after sign-out on replica B, the old cookie gets %d on %s, want 303 to the login form", got, name)
		}
	}
}

func TestSessionStoreUnavailableSignsNobodyIn(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	f := newFixture(t, fixtureOptions{store: st})
	c, _ := f.signedIn()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := pendingStatus(f, c); got != http.StatusSeeOther {
		t.Errorf("with the store closed a signed-in cookie gets %d, want 303 to the login form (fail closed)", got)
	}
	c2 := f.client()
	resp, body := f.post(c2, "/ui/login", url.Values{"token": {operatorToken}, "next": {"/ui/pending"}})
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "Nobody was signed in") {
		t.Errorf("sign-in with the store closed: status %d, body %q; want 500 saying nobody was signed in", resp.StatusCode, body)
	}
	if cookies := c2.Jar.Cookies(mustURL(t, f.base)); len(cookies) != 0 {
		t.Errorf("a failed sign-in set cookies %v", cookies)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// postgresTestDSN returns the DSN of a fresh schema in WARDEN_TEST_POSTGRES_DSN's
// database, dropped when the test ends, or skips the test when the variable is unset.
func postgresTestDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("WARDEN_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("WARDEN_TEST_POSTGRES_DSN is not set: skipping the PostgreSQL run (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "warden_inbox_" + hex.EncodeToString(b[:])
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	u := mustURL(t, base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// withClockAndTTL sets the inbox's clock and session lifetime.
func withClockAndTTL(clock *fakeClock, ttl time.Duration) func(*inbox.Options) {
	return func(o *inbox.Options) {
		o.Now = clock.Now
		o.SessionTTL = ttl
	}
}

// cookieOf returns the session cookie value c holds for f.
func cookieOf(t *testing.T, f *fixture, c *http.Client) string {
	t.Helper()
	for _, k := range c.Jar.Cookies(mustURL(t, f.base)) {
		if k.Name == "warden_inbox" {
			return k.Value
		}
	}
	t.Fatal("the client holds no session cookie")
	return ""
}

// The store's session records do not pile up: a sweep deletes those of sessions that
// ended or expired (written more than the lifetime plus an hour ago), and nothing of a
// live session; a request starts one in the background every ten minutes.
func TestSessionsSweptFromTheStore(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	f := newFixture(t, fixtureOptions{modify: withClockAndTTL(clock, time.Hour)})
	type sweep struct {
		n   int
		err error
	}
	swept := make(chan sweep, 1)
	inbox.OnSweep(f.ib, func(n int, err error) { swept <- sweep{n, err} })
	live, _ := f.signedIn()
	gone, csrf := f.signedIn()
	liveID, goneID := inbox.SessionCheckpoint(cookieOf(t, f, live)), inbox.SessionCheckpoint(cookieOf(t, f, gone))
	if resp, _ := f.post(gone, "/ui/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: status %d", resp.StatusCode)
	}
	ctx := context.Background()
	if n, err := inbox.SweepSessions(f.ib, time.Now()); err != nil || n != 0 {
		t.Fatalf("a sweep now deleted %d records (err %v), want 0", n, err)
	}
	for _, id := range []string{liveID, goneID} {
		if _, err := f.st.GetCheckpoint(ctx, id); err != nil {
			t.Fatalf("record %s after a sweep now: %v", id, err)
		}
	}
	if got := pendingStatus(f, live); got != http.StatusOK {
		t.Fatalf("the live session after a sweep now: %d, want 200", got)
	}

	// Two hours and a minute on (lifetime + margin): the next request sweeps.
	clock.Advance(2*time.Hour + time.Minute)
	if got := pendingStatus(f, live); got != http.StatusSeeOther {
		t.Fatalf("an expired session: %d, want 303", got)
	}
	select {
	case r := <-swept:
		if r.err != nil || r.n != 2 {
			t.Fatalf("the background sweep deleted %d records (err %v), want 2 (the live and the ended one)", r.n, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no background sweep ended within 30 s of the request past the sweep interval")
	}
	for _, id := range []string{liveID, goneID} {
		if _, err := f.st.GetCheckpoint(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("record %s after the background sweep: %v, want not found", id, err)
		}
	}
	// Signing in again works and is not swept. (The store stamps records with its own,
	// real clock: the sweep is given the time that matches it.)
	again, _ := f.signedIn()
	if n, err := inbox.SweepSessions(f.ib, time.Now()); err != nil || n != 0 {
		t.Errorf("a sweep after a new sign-in deleted %d records (err %v), want 0", n, err)
	}
	if got := pendingStatus(f, again); got != http.StatusOK {
		t.Errorf("a new sign-in after the sweep: %d, want 200", got)
	}
}
