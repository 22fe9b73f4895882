// Package postgres is the [store.Store] for several Warden replicas sharing one state:
// PostgreSQL through github.com/jackc/pgx/v5 (pgxpool). Importing it registers the
// "postgres" and "postgresql" DSN schemes with [store.Open]. The DSN is pgx's: every
// libpq-style parameter works, and any other parameter is sent as a run-time setting,
// so "?search_path=warden" places the tables in schema warden. The tables are prefixed
// warden_. Two parameters are the store's own and are removed before connecting:
// write_timeout=DURATION ([Options.WriteTimeout]) and commit_delay=DURATION
// ([Options.CommitDelay]; 0 for none), so PostgreSQL's own commit_delay setting cannot
// be set from the DSN (set it on the server or the role). Without a connect_timeout
// parameter, connecting times out after the write timeout.
//
// # Deadlines
//
// Every write runs under [Options.WriteTimeout] (and the caller's context): a server
// that accepts connections and never answers fails the write with an error matching
// [store.ErrWriteTimeout], and the connection it stalled on is closed, not reused.
//
// # Migrations
//
// Open applies the embedded migrations that are missing, in order, each in its own
// transaction, while holding a session-level advisory lock (pg_advisory_lock), so
// replicas starting together apply each migration once.
//
// # The audit chain across replicas
//
// Each process batches its appends: the entries queued while the previous batch
// committed are written in one transaction (a batch of deferred entries only, see
// [store.Store.EndCallLater], first waits up to [Options.CommitDelay] for company), and every such transaction locks the
// chain-head row (warden_audit_head), so the appends of all replicas are serialized and
// the chain stays linear. When this process made the last append, a batch is a single
// statement (one round trip) that numbers and hashes the entries from the head it
// remembers and moves the head only if it is still there; if another replica appended
// meanwhile, nothing is written and the batch is redone the slow way: lock the head
// (SELECT ... FOR UPDATE), read it, number, hash and insert.
//
// # Decisions across replicas
//
// [Store.Decide] sends NOTIFY warden_decisions with the decision's ID in the deciding
// transaction. [Store.WaitDecision] is woken by a LISTEN connection (opened on first use
// and reopened when it breaks), by decisions of its own process, and by a poll every
// second in case a notification was missed. [Store.ConsumeApproval] claims a once
// approval with SELECT ... FOR UPDATE SKIP LOCKED, so of concurrent consumers in any
// replicas exactly one gets it.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

func init() {
	opener := func(ctx context.Context, dsn string) (store.Store, error) { return Open(ctx, dsn, nil) }
	store.Register("postgres", opener)
	store.Register("postgresql", opener)
}

//go:embed migrations/*.sql
var migrations embed.FS

// notifyChannel is the LISTEN/NOTIFY channel of decisions; the payload is the ID.
const notifyChannel = "warden_decisions"

// migrationLock is the advisory lock key held while migrating ("warden" + 1).
const migrationLock int64 = 0x77617264656e0001

// Store is the PostgreSQL [store.Store]. It is safe for concurrent use, also by
// several processes sharing the database.
type Store struct {
	pool    *pgxpool.Pool
	app     *appender
	drv     core.Driver // the shared lookups' view of pool
	waiters core.Waiters
	now     func() time.Time
	timeout time.Duration // the write timeout
	closed  atomic.Bool   // set by Close

	listenOnce   sync.Once
	listenCancel context.CancelFunc // stops the listener; set by listenOnce
	listenDone   chan struct{}      // closed when the listener ends; set by listenOnce
	listenMu     sync.Mutex         // guards listenCancel/listenDone against Close
}

var _ store.Store = (*Store)(nil)

// Options tunes a Store. A nil *Options means the defaults. A field left zero takes
// the DSN's parameter of the same meaning, then the default.
type Options struct {
	// WriteTimeout bounds every write (an audit write from the call on, waiting
	// behind earlier batches and retries included; a decision,
	// a claim, a checkpoint, a pin; each together with the caller's context): a write
	// the server has not answered by then fails with an error matching
	// [store.ErrWriteTimeout]. DSN parameter write_timeout. Default 5s.
	WriteTimeout time.Duration
	// CommitDelay is how long deferred audit writes ([store.Store.EndCallLater],
	// [store.Store.RecordCallLater]) wait for a write somebody waits for, to commit
	// together, before they are committed alone. DSN parameter commit_delay (0 there
	// means none). Zero means the default, 2ms; negative means none.
	CommitDelay time.Duration
	// Now is the store's clock: it times audit entries, pending decisions, verdicts,
	// claims and pins, and judges every expiry (the database's clock is never asked).
	// nil means time.Now. Tests inject a clock they move, so expiry is tested without
	// waiting.
	Now func() time.Time
}

