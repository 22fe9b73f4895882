// The HTTP client of a url upstream: the configured headers on every request, the
// pool's connection bound, and the headers the SDK manages left to the SDK.

package upstream

import (
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"time"
)

// managedHeaders are set by the MCP transport itself; a configured value could break
// or hijack the session.
var managedHeaders = []string{"Accept", "Content-Type", "Content-Length", "Host", "Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Connection", "Transfer-Encoding"}

func upstreamHeaders(cfg ServerConfig) (http.Header, error) {
	if len(cfg.Headers) == 0 {
		return nil, nil
	}
	h := make(http.Header, len(cfg.Headers))
	for k, v := range cfg.Headers {
		if k == "" || strings.IndexFunc(k, func(r rune) bool {
			return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r)
		}) >= 0 {
			return nil, fmt.Errorf("server %q: header name %q is not a valid HTTP header name", cfg.Name, k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("server %q: the value of header %q holds a line break or NUL", cfg.Name, k)
		}
		ck := textproto.CanonicalMIMEHeaderKey(k)
		if slices.Contains(managedHeaders, ck) {
			return nil, fmt.Errorf("server %q: header %q is managed by the MCP transport and cannot be configured", cfg.Name, k)
		}
		h.Set(ck, v)
	}
	return h, nil
}

// upstreamHTTPClient returns a copy of base (or a default client) that refuses
// redirects and adds headers to every request.
func upstreamHTTPClient(base *http.Client, headers http.Header, conns int) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	} else {
		c.Transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   conns + 1,
			ForceAttemptHTTP2:     true,
		}
	}
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("redirect to %s refused: an upstream MCP server is reached only at its configured URL", req.URL.Redacted())
	}
	if len(headers) > 0 {
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = &headerRoundTripper{next: next, headers: headers}
	}
	return &c
}

// headerRoundTripper adds the server's configured headers to every request.
type headerRoundTripper struct {
	next    http.RoundTripper
	headers http.Header
}

func (t *headerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		r.Header[k] = slices.Clone(v)
	}
	return t.next.RoundTrip(r)
}

// CloseIdleConnections passes the request on, so http.Client.CloseIdleConnections
// reaches the transport.
func (t *headerRoundTripper) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
