// Sign-in, sessions, CSRF tokens and the failed-sign-in limit.

package inbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/clientaddr"
	"github.com/wardenhq/warden/store"
)

const (
	cookieName             = "warden_inbox"
	loginFailuresPerMinute = 10
	maxFormBytes           = 64 << 10
	sessionIDBytes         = 32
)

// flash is a one-time message shown on the next page an operator sees.
type flash struct {
	Kind string // "ok", "error" or "info"
	Text string
}

// session is one signed-in operator. Handlers get a copy.
type session struct {
	key       [sha256.Size]byte // SHA-256 of the cookie value: the store's key
	tokenHash string            // the operator token hash it signed in with
	Operator  string
	CSRF      string
	Expires   time.Time
}

// sessionPrefix prefixes the store checkpoint of each session, followed by the hex
// SHA-256 of its cookie value.
const sessionPrefix = "warden.inbox.session:"

// sessionRecord is a session as the store keeps it. A signed-out (or otherwise
// ended) session is kept as a record with Ended set and nothing else.
type sessionRecord struct {
	Operator  string    `json:"operator,omitempty"`
	TokenHash string    `json:"token_hash,omitempty"`
	CSRF      string    `json:"csrf,omitempty"`
	Expires   time.Time `json:"expires,omitzero"`
	Ended     bool      `json:"ended,omitempty"`
}

// sessions is the session table. Sessions live in the store (as checkpoints keyed by
// the hash of the cookie value, so the store never holds a usable cookie), so a sign-in
// survives a restart and holds on every replica sharing the store, and a sign-out on
// one replica ends the session on all of them: every request reads its session from
// the store. A store that cannot be read signs nobody in.
//
// What stays in this process: the flash messages (a one-time notice on the next page,
// shown by the replica that set it) and the sessions this process started or served,
// so that an operator change ends them in the store too (every replica also checks the
// operator on every request).
type sessions struct {
	st  store.Store
	log *slog.Logger
	ttl time.Duration // how long a sign-in lasts (Options.SessionTTL)

	mu         sync.Mutex
	seen       map[[sha256.Size]byte]*localSession // guarded by mu
	lastSweep  time.Time                           // guarded by mu
	storeSwept time.Time                           // guarded by mu; the last sweep of the store
	sweeping   bool                                // guarded by mu
	// afterSweep, when set (by tests, before the first request), is told of every
	// background sweep's result once it ended.
	afterSweep func(n int, err error)
}

// The store keeps a record per sign-in; records of sessions that ended or expired
// are deleted by a sweep that a request starts (in the background) at most every
// sessionSweepInterval: the records last written more than the session lifetime plus
// sessionSweepMargin ago, which are all expired (a record is written at sign-in and
// at sign-out, and a session lasts the lifetime from its sign-in). The margin covers
// replicas whose clocks disagree. Replicas sharing a store should have the same
// lifetime: one with a shorter lifetime signs out the other's older sessions.
const (
	sessionSweepInterval = 10 * time.Minute
	sessionSweepMargin   = time.Hour
)

// localSession is what this process keeps of a session.
type localSession struct {
	session
	flash *flash
}

func newSessions(st store.Store, log *slog.Logger, ttl time.Duration) *sessions {
	return &sessions{st: st, log: log, ttl: ttl, seen: make(map[[sha256.Size]byte]*localSession)}
}

// sweepStore deletes the store's records of sessions that ended or expired before
// now (see sessionSweepInterval) and returns how many.
func (s *sessions) sweepStore(ctx context.Context, now time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.st.DeleteCheckpoints(ctx, sessionPrefix, now.Add(-s.ttl-sessionSweepMargin))
}

// maybeSweepStore starts a sweep of the store in the background when the last one is
// sessionSweepInterval old (the first one interval after the first request) and none
// is running. Called with mu held.
func (s *sessions) maybeSweepStore(now time.Time) {
	switch {
	case s.storeSwept.IsZero():
		s.storeSwept = now
		return
	case s.sweeping || now.Sub(s.storeSwept) < sessionSweepInterval:
		return
	}
	s.storeSwept, s.sweeping = now, true
	go func() {
		n, err := s.sweepStore(context.Background(), now)
		switch {
		case err != nil:
			s.log.Warn("inbox: could not delete ended sessions from the store; trying again later", "err", err)
		case n > 0:
			s.log.Debug("inbox: deleted ended sessions from the store", "count", n)
		}
		s.mu.Lock()
		s.sweeping = false
		s.mu.Unlock()
		if s.afterSweep != nil {
			s.afterSweep(n, err)
		}
	}()
}

func randomToken() string {
	b := make([]byte, sessionIDBytes)
	rand.Read(b) // never fails (crypto/rand panics on broken entropy sources)
	return base64.RawURLEncoding.EncodeToString(b)
}

