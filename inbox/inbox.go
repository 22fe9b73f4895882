// Package inbox is Warden's operator web inbox: the pages where a person decides the
// pending human decisions of the gateway, reads the audit log and approves changed
// tool definitions.
//
// An [Inbox] is an [http.Handler] for everything under one path prefix (default
// "/ui/"). The caller mounts it on its own mux:
//
//	ib, err := inbox.New(st, ops, nil)
//	if err != nil { ... }
//	defer ib.Close()
//	mux.Handle(ib.Path(), ib)
//
// The pages are server-rendered with html/template and work without JavaScript: every
// action is a plain HTML form. A small embedded script adds live updates (the pending
// list grows as decisions arrive, over server-sent events) and nothing else.
//
// # Who may use it
//
// Only operators. An operator is a name and the hash of a secret token ([HashToken]);
// the inbox knows nothing else, so a token issued to an agent or an MCP client can
// never sign in or decide. [Inbox.SetOperators] changes the operators at once (on a
// configuration reload): a removed operator, or one whose token changed, is signed out
// immediately and the old token no longer signs in. An operator exchanges the token at the login form for a
// session cookie (HttpOnly, SameSite=Strict, Secure when the request came over TLS)
// that expires after Options.SessionTTL. (Secure is set when the request reached this
// process over TLS, or came straight from one of Options.TrustedProxies with
// X-Forwarded-Proto: https; behind any other proxy that terminates TLS the cookie is
// not marked Secure.) The decisions an operator makes are recorded under the
// operator's name.
//
// Sessions live in the store: a sign-in survives a restart and holds on every replica
// sharing the store, and signing out on one replica ends it on all (each request reads
// its session from the store; one that cannot be read is not signed in). Only flash
// notices stay in the process that set them.
//
// # Defences
//
//   - Every state change is a POST that must pass [http.CrossOriginProtection] and carry
//     the session's own CSRF token; an unauthenticated POST is refused with 403 and does
//     nothing.
//   - Every response carries a strict Content-Security-Policy (no inline script or
//     style; see [ContentSecurityPolicy]), X-Content-Type-Options: nosniff,
//     Referrer-Policy: no-referrer and X-Frame-Options: DENY; pages are not cached.
//   - All output is escaped by html/template, including arguments, questions and tool
//     definitions written by agents or upstream servers.
//   - What is shown is what runs. Every string written by an agent, a client or an
//     upstream server (arguments, questions, tool names, principals, rule IDs, event
//     fields, pin diffs) is shown through internal/display: control characters, bidi
//     controls (U+202E and friends), zero-width and other invisible characters are
//     shown as \u202e-style escapes, each marked (class "esc", with the character's
//     name as its title) so it cannot pass for text that reads the same. Spaces and
//     line breaks are kept, long values wrap (never a sideways scroll), and the cards
//     show the full arguments digest. The pending list shows a long argument list as
//     its head and tail around a marker that says how much it leaves out, and such a
//     card is decided only on the call's own page (GET {path}pending/{id}), which
//     shows every character.
//   - A wrong token gets one generic message after a constant delay, and failed sign-ins
//     are limited per remote address (10 a minute). The address is the TCP peer, or,
//     when the peer is one of Options.TrustedProxies, the client its X-Forwarded-For
//     names (see internal/clientaddr); the forwarding headers of any other peer are
//     ignored, so a client cannot leave its budget by sending them. Behind a proxy
//     that is not listed every operator shares the proxy's budget.
//   - The login form only redirects to paths under the inbox's own prefix.
package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/clientaddr"
	"github.com/wardenhq/warden/store"
)

// DefaultPath is the prefix an Inbox serves when Options.Path is empty.
const DefaultPath = "/ui/"

// DefaultSessionTTL is how long an operator stays signed in when Options.SessionTTL
// is zero. Sessions never outlive the process.
const DefaultSessionTTL = 8 * time.Hour

// ContentSecurityPolicy is the Content-Security-Policy header value sent with every
// response of an Inbox: nothing but the inbox's own script, stylesheet and images,
// no inline code, no framing, forms only to itself.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// hashPrefix starts every operator token hash.
const hashPrefix = "sha256:"

// HashToken returns the form in which a token is configured: "sha256:" followed by the
// lower-case hex SHA-256 of the token. The gateway file holds the tokens of its
// clients and operators in this form. The inbox compares hashes in constant time and
// never keeps the token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hashPrefix + hex.EncodeToString(sum[:])
}

// Operator is a person allowed to use the inbox. Name is shown in the pages and
// recorded as the decider (store.Verdict.By, store.Pin.ApprovedBy); TokenHash is
// [HashToken] of the operator's secret token. Several operators may share a name
// (for example an old and a new token during a rotation) but never a hash.
type Operator struct {
	Name      string
	TokenHash string
}

