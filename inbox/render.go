// Templates, the data every page gets, formatting helpers and the embedded static
// files.

package inbox

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/*
var staticFS embed.FS

// pageNames are the templates rendered inside the layout.
var pageNames = []string{"login", "pending", "call", "audit", "detail", "pins", "error"}

// page is what every template gets.
type page struct {
	Title        string
	Nav          string // the active nav entry: "pending", "audit" or "pins"
	Base         string // the inbox path, ending in "/"
	Operator     string // "" on the login and error pages without a session
	CSRF         string
	PendingCount int // -1 when the store could not be read
	Flash        *flash
	Data         any
}

// parsePages parses every page with the layout and the shared partials. The helper
// functions that need the inbox (its clock, its path) are bound per Inbox.
func (ib *Inbox) parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"rel":       func(t time.Time) string { return relTime(ib.now(), t) },
		"abs":       absTime,
		"iso":       isoTime,
		"pretty":    prettyJSON,
		"short":     shortHash,
		"asset":     ib.assetURL,
		"status":    statusClass,
		"diff":      diffLines,
		"dur":       formatDuration,
		"kindLabel": kindLabel,
		// Untrusted text (written by agents, clients, upstream servers) goes through
		// one of these, never straight into the page: see internal/display.
		"show": func(s string) template.HTML { return display.Line(s).HTML() },
		"lines": func(s string) template.HTML {
			return `<span class="lines">` + display.Block(s).HTML() + `</span>`
		},
		"plain": func(s string) string { return display.Line(s).String() },
		"shown": func(s display.Shown) template.HTML { return s.HTML() },
		"num":   formatCount,
		"cardOf": func(p *page, v pendingView) cardData {
			return cardData{V: v, Base: p.Base, CSRF: p.CSRF}
		},
	}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/partials.html", "templates/card.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("inbox: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render executes the page template name inside the layout and writes it with status.
// The page is rendered into memory first, so a template failure is a clean 500.
func (ib *Inbox) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	ib.renderTemplate(w, r, status, name, "layout", p)
}

// renderTemplate executes one named template of the page set name.
func (ib *Inbox) renderTemplate(w http.ResponseWriter, r *http.Request, status int, name, tmpl string, p *page) {
	p.Base = ib.path
	var buf bytes.Buffer
	if err := ib.pages[name].ExecuteTemplate(&buf, tmpl, p); err != nil {
		ib.log.Error("inbox: rendering a page failed", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// renderPage renders a page for a signed-in operator: the nav with the pending count,
// the session's CSRF token and its flash message.
func (ib *Inbox) renderPage(w http.ResponseWriter, r *http.Request, s session, status int, name, nav, title string, data any) {
	p := &page{Title: title, Nav: nav, Operator: s.Operator, CSRF: s.CSRF, Data: data, PendingCount: -1}
	if list, err := ib.store.ListPending(r.Context(), store.PendingFilter{}); err == nil {
		p.PendingCount = len(list)
	}
	p.Flash = ib.sessions.takeFlash(s.key)
	ib.render(w, r, status, name, p)
}

// cardData is what the pending card template gets: one call, and the page's path and
// CSRF token for its form.
type cardData struct {
	V    pendingView
	Base string
	CSRF string
}

type errorData struct {
	Heading string
	Message string
}

// renderError renders a readable error page; s is nil when nobody is signed in.
func (ib *Inbox) renderError(w http.ResponseWriter, r *http.Request, s *session, status int, heading, msg string) {
	p := &page{Title: heading, PendingCount: -1, Data: errorData{Heading: heading, Message: msg}}
	if s != nil {
		p.Operator, p.CSRF = s.Operator, s.CSRF
		if list, err := ib.store.ListPending(r.Context(), store.PendingFilter{}); err == nil {
			p.PendingCount = len(list)
		}
	}
	ib.render(w, r, status, "error", p)
}

// storeFailed logs a store error and shows a 503 page.
func (ib *Inbox) storeFailed(w http.ResponseWriter, r *http.Request, s session, what string, err error) {
	ib.log.Error("inbox: store failed", "what", what, "err", err)
	ib.renderError(w, r, &s, http.StatusServiceUnavailable, "Store unavailable",
		"The Warden store could not be read ("+what+"). Try again in a moment; the server log has the details.")
}

func (ib *Inbox) notFound(w http.ResponseWriter, r *http.Request, s session) {
	ib.renderError(w, r, &s, http.StatusNotFound, "Not found", "There is no page at this address.")
}

// staticFile is one embedded asset.
type staticFile struct {
	data  []byte
	ctype string
	etag  string
}

func loadStatic() map[string]staticFile {
	entries, err := staticFS.ReadDir("static")
	if err != nil {
		panic("inbox: embedded static files missing: " + err.Error())
	}
	m := make(map[string]staticFile, len(entries))
	for _, e := range entries {
		data, err := staticFS.ReadFile("static/" + e.Name())
		if err != nil {
			panic("inbox: embedded static file unreadable: " + err.Error())
		}
		sum := sha256.Sum256(data)
		ctype := mime.TypeByExtension(path.Ext(e.Name()))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		m[e.Name()] = staticFile{data: data, ctype: ctype, etag: hex.EncodeToString(sum[:8])}
	}
	return m
}

// assetURL returns the URL of a static file, with its content hash so a new version is
// never served from a stale cache.
func (ib *Inbox) assetURL(name string) string {
	return ib.path + "static/" + name + "?v=" + ib.static[name].etag
}

// serveStatic serves the embedded script, stylesheet and icon. They are public (the
// login page needs them) and hold nothing secret.
func (ib *Inbox) serveStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := ib.static[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", `"`+f.etag+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.data))
}

// relTime says how long ago (or in how long) t is, compactly: "just now", "45s ago",
// "2m ago", "3h ago", "5d ago", "in 10m". The script formats the same way.
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 5*time.Second:
		if future {
			return "in a moment"
		}
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func absTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// prettyJSON indents JSON, keeping its key order and duplicate keys, with every
// control, bidi and invisible character escaped and marked (display.JSON); anything
// that is not JSON is shown as escaped text. It returns nil for empty input.
func prettyJSON(raw json.RawMessage) display.Shown {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	s, _ := display.JSON(raw)
	return s
}

// formatCount writes n with thousands separators: 102,400.
func formatCount(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// shortHash abbreviates a hash or digest for display ("sha256:" prefix dropped).
func shortHash(h string) string {
	_, rest, ok := strings.Cut(h, ":")
	if !ok {
		rest = h
	}
	if len(rest) > 12 {
		return rest[:12] + "…"
	}
	return rest
}

// statusClass maps a call status or decision kind to a pill class.
func statusClass(s any) string {
	var v string
	switch x := s.(type) {
	case warden.Status:
		v = string(x)
	case warden.DecisionKind:
		v = string(x)
	case string:
		v = x
	}
	switch v {
	case "ran", "approved", "ok":
		return "pill pill-good"
	case "refused", "declined", "failed", "broken":
		return "pill pill-bad"
	case "halted":
		return "pill pill-halt"
	case "pending", "ask", "escalate", "checkin", "expired":
		return "pill pill-wait"
	default:
		return "pill pill-neutral"
	}
}

// kindLabel names a decision kind for people.
func kindLabel(kind string) string {
	switch warden.DecisionKind(kind) {
	case warden.KindEscalate:
		return "escalation"
	case warden.KindAsk:
		return "ask"
	case warden.KindCheckIn:
		return "check-in"
	case "":
		return "decision"
	}
	return kind
}

// diffLine is one line of a pin diff with its CSS class.
type diffLine struct {
	Class string
	Text  string
}

// diffLines splits a diff in PinDiff's format ("- ", "+ ", "  " prefixes) into lines
// classed for colouring. The prefix stays in the text, so the diff reads without
// colour too.
func diffLines(diff string) []diffLine {
	diff = strings.TrimSuffix(diff, "\n")
	if diff == "" {
		return nil
	}
	lines := strings.Split(diff, "\n")
	out := make([]diffLine, len(lines))
	for i, l := range lines {
		c := "ctx"
		switch {
		case strings.HasPrefix(l, "- "), l == "-":
			c = "del"
		case strings.HasPrefix(l, "+ "), l == "+":
			c = "add"
		}
		out[i] = diffLine{Class: c, Text: l}
	}
	return out
}

func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d/time.Microsecond)
	case d < time.Second:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}