func sessionID(key [sha256.Size]byte) string { return sessionPrefix + hex.EncodeToString(key[:]) }

// create starts a session for op and returns its cookie value. It fails when the
// store does not take the session: then nobody is signed in.
func (s *sessions) create(ctx context.Context, op Operator, now, expires time.Time) (string, session, error) {
	id := randomToken()
	ss := session{key: sha256.Sum256([]byte(id)), tokenHash: op.TokenHash, Operator: op.Name, CSRF: randomToken(), Expires: expires}
	rec, err := json.Marshal(sessionRecord{Operator: ss.Operator, TokenHash: ss.tokenHash, CSRF: ss.CSRF, Expires: ss.Expires})
	if err != nil {
		return "", session{}, err
	}
	if err := s.st.PutCheckpoint(ctx, sessionID(ss.key), rec); err != nil {
		return "", session{}, fmt.Errorf("recording the session in the store: %w", err)
	}
	s.remember(ss, now)
	return id, ss, nil
}

// remember keeps ss in this process's table, dropping expired entries once a minute.
func (s *sessions) remember(ss session, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastSweep) > time.Minute {
		s.lastSweep = now
		for k, v := range s.seen {
			if !now.Before(v.Expires) {
				delete(s.seen, k)
			}
		}
	}
	if _, ok := s.seen[ss.key]; !ok {
		s.seen[ss.key] = &localSession{session: ss}
	}
}

// get returns the live session for a cookie value, read from the store: not there,
// ended, expired or unreadable is not signed in.
func (s *sessions) get(ctx context.Context, id string, now time.Time) (session, bool) {
	if id == "" || len(id) > 128 {
		return session{}, false
	}
	ss, ok := s.load(ctx, sha256.Sum256([]byte(id)), now)
	if ok {
		s.remember(ss, now)
	}
	s.mu.Lock()
	s.maybeSweepStore(now)
	s.mu.Unlock()
	return ss, ok
}

// alive reports whether the session with this key is in the store, not ended and
// not expired.
func (s *sessions) alive(ctx context.Context, key [sha256.Size]byte, now time.Time) bool {
	_, ok := s.load(ctx, key, now)
	return ok
}

func (s *sessions) load(ctx context.Context, key [sha256.Size]byte, now time.Time) (session, bool) {
	data, err := s.st.GetCheckpoint(ctx, sessionID(key))
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.log.Error("inbox: reading a session from the store failed; treating it as signed out", "err", err)
		}
		return session{}, false
	}
	var rec sessionRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		s.log.Error("inbox: a session in the store is not readable; treating it as signed out", "err", err)
		return session{}, false
	}
	if rec.Ended || rec.Operator == "" || rec.TokenHash == "" || rec.CSRF == "" || !now.Before(rec.Expires) {
		return session{}, false
	}
	return session{key: key, tokenHash: rec.TokenHash, Operator: rec.Operator, CSRF: rec.CSRF, Expires: rec.Expires}, true
}

// end ends the session with this key in the store (on every replica) and here.
func (s *sessions) end(ctx context.Context, key [sha256.Size]byte) error {
	s.mu.Lock()
	delete(s.seen, key)
	s.mu.Unlock()
	if err := s.st.PutCheckpoint(ctx, sessionID(key), []byte(`{"ended":true}`)); err != nil {
		return fmt.Errorf("ending the session in the store: %w", err)
	}
	return nil
}

// retain ends every session this process knows for which keep returns false and
// returns how many.
func (s *sessions) retain(ctx context.Context, keep func(*session) bool) int {
	s.mu.Lock()
	var drop [][sha256.Size]byte
	for k, ss := range s.seen {
		if !keep(&ss.session) {
			drop = append(drop, k)
		}
	}
	s.mu.Unlock()
	for _, k := range drop {
		if err := s.end(ctx, k); err != nil {
			// The session's operator is checked on every request too, so it cannot
			// be used; the record stays until it expires.
			s.log.Error("inbox: ending a removed operator's session in the store failed", "err", err)
		}
	}
	return len(drop)
}

func (s *sessions) setFlash(key [sha256.Size]byte, f flash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.seen[key]; ok {
		ss.flash = &f
	}
}

func (s *sessions) takeFlash(key [sha256.Size]byte) *flash {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.seen[key]
	if !ok {
		return nil
	}
	f := ss.flash
	ss.flash = nil
	return f
}

// limiter counts failed sign-ins per client address (behind any trusted proxies) in
// fixed windows.
type limiter struct {
	max    int
	window time.Duration

	mu sync.Mutex
	m  map[string]*bucket // guarded by mu
}

type bucket struct {
	start time.Time
	n     int
}

func newLimiter(max int, window time.Duration) *limiter {
	return &limiter{max: max, window: window, m: make(map[string]*bucket)}
}

