package storetest

import (
	"sync"
	"testing"
	"time"
)

// clock is the clock the suite gives the stores it opens: the wall clock plus an offset
// that only the suite moves (forward), so a decision expires when the suite says and not
// after a wait. Times keep advancing between reads, so ordering by time still works.
//
// A case can also learn that some goroutine has read the clock ([clock.nextRead]): a
// store reads it after it read a decision from its database, which is how a case sees
// that a waiter has started waiting, without sleeping.
type clock struct {
	mu     sync.Mutex
	offset time.Duration   // guarded by mu
	broken bool            // guarded by mu; Now returns the zero time
	reads  []chan struct{} // guarded by mu; each receives at the next read, then is dropped
}

// Now returns the wall clock moved by every Advance so far.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.reads {
		ch <- struct{}{} // buffered, and sent to once
	}
	c.reads = nil
	if c.broken {
		return time.Time{}
	}
	return time.Now().Add(c.offset)
}

// Break makes Now return the zero time (a clock that does not know what time it is)
// until Repair.
func (c *clock) Break() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.broken = true
}

// Repair undoes Break.
func (c *clock) Repair() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.broken = false
}

// Advance moves the clock forward by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// nextRead returns a channel that receives once, at the clock's next read by anyone.
func (c *clock) nextRead() <-chan struct{} {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, ch)
	return ch
}

// awaitRead waits for a read registered with nextRead; what names the reader for the
// failure message. The bound only keeps a broken store from hanging the suite.
func awaitRead(t *testing.T, read <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-read:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never read the store's clock (is Opener's now passed to the store?)", what)
	}
}
