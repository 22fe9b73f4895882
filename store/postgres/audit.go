package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

// BeginCall commits the intent entry of a call about to run.
func (s *Store) BeginCall(ctx context.Context, r store.CallRecord) (store.CallRef, error) {
	e := store.IntentEntry(r, s.now())
	if err := s.app.append(ctx, &e); err != nil {
		return store.CallRef{}, err
	}
	return store.CallRef{Seq: e.Seq}, nil
}

// EndCall appends the completion of the call started by ref.
func (s *Store) EndCall(ctx context.Context, ref store.CallRef, c store.Completion) error {
	e := store.CompletionEntry(ref.Seq, c, s.now())
	return s.app.append(ctx, &e)
}

// RecordCall appends a call that never reached execution.
func (s *Store) RecordCall(ctx context.Context, r store.CallRecord) error {
	e := store.RecordEntry(r, s.now())
	return s.app.append(ctx, &e)
}

// EndCallLater queues the completion of the call started by ref (see
// [store.Store.EndCallLater]).
func (s *Store) EndCallLater(ctx context.Context, ref store.CallRef, c store.Completion, done func(error)) error {
	e := store.CompletionEntry(ref.Seq, c, s.now())
	return s.app.later(ctx, &e, done)
}

// RecordCallLater queues a call that never reached execution (see
// [store.Store.RecordCallLater]).
func (s *Store) RecordCallLater(ctx context.Context, r store.CallRecord, done func(error)) error {
	e := store.RecordEntry(r, s.now())
	return s.app.later(ctx, &e, done)
}

// Flush waits for the appends queued so far (see [store.Store.Flush]).
func (s *Store) Flush(ctx context.Context) error { return s.app.q.Flush(ctx) }

// CheckWrite commits the probe through the appender and reports it, or the failure of
// the last audit write when none has succeeded since (see [store.Store.CheckWrite]).
func (s *Store) CheckWrite(ctx context.Context) error {
	if err := s.app.probe(ctx, store.NormalizeTime(s.now())); err != nil {
		return err
	}
	if err := s.app.q.AuditErr(); err != nil {
		return fmt.Errorf("postgres: the probe was written, but the last audit write failed and none has succeeded since: %w", err)
	}
	return nil
}

func scanEntry(sc core.Scanner, e *store.Entry, extra ...any) error {
	return core.ScanEntry(sc, e, utc, extra...)
}

func scanCall(sc core.Scanner, e *store.Entry, c *core.Completion) error {
	return scanEntry(sc, e, c.Dest()...)
}

// QueryCalls returns the calls that match f, oldest first.
func (s *Store) QueryCalls(ctx context.Context, f store.CallFilter) ([]store.CallRecord, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.app.q.Barrier(ctx); err != nil {
		return nil, err
	}
	var q strings.Builder
	q.WriteString(`SELECT ` + core.Prefixed("e", core.AuditCols) + `, ` + core.CompletionSelect + `
		FROM warden_audit e LEFT JOIN warden_audit c ON c.kind = 'complete' AND c.ref = e.seq
		WHERE e.kind <> 'complete'`)
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if !f.Since.IsZero() {
		q.WriteString(` AND e.at >= ` + arg(store.NormalizeTime(f.Since)))
	}
	if f.Principal != "" {
		q.WriteString(` AND e.principal = ` + arg(f.Principal))
	}
	if f.Status != "" {
		q.WriteString(` AND (CASE WHEN e.kind = 'intent' THEN coalesce(c.status, 'started') ELSE e.status END) = ` + arg(string(f.Status)))
	}
	q.WriteString(` ORDER BY e.seq DESC`) // newest first, so Limit can stop early
	rows, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: querying calls: %w", err)
	}
	defer rows.Close()
	out, err := core.Calls(rows, f, scanCall)
	if err != nil {
		return nil, fmt.Errorf("postgres: reading calls: %w", err)
	}
	return out, nil
}

// VerifyAudit walks the chain in seq order in one REPEATABLE READ snapshot, so appends
// made meanwhile are not seen (and cannot look like a problem).
func (s *Store) VerifyAudit(ctx context.Context) (store.VerifyReport, error) {
	return s.VerifyAuditTo(ctx, store.Head{})
}

// VerifyAuditTo is VerifyAudit checked also against kept, a head recorded outside the
// database.
func (s *Store) VerifyAuditTo(ctx context.Context, kept store.Head) (store.VerifyReport, error) {
	if err := s.check(); err != nil {
		return store.VerifyReport{}, err
	}
	if err := s.app.q.Barrier(ctx); err != nil {
		return store.VerifyReport{}, err
	}
	var rep store.VerifyReport
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		head := new(store.Head)
		err := tx.QueryRow(ctx, sqlReadHead).Scan(&head.Seq, &head.Hash)
		if errors.Is(err, pgx.ErrNoRows) {
			head = nil // deleted: the verifier reports it
		} else if err != nil {
			return fmt.Errorf("reading the audit head: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT `+core.AuditCols+` FROM warden_audit ORDER BY seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		rep, err = core.Verify(rows, head, kept, func(sc core.Scanner, e *store.Entry) error { return scanEntry(sc, e) })
		return err
	})
	if err != nil {
		return store.VerifyReport{}, fmt.Errorf("postgres: reading the audit log: %w", err)
	}
	return rep, nil
}

const sqlReadHead = `SELECT seq, hash FROM warden_audit_head WHERE id = 1`

// AuditHead returns the chain head recorded in warden_audit_head, as committed.
func (s *Store) AuditHead(ctx context.Context) (store.Head, error) {
	if err := s.check(); err != nil {
		return store.Head{}, err
	}
	var h store.Head
	err := s.pool.QueryRow(ctx, sqlReadHead).Scan(&h.Seq, &h.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Head{}, errors.New("postgres: the audit head record is missing: it was deleted (run 'warden audit verify')")
	}
	if err != nil {
		return store.Head{}, fmt.Errorf("postgres: reading the audit head: %w", err)
	}
	return h, nil
}