// blocked reports whether host used up its failures in the current window.
func (l *limiter) blocked(host string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[host]
	return ok && now.Sub(b.start) < l.window && b.n >= l.max
}

// fail counts one failed sign-in from host.
func (l *limiter) fail(host string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) > 10000 {
		for k, b := range l.m {
			if now.Sub(b.start) >= l.window {
				delete(l.m, k)
			}
		}
	}
	b, ok := l.m[host]
	if !ok || now.Sub(b.start) >= l.window {
		b = &bucket{start: now}
		l.m[host] = b
	}
	b.n++
}

// remoteAttrs are the log attributes naming a client: its address, and the trusted
// proxy it came through when there was one.
func remoteAttrs(c clientaddr.Client) []any {
	if c.Proxy == "" {
		return []any{"remote", c.Host}
	}
	return []any{"remote", c.Host, "proxy", c.Proxy}
}

// operatorFor returns the operator whose hash is the token's. Every configured hash is
// compared, in constant time, whatever matches.
func (ib *Inbox) operatorFor(token string) (Operator, bool) {
	if token == "" {
		return Operator{}, false
	}
	h := []byte(HashToken(token))
	ops := ib.ops.Load().list
	found := -1
	for i, op := range ops {
		if subtle.ConstantTimeCompare(h, []byte(op.TokenHash)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Operator{}, false
	}
	return ops[found], true
}

// currentSession returns the session named by r's cookie, if it is live and its
// operator is still configured with the token it signed in with. A session whose
// operator was removed (or whose token changed) is ended here, so a sign-in that
// raced with SetOperators cannot outlive it.
func (ib *Inbox) currentSession(r *http.Request) (session, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, false
	}
	s, ok := ib.sessions.get(r.Context(), c.Value, ib.now())
	if !ok {
		return session{}, false
	}
	if !ib.ops.Load().valid(s.tokenHash, s.Operator) {
		if err := ib.sessions.end(context.WithoutCancel(r.Context()), s.key); err != nil {
			ib.log.Error("inbox: ending a removed operator's session in the store failed", "err", err)
		}
		return session{}, false
	}
	return s, true
}

// sessionLive reports whether s has not ended: not signed out, not expired, and its
// operator still configured with its token.
func (ib *Inbox) sessionLive(ctx context.Context, s session) bool {
	return ib.ops.Load().valid(s.tokenHash, s.Operator) && ib.sessions.alive(ctx, s.key, ib.now())
}

// safeNext returns where to go after signing in: next when it is a local path under
// the inbox's prefix (and not the login page), else the pending page. It never returns
// a URL with a scheme or host, so the login form cannot redirect elsewhere.
func (ib *Inbox) safeNext(next string) string {
	def := ib.path + "pending"
	if next == "" || !strings.HasPrefix(next, ib.path) || strings.ContainsAny(next, "\\\x00\r\n\t") {
		return def
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return def
	}
	clean := path.Clean(u.Path)
	if !strings.HasPrefix(clean+"/", ib.path) || clean == ib.path+"login" || clean == ib.path+"logout" ||
		clean == ib.path+"events" || strings.HasPrefix(clean, ib.path+"static/") {
		return def
	}
	out := &url.URL{Path: clean, RawQuery: u.RawQuery}
	if strings.HasSuffix(u.Path, "/") && !strings.HasSuffix(clean, "/") {
		out.Path += "/"
	}
	return out.String()
}

// sessionHandler is a handler that runs for a signed-in operator.
type sessionHandler func(w http.ResponseWriter, r *http.Request, s session)

// authed wraps h so that it only runs for a signed-in operator. Without a session a
// GET or HEAD is redirected (303) to the login page, keeping the wanted path in
// "next", and anything else is refused with 403 before the body is read. For a
// non-safe method the form must carry the session's CSRF token, or the request is
// refused with 403: fail closed, nothing is done.
func (ib *Inbox) authed(h sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := ib.currentSession(r)
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead
		if !ok {
			if safe {
				q := url.Values{"next": {r.URL.RequestURI()}}
				if _, err := r.Cookie(cookieName); err == nil {
					q.Set("expired", "1")
				}
				http.Redirect(w, r, ib.path+"login?"+q.Encode(), http.StatusSeeOther)
				return
			}
			ib.renderError(w, r, nil, http.StatusForbidden, "Not signed in",
				"Your session has ended or you never signed in. Nothing was changed.")
			return
		}
		if !safe {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				ib.renderError(w, r, &s, http.StatusBadRequest, "Bad form", "The form could not be read. Nothing was changed.")
				return
			}
			got := r.PostForm.Get("csrf")
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) != 1 {
				ib.log.Warn("inbox: form without a valid CSRF token refused", "operator", s.Operator, "path", r.URL.Path)
				ib.renderError(w, r, &s, http.StatusForbidden, "Form refused",
					"This form was stale or did not come from your session. Nothing was changed. Reload the page and try again.")
				return
			}
		}
		h(w, r, s)
	}
}