// Options configure an Inbox; nil, or the zero value of a field, means its default.
// New copies the struct, so changing it afterwards has no effect.
type Options struct {
	// Path is the prefix the inbox serves, starting and ending with "/". Default
	// [DefaultPath].
	Path string
	// SessionTTL is how long a sign-in lasts, counted from the sign-in (not extended
	// by use). Default [DefaultSessionTTL].
	SessionTTL time.Duration
	// Events, when set, returns the events recorded for a call ID; the audit detail
	// page shows them. When nil the page says that events are not kept.
	Events func(callID string) []warden.Event
	// Logger receives operator-facing messages (store failures, sign-ins, decisions).
	// Default: discard.
	Logger *slog.Logger
	// Now is the clock used for sessions, rate limits and relative times. Default
	// time.Now. (Expiry of pending decisions is judged by the store.)
	Now func() time.Time
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto headers are believed, when the request comes straight from
	// one of them: the sign-in limit and the log then count the client they name, and
	// the session cookie is Secure when the client's connection was HTTPS. From any
	// other peer the headers are ignored. None (the default): the client is always
	// the peer, and the cookie is Secure only over TLS.
	TrustedProxies []netip.Prefix
}

// Inbox serves the operator web inbox. It is safe for concurrent use. Build one with
// [New]; the zero value is not usable. Call [Inbox.Close] when done.
type Inbox struct {
	// Set by New, read-only afterwards.
	store     store.Store
	path      string
	ttl       time.Duration
	events    func(string) []warden.Event
	log       *slog.Logger
	now       func() time.Time
	pages     map[string]*template.Template
	static    map[string]staticFile
	handler   http.Handler
	failDelay time.Duration // constant delay after a failed sign-in
	clients   *clientaddr.Resolver

	// ops is the operator set in force; SetOperators replaces it whole. An atomic
	// pointer so that sign-in and every request read one consistent set without a lock.
	ops atomic.Pointer[operatorSet]

	sessions *sessions
	limiter  *limiter
	hub      *hub

	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

// New checks its arguments and returns an Inbox on st (the pending decisions, the audit
// log and the tool pins) that ops may sign in to; opts may be nil. It does no I/O. It
// returns an error, and no Inbox, when st is nil, there is no operator (without one the
// inbox must stay off), an operator has an empty or untrimmed name or a hash that is
// not "sha256:" and 64 lower-case hex digits, two operators share a hash, Path does not
// start and end with "/" (or is not clean), SessionTTL is negative, or a trusted proxy
// prefix is invalid, has bits set past its length or is a /0.
func New(st store.Store, ops []Operator, opts *Options) (*Inbox, error) {
	if st == nil {
		return nil, errors.New("inbox: no store")
	}
	if len(ops) == 0 {
		return nil, errors.New("inbox: no operator configured (the inbox stays off without one)")
	}
	set, err := newOperatorSet(ops)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if err := checkPath(o.Path); err != nil {
		return nil, fmt.Errorf("inbox: path %q: %w", o.Path, err)
	}
	switch {
	case o.SessionTTL < 0:
		return nil, fmt.Errorf("inbox: negative session TTL %v", o.SessionTTL)
	case o.SessionTTL == 0:
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	clients, err := clientaddr.New(o.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	ib := &Inbox{
		store:     st,
		path:      o.Path,
		ttl:       o.SessionTTL,
		events:    o.Events,
		log:       o.Logger,
		now:       o.Now,
		static:    loadStatic(),
		failDelay: 300 * time.Millisecond,
		clients:   clients,
		sessions:  newSessions(st, o.Logger, o.SessionTTL),
		limiter:   newLimiter(loginFailuresPerMinute, time.Minute),
		done:      make(chan struct{}),
	}
	ib.ops.Store(set)
	pages, err := ib.parsePages()
	if err != nil {
		return nil, err
	}
	ib.pages = pages
	ib.hub = newHub(ib.pendingState, pollInterval, ib.done, ib.log)
	ib.handler = ib.routes()
	return ib, nil
}

// operatorSet is the operators in force. It is never changed after it is built:
// SetOperators swaps in a new one and closes the old one's changed channel.
type operatorSet struct {
	list    []Operator
	byHash  map[string]string // token hash -> operator name
	changed chan struct{}     // closed when this set is replaced
}

// newOperatorSet checks ops (see New) and returns them as a set; an empty list gives
// an empty set, with which nobody can sign in.
func newOperatorSet(ops []Operator) (*operatorSet, error) {
	set := &operatorSet{list: make([]Operator, len(ops)), byHash: make(map[string]string, len(ops)), changed: make(chan struct{})}
	for i, op := range ops {
		if err := checkOperator(op); err != nil {
			return nil, fmt.Errorf("inbox: operator %d: %w", i+1, err)
		}
		if _, dup := set.byHash[op.TokenHash]; dup {
			return nil, fmt.Errorf("inbox: operator %d (%q): the same token hash is configured twice", i+1, op.Name)
		}
		set.byHash[op.TokenHash] = op.Name
		set.list[i] = op
	}
	return set, nil
}

// SetOperators replaces the operators who may use the inbox, at once: from its return
// on, only a token in ops signs in, and every session signed in with a token that is
// no longer configured, or that is now configured under another name, has ended
// (its next request is sent to the login page, its event stream is told it signed
// out). Sessions of operators whose name and token are unchanged go on. An empty
// list leaves nobody able to sign in. The operators are checked as New checks them;
// when they are not valid, SetOperators fails closed: it installs no operator at all,
// ends every session, and returns the error. It is safe for concurrent use, and is
// meant for a configuration reload.
//
// A request already past its session check when SetOperators runs (for example a
// decision being recorded) completes; every request that starts afterwards is
// checked against the new operators.
func (ib *Inbox) SetOperators(ops []Operator) error {
	set, err := newOperatorSet(ops)
	if err != nil {
		set, _ = newOperatorSet(nil) // fail closed: nobody signs in until a valid list arrives
	}
	old := ib.ops.Swap(set)
	ended := ib.sessions.retain(context.Background(), func(ss *session) bool { return set.valid(ss.tokenHash, ss.Operator) })
	close(old.changed)
	if err != nil {
		ib.log.Error("inbox: the new operator list is not valid; nobody can sign in until it is fixed", "err", err, "sessions_ended", ended)
		return err
	}
	ib.log.Info("inbox: operators updated", "operators", len(set.list), "sessions_ended", ended)
	return nil
}

// valid reports whether a session signed in with this token hash as name still may.
func (s *operatorSet) valid(tokenHash, name string) bool {
	got, ok := s.byHash[tokenHash]
	return ok && got == name
}

func checkOperator(op Operator) error {
	if strings.TrimSpace(op.Name) == "" {
		return errors.New("empty name")
	}
	if strings.TrimSpace(op.Name) != op.Name {
		return fmt.Errorf("name %q has leading or trailing space", op.Name)
	}
	for _, r := range op.Name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("name %q has a control character", op.Name)
		}
	}
	h, ok := strings.CutPrefix(op.TokenHash, hashPrefix)
	if !ok || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return fmt.Errorf("%q: token hash must be \"sha256:\" and 64 lower-case hex digits (see HashToken)", op.Name)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return fmt.Errorf("%q: token hash must be \"sha256:\" and 64 lower-case hex digits (see HashToken)", op.Name)
	}
	return nil
}

