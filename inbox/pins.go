// The pins page: tools quarantined because their definition changed, with the diff
// and the approval form.

package inbox

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/store"
)

type pinView struct {
	store.Pin
	Diff    []diffLine
	Added   int
	Removed int
}

type pinsData struct {
	Quarantined []pinView
	Approved    []store.Pin
}

func (ib *Inbox) pinsPage(w http.ResponseWriter, r *http.Request, s session) {
	pins, err := ib.store.ListPins(r.Context())
	if err != nil {
		ib.storeFailed(w, r, s, "tool pins", err)
		return
	}
	var d pinsData
	for _, p := range pins {
		if p.PendingHash == "" {
			d.Approved = append(d.Approved, p)
			continue
		}
		v := pinView{Pin: p, Diff: diffLines(pin.Diff(p))}
		for _, l := range v.Diff {
			switch l.Class {
			case "add":
				v.Added++
			case "del":
				v.Removed++
			}
		}
		d.Quarantined = append(d.Quarantined, v)
	}
	ib.renderPage(w, r, s, http.StatusOK, "pins", "pins", "Pins", d)
}

// approvePin approves the pending definition the operator reviewed: the form carries
// its hash, and a definition that changed again since is refused with a message.
func (ib *Inbox) approvePin(w http.ResponseWriter, r *http.Request, s session) {
	name := r.PostForm.Get("name")
	hash := r.PostForm.Get("hash")
	back := func(f flash) {
		ib.sessions.setFlash(s.key, f)
		http.Redirect(w, r, ib.path+"pins", http.StatusSeeOther)
	}
	if strings.TrimSpace(name) == "" || strings.TrimSpace(hash) == "" {
		back(flash{"error", "The form named no tool definition. Nothing was approved."})
		return
	}
	ctx := context.WithoutCancel(r.Context()) // an approval once sent is recorded, even if the browser goes away
	p, err := pin.Approve(ctx, ib.store, name, hash, s.Operator)
	switch {
	case err == nil:
		ib.log.Info("inbox: tool definition approved", "tool", name, "hash", p.Hash, "operator", s.Operator)
		back(flash{"ok", "Approved the new definition of " + name + ". The tool is served again."})
	case errors.Is(err, pin.ErrPendingHashMismatch):
		back(flash{"error", "The definition of " + name + " changed again after you loaded the page. " +
			"Nothing was approved: review the new diff below."})
	case errors.Is(err, pin.ErrNothingPending):
		back(flash{"info", name + " has no changed definition waiting for review (approved already?). Nothing was changed."})
	case errors.Is(err, store.ErrNotFound):
		back(flash{"error", "No tool named " + name + " is pinned. Nothing was approved."})
	default:
		ib.log.Error("inbox: approving a tool definition failed", "tool", name, "err", err)
		back(flash{"error", "The store could not record the approval of " + name + ". Nothing was approved; try again."})
	}
}
