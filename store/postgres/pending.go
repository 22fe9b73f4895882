package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

func scanPending(row core.Scanner) (store.Pending, error) { return core.ScanPending(row, fromNullTime) }

// CreatePending stores a new pending decision.
func (s *Store) CreatePending(ctx context.Context, p store.Pending) (store.Pending, error) {
	if err := s.check(); err != nil {
		return store.Pending{}, err
	}
	p, err := core.PrepareNew(p, s.now())
	if err != nil {
		return store.Pending{}, err
	}
	err = s.bounded(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `INSERT INTO warden_pending (`+core.PendingCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
		$19, $20, $21, $22, $23)`,
			p.ID, string(p.Kind), p.Question, p.Detail, p.Tool, []byte(p.Args), p.Digest,
			[]byte(p.Evidence), p.Identity.Tenant, p.Identity.Principal, p.Identity.Conversation,
			p.Session, p.Revision, p.Created, nullTime(p.Expires), p.State, p.Scope,
			int64(p.SessionTTL), p.DecidedBy, p.Note, nullTime(p.DecidedAt), p.Consumed, []byte(p.Decision))
		return err
	})
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "23505" { // unique_violation
		return store.Pending{}, fmt.Errorf("postgres: a decision with ID %q exists already", p.ID)
	}
	if err != nil {
		return store.Pending{}, fmt.Errorf("postgres: storing decision %s: %w", p.ID, err)
	}
	return p, nil
}

// GetPending returns one decision.
func (s *Store) GetPending(ctx context.Context, id string) (store.Pending, error) {
	if err := s.check(); err != nil {
		return store.Pending{}, err
	}
	p, err := scanPending(s.pool.QueryRow(ctx, `SELECT `+core.PendingCols+` FROM warden_pending WHERE id = $1`, id))
	if err := s.drv.RowErr(err, "decision", id); err != nil {
		return store.Pending{}, err
	}
	return core.View(p, s.now()), nil
}

// ListPending returns decisions, oldest first.
func (s *Store) ListPending(ctx context.Context, f store.PendingFilter) ([]store.Pending, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	now := s.now()
	q := `SELECT ` + core.PendingCols + ` FROM warden_pending WHERE true`
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if !f.All {
		q += ` AND state = 'pending' AND (expires IS NULL OR expires > ` + arg(now) + `)`
	}
	if f.Session != "" {
		q += ` AND session = ` + arg(f.Session)
	}
	q += ` ORDER BY created, id`
	if f.Limit > 0 {
		q += ` LIMIT ` + arg(f.Limit)
	}
	return core.List(ctx, s.drv, "listing decisions", scanPending, core.ListedView(f, now), q, args...)
}

// Decide records a verdict, exactly once: the row is locked (FOR UPDATE) while the
// verdict is checked and written, and waiters in every replica are notified on commit.
func (s *Store) Decide(ctx context.Context, id string, v store.Verdict) (store.Pending, error) {
	if err := s.check(); err != nil {
		return store.Pending{}, err
	}
	var decided store.Pending
	err := s.bounded(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return s.decide(ctx, tx, id, v, &decided) })
	})
	if err != nil {
		return store.Pending{}, err
	}
	s.waiters.Notify(id)
	return decided, nil
}

// decide checks and writes a verdict in tx.
func (s *Store) decide(ctx context.Context, tx pgx.Tx, id string, v store.Verdict, decided *store.Pending) error {
	p, err := scanPending(tx.QueryRow(ctx, `SELECT `+core.PendingCols+` FROM warden_pending WHERE id = $1 FOR UPDATE`, id))
	if err := s.drv.RowErr(err, "decision", id); err != nil {
		return err
	}
	if p, err = core.Decide(p, v, s.now()); err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE warden_pending SET state = $1, scope = $2, session_ttl_ns = $3,
		decided_by = $4, note = $5, decided_at = $6 WHERE id = $7`,
		p.State, p.Scope, int64(p.SessionTTL), p.DecidedBy, p.Note, p.DecidedAt, id)
	b.Queue(`SELECT pg_notify($1, $2)`, notifyChannel, id) // delivered at commit
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres: deciding %s: %w", id, err)
	}
	*decided = p
	return nil
}

// WaitDecision blocks until the decision is made.
func (s *Store) WaitDecision(ctx context.Context, id string) (store.Pending, error) {
	if err := s.check(); err != nil {
		return store.Pending{}, err
	}
	s.listen()
	wake, remove := s.waiters.Add(id)
	defer remove()
	return core.Wait(ctx, id, s.GetPending, wake, core.WaitOptions{Min: time.Second, Max: time.Second, Now: s.now})
}

// ConsumeApproval finds (and, for scope once, consumes) an approval of this digest.
func (s *Store) ConsumeApproval(ctx context.Context, digest, session string) (store.Pending, bool, error) {
	if err := s.check(); err != nil {
		return store.Pending{}, false, err
	}
	if digest == "" {
		return store.Pending{}, false, nil // fail closed: an empty digest names no call
	}
	now := s.now()
	if session != "" {
		p, ok, err := core.Find(ctx, s.drv, "looking up approvals", scanPending,
			core.AuthorizesAt(digest, session, now), `SELECT `+core.PendingCols+` FROM warden_pending
			WHERE digest = $1 AND state = 'approved' AND scope = 'session' AND session = $2
			ORDER BY decided_at DESC, id`, digest, session)
		if err != nil || ok {
			return p, ok, err
		}
	}
	// Claim the oldest usable once approval. A row another transaction is claiming is
	// skipped rather than waited for: that one will consume it. A clock that does not
	// know the time (zero) compares as NULL: only an approval that never expires is
	// usable then (fail closed, see core.Expired).
	var at any = now
	if now.IsZero() {
		at = nil
	}
	var p store.Pending
	err := s.bounded(ctx, func(ctx context.Context) error {
		var err error
		p, err = scanPending(s.pool.QueryRow(ctx, `UPDATE warden_pending SET consumed = true
		WHERE id = (
			SELECT id FROM warden_pending
			WHERE digest = $1 AND state = 'approved' AND scope = 'once' AND NOT consumed
			AND (expires IS NULL OR expires > $2)
			ORDER BY decided_at, id LIMIT 1
			FOR UPDATE SKIP LOCKED)
		AND NOT consumed
		RETURNING `+core.PendingCols, digest, at))
		return err
	})
	if isNoRows(err) {
		return store.Pending{}, false, nil
	}
	if err != nil {
		return store.Pending{}, false, fmt.Errorf("postgres: consuming an approval: %w", err)
	}
	return p, true, nil
}
