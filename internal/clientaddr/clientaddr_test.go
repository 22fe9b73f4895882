package clientaddr

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"testing"
)

func mustResolver(t testing.TB, entries ...string) *Resolver {
	t.Helper()
	var ps []netip.Prefix
	for _, e := range entries {
		p, err := ParsePrefix(e)
		if err != nil {
			t.Fatalf("ParsePrefix(%q): %v", e, err)
		}
		ps = append(ps, p)
	}
	r, err := New(ps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestParsePrefix(t *testing.T) {
	good := []struct{ in, want string }{
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"192.0.2.7", "192.0.2.7/32"},
		{"192.0.2.7/32", "192.0.2.7/32"},
		{"2001:db8::/32", "2001:db8::/32"},
		{"2001:db8::1", "2001:db8::1/128"},
		{"::1", "::1/128"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"::ffff:192.0.2.7/128", "192.0.2.7/32"},
		{"0.0.0.0/1", "0.0.0.0/1"},
	}
	for _, c := range good {
		p, err := ParsePrefix(c.in)
		if err != nil || p.String() != c.want {
			t.Errorf("ParsePrefix(%q) = %v, %v; want %s", c.in, p, err, c.want)
		}
	}
	bad := []struct{ in, msg, fix string }{
		{"10.0.0/8", `"10.0.0/8" is not an IP address or CIDR`, entryFix},
		{"", `"" is not an IP address or CIDR`, entryFix},
		{" 10.0.0.1", `" 10.0.0.1" is not an IP address or CIDR`, entryFix},
		{"10.0.0.1:8080", `"10.0.0.1:8080" is not an IP address or CIDR`, entryFix},
		{"proxy.internal", `"proxy.internal" is not an IP address or CIDR`, entryFix},
		{"010.0.0.1", `"010.0.0.1" is not an IP address or CIDR`, entryFix},
		{"10.0.0.0/33", `"10.0.0.0/33" is not an IP address or CIDR`, entryFix},
		{"10.0.0.0/", `"10.0.0.0/" is not an IP address or CIDR`, entryFix},
		{"[2001:db8::1]", `"[2001:db8::1]" is not an IP address or CIDR`, entryFix},
		{"10.1.2.3/8", `"10.1.2.3/8" has address bits set past its /8`, "write 10.0.0.0/8 for the network or 10.1.2.3/32 for the one address"},
		{"2001:db8::1/32", `"2001:db8::1/32" has address bits set past its /32`, "write 2001:db8::/32 for the network or 2001:db8::1/128 for the one address"},
		{"0.0.0.0/0", `"0.0.0.0/0" trusts every address, so any client could claim any address`, "list only the addresses or networks of your reverse proxies"},
		{"::/0", `"::/0" trusts every address, so any client could claim any address`, "list only the addresses or networks of your reverse proxies"},
		{"::ffff:0.0.0.0/96", `"::ffff:0.0.0.0/96" trusts every address, so any client could claim any address`, "list only the addresses or networks of your reverse proxies"},
		{"fe80::1%eth0", `"fe80::1%eth0" has a zone, which a proxy's address is never matched with`, "leave out the %zone"},
		{"fe80::/10%eth0", `"fe80::/10%eth0" is not an IP address or CIDR`, entryFix},
	}
	for _, c := range bad {
		p, err := ParsePrefix(c.in)
		e, ok := err.(*EntryError)
		if !ok {
			t.Errorf("ParsePrefix(%q) = %v, %v; want an *EntryError", c.in, p, err)
			continue
		}
		if e.Error() != c.msg || e.Fix != c.fix || e.Entry != c.in {
			t.Errorf("ParsePrefix(%q): error %q fix %q; want %q fix %q", c.in, e.Error(), e.Fix, c.msg, c.fix)
		}
	}
}

func TestNewRefusesBadPrefixes(t *testing.T) {
	for _, c := range []struct {
		p    netip.Prefix
		want string
	}{
		{netip.Prefix{}, "trusted proxy 0: not a valid prefix"},
		{netip.PrefixFrom(netip.MustParseAddr("10.1.2.3"), 8), "trusted proxy 0: 10.1.2.3/8 has address bits set past its length"},
		{netip.MustParsePrefix("0.0.0.0/0"), "trusted proxy 0: 0.0.0.0/0 would trust every peer"},
		{netip.MustParsePrefix("::ffff:0.0.0.0/96"), "trusted proxy 0: ::ffff:0.0.0.0/96 would trust every peer"},
	} {
		r, err := New([]netip.Prefix{c.p})
		if err == nil || err.Error() != c.want {
			t.Errorf("New(%v) = %v, %v; want error %q", c.p, r, err, c.want)
		}
	}
	// A mapped prefix given directly is matched as its IPv4 form.
	r, err := New([]netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Resolve(&http.Request{RemoteAddr: "10.9.9.9:1", Header: http.Header{"X-Forwarded-For": {"198.51.100.1"}}})
	if got.Host != "198.51.100.1" {
		t.Errorf("mapped prefix: client %q, want 198.51.100.1", got.Host)
	}
}

func TestResolve(t *testing.T) {
	// The proxies: one IPv4 network, one IPv4 host, one IPv6 network.
	trusted := []string{"10.0.0.0/8", "192.0.2.10", "2001:db8:1::/48"}
	type want struct {
		host   string
		secure bool
		proxy  string
	}
	cases := []struct {
		name    string
		trusted []string // nil: the proxies above
		remote  string
		tls     bool
		xff     []string
		proto   []string
		want    want
	}{
		// No proxy configured: today's behaviour, headers ignored.
		{name: "no proxies, plain", trusted: []string{}, remote: "10.1.1.1:5000", xff: []string{"203.0.113.9"}, proto: []string{"https"},
			want: want{host: "10.1.1.1"}},
		{name: "no proxies, TLS", trusted: []string{}, remote: "[2001:db8::7]:443", tls: true,
			want: want{host: "2001:db8::7", secure: true}},
		{name: "no proxies, RemoteAddr without port", trusted: []string{}, remote: "10.1.1.1",
			want: want{host: "10.1.1.1"}},
		{name: "no proxies, mapped peer kept as written", trusted: []string{}, remote: "[::ffff:10.1.1.1]:80",
			want: want{host: "::ffff:10.1.1.1"}},

		// Spoofing: the peer is not trusted, so its headers count for nothing.
		{name: "untrusted peer sends XFF and proto", remote: "203.0.113.5:4000", xff: []string{"10.0.0.1"}, proto: []string{"https"},
			want: want{host: "203.0.113.5"}},
		{name: "untrusted peer claims to be behind a trusted proxy", remote: "203.0.113.5:4000", xff: []string{"198.51.100.1, 10.0.0.1"},
			want: want{host: "203.0.113.5"}},
		{name: "untrusted IPv6 peer", remote: "[2001:db8:2::1]:4000", xff: []string{"198.51.100.1"},
			want: want{host: "2001:db8:2::1"}},
		{name: "peer in neither network", remote: "192.0.2.11:1", xff: []string{"198.51.100.1"},
			want: want{host: "192.0.2.11"}},
		{name: "unparsable RemoteAddr", remote: "pipe", xff: []string{"198.51.100.1"}, proto: []string{"https"},
			want: want{host: "pipe"}},
		{name: "peer with a zone is never trusted", trusted: []string{"fe80::/10"}, remote: "[fe80::1%eth0]:80", xff: []string{"198.51.100.1"},
			want: want{host: "fe80::1%eth0"}},

		// A trusted peer.
		{name: "trusted peer, no XFF: the peer is the client", remote: "10.0.0.2:5000",
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "one proxy", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "the client's own XFF entries left of the real one are not believed", remote: "10.0.0.2:5000", xff: []string{"1.1.1.1, 2.2.2.2, 198.51.100.1"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "client spoofs a trusted address on the left", remote: "10.0.0.2:5000", xff: []string{"10.0.0.3, 198.51.100.1"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "chain of trusted proxies skipped", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1, 192.0.2.10, 10.5.5.5"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "every entry trusted: left-most", remote: "10.0.0.2:5000", xff: []string{"10.0.0.7, 192.0.2.10, 10.5.5.5"},
			want: want{host: "10.0.0.7", proxy: "10.0.0.2"}},
		{name: "several headers concatenated in order", remote: "10.0.0.2:5000", xff: []string{"203.0.113.1", "198.51.100.1, 10.0.0.9", "192.0.2.10"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "several headers, the later one wins", remote: "10.0.0.2:5000", xff: []string{"10.0.0.9", "198.51.100.1"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "several headers all trusted: left-most of the first", remote: "10.0.0.2:5000", xff: []string{"10.0.0.9, 10.0.0.8", "10.0.0.7"},
			want: want{host: "10.0.0.9", proxy: "10.0.0.2"}},
		{name: "whitespace and tabs", remote: "10.0.0.2:5000", xff: []string{" \t198.51.100.1 ,\t10.0.0.9  "},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "IPv4 with port", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1:4711"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},

		// Garbage: the walk stops at the last trusted address, never at a value
		// nobody trusted vouched for.
		{name: "garbage right-most: the peer", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1, unknown"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "garbage after a trusted hop: that hop", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1, garbage, 10.0.0.9"},
			want: want{host: "10.0.0.9", proxy: "10.0.0.2"}},
		{name: "garbage left of the client is not reached", remote: "10.0.0.2:5000", xff: []string{"garbage, 198.51.100.1"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "empty header value", remote: "10.0.0.2:5000", xff: []string{""},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "empty entry between commas", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1,,10.0.0.9"},
			want: want{host: "10.0.0.9", proxy: "10.0.0.2"}},
		{name: "trailing comma", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1,"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "empty later header", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1", ""},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "leading zeros", remote: "10.0.0.2:5000", xff: []string{"198.051.100.1"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "host name", remote: "10.0.0.2:5000", xff: []string{"client.example"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "obfuscated RFC 7239 identifier", remote: "10.0.0.2:5000", xff: []string{"_hidden"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "zone in an entry", remote: "10.0.0.2:5000", xff: []string{"fe80::1%eth0"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "IPv4 in brackets", remote: "10.0.0.2:5000", xff: []string{"[198.51.100.1]"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "IPv4 in brackets with port", remote: "10.0.0.2:5000", xff: []string{"[198.51.100.1]:80"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "unbracketed IPv6 with port", remote: "10.0.0.2:5000", xff: []string{"2001:db8::1:80:"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "bad port", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1:99999"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "quoted", remote: "10.0.0.2:5000", xff: []string{`"198.51.100.1"`},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},

		// IPv6.
		{name: "IPv6 proxy and client", remote: "[2001:db8:1::5]:443", xff: []string{"2001:db8:99::1"},
			want: want{host: "2001:db8:99::1", proxy: "2001:db8:1::5"}},
		{name: "IPv6 bracketed", remote: "[2001:db8:1::5]:443", xff: []string{"[2001:db8:99::1]"},
			want: want{host: "2001:db8:99::1", proxy: "2001:db8:1::5"}},
		{name: "IPv6 bracketed with port", remote: "[2001:db8:1::5]:443", xff: []string{"[2001:db8:99::1]:4711"},
			want: want{host: "2001:db8:99::1", proxy: "2001:db8:1::5"}},
		{name: "IPv6 written long is canonicalised", remote: "[2001:db8:1::5]:443", xff: []string{"2001:0DB8:0099:0000:0000:0000:0000:0001"},
			want: want{host: "2001:db8:99::1", proxy: "2001:db8:1::5"}},
		{name: "IPv6 trusted hop skipped", remote: "10.0.0.2:5000", xff: []string{"2001:db8:99::1, [2001:db8:1::7]:80"},
			want: want{host: "2001:db8:99::1", proxy: "10.0.0.2"}},
		{name: "IPv4-mapped peer matches an IPv4 prefix", remote: "[::ffff:10.0.0.2]:5000", xff: []string{"198.51.100.1"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "IPv4-mapped entry is its IPv4 address", remote: "10.0.0.2:5000", xff: []string{"::ffff:198.51.100.1"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},
		{name: "IPv4-mapped trusted entry is skipped", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1, [::ffff:10.0.0.9]:1"},
			want: want{host: "198.51.100.1", proxy: "10.0.0.2"}},

		// X-Forwarded-Proto.
		{name: "https from a trusted peer", remote: "10.0.0.2:5000", xff: []string{"198.51.100.1"}, proto: []string{"https"},
			want: want{host: "198.51.100.1", secure: true, proxy: "10.0.0.2"}},
		{name: "HTTPS in upper case", remote: "10.0.0.2:5000", proto: []string{" HTTPS "},
			want: want{host: "10.0.0.2", secure: true, proxy: "10.0.0.2"}},
		{name: "http from a trusted peer", remote: "10.0.0.2:5000", proto: []string{"http"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "the nearest proxy's value wins: http", remote: "10.0.0.2:5000", proto: []string{"https, http"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "the nearest proxy's value wins: https", remote: "10.0.0.2:5000", proto: []string{"http,https"},
			want: want{host: "10.0.0.2", secure: true, proxy: "10.0.0.2"}},
		{name: "the last header wins", remote: "10.0.0.2:5000", proto: []string{"https", "http"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "empty last header", remote: "10.0.0.2:5000", proto: []string{"https", ""},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "not quite https", remote: "10.0.0.2:5000", proto: []string{"https2"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "no Unicode folding", remote: "10.0.0.2:5000", proto: []string{"httpſ"},
			want: want{host: "10.0.0.2", proxy: "10.0.0.2"}},
		{name: "tabs around", remote: "10.0.0.2:5000", proto: []string{"http,\tHttpS\t"},
			want: want{host: "10.0.0.2", secure: true, proxy: "10.0.0.2"}},
		{name: "TLS stays secure whatever the proxy says", remote: "10.0.0.2:5000", tls: true, proto: []string{"http"},
			want: want{host: "10.0.0.2", secure: true, proxy: "10.0.0.2"}},
		{name: "untrusted peer over TLS", remote: "203.0.113.5:4000", tls: true, proto: []string{"http"},
			want: want{host: "203.0.113.5", secure: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := c.trusted
			if tr == nil {
				tr = trusted
			}
			r := mustResolver(t, tr...)
			req := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
			if c.tls {
				req.TLS = &tls.ConnectionState{}
			}
			for _, v := range c.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			for _, v := range c.proto {
				req.Header.Add("X-Forwarded-Proto", v)
			}
			got := r.Resolve(req)
			if got != (Client{Host: c.want.host, Secure: c.want.secure, Proxy: c.want.proxy}) {
				t.Errorf("Resolve = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestNilResolverTrustsNobody(t *testing.T) {
	var r *Resolver
	req := &http.Request{RemoteAddr: "10.0.0.2:5000", Header: http.Header{
		"X-Forwarded-For": {"198.51.100.1"}, "X-Forwarded-Proto": {"https"}}}
	if got := r.Resolve(req); got != (Client{Host: "10.0.0.2"}) {
		t.Errorf("nil Resolver: %+v, want the peer, not secure", got)
	}
}

// The header names are matched as HTTP header names (any case), and the RFC 7239
// Forwarded header is not read.
func TestHeaderNames(t *testing.T) {
	r := mustResolver(t, "10.0.0.0/8")
	req := &http.Request{RemoteAddr: "10.0.0.2:5000", Header: http.Header{}}
	req.Header.Add("x-forwarded-for", "198.51.100.1")
	req.Header.Add("x-FORWARDED-proto", "https")
	if got := r.Resolve(req); got != (Client{Host: "198.51.100.1", Secure: true, Proxy: "10.0.0.2"}) {
		t.Errorf("lower-case names: %+v", got)
	}
	req = &http.Request{RemoteAddr: "10.0.0.2:5000", Header: http.Header{
		"Forwarded": {`for=198.51.100.1;proto=https`}}}
	if got := r.Resolve(req); got != (Client{Host: "10.0.0.2", Proxy: "10.0.0.2"}) {
		t.Errorf("Forwarded: %+v, want it ignored", got)
	}
}
