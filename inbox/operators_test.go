package inbox_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/inbox"
)

const bobToken = "op-token-bob-51e0aa"

func alice() inbox.Operator {
	return inbox.Operator{Name: operatorName, TokenHash: inbox.HashToken(operatorToken)}
}
func bob() inbox.Operator { return inbox.Operator{Name: "bob", TokenHash: inbox.HashToken(bobToken)} }

// signedInAs signs a new client in with token.
func (f *fixture) signedInAs(token string) *http.Client {
	f.t.Helper()
	c := f.client()
	if resp := f.login(c, token); resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("login: status %d, want 303", resp.StatusCode)
	}
	if resp, _ := f.get(c, "/ui/pending"); resp.StatusCode != http.StatusOK {
		f.t.Fatalf("pending after login: status %d", resp.StatusCode)
	}
	return c
}

// signedOut reports whether c's session has ended: the pending page sends it to the
// login form and a form post is refused.
func (f *fixture) signedOut(c *http.Client) bool {
	f.t.Helper()
	resp, _ := f.get(c, "/ui/pending")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "/ui/login") {
		return false
	}
	resp, _ = f.post(c, "/ui/logout", url.Values{})
	return resp.StatusCode == http.StatusForbidden
}

func TestSetOperatorsTakesEffectAtOnce(t *testing.T) {
	f := newFixture(t, fixtureOptions{operators: []inbox.Operator{alice(), bob()}})
	a := f.signedInAs(operatorToken)
	b := f.signedInAs(bobToken)

	// Bob's open event stream; bounded, so a stream that is never told it ended
	// fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/ui/events", nil)
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream := bufio.NewReader(resp.Body)
	if name, _ := sseEvent(t, stream); name != "pending" {
		t.Fatalf("first event %q, want pending", name)
	}

	// Bob is removed: his session, his stream and his token end at once; Alice's go on.
	if err := f.ib.SetOperators([]inbox.Operator{alice()}); err != nil {
		t.Fatal(err)
	}
	if !f.signedOut(b) {
		t.Error("the removed operator's session still works")
	}
	if name, _ := sseEvent(t, stream); name != "signedout" {
		t.Errorf("the removed operator's stream got %q, want signedout", name)
	}
	if resp := f.login(f.client(), bobToken); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the removed token signs in: status %d", resp.StatusCode)
	}
	if resp, _ := f.get(a, "/ui/pending"); resp.StatusCode != http.StatusOK {
		t.Errorf("the remaining operator was signed out: status %d", resp.StatusCode)
	}

	// Alice's token changes: her old session and old token end, the new token works.
	const newToken = "op-token-alice-rotated-22"
	if err := f.ib.SetOperators([]inbox.Operator{{Name: operatorName, TokenHash: inbox.HashToken(newToken)}}); err != nil {
		t.Fatal(err)
	}
	if !f.signedOut(a) {
		t.Error("a session signed in with a replaced token still works")
	}
	if resp := f.login(f.client(), operatorToken); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the replaced token signs in: status %d", resp.StatusCode)
	}
	a2 := f.signedInAs(newToken)

	// The same token under another name: the session, recorded under the old name, ends.
	if err := f.ib.SetOperators([]inbox.Operator{{Name: "alice-renamed", TokenHash: inbox.HashToken(newToken)}}); err != nil {
		t.Fatal(err)
	}
	if !f.signedOut(a2) {
		t.Error("a session survives its operator being renamed")
	}

	// An invalid list fails closed: nobody is signed in, nobody signs in.
	a3 := f.signedInAs(newToken)
	if err := f.ib.SetOperators([]inbox.Operator{alice(), {Name: "x", TokenHash: "sha256:nothex"}}); err == nil {
		t.Fatal("SetOperators accepted a bad hash")
	}
	if !f.signedOut(a3) {
		t.Error("an invalid operator list left a session alive")
	}
	for _, tok := range []string{operatorToken, newToken} {
		if resp := f.login(f.client(), tok); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("after an invalid operator list, %s signs in: status %d", tok, resp.StatusCode)
		}
	}
	if err := f.ib.SetOperators([]inbox.Operator{alice(), alice()}); err == nil {
		t.Error("SetOperators accepted the same hash twice")
	}

	// An empty list: nobody signs in. A valid list again: sign-in works.
	if err := f.ib.SetOperators(nil); err != nil {
		t.Fatal(err)
	}
	if resp := f.login(f.client(), operatorToken); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("with no operator, a token signs in: status %d", resp.StatusCode)
	}
	if err := f.ib.SetOperators([]inbox.Operator{alice()}); err != nil {
		t.Fatal(err)
	}
	f.signedInAs(operatorToken)
}

// A sign-in racing with the removal of its operator never leaves a working session.
func TestSetOperatorsRacingSignIn(t *testing.T) {
	f := newFixture(t, fixtureOptions{operators: []inbox.Operator{alice(), bob()}})
	var wg sync.WaitGroup
	clients := make([]*http.Client, 8)
	for i := range clients {
		clients[i] = f.client()
		wg.Add(1)
		go func(c *http.Client) {
			defer wg.Done()
			f.login(c, bobToken)
		}(clients[i])
	}
	if err := f.ib.SetOperators([]inbox.Operator{alice()}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, c := range clients {
		if resp, _ := f.get(c, "/ui/pending"); resp.StatusCode == http.StatusOK {
			t.Errorf("client %d: a session of the removed operator works", i)
		}
	}
}
