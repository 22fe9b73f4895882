// Package clientaddr finds the client of an HTTP request that may have come through
// reverse proxies: its address, and whether the client's own connection was HTTPS.
//
// The forwarding headers are believed only from a trusted peer. When the immediate
// peer (Request.RemoteAddr) is not one of the trusted proxies, X-Forwarded-For and
// X-Forwarded-Proto are ignored entirely: the client is the peer, and the request is
// secure only when it came over TLS. A client that talks to the gateway directly
// cannot choose the address it is counted as.
//
// From a trusted peer, the X-Forwarded-For values (every such header, in order, each
// a comma-separated list) are walked from the right, the entry the nearest proxy
// added first. Entries that are trusted proxies are skipped; the first one that is
// not is the client. When every entry is trusted the left-most is the client, and
// with no entry at all the peer is. An entry that is not an address (empty, "unknown",
// an obfuscated name, a zone, anything else) ends the walk: the client is then taken
// to be the last trusted address met, which is the peer when the bad entry is the
// right-most one. Nothing to the left of a bad entry is read, since no trusted proxy
// vouched for it. Entries may be IPv4 or IPv6, with a port ("192.0.2.1:4711",
// "[2001:db8::1]:4711") or in brackets, with spaces around them; an IPv4-mapped IPv6
// address is taken as its IPv4 address.
//
// X-Forwarded-Proto from a trusted peer: the right-most value (the one the nearest
// proxy set) decides; "https", in any ASCII case, with spaces or tabs around it,
// makes the request secure. It can only add security: a request that came over TLS
// is secure whatever the header says.
//
// The RFC 7239 Forwarded header is not read.
package clientaddr

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// EntryError says why an entry of a trusted proxy list was refused and how to fix it.
type EntryError struct {
	Entry   string // the entry as written
	Problem string // what is wrong, to follow the quoted entry
	Fix     string // how to write it instead
}

func (e *EntryError) Error() string { return fmt.Sprintf("%q %s", e.Entry, e.Problem) }

const entryFix = "write an address such as 10.0.0.5 or 2001:db8::5, or a CIDR such as 10.0.0.0/8 or 2001:db8::/32"

// ParsePrefix reads one trusted proxy entry: an IP address (one host) or a CIDR. An
// IPv4-mapped IPv6 entry becomes its IPv4 form. It refuses, with an *EntryError, a
// value that is neither, a CIDR with bits set past its prefix length ("10.1.2.3/8":
// the network or the one address?), a /0 (that would trust every peer, so any
// client could claim any address), and an address with a zone.
func ParsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, &EntryError{s, "is not an IP address or CIDR", entryFix}
		}
		if a.Zone() != "" {
			return netip.Prefix{}, &EntryError{s, "has a zone, which a proxy's address is never matched with", "leave out the %zone"}
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, &EntryError{s, "is not an IP address or CIDR", entryFix}
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, &EntryError{s, fmt.Sprintf("has address bits set past its /%d", p.Bits()),
			fmt.Sprintf("write %s for the network or %s for the one address", m, netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))}
	}
	if p.Addr().Is4In6() {
		// Masked and mapped, so the prefix covers at least the 96 bits before the IPv4 part.
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, &EntryError{s, "trusts every address, so any client could claim any address",
			"list only the addresses or networks of your reverse proxies"}
	}
	return p, nil
}

// Resolver finds the client of a request. A nil *Resolver, or one with no trusted
// proxy, trusts no peer: the client is always the peer. It is safe for concurrent use.
type Resolver struct {
	trusted []netip.Prefix
}

// New returns a Resolver that trusts the forwarding headers of peers in trusted. It
// refuses an invalid prefix, one with bits set past its length, or a /0, as
// ParsePrefix does.
func New(trusted []netip.Prefix) (*Resolver, error) {
	out := make([]netip.Prefix, 0, len(trusted))
	for i, p := range trusted {
		switch {
		case !p.IsValid():
			return nil, fmt.Errorf("trusted proxy %d: not a valid prefix", i)
		case p.Masked() != p:
			return nil, fmt.Errorf("trusted proxy %d: %s has address bits set past its length", i, p)
		case p.Addr().Zone() != "":
			return nil, fmt.Errorf("trusted proxy %d: %s has a zone", i, p)
		}
		q := p
		if q.Addr().Is4In6() {
			q = netip.PrefixFrom(q.Addr().Unmap(), q.Bits()-96)
		}
		if q.Bits() == 0 {
			return nil, fmt.Errorf("trusted proxy %d: %s would trust every peer", i, p)
		}
		out = append(out, q)
	}
	return &Resolver{trusted: out}, nil
}

