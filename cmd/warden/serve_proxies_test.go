package main

import (
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/wardenhq/warden/internal/mcptest"
)

// proxiedLogin posts a sign-in to g's inbox as a reverse proxy would forward it and
// returns the status and the session cookie (nil when none was set).
func proxiedLogin(t *testing.T, g *gatewayProc, token, xff, proto string) (int, *http.Cookie) {
	t.Helper()
	form := url.Values{"token": {token}, "next": {"/ui/pending"}}
	req, err := http.NewRequest(http.MethodPost, g.base+"/ui/login", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	if proto != "" {
		req.Header.Set("X-Forwarded-Proto", proto)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "warden_inbox" {
			return resp.StatusCode, ck
		}
	}
	return resp.StatusCode, nil
}

// TestServeTrustedProxies: warden serve hands trusted_proxies to the inbox (the test
// client on loopback plays the proxy), and a reload that changes them says they apply
// after a restart and keeps the running ones.
func TestServeTrustedProxies(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	const aliceToken = "alice-op-token-1111"
	f := newNotesFixture(t, "", "1s")
	base := f.cfg.yaml() + operatorsYAML(map[string]string{"alice": aliceToken})
	writeFile(t, f.config, base+"trusted_proxies: [127.0.0.1]\n")
	g := f.start(t)

	if code, ck := proxiedLogin(t, g, aliceToken, "198.51.100.2", "https"); code != http.StatusSeeOther || ck == nil || !ck.Secure {
		t.Fatalf("sign-in through the proxy over HTTPS: status %d, cookie %+v; want 303 and a Secure cookie", code, ck)
	}
	if code, ck := proxiedLogin(t, g, aliceToken, "198.51.100.2", "http"); code != http.StatusSeeOther || ck == nil || ck.Secure {
		t.Fatalf("sign-in through the proxy over HTTP: status %d, cookie %+v; want 303 and a cookie that is not Secure", code, ck)
	}
	for range 10 {
		if code, _ := proxiedLogin(t, g, "not-a-token", "198.51.100.1", "https"); code != http.StatusUnauthorized {
			t.Fatalf("a wrong token: status %d, want 401", code)
		}
	}
	if code, ck := proxiedLogin(t, g, aliceToken, "198.51.100.1", "https"); code != http.StatusTooManyRequests || ck != nil {
		t.Errorf("the guessing client: status %d, cookie %+v; want 429 and none", code, ck)
	}
	if code, ck := proxiedLogin(t, g, aliceToken, "198.51.100.2", "https"); code != http.StatusSeeOther || ck == nil {
		t.Errorf("another client behind the proxy: status %d, cookie %+v; want 303 and a cookie", code, ck)
	}
	if n := g.log.Count(`msg="inbox: sign-in with an unknown token" remote=198.51.100.1 proxy=127.0.0.1`); n != 10 {
		t.Errorf("the log names the client and the proxy on %d lines, want 10", n)
	}

	writeFile(t, f.config, base+"trusted_proxies: [10.0.0.0/8]\n")
	g.signal(t, syscall.SIGHUP)
	mcptest.WaitFor(t, callTimeout, "the gateway reloads on SIGHUP", func() bool {
		return g.log.Count("configuration reloaded", "trigger=SIGHUP") == 1
	})
	if g.log.Count("listen, path, ui and trusted_proxies apply after a restart; the running values stay in force") != 1 {
		t.Error("the log does not say that trusted_proxies apply after a restart")
	}
	if code, ck := proxiedLogin(t, g, aliceToken, "198.51.100.3", "https"); code != http.StatusSeeOther || ck == nil || !ck.Secure {
		t.Errorf("after the reload the running list stays: status %d, cookie %+v; want 303 and a Secure cookie", code, ck)
	}
}

// Without trusted_proxies the headers change nothing: the client is the peer.
func TestServeWithoutTrustedProxiesIgnoresHeaders(t *testing.T) {
	t.Parallel()
	const aliceToken = "alice-op-token-1111"
	f := newNotesFixture(t, "", "1s")
	writeFile(t, f.config, f.cfg.yaml()+operatorsYAML(map[string]string{"alice": aliceToken}))
	g := f.start(t)
	if code, ck := proxiedLogin(t, g, aliceToken, "198.51.100.2", "https"); code != http.StatusSeeOther || ck == nil || ck.Secure {
		t.Fatalf("sign-in claiming HTTPS: status %d, cookie %+v; want 303 and a cookie that is not Secure", code, ck)
	}
	for i := range 10 {
		xff := "198.51.100." + string(rune('a'+i)) // not even addresses: they are never read
		if code, _ := proxiedLogin(t, g, "not-a-token", xff, ""); code != http.StatusUnauthorized {
			t.Fatalf("a wrong token: status %d, want 401", code)
		}
	}
	if code, _ := proxiedLogin(t, g, aliceToken, "198.51.100.99", ""); code != http.StatusTooManyRequests {
		t.Errorf("rotating X-Forwarded-For: status %d, want 429", code)
	}
	if n := g.log.Count(`msg="inbox: sign-in with an unknown token" remote=127.0.0.1`); n != 10 || g.log.Count("proxy=") != 0 {
		t.Errorf("the log: %d lines name the peer, %d name a proxy; want 10 and 0", n, g.log.Count("proxy="))
	}
}
