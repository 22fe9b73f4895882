package main

import (
	"context"
	"fmt"

	"github.com/wardenhq/warden/store"
)

// program is one run of a warden command, built from its flags. The constructor of each
// program (newCheckProgram, newAuditProgram, ...) checks the flags and reads nothing;
// Run does the work once and returns how it ended (an *exitError for every exit but 0);
// Close releases what Run opened (a store) and may be called whatever Run returned.
// Nothing in a program changes process-wide state: what only the warden process may
// change it asks of a *process, so tests drive programs in-process.
type program interface {
	Run(ctx context.Context) error
	Close() error
}

// execute is what a cobra command does with the program its flags built: nothing when
// building failed (err is then the answer), else Run, then Close. A failing Close is
// the answer only when Run succeeded.
func execute(ctx context.Context, p program, err error) (rerr error) {
	if err != nil {
		return err
	}
	defer func() {
		if cerr := p.Close(); cerr != nil && rerr == nil {
			rerr = cerr
		}
	}()
	return p.Run(ctx)
}

// noResources is embedded by the programs that hold nothing to close.
type noResources struct{}

// Close does nothing: the program holds nothing.
func (noResources) Close() error { return nil }

// storeConn is the store a store command (approvals, audit, pins) works on: opened by
// the first open (with openStore's checks), closed by Close.
type storeConn struct {
	flag string // the --store flag; "" means $WARDEN_STORE, else the default
	st   store.Store
}

// open opens the store once; later calls return the same one.
func (c *storeConn) open(ctx context.Context) (store.Store, error) {
	if c.st == nil {
		st, err := openStore(ctx, c.flag)
		if err != nil {
			return nil, err
		}
		c.st = st
	}
	return c.st, nil
}

// Close closes the store if open opened it.
func (c *storeConn) Close() error {
	if c.st == nil {
		return nil
	}
	st := c.st
	c.st = nil
	if err := st.Close(); err != nil {
		return internalError(fmt.Errorf("closing the store: %w", err))
	}
	return nil
}
