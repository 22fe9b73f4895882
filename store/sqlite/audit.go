package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

// BeginCall commits the intent entry of a call about to run.
func (s *Store) BeginCall(ctx context.Context, r store.CallRecord) (store.CallRef, error) {
	e := store.IntentEntry(r, s.now())
	if err := s.w.audit(ctx, func(t *wtx) error { return t.appendEntry(&e) }); err != nil {
		return store.CallRef{}, err
	}
	return store.CallRef{Seq: e.Seq}, nil
}

// EndCall appends the completion of the call started by ref.
func (s *Store) EndCall(ctx context.Context, ref store.CallRef, c store.Completion) error {
	e := store.CompletionEntry(ref.Seq, c, s.now())
	return s.w.audit(ctx, completion(ref, &e))
}

// EndCallLater queues the completion of the call started by ref (see
// [store.Store.EndCallLater]).
func (s *Store) EndCallLater(ctx context.Context, ref store.CallRef, c store.Completion, done func(error)) error {
	e := store.CompletionEntry(ref.Seq, c, s.now())
	if e.Time.IsZero() {
		return store.ErrUndated // refused now rather than queued to fail
	}
	return s.w.later(ctx, completion(ref, &e), done)
}

// completion is the write of e, the completion of the call started by ref.
func completion(ref store.CallRef, e *store.Entry) func(t *wtx) error {
	return func(t *wtx) error {
		// The schema refuses a completion of anything but an intent without one (a
		// trigger and a unique index), so the common case costs one statement. A
		// refusal rolls back that statement only; find out which it was.
		err := t.appendEntry(e)
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
	}
}

// RecordCall appends a call that never reached execution.
func (s *Store) RecordCall(ctx context.Context, r store.CallRecord) error {
	e := store.RecordEntry(r, s.now())
	return s.w.audit(ctx, func(t *wtx) error { return t.appendEntry(&e) })
}

// RecordCallLater queues a call that never reached execution (see
// [store.Store.RecordCallLater]).
func (s *Store) RecordCallLater(ctx context.Context, r store.CallRecord, done func(error)) error {
	e := store.RecordEntry(r, s.now())
	if e.Time.IsZero() {
		return store.ErrUndated // refused now rather than queued to fail
	}
	return s.w.later(ctx, func(t *wtx) error { return t.appendEntry(&e) }, done)
}

// Flush waits for the writes queued so far (see [store.Store.Flush]).
func (s *Store) Flush(ctx context.Context) error { return s.w.q.Flush(ctx) }

// CheckWrite commits the probe through the writer and reports it, or the failure of
// the last audit write when none has succeeded since (see [store.Store.CheckWrite]).
func (s *Store) CheckWrite(ctx context.Context) error {
	now := s.now().UnixMicro()
	err := s.w.do(ctx, func(t *wtx) error {
		if _, err := t.exec(sqlProbe, now); err != nil {
			return fmt.Errorf("sqlite: writing the probe: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.w.q.AuditErr(); err != nil {
		return fmt.Errorf("sqlite: the probe was written, but the last audit write failed and none has succeeded since: %w", err)
	}
	return nil
}

func scanEntry(sc core.Scanner, e *store.Entry, extra ...any) error {
	return core.ScanEntry(sc, e, fromMicros, extra...)
}

func scanCall(sc core.Scanner, e *store.Entry, c *core.Completion) error {
	return scanEntry(sc, e, c.Dest()...)
}

// The record/intent columns, then those of its completion, if any.
var queryCallsSQL = `SELECT ` + core.Prefixed("e", core.AuditCols) + `, ` + core.CompletionSelect + `
	FROM audit e LEFT JOIN audit c ON c.kind = 'complete' AND c.ref = e.seq
	WHERE e.kind <> 'complete'`

// QueryCalls returns the calls that match f, oldest first.
func (s *Store) QueryCalls(ctx context.Context, f store.CallFilter) ([]store.CallRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := s.w.q.Barrier(ctx); err != nil {
		return nil, err
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
	out, err := core.Calls(rows, f, scanCall)
	if err != nil {
		return nil, fmt.Errorf("sqlite: reading calls: %w", err)
	}
	return out, nil
}

// VerifyAudit walks the chain in seq order, in one read transaction: one consistent
// snapshot, so appends made meanwhile are not seen (and cannot look like a problem).
func (s *Store) VerifyAudit(ctx context.Context) (store.VerifyReport, error) {
	return s.VerifyAuditTo(ctx, store.Head{})
}

// VerifyAuditTo is VerifyAudit checked also against kept, a head recorded outside the
// database.
func (s *Store) VerifyAuditTo(ctx context.Context, kept store.Head) (store.VerifyReport, error) {
	if s.closed.Load() {
		return store.VerifyReport{}, store.ErrClosed
	}
	if err := s.w.q.Barrier(ctx); err != nil {
		return store.VerifyReport{}, err
	}
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit log: %w", err)
	}
	defer tx.Rollback()
	head := new(store.Head)
	err = tx.QueryRowContext(ctx, sqlHead).Scan(&head.Seq, &head.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		head = nil // deleted: the verifier reports it
	} else if err != nil {
		return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit head: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+core.AuditCols+` FROM audit ORDER BY seq`)
	if err != nil {
		return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit log: %w", err)
	}
	defer rows.Close()
	rep, err := core.Verify(rows, head, kept, func(sc core.Scanner, e *store.Entry) error { return scanEntry(sc, e) })
	if err != nil {
		return store.VerifyReport{}, fmt.Errorf("sqlite: reading the audit log: %w", err)
	}
	return rep, nil
}

// AuditHead returns the chain head recorded in audit_head, as committed.
func (s *Store) AuditHead(ctx context.Context) (store.Head, error) {
	if s.closed.Load() {
		return store.Head{}, store.ErrClosed
	}
	var h store.Head
	err := s.read.QueryRowContext(ctx, sqlHead).Scan(&h.Seq, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Head{}, errors.New("sqlite: the audit head record is missing: it was deleted (run 'warden audit verify')")
	}
	if err != nil {
		return store.Head{}, fmt.Errorf("sqlite: reading the audit head: %w", err)
	}
	return h, nil
}
