package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/mcptest"
)

// operatorsYAML is an operators: block for the gateway config.
func operatorsYAML(ops map[string]string) string {
	var b strings.Builder
	b.WriteString("operators:\n")
	for name, token := range ops {
		fmt.Fprintf(&b, "  - name: %s\n    token_sha256: %s\n", name, inbox.HashToken(token))
	}
	return b.String()
}

// inboxClient is a browser stand-in for the inbox of g: cookies kept, redirects not
// followed.
type inboxClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newInboxClient(t *testing.T, g *gatewayProc) *inboxClient {
	jar, _ := cookiejar.New(nil)
	return &inboxClient{t: t, base: g.base + "/ui/", c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (ic *inboxClient) login(token string) int {
	ic.t.Helper()
	resp, err := ic.c.PostForm(ic.base+"login", url.Values{"token": {token}, "next": {"/ui/pending"}})
	if err != nil {
		ic.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (ic *inboxClient) pendingStatus() int {
	ic.t.Helper()
	resp, err := ic.c.Get(ic.base + "pending")
	if err != nil {
		ic.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeReloadOperators: an operator removed from the config, and an operator
// whose token changed, lose their inbox sessions at SIGHUP and their old tokens are
// refused; an unchanged operator stays signed in.
func TestServeReloadOperators(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	const aliceToken, bobToken, carolToken, carolNewToken = "alice-op-token-1111", "bob-op-token-2222", "carol-op-token-3333", "carol-op-token-4444"
	f := newNotesFixture(t, "", "1s")
	base := f.cfg.yaml()
	// Room for the smaller config below, so it can keep the file's size and stamp.
	writeFile(t, f.config, base+operatorsYAML(map[string]string{"alice": aliceToken, "bob": bobToken, "carol": carolToken})+
		"\n#"+strings.Repeat("-", 512)+"\n")
	g := f.start(t)

	alice, bob, carol := newInboxClient(t, g), newInboxClient(t, g), newInboxClient(t, g)
	for name, c := range map[string]*inboxClient{"alice": alice, "bob": bob, "carol": carol} {
		tok := map[string]string{"alice": aliceToken, "bob": bobToken, "carol": carolToken}[name]
		if code := c.login(tok); code != http.StatusSeeOther {
			t.Fatalf("%s signs in: status %d, want 303", name, code)
		}
		if code := c.pendingStatus(); code != http.StatusOK {
			t.Fatalf("%s's pending page: status %d", name, code)
		}
	}
	// Bob's live stream; bounded, so a stream that is never told it ended fails the
	// test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, bob.base+"events", nil)
	resp, err := bob.c.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("bob's event stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	stream := bufio.NewReader(resp.Body)
	if ev := nextSSE(t, stream); ev != "pending" {
		t.Fatalf("first event %q", ev)
	}

	// Bob removed, Carol's token replaced, Alice unchanged.
	replaceKeepingStamp(t, f.config, base+operatorsYAML(map[string]string{"alice": aliceToken, "carol": carolNewToken}))
	g.signal(t, syscall.SIGHUP)
	mcptest.WaitFor(t, callTimeout, "the gateway reloads on SIGHUP", func() bool {
		return g.log.Count("configuration reloaded", "trigger=SIGHUP") == 1
	})
	if g.log.Count("inbox: operators updated", "operators=2", "sessions_ended=2") != 1 {
		t.Errorf("the log does not report the operators update:\n%s", g.log.String())
	}
	if g.log.Count("apply after a restart") != 0 {
		t.Errorf("the log still says a change needs a restart:\n%s", g.log.String())
	}
	for name, c := range map[string]*inboxClient{"bob": bob, "carol": carol} {
		if code := c.pendingStatus(); code != http.StatusSeeOther {
			t.Errorf("%s's old session after the reload: status %d, want 303 to the login page", name, code)
		}
	}
	for _, tok := range []string{bobToken, carolToken} {
		if code := newInboxClient(t, g).login(tok); code != http.StatusUnauthorized {
			t.Errorf("token %s signs in after the reload: status %d, want 401", tok, code)
		}
	}
	if code := alice.pendingStatus(); code != http.StatusOK {
		t.Errorf("alice, unchanged, was signed out: status %d", code)
	}
	if code := newInboxClient(t, g).login(carolNewToken); code != http.StatusSeeOther {
		t.Errorf("carol's new token: status %d, want 303", code)
	}
	if ev := nextSSE(t, stream); ev != "signedout" {
		t.Errorf("bob's stream got %q after his removal, want signedout", ev)
	}
}

// nextSSE returns the name of the next event on an inbox event stream.
func nextSSE(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	name := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && name != "":
			return name
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		}
	}
}
