package inbox_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/sqlite" // registers sqlite://
)

const (
	operatorName  = "alice"
	operatorToken = "op-token-alice-7f3c1e"
	// clientToken is what an agent or MCP client would present to the gateway. The
	// inbox only knows operator hashes, so it must never sign in with it.
	clientToken = "mcp-client-token-9a8b7c"
)

// fixture is an inbox mounted on a test server, in front of a real SQLite store.
type fixture struct {
	t    *testing.T
	st   store.Store
	ib   *inbox.Inbox
	srv  *httptest.Server
	base string // absolute URL of the inbox, ending in "/"
}

type fixtureOptions struct {
	tls       bool
	operators []inbox.Operator // default: operatorName with operatorToken
	store     store.Store      // default: a new SQLite file
	modify    func(*inbox.Options)
}

func newFixture(t *testing.T, fo fixtureOptions) *fixture {
	t.Helper()
	st := fo.store
	if st == nil {
		st = openStore(t)
	}
	ops := fo.operators
	if ops == nil {
		ops = []inbox.Operator{{Name: operatorName, TokenHash: inbox.HashToken(operatorToken)}}
	}
	var o inbox.Options
	if fo.modify != nil {
		fo.modify(&o)
	}
	ib, err := inbox.New(st, ops, &o)
	if err != nil {
		t.Fatalf("inbox.New: %v", err)
	}
	inbox.SetFailDelay(ib, time.Millisecond)
	mux := http.NewServeMux()
	mux.Handle(ib.Path(), ib)
	// The MCP endpoint lives next to the inbox on the same mux and takes client tokens;
	// a stand-in shows the two never mix.
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+clientToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		}
	})
	var srv *httptest.Server
	if fo.tls {
		srv = httptest.NewTLSServer(mux)
	} else {
		srv = httptest.NewServer(mux)
	}
	t.Cleanup(srv.Close)
	t.Cleanup(func() { ib.Close() }) // runs first: ends event streams so srv.Close does not wait
	return &fixture{t: t, st: st, ib: ib, srv: srv, base: srv.URL + ib.Path()}
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// client returns an HTTP client with its own cookie jar that does not follow
// redirects, so tests see every 303.
func (f *fixture) client() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		f.t.Fatal(err)
	}
	c := *f.srv.Client() // a copy: the server's client is shared
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// do sends a request and returns the response with its body read.
func (f *fixture) do(c *http.Client, method, path string, form url.Values, hdr http.Header) (*http.Response, string) {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	u := path
	if !strings.HasPrefix(u, "http") {
		u = f.srv.URL + path
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp, string(b)
}

func (f *fixture) get(c *http.Client, path string) (*http.Response, string) {
	f.t.Helper()
	return f.do(c, http.MethodGet, path, nil, nil)
}

func (f *fixture) post(c *http.Client, path string, form url.Values) (*http.Response, string) {
	f.t.Helper()
	return f.do(c, http.MethodPost, path, form, nil)
}

// login signs c in with token and returns the response to the login POST.
func (f *fixture) login(c *http.Client, token string) *http.Response {
	f.t.Helper()
	resp, _ := f.post(c, "/ui/login", url.Values{"token": {token}, "next": {"/ui/pending"}})
	return resp
}

// signedIn returns a client signed in as the operator, and its CSRF token.
func (f *fixture) signedIn() (*http.Client, string) {
	f.t.Helper()
	c := f.client()
	if resp := f.login(c, operatorToken); resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("login: status %d, want 303", resp.StatusCode)
	}
	resp, body := f.get(c, "/ui/pending")
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET /ui/pending after login: status %d", resp.StatusCode)
	}
	return c, csrfFrom(f.t, body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfFrom(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in page:\n%s", body)
	}
	return m[1]
}

// pendingSpec describes a pending decision to create.
type pendingSpec struct {
	kind     warden.DecisionKind
	question string
	tool     string
	args     string
	session  string
	expires  time.Time
	evidence *warden.Evidence
}

// createPending stores a pending decision the way the gateway does: the store row
// plus the warden.PendingDecision JSON in Decision.
func createPending(t *testing.T, st store.Store, s pendingSpec) store.Pending {
	t.Helper()
	if s.kind == "" {
		s.kind = warden.KindAsk
	}
	if s.question == "" {
		s.question = "Allow reading the deploy key?"
	}
	if s.tool == "" {
		s.tool = "fs_read"
	}
	if s.args == "" {
		s.args = `{"path":"/srv/deploy/id_ed25519","lines":20}`
	}
	if s.expires.IsZero() {
		s.expires = time.Now().Add(10 * time.Minute)
	}
	args, err := warden.ParseArgs([]byte(s.args))
	if err != nil {
		t.Fatalf("args: %v", err)
	}
	id := warden.Identity{Tenant: "acme", Principal: "agent-7"}
	pd := warden.PendingDecision{
		Kind: s.kind, Question: s.question, Tool: s.tool, Args: args, Digest: args.Digest(),
		Revision: "rev-42", Identity: id, Session: s.session, CallID: "call-" + s.tool,
		Evidence: s.evidence, Created: time.Now().UTC(), Original: args,
	}
	raw, err := json.Marshal(pd)
	if err != nil {
		t.Fatal(err)
	}
	argsJSON, _ := args.MarshalJSON()
	var ev json.RawMessage
	if s.evidence != nil {
		ev, _ = json.Marshal(s.evidence)
	}
	p, err := st.CreatePending(context.Background(), store.Pending{
		Kind: s.kind, Question: s.question, Tool: s.tool, Args: argsJSON, Digest: pd.Digest,
		Evidence: ev, Identity: id, Session: s.session, Revision: pd.Revision,
		Expires: s.expires, Decision: raw,
	})
	if err != nil {
		t.Fatalf("CreatePending: %v", err)
	}
	return p
}

func getPending(t *testing.T, st store.Store, id string) store.Pending {
	t.Helper()
	p, err := st.GetPending(context.Background(), id)
	if err != nil {
		t.Fatalf("GetPending(%s): %v", id, err)
	}
	return p
}

// waitDecided waits, with the store's own decision notification (WaitDecision), until
// the decision leaves the pending state or within passes, and returns it as stored.
func waitDecided(t *testing.T, st store.Store, id string, within time.Duration) store.Pending {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if p, err := st.WaitDecision(ctx, id); err == nil {
		return p
	}
	// Expired, unknown or not decided in time: the caller's checks report the state.
	return getPending(t, st, id)
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
