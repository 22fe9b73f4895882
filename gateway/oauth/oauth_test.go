package oauth_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/wardenhq/warden/gateway/oauth"
	"github.com/wardenhq/warden/internal/oidctest"
)

const aud = "https://warden.test/mcp"

// clock is a settable clock for the verifier.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newVerifier(t *testing.T, c *clock, issuers ...oauth.Issuer) *oauth.Verifier {
	t.Helper()
	v, err := oauth.New(oauth.Config{Issuers: issuers, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerify(t *testing.T) {
	rsaKey, ecKey := oidctest.NewRSAKey(t, "rsa-1"), oidctest.NewECKey(t, "ec-1")
	is := oidctest.Start(t, rsaKey, ecKey)
	other := oidctest.Start(t, oidctest.NewRSAKey(t, "other"))
	c := &clock{t: time.Now().Truncate(time.Second)}
	v := newVerifier(t, c, oauth.Issuer{URL: is.URL, Audience: aud})
	now := c.Now()
	ctx := context.Background()

	for _, k := range []oidctest.Key{rsaKey, ecKey} {
		claims := is.Standard("user-1", aud, now)
		claims["groups"] = []string{"devs"}
		tok, err := v.Verify(ctx, is.Sign(k, claims))
		if err != nil {
			t.Fatalf("%s: a valid token is refused: %v", k.Alg, err)
		}
		if tok.Issuer != is.URL || tok.Subject != "user-1" || tok.Expiry.Unix() != now.Add(time.Hour).Unix() {
			t.Errorf("%s: token %+v", k.Alg, tok)
		}
		if g, _ := tok.Claims["groups"].([]any); len(g) != 1 || g[0] != "devs" {
			t.Errorf("%s: claims %v, want groups [devs]", k.Alg, tok.Claims)
		}
	}

	with := func(edit func(oidctest.Claims)) oidctest.Claims {
		cl := is.Standard("user-1", aud, now)
		edit(cl)
		return cl
	}
	pub, err := x509.MarshalPKIXPublicKey(rsaKey.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	refused := []struct {
		name, token, want string
	}{
		{"expired", is.Sign(rsaKey, with(func(c oidctest.Claims) { c["exp"] = now.Add(-time.Minute).Unix() })), "expired"},
		{"no exp", is.Sign(rsaKey, with(func(c oidctest.Claims) { delete(c, "exp") })), "no exp"},
		{"not yet valid", is.Sign(rsaKey, with(func(c oidctest.Claims) { c["nbf"] = now.Add(time.Minute).Unix() })), "not valid before"},
		{"wrong audience", is.Sign(rsaKey, with(func(c oidctest.Claims) { c["aud"] = "https://other.test/mcp" })), "audience"},
		{"issuer not configured", other.Sign(oidctest.NewRSAKey(t, "other"), other.Standard("user-1", aud, now)), "not a JWT of a configured issuer"},
		// The configured issuer's iss on a token signed by another key with the same kid.
		{"forged with a foreign key", is.Sign(oidctest.Key{ID: "rsa-1", Alg: jose.RS256, Key: oidctest.NewRSAKey(t, "x").Key}, with(func(oidctest.Claims) {})), "verif"},
		{"alg none", oidctest.Unsigned(t, "rsa-1", with(func(oidctest.Claims) {})), "not a JWT of a configured issuer"},
		{"HS256 keyed with the public key", is.SignHMAC("rsa-1", pubPEM, with(func(oidctest.Claims) {})), "HS256"},
		{"HS256 keyed with the DER public key", is.SignHMAC("rsa-1", pub, with(func(oidctest.Claims) {})), "HS256"},
		{"unknown kid", is.Sign(oidctest.Key{ID: "rsa-9", Alg: jose.RS256, Key: rsaKey.Key}, with(func(oidctest.Claims) {})), `no key with id "rsa-9"`},
		{"no JWT", "not-a-jwt", "not a JWT of a configured issuer"},
	}
	for _, r := range refused {
		_, err := v.Verify(ctx, r.token)
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: err %v, want one containing %q", r.name, err, r.want)
		}
	}

	// Within the clock skew (30s by default) exp and nbf are tolerated; beyond it not.
	if _, err := v.Verify(ctx, is.Sign(rsaKey, with(func(c oidctest.Claims) { c["exp"] = now.Add(-20 * time.Second).Unix() }))); err != nil {
		t.Errorf("expired 20s ago, within the skew: %v", err)
	}
	if _, err := v.Verify(ctx, is.Sign(rsaKey, with(func(c oidctest.Claims) { c["nbf"] = now.Add(20 * time.Second).Unix() }))); err != nil {
		t.Errorf("valid in 20s, within the skew: %v", err)
	}
	if _, err := v.Verify(ctx, is.Sign(rsaKey, with(func(c oidctest.Claims) { c["exp"] = now.Add(-31 * time.Second).Unix() }))); err == nil {
		t.Error("expired 31s ago, beyond the skew: accepted")
	}
}

// A key the issuer adds is fetched when a token names it; one it removed stops
// verifying; unknown key ids refetch at most once per interval.
func TestKeyRotation(t *testing.T) {
	k1, k2 := oidctest.NewRSAKey(t, "k1"), oidctest.NewECKey(t, "k2")
	is := oidctest.Start(t, k1)
	c := &clock{t: time.Now().Truncate(time.Second)}
	v := newVerifier(t, c, oauth.Issuer{URL: is.URL, Audience: aud})
	ctx := context.Background()
	sign := func(k oidctest.Key) string { return is.Sign(k, is.Standard("u", aud, c.Now())) }

	if _, err := v.Verify(ctx, sign(k1)); err != nil {
		t.Fatalf("k1: %v", err)
	}
	if n := is.JWKSFetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
	for range 5 {
		if _, err := v.Verify(ctx, sign(k1)); err != nil {
			t.Fatalf("k1 again: %v", err)
		}
	}
	if n := is.JWKSFetches.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times for one known key, want 1 (cached)", n)
	}

	is.Publish(k2) // rotation: k2 in, k1 out
	// Within the refetch interval of the last fetch, an unknown kid does not fetch.
	for range 5 {
		if _, err := v.Verify(ctx, sign(k2)); err == nil {
			t.Fatal("k2 accepted without a fetch")
		}
	}
	if n := is.JWKSFetches.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times within the refetch interval, want 1", n)
	}
	c.Advance(oauth.DefaultRefetchInterval)
	if _, err := v.Verify(ctx, sign(k2)); err != nil {
		t.Fatalf("k2 after the interval: %v", err)
	}
	if n := is.JWKSFetches.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times, want 2", n)
	}
	// k1 is gone from the fetched set.
	c.Advance(oauth.DefaultRefetchInterval)
	if _, err := v.Verify(ctx, sign(k1)); err == nil || !strings.Contains(err.Error(), `no key with id "k1"`) {
		t.Errorf("k1 after its removal: err %v, want no key", err)
	}
	// A set older than KeysMaxAge is fetched again before use, and not used when the
	// fetch fails.
	c.Advance(oauth.DefaultKeysMaxAge)
	is.SetDown(true)
	if _, err := v.Verify(ctx, sign(k2)); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("stale set, JWKS down: err %v, want the fetch's 503", err)
	}
	is.SetDown(false)
	c.Advance(oauth.DefaultRefetchInterval)
	if _, err := v.Verify(ctx, sign(k2)); err != nil {
		t.Errorf("k2 once the JWKS is back: %v", err)
	}
}

