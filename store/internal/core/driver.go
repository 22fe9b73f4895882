package core

import (
	"context"
	"fmt"

	"github.com/wardenhq/warden/store"
)

// Driver is what the shared lookups need to know of an implementation's database.
type Driver struct {
	Name   string           // "sqlite", "postgres": the prefix of the errors it returns
	NoRows func(error) bool // whether an error of a row's Scan says there was no row
	// Query runs a read query; done closes the rows it returns.
	Query func(ctx context.Context, q string, args ...any) (rows Rows, done func(), err error)
}

// RowErr is the error of reading the one row that names what by key, err being what
// the row's Scan returned: nil for nil, store.ErrNotFound ("<what> <key, quoted>") for
// no row, else "<Name>: reading <what> <key>: <err>".
func (d Driver) RowErr(err error, what, key string) error {
	if err == nil {
		return nil
	}
	if d.NoRows(err) {
		return fmt.Errorf("%w: %s %q", store.ErrNotFound, what, key)
	}
	return fmt.Errorf("%s: reading %s %s: %w", d.Name, what, key, err)
}

// List runs query q and returns what [Select] returns of its rows. Every error is
// "<Name>: <doing>: ...".
func List[T any](ctx context.Context, d Driver, doing string, scan func(Scanner) (T, error), keep func(T) (T, bool), q string, args ...any) ([]T, error) {
	rows, done, err := d.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", d.Name, doing, err)
	}
	defer done()
	out, err := Select(rows, scan, keep)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", d.Name, doing, err)
	}
	return out, nil
}

// Find runs query q and returns what [First] returns of its rows. Every error is
// "<Name>: <doing>: ...".
func Find[T any](ctx context.Context, d Driver, doing string, scan func(Scanner) (T, error), match func(T) bool, q string, args ...any) (T, bool, error) {
	var zero T
	rows, done, err := d.Query(ctx, q, args...)
	if err != nil {
		return zero, false, fmt.Errorf("%s: %s: %w", d.Name, doing, err)
	}
	defer done()
	v, ok, err := First(rows, scan, match)
	if err != nil {
		return zero, false, fmt.Errorf("%s: %s: %w", d.Name, doing, err)
	}
	return v, ok, nil
}
