package core

import (
	"context"
	"sync"

	"github.com/wardenhq/warden/store"
)

// Op is one caller's request to a [Queue]: Arg is what the caller asks for (the
// implementation's business), and the result is sent on Done.
type Op[T any] struct {
	Ctx  context.Context // the caller's: an op whose caller gave up is skipped
	Arg  T
	Done chan error // buffered: the queue's goroutine never blocks on a caller
}

// Queue hands the ops of many callers to one goroutine, which takes them in batches of
// up to maxBatch (whatever is queued when it gets to them) and runs each batch with
// commit. commit must answer every op of the batch on its Done. mu guards closed and
// the send side of ops.
type Queue[T any] struct {
	ops      chan *Op[T]
	finished chan struct{} // closed when run returns
	maxBatch int
	commit   func(batch []*Op[T])

	mu     sync.RWMutex
	closed bool // ops is closed; guarded by mu
}

// StartQueue starts the goroutine of a new Queue.
func StartQueue[T any](maxBatch int, commit func(batch []*Op[T])) *Queue[T] {
	q := &Queue[T]{ops: make(chan *Op[T], 4*maxBatch), finished: make(chan struct{}), maxBatch: maxBatch, commit: commit}
	go q.run()
	return q
}

// Do queues arg and waits for its result. When ctx ends first, Do returns ctx.Err();
// the op may still run (and commit) later unless the queue sees the cancellation
// first. After Close it returns store.ErrClosed.
func (q *Queue[T]) Do(ctx context.Context, arg T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &Op[T]{Ctx: ctx, Arg: arg, Done: make(chan error, 1)}
	q.mu.RLock()
	if q.closed {
		q.mu.RUnlock()
		return store.ErrClosed
	}
	select {
	case q.ops <- o:
		q.mu.RUnlock()
	case <-ctx.Done():
		q.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-o.Done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting ops and waits until the queued ones are done. It reports
// whether this call closed the queue (false: it was closed already).
func (q *Queue[T]) Close() bool {
	q.mu.Lock()
	first := !q.closed
	if first {
		q.closed = true
		close(q.ops) // no sender holds mu.RLock now, so no send can follow
	}
	q.mu.Unlock()
	<-q.finished
	return first
}

func (q *Queue[T]) run() {
	defer close(q.finished)
	batch := make([]*Op[T], 0, q.maxBatch)
	for first := range q.ops {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < q.maxBatch {
			select {
			case o, ok := <-q.ops:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		q.commit(batch)
		clear(batch) // drop references to finished ops
	}
}

// Live answers the ops whose caller gave up (nothing of them is written) and returns
// the others.
func Live[T any](ops []*Op[T]) []*Op[T] {
	live := make([]*Op[T], 0, len(ops))
	for _, o := range ops {
		if err := o.Ctx.Err(); err != nil {
			o.Done <- err // the caller gave up, and nothing of this op is written
			continue
		}
		live = append(live, o)
	}
	return live
}

// Answer sends each op its own error if it has one (results may be nil), else
// commitErr.
func Answer[T any](ops []*Op[T], results []error, commitErr error) {
	for i, o := range ops {
		err := commitErr
		if results != nil && results[i] != nil {
			err = results[i]
		}
		o.Done <- err
	}
}
