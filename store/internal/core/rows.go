package core

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// Scanner is one row as both drivers offer it (pgx.Row and pgx.Rows, *sql.Row and
// *sql.Rows).
type Scanner interface{ Scan(dest ...any) error }

// Rows is a result set as both drivers offer it. The functions here read it to the end
// (or to what they need); the caller closes it.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Select scans every row with scan and returns, in row order, what keep lets through
// (as keep returns it). A nil keep keeps every row. The first error of scan or of rows
// is returned alone.
func Select[T any](rows Rows, scan func(Scanner) (T, error), keep func(T) (T, bool)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		if keep != nil {
			var ok bool
			if v, ok = keep(v); !ok {
				continue
			}
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// First returns the first row that match accepts; ok is false when none does.
func First[T any](rows Rows, scan func(Scanner) (T, error), match func(T) bool) (v T, ok bool, err error) {
	for rows.Next() {
		if v, err = scan(rows); err != nil {
			var zero T
			return zero, false, err
		}
		if match(v) {
			return v, true, nil
		}
	}
	var zero T
	return zero, false, rows.Err()
}

// PendingCols are the columns of a pending decision, in the order [ScanPending] reads
// them.
const PendingCols = `id, kind, question, detail, tool, args, digest, evidence, tenant, principal,
	conversation, session, revision, created, expires, state, scope, session_ttl_ns,
	decided_by, note, decided_at, consumed, decision`

// ScanPending reads one row of [PendingCols]. T is how the backend scans a time column
// (which may be NULL), toTime what makes a store time of it (NULL: the zero time). The
// JSON columns come back nil when NULL or empty.
func ScanPending[T any](sc Scanner, toTime func(T) time.Time) (store.Pending, error) {
	var p store.Pending
	var kind string
	var created, expires, decidedAt T
	var ttl int64
	// Plain byte slices: database/sql cannot scan NULL into a json.RawMessage.
	var args, evidence, decision []byte
	err := sc.Scan(&p.ID, &kind, &p.Question, &p.Detail, &p.Tool, &args, &p.Digest,
		&evidence, &p.Identity.Tenant, &p.Identity.Principal, &p.Identity.Conversation,
		&p.Session, &p.Revision, &created, &expires, &p.State, &p.Scope, &ttl, &p.DecidedBy,
		&p.Note, &decidedAt, &p.Consumed, &decision)
	if err != nil {
		return store.Pending{}, err
	}
	p.Args, p.Evidence, p.Decision = nilIfEmpty(args), nilIfEmpty(evidence), nilIfEmpty(decision)
	p.Kind = warden.DecisionKind(kind)
	p.Created, p.Expires, p.DecidedAt = toTime(created), toTime(expires), toTime(decidedAt)
	p.SessionTTL = time.Duration(ttl)
	return p, nil
}

func nilIfEmpty(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

// PinCols are the columns of a pin, in the order [ScanPin] reads them.
const PinCols = `name, hash, definition, approved, approved_by, updated, pending, pending_hash`

// ScanPin reads one row of [PinCols]; T and toTime are as for [ScanPending]. Empty
// definitions come back nil.
func ScanPin[T any](sc Scanner, toTime func(T) time.Time) (store.Pin, error) {
	var p store.Pin
	var updated T
	var def, pending []byte
	if err := sc.Scan(&p.Name, &p.Hash, &def, &p.Approved, &p.ApprovedBy, &updated, &pending, &p.PendingHash); err != nil {
		return store.Pin{}, err
	}
	if len(def) > 0 {
		p.Definition = def
	}
	if len(pending) > 0 {
		p.Pending = pending
	}
	p.Updated = toTime(updated)
	return p, nil
}

// AuditCols are the columns of an audit entry, in the order [ScanEntry] reads them.
const AuditCols = `seq, kind, ref, at, call_id, session, tool, tenant, principal,
	conversation, args_digest, args, stage, effect, rule_id, rationale, reason, revision,
	executed, status, duration_ns, result_size, approved_by, prev_hash, hash, shadow`

// ScanEntry reads the columns of [AuditCols] into e, then extra; T and toTime are as
// for [ScanPending]. Empty Args come back nil.
func ScanEntry[T any](sc Scanner, e *store.Entry, toTime func(T) time.Time, extra ...any) error {
	var kind string
	var at T
	var dur int64
	dest := append([]any{&e.Seq, &kind, &e.Ref, &at, &e.CallID, &e.Session, &e.Tool,
		&e.Tenant, &e.Principal, &e.Conversation, &e.ArgsDigest, &e.Args, &e.Stage, &e.Effect,
		&e.RuleID, &e.Rationale, &e.Reason, &e.Revision, &e.Executed, &e.Status, &dur,
		&e.ResultSize, &e.ApprovedBy, &e.PrevHash, &e.Hash, &e.Shadow}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return err
	}
	e.Kind = store.EntryKind(kind)
	e.Time = toTime(at)
	e.Duration = time.Duration(dur)
	if len(e.Args) == 0 {
		e.Args = nil
	}
	return nil
}

// Prefixed returns the column list cols with each column qualified by alias.
func Prefixed(alias, cols string) string {
	list := strings.Split(cols, ",")
	for i, c := range list {
		list[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(list, ", ")
}

// CompletionSelect is the completion side (alias c) of the outer join a QueryCalls
// query makes, in the order [Completion.Dest] scans it: only what a call record takes
// from a completion.
const CompletionSelect = `c.seq, c.stage, c.effect, c.rule_id, c.rationale, c.reason, c.status,
	c.duration_ns, c.result_size, c.approved_by`

// Completion receives [CompletionSelect]; every column is NULL when the call has no
// completion.
type Completion struct {
	seq                                              *int64
	stage, effect, ruleID, rationale, reason, status *string
	duration, size                                   *int64
	approvedBy                                       *string
}

// Dest returns the scan destinations of [CompletionSelect].
func (c *Completion) Dest() []any {
	return []any{&c.seq, &c.stage, &c.effect, &c.ruleID, &c.rationale, &c.reason, &c.status,
		&c.duration, &c.size, &c.approvedBy}
}

// Apply completes r with the scanned completion, if there was one.
func (c *Completion) Apply(r *store.CallRecord) {
	if c.seq == nil {
		return
	}
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	n := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	e := store.Entry{Seq: *c.seq, Kind: store.EntryComplete, Stage: s(c.stage), Effect: s(c.effect),
		RuleID: s(c.ruleID), Rationale: s(c.rationale), Reason: s(c.reason), Status: s(c.status),
		Duration: time.Duration(n(c.duration)), ResultSize: n(c.size), ApprovedBy: s(c.approvedBy)}
	r.Complete(&e)
}

// Calls reads the rows of a QueryCalls query, newest first, each an entry of
// [AuditCols] then [CompletionSelect] (scan reads one), and returns the records f
// matches, oldest first, at most f.Limit of them (0: all).
func Calls(rows Rows, f store.CallFilter, scan func(Scanner, *store.Entry, *Completion) error) ([]store.CallRecord, error) {
	match := f.Matcher()
	var out []store.CallRecord
	for rows.Next() {
		var e store.Entry
		var c Completion
		if err := scan(rows, &e, &c); err != nil {
			return nil, err
		}
		r := e.CallRecord()
		c.Apply(&r)
		if !match.Match(r) {
			continue
		}
		out = append(out, r)
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// Verify feeds every row (entries of [AuditCols] in seq order, scan reads one) to a
// [store.Verifier], checks the store's recorded head (nil: its record is missing, which
// is tampering) and the kept head (see [store.Verifier.Keep]) against it and returns
// its report.
func Verify(rows Rows, head *store.Head, kept store.Head, scan func(Scanner, *store.Entry) error) (store.VerifyReport, error) {
	var v store.Verifier
	v.Keep(kept)
	for rows.Next() {
		var e store.Entry
		if err := scan(rows, &e); err != nil {
			return store.VerifyReport{}, err
		}
		v.Add(&e)
	}
	if err := rows.Err(); err != nil {
		return store.VerifyReport{}, err
	}
	if head == nil {
		v.HeadMissing()
	} else {
		v.CheckHead(head.Seq, head.Hash)
	}
	v.CheckKept()
	return v.Report(), nil
}
