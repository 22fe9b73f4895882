package gateway

import (
	"context"
	"sync"

	"github.com/wardenhq/warden"
)

// EventLog keeps the most recent events in memory so an operator can see what
// happened to a call (the audit log keeps the call, not its events). It is a
// warden.Sink: Emit never blocks on I/O. Old events are dropped first.
type EventLog struct {
	mu   sync.Mutex
	buf  []warden.Event
	next int
	full bool
}

// NewEventLog returns a log holding at most size events (at least 16).
func NewEventLog(size int) *EventLog {
	if size < 16 {
		size = 16
	}
	return &EventLog{buf: make([]warden.Event, size)}
}

// Emit records e.
func (l *EventLog) Emit(_ context.Context, e warden.Event) {
	l.mu.Lock()
	l.buf[l.next] = e
	l.next++
	if l.next == len(l.buf) {
		l.next, l.full = 0, true
	}
	l.mu.Unlock()
}

// ForCall returns the kept events of one call, oldest first.
func (l *EventLog) ForCall(callID string) []warden.Event {
	if callID == "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []warden.Event
	start, n := 0, l.next
	if l.full {
		start, n = l.next, len(l.buf)
	}
	for i := 0; i < n; i++ {
		e := &l.buf[(start+i)%len(l.buf)]
		if e.CallID == callID {
			out = append(out, *e)
		}
	}
	return out
}