func checkPath(p string) error {
	if !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/") {
		return errors.New("must start and end with \"/\"")
	}
	if strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") {
		return errors.New("must be a clean path")
	}
	for _, r := range p {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-_.~", r)
		if !ok {
			return fmt.Errorf("character %q not allowed (letters, digits and /-_.~ only)", r)
		}
	}
	return nil
}

// Path returns the prefix the inbox serves, such as "/ui/": mount the Inbox there.
func (ib *Inbox) Path() string { return ib.path }

// ServeHTTP serves every page, form action, event stream and static file under the
// inbox's path. Requests outside the path get 404. Every response carries the
// security headers described in the package documentation.
func (ib *Inbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	ib.handler.ServeHTTP(w, r)
}

// Close stops the pending-set poller and ends every open event stream. Pages and forms
// keep working after Close (they only need the store), but new event streams end at
// once. Close does not close the store. It is safe to call more than once.
func (ib *Inbox) Close() error {
	ib.closeOnce.Do(func() {
		close(ib.done)
		ib.hub.close()
	})
	return nil
}

// routes builds the handler behind ServeHTTP: the cross-origin check first (it refuses
// every non-safe cross-origin browser request before anything else looks at it), then
// the mux; each route checks the session itself.
func (ib *Inbox) routes() http.Handler {
	p := ib.path
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+p+"{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, p+"pending", http.StatusSeeOther)
	})
	mux.HandleFunc("GET "+p+"static/{name}", ib.serveStatic)
	mux.HandleFunc("GET "+p+"login", ib.loginPage)
	mux.HandleFunc("POST "+p+"login", ib.login)
	mux.HandleFunc("POST "+p+"logout", ib.authed(ib.logout))
	mux.HandleFunc("GET "+p+"pending", ib.authed(ib.pendingPage))
	mux.HandleFunc("GET "+p+"pending/list", ib.authed(ib.pendingFragment))
	mux.HandleFunc("GET "+p+"pending/{id}", ib.authed(ib.pendingOne))
	mux.HandleFunc("POST "+p+"pending/{id}/decide", ib.authed(ib.decide))
	mux.HandleFunc("GET "+p+"events", ib.authedStream(ib.stream))
	mux.HandleFunc("GET "+p+"audit", ib.authed(ib.auditPage))
	mux.HandleFunc("GET "+p+"audit/{seq}", ib.authed(ib.auditSeq))
	mux.HandleFunc("GET "+p+"audit/call/{id}", ib.authed(ib.auditCall))
	mux.HandleFunc("GET "+p+"pins", ib.authed(ib.pinsPage))
	mux.HandleFunc("POST "+p+"pins/approve", ib.authed(ib.approvePin))
	mux.HandleFunc("GET "+p, ib.authed(ib.notFound))

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ib.log.Warn("inbox: cross-origin request refused", "method", r.Method, "path", r.URL.Path,
			"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		ib.renderError(w, r, nil, http.StatusForbidden, "Request refused",
			"This form was sent from another site. Nothing was changed. Open the inbox directly and try again.")
	}))
	return cop.Handler(mux)
}
