// Package sqlite is the embedded [store.Store]: one SQLite file, nothing to install
// (modernc.org/sqlite, pure Go, no cgo). Importing it registers the "sqlite" DSN scheme
// with [store.Open]:
//
//	sqlite:///var/lib/warden/warden.db   absolute path
//	sqlite://./warden.db                 relative to the working directory (the default)
//
// DSN options, as a query string: busy_timeout=DURATION (how long to wait for another
// process's write lock, default 10s), sync=normal (see
// [Options.AllowLossOnPowerFailure]), write_timeout=DURATION ([Options.WriteTimeout])
// and commit_delay=DURATION ([Options.CommitDelay]; 0 for none). Unknown options are
// an error.
//
// # Concurrency
//
// The database runs in WAL mode: readers never block the writer or each other. All
// writes of a Store go through one goroutine that owns the only write connection and
// commits in groups: the writes queued by many callers while the previous transaction
// committed go into the next transaction together, and each caller gets its own result
// (one caller's failure never commits in part, nor undoes another's write). A group of
// deferred writes only ([store.Store.EndCallLater]) waits up to [Options.CommitDelay]
// for a write somebody waits for, to share its commit. Each group runs under
// [Options.WriteTimeout], waiting for another process's write lock included. The
// audit chain's next seq and hash are computed there, so they are serialized. Several
// processes may open the same file: each transaction takes SQLite's write lock (BEGIN
// IMMEDIATE) and reads the chain head afresh, so the chain stays linear.
//
// # Durability
//
// By default every commit is synced to disk (synchronous=FULL): a call's intent entry
// survives a crash of the process and of the machine before the tool runs. With
// [Options.AllowLossOnPowerFailure] (synchronous=NORMAL), commits survive a crash of the
// process but the last ones may be lost if the machine loses power.
//
// # Waiting for decisions
//
// [Store.WaitDecision] is woken at once by a [Store.Decide] in the same process, and
// polls the file (50ms, doubling to 1s) to see decisions made by other processes.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

func init() {
	store.Register("sqlite", func(ctx context.Context, dsn string) (store.Store, error) {
		path, opts, err := ParseDSN(dsn)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path, opts)
	})
}

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultPath is the database file used when a DSN names none.
const DefaultPath = "./warden.db"

// Options tunes a Store. A nil *Options means the defaults; the zero value is the
// strictest setting.
type Options struct {
	// BusyTimeout is how long a write waits for another process's write lock
	// before it fails. Default 10s.
	BusyTimeout time.Duration
	// AllowLossOnPowerFailure syncs the write-ahead log only at checkpoints
	// (synchronous=NORMAL) instead of on every commit: faster, still safe when the
	// process crashes, but the newest commits, audit entries included, can be lost
	// when the machine loses power or the OS crashes.
	AllowLossOnPowerFailure bool
	// WriteTimeout bounds every write from the call on (waiting behind earlier
	// writes, the group commit it is part of and the write lock included): a write
	// that has not committed by then fails with
	// an error matching [store.ErrWriteTimeout]. It cuts a BusyTimeout that is longer.
	// Default (zero or negative) 5s.
	WriteTimeout time.Duration
	// CommitDelay is how long deferred writes ([store.Store.EndCallLater],
	// [store.Store.RecordCallLater]) wait for a write somebody waits for, to commit
	// together, before they are committed alone. Zero means the default, 2ms; a
	// negative delay means none.
	CommitDelay time.Duration
	// Now is the store's clock: it times audit entries, pending decisions, verdicts,
	// claims and pins, and judges every expiry. nil means time.Now. Tests inject a
	// clock they move, so expiry is tested without waiting.
	Now func() time.Time
}

