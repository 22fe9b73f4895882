// Package eventstore keeps the recent server-sent events of streamable HTTP
// sessions, so that a client whose connection dropped can resume a stream with
// Last-Event-ID (protocol 2025-03-26 to 2025-11-25) and get what it missed: above
// all the result of a call that finished while it was away.
//
// A [Store] is an [mcp.EventStore] with bounds. What it keeps is bounded per stream
// (events and bytes: the oldest events go first) and in total (bytes and streams:
// the least recently used streams go first), and a stream unused for the idle time
// is forgotten. Everything a session's streams hold is forgotten when the session
// closes, and nothing is kept for a closed session afterwards. A resume that asks for
// an event that was let go gets an error, never a partial replay.
//
// Events are keyed by session and stream: [Store.After] replays only the stream of
// the session it is asked for. Which session a request belongs to (and that the
// caller owns it) is the HTTP handler's business.
package eventstore

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits bound a [Store]. A zero field takes its default (see [DefaultLimits]).
type Limits struct {
	// StreamEvents and StreamBytes bound one stream: beyond either, its oldest events
	// are let go (a stream keeps its newest event unless that one alone is larger
	// than StreamBytes).
	StreamEvents int
	StreamBytes  int
	// TotalBytes bounds every stream together, and Streams the number of streams
	// (each session's standalone stream is not counted: it lives as long as its
	// session). Beyond either, the least recently used stream is let go: a call's
	// stream whole, a standalone stream's events.
	TotalBytes int
	Streams    int
	// Idle is how long a stream is kept after it was last written or replayed; then it
	// is let go as above.
	Idle time.Duration
}

// DefaultLimits are the limits a zero [Limits] field takes.
var DefaultLimits = Limits{
	StreamEvents: 1000,
	StreamBytes:  8 << 20,
	TotalBytes:   64 << 20,
	Streams:      10000,
	Idle:         5 * time.Minute,
}

// eventOverhead is what one kept event counts for beside its data, so that empty
// events (the prime events of protocol 2025-11-25) are bounded by bytes too.
const eventOverhead = 64

// ErrNotKept is the error of [Store.After] when the stream is not kept: it never
// existed in that session, the session closed, or the stream was let go (idle or to
// bound the store).
var ErrNotKept = errors.New("eventstore: stream not kept")

// Store is a bounded in-memory [mcp.EventStore]. Make one with [New]. All methods
// are safe for concurrent use; none blocks on anything but the store's own lock.
type Store struct {
	limits Limits
	now    func() time.Time

	mu       sync.Mutex
	sessions map[string]*session
	// used orders the kept streams (not the standalone ones) by last use, least
	// recent first; standalone holds, in the same order, the standalone streams
	// that have events (one without is not let go of: it lives as long as its
	// session).
	used       list.List // of *stream
	standalone list.List // of *stream
	bytes      int
	// closed holds the recently closed sessions (until Idle after the close), so that
	// a stream opened by a request that raced with the close is not kept.
	closed      map[string]time.Time
	closedOrder list.List // of closedSession, oldest first
}

type session struct {
	streams map[string]*stream
}

type stream struct {
	session, id string
	first       int      // index of data[0]
	data        [][]byte // nil entries are empty events
	bytes       int      // what data counts for, with eventOverhead each
	last        time.Time
	elem        *list.Element // in used or standalone; nil when in neither
}

type closedSession struct {
	id string
	at time.Time
}

var _ mcp.EventStore = (*Store)(nil)

// New returns an empty store with the given limits (zero fields take the defaults)
// and clock (nil: [time.Now]).
func New(l Limits, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	s := &Store{now: now, sessions: map[string]*session{}, closed: map[string]time.Time{}}
	s.limits = l.withDefaults()
	return s
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.StreamEvents > 0 {
		d.StreamEvents = l.StreamEvents
	}
	if l.StreamBytes > 0 {
		d.StreamBytes = l.StreamBytes
	}
	if l.TotalBytes > 0 {
		d.TotalBytes = l.TotalBytes
	}
	if l.Streams > 0 {
		d.Streams = l.Streams
	}
	if l.Idle > 0 {
		d.Idle = l.Idle
	}
	return d
}

// Limits returns the store's limits, defaults filled in.
func (s *Store) Limits() Limits {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limits
}

