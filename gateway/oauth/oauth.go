// Package oauth is the OAuth 2.1 resource server of the gateway's HTTP front: it
// verifies JWT access tokens of configured issuers (OpenID Connect discovery, the
// issuer's JWKS cached, refetched on an unknown key id at most once per interval,
// `iss`, `aud`, `exp` and `nbf` checked with a bounded clock skew, an algorithm
// allowlist without `none` and HMAC) and writes the protected resource metadata of
// RFC 9728 and the WWW-Authenticate challenges that point to it.
//
// Signatures and the claims iss and aud are checked by github.com/coreos/go-oidc/v3
// on keys github.com/go-jose/go-jose/v4 parses; the package adds the key cache's
// rate limit, the clock skew and the choice of issuer. It knows nothing of the
// gateway's clients: mapping a verified token to one is the gateway's.
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// Defaults of a [Config].
const (
	DefaultClockSkew = 30 * time.Second
	// MaxClockSkew bounds ClockSkew: a larger one would accept tokens long expired.
	MaxClockSkew = 5 * time.Minute
	// DefaultRefetchInterval is the least time between two fetches of an issuer's
	// discovery document or JWKS that a token asks for (an unknown key id, a failed
	// discovery): tokens with made-up key ids cannot make the gateway hammer the
	// issuer.
	DefaultRefetchInterval = 30 * time.Second
	// DefaultKeysMaxAge is how long a fetched JWKS is used before it is fetched again
	// (so a key the issuer removed stops verifying within this time).
	DefaultKeysMaxAge = time.Hour
	fetchTimeout      = 10 * time.Second
)

// DefaultAlgorithms are the signature algorithms accepted when an issuer names none:
// the RSA (PKCS #1 v1.5 and PSS) and ECDSA families.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

// Issuer is one authorization server whose tokens are accepted.
type Issuer struct {
	// URL is the issuer identifier; its discovery document is at
	// URL + "/.well-known/openid-configuration" and must name the same issuer.
	URL string
	// Audience is the value the token's aud must contain.
	Audience string
	// Algorithms is the allowlist of signature algorithms (nil: DefaultAlgorithms).
	Algorithms []string
}

// Config configures a [Verifier].
type Config struct {
	Issuers []Issuer
	// ClockSkew is the tolerance on exp and nbf (0: DefaultClockSkew).
	ClockSkew time.Duration
	// RefetchInterval and KeysMaxAge: see the defaults (0: the default).
	RefetchInterval, KeysMaxAge time.Duration
	// Client fetches discovery documents and JWKS (nil: a client with a timeout).
	Client *http.Client
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Token is a verified access token.
type Token struct {
	Issuer  string
	Subject string
	Expiry  time.Time
	// Claims are all of the token's claims.
	Claims map[string]any
}

// ErrUnknownIssuer is returned for a token whose iss is none of the configured
// issuers (or that is no JWT at all).
var ErrUnknownIssuer = errors.New("the token is not a JWT of a configured issuer")

// Verifier verifies access tokens. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	issuers map[string]*issuer
}

// AlgorithmAllowed reports whether alg may be on an issuer's allowlist: `none` and
// the HMAC algorithms never may (a resource server holds no shared secret, and an
// HMAC "signed" with a public key is the classic confusion attack).
func AlgorithmAllowed(alg string) bool {
	return slices.Contains(DefaultAlgorithms, alg) || alg == "EdDSA"
}

// New returns a Verifier; it fetches nothing until a token is verified.
func New(cfg Config) (*Verifier, error) {
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	if cfg.ClockSkew < 0 || cfg.ClockSkew > MaxClockSkew {
		return nil, fmt.Errorf("clock skew %v is out of range (0 to %v)", cfg.ClockSkew, MaxClockSkew)
	}
	if cfg.RefetchInterval == 0 {
		cfg.RefetchInterval = DefaultRefetchInterval
	}
	if cfg.KeysMaxAge == 0 {
		cfg.KeysMaxAge = DefaultKeysMaxAge
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: fetchTimeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg, issuers: map[string]*issuer{}}
	for _, is := range cfg.Issuers {
		if is.URL == "" || is.Audience == "" {
			return nil, fmt.Errorf("issuer %q: an issuer URL and an audience are required", is.URL)
		}
		algs := is.Algorithms
		if len(algs) == 0 {
			algs = DefaultAlgorithms
		}
		for _, a := range algs {
			if !AlgorithmAllowed(a) {
				return nil, fmt.Errorf("issuer %q: algorithm %q is not allowed (none and HMAC never are)", is.URL, a)
			}
		}
		if _, dup := v.issuers[is.URL]; dup {
			return nil, fmt.Errorf("issuer %q is configured twice", is.URL)
		}
		v.issuers[is.URL] = &issuer{v: v, cfg: is, algs: algs}
	}
	return v, nil
}

