// This file is the appender: the goroutine that writes a process's audit entries in
// batches, each batch in one transaction that holds the chain head.

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/internal/core"
)

// maxBatch bounds how many entries share one transaction.
const maxBatch = 256

// write is what one op asks of the appender: an audit entry to append (which the
// appender seals: numbers and hashes it) or, when entry is nil, the probe of
// CheckWrite, dated probe.
type write struct {
	entry *store.Entry
	probe time.Time
}

// appendOp is one caller's write; its result is sent with Answer.
type appendOp = core.Op[write]

// appender owns the audit appends of one Store.
type appender struct {
	pool    *pgxpool.Pool
	q       *core.Queue[write]
	timeout time.Duration // bounds each batch, retries included

	// The chain head as of this process's last append; only the queue's goroutine uses
	// it. It lets a batch try the one-round-trip path (see writeFast).
	headKnown bool
	headSeq   int64
	headHash  string
}

func newAppender(pool *pgxpool.Pool, timeout, delay time.Duration) *appender {
	a := &appender{pool: pool, timeout: timeout}
	a.q = core.StartQueue(core.QueueOptions{MaxBatch: maxBatch, Delay: delay, Timeout: timeout, Driver: "postgres"}, a.commit)
	return a
}

// append queues e and waits until it is committed (e is sealed then). When ctx ends
// first it returns ctx.Err(); the entry may still be committed later unless the
// appender sees the cancellation first.
func (a *appender) append(ctx context.Context, e *store.Entry) error {
	if e.Time.IsZero() {
		return store.ErrUndated
	}
	return a.q.DoAudit(ctx, write{entry: e}, true)
}

// later queues e without waiting for it (see core.Queue.Later).
func (a *appender) later(ctx context.Context, e *store.Entry, done func(error)) error {
	if e.Time.IsZero() {
		return store.ErrUndated
	}
	return a.q.Later(ctx, write{entry: e}, true, done)
}

// probe writes the probe row through the queue and waits for it.
func (a *appender) probe(ctx context.Context, at time.Time) error {
	return a.q.Do(ctx, write{probe: at})
}

// close stops accepting appends and waits for the queued ones (deferred ones
// included); it reports the deferred writes that failed unreported.
func (a *appender) close() error {
	_, err := a.q.Close()
	return err
}

// commit writes a batch under the write timeout (retries included): each probe in its
// own statement, then the entries in one transaction.
func (a *appender) commit(batch []*appendOp) {
	ctx, cancel := core.BatchContext(batch, a.timeout)
	defer cancel()
	live := core.Live(batch)
	entries := live[:0:0]
	for _, o := range live {
		if o.Arg.entry != nil {
			entries = append(entries, o)
			continue
		}
		_, err := a.pool.Exec(ctx, `UPDATE warden_probe SET at = $1 WHERE id = 1`, o.Arg.probe)
		if err != nil {
			err = a.fail(ctx, fmt.Errorf("postgres: writing the probe: %w", err))
		}
		o.Answer(err)
	}
	a.commitEntries(ctx, entries)
}

// fail is err, or the write timeout's error when ctx (the batch's) has expired.
func (a *appender) fail(ctx context.Context, err error) error {
	return core.WriteErr("postgres", a.timeout, nil, ctx, err)
}

// commitEntries writes the entries of ops in one transaction. When that fails before
// COMMIT was sent (so nothing was written) and there are several entries, each is
// tried alone, so one bad entry cannot fail the others. A failed COMMIT is ambiguous
// (it may have committed), so it is reported, never retried.
func (a *appender) commitEntries(ctx context.Context, ops []*appendOp) {
	if len(ops) == 0 {
		return
	}
	results, committed, err := a.write(ctx, ops)
	if err != nil && !committed && len(ops) > 1 && ctx.Err() == nil {
		for _, o := range ops {
			a.commitEntries(ctx, []*appendOp{o})
		}
		return
	}
	core.Answer(ops, results, a.fail(ctx, err))
}

const (
	sqlHead    = `SELECT seq, hash FROM warden_audit_head WHERE id = 1 FOR UPDATE`
	sqlSetHead = `UPDATE warden_audit_head SET seq = $1, hash = $2 WHERE id = 1`
	// For each ref: whether it is an intent and whether it has a completion.
	sqlRefs = `SELECT a.seq, a.kind = 'intent',
		EXISTS (SELECT 1 FROM warden_audit c WHERE c.kind = 'complete' AND c.ref = a.seq)
		FROM warden_audit a WHERE a.seq = ANY($1)`
	sqlInsert = `INSERT INTO warden_audit (seq, kind, ref, at, call_id, session, tool, tenant,
		principal, conversation, args_digest, args, stage, effect, rule_id, rationale, reason,
		revision, executed, status, duration_ns, result_size, approved_by, prev_hash, hash, shadow)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
		$19, $20, $21, $22, $23, $24, $25, $26)`
)