// Open implements [mcp.EventStore.Open]: it starts keeping the stream (nothing
// changes if it is kept already). A stream of a session that closed is not kept
// (Open succeeds, and the stream's events are not kept: see [Store.Append]).
func (s *Store) Open(_ context.Context, sessionID, streamID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expireLocked(now)
	if _, closed := s.closed[sessionID]; closed {
		return nil
	}
	ss := s.sessions[sessionID]
	if ss == nil {
		ss = &session{streams: map[string]*stream{}}
		s.sessions[sessionID] = ss
	}
	st := ss.streams[streamID]
	if st == nil {
		st = &stream{session: sessionID, id: streamID}
		ss.streams[streamID] = st
	}
	s.touchLocked(st, now)
	s.boundLocked(st)
	return nil
}

// Append implements [mcp.EventStore.Append]: it keeps a copy of data as the next
// event of the stream, then lets go of what the limits no longer admit. It fails
// when the stream is not kept (never opened, let go, or its session closed): the
// event is then not kept, and a resume past it fails.
func (s *Store) Append(_ context.Context, sessionID, streamID string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expireLocked(now)
	st := s.lookupLocked(sessionID, streamID)
	if st == nil {
		return fmt.Errorf("%w: stream %q of session %q (appending an event)", ErrNotKept, streamID, sessionID)
	}
	var kept []byte
	if len(data) > 0 {
		kept = append([]byte(nil), data...)
	}
	st.data = append(st.data, kept)
	st.bytes += len(kept) + eventOverhead
	s.bytes += len(kept) + eventOverhead
	s.touchLocked(st, now)
	s.boundLocked(st)
	return nil
}

// After implements [mcp.EventStore.After]: it yields the data of the stream's
// events after index, each once, or a single error when the stream is not kept
// ([ErrNotKept]) or an event after index was let go ([mcp.ErrEventsPurged]). A
// replay counts as a use of the stream.
func (s *Store) After(_ context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expireLocked(now)
	st := s.lookupLocked(sessionID, streamID)
	var (
		evs [][]byte
		err error
	)
	switch {
	case st == nil:
		err = fmt.Errorf("%w: stream %q of session %q (resuming after event %d)", ErrNotKept, streamID, sessionID, index)
	case index+1 < st.first:
		err = fmt.Errorf("eventstore: stream %q of session %q: events %d to %d were let go to bound the store: %w", streamID, sessionID, index+1, st.first-1, mcp.ErrEventsPurged)
	default:
		if start := index + 1 - st.first; start < len(st.data) {
			evs = append([][]byte(nil), st.data[start:]...)
		}
		s.touchLocked(st, now)
	}
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range evs {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// SessionClosed implements [mcp.EventStore.SessionClosed]: it lets go of every
// stream of the session, and keeps none opened for it later.
func (s *Store) SessionClosed(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expireLocked(now)
	if ss := s.sessions[sessionID]; ss != nil {
		for _, st := range ss.streams {
			s.dropLocked(st)
		}
	}
	delete(s.sessions, sessionID)
	if _, ok := s.closed[sessionID]; !ok {
		s.closed[sessionID] = now
		s.closedOrder.PushBack(closedSession{sessionID, now})
	}
	// The closed sessions are bounded like the streams: a flood of short sessions
	// forgets the oldest closes first (a stream that then races with its session's
	// close is kept until it is let go like any other).
	for s.closedOrder.Len() > s.limits.Streams {
		s.forgetClosedLocked()
	}
	return nil
}

// Sweep lets go of what has been idle for the idle time. Every method does it too;
// Sweep is for a store that is otherwise not used.
func (s *Store) Sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.now())
}

// Stats is what a store holds.
type Stats struct {
	Sessions int // sessions with a kept stream
	Streams  int // kept streams, not counting the standalone ones
	Events   int // kept events, in every stream
	Bytes    int // what they count for against TotalBytes
}

// Stats returns what the store holds now; with a session ID, only that session's
// streams (Streams then counts its standalone stream too).
func (s *Store) Stats(sessionID ...string) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out Stats
	if len(sessionID) > 0 {
		for _, id := range sessionID {
			if ss := s.sessions[id]; ss != nil {
				out.Sessions++
				for _, st := range ss.streams {
					out.Streams++
					out.Events += len(st.data)
					out.Bytes += st.bytes
				}
			}
		}
		return out
	}
	out.Sessions = len(s.sessions)
	out.Streams = s.used.Len()
	out.Bytes = s.bytes
	for _, ss := range s.sessions {
		for _, st := range ss.streams {
			out.Events += len(st.data)
		}
	}
	return out
}

