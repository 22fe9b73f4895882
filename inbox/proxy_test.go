package inbox_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden/inbox"
)

// Behind a reverse proxy: the test server's own address (loopback) plays the proxy,
// and the requests carry the headers a proxy would set.

// loopback trusts the test server's peer, whichever loopback it listens on.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// elsewhere trusts proxies that are not the test server's peer.
var elsewhere = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}

// logBuffer is a log destination safe for the server's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSuffix(l.b.String(), "\n"), "\n")
}

// proxyFixture is an inbox that trusts trusted, logging to the returned buffer
// without times.
func proxyFixture(t *testing.T, trusted []netip.Prefix, tls bool) (*fixture, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	h := slog.NewTextHandler(logs, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	f := newFixture(t, fixtureOptions{tls: tls, modify: func(o *inbox.Options) {
		o.TrustedProxies = trusted
		o.Logger = slog.New(h)
	}})
	return f, logs
}

// peer is the address the test server sees requests come from.
func (f *fixture) peer() string {
	return f.srv.Listener.Addr().(*net.TCPAddr).IP.String()
}

func proxied(xff, proto string) http.Header {
	h := http.Header{}
	if xff != "" {
		h.Set("X-Forwarded-For", xff)
	}
	if proto != "" {
		h.Set("X-Forwarded-Proto", proto)
	}
	return h
}

func TestProxyCookieSecure(t *testing.T) {
	cases := []struct {
		name    string
		trusted []netip.Prefix
		tls     bool
		proto   string
		secure  bool
	}{
		{"trusted peer, https", loopback, false, "https", true},
		{"trusted peer, HTTPS", loopback, false, "HTTPS", true},
		{"trusted peer, nearest proxy says http", loopback, false, "https, http", false},
		{"trusted peer, http", loopback, false, "http", false},
		{"trusted peer, no proto", loopback, false, "", false},
		{"untrusted peer claims https", elsewhere, false, "https", false},
		{"no proxies, client claims https", nil, false, "https", false},
		{"TLS, trusted peer says http", loopback, true, "http", true},
		{"TLS, untrusted peer", elsewhere, true, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := proxyFixture(t, c.trusted, c.tls)
			hdr := proxied("198.51.100.1", c.proto)
			c1 := f.client()
			resp, _ := f.do(c1, http.MethodPost, "/ui/login", url.Values{"token": {operatorToken}, "next": {"/ui/pending"}}, hdr)
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("login: status %d, want 303", resp.StatusCode)
			}
			ck := sessionCookie(t, resp)
			if ck.Secure != c.secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
				t.Errorf("sign-in cookie %+v: want Secure=%v, HttpOnly, SameSite=Strict", ck, c.secure)
			}

			// The session works (the cookie sent by hand: a jar keeps a Secure cookie
			// off plain HTTP), and signing out clears it with the same Secure flag.
			withCookie := proxied("198.51.100.1", c.proto)
			withCookie.Set("Cookie", ck.Name+"="+ck.Value)
			resp, body := f.do(f.client(), http.MethodGet, "/ui/pending", nil, withCookie)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("pending with the session cookie: status %d", resp.StatusCode)
			}
			resp, _ = f.do(f.client(), http.MethodPost, "/ui/logout", url.Values{"csrf": {csrfFrom(t, body)}}, withCookie)
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("logout: status %d, want 303", resp.StatusCode)
			}
			if out := sessionCookie(t, resp); out.Secure != c.secure || out.MaxAge >= 0 {
				t.Errorf("sign-out cookie %+v: want Secure=%v and cleared", out, c.secure)
			}
		})
	}
}

// failLogins makes n failed sign-ins, each with the headers hdr(i).
func (f *fixture) failLogins(n int, hdr func(i int) http.Header) {
	f.t.Helper()
	for i := range n {
		resp, _ := f.do(f.client(), http.MethodPost, "/ui/login", url.Values{"token": {fmt.Sprintf("guess-%d", i)}}, hdr(i))
		if resp.StatusCode != http.StatusUnauthorized {
			f.t.Fatalf("guess %d: status %d, want 401", i, resp.StatusCode)
		}
	}
}

// loginWith tries the operator's token with hdr and returns the status.
func (f *fixture) loginWith(hdr http.Header) (int, bool) {
	f.t.Helper()
	resp, body := f.do(f.client(), http.MethodPost, "/ui/login", url.Values{"token": {operatorToken}, "next": {"/ui/pending"}}, hdr)
	if resp.StatusCode == http.StatusTooManyRequests && !strings.Contains(body, "Too many failed sign-ins") {
		f.t.Errorf("429 without the explanation:\n%s", body)
	}
	got := false
	for _, c := range resp.Cookies() {
		got = got || c.Name == "warden_inbox"
	}
	return resp.StatusCode, got
}

