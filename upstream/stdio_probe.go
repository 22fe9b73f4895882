// The liveness probe of a stdio connection: a ping written to a child that has
// been silent while a call to it is outstanding.

package upstream

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// stdioProbeQuiet is how long a child may be silent, while a call to it is
// outstanding, before the connection pings it.
//
// Why a ping helps: a server built with Go 1.26 whose goroutine enters a blocking
// read of its stdin just as another of its goroutines starts stopping the world
// (a GC start) stops entirely until that read returns, that is until the client
// next writes to it (issue 17; internal/repro/stwsyscall reproduces it). A client
// that only waits for the answer waits forever. The ping is such a write, and a
// request every MCP server must accept at any time.
const stdioProbeQuiet = 2 * time.Second

// probeIDPrefix starts the ids of the connection's own pings: strings, where the
// SDK's client numbers its calls, so the two never meet.
const probeIDPrefix = "warden-probe-"

// A liveness watches one connection's traffic and calls ping when, for quiet, a
// call written to the child is unanswered and nothing at all was read from the
// child: then, at most once per quiet period, until something is read or no call
// is outstanding. Calls the client cancelled (notifications/cancelled) no longer
// count: a server does not answer them. Its zero value is not usable; it is made
// by newLiveness, and its methods are safe for concurrent use.
type liveness struct {
	quiet time.Duration
	ping  func(jsonrpc.ID) // writes a ping with that id; called with no lock held

	mu        sync.Mutex
	pending   map[jsonrpc.ID]struct{} // calls written and not answered
	lastHeard time.Time               // when something was last read (or a ping written)
	timer     *time.Timer             // armed while a call is pending
	sent      uint64                  // pings written so far
	stopped   bool
}

func newLiveness(quiet time.Duration, ping func(jsonrpc.ID)) *liveness {
	return &liveness{quiet: quiet, ping: ping, pending: map[jsonrpc.ID]struct{}{}, lastHeard: time.Now()}
}

// wrote records a message about to be written to the child.
func (l *liveness) wrote(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case req.IsCall():
		l.pending[req.ID] = struct{}{}
		if l.timer == nil && !l.stopped {
			// Silence counts from the first call written after a quiet spell.
			l.lastHeard = time.Now()
			l.timer = time.AfterFunc(l.quiet, l.check)
		}
	case req.Method == "notifications/cancelled":
		if id, ok := cancelledID(req.Params); ok {
			delete(l.pending, id)
		}
	}
}

// unwritten takes back wrote(msg) for a message whose write failed.
func (l *liveness) unwritten(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		l.mu.Lock()
		delete(l.pending, req.ID)
		l.mu.Unlock()
	}
}

// heard records a message read from the child; it reports whether the message is
// the answer to one of the connection's own pings, which only the probe wants.
func (l *liveness) heard(msg jsonrpc.Message) (probe bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastHeard = time.Now()
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return false
	}
	if s, ok := resp.ID.Raw().(string); ok && strings.HasPrefix(s, probeIDPrefix) {
		return true
	}
	delete(l.pending, resp.ID)
	return false
}

// check runs when the timer fires: it pings a child silent for quiet with a call
// outstanding, and re-arms the timer while a call is.
func (l *liveness) check() {
	l.mu.Lock()
	if l.stopped || len(l.pending) == 0 {
		l.timer = nil
		l.mu.Unlock()
		return
	}
	var id jsonrpc.ID
	silent := time.Since(l.lastHeard)
	send := silent >= l.quiet
	if send {
		l.sent++
		id, _ = jsonrpc.MakeID(probeIDPrefix + strconv.FormatUint(l.sent, 10)) // a string: never an error
		l.lastHeard = time.Now()                                               // the next ping only after another quiet spell
	}
	next := l.quiet - silent
	if send {
		next = l.quiet
	}
	l.mu.Unlock()
	if send {
		l.ping(id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		l.timer = nil
		return
	}
	l.timer = time.AfterFunc(next, l.check)
}

// pings returns the number of pings written so far.
func (l *liveness) pings() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

// stop ends the probe: no ping is written after it returns, except one whose
// write had already begun.
func (l *liveness) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// cancelledID returns the requestId of a notifications/cancelled's params.
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false
	}
	return id, true
}
