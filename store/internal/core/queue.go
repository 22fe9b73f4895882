package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/store"
)

// Op is one request to a [Queue]: Arg is what is asked for (the implementation's
// business), and the result goes to [Op.Answer].
//
// An op is either waited for (queued by [Queue.Do]: its caller waits on Done) or
// deferred (queued by [Queue.Later]: nobody waits, and the result goes to the
// callback the caller gave, if any).
type Op[T any] struct {
	// Ctx is the caller's: a waited-for op whose caller gave up is skipped (see
	// [Live]). A deferred op's Ctx never ends.
	Ctx  context.Context
	Arg  T
	Done chan error // buffered; nil for a deferred op (and a flush marker's is the queue's)
	// Audit marks an audit write: its outcome is tracked (see [Queue.AuditErr]).
	Audit bool

	deferred bool
	then     func(error) // a deferred op's callback; may be nil
	flush    int         // a flush marker, not a write: 1 waits, 2 also collects failures
	deadline time.Time   // a waited-for op's write deadline (QueueOptions.Timeout); zero: none
	q        *Queue[T]   // nil for an op made by hand (tests)
	answered bool        // only the queue's goroutine touches it
}

// Deferred reports whether the op was queued by [Queue.Later].
func (o *Op[T]) Deferred() bool { return o.deferred }

// Answer settles the op with err: it wakes the waiting caller, or calls a deferred
// op's callback. It is called once per op, from the queue's goroutine.
func (o *Op[T]) Answer(err error) {
	if o.answered {
		panic("core: an op was answered twice")
	}
	o.answered = true
	if o.q != nil {
		o.q.settled(o, err)
	}
	switch {
	case o.deferred:
		if o.then != nil {
			o.then(err)
		}
	case o.Done != nil:
		o.Done <- err
	}
	if o.q != nil {
		o.q.pending.Add(-1)
	}
}

// QueueOptions tunes a [Queue].
type QueueOptions struct {
	// MaxBatch bounds how many ops one commit takes; the queue holds 4*MaxBatch ops
	// before [Queue.Do] and [Queue.Later] block.
	MaxBatch int
	// Delay is how long a batch of deferred ops only waits for more ops before it is
	// committed (an op somebody waits for ends the wait at once). 0: no wait.
	Delay time.Duration
	// Timeout, when positive, bounds how long [Queue.Do] and [Queue.DoAudit] wait, from
	// the call on (waiting for room in the queue and behind earlier batches
	// included): then they return an error matching store.ErrWriteTimeout (see
	// [WriteErr]; Driver names the store in it), and the op is skipped (see [Live])
	// or, when its batch has started, that batch ends then too (see [BatchContext]),
	// so an op is not committed after its caller was told that it timed out.
	Timeout time.Duration
	Driver  string
}

// Queue hands the ops of many callers to one goroutine, which takes them in batches of
// up to MaxBatch (whatever is queued when it gets to them) and runs each batch with
// commit. commit must answer every op of the batch (with [Op.Answer], [Live],
// [Answer]). mu guards closed and the send side of ops.
type Queue[T any] struct {
	ops      chan *Op[T]
	finished chan struct{} // closed when run returns
	opts     QueueOptions
	commit   func(batch []*Op[T])

	mu     sync.RWMutex
	closed bool // ops is closed; guarded by mu

	pending atomic.Int64 // ops queued and not yet answered (flush markers included)

	failMu sync.Mutex
	failed int   // deferred ops that failed since the last collecting flush; guarded by failMu
	first  error // the first of them; guarded by failMu
	audit  error // the last audit write's failure, nil after a success; guarded by failMu
}

// StartQueue starts the goroutine of a new Queue.
func StartQueue[T any](o QueueOptions, commit func(batch []*Op[T])) *Queue[T] {
	o.MaxBatch = max(o.MaxBatch, 1)
	q := &Queue[T]{ops: make(chan *Op[T], 4*o.MaxBatch), finished: make(chan struct{}), opts: o, commit: commit}
	go q.run()
	return q
}

// Do queues arg and waits for its result. When ctx ends first, Do returns ctx.Err();
// the op may still run (and commit) later unless the queue sees the cancellation
// first. After Close it returns store.ErrClosed.
func (q *Queue[T]) Do(ctx context.Context, arg T) error { return q.DoAudit(ctx, arg, false) }

