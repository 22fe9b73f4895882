package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/eventstore"
)

var ctx = context.Background()

// clock is a manual clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func replay(t *testing.T, s *eventstore.Store, session, stream string, index int) ([]string, error) {
	t.Helper()
	var out []string
	for d, err := range s.After(ctx, session, stream, index) {
		if err != nil {
			return out, err
		}
		out = append(out, string(d))
	}
	return out, nil
}

func mustReplay(t *testing.T, s *eventstore.Store, session, stream string, index int, want ...string) {
	t.Helper()
	got, err := replay(t, s, session, stream, index)
	if err != nil {
		t.Fatalf("After(%q, %q, %d): %v", session, stream, index, err)
	}
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("After(%q, %q, %d) = %q, want %q", session, stream, index, got, want)
	}
}

func mustOpen(t *testing.T, s *eventstore.Store, session, stream string) {
	t.Helper()
	if err := s.Open(ctx, session, stream); err != nil {
		t.Fatalf("Open(%q, %q): %v", session, stream, err)
	}
}

func mustAppend(t *testing.T, s *eventstore.Store, session, stream string, data ...string) {
	t.Helper()
	for _, d := range data {
		var b []byte
		if d != "" {
			b = []byte(d)
		}
		if err := s.Append(ctx, session, stream, b); err != nil {
			t.Fatalf("Append(%q, %q, %q): %v", session, stream, d, err)
		}
	}
}

func TestReplayAfterIndex(t *testing.T) {
	s := eventstore.New(eventstore.Limits{}, nil)
	mustOpen(t, s, "s1", "a")
	mustAppend(t, s, "s1", "a", "", "progress", "result") // the prime event is empty
	mustReplay(t, s, "s1", "a", 0, "progress", "result")
	mustReplay(t, s, "s1", "a", 1, "result")
	mustReplay(t, s, "s1", "a", 2)
	mustReplay(t, s, "s1", "a", 9)
	// The empty prime event is replayed as empty data (the SDK skips it).
	got, _ := replay(t, s, "s1", "a", -1)
	if want := []string{"", "progress", "result"}; !slices.Equal(got, want) {
		t.Fatalf("After(-1) = %q, want %q", got, want)
	}
}

func TestAppendKeepsACopy(t *testing.T) {
	s := eventstore.New(eventstore.Limits{}, nil)
	mustOpen(t, s, "s1", "a")
	b := []byte("result")
	if err := s.Append(ctx, "s1", "a", b); err != nil {
		t.Fatal(err)
	}
	copy(b, "XXXXXX")
	mustReplay(t, s, "s1", "a", -1, "result")
}

// A stream is replayed only in the session it belongs to: the same stream ID in
// another session, an unknown stream or session get ErrNotKept and no data.
func TestReplayOnlyInItsSession(t *testing.T) {
	s := eventstore.New(eventstore.Limits{}, nil)
	mustOpen(t, s, "s1", "a")
	mustAppend(t, s, "s1", "a", "", "secret result")
	mustOpen(t, s, "s2", "b")
	for _, c := range []struct{ session, stream string }{{"s2", "a"}, {"s1", "b"}, {"s3", "a"}, {"", "a"}} {
		got, err := replay(t, s, c.session, c.stream, 0)
		if !errors.Is(err, eventstore.ErrNotKept) || len(got) != 0 {
			t.Errorf("After(%q, %q) = %q, %v; want nothing and ErrNotKept", c.session, c.stream, got, err)
		}
	}
	if err := s.Append(ctx, "s2", "a", []byte("x")); !errors.Is(err, eventstore.ErrNotKept) {
		t.Errorf("Append to another session's stream: %v, want ErrNotKept", err)
	}
	mustReplay(t, s, "s1", "a", 0, "secret result")
}