// ParseDSN splits a "sqlite://PATH?OPTIONS" DSN into its path and options.
func ParseDSN(dsn string) (path string, opts *Options, err error) {
	rest, ok := strings.CutPrefix(dsn, "sqlite://")
	if !ok {
		return "", nil, fmt.Errorf("sqlite: DSN %q does not start with sqlite://", dsn)
	}
	path, rawQuery, _ := strings.Cut(rest, "?")
	if path == "" {
		path = DefaultPath
	}
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", nil, fmt.Errorf("sqlite: DSN options: %w", err)
	}
	opts = &Options{}
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "busy_timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return "", nil, fmt.Errorf("sqlite: DSN option busy_timeout=%q: want a duration such as 10s", v)
			}
			opts.BusyTimeout = d
		case "sync":
			switch strings.ToLower(v) {
			case "full":
				opts.AllowLossOnPowerFailure = false
			case "normal":
				opts.AllowLossOnPowerFailure = true
			default:
				return "", nil, fmt.Errorf("sqlite: DSN option sync=%q: want full or normal", v)
			}
		case "write_timeout":
			if opts.WriteTimeout, err = core.ParseDuration("sqlite", k, v); err != nil {
				return "", nil, err
			}
		case "commit_delay":
			if opts.CommitDelay, err = core.ParseDuration("sqlite", k, v); err != nil {
				return "", nil, err
			}
			if opts.CommitDelay == 0 {
				opts.CommitDelay = -1 // none
			}
		default:
			return "", nil, fmt.Errorf("sqlite: unknown DSN option %q (known: busy_timeout, sync, write_timeout, commit_delay)", k)
		}
	}
	return path, opts, nil
}

// Store is the SQLite [store.Store]. It is safe for concurrent use, also by several
// processes opening the same file.
type Store struct {
	path    string
	read    *sql.DB     // pool of read-only connections
	w       *writer     // owns the only write connection
	drv     core.Driver // the shared lookups' view of read
	waiters core.Waiters
	now     func() time.Time
	closed  atomic.Bool // set by Close; reads check it (writes learn it from w)
}

var _ store.Store = (*Store)(nil)

// Open opens (creating when needed) the database file at path and applies pending
// migrations. opts may be nil.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	timeout, delay := core.Durations(o.WriteTimeout, o.CommitDelay)
	if path == "" {
		path = DefaultPath
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: database path %q must not contain '?' or '#'", path)
	}
	sync := "FULL"
	if o.AllowLossOnPowerFailure {
		sync = "NORMAL"
	}
	params := url.Values{}
	params.Set("_busy_timeout", strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10))
	params.Set("_journal_mode", "WAL")
	params.Set("_foreign_keys", "1")
	params.Set("_synchronous", sync)

	wparams := cloneValues(params)
	wparams.Set("_txlock", "immediate") // take the write lock at BEGIN: no deadlocking upgrades
	wdb, err := sql.Open("sqlite", path+"?"+wparams.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	if err := migrate(ctx, wdb, o.Now); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}

	rparams := cloneValues(params)
	rparams.Set("_query_only", "1")
	rdb, err := sql.Open("sqlite", path+"?"+rparams.Encode())
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)

	w, err := newWriter(ctx, wdb, timeout, delay)
	if err != nil {
		rdb.Close()
		wdb.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	drv := core.Driver{Name: "sqlite", NoRows: func(err error) bool { return errors.Is(err, sql.ErrNoRows) },
		Query: func(ctx context.Context, q string, args ...any) (core.Rows, func(), error) {
			rows, err := rdb.QueryContext(ctx, q, args...)
			if err != nil {
				return nil, nil, err
			}
			return rows, func() { rows.Close() }, nil
		}}
	return &Store{path: path, read: rdb, w: w, drv: drv, now: o.Now}, nil
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = slices.Clone(vs)
	}
	return c
}

// Close commits the queued writes (deferred ones included), then closes the database.
// It is safe to call more than once.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.waiters.NotifyAll() // waiters re-read, and learn that the store is closed
	werr := s.w.close()
	return errors.Join(werr, s.read.Close())
}

// Path returns the database file path.
func (s *Store) Path() string { return s.path }

// migrate applies the embedded migrations that are not applied yet, in order, each in
// its own IMMEDIATE transaction, so concurrent processes opening a new file apply each
// migration once.
func migrate(ctx context.Context, db *sql.DB, now func() time.Time) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name    TEXT    NOT NULL,
		applied INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("creating schema_migrations: %w", err)
	}
	return core.EachMigration(migrations, func(version int, name, body string) error {
		return applyMigration(ctx, db, version, name, body, now())
	})
}

func applyMigration(ctx context.Context, db *sql.DB, version int, name, body string, now time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)`,
		version, name, now.UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

// micros stores a time as unix microseconds, 0 for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromMicros is the inverse of micros.
func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}
