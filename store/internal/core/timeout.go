package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/store"
)

// DefaultWriteTimeout bounds every write of a store whose options set none.
const DefaultWriteTimeout = 5 * time.Second

// DefaultCommitDelay is how long a batch of deferred writes waits for company when
// the options set no delay.
const DefaultCommitDelay = 2 * time.Millisecond

// timeoutError is a write that hit the store's write timeout.
type timeoutError struct {
	driver string
	limit  time.Duration
	cause  error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%s: the database did not answer within the write timeout of %s (set Options.WriteTimeout or the DSN option write_timeout= to change it): %v",
		e.driver, e.limit, e.cause)
}

// Is makes the error match store.ErrWriteTimeout.
func (e *timeoutError) Is(target error) bool { return target == store.ErrWriteTimeout }

// WriteErr returns err as it is, unless wctx (a write's context, bounded by the write
// timeout limit) hit its deadline while parent (the caller's context, nil for a write
// nobody waits for) had not ended: then it is an error that matches
// store.ErrWriteTimeout, says that the database did not answer within limit and how
// to change it, and keeps err's text.
func WriteErr(driver string, limit time.Duration, parent, wctx context.Context, err error) error {
	if err == nil || !expired(wctx) {
		return err
	}
	if parent != nil && (parent.Err() != nil || expired(parent)) {
		return err
	}
	if errors.Is(err, store.ErrWriteTimeout) {
		return err
	}
	return &timeoutError{driver: driver, limit: limit, cause: err}
}

// Durations resolves a store's write timeout and commit delay options: 0 means the
// default; a negative delay means none (deferred writes commit without waiting), and
// a negative timeout is the default too (every write has a deadline).
func Durations(writeTimeout, commitDelay time.Duration) (time.Duration, time.Duration) {
	if writeTimeout <= 0 {
		writeTimeout = DefaultWriteTimeout
	}
	switch {
	case commitDelay == 0:
		commitDelay = DefaultCommitDelay
	case commitDelay < 0:
		commitDelay = 0
	}
	return writeTimeout, commitDelay
}

// ParseDuration parses the value of the DSN option name (a Go duration such as 300ms)
// for driver's errors; negative durations are refused.
func ParseDuration(driver, name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: DSN option %s=%q: want a duration such as 5s or 300ms", driver, name, v)
	}
	return d, nil
}

// expired reports whether ctx's deadline has passed. It also reads the clock: a
// timer the driver set for the same instant may have fired before ctx's own.
func expired(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