// Verify checks raw and returns its token; the error says why a token is refused.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Token, error) {
	// The issuer is read from the unverified payload only to choose whose keys verify
	// it; go-oidc then checks iss against that issuer after the signature.
	jws, err := jose.ParseSignedCompact(raw, allAlgorithms)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, ErrUnknownIssuer
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims) != nil {
		return nil, ErrUnknownIssuer
	}
	is, ok := v.issuers[claims.Issuer]
	if !ok {
		return nil, ErrUnknownIssuer
	}
	return is.verify(ctx, raw)
}

// allAlgorithms lets the issuer be read from a token of any signature algorithm
// (refused later unless on the issuer's allowlist); "none" is not among them, so an
// unsigned token does not even parse.
var allAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA, jose.HS256, jose.HS384, jose.HS512,
}

type issuer struct {
	v    *Verifier
	cfg  Issuer
	algs []string

	mu        sync.Mutex
	verifier  *oidc.IDTokenVerifier
	keys      *keySet
	triedAt   time.Time // last discovery attempt
	lastError error
}

func (is *issuer) verify(ctx context.Context, raw string) (*Token, error) {
	ver, err := is.discover(ctx)
	if err != nil {
		return nil, err
	}
	idt, err := ver.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	now := is.v.cfg.Now()
	skew := is.v.cfg.ClockSkew
	if idt.Expiry.IsZero() {
		return nil, errors.New("the token has no exp")
	}
	if !now.Before(idt.Expiry.Add(skew)) {
		return nil, fmt.Errorf("the token expired at %s", idt.Expiry.UTC().Format(time.RFC3339))
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("the token's claims: %w", err)
	}
	if nbf, ok := claims["nbf"].(float64); ok {
		t := time.Unix(int64(nbf), 0)
		if now.Add(skew).Before(t) {
			return nil, fmt.Errorf("the token is not valid before %s", t.UTC().Format(time.RFC3339))
		}
	}
	return &Token{Issuer: idt.Issuer, Subject: idt.Subject, Expiry: idt.Expiry, Claims: claims}, nil
}

// discover returns the issuer's verifier, fetching its discovery document the first
// time (and again after a failure, at most once per RefetchInterval).
func (is *issuer) discover(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.verifier != nil {
		return is.verifier, nil
	}
	now := is.v.cfg.Now()
	if !is.triedAt.IsZero() && now.Sub(is.triedAt) < is.v.cfg.RefetchInterval {
		return nil, fmt.Errorf("issuer %s: discovery failed: %w", is.cfg.URL, is.lastError)
	}
	is.triedAt = now
	fctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), is.v.cfg.Client), fetchTimeout)
	defer cancel()
	p, err := oidc.NewProvider(fctx, is.cfg.URL)
	if err != nil {
		is.lastError = err
		return nil, fmt.Errorf("issuer %s: discovery failed: %w", is.cfg.URL, err)
	}
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKS == "" {
		is.lastError = errors.New("the discovery document has no jwks_uri")
		return nil, fmt.Errorf("issuer %s: %w", is.cfg.URL, is.lastError)
	}
	is.keys = &keySet{v: is.v, url: doc.JWKS, algs: is.algs}
	is.verifier = oidc.NewVerifier(is.cfg.URL, is.keys, &oidc.Config{
		ClientID:             is.cfg.Audience,
		SupportedSigningAlgs: is.algs,
		// exp and nbf are checked with the configured skew in verify.
		SkipExpiryCheck: true,
	})
	return is.verifier, nil
}

