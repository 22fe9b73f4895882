package core

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/store"
)

// TestTimeoutFromTheCall: QueueOptions.Timeout bounds a waited-for write from the call
// on: behind a batch that hangs, Do fails with the write timeout's error once the
// timeout passes, and its op is then skipped, not written late.
func TestTimeoutFromTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = time.Second
		release := make(chan struct{})
		var written []string
		q := StartQueue(QueueOptions{MaxBatch: 4, Timeout: limit, Driver: "test"}, func(batch []*Op[string]) {
			if batch[0].Arg == "hangs" {
				<-release
			}
			live := Live(batch)
			for _, o := range live {
				written = append(written, o.Arg)
			}
			Answer(live, nil, nil)
		})
		if err := q.Later(context.Background(), "hangs", true, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the hanging batch has started
		start := time.Now()
		err := q.Do(context.Background(), "late")
		if !errors.Is(err, store.ErrWriteTimeout) {
			t.Fatalf("Do behind a hanging batch: %v, want the write timeout's error", err)
		}
		if took := time.Since(start); took != limit {
			t.Errorf("Do failed after %v, want %v", took, limit)
		}
		close(release)
		q.Close()
		if len(written) != 1 || written[0] != "hangs" {
			t.Errorf("written %v, want only the deferred op: the timed-out one is skipped", written)
		}
	})
}

// TestBatchContextEndsAtTheDeadline: a batch ends at the write deadline of a
// waited-for op in it (its caller stops waiting then), not later; a caller's own
// shorter context does not shorten it.
func TestBatchContextEndsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = time.Second
		ended := make(chan time.Duration, 4)
		start := time.Now()
		q := StartQueue(QueueOptions{MaxBatch: 4, Timeout: limit, Driver: "test"}, func(batch []*Op[string]) {
			ctx, cancel := BatchContext(batch, 10*limit) // the commit's own bound is longer
			defer cancel()
			<-ctx.Done()
			ended <- time.Since(start)
			Answer(Live(batch), nil, ctx.Err())
		})
		defer q.Close()
		impatient, cancel := context.WithTimeout(context.Background(), limit/10)
		defer cancel()
		errs := make(chan error, 2)
		go func() { errs <- q.Do(impatient, "impatient") }()
		go func() { errs <- q.Do(context.Background(), "patient") }()
		for range 2 {
			<-errs
		}
		if got := <-ended; got != limit {
			t.Errorf("the batch ended after %v, want at the write deadline (%v)", got, limit)
		}
	})
}