// With the JWKS endpoint down no token verifies, and discovery failures are retried
// at most once per interval.
func TestIssuerDown(t *testing.T) {
	k := oidctest.NewRSAKey(t, "k")
	is := oidctest.Start(t, k)
	is.SetDown(true)
	c := &clock{t: time.Now().Truncate(time.Second)}
	v := newVerifier(t, c, oauth.Issuer{URL: is.URL, Audience: aud})
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.Sign(k, is.Standard("u", aud, c.Now()))); err == nil {
		t.Fatal("a token verified with the JWKS endpoint down")
	}

	is.SetDown(false)
	if _, err := v.Verify(ctx, is.Sign(k, is.Standard("u", aud, c.Now()))); err == nil {
		t.Fatal("a token verified within the refetch interval of the failed JWKS fetch")
	}
	c.Advance(oauth.DefaultRefetchInterval)
	if _, err := v.Verify(ctx, is.Sign(k, is.Standard("u", aud, c.Now()))); err != nil {
		t.Fatalf("the JWKS is back after the interval: %v", err)
	}

	// Discovery failing: the token is refused, and discovery is retried at most once
	// per interval.
	d := oidctest.Start(t, k)
	d.SetDiscoveryDown(true)
	v2 := newVerifier(t, c, oauth.Issuer{URL: d.URL, Audience: aud})
	tok := d.Sign(k, d.Standard("u", aud, c.Now()))
	for range 3 {
		if _, err := v2.Verify(ctx, tok); err == nil || !strings.Contains(err.Error(), "discovery failed") {
			t.Fatalf("discovery down: err %v", err)
		}
	}
	if n := d.DiscoveryFetches.Load(); n != 1 {
		t.Errorf("discovery fetched %d times within the interval, want 1", n)
	}
	d.SetDiscoveryDown(false)
	c.Advance(oauth.DefaultRefetchInterval)
	if _, err := v2.Verify(ctx, tok); err != nil {
		t.Errorf("discovery back after the interval: %v", err)
	}
}