// keySet is an issuer's JWKS, fetched when a token names a key id it does not hold
// (at most once per RefetchInterval) or when it is older than KeysMaxAge.
type keySet struct {
	v    *Verifier
	url  string
	algs []string

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	fetchedAt time.Time // last fetch attempt
	goodAt    time.Time // last successful fetch
}

// VerifySignature implements oidc.KeySet.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	algs := make([]jose.SignatureAlgorithm, len(k.algs))
	for i, a := range k.algs {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	jws, err := jose.ParseSignedCompact(raw, algs)
	if err != nil {
		return nil, err
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("the token must have exactly one signature")
	}
	h := jws.Signatures[0].Header
	keys, err := k.lookup(ctx, h.KeyID)
	if err != nil {
		return nil, err
	}
	for _, key := range keys {
		if key.Algorithm != "" && key.Algorithm != h.Algorithm {
			continue
		}
		if payload, err := jws.Verify(key); err == nil {
			return payload, nil
		}
	}
	return nil, fmt.Errorf("no key of the issuer with id %q verifies the signature", h.KeyID)
}

// lookup returns the keys with id kid (every signing key when kid is empty).
func (k *keySet) lookup(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.v.cfg.Now()
	stale := k.goodAt.IsZero() || now.Sub(k.goodAt) >= k.v.cfg.KeysMaxAge
	found := k.find(kid)
	if !stale && len(found) > 0 {
		return found, nil
	}
	if !k.fetchedAt.IsZero() && now.Sub(k.fetchedAt) < k.v.cfg.RefetchInterval {
		if stale {
			return nil, errors.New("the issuer's keys could not be fetched recently; refusing until they are")
		}
		return nil, fmt.Errorf("the issuer has no key with id %q", kid)
	}
	k.fetchedAt = now
	keys, err := k.fetch(ctx)
	if err != nil {
		// A set older than KeysMaxAge is not used: a key the issuer removed must stop
		// verifying.
		if stale {
			k.keys = nil
		}
		return nil, fmt.Errorf("fetching the issuer's keys from %s: %w", k.url, err)
	}
	k.keys, k.goodAt = keys, now
	if found = k.find(kid); len(found) == 0 {
		return nil, fmt.Errorf("the issuer has no key with id %q", kid)
	}
	return found, nil
}

func (k *keySet) find(kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, key := range k.keys {
		if (kid == "" || key.KeyID == kid) && (key.Use == "" || key.Use == "sig") && key.IsPublic() {
			out = append(out, key)
		}
	}
	return out
}

func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.v.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	return set.Keys, nil
}

// Metadata is the protected resource metadata document of RFC 9728.
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// MetadataPath is where RFC 9728 puts the metadata of resource: the well-known path
// with the resource's path appended ("/.well-known/oauth-protected-resource/mcp" for
// https://host/mcp).
func MetadataPath(resource *url.URL) string {
	p := strings.TrimSuffix(resource.EscapedPath(), "/")
	return "/.well-known/oauth-protected-resource" + p
}

// MetadataURL is the absolute URL of resource's metadata document.
func MetadataURL(resource *url.URL) string {
	u := url.URL{Scheme: resource.Scheme, Host: resource.Host}
	return u.String() + MetadataPath(resource)
}

// Challenge is a WWW-Authenticate value of RFC 6750 with the resource_metadata of
// RFC 9728: scheme Bearer, realm, then the parameters that are not empty.
func Challenge(realm, metadataURL, errCode, description, scope string) string {
	var b strings.Builder
	b.WriteString("Bearer realm=" + quote(realm))
	if metadataURL != "" {
		b.WriteString(", resource_metadata=" + quote(metadataURL))
	}
	if errCode != "" {
		b.WriteString(", error=" + quote(errCode))
	}
	if description != "" {
		b.WriteString(", error_description=" + quote(description))
	}
	if scope != "" {
		b.WriteString(", scope=" + quote(scope))
	}
	return b.String()
}

// quote makes s a quoted-string; RFC 6750 allows no quote or backslash in its
// parameters' values, so they are dropped, as are control characters.
func quote(s string) string {
	return `"` + strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s) + `"`
}

// ClockSkew is the tolerance on exp and nbf in force.
func (v *Verifier) ClockSkew() time.Duration { return v.cfg.ClockSkew }
