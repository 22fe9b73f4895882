package gateway_test

import (
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/internal/oidctest"
)

const (
	oauthResource = "https://warden.test/mcp"
	oauthMetaURL  = "https://warden.test/.well-known/oauth-protected-resource/mcp"
)

// oauthEnv is a gateway whose oauth section accepts the tokens of a real local
// issuer (is) next to a static writer client, and names a second
// issuer (down) whose JWKS endpoint never answers.
type oauthEnv struct {
	*gwEnv
	is, down *oidctest.Issuer
	rsa, ec  oidctest.Key
	hc       *http.Client
}

func oauthStart(t *testing.T) *oauthEnv {
	t.Helper()
	o := &oauthEnv{rsa: oidctest.NewRSAKey(t, "rsa-1"), ec: oidctest.NewECKey(t, "ec-1")}
	o.is = oidctest.Start(t, o.rsa, o.ec)
	o.down = oidctest.Start(t, o.rsa)
	o.down.SetDown(true)
	// The only static client is a writer: the reader role is named by an oauth
	// mapping alone.
	o.gwEnv = gwStart(t, gwSetup{identities: `listen: 127.0.0.1:0
clients:
  - principal: writer-agent
    role: writer
    token_env: GW_WRITER_TOKEN
`, extra: `oauth:
  resource: ` + oauthResource + `
  scopes_supported: [mcp:tools]
  clock_skew: 10s
  issuers:
    - issuer: ` + o.is.URL + `
      clients:
        - claim: groups
          value: writers
          role: writer
        - value: reader-sub
          principal: jwt-reader
          tenant: acme
          role: reader
    - issuer: ` + o.down.URL + `
      clients:
        - value: anyone
          role: writer
`})
	o.hc = &http.Client{Transport: o.tr, Timeout: time.Minute}
	return o
}

// token is a valid access token of is for sub, edited by edit.
func (o *oauthEnv) token(key oidctest.Key, sub string, edit func(oidctest.Claims)) string {
	c := o.is.Standard(sub, oauthResource, time.Now())
	if edit != nil {
		edit(c)
	}
	return o.is.Sign(key, c)
}

// post sends an initialize with the Authorization header (none when empty) and
// returns the status, the WWW-Authenticate header and the body.
func (o *oauthEnv) post(t *testing.T, authorization string) (int, string, string) {
	t.Helper()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, o.url, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := o.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// A valid JWT of a configured issuer is a client: the mapping's role decides what it
// sees and may call, and its principal (the token's sub, or the mapping's) is the
// one audited, on the stateful and on the stateless front. Static tokens keep
// working beside it.
func TestOAuthValidTokens(t *testing.T) {
	o := oauthStart(t)

	writer := o.token(o.rsa, "carol", func(c oidctest.Claims) { c["groups"] = []string{"staff", "writers"} })
	cs := o.connect(t, writer, nil)
	if got := gwTools(t, cs); !slices.Equal(got, gwWriterTools) {
		t.Errorf("tools of a JWT in group writers: %v, want the writer's %v", got, gwWriterTools)
	}
	gwWant(t, gwCall(t, cs, "mcp__notes__write_note", map[string]any{"name": "n1", "text": "hello"}), false, `Wrote note "n1" (5 bytes).`)
	if rec := o.lastCall(t, "mcp__notes__write_note", "carol"); !rec.Executed || rec.Status != "ran" {
		t.Errorf("carol's write: %+v, want a call that ran", rec)
	}

	reader := o.token(o.ec, "reader-sub", nil) // ES256
	rs := o.connect(t, reader, nil)
	if got := gwTools(t, rs); !slices.Equal(got, gwReaderTools) {
		t.Errorf("tools of the reader JWT: %v, want %v", got, gwReaderTools)
	}
	gwWant(t, gwCall(t, rs, "mcp__notes__read_note", map[string]any{"name": "n1"}), false, "hello")
	rec := o.lastCall(t, "mcp__notes__read_note", "jwt-reader")
	if rec.Identity.Tenant != "acme" || !rec.Executed {
		t.Errorf("the reader JWT's call: %+v, want principal jwt-reader of tenant acme, executed", rec)
	}
	gwWantUnknown(t, rs, "mcp__notes__write_note", map[string]any{"name": "n2", "text": "x"})

	// The 2026-07-28 stateless front takes the same identity path.
	s26 := connect2026(t, o.url, writer, o.tr, nil)
	gwWant(t, call2026(t, s26, &mcp.CallToolParams{Name: "mcp__notes__read_note", Arguments: map[string]any{"name": "n1"}}), false, "hello")
	if n := len(o.calls(t, "mcp__notes__read_note", "carol")); n != 1 {
		t.Errorf("carol's reads on the stateless front: %d audit records, want 1", n)
	}
	r26 := connect2026(t, o.url, reader, o.tr, nil)
	if got := mcptest.ToolNames(t, r26, time.Minute); !slices.Equal(got, gwReaderTools) {
		t.Errorf("tools of the reader JWT at 2026-07-28: %v, want %v", got, gwReaderTools)
	}
	gwWant(t, call2026(t, r26, &mcp.CallToolParams{Name: "mcp__notes__read_note", Arguments: map[string]any{"name": "n1"}}), false, "hello")
	if n := len(o.calls(t, "mcp__notes__read_note", "jwt-reader")); n != 2 {
		t.Errorf("jwt-reader's reads: %d audit records, want 2", n)
	}

	// A static token is unchanged.
	ws := o.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, ws, "mcp__notes__read_note", map[string]any{"name": "n1"}), false, "hello")
	o.lastCall(t, "mcp__notes__read_note", "writer-agent")
}

