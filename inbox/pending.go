// The pending page: decisions waiting for a person, and the form that decides them.

package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/store"
)

const maxNoteLen = 2000

// The pending list shows a call's arguments whole up to listArgsHead+listArgsTail
// characters. A longer argument list is shown as its first listArgsHead and last
// listArgsTail characters around a marker that says how much is left out, and the
// card cannot be decided from the list: its link opens the call's own page, which
// shows everything, wrapped, with the decision form. Nothing is ever hidden without a
// visible marker, and the end of a long value (where the dangerous part of a 100 kB
// command hides) is always on screen.
const (
	listArgsHead = 3000
	listArgsTail = 1000
)

// pendingView is one pending decision as the page shows it.
type pendingView struct {
	ID         string
	Kind       string
	Question   string
	Detail     string
	Middleware string
	Tool       string
	Args       display.Shown // pretty JSON, every hidden character escaped
	Original   display.Shown // the args as proposed, when a middleware changed them
	Digest     string
	// Clip is Args cut for the list when Args is longer than listArgsChars: the list
	// then shows its head and tail with a marker, and sends the operator to the
	// call's own page (Full) to read all of it before deciding.
	Clip         display.Clip
	OriginalClip display.Clip
	Full         bool // the call's own page: nothing is cut
	State        string
	Principal    string
	Tenant       string
	Conversation string
	Session      string
	Revision     string
	CallID       string
	Created      time.Time
	Expires      time.Time
	Scope        string
	Evidence     *warden.Evidence
	Escalation   *warden.Decision
}

type pendingData struct {
	Items   []pendingView
	Version string // fingerprint of the set, compared with the live stream's
	Now     time.Time
}

// viewPending builds the view of p, taking what the store row lacks from the
// warden.PendingDecision the gateway keeps in p.Decision.
func viewPending(p store.Pending) pendingView {
	v := pendingView{
		ID:           p.ID,
		Kind:         string(p.Kind),
		Question:     p.Question,
		Detail:       p.Detail,
		Tool:         p.Tool,
		Args:         prettyJSON(p.Args),
		Digest:       p.Digest,
		Principal:    p.Identity.Principal,
		Tenant:       p.Identity.Tenant,
		Conversation: p.Identity.Conversation,
		Session:      p.Session,
		Revision:     p.Revision,
		Created:      p.Created,
		Expires:      p.Expires,
		Scope:        p.Scope,
		State:        p.State,
	}
	if len(p.Evidence) > 0 {
		var ev warden.Evidence
		if json.Unmarshal(p.Evidence, &ev) == nil {
			v.Evidence = &ev
		}
	}
	var d warden.PendingDecision
	if len(p.Decision) > 0 && json.Unmarshal(p.Decision, &d) == nil {
		v.Middleware = d.Middleware
		if len(d.Asks) > 1 {
			names := make([]string, len(d.Asks))
			for i, a := range d.Asks {
				names[i] = a.Middleware
			}
			v.Middleware = strings.Join(names, ", ")
		}
		v.CallID = d.CallID
		v.Escalation = d.Escalation
		if v.Evidence == nil {
			v.Evidence = d.Evidence
		}
		fill := func(dst *string, src string) {
			if *dst == "" {
				*dst = src
			}
		}
		fill(&v.Kind, string(d.Kind))
		fill(&v.Question, d.Question)
		fill(&v.Detail, d.Detail)
		fill(&v.Tool, d.Tool)
		// The row's digest is what the caller binds the approval to, which may cover
		// more than the arguments (the gateway binds principal, tool and kind too); the
		// card shows the digest of the arguments it shows, as the audit log records it.
		if d.Digest != "" {
			v.Digest = d.Digest
		}
		fill(&v.Principal, d.Identity.Principal)
		fill(&v.Tenant, d.Identity.Tenant)
		fill(&v.Conversation, d.Identity.Conversation)
		fill(&v.Session, d.Session)
		fill(&v.Revision, d.Revision)
		if v.Args == nil {
			if b, err := d.Args.MarshalJSON(); err == nil {
				v.Args = prettyJSON(b)
			}
		}
		if d.Original.Len() > 0 && !d.Original.Equal(d.Args) {
			if b, err := d.Original.MarshalJSON(); err == nil {
				v.Original = prettyJSON(b)
			}
		}
	}
	v.Clip = v.Args.Cut(listArgsHead, listArgsTail)
	v.OriginalClip = v.Original.Cut(listArgsHead, listArgsTail)
	if v.Evidence != nil && v.Evidence.Does == "" && v.Evidence.Args == "" && len(v.Evidence.Context) == 0 {
		v.Evidence = nil
	}
	return v
}