// Client is who sent a request, as far as the gateway can tell.
type Client struct {
	// Host is the client's address, for rate limits and logs. When the peer is not
	// a trusted proxy it is the host part of RemoteAddr (all of RemoteAddr when it
	// has no port), exactly as it was before proxies could be trusted.
	Host string
	// Secure is true when the request came over TLS, or the nearest trusted proxy
	// said the client's connection was HTTPS.
	Secure bool
	// Proxy is the trusted peer whose headers were read ("" when they were not).
	Proxy string
}

// trusts reports whether a is a trusted proxy.
func (r *Resolver) trusts(a netip.Addr) bool {
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolve returns the client of req, as the package comment describes.
func (r *Resolver) Resolve(req *http.Request) Client {
	c := Client{Host: peerHost(req.RemoteAddr), Secure: req.TLS != nil}
	if r == nil || len(r.trusted) == 0 {
		return c
	}
	peer, ok := peerAddr(req.RemoteAddr)
	if !ok || !r.trusts(peer) {
		return c
	}
	c.Proxy = peer.String()
	c.Host = r.walk(peer, req.Header.Values("X-Forwarded-For")).String()
	if protos := req.Header.Values("X-Forwarded-Proto"); len(protos) > 0 {
		last := protos[len(protos)-1]
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		c.Secure = c.Secure || isHTTPS(strings.Trim(last, " \t"))
	}
	return c
}

// isHTTPS reports whether v is "https" in any ASCII case (no Unicode folding: "httpſ"
// is not https).
func isHTTPS(v string) bool {
	const want = "https"
	if len(v) != len(want) {
		return false
	}
	for i := range len(want) {
		if v[i]|0x20 != want[i] {
			return false
		}
	}
	return true
}

// walk returns the client named by the X-Forwarded-For values xff of a request whose
// peer (trusted) is peer.
func (r *Resolver) walk(peer netip.Addr, xff []string) netip.Addr {
	last := peer
	for i := len(xff) - 1; i >= 0; i-- {
		v := xff[i]
		for {
			entry := v
			j := strings.LastIndexByte(v, ',')
			if j >= 0 {
				entry, v = v[j+1:], v[:j]
			}
			a, ok := parseEntry(entry)
			if !ok {
				return last
			}
			if !r.trusts(a) {
				return a
			}
			last = a
			if j < 0 {
				break
			}
		}
	}
	return last
}

// parseEntry reads one X-Forwarded-For entry: an address, optionally with a port,
// IPv6 optionally in brackets, with spaces or tabs around it. No zone.
func parseEntry(s string) (netip.Addr, bool) {
	s = strings.Trim(s, " \t")
	var a netip.Addr
	switch {
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		inner := s[1 : len(s)-1]
		if !strings.Contains(inner, ":") {
			return netip.Addr{}, false // "[192.0.2.1]" is no IPv6 literal
		}
		var err error
		if a, err = netip.ParseAddr(inner); err != nil {
			return netip.Addr{}, false
		}
	case strings.HasPrefix(s, "["):
		ap, err := netip.ParseAddrPort(s)
		if err != nil || !ap.Addr().Is6() {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	default:
		var err error
		if a, err = netip.ParseAddr(s); err != nil {
			// IPv4 with a port; an unbracketed IPv6 address with a port is refused.
			ap, err := netip.ParseAddrPort(s)
			if err != nil || !ap.Addr().Is4() {
				return netip.Addr{}, false
			}
			a = ap.Addr()
		}
	}
	if a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// peerAddr reads RemoteAddr ("host:port", or a bare address). An address with a zone
// is returned as it is and is then trusted by no prefix.
func peerAddr(remote string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap(), true
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// peerHost is the host part of RemoteAddr, or all of it when it has no port.
func peerHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}
