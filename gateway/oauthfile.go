package gateway

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden/gateway/oauth"
	"github.com/wardenhq/warden/internal/yamlstrict"
)

// OAuth is the gateway file's oauth section: the HTTP front accepts JWT access tokens
// of these issuers besides the clients' static tokens (see [Gateway.MCPHandler]).
type OAuth struct {
	// Resource is the MCP endpoint's canonical URL: the protected resource metadata
	// names it, and it is every issuer's default audience.
	Resource string
	// Scopes are advertised as scopes_supported (none: the key is left out).
	Scopes []string
	// ClockSkew is the tolerance on exp and nbf (0: oauth.DefaultClockSkew).
	ClockSkew time.Duration
	Issuers   []OAuthIssuer
}

// OAuthIssuer is one accepted authorization server and how its tokens map to clients.
type OAuthIssuer struct {
	Issuer     string
	Audience   string
	Algorithms []string
	// Clients are tried in order; the first whose claim has the value is the token's
	// client.
	Clients []ClaimClient
}

// ClaimClient maps the tokens whose claim Claim is (or, for a list claim such as
// groups, contains) Value to a client. An empty Client.Principal means the token's
// sub.
type ClaimClient struct {
	Claim, Value string
	Client       Client
}

var (
	oauthKeys       = []string{"resource", "scopes_supported", "clock_skew", "issuers"}
	oauthIssuerKeys = []string{"issuer", "audience", "algorithms", "clients"}
	oauthClientKeys = []string{"claim", "value", "principal", "tenant", "role", "self_approve"}
)

// oauthKeyPaths are the oauth section's keys as [KeyPaths] lists them.
func oauthKeyPaths() []string {
	var out []string
	for _, k := range oauthKeys {
		if k != "issuers" {
			out = append(out, "oauth."+k)
		}
	}
	for _, k := range oauthIssuerKeys {
		if k != "clients" {
			out = append(out, "oauth.issuers[]."+k)
		}
	}
	for _, k := range oauthClientKeys {
		out = append(out, "oauth.issuers[].clients[]."+k)
	}
	return out
}

func (d *configDecoder) oauth(n *yaml.Node) *OAuth {
	o := &OAuth{}
	var resNode, issNode *yaml.Node
	for _, kv := range d.Known(n, "oauth", oauthKeys) {
		w := "oauth." + kv.Key
		switch kv.Key {
		case "resource":
			resNode = kv.Value
			if s, ok := d.NonEmpty(kv.Value, w); ok {
				u, err := url.Parse(s)
				if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" || u.User != nil {
					d.Fail(kv.Value, "write the MCP endpoint's absolute URL as clients reach it, e.g. https://gateway.example.com/mcp", "%s %q is not an absolute http(s) URL without query or fragment", w, s)
				}
				o.Resource = s
			}
		case "scopes_supported":
			o.Scopes, _ = d.StrList(kv.Value, w)
		case "clock_skew":
			o.ClockSkew = d.duration(kv.Value, w)
			if o.ClockSkew > oauth.MaxClockSkew {
				d.Fail(kv.Value, fmt.Sprintf("use at most %v; synchronise the clocks instead", oauth.MaxClockSkew), "%s %v is too large", w, o.ClockSkew)
			}
		case "issuers":
			issNode = kv.Value
			if kv.Value.Kind != yaml.SequenceNode {
				d.Fail(kv.Value, "issuers is a list of {issuer, audience, algorithms, clients}", "oauth.issuers must be a list, not %s", yamlstrict.KindName(kv.Value))
				continue
			}
			for i, item := range kv.Value.Content {
				o.Issuers = append(o.Issuers, d.oauthIssuer(item, fmt.Sprintf("oauth.issuers[%d]", i)))
			}
		}
	}
	if resNode == nil {
		d.Fail(n, "add `resource: https://<host>/mcp`, the MCP endpoint's URL as clients reach it", "oauth.resource is required")
	}
	if len(o.Issuers) == 0 {
		at := n
		if issNode != nil {
			at = issNode
		}
		d.Fail(at, "add an issuer: `issuers: [{issuer: https://login.example.com, clients: [...]}]`", "oauth.issuers: at least one issuer is required")
	}
	seen := map[string]bool{}
	for i := range o.Issuers {
		is := &o.Issuers[i]
		if is.Audience == "" {
			is.Audience = o.Resource
		}
		if seen[is.Issuer] {
			d.Fail(issNode, "merge the two entries", "oauth.issuers: issuer %q is listed twice", is.Issuer)
		}
		seen[is.Issuer] = true
	}
	return o
}