// write appends the entries of ops: in one round trip when this process appended last
// (writeFast), else under the head lock (writeLocked).
func (a *appender) write(ctx context.Context, ops []*appendOp) (results []error, committed bool, err error) {
	if a.headKnown {
		ok, committed, err := a.writeFast(ctx, ops)
		if ok {
			return make([]error, len(ops)), true, nil
		}
		a.headKnown = false
		if committed {
			return nil, true, err // ambiguous: do not write these entries again
		}
		// Another replica appended, or an entry was refused: take the slow path, which
		// also tells each refused entry why.
	}
	return a.writeLocked(ctx, ops)
}

// sqlFast appends a batch in one statement, on the condition that the head is still
// where this process left it; the UPDATE locks the head row, so a concurrent appender
// waits and then finds the head moved.
const sqlFast = `WITH h AS (
	UPDATE warden_audit_head SET seq = $1, hash = $2 WHERE id = 1 AND seq = $3 AND hash = $4 RETURNING 1)
	INSERT INTO warden_audit (seq, kind, ref, at, call_id, session, tool, tenant, principal,
		conversation, args_digest, args, stage, effect, rule_id, rationale, reason, revision,
		executed, status, duration_ns, result_size, approved_by, prev_hash, hash, shadow)
	SELECT * FROM unnest($5::bigint[], $6::text[], $7::bigint[], $8::timestamptz[], $9::text[],
		$10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::bytea[],
		$17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::text[], $23::bool[],
		$24::text[], $25::bigint[], $26::bigint[], $27::text[], $28::text[], $29::text[], $30::text[])
	WHERE EXISTS (SELECT 1 FROM h)`

// writeFast appends ops in one statement (one round trip, its own transaction),
// continuing from the head this process knows. ok reports that every entry was
// written. When it was not: committed=false means nothing was written (the head moved,
// or the database refused an entry: a completion of an unknown or completed call);
// committed=true means the connection failed and the outcome is unknown.
func (a *appender) writeFast(ctx context.Context, ops []*appendOp) (ok, committed bool, err error) {
	n := len(ops)
	var (
		seqs, refs, durs, sizes                   = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		kinds, callIDs, sessions, tools, tenants  = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		principals, convs, digests, stages        = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		effects, rules, rationales, reasons, revs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		statuses, approvers, prevs, hashes        = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		shadows                                   = make([]string, n)
		ats                                       = make([]time.Time, n)
		args                                      = make([][]byte, n)
		executed                                  = make([]bool, n)
	)
	seq, hash := a.headSeq, a.headHash
	for i, o := range ops {
		e := o.Arg.entry
		e.Seal(seq+1, hash)
		seq, hash = e.Seq, e.Hash
		seqs[i], kinds[i], refs[i], ats[i] = e.Seq, string(e.Kind), e.Ref, e.Time
		callIDs[i], sessions[i], tools[i], tenants[i] = e.CallID, e.Session, e.Tool, e.Tenant
		principals[i], convs[i], digests[i], args[i] = e.Principal, e.Conversation, e.ArgsDigest, e.Args
		stages[i], effects[i], rules[i], rationales[i] = e.Stage, e.Effect, e.RuleID, e.Rationale
		reasons[i], revs[i], executed[i], statuses[i] = e.Reason, e.Revision, e.Executed, e.Status
		durs[i], sizes[i], approvers[i], prevs[i], hashes[i] = int64(e.Duration), e.ResultSize, e.ApprovedBy, e.PrevHash, e.Hash
		shadows[i] = e.Shadow
	}
	tag, err := a.pool.Exec(ctx, sqlFast, seq, hash, a.headSeq, a.headHash,
		seqs, kinds, refs, ats, callIDs, sessions, tools, tenants, principals, convs, digests,
		args, stages, effects, rules, rationales, reasons, revs, executed, statuses, durs, sizes,
		approvers, prevs, hashes, shadows)
	if err != nil {
		_, refused := errors.AsType[*pgconn.PgError](err)
		return false, !refused && !pgconn.SafeToRetry(err), fmt.Errorf("postgres: appending audit entries: %w", err)
	}
	if tag.RowsAffected() != int64(n) {
		return false, false, nil // the head moved: nothing was written
	}
	a.headSeq, a.headHash = seq, hash
	return true, true, nil
}

