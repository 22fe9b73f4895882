package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

// PutCheckpoint stores data under id, replacing what was there.
func (s *Store) PutCheckpoint(ctx context.Context, id string, data []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	if id == "" {
		return errors.New("postgres: checkpoint ID is empty")
	}
	if data == nil {
		data = []byte{} // the column is NOT NULL
	}
	now := store.NormalizeTime(s.now())
	err := s.bounded(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `INSERT INTO warden_checkpoints (id, data, updated) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET data = excluded.data, updated = excluded.updated`, id, data, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: storing checkpoint %s: %w", id, err)
	}
	return nil
}

// GetCheckpoint returns the data stored under id.
func (s *Store) GetCheckpoint(ctx context.Context, id string) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM warden_checkpoints WHERE id = $1`, id).Scan(&data)
	if err := s.drv.RowErr(err, "checkpoint", id); err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// ClaimCheckpoint claims the checkpoint under id once: the row is locked (FOR UPDATE)
// from the read to the update, so of concurrent claims, in any replicas, exactly one
// reads it unclaimed.
func (s *Store) ClaimCheckpoint(ctx context.Context, id string, claim []byte) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if claim == nil {
		claim = []byte{} // the column is NOT NULL
	}
	var prev []byte
	err := s.bounded(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return s.claim(ctx, tx, id, claim, &prev) })
	})
	if err != nil {
		return nil, err
	}
	return prev, nil
}

// claim claims checkpoint id in tx.
func (s *Store) claim(ctx context.Context, tx pgx.Tx, id string, claim []byte, prev *[]byte) error {
	var data []byte
	var claimed *time.Time
	err := tx.QueryRow(ctx, `SELECT data, claimed FROM warden_checkpoints WHERE id = $1 FOR UPDATE`, id).Scan(&data, &claimed)
	if err := s.drv.RowErr(err, "checkpoint", id); err != nil {
		return err
	}
	if data == nil {
		data = []byte{}
	}
	if claimed != nil {
		return &store.ClaimedError{ID: id, At: claimed.UTC(), Data: data}
	}
	now := store.NormalizeTime(s.now())
	if _, err := tx.Exec(ctx, `UPDATE warden_checkpoints SET data = $2, claimed = $3, updated = $3 WHERE id = $1`, id, claim, now); err != nil {
		return fmt.Errorf("postgres: claiming checkpoint %s: %w", id, err)
	}
	*prev = data
	return nil
}

func scanPin(sc core.Scanner) (store.Pin, error) { return core.ScanPin(sc, utc) }

// CreateCheckpoint stores data under id unless id holds a checkpoint, and returns
// what id holds. The read is a statement of its own, so it sees the row of a
// concurrent creator whose insert this one's waited for.
func (s *Store) CreateCheckpoint(ctx context.Context, id string, data []byte) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, errors.New("postgres: checkpoint ID is empty")
	}
	if data == nil {
		data = []byte{} // the column is NOT NULL
	}
	var got []byte
	err := s.bounded(ctx, func(ctx context.Context) error {
		if _, err := s.pool.Exec(ctx, `INSERT INTO warden_checkpoints (id, data, updated) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`, id, data, store.NormalizeTime(s.now())); err != nil {
			return err
		}
		return s.pool.QueryRow(ctx, `SELECT data FROM warden_checkpoints WHERE id = $1`, id).Scan(&got)
	})
	if err != nil {
		if isNoRows(err) {
			return nil, fmt.Errorf("postgres: creating checkpoint %s: deleted while it was created: %w", id, store.ErrNotFound)
		}
		return nil, fmt.Errorf("postgres: creating checkpoint %s: %w", id, err)
	}
	if got == nil {
		got = []byte{}
	}
	return got, nil
}

// DeleteCheckpoints deletes the checkpoints under prefix last written before before.
func (s *Store) DeleteCheckpoints(ctx context.Context, prefix string, before time.Time) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if prefix == "" {
		return 0, errors.New("postgres: deleting checkpoints: the prefix is empty: name the kind of checkpoint to delete")
	}
	var n int64
	err := s.bounded(ctx, func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, `DELETE FROM warden_checkpoints WHERE starts_with(id, $1) AND updated < $2`, prefix, store.NormalizeTime(before))
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: deleting checkpoints %s*: %w", prefix, err)
	}
	return int(n), nil
}

// GetPin returns the pin of one tool.
func (s *Store) GetPin(ctx context.Context, name string) (store.Pin, error) {
	if err := s.check(); err != nil {
		return store.Pin{}, err
	}
	p, err := scanPin(s.pool.QueryRow(ctx, `SELECT `+core.PinCols+` FROM warden_pins WHERE name = $1`, name))
	if err := s.drv.RowErr(err, "pin", name); err != nil {
		return store.Pin{}, err
	}
	return p, nil
}

// PutPin inserts or replaces a pin.
func (s *Store) PutPin(ctx context.Context, p store.Pin) error {
	if err := s.check(); err != nil {
		return err
	}
	if p.Name == "" {
		return errors.New("postgres: pin name is empty")
	}
	if p.Updated.IsZero() {
		p.Updated = s.now()
	}
	err := s.bounded(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `INSERT INTO warden_pins (`+core.PinCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (name) DO UPDATE SET hash = excluded.hash, definition = excluded.definition,
		approved = excluded.approved, approved_by = excluded.approved_by, updated = excluded.updated,
		pending = excluded.pending, pending_hash = excluded.pending_hash`,
			p.Name, p.Hash, []byte(p.Definition), p.Approved, p.ApprovedBy, store.NormalizeTime(p.Updated),
			[]byte(p.Pending), p.PendingHash)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: storing pin %s: %w", p.Name, err)
	}
	return nil
}

// ListPins returns every pin, ordered by name.
func (s *Store) ListPins(ctx context.Context) ([]store.Pin, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return core.List(ctx, s.drv, "listing pins", scanPin, nil, `SELECT `+core.PinCols+` FROM warden_pins ORDER BY name`)
}
