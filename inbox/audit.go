// The audit pages: a filtered timeline of calls with the chain's integrity, and the
// detail of one call with its events.

package inbox

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

const (
	defaultAuditLimit = 50
	maxAuditPage      = 1000
)

var (
	auditStatuses = []string{
		string(warden.StatusRan), string(warden.StatusRefused), string(warden.StatusHalted),
		string(warden.StatusPending), string(warden.StatusFailed), string(store.StatusStarted),
	}
	auditLimits = []int{25, 50, 100, 200}
)

// auditForm is the filter form as the operator filled it in.
type auditForm struct {
	Status    string
	Tool      string
	Principal string
	Since     string
	Limit     int
}

type auditData struct {
	Form      auditForm
	Statuses  []string
	Limits    []int
	Filtered  bool
	Problems  []string // filter fields that could not be used
	Rows      []auditRow
	Page      int
	NewerURL  string
	OlderURL  string
	Integrity store.VerifyReport
	// IntegrityUnknown is set when the chain could not be read at all.
	IntegrityUnknown bool
}

type auditRow struct {
	store.CallRecord
	Link string
}

// parseSince reads the "since" filter: a duration back from now ("30m", "2h", "7d",
// "2w") or a UTC time ("2025-06-01", "2025-06-01 14:30", "2025-06-01T14:30:00Z" or
// any RFC 3339 time).
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if n, unit := s[:len(s)-1], s[len(s)-1]; unit == 'd' || unit == 'w' {
		if k, err := strconv.Atoi(n); err == nil && k > 0 && k < 100000 {
			day := 24 * time.Hour
			if unit == 'w' {
				day *= 7
			}
			return now.Add(-time.Duration(k) * day), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (30m, 2h, 7d) nor a UTC time (2025-06-01 14:30)", s)
}

func (ib *Inbox) auditPage(w http.ResponseWriter, r *http.Request, s session) {
	q := r.URL.Query()
	d := auditData{Statuses: auditStatuses, Limits: auditLimits, Page: 1}
	d.Form = auditForm{
		Status:    strings.TrimSpace(q.Get("status")),
		Tool:      strings.TrimSpace(q.Get("tool")),
		Principal: strings.TrimSpace(q.Get("principal")),
		Since:     strings.TrimSpace(q.Get("since")),
		Limit:     defaultAuditLimit,
	}
	var f store.CallFilter
	if d.Form.Status != "" {
		known := false
		for _, st := range auditStatuses {
			known = known || st == d.Form.Status
		}
		if known {
			f.Status = warden.Status(d.Form.Status)
		} else {
			d.Problems = append(d.Problems, fmt.Sprintf("Unknown status %q: not filtered by status.", d.Form.Status))
			d.Form.Status = ""
		}
	}
	// The pattern is a policy's glob; one the store refuses (an unclosed class) is
	// shown as a problem, and the log is not filtered by tool.
	if err := store.CheckToolGlob(d.Form.Tool); err != nil {
		d.Problems = append(d.Problems, "Tool: "+err.Error()+". Not filtered by tool.")
	} else {
		f.ToolGlob = d.Form.Tool
	}
	f.Principal = d.Form.Principal
	if since, err := parseSince(d.Form.Since, ib.now()); err != nil {
		d.Problems = append(d.Problems, "Since: "+err.Error()+". Not filtered by time.")
	} else {
		f.Since = since
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil {
		for _, l := range auditLimits {
			if n == l {
				d.Form.Limit = n
			}
		}
	}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 1 {
		d.Page = min(n, maxAuditPage)
	}
	d.Filtered = f.Status != "" || f.ToolGlob != "" || f.Principal != "" || !f.Since.IsZero()

	// The store returns the newest Limit matches, oldest first; page p needs the p*limit
	// newest (and one more, to know whether an older page exists).
	f.Limit = d.Page*d.Form.Limit + 1
	recs, err := ib.store.QueryCalls(r.Context(), f)
	if err != nil {
		ib.storeFailed(w, r, s, "audit log", err)
		return
	}
	start := (d.Page - 1) * d.Form.Limit
	for i := len(recs) - 1 - start; i >= 0 && len(d.Rows) < d.Form.Limit; i-- {
		d.Rows = append(d.Rows, auditRow{CallRecord: recs[i], Link: ib.callLink(recs[i])})
	}
	pageURL := func(p int) string {
		v := url.Values{}
		set := func(k, val string) {
			if val != "" {
				v.Set(k, val)
			}
		}
		set("status", d.Form.Status)
		set("tool", d.Form.Tool)
		set("principal", d.Form.Principal)
		set("since", d.Form.Since)
		if d.Form.Limit != defaultAuditLimit {
			v.Set("limit", strconv.Itoa(d.Form.Limit))
		}
		if p > 1 {
			v.Set("page", strconv.Itoa(p))
		}
		if len(v) == 0 {
			return ib.path + "audit"
		}
		return ib.path + "audit?" + v.Encode()
	}
	if d.Page > 1 {
		d.NewerURL = pageURL(d.Page - 1)
	}
	if len(recs) > start+d.Form.Limit && d.Page < maxAuditPage {
		d.OlderURL = pageURL(d.Page + 1)
	}

	// The whole chain is walked on every visit of this page: the badge must not vouch
	// for a log it has not read.
	rep, err := ib.store.VerifyAudit(r.Context())
	if err != nil {
		ib.log.Error("inbox: store failed", "what", "verify audit", "err", err)
		d.IntegrityUnknown = true
	}
	d.Integrity = rep
	ib.renderPage(w, r, s, http.StatusOK, "audit", "audit", "Audit", d)
}

// callLink is the detail URL of a record: by seq, with the call ID as a hint that lets
// the store find it without reading the whole log.
func (ib *Inbox) callLink(c store.CallRecord) string {
	u := ib.path + "audit/" + strconv.FormatInt(c.Seq, 10)
	if c.CallID != "" {
		u += "?call=" + url.QueryEscape(c.CallID)
	}
	return u
}

type detailData struct {
	Heading    string
	Records    []auditRow // newest first
	CallID     string
	CallLink   string // the page of every record of the call ID, when there are others
	Others     int    // other records with the same call ID
	EventsKept bool
	Events     []eventView
}

type eventView struct {
	Time   time.Time
	Name   string
	Fields []field
}

type field struct{ Key, Value string }

func (ib *Inbox) auditSeq(w http.ResponseWriter, r *http.Request, s session) {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq <= 0 {
		ib.notFound(w, r, s)
		return
	}
	var found *store.CallRecord
	var same []store.CallRecord
	if hint := r.URL.Query().Get("call"); hint != "" {
		same, err = ib.store.QueryCalls(r.Context(), store.CallFilter{CallID: hint})
		if err != nil {
			ib.storeFailed(w, r, s, "audit log", err)
			return
		}
		for i := range same {
			if same[i].Seq == seq {
				found = &same[i]
			}
		}
	}
	if found == nil {
		// No usable hint: read the log. Seq is not a filter the store offers.
		all, err := ib.store.QueryCalls(r.Context(), store.CallFilter{})
		if err != nil {
			ib.storeFailed(w, r, s, "audit log", err)
			return
		}
		for i := range all {
			if all[i].Seq == seq {
				found = &all[i]
			}
		}
		same = nil
		if found != nil && found.CallID != "" {
			for _, c := range all {
				if c.CallID == found.CallID {
					same = append(same, c)
				}
			}
		}
	}
	if found == nil {
		ib.renderError(w, r, &s, http.StatusNotFound, "No such call",
			fmt.Sprintf("The audit log has no call numbered %d.", seq))
		return
	}
	d := detailData{
		Heading: fmt.Sprintf("Call #%d", found.Seq),
		Records: []auditRow{{CallRecord: *found, Link: ib.callLink(*found)}},
		CallID:  found.CallID,
	}
	if found.CallID != "" && len(same) > 1 {
		d.Others = len(same) - 1
		d.CallLink = ib.path + "audit/call/" + url.PathEscape(found.CallID)
	}
	ib.addEvents(&d)
	ib.renderPage(w, r, s, http.StatusOK, "detail", "audit", d.Heading, d)
}

func (ib *Inbox) auditCall(w http.ResponseWriter, r *http.Request, s session) {
	id := r.PathValue("id")
	recs, err := ib.store.QueryCalls(r.Context(), store.CallFilter{CallID: id})
	if err != nil {
		ib.storeFailed(w, r, s, "audit log", err)
		return
	}
	if len(recs) == 0 || id == "" {
		ib.renderError(w, r, &s, http.StatusNotFound, "No such call", "The audit log has no call with ID "+id+".")
		return
	}
	d := detailData{Heading: "Call " + id, CallID: id}
	for i := len(recs) - 1; i >= 0; i-- {
		d.Records = append(d.Records, auditRow{CallRecord: recs[i], Link: ib.callLink(recs[i])})
	}
	ib.addEvents(&d)
	ib.renderPage(w, r, s, http.StatusOK, "detail", "audit", d.Heading, d)
}

func (ib *Inbox) addEvents(d *detailData) {
	if ib.events == nil || d.CallID == "" {
		return
	}
	d.EventsKept = true
	for _, e := range ib.events(d.CallID) {
		d.Events = append(d.Events, viewEvent(e))
	}
}

// viewEvent lists the fields of e that are set, in the order of the Event type.
func viewEvent(e warden.Event) eventView {
	v := eventView{Time: e.Time, Name: e.Name}
	add := func(k, val string) {
		if val != "" {
			v.Fields = append(v.Fields, field{k, val})
		}
	}
	add("tool", e.Tool)
	add("pass", e.Pass)
	add("checker", e.Checker)
	add("capability", string(e.Capability))
	add("target", e.Target)
	if e.Name == warden.EventPermissionCheck || e.Name == warden.EventPermissionHalt {
		add("effect", e.Effect.String())
	}
	add("rule", e.RuleID)
	add("rationale", e.Rationale)
	add("reason", e.Reason)
	add("tell LLM", e.TellLLM)
	if e.Iteration != 0 {
		add("iteration", strconv.Itoa(e.Iteration))
	}
	if e.SequenceN != 0 {
		add("sequence", strconv.Itoa(e.SequenceN))
	}
	add("middleware", e.Middleware)
	add("moment", e.Moment)
	add("outcome", e.Outcome)
	if e.Name == warden.EventMiddlewareDecision {
		add("changed", yesNo(e.Changed))
	}
	add("why", e.Why)
	add("decision", e.DecisionKind)
	add("digest", shortHash(e.Digest))
	if e.Name == warden.EventDecisionMade {
		add("approved", yesNo(e.Approved))
	}
	add("by", e.By)
	if e.Name == warden.EventToolEnd {
		add("executed", yesNo(e.Executed))
		add("status", string(e.Status))
		add("stage", string(e.Stage))
		add("duration", formatDuration(e.Duration))
		add("size", strconv.Itoa(e.Size))
	}
	add("error", e.Error)
	add("detail", e.Detail)
	return v
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