// pendingVersion fingerprints a pending set: it changes when a decision arrives or
// leaves (decided, expired).
func pendingVersion(list []store.Pending) string {
	h := sha256.New()
	for _, p := range list {
		h.Write([]byte(p.ID))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// pendingState is what the live stream pushes: the size and fingerprint of the set.
type pendingState struct {
	Count   int    `json:"count"`
	Version string `json:"version"`
}

func (ib *Inbox) pendingState(ctx context.Context) (pendingState, error) {
	list, err := ib.store.ListPending(ctx, store.PendingFilter{})
	if err != nil {
		return pendingState{}, err
	}
	return pendingState{Count: len(list), Version: pendingVersion(list)}, nil
}

func (ib *Inbox) loadPending(ctx context.Context) (pendingData, error) {
	list, err := ib.store.ListPending(ctx, store.PendingFilter{})
	if err != nil {
		return pendingData{}, err
	}
	d := pendingData{Version: pendingVersion(list), Now: ib.now()}
	// Newest first: a new arrival is at the top, where the eye is.
	for i := len(list) - 1; i >= 0; i-- {
		d.Items = append(d.Items, viewPending(list[i]))
	}
	return d, nil
}

func (ib *Inbox) pendingPage(w http.ResponseWriter, r *http.Request, s session) {
	d, err := ib.loadPending(r.Context())
	if err != nil {
		ib.storeFailed(w, r, s, "pending decisions", err)
		return
	}
	ib.renderPage(w, r, s, http.StatusOK, "pending", "pending", "Pending", d)
}

// pendingOne shows one pending decision on its own page: every argument whole, and
// the decision form. A decided or expired call is shown without the form.
func (ib *Inbox) pendingOne(w http.ResponseWriter, r *http.Request, s session) {
	p, err := ib.store.GetPending(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		ib.renderError(w, r, &s, http.StatusNotFound, "Not found", "There is no pending decision with this ID.")
		return
	case err != nil:
		ib.storeFailed(w, r, s, "the pending decision", err)
		return
	}
	v := viewPending(p)
	v.Full = true
	ib.renderPage(w, r, s, http.StatusOK, "call", "pending", "Pending call", v)
}

// pendingFragment serves just the list, for the script to merge into the open page.
func (ib *Inbox) pendingFragment(w http.ResponseWriter, r *http.Request, s session) {
	d, err := ib.loadPending(r.Context())
	if err != nil {
		ib.log.Error("inbox: store failed", "what", "pending decisions", "err", err)
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	ib.renderTemplate(w, r, http.StatusOK, "pending", "pendinglist",
		&page{Operator: s.Operator, CSRF: s.CSRF, Data: d})
}

// decide records the operator's verdict. Whatever happens, the operator is sent back
// to the pending page with a message: a decision that cannot be made (made already,
// expired, unknown) is a message, never a server error.
func (ib *Inbox) decide(w http.ResponseWriter, r *http.Request, s session) {
	id := r.PathValue("id")
	note := strings.TrimSpace(r.PostForm.Get("note"))
	if len(note) > maxNoteLen {
		note = note[:maxNoteLen]
	}
	note = store.CleanString(note)
	var v store.Verdict
	switch r.PostForm.Get("verdict") {
	case "approve-once":
		v = store.Verdict{Approve: true, Scope: store.ScopeOnce}
	case "approve-session":
		v = store.Verdict{Approve: true, Scope: store.ScopeSession}
	case "decline":
		v = store.Verdict{Approve: false}
	default:
		ib.flashBack(w, r, s, flash{"error", "Choose Approve or Decline. Nothing was decided."})
		return
	}
	v.By, v.Note = s.Operator, note
	ctx := context.WithoutCancel(r.Context()) // a verdict once sent is recorded, even if the browser goes away
	p, err := ib.store.Decide(ctx, id, v)
	if err != nil {
		ib.flashBack(w, r, s, flash{"error", ib.decideError(ctx, id, err)})
		return
	}
	ib.log.Info("inbox: decision made", "id", id, "tool", p.Tool, "approved", v.Approve, "scope", p.Scope, "operator", s.Operator)
	what := "Declined"
	if v.Approve {
		what = "Approved (once)"
		if p.Scope == store.ScopeSession {
			what = "Approved for session " + p.Session
		}
	}
	ib.flashBack(w, r, s, flash{"ok", what + ": " + p.Tool + " — " + p.Question})
}

// decideError turns a Decide error into a message for the operator.
func (ib *Inbox) decideError(ctx context.Context, id string, err error) string {
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		if p, gerr := ib.store.GetPending(ctx, id); gerr == nil && p.DecidedBy != "" {
			return "This decision was already made: " + p.State + " by " + p.DecidedBy + " " +
				relTime(ib.now(), p.DecidedAt) + ". Nothing was changed."
		}
		return "This decision was already made. Nothing was changed."
	case errors.Is(err, store.ErrExpired):
		if p, gerr := ib.store.GetPending(ctx, id); gerr == nil && !p.Expires.IsZero() {
			return "This decision expired at " + absTime(p.Expires) + ", before it was decided. The call will not run."
		}
		return "This decision expired before it was decided. The call will not run."
	case errors.Is(err, store.ErrNotFound):
		return "There is no pending decision " + id + "."
	case errors.Is(err, store.ErrInvalidVerdict):
		return "This verdict is not possible here (a session approval needs a call that names a session). Nothing was decided."
	default:
		ib.log.Error("inbox: store failed", "what", "decide", "id", id, "err", err)
		return "The store could not record the decision. Nothing was decided; try again."
	}
}

// flashBack stores a message for the next page and sends the operator back to the
// pending page (303, so a reload does not post the form again).
func (ib *Inbox) flashBack(w http.ResponseWriter, r *http.Request, s session, f flash) {
	ib.sessions.setFlash(s.key, f)
	http.Redirect(w, r, ib.path+"pending", http.StatusSeeOther)
}
