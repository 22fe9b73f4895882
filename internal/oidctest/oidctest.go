// Package oidctest is a real local OpenID provider for tests: an HTTP server that
// publishes a discovery document and a JWKS of generated RSA and EC keys, signs
// access tokens with them, rotates keys and can take its JWKS endpoint down.
package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Key is a signing key of the issuer.
type Key struct {
	ID  string
	Alg jose.SignatureAlgorithm
	Key crypto.Signer
}

// NewRSAKey and NewECKey generate keys.
func NewRSAKey(tb testing.TB, id string) Key {
	tb.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	return Key{ID: id, Alg: jose.RS256, Key: k}
}

func NewECKey(tb testing.TB, id string) Key {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return Key{ID: id, Alg: jose.ES256, Key: k}
}

// Issuer is a running provider.
type Issuer struct {
	tb  testing.TB
	srv *httptest.Server
	URL string

	mu            sync.Mutex
	published     []Key
	down          bool
	discoveryDown bool

	// JWKSFetches counts the JWKS requests, DiscoveryFetches the discovery ones.
	JWKSFetches, DiscoveryFetches atomic.Int32
}

// Start starts an issuer publishing keys; it stops when the test ends.
func Start(tb testing.TB, keys ...Key) *Issuer {
	is := &Issuer{tb: tb, published: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		is.DiscoveryFetches.Add(1)
		is.mu.Lock()
		down := is.discoveryDown
		is.mu.Unlock()
		if down {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.URL,
			"authorization_endpoint":                is.URL + "/authorize",
			"token_endpoint":                        is.URL + "/token",
			"jwks_uri":                              is.URL + "/jwks",
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.JWKSFetches.Add(1)
		is.mu.Lock()
		down, keys := is.down, is.published
		is.mu.Unlock()
		if down {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		var set jose.JSONWebKeySet
		for _, k := range keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Key.Public(), KeyID: k.ID, Algorithm: string(k.Alg), Use: "sig"})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewServer(mux)
	is.URL = is.srv.URL
	tb.Cleanup(is.srv.Close)
	return is
}

// Publish replaces the published keys (a rotation).
func (is *Issuer) Publish(keys ...Key) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = keys
}

// SetDown makes the JWKS endpoint answer 503 (down) or serve again.
func (is *Issuer) SetDown(down bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.down = down
}

// SetDiscoveryDown makes the discovery document answer 503 (down) or serve again.
func (is *Issuer) SetDiscoveryDown(down bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.discoveryDown = down
}

// Claims are a token's claims; Token fills iss with the issuer's URL when it is
// not set.
type Claims map[string]any

// Standard returns claims of a token for sub and aud valid from now for an hour.
func (is *Issuer) Standard(sub, aud string, now time.Time) Claims {
	return Claims{"iss": is.URL, "sub": sub, "aud": aud, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Sign signs claims with key (key.ID in the header's kid, key.Alg its alg).
func (is *Issuer) Sign(key Key, claims Claims) string {
	is.tb.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: key.Alg, Key: jose.JSONWebKey{Key: key.Key, KeyID: key.ID}}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		is.tb.Fatal(err)
	}
	return is.sign(signer, claims)
}

// SignHMAC signs claims with HS256 under secret, with kid in the header.
func (is *Issuer) SignHMAC(kid string, secret []byte, claims Claims) string {
	is.tb.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: secret, KeyID: kid}}, nil)
	if err != nil {
		is.tb.Fatal(err)
	}
	return is.sign(signer, claims)
}

func (is *Issuer) sign(signer jose.Signer, claims Claims) string {
	payload, err := json.Marshal(claims)
	if err != nil {
		is.tb.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		is.tb.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		is.tb.Fatal(err)
	}
	return s
}

// Unsigned returns claims as a JWT with alg none and an empty signature.
func Unsigned(tb testing.TB, kid string, claims Claims) string {
	tb.Helper()
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": kid})
	p, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "."
}
