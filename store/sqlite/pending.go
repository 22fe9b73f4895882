package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

func scanPending(sc core.Scanner) (store.Pending, error) { return core.ScanPending(sc, fromMicros) }

// CreatePending stores a new pending decision.
func (s *Store) CreatePending(ctx context.Context, p store.Pending) (store.Pending, error) {
	p, err := core.PrepareNew(p, s.now())
	if err != nil {
		return store.Pending{}, err
	}
	err = s.w.do(ctx, func(t *wtx) error {
		var n int
		if err := t.queryRow(`SELECT count(*) FROM pending WHERE id = ?`, p.ID).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("sqlite: a decision with ID %q %w", p.ID, errExists)
		}
		_, err := t.exec(`INSERT INTO pending (`+core.PendingCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, string(p.Kind), p.Question, p.Detail, p.Tool, nullBytes(p.Args), p.Digest,
			nullBytes(p.Evidence), p.Identity.Tenant, p.Identity.Principal,
			p.Identity.Conversation, p.Session, p.Revision, micros(p.Created),
			micros(p.Expires), p.State, p.Scope, int64(p.SessionTTL), p.DecidedBy, p.Note,
			micros(p.DecidedAt), p.Consumed, nullBytes(p.Decision))
		if err != nil {
			return fmt.Errorf("sqlite: storing decision %s: %w", p.ID, err)
		}
		return nil
	})
	if err != nil {
		return store.Pending{}, err
	}
	return p, nil
}

// GetPending returns one decision.
func (s *Store) GetPending(ctx context.Context, id string) (store.Pending, error) {
	if s.closed.Load() {
		return store.Pending{}, store.ErrClosed
	}
	p, err := scanPending(s.read.QueryRowContext(ctx, `SELECT `+core.PendingCols+` FROM pending WHERE id = ?`, id))
	if err := s.drv.RowErr(err, "decision", id); err != nil {
		return store.Pending{}, err
	}
	return core.View(p, s.now()), nil
}

// ListPending returns decisions, oldest first.
func (s *Store) ListPending(ctx context.Context, f store.PendingFilter) ([]store.Pending, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	now := s.now()
	q := `SELECT ` + core.PendingCols + ` FROM pending WHERE 1 = 1`
	var args []any
	if !f.All {
		q += ` AND state = 'pending' AND (expires = 0 OR expires > ?)`
		args = append(args, now.UnixMicro())
	}
	if f.Session != "" {
		q += ` AND session = ?`
		args = append(args, f.Session)
	}
	q += ` ORDER BY created, id`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	return core.List(ctx, s.drv, "listing decisions", scanPending, core.ListedView(f, now), q, args...)
}

// Decide records a verdict, exactly once.
func (s *Store) Decide(ctx context.Context, id string, v store.Verdict) (store.Pending, error) {
	var decided store.Pending
	err := s.w.do(ctx, func(t *wtx) error {
		p, err := scanPending(t.queryRow(`SELECT `+core.PendingCols+` FROM pending WHERE id = ?`, id))
		if err := s.drv.RowErr(err, "decision", id); err != nil {
			return err
		}
		p, err = core.Decide(p, v, s.now())
		if err != nil {
			return err
		}
		// The write lock is held, so the state cannot have changed since the read; the
		// condition is a second guard for exactly-once.
		res, err := t.exec(`UPDATE pending SET state = ?, scope = ?, session_ttl_ns = ?,
			decided_by = ?, note = ?, decided_at = ? WHERE id = ? AND state = 'pending'`,
			p.State, p.Scope, int64(p.SessionTTL), p.DecidedBy, p.Note, micros(p.DecidedAt), id)
		if err != nil {
			return fmt.Errorf("sqlite: deciding %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("%w: decision %q", store.ErrAlreadyDecided, id)
		}
		decided = p
		return nil
	})
	if err != nil {
		return store.Pending{}, err
	}
	s.waiters.Notify(id)
	return decided, nil
}

// WaitDecision blocks until the decision is made.
func (s *Store) WaitDecision(ctx context.Context, id string) (store.Pending, error) {
	wake, remove := s.waiters.Add(id)
	defer remove()
	return core.Wait(ctx, id, s.GetPending, wake, core.WaitOptions{Min: 50 * time.Millisecond, Max: time.Second, Now: s.now})
}

// ConsumeApproval finds (and, for scope once, consumes) an approval of this digest.
func (s *Store) ConsumeApproval(ctx context.Context, digest, session string) (store.Pending, bool, error) {
	if s.closed.Load() {
		return store.Pending{}, false, store.ErrClosed
	}
	if digest == "" {
		return store.Pending{}, false, nil // fail closed: an empty digest names no call
	}
	// A session approval is only read, never changed: no need for the writer.
	if session != "" {
		p, ok, err := core.Find(ctx, s.drv, "looking up approvals", scanPending,
			core.AuthorizesAt(digest, session, s.now()), `SELECT `+core.PendingCols+` FROM pending
			WHERE digest = ? AND state = 'approved' AND scope = 'session' AND session = ?
			ORDER BY decided_at DESC, id`, digest, session)
		if err != nil || ok {
			return p, ok, err
		}
	}
	var got store.Pending
	var ok bool
	err := s.w.do(ctx, func(t *wtx) error {
		got, ok = store.Pending{}, false // the op may run again
		now := s.now()
		p, err := scanPending(t.queryRow(`SELECT `+core.PendingCols+` FROM pending
			WHERE digest = ? AND state = 'approved' AND scope = 'once' AND consumed = 0
			AND (expires = 0 OR expires > ?)
			ORDER BY decided_at, id LIMIT 1`, digest, now.UnixMicro()))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sqlite: looking up approvals: %w", err)
		}
		if !core.Authorizes(p, digest, session, now) {
			return nil
		}
		res, err := t.exec(`UPDATE pending SET consumed = 1 WHERE id = ? AND consumed = 0`, p.ID)
		if err != nil {
			return fmt.Errorf("sqlite: consuming approval %s: %w", p.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return nil // someone else consumed it
		}
		p.Consumed = true
		got, ok = p, true
		return nil
	})
	if err != nil {
		return store.Pending{}, false, err
	}
	return got, ok, nil
}