// A closed session's streams are gone, and a stream opened for it afterwards (a
// request racing with the close) keeps nothing.
func TestSessionClosed(t *testing.T) {
	s := eventstore.New(eventstore.Limits{}, nil)
	mustOpen(t, s, "s1", "")
	mustOpen(t, s, "s1", "a")
	mustAppend(t, s, "s1", "a", "", "result")
	mustAppend(t, s, "s1", "", "notification")
	mustOpen(t, s, "s2", "a")
	mustAppend(t, s, "s2", "a", "other")
	if err := s.SessionClosed(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats("s1"); st != (eventstore.Stats{}) {
		t.Errorf("after SessionClosed the session holds %+v", st)
	}
	for _, stream := range []string{"a", ""} {
		if _, err := replay(t, s, "s1", stream, -1); !errors.Is(err, eventstore.ErrNotKept) {
			t.Errorf("After(closed session, %q): %v, want ErrNotKept", stream, err)
		}
	}
	mustOpen(t, s, "s1", "late")
	if err := s.Append(ctx, "s1", "late", []byte("late result")); !errors.Is(err, eventstore.ErrNotKept) {
		t.Errorf("Append to a stream opened after the close: %v, want ErrNotKept", err)
	}
	if st := s.Stats("s1"); st != (eventstore.Stats{}) {
		t.Errorf("a stream opened after the close is kept: %+v", st)
	}
	mustReplay(t, s, "s2", "a", -1, "other")
	if st := s.Stats(); st.Bytes != len("other")+64 || st.Streams != 1 || st.Events != 1 {
		t.Errorf("Stats = %+v, want only s2's one event", st)
	}
}

// Beyond StreamEvents or StreamBytes, a stream lets go of its oldest events; a
// resume that needs one of them fails with ErrEventsPurged, not a partial replay.
func TestStreamLimits(t *testing.T) {
	s := eventstore.New(eventstore.Limits{StreamEvents: 3, StreamBytes: 1 << 20}, nil)
	mustOpen(t, s, "s1", "a")
	mustAppend(t, s, "s1", "a", "", "e1", "e2", "e3", "e4")
	if st := s.Stats(); st.Events != 3 {
		t.Fatalf("Events = %d, want 3", st.Events)
	}
	mustReplay(t, s, "s1", "a", 1, "e2", "e3", "e4")
	for _, index := range []int{-1, 0} {
		if got, err := replay(t, s, "s1", "a", index); !errors.Is(err, mcp.ErrEventsPurged) || len(got) != 0 {
			t.Errorf("After(%d) = %q, %v; want nothing and ErrEventsPurged", index, got, err)
		}
	}

	s = eventstore.New(eventstore.Limits{StreamBytes: 2 * (64 + 10)}, nil)
	mustOpen(t, s, "s1", "a")
	mustAppend(t, s, "s1", "a", "0123456789", "abcdefghij", "ABCDEFGHIJ")
	mustReplay(t, s, "s1", "a", 0, "abcdefghij", "ABCDEFGHIJ")
	// One event larger than the stream's bound is not kept at all.
	mustAppend(t, s, "s1", "a", string(make([]byte, 200)))
	if st := s.Stats(); st.Events != 0 || st.Bytes != 0 {
		t.Errorf("after an event over StreamBytes: %+v, want nothing kept", st)
	}
	if _, err := replay(t, s, "s1", "a", 2); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("After the too-large event's predecessor: %v, want ErrEventsPurged", err)
	}
}

// Beyond TotalBytes or Streams, the least recently used streams are let go whole,
// calls' streams before standalone streams' events; a replay counts as a use.
func TestTotalLimits(t *testing.T) {
	ev := func(i int) string { return fmt.Sprintf("%036d", i) } // 36 bytes + 64 = 100
	s := eventstore.New(eventstore.Limits{TotalBytes: 1000}, nil)
	for i := range 5 {
		mustOpen(t, s, "s1", fmt.Sprint("c", i))
		mustAppend(t, s, "s1", fmt.Sprint("c", i), ev(2*i), ev(2*i+1))
	}
	if st := s.Stats(); st.Bytes != 1000 || st.Streams != 5 {
		t.Fatalf("Stats = %+v, want 1000 bytes in 5 streams", st)
	}
	mustReplay(t, s, "s1", "c0", 0, ev(1)) // c0 is now the most recently used
	mustOpen(t, s, "s1", "c5")
	mustAppend(t, s, "s1", "c5", ev(10))
	if _, err := replay(t, s, "s1", "c1", -1); !errors.Is(err, eventstore.ErrNotKept) {
		t.Errorf("the least recently used stream c1 is still kept (%v)", err)
	}
	for _, c := range []string{"c0", "c2", "c3", "c4", "c5"} {
		if _, err := replay(t, s, "s1", c, -1); err != nil {
			t.Errorf("%s was let go: %v", c, err)
		}
	}
	if st := s.Stats(); st.Bytes > 1000 {
		t.Errorf("Bytes = %d, over TotalBytes", st.Bytes)
	}

	// A standalone stream's events go only after every call's stream.
	s = eventstore.New(eventstore.Limits{TotalBytes: 500}, nil)
	mustOpen(t, s, "s1", "")
	mustAppend(t, s, "s1", "", ev(0), ev(1))
	mustOpen(t, s, "s1", "c")
	mustAppend(t, s, "s1", "c", ev(2), ev(3), ev(4))
	mustAppend(t, s, "s1", "c", ev(5)) // over: c is st, so the standalone stream gives
	mustReplay(t, s, "s1", "c", -1, ev(2), ev(3), ev(4), ev(5))
	if _, err := replay(t, s, "s1", "", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("After on the standalone stream whose events were let go: %v, want ErrEventsPurged", err)
	}
	mustReplay(t, s, "s1", "", 1) // a client that had them all resumes with nothing to replay
	mustAppend(t, s, "s1", "", ev(6))
	mustReplay(t, s, "s1", "", 1, ev(6))
	if st := s.Stats(); st.Bytes != 500 {
		t.Errorf("Bytes = %d, want 500", st.Bytes)
	}

	s = eventstore.New(eventstore.Limits{Streams: 2}, nil)
	for _, c := range []string{"a", "b", "c"} {
		mustOpen(t, s, "s1", c)
	}
	mustOpen(t, s, "s1", "")
	if st := s.Stats(); st.Streams != 2 {
		t.Errorf("Streams = %d, want 2 (the standalone stream is not counted)", st.Streams)
	}
	if _, err := replay(t, s, "s1", "a", -1); !errors.Is(err, eventstore.ErrNotKept) {
		t.Errorf("the oldest of three streams over Streams=2 is kept (%v)", err)
	}
}

