package clientaddr

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// referenceWalk is the X-Forwarded-For rule written plainly: every entry of every
// header in one list, read from the right.
func referenceWalk(r *Resolver, peer netip.Addr, values []string) netip.Addr {
	var entries []string
	for _, v := range values {
		entries = append(entries, strings.Split(v, ",")...)
	}
	last := peer
	for i := len(entries) - 1; i >= 0; i-- {
		a, ok := parseEntry(entries[i])
		if !ok {
			return last
		}
		if !r.trusts(a) {
			return a
		}
		last = a
	}
	return last
}

// Whatever the headers hold: an untrusted peer is the client and is secure only over
// TLS; from a trusted peer the client is what the plain rule says, and Secure follows
// the right-most X-Forwarded-Proto value.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"", "198.51.100.1", "198.51.100.1, 10.0.0.9", "garbage, 10.0.0.9", "[2001:db8::1]:80,::ffff:10.0.0.1",
		" , ,", "unknown", "10.0.0.1\n198.51.100.1", "[2001:db8:1::9], 2001:db8:2::1\n10.3.3.3:80"} {
		f.Add(s, "https", true)
		f.Add(s, "http, https\nHTTP", false)
	}
	r := mustResolver(f, "10.0.0.0/8", "2001:db8:1::/48")
	peer := netip.MustParseAddr("10.0.0.2")
	f.Fuzz(func(t *testing.T, xff, proto string, trustedPeer bool) {
		remote := "203.0.113.5:4000"
		if trustedPeer {
			remote = "10.0.0.2:5000"
		}
		req := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		values := strings.Split(xff, "\n")
		for _, v := range values {
			req.Header.Add("X-Forwarded-For", v)
		}
		protos := strings.Split(proto, "\n")
		for _, v := range protos {
			req.Header.Add("X-Forwarded-Proto", v)
		}
		got := r.Resolve(req)
		if !trustedPeer {
			if got != (Client{Host: "203.0.113.5"}) {
				t.Fatalf("untrusted peer: %+v", got)
			}
			return
		}
		want := referenceWalk(r, peer, values)
		nearest := protos[len(protos)-1]
		nearest = nearest[strings.LastIndexByte(nearest, ',')+1:]
		secure := strings.ToLower(strings.Trim(nearest, " \t")) == "https"
		if got != (Client{Host: want.String(), Secure: secure, Proxy: "10.0.0.2"}) {
			t.Fatalf("Resolve = %+v; want client %s, secure %v", got, want, secure)
		}
		if a := netip.MustParseAddr(got.Host); a.Zone() != "" || a.Is4In6() {
			t.Fatalf("client %s has a zone or is IPv4-mapped", a)
		}
	})
}
