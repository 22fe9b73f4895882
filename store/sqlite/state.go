package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

// PutCheckpoint stores data under id, replacing what was there.
func (s *Store) PutCheckpoint(ctx context.Context, id string, data []byte) error {
	if id == "" {
		return errors.New("sqlite: checkpoint ID is empty")
	}
	data = append([]byte{}, data...) // never NULL; and the caller keeps its slice
	now := s.now().UnixMicro()
	return s.w.do(ctx, func(t *wtx) error {
		_, err := t.exec(`INSERT INTO checkpoints (id, data, updated) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET data = excluded.data, updated = excluded.updated`, id, data, now)
		if err != nil {
			return fmt.Errorf("sqlite: storing checkpoint %s: %w", id, err)
		}
		return nil
	})
}

// GetCheckpoint returns the data stored under id.
func (s *Store) GetCheckpoint(ctx context.Context, id string) ([]byte, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	var data []byte
	err := s.read.QueryRowContext(ctx, `SELECT data FROM checkpoints WHERE id = ?`, id).Scan(&data)
	if err := s.drv.RowErr(err, "checkpoint", id); err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// ClaimCheckpoint claims the checkpoint under id once. The writer holds the database's
// write lock (BEGIN IMMEDIATE) from the read to the update, in this process and any
// other sharing the file, so exactly one claim reads it unclaimed.
func (s *Store) ClaimCheckpoint(ctx context.Context, id string, claim []byte) ([]byte, error) {
	claim = append([]byte{}, claim...) // never NULL; and the caller keeps its slice
	var prev []byte
	err := s.w.do(ctx, func(t *wtx) error {
		var data []byte
		var claimed sql.NullInt64
		err := t.queryRow(`SELECT data, claimed FROM checkpoints WHERE id = ?`, id).Scan(&data, &claimed)
		if err := s.drv.RowErr(err, "checkpoint", id); err != nil {
			return err
		}
		if claimed.Valid {
			if data == nil {
				data = []byte{}
			}
			return &store.ClaimedError{ID: id, At: fromMicros(claimed.Int64), Data: data}
		}
		now := s.now().UnixMicro()
		res, err := t.exec(`UPDATE checkpoints SET data = ?, claimed = ?, updated = ? WHERE id = ? AND claimed IS NULL`, claim, now, now, id)
		if err != nil {
			return fmt.Errorf("sqlite: claiming checkpoint %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			// Unreachable under the write lock; fail closed rather than claim twice.
			return fmt.Errorf("sqlite: claiming checkpoint %s: %d rows changed (%v)", id, n, err)
		}
		if data == nil {
			data = []byte{}
		}
		prev = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	return prev, nil
}

// CreateCheckpoint stores data under id unless id holds a checkpoint, and returns
// what id holds. The writer holds the write lock from the insert to the read.
func (s *Store) CreateCheckpoint(ctx context.Context, id string, data []byte) ([]byte, error) {
	if id == "" {
		return nil, errors.New("sqlite: checkpoint ID is empty")
	}
	data = append([]byte{}, data...) // never NULL; and the caller keeps its slice
	var got []byte
	err := s.w.do(ctx, func(t *wtx) error {
		if _, err := t.exec(`INSERT INTO checkpoints (id, data, updated) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING`, id, data, s.now().UnixMicro()); err != nil {
			return fmt.Errorf("sqlite: creating checkpoint %s: %w", id, err)
		}
		return s.drv.RowErr(t.queryRow(`SELECT data FROM checkpoints WHERE id = ?`, id).Scan(&got), "checkpoint", id)
	})
	if err != nil {
		return nil, err
	}
	if got == nil {
		got = []byte{}
	}
	return got, nil
}

// DeleteCheckpoints deletes the checkpoints under prefix last written before before.
func (s *Store) DeleteCheckpoints(ctx context.Context, prefix string, before time.Time) (int, error) {
	lo, hi, err := prefixRange(prefix)
	if err != nil {
		return 0, fmt.Errorf("sqlite: deleting checkpoints: %w", err)
	}
	var n int64
	err = s.w.do(ctx, func(t *wtx) error {
		res, err := t.exec(`DELETE FROM checkpoints WHERE id >= ? AND id < ? AND updated < ?`, lo, hi, before.UnixMicro())
		if err != nil {
			return fmt.Errorf("sqlite: deleting checkpoints %s*: %w", prefix, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

func scanPin(sc core.Scanner) (store.Pin, error) { return core.ScanPin(sc, fromMicros) }

// GetPin returns the pin of one tool.
func (s *Store) GetPin(ctx context.Context, name string) (store.Pin, error) {
	if s.closed.Load() {
		return store.Pin{}, store.ErrClosed
	}
	p, err := scanPin(s.read.QueryRowContext(ctx, `SELECT `+core.PinCols+` FROM pins WHERE name = ?`, name))
	if err := s.drv.RowErr(err, "pin", name); err != nil {
		return store.Pin{}, err
	}
	return p, nil
}

// PutPin inserts or replaces a pin.
func (s *Store) PutPin(ctx context.Context, p store.Pin) error {
	if p.Name == "" {
		return errors.New("sqlite: pin name is empty")
	}
	if p.Updated.IsZero() {
		p.Updated = s.now()
	}
	p.Updated = store.NormalizeTime(p.Updated)
	// The write runs on the writer goroutine: keep our own copies of the caller's bytes.
	p.Definition = bytes.Clone(p.Definition)
	p.Pending = bytes.Clone(p.Pending)
	return s.w.do(ctx, func(t *wtx) error {
		_, err := t.exec(`INSERT INTO pins (`+core.PinCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET hash = excluded.hash, definition = excluded.definition,
			approved = excluded.approved, approved_by = excluded.approved_by, updated = excluded.updated,
			pending = excluded.pending, pending_hash = excluded.pending_hash`,
			p.Name, p.Hash, nullBytes(p.Definition), p.Approved, p.ApprovedBy, micros(p.Updated),
			nullBytes(p.Pending), p.PendingHash)
		if err != nil {
			return fmt.Errorf("sqlite: storing pin %s: %w", p.Name, err)
		}
		return nil
	})
}

// ListPins returns every pin, ordered by name.
func (s *Store) ListPins(ctx context.Context) ([]store.Pin, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	return core.List(ctx, s.drv, "listing pins", scanPin, nil, `SELECT `+core.PinCols+` FROM pins ORDER BY name`)
}

// prefixRange returns the half-open range [lo, hi) of the ids that start with prefix,
// in SQLite's byte order, so the delete uses the primary key's index and no pattern
// (whose wildcards a prefix could hold). An empty prefix, or one of 0xff bytes only,
// has no such range.
func prefixRange(prefix string) (lo, hi string, err error) {
	if prefix == "" {
		return "", "", errors.New("the prefix is empty: name the kind of checkpoint to delete")
	}
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return prefix, string(b[:i+1]), nil
		}
	}
	return "", "", fmt.Errorf("checkpoint prefix %q selects no range: name the kind of checkpoint to delete", prefix)
}
