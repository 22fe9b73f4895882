package checkpoint

// This file keeps checkpoints in a store instead of files.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// Store is what a checkpoint needs of a Warden store (package store's Store has it):
// keeping a checkpoint under an id and swapping it for its claim exactly once.
type Store interface {
	GetCheckpoint(ctx context.Context, id string) ([]byte, error)
	PutCheckpoint(ctx context.Context, id string, data []byte) error
	ClaimCheckpoint(ctx context.Context, id string, claim []byte) ([]byte, error)
}

// StoredPrefix starts the id of a checkpoint kept in a store.
const StoredPrefix = "ckpt_"

// StoreTimeout bounds one store operation of warden run.
const StoreTimeout = 30 * time.Second

// GetStored reads the checkpoint stored under id and checks it as a file's
// would be. An unknown id and a checkpoint claimed or resumed already are exit 2.
func GetStored(ctx context.Context, st Store, id string, key []byte, keyFile string) (*Checkpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
	defer cancel()
	data, err := st.GetCheckpoint(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, refusef("no checkpoint %s in the store: pass the id (or the file) a paused `warden run` printed, with the store it paused with", id)
	case err != nil:
		return nil, fmt.Errorf("reading checkpoint %s from the store: %w", id, err)
	}
	if c, ok := parseClaim(data); ok {
		return nil, c.refusal(id)
	}
	cp, err := Parse(id, data, key, keyFile)
	if err != nil {
		return nil, refuse(err)
	}
	if cp.Kept != "store:"+id {
		// A file written into the store, or a row copied under another id: each copy
		// would have a claim of its own.
		return nil, refuse(&warden.ConfigError{File: id, Msg: "this checkpoint was kept as " + cp.Kept + ", not as " + id + " in this store: a copy of it is not resumed, or the checkpoint could run twice; nothing ran", Hint: "resume the checkpoint where the pause kept it"})
	}
	cp.stored = true
	return cp, nil
}

// storeClaim is a stored checkpoint this process claimed.
type storeClaim struct {
	st  Store
	id  string
	rec Claim
}

// ClaimStored claims a stored checkpoint with the store's compare-and-swap: the
// checkpoint is replaced by the claim, and exactly one resume gets it.
func ClaimStored(ctx context.Context, st Store, id string, saved *Checkpoint, rec Claim) (Claimed, error) {
	cctx, cancel := context.WithTimeout(ctx, StoreTimeout)
	defer cancel()
	prev, err := st.ClaimCheckpoint(cctx, id, rec.encode())
	var ce *store.ClaimedError
	switch {
	case errors.As(err, &ce):
		c, ok := parseClaim(ce.Data)
		if !ok {
			c = Claim{State: StateClaimed, ClaimedAt: ce.At}
		}
		return nil, c.refusal(id)
	case errors.Is(err, store.ErrNotFound):
		return nil, refusef("no checkpoint %s in the store: pass the id (or the file) a paused `warden run` printed, with the store it paused with", id)
	case err != nil:
		return nil, fmt.Errorf("claiming checkpoint %s in the store: %w", id, err)
	}
	c := &storeClaim{st: st, id: id, rec: rec}
	if !bytes.Equal(prev, saved.raw) {
		// Replaced between the check and the claim: it is claimed now, and nothing ran.
		const why = "the checkpoint changed between its check and its claim"
		if ferr := c.Finish(ctx, StateRefused, why); ferr != nil {
			return nil, fmt.Errorf("claiming checkpoint %s: %s, and recording that failed: %w", id, why, ferr)
		}
		return nil, refusef("checkpoint %s changed while it was being resumed; nothing ran", id)
	}
	return c, nil
}

// finish replaces the claim with its final record; the checkpoint stays claimed.
func (c *storeClaim) Finish(ctx context.Context, state, note string) error {
	c.rec.State, c.rec.FinishedAt, c.rec.Note = state, time.Now().UTC().Truncate(time.Second), note
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StoreTimeout)
	defer cancel()
	return c.st.PutCheckpoint(ctx, c.id, c.rec.encode())
}
