package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/wardenhq/warden/gateway/oauth"
	"github.com/wardenhq/warden/inbox"
)

// oauthState is the resource server of one oauth configuration. It is kept across
// revisions whose oauth section is unchanged, so a reload or a tool list change does
// not forget the issuers' fetched keys.
type oauthState struct {
	cfg      *OAuth
	verifier *oauth.Verifier
	resource *url.URL
	metaURL  string // the absolute URL of the protected resource metadata
	issuers  map[string]*OAuthIssuer
}

// oauthFor returns the resource server of cfg's oauth section (nil without one),
// the previous revision's when the section is unchanged. g.mu is held.
func (g *Gateway) oauthFor(cfg *File) (*oauthState, error) {
	if cfg.OAuth == nil {
		return nil, nil
	}
	if old := g.state.Load(); old != nil && old.oauth != nil && reflect.DeepEqual(old.oauth.cfg, cfg.OAuth) {
		return old.oauth, nil
	}
	res, err := url.Parse(cfg.OAuth.Resource)
	if err != nil {
		return nil, err
	}
	oc := oauth.Config{ClockSkew: cfg.OAuth.ClockSkew, Client: g.opts.OAuthClient, Now: g.opts.OAuthNow}
	s := &oauthState{cfg: cfg.OAuth, resource: res, metaURL: oauth.MetadataURL(res), issuers: map[string]*OAuthIssuer{}}
	for i := range cfg.OAuth.Issuers {
		is := &cfg.OAuth.Issuers[i]
		oc.Issuers = append(oc.Issuers, oauth.Issuer{URL: is.Issuer, Audience: is.Audience, Algorithms: is.Algorithms})
		s.issuers[is.Issuer] = is
	}
	if s.verifier, err = oauth.New(oc); err != nil {
		return nil, err
	}
	return s, nil
}

// identity is what the front's authentication hands the SDK's verifier in the
// request's context: a static token's hash, or the client a JWT maps to.
type identity struct {
	hash   string
	jwt    *Client
	userID string
	expiry time.Time
}

// oauthClientKey is the TokenInfo.Extra key of a JWT's client.
const oauthClientKey = "oauth_client"

// authenticate answers a request whose bearer token is missing, unknown or maps to no
// client (401, or 403 for a valid token of a configured issuer that no mapping of
// that issuer matches) and returns the identity of any other request.
//
// The challenges follow RFC 6750 and, with an oauth section, RFC 9728: they carry
// resource_metadata, the protected resource metadata's URL, so an MCP client can
// find the authorization servers.
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request) (identity, bool) {
	st := g.state.Load()
	o := st.oauth
	meta, scope := "", ""
	if o != nil {
		meta, scope = o.metaURL, strings.Join(o.cfg.Scopes, " ")
	}
	refuse := func(status int, code, desc, body string) (identity, bool) {
		w.Header().Set("WWW-Authenticate", oauth.Challenge("warden", meta, code, desc, scope))
		http.Error(w, body, status)
		return identity{}, false
	}
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		// RFC 6750 section 3.1: no error code when the request has no credentials.
		w.Header().Set("WWW-Authenticate", oauth.Challenge("warden", meta, "", "", scope))
		http.Error(w, "no bearer token: send the header Authorization: Bearer <token>, with a token of one of the gateway's clients", http.StatusUnauthorized)
		return identity{}, false
	}
	hash := inbox.HashToken(fields[1])
	if _, ok := st.clients[hash]; ok {
		return identity{hash: hash}, true
	}
	if o == nil {
		return refuse(http.StatusUnauthorized, "invalid_token", "the token is not one of the gateway's clients", "invalid token: it is not the token of any of the gateway's clients")
	}
	tok, err := o.verifier.Verify(r.Context(), fields[1])
	if err != nil {
		if errors.Is(err, oauth.ErrUnknownIssuer) {
			return refuse(http.StatusUnauthorized, "invalid_token", "the token is neither a client's token nor a JWT of a configured issuer", "invalid token: it is neither the token of one of the gateway's clients nor a JWT access token of a configured issuer")
		}
		g.log.Info("JWT access token refused", "error", err)
		return refuse(http.StatusUnauthorized, "invalid_token", "the access token is not valid: "+err.Error(), "invalid token: "+err.Error())
	}
	cl, ok := o.issuers[tok.Issuer].match(tok.Claims)
	if !ok {
		// Authenticated, but not authorized: 403 (RFC 6750 section 3.1's
		// insufficient_scope is the code for a token that does not grant access).
		return refuse(http.StatusForbidden, "insufficient_scope", "the token's claims map to none of the gateway's clients", "forbidden: the access token is valid, but no clients mapping of its issuer in oauth.issuers matches its claims (subject "+tok.Subject+")")
	}
	return identity{jwt: &cl, userID: tok.Issuer + "#" + tok.Subject, expiry: tok.Expiry.Add(o.verifier.ClockSkew())}, true
}

// ProtectedResourceHandler serves the protected resource metadata of RFC 9728 at
// /.well-known/oauth-protected-resource and at that path followed by the resource's
// path (where RFC 9728 puts it for a resource with a path, such as /mcp); 404 when
// the gateway file has no oauth section.
func (g *Gateway) ProtectedResourceHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := g.state.Load().oauth
		if o == nil || (r.URL.Path != "/.well-known/oauth-protected-resource" && r.URL.Path != oauth.MetadataPath(o.resource)) {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		md := oauth.Metadata{Resource: o.cfg.Resource, ScopesSupported: o.cfg.Scopes, BearerMethodsSupported: []string{"header"}}
		for _, is := range o.cfg.Issuers {
			md.AuthorizationServers = append(md.AuthorizationServers, is.Issuer)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		json.NewEncoder(w).Encode(md)
	})
}

type identityKey struct{}

func withIdentity(ctx context.Context, id identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}