// DoAudit is [Queue.Do] for an op that is an audit write when audit is set.
func (q *Queue[T]) DoAudit(ctx context.Context, arg T, audit bool) error {
	wctx := ctx
	if q.opts.Timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, q.opts.Timeout)
		defer cancel()
	}
	o := &Op[T]{Ctx: wctx, Arg: arg, Done: make(chan error, 1), Audit: audit}
	if q.opts.Timeout > 0 {
		o.deadline = time.Now().Add(q.opts.Timeout)
	}
	err := q.enqueue(wctx, o)
	if err == nil {
		select {
		case err = <-o.Done:
		case <-wctx.Done():
			select {
			case err = <-o.Done: // answered at the same moment: the answer wins
			default:
				err = wctx.Err()
			}
		}
	}
	if q.opts.Timeout > 0 {
		err = WriteErr(q.opts.Driver, q.opts.Timeout, ctx, wctx, err)
	}
	return err
}

// Later queues arg as a deferred op and returns once it is queued: it blocks only
// while the queue is full, and then returns ctx.Err() if ctx ends first. After Close
// it returns store.ErrClosed. Once queued, the op no longer depends on ctx: it is
// committed with the next batch, and then(err), when then is not nil, is called once
// with its result, from the queue's goroutine. When Later returns an error the op was
// not queued and then is never called.
func (q *Queue[T]) Later(ctx context.Context, arg T, audit bool, then func(error)) error {
	o := &Op[T]{Ctx: context.WithoutCancel(ctx), Arg: arg, Audit: audit, deferred: true, then: then}
	return q.enqueue(ctx, o)
}

// enqueue sends o to the queue's goroutine, waiting while the queue is full.
func (q *Queue[T]) enqueue(ctx context.Context, o *Op[T]) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o.q = q
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return store.ErrClosed
	}
	q.pending.Add(1)
	select {
	case q.ops <- o:
		return nil
	case <-ctx.Done():
		q.pending.Add(-1)
		return ctx.Err()
	}
}

// Flush returns once every op queued before it has been answered. It returns nil when
// every deferred op among them succeeded; otherwise an error that counts the deferred
// ops that failed since an earlier Flush last reported and wraps the first failure
// (each failure is reported by one Flush, or by Close). When nothing is queued it
// returns at once, and touches no database. It returns ctx.Err() when ctx ends first
// and store.ErrClosed after Close.
func (q *Queue[T]) Flush(ctx context.Context) error { return q.flushOp(ctx, 2) }

// Barrier is [Queue.Flush] without reporting (nor forgetting) failures: it returns nil
// once every op queued before it has been answered.
func (q *Queue[T]) Barrier(ctx context.Context) error { return q.flushOp(ctx, 1) }

