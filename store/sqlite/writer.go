// This file is the single writer: the goroutine that owns the write connection and
// commits the writes of many callers in groups.

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

// maxBatch bounds how many queued writes share one transaction, so one commit cannot
// delay the first caller of a long queue for long.
const maxBatch = 256

// op is one caller's write. Its Arg runs inside the writer's transaction and may run
// more than once (see writer.commit), so it must compute everything it writes inside.
// Before writing, it may fail with a verdict (see isVerdict). Its error (or the
// commit's) is sent on Done.
type op = core.Op[func(t *wtx) error]

// writer owns the write connection. Its fields are set at construction.
type writer struct {
	db      *sql.DB // SetMaxOpenConns(1), BEGIN IMMEDIATE
	q       *core.Queue[func(t *wtx) error]
	timeout time.Duration // bounds each batch, retries included

	stmts map[string]*sql.Stmt // hotSQL, prepared; read-only after newWriter
}

// hotSQL lists the statements of the audit path. They are prepared when the writer
// starts (while the only connection is free): parsing SQL would otherwise be a large
// share of a small write's cost.
var hotSQL = []string{sqlHead, sqlSetHead, sqlInsertAudit, sqlIntentState, sqlProbe}

const (
	sqlHead        = `SELECT seq, hash FROM audit_head WHERE id = 1`
	sqlSetHead     = `UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1`
	sqlInsertAudit = `INSERT INTO audit (seq, kind, ref, at, call_id, session, tool,
		tenant, principal, conversation, args_digest, args, stage, effect, rule_id, rationale,
		reason, revision, executed, status, duration_ns, result_size, approved_by, prev_hash, hash, shadow)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// The kind of an entry and how many completions it has.
	sqlIntentState = `SELECT kind, (SELECT count(*) FROM audit c WHERE c.kind = 'complete' AND c.ref = a.seq)
		FROM audit a WHERE seq = ?`
	// The probe of CheckWrite: one row, outside the audit log.
	sqlProbe = `UPDATE probe SET at = ? WHERE id = 1`
)

func newWriter(ctx context.Context, db *sql.DB, timeout, delay time.Duration) (*writer, error) {
	w := &writer{db: db, stmts: map[string]*sql.Stmt{}, timeout: timeout}
	for _, q := range hotSQL {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range w.stmts {
				st.Close()
			}
			return nil, fmt.Errorf("preparing %q: %w", q, err)
		}
		w.stmts[q] = st
	}
	w.q = core.StartQueue(core.QueueOptions{MaxBatch: maxBatch, Delay: delay, Timeout: timeout, Driver: "sqlite"}, w.commit)
	return w, nil
}

// do queues fn and waits for its result. When ctx ends first, do returns ctx.Err();
// fn may still run (and commit) later unless the writer sees the cancellation first.
func (w *writer) do(ctx context.Context, fn func(t *wtx) error) error {
	return w.q.Do(ctx, fn)
}

// audit is do for an audit write (its outcome is tracked for CheckWrite).
func (w *writer) audit(ctx context.Context, fn func(t *wtx) error) error {
	return w.q.DoAudit(ctx, fn, true)
}

// later queues the audit write fn without waiting for it (see core.Queue.Later).
func (w *writer) later(ctx context.Context, fn func(t *wtx) error, done func(error)) error {
	return w.q.Later(ctx, fn, true, done)
}

// close stops accepting writes, lets the queued ones finish (deferred ones included),
// and closes the database. It reports the deferred writes that failed unreported.
func (w *writer) close() error {
	first, qerr := w.q.Close()
	if !first {
		return nil
	}
	errs := []error{qerr}
	for _, st := range w.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, w.db.Close())...)
}

// wtx is the writer's open transaction, handed to each op.
type wtx struct {
	ctx context.Context // the writer's, not a caller's: a batch outlives any one caller
	tx  *sql.Tx
	w   *writer

	stmts map[string]*sql.Stmt // this transaction's handles on writer.stmts, made on first use

	// The audit chain head as of this transaction: loaded on first use, advanced by
	// each append.
	headLoaded bool
	headMoved  bool // audit_head must be set to headSeq, headHash before commit
	headSeq    int64
	headHash   string
}

// commit runs a batch, normally in one transaction: each op runs in turn and all
// commit together, sharing the commit's result.
//
// An op that fails with a verdict (see isVerdict) wrote nothing, gets its error and
// does not disturb the others. An op that fails any other way may have left the
// transaction half-written, or SQLite may have rolled it back already: the transaction
// is rolled back, that op gets its error, and the other ops run again in a new
// transaction. So nothing commits in part and the chain never skips a seq.
//
// The whole batch, retries included, runs under the write timeout (see
// core.BatchContext): when it passes, every op not yet settled fails with an error
// that says so.
func (w *writer) commit(batch []*op) {
	ctx, cancel := core.BatchContext(batch, w.timeout)
	defer cancel()
	ops := batch
	for len(ops) > 0 {
		ops = w.attempt(ctx, ops)
	}
}

// fail is err, or the write timeout's error when ctx (the batch's) has expired.
func (w *writer) fail(ctx context.Context, err error) error {
	return core.WriteErr("sqlite", w.timeout, nil, ctx, err)
}

// attempt runs ops in one transaction under ctx. It answers every op it settles and
// returns the ops to run again.
func (w *writer) attempt(ctx context.Context, ops []*op) (again []*op) {
	live := core.Live(ops)
	if len(live) == 0 {
		return nil
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		core.Answer(live, nil, w.fail(ctx, fmt.Errorf("sqlite: begin: %w", err)))
		return nil
	}
	t := &wtx{ctx: ctx, tx: tx, w: w}
	results := make([]error, len(live))
	for i, o := range live {
		err := o.Arg(t)
		if err != nil && !isVerdict(err) {
			tx.Rollback()
			if ctx.Err() != nil {
				// Out of time: running the others again would fail the same way.
				core.Answer(live, nil, w.fail(ctx, err))
				return nil
			}
			o.Answer(err)
			return slices.Concat(live[:i], live[i+1:])
		}
		results[i] = err
	}
	if t.headMoved {
		if _, err := t.exec(sqlSetHead, t.headSeq, t.headHash); err != nil {
			tx.Rollback()
			core.Answer(live, results, w.fail(ctx, fmt.Errorf("sqlite: moving the audit head to %d: %w", t.headSeq, err)))
			return nil
		}
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		core.Answer(live, results, w.fail(ctx, fmt.Errorf("sqlite: commit: %w", err)))
		return nil
	}
	core.Answer(live, results, nil)
	return nil
}

// errExists reports an insert of an ID that is taken; ops return it before writing.
var errExists = errors.New("exists already")

// isVerdict reports whether err is an answer an op gives before it writes anything,
// which leaves the transaction intact.
func isVerdict(err error) bool {
	for _, v := range []error{store.ErrNotFound, store.ErrAlreadyCompleted, store.ErrAlreadyDecided,
		store.ErrExpired, store.ErrInvalidVerdict, store.ErrAlreadyClaimed, store.ErrUndated, errExists} {
		if errors.Is(err, v) {
			return true
		}
	}
	return false
}

// stmt returns the transaction's handle on the prepared statement for query, or nil
// when query is not one of hotSQL.
func (t *wtx) stmt(query string) *sql.Stmt {
	if st, ok := t.stmts[query]; ok {
		return st
	}
	st, ok := t.w.stmts[query]
	if !ok {
		return nil
	}
	if t.stmts == nil {
		t.stmts = make(map[string]*sql.Stmt, len(hotSQL))
	}
	st = t.tx.StmtContext(t.ctx, st)
	t.stmts[query] = st
	return st
}

// exec runs a statement in the transaction, prepared when it is one of hotSQL.
func (t *wtx) exec(query string, args ...any) (sql.Result, error) {
	if st := t.stmt(query); st != nil {
		return st.ExecContext(t.ctx, args...)
	}
	return t.tx.ExecContext(t.ctx, query, args...)
}

// queryRow runs a one-row query in the transaction, prepared when it is one of hotSQL.
func (t *wtx) queryRow(query string, args ...any) rowScanner {
	if st := t.stmt(query); st != nil {
		return st.QueryRowContext(t.ctx, args...)
	}
	return t.tx.QueryRowContext(t.ctx, query, args...)
}

type rowScanner interface{ Scan(...any) error }

// appendEntry seals e as the next entry of the chain and inserts it.
func (t *wtx) appendEntry(e *store.Entry) error {
	if e.Time.IsZero() {
		return store.ErrUndated
	}
	if !t.headLoaded {
		// Read the head inside the write transaction: another process may have
		// appended since our last batch.
		if err := t.queryRow(sqlHead).Scan(&t.headSeq, &t.headHash); err != nil {
			return fmt.Errorf("sqlite: reading the audit head: %w", err)
		}
		t.headLoaded = true
	}
	e.Seal(t.headSeq+1, t.headHash)
	_, err := t.exec(sqlInsertAudit,
		e.Seq, string(e.Kind), e.Ref, e.Time.UnixMicro(), e.CallID, e.Session, e.Tool,
		e.Tenant, e.Principal, e.Conversation, e.ArgsDigest, nullBytes(e.Args), e.Stage, e.Effect,
		e.RuleID, e.Rationale, e.Reason, e.Revision, e.Executed, e.Status, int64(e.Duration),
		e.ResultSize, e.ApprovedBy, e.PrevHash, e.Hash, e.Shadow)
	if err != nil {
		return fmt.Errorf("sqlite: appending audit entry %d: %w", e.Seq, err)
	}
	t.headSeq, t.headHash, t.headMoved = e.Seq, e.Hash, true
	return nil
}

// nullBytes binds nil as NULL and anything else as a BLOB.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
