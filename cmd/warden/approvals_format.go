package main

// This file formats approvals and audit rows: their JSON form, and the times, ages
// and clipped lines the tables and details show.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/postgres" // registers postgres:// and postgresql://
	// registers sqlite://
)

// pendingJSON is the JSON form of an approval. Every key is always present.
type pendingJSON struct {
	ID           string          `json:"id"`
	State        string          `json:"state"`
	Kind         string          `json:"kind"`
	Tool         string          `json:"tool"`
	Question     string          `json:"question"`
	Detail       string          `json:"detail"`
	Tenant       string          `json:"tenant"`
	Principal    string          `json:"principal"`
	Conversation string          `json:"conversation"`
	Session      string          `json:"session"`
	Revision     string          `json:"revision"`
	Digest       string          `json:"digest"`
	Args         json.RawMessage `json:"args"`
	Evidence     json.RawMessage `json:"evidence"`
	Created      *time.Time      `json:"created"`
	Expires      *time.Time      `json:"expires"`
	Scope        string          `json:"scope"`
	SessionTTL   string          `json:"session_ttl"`
	DecidedBy    string          `json:"decided_by"`
	Note         string          `json:"note"`
	DecidedAt    *time.Time      `json:"decided_at"`
	Consumed     bool            `json:"consumed"`
	Decision     json.RawMessage `json:"decision"`
}

func pendingToJSON(p store.Pending) pendingJSON {
	j := pendingJSON{
		ID: p.ID, State: p.State, Kind: string(p.Kind), Tool: p.Tool, Question: p.Question,
		Detail: p.Detail, Tenant: p.Identity.Tenant, Principal: p.Identity.Principal,
		Conversation: p.Identity.Conversation, Session: p.Session, Revision: p.Revision,
		Digest: p.Digest, Args: rawOrNull(p.Args), Evidence: rawOrNull(p.Evidence),
		Created: timeOrNil(p.Created), Expires: timeOrNil(p.Expires), Scope: p.Scope,
		DecidedBy: p.DecidedBy, Note: p.Note, DecidedAt: timeOrNil(p.DecidedAt),
		Consumed: p.Consumed, Decision: rawOrNull(p.Decision),
	}
	if p.SessionTTL > 0 {
		j.SessionTTL = p.SessionTTL.String()
	}
	return j
}

// writeJSONLines writes n values, one compact JSON object per line. Every control,
// bidi and invisible character inside a string is written as a JSON escape
// (display.EscapeJSON), so the output read in a terminal shows what it holds and
// cannot recolour or rewrite the screen; decoded, it is the same value.
func writeJSONLines(w io.Writer, n int, value func(i int) any) error {
	for i := range n {
		b, err := json.Marshal(value(i))
		if err != nil {
			return err
		}
		if b, err = display.EscapeJSON(b); err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// rawOrNull returns raw when it is valid JSON, the JSON string of its bytes when it is
// not (a damaged store must not break the output), and null when empty.
func rawOrNull(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	if !json.Valid(raw) {
		b, _ := json.Marshal(string(raw))
		return b
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return json.RawMessage("null")
	}
	return buf.Bytes()
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// prettyJSON indents raw JSON with every control, bidi and invisible character
// escaped (display.JSON), or returns empty when raw is empty. What is not JSON is
// shown as escaped text. Nothing is cut: a long value is printed whole.
func prettyJSON(raw []byte, empty string) string {
	if len(raw) == 0 {
		return empty + "\n"
	}
	s, _ := display.JSON(raw)
	return s.String() + "\n"
}

// indent prefixes every non-empty line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" && l != "\n" {
			b.WriteString(prefix)
		}
		b.WriteString(l)
	}
	return b.String()
}

// timeLayout is how times are shown to people: UTC, to the second.
const timeLayout = "2006-01-02 15:04:05Z"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// age renders a duration the way a person reads it: 42s, 5m, 3h07m, 2d04h.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// expiresIn renders an expiry relative to at: "never", "in 55m" or "expired 3m ago".
func expiresIn(t, at time.Time) string {
	switch {
	case t.IsZero():
		return "never"
	case at.Before(t):
		return "in " + age(t.Sub(at))
	}
	return "expired " + age(at.Sub(t)) + " ago"
}

// oneLine returns the first line of s, escaped as dash does, cut to max characters;
// a cut is marked "…" (show prints the whole text).
func oneLine(s string, max int) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	shown := display.Line(strings.TrimSpace(s))
	if c := shown.Cut(max-1, 0); shown.Len() > max {
		shown, cut = c.Head, true
	}
	out := shown.String()
	if cut {
		out += "…"
	}
	if out == "" {
		return "-"
	}
	return out
}

// dash returns s as one table cell: "-" when empty, and every control, bidi and
// invisible character (tabs and line breaks among them) escaped (display.Line), so a
// cell can neither break the table nor hide or reorder what it holds.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return display.Line(s).String()
}

// shown returns s escaped for a detail field (display.Line).
func shown(s string) string { return display.Line(s).String() }

// shownLines returns s escaped for a multi-line field (display.Block), each line after
// the first indented by prefix.
func shownLines(s, prefix string) string {
	return strings.ReplaceAll(display.Block(s).String(), "\n", "\n"+prefix)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