func (d *configDecoder) oauthIssuer(n *yaml.Node, where string) OAuthIssuer {
	var is OAuthIssuer
	for _, kv := range d.Known(n, where, oauthIssuerKeys) {
		w := where + "." + kv.Key
		switch kv.Key {
		case "issuer":
			if s, ok := d.NonEmpty(kv.Value, w); ok {
				u, err := url.Parse(s)
				if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
					d.Fail(kv.Value, "write the issuer identifier exactly as its tokens' iss claim has it, e.g. https://login.example.com", "%s %q is not an absolute http(s) URL", w, s)
				}
				is.Issuer = s
			}
		case "audience":
			is.Audience, _ = d.NonEmpty(kv.Value, w)
		case "algorithms":
			algs, _ := d.StrList(kv.Value, w)
			for _, a := range algs {
				if !oauth.AlgorithmAllowed(a) {
					d.Fail(kv.Value, "allowed: "+strings.Join(oauth.DefaultAlgorithms, ", ")+", EdDSA (none and HMAC never are)", "%s: algorithm %q is not allowed", w, a)
				}
			}
			is.Algorithms = algs
		case "clients":
			if kv.Value.Kind != yaml.SequenceNode {
				d.Fail(kv.Value, "clients is a list of {claim, value, principal, role}", "%s must be a list, not %s", w, yamlstrict.KindName(kv.Value))
				continue
			}
			for i, item := range kv.Value.Content {
				is.Clients = append(is.Clients, d.claimClient(item, fmt.Sprintf("%s[%d]", w, i)))
			}
		}
	}
	if is.Issuer == "" {
		d.Fail(n, "add `issuer: https://login.example.com`", "%s.issuer is required", where)
	}
	if len(is.Clients) == 0 {
		d.Fail(n, "map the issuer's tokens to clients, e.g. `clients: [{claim: groups, value: devs, role: dev}]`", "%s.clients: at least one mapping is required (a token no mapping matches is refused)", where)
	}
	return is
}

func (d *configDecoder) claimClient(n *yaml.Node, where string) ClaimClient {
	cc := ClaimClient{Claim: "sub"}
	var valueNode *yaml.Node
	for _, kv := range d.Known(n, where, oauthClientKeys) {
		w := where + "." + kv.Key
		switch kv.Key {
		case "claim":
			cc.Claim, _ = d.NonEmpty(kv.Value, w)
		case "value":
			valueNode = kv.Value
			cc.Value, _ = d.NonEmpty(kv.Value, w)
		case "principal":
			cc.Client.Principal, _ = d.NonEmpty(kv.Value, w)
		case "tenant":
			cc.Client.Tenant = d.tenant(kv.Value, w)
		case "role":
			cc.Client.Role, _ = d.NonEmpty(kv.Value, w)
		case "self_approve":
			cc.Client.SelfApprove, _ = d.Bool(kv.Value, w)
		}
	}
	if valueNode == nil {
		d.Fail(n, "add `value: <the claim's value>`, e.g. a subject id or a group name", "%s.value is required", where)
	}
	return cc
}

// match returns the client of a verified token's claims: the first mapping whose
// claim has (or, for a list, contains) its value; the principal is the mapping's or
// the token's sub.
func (is *OAuthIssuer) match(claims map[string]any) (Client, bool) {
	for _, cc := range is.Clients {
		if !claimHas(claims[cc.Claim], cc.Value) {
			continue
		}
		cl := cc.Client
		if cl.Principal == "" {
			sub, _ := claims["sub"].(string)
			if sub == "" {
				continue
			}
			cl.Principal = sub
		}
		return cl, true
	}
	return Client{}, false
}

func claimHas(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}