// Open connects to the database named by dsn (a postgres:// URL or key=value string)
// and applies pending migrations. opts may be nil.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := takeParams(cfg.ConnConfig.RuntimeParams, &o); err != nil {
		return nil, err
	}
	timeout, delay := core.Durations(o.WriteTimeout, o.CommitDelay)
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		// Reconnecting to a server that accepts and never answers must end too.
		cfg.ConnConfig.ConnectTimeout = timeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := migrate(ctx, pool, o.Now); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool, now: o.Now, timeout: timeout}
	s.drv = core.Driver{Name: "postgres", NoRows: isNoRows,
		Query: func(ctx context.Context, q string, args ...any) (core.Rows, func(), error) {
			rows, err := pool.Query(ctx, q, args...)
			if err != nil {
				return nil, nil, err
			}
			return rows, rows.Close, nil
		}}
	s.app = newAppender(pool, timeout, delay)
	return s, nil
}

// takeParams removes the store's own DSN parameters from params (where pgx put them,
// as run-time settings to send to the server) and applies them to the fields of o
// that are zero.
func takeParams(params map[string]string, o *Options) error {
	for _, p := range []struct {
		name string
		to   *time.Duration
		zero time.Duration // what an explicit 0 means
	}{{"write_timeout", &o.WriteTimeout, 0}, {"commit_delay", &o.CommitDelay, -1}} {
		v, ok := params[p.name]
		if !ok {
			continue
		}
		delete(params, p.name)
		d, err := core.ParseDuration("postgres", p.name, v)
		if err != nil {
			return err
		}
		if d == 0 {
			d = p.zero
		}
		if *p.to == 0 {
			*p.to = d
		}
	}
	return nil
}

// bounded runs the write fn made straight on the pool under ctx bounded by the write
// timeout, and returns its error: the write timeout's error when that expired first
// (and ctx had not ended).
func (s *Store) bounded(ctx context.Context, fn func(ctx context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return core.WriteErr("postgres", s.timeout, ctx, wctx, fn(wctx))
}

// Close commits the queued appends (deferred ones included), stops the listener and
// closes the pool. It is safe to call more than once.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.waiters.NotifyAll() // waiters re-read, and learn that the store is closed
	err := s.app.close()
	s.listenMu.Lock()
	cancel, done := s.listenCancel, s.listenDone
	s.listenMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	s.pool.Close()
	return err
}

func migrate(ctx context.Context, pool *pgxpool.Pool, now func() time.Time) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("taking the migration lock: %w", err)
	}
	defer func() {
		// Unlock even when ctx ended; a broken connection drops the lock anyway.
		conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS warden_schema_migrations (
		version integer     PRIMARY KEY,
		name    text        NOT NULL,
		applied timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("creating warden_schema_migrations: %w", err)
	}
	return core.EachMigration(migrations, func(version int, name, body string) error {
		return applyMigration(ctx, conn.Conn(), version, name, body, now())
	})
}

func applyMigration(ctx context.Context, conn *pgx.Conn, version int, name, body string, now time.Time) error {
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM warden_schema_migrations WHERE version = $1`, version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, body); err != nil { // no arguments: simple protocol, several statements
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO warden_schema_migrations (version, name, applied) VALUES ($1, $2, $3)`, version, name, store.NormalizeTime(now))
		return err
	})
}

// listen starts the LISTEN connection once; it runs until Close.
func (s *Store) listen() {
	s.listenOnce.Do(func() {
		s.listenMu.Lock()
		defer s.listenMu.Unlock()
		if s.closed.Load() {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.listenCancel, s.listenDone = cancel, make(chan struct{})
		go s.listenLoop(ctx, s.listenDone)
	})
}

func (s *Store) listenLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+notifyChannel); err == nil {
				backoff = 100 * time.Millisecond
				s.waiters.NotifyAll() // decisions made while nobody listened
				for {
					n, werr := conn.WaitForNotification(ctx)
					if werr != nil {
						break
					}
					s.waiters.Notify(n.Payload)
				}
			}
			conn.Close(context.Background())
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// nullTime binds the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// fromNullTime reads a nullable timestamptz as UTC, NULL as the zero time.
func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// check refuses use after Close.
func (s *Store) check() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// utc reads a timestamptz column that is never NULL.
func utc(t time.Time) time.Time { return t.UTC() }