func (q *Queue[T]) flushOp(ctx context.Context, kind int) error {
	if q.pending.Load() == 0 {
		// Every op queued before now has been answered: pending counts an op from
		// before it is sent until after it is answered.
		q.mu.RLock()
		closed := q.closed
		q.mu.RUnlock()
		if closed {
			return store.ErrClosed
		}
		return q.collect(kind)
	}
	o := &Op[T]{Ctx: ctx, Done: make(chan error, 1), flush: kind}
	if err := q.enqueue(ctx, o); err != nil {
		return err
	}
	select {
	case err := <-o.Done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// collect returns (and forgets, for a collecting flush) the deferred failures.
func (q *Queue[T]) collect(kind int) error {
	if kind != 2 {
		return nil
	}
	q.failMu.Lock()
	defer q.failMu.Unlock()
	n, first := q.failed, q.first
	q.failed, q.first = 0, nil
	switch {
	case n == 0:
		return nil
	case n == 1:
		return fmt.Errorf("store: a deferred audit write failed: %w", first)
	default:
		return fmt.Errorf("store: %d deferred audit writes failed; the first: %w", n, first)
	}
}

// AuditErr returns the failure of the most recent audit write that failed for a
// reason other than a verdict (see [AuditVerdict]), or nil when an audit write has
// succeeded since (or none has failed).
func (q *Queue[T]) AuditErr() error {
	q.failMu.Lock()
	defer q.failMu.Unlock()
	return q.audit
}

// settled records what an op's answer says about the store's health.
func (q *Queue[T]) settled(o *Op[T], err error) {
	if o.flush != 0 || (err != nil && !o.deferred && o.Ctx.Err() != nil && errors.Is(err, o.Ctx.Err())) {
		return // a marker, or a caller that gave up: says nothing about the database
	}
	q.failMu.Lock()
	defer q.failMu.Unlock()
	if o.deferred && err != nil {
		if q.failed == 0 {
			q.first = err
		}
		q.failed++
	}
	if o.Audit {
		switch {
		case err == nil:
			q.audit = nil
		case !AuditVerdict(err):
			q.audit = err
		}
	}
}

// AuditVerdict reports whether err is an answer an audit write gives about its entry
// (not a failure of the database): ErrNotFound, ErrAlreadyCompleted, ErrUndated.
func AuditVerdict(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrAlreadyCompleted) || errors.Is(err, store.ErrUndated)
}

// Close stops accepting ops and waits until the queued ones are done (deferred ones
// included: they are committed, and their callbacks called). It reports whether this
// call closed the queue (false: it was closed already), and, from the call that
// closed it, the deferred failures no Flush reported.
func (q *Queue[T]) Close() (first bool, err error) {
	q.mu.Lock()
	first = !q.closed
	if first {
		q.closed = true
		close(q.ops) // no sender holds mu.RLock now, so no send can follow
	}
	q.mu.Unlock()
	<-q.finished
	if first {
		err = q.collect(2)
	}
	return first, err
}

func (q *Queue[T]) run() {
	defer close(q.finished)
	batch := make([]*Op[T], 0, q.opts.MaxBatch)
	var timer *time.Timer
	for first := range q.ops {
		if first.flush != 0 {
			first.Answer(q.collect(first.flush))
			continue
		}
		batch = append(batch[:0], first)
		batch, marker, open := q.take(batch, nil)
		if marker == nil && open && q.opts.Delay > 0 && len(batch) < q.opts.MaxBatch && onlyDeferred(batch) {
			// Nobody waits for these: give the next write a moment to share the commit.
			if timer == nil {
				timer = time.NewTimer(q.opts.Delay)
			} else {
				timer.Reset(q.opts.Delay)
			}
			batch, marker, open = q.take(batch, timer.C)
			timer.Stop()
			if marker == nil && open {
				batch, marker, _ = q.take(batch, nil) // what came with the op that ended the wait
			}
		}
		q.commit(batch)
		clear(batch) // drop references to finished ops
		if marker != nil {
			marker.Answer(q.collect(marker.flush))
		}
	}
}

// take adds ops to batch, up to MaxBatch. With expired nil it takes only what is
// queued now; otherwise it waits for ops as they come until one somebody waits for
// comes, or expired fires. Either way it stops at a flush marker, which it returns
// (the ops queued after it belong to a later batch), and reports whether the queue
// is still open.
func (q *Queue[T]) take(batch []*Op[T], expired <-chan time.Time) (_ []*Op[T], marker *Op[T], open bool) {
	for len(batch) < q.opts.MaxBatch {
		var o *Op[T]
		var ok bool
		if expired == nil {
			select {
			case o, ok = <-q.ops:
			default:
				return batch, nil, true
			}
		} else {
			select {
			case o, ok = <-q.ops:
			case <-expired:
				return batch, nil, true
			}
		}
		switch {
		case !ok:
			return batch, nil, false
		case o.flush != 0:
			return batch, o, true
		}
		batch = append(batch, o)
		if expired != nil && !o.deferred {
			return batch, nil, true
		}
	}
	return batch, nil, true
}

func onlyDeferred[T any](batch []*Op[T]) bool {
	for _, o := range batch {
		if !o.deferred {
			return false
		}
	}
	return true
}

// Live answers the ops whose caller gave up (nothing of them is written) and returns
// the others. A deferred op is always live: nobody gave up on it.
func Live[T any](ops []*Op[T]) []*Op[T] {
	live := make([]*Op[T], 0, len(ops))
	for _, o := range ops {
		if !o.deferred {
			err := o.Ctx.Err()
			if err == nil && !o.deadline.IsZero() && !time.Now().Before(o.deadline) {
				err = context.DeadlineExceeded // its caller's wait has ended, or is ending
			}
			if err != nil {
				o.Answer(err) // the caller gave up, and nothing of this op is written
				continue
			}
		}
		live = append(live, o)
	}
	return live
}

// BatchContext returns the context a batch of ops runs under: it ends limit from now,
// or earlier at the write deadline of an op of the batch somebody waits for (see
// QueueOptions.Timeout), whose caller stops waiting then. Callers' own contexts do
// not shorten it: one impatient caller must not fail the others' writes.
func BatchContext[T any](ops []*Op[T], limit time.Duration) (context.Context, context.CancelFunc) {
	now := time.Now()
	end := now.Add(limit)
	for _, o := range ops {
		// An op past its deadline is skipped (Live): its caller has given up.
		if !o.deferred && o.deadline.After(now) && o.deadline.Before(end) {
			end = o.deadline
		}
	}
	return context.WithDeadline(context.Background(), end)
}

// Answer answers each op with its own error if it has one (results may be nil), else
// commitErr.
func Answer[T any](ops []*Op[T], results []error, commitErr error) {
	for i, o := range ops {
		err := commitErr
		if results != nil && results[i] != nil {
			err = results[i]
		}
		o.Answer(err)
	}
}