// Every refusal is 401 (no or an invalid token) or 403 (a valid token no mapping
// matches) with a challenge that names the protected resource metadata.
func TestOAuthRefusals(t *testing.T) {
	o := oauthStart(t)
	pub, err := x509.MarshalPKIXPublicKey(o.rsa.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	valid := func() oidctest.Claims { return o.is.Standard("carol", oauthResource, time.Now()) }
	edited := func(edit func(oidctest.Claims)) oidctest.Claims { c := valid(); edit(c); return c }
	const prefix = `Bearer realm="warden", resource_metadata="` + oauthMetaURL + `"`
	invalid := prefix + `, error="invalid_token", error_description="the access token is not valid: `
	for _, c := range []struct {
		name, authorization string
		status              int
		challenge           string // exact, or a prefix when it ends in ": "
	}{
		{"no token", "", 401, prefix + `, scope="mcp:tools"`},
		{"not a bearer", "Basic dXNlcjpwdw==", 401, prefix + `, scope="mcp:tools"`},
		{"unknown static token", "Bearer " + gwWrongToken, 401, prefix + `, error="invalid_token", error_description="the token is neither a client's token nor a JWT of a configured issuer", scope="mcp:tools"`},
		{"expired", "Bearer " + o.is.Sign(o.rsa, edited(func(c oidctest.Claims) { c["exp"] = time.Now().Add(-time.Minute).Unix() })), 401, invalid},
		{"not yet valid", "Bearer " + o.is.Sign(o.rsa, edited(func(c oidctest.Claims) { c["nbf"] = time.Now().Add(time.Minute).Unix() })), 401, invalid},
		{"wrong audience", "Bearer " + o.is.Sign(o.rsa, edited(func(c oidctest.Claims) { c["aud"] = "https://elsewhere.test/mcp" })), 401, invalid},
		{"wrong issuer", "Bearer " + o.is.Sign(o.rsa, edited(func(c oidctest.Claims) { c["iss"] = "https://evil.test" })), 401, prefix + `, error="invalid_token", error_description="the token is neither a client's token nor a JWT of a configured issuer", scope="mcp:tools"`},
		{"alg none", "Bearer " + oidctest.Unsigned(t, "rsa-1", valid()), 401, prefix + `, error="invalid_token", error_description="the token is neither a client's token nor a JWT of a configured issuer", scope="mcp:tools"`},
		{"HS256 with the public key", "Bearer " + o.is.SignHMAC("rsa-1", pub, valid()), 401, invalid},
		{"unknown kid", "Bearer " + o.is.Sign(oidctest.Key{ID: "rsa-9", Alg: jose.RS256, Key: o.rsa.Key}, valid()), 401, invalid},
		{"JWKS endpoint down", "Bearer " + o.down.Sign(o.rsa, o.down.Standard("anyone", oauthResource, time.Now())), 401, invalid},
		{"valid, but no mapping matches", "Bearer " + o.token(o.rsa, "mallory", nil), 403, prefix + `, error="insufficient_scope", error_description="the token's claims map to none of the gateway's clients", scope="mcp:tools"`},
	} {
		status, challenge, body := o.post(t, c.authorization)
		ok := challenge == c.challenge
		if strings.HasSuffix(c.challenge, ": ") {
			ok = strings.HasPrefix(challenge, c.challenge) && strings.HasSuffix(challenge, `", scope="mcp:tools"`)
		}
		if status != c.status || !ok {
			t.Errorf("%s: status %d, WWW-Authenticate %s (body %q)\nwant %d with %s", c.name, status, challenge, body, c.status, c.challenge)
		}
	}
	if _, err := o.tryConnect(o.token(o.rsa, "mallory", nil)); err == nil {
		t.Error("an SDK client with an unmapped JWT connected")
	}
	if n := len(o.calls(t, "", "mallory")); n != 0 {
		t.Errorf("%d calls recorded for the unmapped token", n)
	}
}

// The protected resource metadata (RFC 9728) is served at the well-known path and at
// its form suffixed with the resource's path.
func TestOAuthProtectedResourceMetadata(t *testing.T) {
	o := oauthStart(t)
	want := map[string]any{
		"resource":                 oauthResource,
		"authorization_servers":    []any{o.is.URL, o.down.URL},
		"scopes_supported":         []any{"mcp:tools"},
		"bearer_methods_supported": []any{"header"},
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := o.hc.Get(o.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: status %d, %s, %v", path, resp.StatusCode, resp.Header.Get("Content-Type"), err)
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("%s: %s\nwant %s", path, gj, wj)
		}
	}
	resp, err := o.hc.Get(o.srv.URL + "/.well-known/oauth-protected-resource/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("metadata of another path: status %d, want 404", resp.StatusCode)
	}

	// Without an oauth section there is no metadata, and the challenge is as before.
	plain := gwStart(t, gwSetup{})
	resp, err = o.hc.Get(plain.srv.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("metadata without oauth: status %d, want 404", resp.StatusCode)
	}
}
