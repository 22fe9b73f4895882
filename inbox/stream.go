// Live updates: one shared poller per Inbox watches the pending set while at least one
// browser listens, and every listening browser gets an event when the set changes.

package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

const (
	pollInterval = 500 * time.Millisecond
	pollTimeout  = 5 * time.Second
	keepAlive    = 20 * time.Second
)

// hub fans the pending state out to the event streams. Its poller goroutine runs only
// while there is a subscriber: the first subscribe starts it, the last unsubscribe
// stops it, so an idle inbox costs the store nothing.
type hub struct {
	// Set at construction.
	poll     func(context.Context) (pendingState, error)
	interval time.Duration
	done     <-chan struct{} // the inbox's: closed by Close
	log      *slog.Logger

	mu       sync.Mutex
	subs     map[chan pendingState]struct{} // guarded by mu
	last     pendingState                   // guarded by mu: last state published
	haveLast bool                           // guarded by mu
	// stop is the running poller's stop channel (nil when none runs). Each poller has
	// its own, so a poller being stopped can never publish after its successor started.
	stop   chan struct{} // guarded by mu
	closed bool          // guarded by mu: no new pollers once set
	wg     sync.WaitGroup
}

func newHub(poll func(context.Context) (pendingState, error), interval time.Duration, done <-chan struct{}, log *slog.Logger) *hub {
	return &hub{poll: poll, interval: interval, done: done, log: log, subs: make(map[chan pendingState]struct{})}
}

// subscribe registers a listener. The channel holds at most the latest state (older
// undelivered states are replaced). ok is false after close.
func (h *hub) subscribe() (ch chan pendingState, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	ch = make(chan pendingState, 1)
	h.subs[ch] = struct{}{}
	if h.stop == nil {
		h.stop = make(chan struct{})
		h.haveLast = false
		h.wg.Add(1)
		go h.run(h.stop)
	} else if h.haveLast {
		ch <- h.last
	}
	return ch, true
}

func (h *hub) unsubscribe(ch chan pendingState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, ch)
	if len(h.subs) == 0 && h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
}

// close refuses new subscribers and waits for the poller to end (it ends once the
// inbox's done channel is closed).
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}

// running reports whether a poller is running (for tests).
func (h *hub) running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stop != nil
}

func (h *hub) run(stop chan struct{}) {
	defer h.wg.Done()
	t := time.NewTicker(h.interval)
	defer t.Stop()
	failing := false
	for {
		ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
		st, err := h.poll(ctx)
		cancel()
		switch {
		case err != nil && !failing:
			failing = true
			h.log.Error("inbox: polling pending decisions failed", "err", err)
		case err == nil:
			failing = false
			h.publish(stop, st)
		}
		select {
		case <-stop:
			return
		case <-h.done:
			return
		case <-t.C:
		}
	}
}

func (h *hub) publish(stop chan struct{}, st pendingState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != stop || (h.haveLast && h.last == st) {
		return
	}
	h.last, h.haveLast = st, true
	for ch := range h.subs {
		// Replace an undelivered state with the newer one; the hub is the only sender,
		// so after the drain the send cannot block.
		select {
		case <-ch:
		default:
		}
		select {
		case ch <- st:
		default:
		}
	}
}

// stream serves the server-sent event stream of one browser tab: an event "pending"
// with the count and fingerprint of the pending set when it connects and whenever the
// set changes, a comment every 20 seconds to keep proxies from closing it, and an
// event "signedout" when the session ends. It ends with the session, the request or
// the inbox.
func (ib *Inbox) stream(w http.ResponseWriter, r *http.Request, s session) {
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "text/event-stream")
		return
	}
	ch, ok := ib.hub.subscribe()
	if !ok {
		http.Error(w, "the inbox is shutting down", http.StatusServiceUnavailable)
		return
	}
	defer ib.hub.unsubscribe(ch)

	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout; not every writer supports this
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 3000\n\n"); err != nil || rc.Flush() != nil {
		return
	}

	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	expire := time.NewTimer(max(s.Expires.Sub(ib.now()), 0))
	defer expire.Stop()
	for {
		var err error
		changed := ib.ops.Load().changed // closed when the operators change
		select {
		case <-r.Context().Done():
			return
		case <-ib.done:
			return
		case <-changed:
			if !ib.sessionLive(r.Context(), s) {
				fmt.Fprint(w, "event: signedout\ndata: {}\n\n")
				rc.Flush()
				return
			}
			continue
		case <-expire.C:
			fmt.Fprint(w, "event: signedout\ndata: {}\n\n")
			rc.Flush()
			return
		case st := <-ch:
			if !ib.sessionLive(r.Context(), s) {
				fmt.Fprint(w, "event: signedout\ndata: {}\n\n")
				rc.Flush()
				return
			}
			b, _ := json.Marshal(st)
			_, err = fmt.Fprintf(w, "event: pending\ndata: %s\n\n", b)
		case <-ka.C:
			if !ib.sessionLive(r.Context(), s) {
				fmt.Fprint(w, "event: signedout\ndata: {}\n\n")
				rc.Flush()
				return
			}
			_, err = fmt.Fprint(w, ": keep-alive\n\n")
		}
		if err != nil || rc.Flush() != nil {
			return
		}
	}
}