// writeLocked appends the entries of ops in one transaction, in two round trips: BEGIN,
// lock the head and look up the intents being completed; then insert, move the head
// and COMMIT. results holds each op's own verdict (a completion of an unknown or
// completed call); err is the failure of the whole transaction, and committed tells
// whether COMMIT may have run.
func (a *appender) writeLocked(ctx context.Context, ops []*appendOp) (results []error, committed bool, err error) {
	conn, err := a.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("postgres: %w", err)
	}
	// A connection left inside a transaction is destroyed by Release, never reused.
	defer conn.Release()
	abort := func(err error) ([]error, bool, error) {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			conn.Exec(ctx, "ROLLBACK")
		}
		return nil, false, err
	}

	var refs []int64
	for _, o := range ops {
		if o.Arg.entry.Kind == store.EntryComplete {
			refs = append(refs, o.Arg.entry.Ref)
		}
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sqlHead)
	if len(refs) > 0 {
		b.Queue(sqlRefs, refs)
	}
	br := conn.SendBatch(ctx, b)
	var headSeq int64
	var headHash string
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&headSeq, &headHash)
	}
	if err != nil {
		br.Close()
		return abort(fmt.Errorf("postgres: locking the audit head: %w", err))
	}
	type refState struct{ intent, completed bool }
	states := map[int64]refState{}
	if len(refs) > 0 {
		rows, _ := br.Query()
		var seq int64
		var st refState
		_, err := pgx.ForEachRow(rows, []any{&seq, &st.intent, &st.completed}, func() error {
			states[seq] = st
			return nil
		})
		if err != nil {
			br.Close()
			return abort(fmt.Errorf("postgres: reading audit refs: %w", err))
		}
	}
	if err := br.Close(); err != nil {
		return abort(fmt.Errorf("postgres: %w", err))
	}

	results = make([]error, len(ops))
	ins := &pgx.Batch{}
	for i, o := range ops {
		e := o.Arg.entry
		if e.Kind == store.EntryComplete {
			st, ok := states[e.Ref]
			switch {
			case !ok || !st.intent:
				results[i] = fmt.Errorf("%w: no call was started as audit entry %d", store.ErrNotFound, e.Ref)
				continue
			case st.completed:
				results[i] = fmt.Errorf("%w: audit entry %d", store.ErrAlreadyCompleted, e.Ref)
				continue
			}
			states[e.Ref] = refState{intent: true, completed: true} // a second one in this batch
		}
		e.Seal(headSeq+1, headHash)
		headSeq, headHash = e.Seq, e.Hash
		ins.Queue(sqlInsert, e.Seq, string(e.Kind), e.Ref, e.Time, e.CallID, e.Session, e.Tool,
			e.Tenant, e.Principal, e.Conversation, e.ArgsDigest, e.Args, e.Stage, e.Effect,
			e.RuleID, e.Rationale, e.Reason, e.Revision, e.Executed, e.Status,
			int64(e.Duration), e.ResultSize, e.ApprovedBy, e.PrevHash, e.Hash, e.Shadow)
	}
	if ins.Len() == 0 {
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return abort(fmt.Errorf("postgres: %w", err))
		}
		a.headKnown, a.headSeq, a.headHash = true, headSeq, headHash
		return results, false, nil
	}
	ins.Queue(sqlSetHead, headSeq, headHash)
	ins.Queue("COMMIT")
	err = conn.SendBatch(ctx, ins).Close()
	if err == nil && conn.Conn().PgConn().TxStatus() != 'I' {
		err = errors.New("the transaction did not end") // fail closed: never assume a commit
	}
	if err != nil {
		if _, isPg := errors.AsType[*pgconn.PgError](err); isPg {
			// The server refused a statement before COMMIT: nothing was written.
			return abort(fmt.Errorf("postgres: appending audit entries: %w", err))
		}
		// The connection failed: COMMIT may or may not have run.
		abort(nil)
		return nil, true, fmt.Errorf("postgres: appending audit entries (outcome unknown): %w", err)
	}
	a.headKnown, a.headSeq, a.headHash = true, headSeq, headHash
	return results, true, nil
}
