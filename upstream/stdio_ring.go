// A flight recorder for stdio connections: the ids and methods of the last
// messages each connection wrote to its child and read from it, so that a lost
// answer can be placed on one side of the pipe or the other.

package upstream

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// wireRingSize is the number of messages a stdio connection remembers.
const wireRingSize = 256

// WireStage says where a stdio connection saw a message.
type WireStage uint8

const (
	// WireWritten: about to be written to the child's stdin (as one line; a
	// response completing an incoming batch is recorded with the batch's other
	// responses).
	WireWritten WireStage = iota + 1
	// WireWriteFailed: the write to the child's stdin failed.
	WireWriteFailed
	// WireRead: read from the child's stdout and decoded by the connection's
	// reader goroutine.
	WireRead
	// WireDelivered: returned by the connection's Read, that is handed to the SDK.
	WireDelivered
)

func (s WireStage) String() string {
	switch s {
	case WireWritten:
		return "written"
	case WireWriteFailed:
		return "write-failed"
	case WireRead:
		return "read"
	case WireDelivered:
		return "delivered"
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// WireEntry is one message a stdio connection saw.
type WireEntry struct {
	At    time.Time
	Stage WireStage
	// ID is the message's JSON-RPC id (invalid for a notification); Method is a
	// request's method ("" for a response).
	ID     jsonrpc.ID
	Method string
	// Response reports a response; Error one that carries a JSON-RPC error.
	Response, Error bool
}

// Kind names what the message is: call, notification, response or error.
func (e WireEntry) Kind() string {
	switch {
	case e.Response && e.Error:
		return "error"
	case e.Response:
		return "response"
	case e.ID.IsValid():
		return "call"
	}
	return "notification"
}

func (e WireEntry) String() string {
	id := "-"
	if e.ID.IsValid() {
		id = fmt.Sprint(e.ID.Raw())
	}
	s := fmt.Sprintf("%s %-12s %-12s id=%s", e.At.UTC().Format("15:04:05.000000"), e.Stage, e.Kind(), id)
	if e.Method != "" {
		s += " " + e.Method
	}
	return s
}

// A WireLog is what one stdio connection remembers of its traffic.
type WireLog struct {
	PID     int
	Started time.Time
	// Counts is the number of messages seen at each stage since the connection
	// started, indexed by WireStage.
	Counts [WireDelivered + 1]uint64
	// Entries are the last messages seen (up to 256), oldest first.
	Entries []WireEntry
}

// listenMethod is protocol 2026-07-28's request for a connection's notifications.
const listenMethod = "subscriptions/listen"

// Outstanding returns the calls this connection wrote to its child and read no
// response to, among those it remembers, oldest first. A subscriptions/listen
// (protocol 2026-07-28: the stream of the connection's notifications, open for as
// long as the connection is) is not a call waiting for its answer and is left out.
func (l WireLog) Outstanding() []WireEntry {
	var out []WireEntry
	for i, e := range l.Entries {
		if e.Stage != WireWritten || e.Response || !e.ID.IsValid() || e.Method == listenMethod {
			continue
		}
		answered := slices.ContainsFunc(l.Entries[i+1:], func(r WireEntry) bool {
			return r.Stage == WireRead && r.Response && r.ID == e.ID
		})
		if !answered {
			out = append(out, e)
		}
	}
	return out
}

// Trace says what the connection saw of the call with id: when it was written,
// and whether a response with that id was read back and handed to the SDK.
func (l WireLog) Trace(id jsonrpc.ID) string {
	var written, read, delivered *WireEntry
	for i := range l.Entries {
		e := &l.Entries[i]
		if e.ID != id {
			continue
		}
		switch {
		case e.Stage == WireWritten && !e.Response && written == nil:
			written = e
		case e.Stage == WireRead && e.Response && read == nil:
			read = e
		case e.Stage == WireDelivered && e.Response && delivered == nil:
			delivered = e
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server process %d, id %v: ", l.PID, id.Raw())
	switch {
	case written == nil:
		b.WriteString("not written to the server (among its last messages)")
		return b.String()
	default:
		fmt.Fprintf(&b, "%s written to the server at %s; ", written.Method, written.At.UTC().Format(time.RFC3339Nano))
	}
	switch {
	case read == nil:
		b.WriteString("no response with that id read back from the server")
	case delivered == nil:
		fmt.Fprintf(&b, "its response was read from the server at %s but not handed to the SDK", read.At.UTC().Format(time.RFC3339Nano))
	default:
		fmt.Fprintf(&b, "its response was read from the server at %s and handed to the SDK at %s", read.At.UTC().Format(time.RFC3339Nano), delivered.At.UTC().Format(time.RFC3339Nano))
	}
	return b.String()
}

func (l WireLog) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stdio connection to server process %d (started %s): written %d, write failed %d, read %d, delivered %d; last %d messages:\n",
		l.PID, l.Started.UTC().Format(time.RFC3339Nano), l.Counts[WireWritten], l.Counts[WireWriteFailed], l.Counts[WireRead], l.Counts[WireDelivered], len(l.Entries))
	for _, e := range l.Entries {
		b.WriteString("  ")
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// StdioWireLogs returns what every open stdio connection of this process
// remembers of its traffic, ordered by process id. It is for diagnosis (the soak
// test writes it when a call goes unanswered); recording costs no allocation.
func StdioWireLogs() []WireLog {
	liveWires.mu.Lock()
	rings := make([]*wireRing, 0, len(liveWires.rings))
	for r := range liveWires.rings {
		rings = append(rings, r)
	}
	liveWires.mu.Unlock()
	logs := make([]WireLog, 0, len(rings))
	for _, r := range rings {
		logs = append(logs, r.snapshot())
	}
	slices.SortFunc(logs, func(a, b WireLog) int { return a.PID - b.PID })
	return logs
}

// liveWires holds the rings of the open stdio connections.
var liveWires struct {
	mu    sync.Mutex
	rings map[*wireRing]struct{}
}

// wireRing is one connection's record of its last messages.
type wireRing struct {
	pid     int
	started time.Time

	mu      sync.Mutex
	next    uint64 // messages recorded so far; the next goes at next % wireRingSize
	counts  [WireDelivered + 1]uint64
	entries [wireRingSize]wireSlot
}

// wireSlot is a WireEntry as stored: the time as Unix nanoseconds.
type wireSlot struct {
	at              int64
	id              jsonrpc.ID
	method          string
	stage           WireStage
	response, error bool
}

func newWireRing(pid int) *wireRing {
	r := &wireRing{pid: pid, started: time.Now()}
	liveWires.mu.Lock()
	if liveWires.rings == nil {
		liveWires.rings = map[*wireRing]struct{}{}
	}
	liveWires.rings[r] = struct{}{}
	liveWires.mu.Unlock()
	return r
}

// forget drops r from StdioWireLogs (the connection is closed).
func (r *wireRing) forget() {
	liveWires.mu.Lock()
	delete(liveWires.rings, r)
	liveWires.mu.Unlock()
}

// record notes msg at stage.
func (r *wireRing) record(stage WireStage, msg jsonrpc.Message) {
	s := wireSlot{at: time.Now().UnixNano(), stage: stage}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		s.id, s.method = m.ID, m.Method
	case *jsonrpc.Response:
		s.id, s.response, s.error = m.ID, true, m.Error != nil
	}
	r.mu.Lock()
	r.entries[r.next%wireRingSize] = s
	r.next++
	r.counts[stage]++
	r.mu.Unlock()
}

func (r *wireRing) snapshot() WireLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := WireLog{PID: r.pid, Started: r.started, Counts: r.counts}
	n := min(r.next, wireRingSize)
	l.Entries = make([]WireEntry, 0, n)
	for i := r.next - n; i < r.next; i++ {
		s := r.entries[i%wireRingSize]
		l.Entries = append(l.Entries, WireEntry{At: time.Unix(0, s.at), Stage: s.stage, ID: s.id, Method: s.method, Response: s.response, Error: s.error})
	}
	return l
}