func TestConfig(t *testing.T) {
	for _, cfg := range []oauth.Config{
		{Issuers: []oauth.Issuer{{URL: "https://a.test", Audience: aud, Algorithms: []string{"HS256"}}}},
		{Issuers: []oauth.Issuer{{URL: "https://a.test", Audience: aud, Algorithms: []string{"none"}}}},
		{Issuers: []oauth.Issuer{{URL: "https://a.test"}}},
		{Issuers: []oauth.Issuer{{URL: "https://a.test", Audience: aud}, {URL: "https://a.test", Audience: aud}}},
		{Issuers: []oauth.Issuer{{URL: "https://a.test", Audience: aud}}, ClockSkew: time.Hour},
	} {
		if _, err := oauth.New(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

func TestMetadataAndChallenge(t *testing.T) {
	for _, c := range []struct{ resource, path, url string }{
		{"https://gw.test/mcp", "/.well-known/oauth-protected-resource/mcp", "https://gw.test/.well-known/oauth-protected-resource/mcp"},
		{"https://gw.test:8443/", "/.well-known/oauth-protected-resource", "https://gw.test:8443/.well-known/oauth-protected-resource"},
		{"http://127.0.0.1:8080/a/b", "/.well-known/oauth-protected-resource/a/b", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/b"},
	} {
		u, err := url.Parse(c.resource)
		if err != nil {
			t.Fatal(err)
		}
		if got := oauth.MetadataPath(u); got != c.path {
			t.Errorf("MetadataPath(%s) = %q, want %q", c.resource, got, c.path)
		}
		if got := oauth.MetadataURL(u); got != c.url {
			t.Errorf("MetadataURL(%s) = %q, want %q", c.resource, got, c.url)
		}
	}
	got := oauth.Challenge("warden", "https://gw.test/.well-known/oauth-protected-resource/mcp", "invalid_token", `bad "quote"`, "mcp:tools")
	want := `Bearer realm="warden", resource_metadata="https://gw.test/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="bad quote", scope="mcp:tools"`
	if got != want {
		t.Errorf("Challenge = %s\nwant        %s", got, want)
	}
	if got := oauth.Challenge("warden", "", "", "", ""); got != `Bearer realm="warden"` {
		t.Errorf("bare Challenge = %s", got)
	}
}