// authedStream is authed for the event stream: without a session it answers 401 in
// plain text (an EventSource cannot follow a redirect to a login page).
func (ib *Inbox) authedStream(h sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := ib.currentSession(r)
		if !ok {
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		h(w, r, s)
	}
}

type loginData struct {
	Next   string
	Error  string
	Notice string
}

func (ib *Inbox) loginPage(w http.ResponseWriter, r *http.Request) {
	next := ib.safeNext(r.URL.Query().Get("next"))
	if _, ok := ib.currentSession(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	d := loginData{Next: next}
	switch {
	case r.URL.Query().Get("signedout") != "":
		d.Notice = "You have signed out."
	case r.URL.Query().Get("expired") != "":
		d.Notice = "Your session has ended. Sign in again."
	}
	ib.render(w, r, http.StatusOK, "login", &page{Title: "Sign in", Data: d})
}

func (ib *Inbox) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		ib.render(w, r, http.StatusBadRequest, "login", &page{Title: "Sign in", Data: loginData{
			Next: ib.path + "pending", Error: "The form could not be read."}})
		return
	}
	next := ib.safeNext(r.PostForm.Get("next"))
	// The client behind any trusted proxies: the limit counts it, not the proxy.
	client := ib.clients.Resolve(r)
	host := client.Host
	now := ib.now()
	if ib.limiter.blocked(host, now) {
		ib.log.Warn("inbox: sign-in refused: too many failures", remoteAttrs(client)...)
		ib.render(w, r, http.StatusTooManyRequests, "login", &page{Title: "Sign in", Data: loginData{
			Next: next, Error: "Too many failed sign-ins from your address. Wait a minute and try again."}})
		return
	}
	op, ok := ib.operatorFor(r.PostForm.Get("token"))
	if !ok {
		ib.limiter.fail(host, now)
		ib.log.Warn("inbox: sign-in with an unknown token", remoteAttrs(client)...)
		// A constant pause after every failure slows guessing; it is the same whatever
		// the token was, so it tells nothing about it.
		t := time.NewTimer(ib.failDelay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
		ib.render(w, r, http.StatusUnauthorized, "login", &page{Title: "Sign in", Data: loginData{
			Next: next, Error: "That token is not an operator token for this inbox."}})
		return
	}
	if old, ok := ib.currentSession(r); ok {
		if err := ib.sessions.end(context.WithoutCancel(r.Context()), old.key); err != nil {
			ib.log.Error("inbox: sign-in could not end the previous session", "operator", op.Name, "err", err)
			ib.render(w, r, http.StatusInternalServerError, "login", &page{Title: "Sign in", Data: loginData{
				Next: next, Error: "Signing in failed: the store could not record it. Nobody was signed in; try again, and see the gateway's log."}})
			return
		}
	}
	expires := now.Add(ib.ttl)
	id, _, err := ib.sessions.create(context.WithoutCancel(r.Context()), op, now, expires)
	if err != nil {
		ib.log.Error("inbox: sign-in could not be recorded", "operator", op.Name, "err", err)
		ib.render(w, r, http.StatusInternalServerError, "login", &page{Title: "Sign in", Data: loginData{
			Next: next, Error: "Signing in failed: the store could not record it. Nobody was signed in; try again, and see the gateway's log."}})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    id,
		Path:     ib.path,
		Expires:  expires,
		MaxAge:   int(ib.ttl / time.Second),
		HttpOnly: true,
		Secure:   client.Secure,
		SameSite: http.SameSiteStrictMode,
	})
	ib.log.Info("inbox: operator signed in", append([]any{"operator", op.Name}, remoteAttrs(client)...)...)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (ib *Inbox) logout(w http.ResponseWriter, r *http.Request, s session) {
	if err := ib.sessions.end(context.WithoutCancel(r.Context()), s.key); err != nil {
		// The cookie is cleared below all the same; the session itself stays valid
		// until it expires, so say so.
		ib.log.Error("inbox: sign-out could not be recorded: the session stays valid until it expires", "operator", s.Operator, "err", err, "expires", s.Expires)
		ib.renderError(w, r, &s, http.StatusInternalServerError, "Sign-out failed", "Signing out failed: the store could not record it, so the session stays valid until it expires. Try again, and see the gateway's log.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    "",
		Path:     ib.path,
		MaxAge:   -1,
		HttpOnly: true,
		Secure:   ib.clients.Resolve(r).Secure,
		SameSite: http.SameSiteStrictMode,
	})
	ib.log.Info("inbox: operator signed out", "operator", s.Operator)
	http.Redirect(w, r, ib.path+"login?signedout=1", http.StatusSeeOther)
}