func (s *Store) lookupLocked(sessionID, streamID string) *stream {
	if ss := s.sessions[sessionID]; ss != nil {
		return ss.streams[streamID]
	}
	return nil
}

// lru is the list st is ordered in.
func (s *Store) lru(st *stream) *list.List {
	if st.id == "" {
		return &s.standalone
	}
	return &s.used
}

// touchLocked records a use of st: it becomes the most recently used of its list
// (joining it, unless it is a standalone stream without events).
func (s *Store) touchLocked(st *stream, now time.Time) {
	st.last = now
	switch {
	case st.elem != nil:
		s.lru(st).MoveToBack(st.elem)
	case st.id != "" || len(st.data) > 0:
		st.elem = s.lru(st).PushBack(st)
	}
}

// boundLocked lets go of what the limits do not admit after st grew: st's oldest
// events, then the least recently used streams other than st.
func (s *Store) boundLocked(st *stream) {
	for len(st.data) > 0 && (len(st.data) > s.limits.StreamEvents || st.bytes > s.limits.StreamBytes) {
		s.dropFirstLocked(st)
	}
	for s.bytes > s.limits.TotalBytes || s.used.Len() > s.limits.Streams {
		victim := s.oldestLocked(st)
		if victim == nil {
			break
		}
		s.letGoLocked(victim)
	}
	// Only st is left, and the store is still too big: st gives up its oldest events.
	for s.bytes > s.limits.TotalBytes && len(st.data) > 0 {
		s.dropFirstLocked(st)
	}
	if st.id == "" && len(st.data) == 0 {
		s.unlistLocked(st)
	}
}

// oldestLocked is the least recently used stream other than except, or nil: a
// call's stream, or when the store is over its bytes, a standalone stream with
// events. Calls' streams go first.
func (s *Store) oldestLocked(except *stream) *stream {
	lists := []*list.List{&s.used}
	if s.bytes > s.limits.TotalBytes {
		lists = append(lists, &s.standalone)
	}
	for _, l := range lists {
		for e := l.Front(); e != nil; e = e.Next() {
			if e.Value != except {
				return e.Value.(*stream)
			}
		}
	}
	return nil
}

// letGoLocked lets go of st: a call's stream is dropped, a standalone stream
// (which lives as long as its session) gives up its events.
func (s *Store) letGoLocked(st *stream) {
	if st.id == "" {
		for len(st.data) > 0 {
			s.dropFirstLocked(st)
		}
		s.unlistLocked(st)
		return
	}
	s.dropLocked(st)
	ss := s.sessions[st.session]
	delete(ss.streams, st.id)
	if len(ss.streams) == 0 {
		delete(s.sessions, st.session)
	}
}

// dropLocked takes st out of the accounting and the use order (not out of its
// session's map).
func (s *Store) dropLocked(st *stream) {
	s.bytes -= st.bytes
	st.bytes, st.data = 0, nil
	s.unlistLocked(st)
}

func (s *Store) unlistLocked(st *stream) {
	if st.elem != nil {
		s.lru(st).Remove(st.elem)
		st.elem = nil
	}
}

func (s *Store) dropFirstLocked(st *stream) {
	n := len(st.data[0]) + eventOverhead
	st.data[0] = nil
	st.data = st.data[1:]
	st.first++
	st.bytes -= n
	s.bytes -= n
}

// expireLocked lets go of the streams idle for the idle time, and forgets the
// closes older than that.
func (s *Store) expireLocked(now time.Time) {
	cutoff := now.Add(-s.limits.Idle)
	for e := s.used.Front(); e != nil; e = s.used.Front() {
		st := e.Value.(*stream)
		if st.last.After(cutoff) {
			break
		}
		s.letGoLocked(st)
	}
	for e := s.standalone.Front(); e != nil; e = s.standalone.Front() {
		st := e.Value.(*stream)
		if st.last.After(cutoff) {
			break
		}
		s.letGoLocked(st)
	}
	for e := s.closedOrder.Front(); e != nil && !e.Value.(closedSession).at.After(cutoff); e = s.closedOrder.Front() {
		s.forgetClosedLocked()
	}
}

func (s *Store) forgetClosedLocked() {
	e := s.closedOrder.Front()
	delete(s.closed, e.Value.(closedSession).id)
	s.closedOrder.Remove(e)
}
