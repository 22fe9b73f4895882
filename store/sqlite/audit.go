package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/store"
)

// BeginCall commits the intent entry of a call about to run.
func (s *Store) BeginCall(ctx context.Context, r store.CallRecord) (store.CallRef, error) {
	e := store.IntentEntry(r, s.now())
	if err := s.w.do(ctx, func(t *wtx) error { return t.appendEntry(&e) }); err != nil {
		return store.CallRef{}, err
	}
	return store.CallRef{Seq: e.Seq}, nil
}

// EndCall appends the completion of the call started by ref.
func (s *Store) EndCall(ctx context.Context, ref store.CallRef, c store.Completion) error {
	e := store.CompletionEntry(ref.Seq, c, s.now())
	return s.w.do(ctx, func(t *wtx) error {
		// The schema refuses a completion of anything but an intent without one (a
		// trigger and a unique index), so the common case costs one statement. A
		// refusal rolls back that statement only; find out which it was.
		err := t.appendEntry(&e)
		if err == nil {
			return nil
		}
		var kind string
		var completions int
		derr := t.queryRow(sqlIntentState, ref.Seq).Scan(&kind, &completions)
		switch {
		case errors.Is(derr, sql.ErrNoRows) || (derr == nil && kind != string(store.EntryIntent)):
			return fmt.Errorf("%w: no call was started as audit entry %d", store.ErrNotFound, ref.Seq)
		case derr == nil && completions > 0:
			return fmt.Errorf("%w: audit entry %d", store.ErrAlreadyCompleted, ref.Seq)
		}
		return err
	})
}

// RecordCall appends a call that never reached execution.
func (s *Store) RecordCall(ctx context.Context, r store.CallRecord) error {
	e := store.RecordEntry(r, s.now())
	return s.w.do(ctx, func(t *wtx) error { return t.appendEntry(&e) })
}

const auditCols = `seq, kind, ref, at, call_id, session, tool, tenant, principal,
	conversation, args_digest, args, stage, effect, rule_id, rationale, reason, revision,
	executed, status, duration_ns, result_size, approved_by, prev_hash, hash`

// scanEntry reads the columns of auditCols (prefixed with alias when given) and then
// extra.
func scanEntry(sc interface{ Scan(...any) error }, e *store.Entry, extra ...any) error {
	var kind string
	var at, dur int64
	dest := append([]any{&e.Seq, &kind, &e.Ref, &at, &e.CallID, &e.Session, &e.Tool,
		&e.Tenant, &e.Principal, &e.Conversation, &e.ArgsDigest, &e.Args, &e.Stage, &e.Effect,
		&e.RuleID, &e.Rationale, &e.Reason, &e.Revision, &e.Executed, &e.Status, &dur,
		&e.ResultSize, &e.ApprovedBy, &e.PrevHash, &e.Hash}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return err
	}
	e.Kind = store.EntryKind(kind)
	e.Time = fromMicros(at)
	e.Duration = time.Duration(dur)
	if len(e.Args) == 0 {
		e.Args = nil
	}
	return nil
}

func prefixed(alias string) string {
	cols := strings.Split(auditCols, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// The record/intent columns, then whether a completion exists and its columns.
var queryCallsSQL = `SELECT ` + prefixed("e") + `, ` + prefixed("c") + `
	FROM audit e LEFT JOIN audit c ON c.kind = 'complete' AND c.ref = e.seq
	WHERE e.kind <> 'complete'`

// QueryCalls returns the calls that match f, oldest first.
func (s *Store) QueryCalls(ctx context.Context, f store.CallFilter) ([]store.CallRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	q := queryCallsSQL
	var args []any
	if !f.Since.IsZero() {
		q += ` AND e.at >= ?`
		args = append(args, store.NormalizeTime(f.Since).UnixMicro())
	}
	if f.Principal != "" {
		q += ` AND e.principal = ?`
		args = append(args, f.Principal)
	}
	if f.Status != "" {
		q += ` AND (CASE WHEN e.kind = 'intent' THEN coalesce(c.status, 'started') ELSE e.status END) = ?`
		args = append(args, string(f.Status))
	}
	q += ` ORDER BY e.seq DESC` // newest first, so Limit can stop early
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: querying calls: %w", err)
	}
	defer rows.Close()
	match := f.Matcher()
	var out []store.CallRecord
	for rows.Next() {
		var e store.Entry
		var c nullEntry
		if err := scanEntry(rows, &e, c.dest()...); err != nil {
			return nil, fmt.Errorf("sqlite: reading calls: %w", err)
		}
		r := e.CallRecord()
		if c.Seq.Valid {
			ce := c.entry()
			r.Complete(&ce)
		}
		if !match.Match(r) {
			continue
		}
		out = append(out, r)
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: reading calls: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// nullEntry scans the columns of a completion from an outer join.
type nullEntry struct {
	Seq, Ref, At, Dur, Size         sql.NullInt64
	Kind, CallID, Session, Tool     sql.NullString
	Tenant, Principal, Conversation sql.NullString
	Digest                          sql.NullString
	Args                            []byte
	Stage, Effect, RuleID           sql.NullString
	Rationale, Reason, Revision     sql.NullString
	Executed                        sql.NullBool
	Status, ApprovedBy, Prev, Hash  sql.NullString
}

func (n *nullEntry) dest() []any {
	return []any{&n.Seq, &n.Kind, &n.Ref, &n.At, &n.CallID, &n.Session, &n.Tool, &n.Tenant,
		&n.Principal, &n.Conversation, &n.Digest, &n.Args, &n.Stage, &n.Effect, &n.RuleID,
		&n.Rationale, &n.Reason, &n.Revision, &n.Executed, &n.Status, &n.Dur, &n.Size,
		&n.ApprovedBy, &n.Prev, &n.Hash}
}

// entry returns the completion fields that matter to a call record.
func (n *nullEntry) entry() store.Entry {
	return store.Entry{
		Seq: n.Seq.Int64, Kind: store.EntryComplete, Ref: n.Ref.Int64, Time: fromMicros(n.At.Int64),
		Stage: n.Stage.String, Effect: n.Effect.String, RuleID: n.RuleID.String,
		Rationale: n.Rationale.String, Reason: n.Reason.String, Status: n.Status.String,
		Duration: time.Duration(n.Dur.Int64), ResultSize: n.Size.Int64, ApprovedBy: n.ApprovedBy.String,
	}
}

// VerifyAudit walks the chain in seq order, in one read transaction: one consistent
// snapshot, so appends made meanwhile are not seen (and cannot look like a problem).
func (s *Store) VerifyAudit(ctx context.Context) (store.VerifyReport, error) {
	if s.closed.Load() {
		return store.VerifyReport{}, store.ErrClosed
	}
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit log: %w", err)
	}
	defer tx.Rollback()
	var headSeq int64
	var headHash string
	if err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`).Scan(&headSeq, &headHash); err != nil {
		return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit head: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+auditCols+` FROM audit ORDER BY seq`)
	if err != nil {
		return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit log: %w", err)
	}
	defer rows.Close()
	var v store.Verifier
	for rows.Next() {
		var e store.Entry
		if err := scanEntry(rows, &e); err != nil {
			return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit log: %w", err)
		}
		v.Add(&e)
	}
	if err := rows.Err(); err != nil {
		return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit log: %w", err)
	}
	v.CheckHead(headSeq, headHash)
	return v.Report(), nil
}