// A stream unused for the idle time is let go; a standalone stream keeps its place
// (its session lives on) and gives up its events.
func TestIdle(t *testing.T) {
	c := newClock()
	s := eventstore.New(eventstore.Limits{Idle: time.Minute}, c.now)
	mustOpen(t, s, "s1", "")
	mustAppend(t, s, "s1", "", "n0")
	mustOpen(t, s, "s1", "old")
	mustAppend(t, s, "s1", "old", "", "r-old")
	c.advance(30 * time.Second)
	mustOpen(t, s, "s1", "new")
	mustAppend(t, s, "s1", "new", "")
	c.advance(30 * time.Second)
	s.Sweep()
	if _, err := replay(t, s, "s1", "old", 0); !errors.Is(err, eventstore.ErrNotKept) {
		t.Errorf("a stream idle for the idle time is kept (%v)", err)
	}
	if _, err := replay(t, s, "s1", "", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("an idle standalone stream kept its events (%v)", err)
	}
	mustReplay(t, s, "s1", "", 0)
	mustReplay(t, s, "s1", "new", 0) // a replay is a use: new stays another minute
	c.advance(59 * time.Second)
	mustAppend(t, s, "s1", "new", "r-new")
	c.advance(59 * time.Second)
	mustReplay(t, s, "s1", "new", 0, "r-new")
	c.advance(time.Minute)
	s.Sweep()
	if st := s.Stats(); st.Streams != 0 || st.Events != 0 || st.Bytes != 0 {
		t.Errorf("after the idle time everything is let go; Stats = %+v", st)
	}
	mustAppend(t, s, "s1", "", "n1") // the standalone stream still takes events
	mustReplay(t, s, "s1", "", 0, "n1")
}

// The closes a store remembers are bounded too (by Streams) and forgotten after the
// idle time.
func TestClosedSessionsForgotten(t *testing.T) {
	c := newClock()
	s := eventstore.New(eventstore.Limits{Streams: 3, Idle: time.Minute}, c.now)
	for i := range 10 {
		s.SessionClosed(ctx, fmt.Sprint("s", i))
	}
	mustOpen(t, s, "s9", "a")
	if err := s.Append(ctx, "s9", "a", []byte("x")); !errors.Is(err, eventstore.ErrNotKept) {
		t.Errorf("Append in s9, closed recently: %v, want ErrNotKept", err)
	}
	if st := s.Stats("s9"); st.Events != 0 {
		t.Errorf("closed s9 keeps %+v", st)
	}
	mustOpen(t, s, "s0", "a") // s0's close is no longer remembered
	mustAppend(t, s, "s0", "a", "x")
	c.advance(time.Minute)
	mustOpen(t, s, "s9", "b")
	mustAppend(t, s, "s9", "b", "y")
	mustReplay(t, s, "s9", "b", -1, "y")
}

// Concurrent sessions, each with its own streams, under -race: every stream
// replays exactly what was appended to it, and the store stays within its bound.
func TestConcurrent(t *testing.T) {
	s := eventstore.New(eventstore.Limits{TotalBytes: 1 << 20}, nil)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			session := fmt.Sprint("s", w)
			for i := range 50 {
				stream := fmt.Sprint("c", i)
				if err := s.Open(ctx, session, stream); err != nil {
					t.Error(err)
					return
				}
				for j := range 5 {
					if err := s.Append(ctx, session, stream, fmt.Appendf(nil, "%s/%s/%d", session, stream, j)); err != nil {
						t.Error(err)
						return
					}
				}
				var got []string
				for d, err := range s.After(ctx, session, stream, 1) {
					if err != nil {
						t.Error(err)
						return
					}
					got = append(got, string(d))
				}
				want := []string{session + "/" + stream + "/2", session + "/" + stream + "/3", session + "/" + stream + "/4"}
				if !slices.Equal(got, want) {
					t.Errorf("replay = %q, want %q", got, want)
				}
			}
			s.SessionClosed(ctx, session)
		})
	}
	wg.Wait()
	if st := s.Stats(); st != (eventstore.Stats{}) {
		t.Errorf("after every session closed: %+v", st)
	}
}