// Behind a trusted proxy every client has its own limit: one guessing does not lock
// out another, and the guesser cannot leave its limit by adding entries of its own.
func TestProxyLoginLimitPerClient(t *testing.T) {
	f, logs := proxyFixture(t, loopback, false)
	f.failLogins(10, func(int) http.Header { return proxied("198.51.100.1", "") })

	for _, c := range []struct {
		name   string
		hdr    http.Header
		status int
	}{
		{"the guesser", proxied("198.51.100.1", ""), http.StatusTooManyRequests},
		{"the guesser, from another port", proxied("198.51.100.1:4711", ""), http.StatusTooManyRequests},
		{"the guesser, IPv4-mapped", proxied("::ffff:198.51.100.1", ""), http.StatusTooManyRequests},
		// The proxy appends the address it saw; what the client sent stays on the left.
		{"the guesser with its own XFF entries", proxied("203.0.113.7, 198.51.100.2, 198.51.100.1", ""), http.StatusTooManyRequests},
		{"another client behind the proxy", proxied("198.51.100.2", ""), http.StatusSeeOther},
		{"an IPv6 client behind the proxy", proxied("2001:db8::1", ""), http.StatusSeeOther},
		{"the proxy itself", proxied("", ""), http.StatusSeeOther},
	} {
		status, cookie := f.loginWith(c.hdr)
		if status != c.status || cookie != (c.status == http.StatusSeeOther) {
			t.Errorf("%s: status %d (session cookie %v), want %d", c.name, status, cookie, c.status)
		}
	}

	// The log names the client and the proxy it came through.
	want := fmt.Sprintf(`level=WARN msg="inbox: sign-in with an unknown token" remote=198.51.100.1 proxy=%s`, f.peer())
	blocked := fmt.Sprintf(`level=WARN msg="inbox: sign-in refused: too many failures" remote=198.51.100.1 proxy=%s`, f.peer())
	signedIn := fmt.Sprintf(`level=INFO msg="inbox: operator signed in" operator=alice remote=198.51.100.2 proxy=%s`, f.peer())
	lines := logs.lines()
	counts := map[string]int{}
	for _, l := range lines {
		counts[l]++
	}
	if counts[want] != 10 || counts[blocked] != 4 || counts[signedIn] != 1 {
		t.Errorf("log: %d failures, %d refusals, %d sign-ins of the second client; want 10, 4, 1. Log:\n%s",
			counts[want], counts[blocked], counts[signedIn], strings.Join(lines, "\n"))
	}
}

// A peer that is not a trusted proxy is counted as itself, whatever it says it
// forwards: rotating X-Forwarded-For does not escape the limit.
func TestUntrustedPeerCannotRotateXFF(t *testing.T) {
	for _, c := range []struct {
		name    string
		trusted []netip.Prefix
	}{
		{"no trusted proxies", nil},
		{"other proxies trusted", elsewhere},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, logs := proxyFixture(t, c.trusted, false)
			f.failLogins(10, func(i int) http.Header {
				return proxied(fmt.Sprintf("198.51.100.%d, 10.0.0.%d", i+1, i+1), "https")
			})
			for _, xff := range []string{"198.51.100.99", "10.0.0.1", "2001:db8::1", ""} {
				if status, cookie := f.loginWith(proxied(xff, "https")); status != http.StatusTooManyRequests || cookie {
					t.Errorf("XFF %q: status %d (session cookie %v), want 429", xff, status, cookie)
				}
			}
			want := fmt.Sprintf(`level=WARN msg="inbox: sign-in with an unknown token" remote=%s`, f.peer())
			n := 0
			for _, l := range logs.lines() {
				if l == want {
					n++
				}
			}
			if n != 10 {
				t.Errorf("log has %d lines %q, want 10:\n%s", n, want, strings.Join(logs.lines(), "\n"))
			}
		})
	}
}

func TestNewRefusesBadTrustedProxies(t *testing.T) {
	st := openStore(t)
	ops := []inbox.Operator{{Name: "alice", TokenHash: inbox.HashToken("t1")}}
	for _, c := range []struct {
		p    netip.Prefix
		want string
	}{
		{netip.MustParsePrefix("0.0.0.0/0"), "inbox: trusted proxy 1: 0.0.0.0/0 would trust every peer"},
		{netip.PrefixFrom(netip.MustParseAddr("10.1.2.3"), 8), "inbox: trusted proxy 1: 10.1.2.3/8 has address bits set past its length"},
		{netip.Prefix{}, "inbox: trusted proxy 1: not a valid prefix"},
	} {
		ib, err := inbox.New(st, ops, &inbox.Options{TrustedProxies: []netip.Prefix{loopback[0], c.p}})
		if err == nil || ib != nil || err.Error() != c.want {
			t.Errorf("New with %v: %v, %v; want error %q", c.p, ib, err, c.want)
		}
	}
}
