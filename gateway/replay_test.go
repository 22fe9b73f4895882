package gateway_test

// Resumable SSE streams on the stateful HTTP front (protocol 2025-11-25): a raw HTTP
// client drops a call's stream and resumes it with Last-Event-ID, in its own session
// only, and what the gateway keeps for that is bounded.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/eventstore"
	"github.com/wardenhq/warden/store"
)

// replayFront serves e's MCP endpoint (a handler of its own, made after any
// SetReplayLimits) and reports each POST's end: the JSON-RPC id it carried, once the
// handler returned.
type replayFront struct {
	url      string
	postDone chan string
}

func newReplayFront(t *testing.T, e *gwEnv) *replayFront {
	t.Helper()
	f := &replayFront{postDone: make(chan string, 100)}
	h := e.gw.MCPHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(body, &msg)
		h.ServeHTTP(w, r)
		if msg.ID != nil {
			select {
			case f.postDone <- string(msg.ID):
			default: // nobody waits for this many
			}
		}
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	f.url = srv.URL + e.cfg.Path
	return f
}

// waitPost waits for the end of the POST that carried the JSON-RPC id.
func (f *replayFront) waitPost(t *testing.T, id int) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case got := <-f.postDone:
			if got == fmt.Sprint(id) {
				return
			}
		case <-timeout:
			t.Fatalf("the POST of request %d did not end within a minute", id)
		}
	}
}

// rawSession is an MCP session driven by hand over HTTP at a protocol version of the
// 2025 line.
type rawSession struct {
	t       *testing.T
	url     string
	token   string
	version string
	id      string
	client  *http.Client
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, name, data string
}

// open opens a session at protocol 2025-11-25 (or the version given).
func (f *replayFront) open(t *testing.T, token string, version ...string) *rawSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	s := &rawSession{t: t, url: f.url, token: token, version: "2025-11-25", client: &http.Client{Transport: tr}}
	if len(version) > 0 {
		s.version = version[0]
	}
	resp := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, s.version))
	s.id = resp.Header.Get("Mcp-Session-Id")
	if s.id == "" {
		t.Fatalf("initialize: no Mcp-Session-Id (status %d)", resp.StatusCode)
	}
	s.result(resp, 0)
	resp = s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", resp.StatusCode)
	}
	return s
}

func (s *rawSession) request(method, body string, header ...string) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Protocol-Version", s.version)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s: %v", method, err)
	}
	return resp
}

func (s *rawSession) post(body string) *http.Response { return s.request(http.MethodPost, body) }

// resume is the GET that resumes a stream after the event lastID.
func (s *rawSession) resume(lastID string) *http.Response {
	return s.request(http.MethodGet, "", "Last-Event-ID", lastID)
}

// resumeAfter is resume once the server has let go of the stream's previous resume:
// the SDK answers 409 to a resume of a stream whose last resume it is still
// serving (it notices the client's close of that GET a moment later). Bounded; the
// state waited for is the server's, which sends no event for it.
func (s *rawSession) resumeAfter(lastID string) *http.Response {
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := s.resume(lastID)
		if resp.StatusCode != http.StatusConflict || time.Now().After(deadline) {
			return resp
		}
		resp.Body.Close()
		<-time.After(10 * time.Millisecond)
	}
}

// call posts a tools/call (with a progress token, when one is given) and returns its
// open response (an SSE stream).
func (s *rawSession) call(id int, tool string, args any, progressToken ...string) *http.Response {
	s.t.Helper()
	a, _ := json.Marshal(args)
	meta := ""
	if len(progressToken) > 0 {
		meta = fmt.Sprintf(`,"_meta":{"progressToken":%q}`, progressToken[0])
	}
	resp := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, id, tool, a, meta))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		s.t.Fatalf("tools/call %s: status %d, %s", tool, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp
}

// result reads resp's events up to the response to request id, and returns the
// text of its result and the events read.
func (s *rawSession) result(resp *http.Response, id int) (string, []sseEvent) {
	s.t.Helper()
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var evs []sseEvent
	for {
		ev, err := readEvent(r)
		if err != nil {
			s.t.Fatalf("reading the stream for the response to %d: %v (events so far %q)", id, err, evs)
		}
		evs = append(evs, ev)
		if text, ok := responseText(ev, id); ok {
			return text, evs
		}
	}
}

// responseText is the text of a tools/call result (or of the error) when ev is the
// response to request id.
func responseText(ev sseEvent, id int) (string, bool) {
	var msg struct {
		ID     *int `json:"id"`
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if ev.data == "" || json.Unmarshal([]byte(ev.data), &msg) != nil || msg.ID == nil || *msg.ID != id {
		return "", false
	}
	switch {
	case msg.Error != nil:
		return "error: " + msg.Error.Message, true
	case msg.Result != nil && len(msg.Result.Content) > 0:
		return msg.Result.Content[0].Text, true
	}
	return "", true
}

// readEvent reads one server-sent event (comments are skipped).
func readEvent(r *bufio.Reader) (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && seen:
			return ev, nil
		case line == "", strings.HasPrefix(line, ":"):
		default:
			seen = true
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				ev.id = v
			case "event":
				ev.name = v
			case "data":
				ev.data += v
			}
		}
	}
}

// A client whose connection drops during a call resumes the call's stream with
// Last-Event-ID and gets the result: once while the call still waits (the result
// comes on the resumed stream), and once after it finished (replayed). A resume in
// another session of the same identity finds nothing; another identity, even one
// with the same principal, is refused the session; a closed session keeps nothing.
func TestGatewayResumeDroppedCall(t *testing.T) {
	const sameName = "writer-agent-other-token-0123456789"
	e := gwStart(t, gwSetup{
		extra: "approvals:\n  wait: 2m\n",
		identities: gwDefaultIdentities + fmt.Sprintf(`  - principal: writer-agent
    tenant: elsewhere
    role: writer
    token_sha256: %s
`, inbox.HashToken(sameName)),
	})
	resumed := make(chan string, 10)
	e.gw.SetReplayLimits(eventstore.Limits{}, func(_, stream string) { resumed <- stream })
	f := newReplayFront(t, e)
	s := f.open(t, gwWriterToken)
	if text, _ := s.result(s.call(1, "mcp__notes__write_note", map[string]any{"name": "a", "text": "x"}), 1); text != `Wrote note "a" (1 bytes).` {
		t.Fatalf("write_note: %q", text)
	}

	created, stop := e.asked.watch()
	defer stop()
	resp := s.call(2, "mcp__notes__delete_note", map[string]any{"name": "a"})
	prime, err := readEvent(bufio.NewReader(resp.Body))
	if err != nil || prime.id == "" || prime.data != "" {
		t.Fatalf("the call's first event is not a prime event (an id, no data): %+v, %v", prime, err)
	}
	var p store.Pending
	select {
	case p = <-created:
	case <-time.After(time.Minute):
		t.Fatal("the call asked for no decision within a minute")
	}
	// The client's connection drops while the call waits for a person.
	resp.Body.Close()
	f.waitPost(t, 2)

	// Resumed while the call still waits: the result comes on the resumed stream. (The
	// resume's headers come with its first event, so the GET is sent on its own
	// goroutine, and the operator decides once the front has taken it.)
	stream, _, _ := strings.Cut(prime.id, "_")
	liveCh := make(chan *http.Response, 1)
	go func() { liveCh <- s.resume(prime.id) }()
	select {
	case got := <-resumed:
		if got != stream {
			t.Fatalf("resumed stream %q, want %q", got, stream)
		}
	case <-time.After(time.Minute):
		t.Fatal("the resume did not reach the front within a minute")
	}
	if _, err := e.st.Decide(context.Background(), p.ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	live := <-liveCh
	if live.StatusCode != http.StatusOK {
		t.Fatalf("resume: status %d", live.StatusCode)
	}
	text, evs := s.result(live, 2)
	if text != `Deleted note "a".` {
		t.Fatalf("the resumed stream's result: %q (events %q)", text, evs)
	}
	resultID := evs[len(evs)-1].id

	// Resumed again after the call finished: the result is replayed, with its id.
	text, evs = s.result(s.resumeAfter(prime.id), 2)
	if text != `Deleted note "a".` || evs[len(evs)-1].id != resultID {
		t.Fatalf("the replayed result: %q (events %q, want the last with id %s)", text, evs, resultID)
	}
	// Resumed after the result: nothing more.
	after := s.resumeAfter(resultID)
	if rest, _ := io.ReadAll(after.Body); after.StatusCode != http.StatusOK || strings.Contains(string(rest), "Deleted") {
		t.Errorf("resume after the result: status %d, %q", after.StatusCode, rest)
	}
	after.Body.Close()

	// Another session of the same identity: the stream is not its, so nothing.
	other := f.open(t, gwWriterToken)
	resp = other.resume(prime.id)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "Deleted") {
		t.Errorf("a resume of another session's stream: status %d, %q; want 400 and nothing", resp.StatusCode, body)
	}
	// Another identity with s's session id: refused, whether another principal or the
	// same principal with another token (in another tenant).
	for _, token := range []string{gwBobToken, sameName} {
		thief := &rawSession{t: t, url: f.url, token: token, id: s.id, client: s.client}
		resp := thief.resume(prime.id)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "Deleted") {
			t.Errorf("a resume of s's stream with another token: status %d, %q; want 403 and nothing", resp.StatusCode, body)
		}
	}

	if st := e.gw.ReplayStats(s.id); st.Events == 0 {
		t.Fatalf("the session's streams keep nothing before it closed: %+v", st)
	}
	resp = s.request(http.MethodDelete, "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: status %d", resp.StatusCode)
	}
	if st := e.gw.ReplayStats(s.id); st != (eventstore.Stats{}) {
		t.Errorf("a closed session's streams keep %+v", st)
	}
	resp = s.resume(prime.id)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "Deleted") {
		t.Errorf("a resume in the closed session: status %d, %q; want 404", resp.StatusCode, body)
	}
}

// At protocol 2025-06-18 a call's stream has no prime event: a client that dropped it
// after its first event (a progress notification) resumes after that one, and gets
// the rest, the result included, each event once.
func TestGatewayResumeDroppedCall20250618(t *testing.T) {
	e := gwStart(t, gwSetup{policy: progressPolicy})
	f := newReplayFront(t, e)
	s := f.open(t, gwWriterToken, "2025-06-18")
	resp := s.call(1, "mcp__fault__progress", map[string]any{"n": 3}, "p")
	first, err := readEvent(bufio.NewReader(resp.Body))
	if err != nil || first.id == "" || !strings.Contains(first.data, `"notifications/progress"`) || !strings.Contains(first.data, `"progress":1`) {
		t.Fatalf("the call's first event is not its first progress notification, with an id: %+v, %v", first, err)
	}
	resp.Body.Close()
	f.waitPost(t, 1)
	text, evs := s.result(s.resume(first.id), 1)
	if text != "sent 3" {
		t.Errorf("the resumed result: %q", text)
	}
	var progress []string
	for _, ev := range evs {
		if ev.id == "" || ev.id == first.id {
			t.Errorf("resumed event %+v: want an id of its own", ev)
		}
		if strings.Contains(ev.data, `"notifications/progress"`) {
			progress = append(progress, ev.data)
		}
	}
	if len(progress) != 2 || !strings.Contains(progress[0], `"progress":2`) || !strings.Contains(progress[1], `"progress":3`) {
		t.Errorf("resumed progress notifications: %q, want the 2nd and 3rd", progress)
	}
}

// What the front keeps for resumes is bounded: a client that makes call after call
// and never resumes holds at most the limits' worth, the oldest streams go first
// (their resume fails, with no partial replay) and the newest still resume.
func TestGatewayReplayBounded(t *testing.T) {
	e := gwStart(t, gwSetup{})
	limits := eventstore.Limits{TotalBytes: 16 << 10, Streams: 8, StreamEvents: 4}
	e.gw.SetReplayLimits(limits, nil)
	f := newReplayFront(t, e)
	s := f.open(t, gwWriterToken)
	payload := strings.Repeat("x", 1500)
	var primes []string
	for i := 1; i <= 40; i++ {
		text, evs := s.result(s.call(i, "mcp__fault__echo", map[string]any{"text": payload}), i)
		if text != payload {
			t.Fatalf("call %d: %q", i, text)
		}
		primes = append(primes, evs[0].id)
		st := e.gw.ReplayStats()
		if st.Bytes > limits.TotalBytes || st.Streams > limits.Streams {
			t.Fatalf("after call %d the store holds %+v, over %+v", i, st, limits)
		}
	}
	resp := s.resume(primes[0])
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), payload) {
		t.Errorf("resume of the oldest call: status %d, %d bytes; want 400 and nothing", resp.StatusCode, len(body))
	}
	if text, _ := s.result(s.resume(primes[len(primes)-1]), 40); text != payload {
		t.Errorf("resume of the newest call: %q", text)
	}
}

// The default limits keep a call's stream while a call may still answer.
func TestGatewayReplayLimitsCoverACall(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "limits:\n  call_timeout: 20m\napprovals:\n  wait: 5m\n"})
	l := e.gw.ReplayLimits()
	if want := 26 * time.Minute; l.Idle != want {
		t.Errorf("Idle = %s, want %s (call_timeout + approvals.wait + 1m)", l.Idle, want)
	}
	e = gwStart(t, gwSetup{})
	if l := e.gw.ReplayLimits(); l != eventstore.DefaultLimits {
		t.Errorf("limits = %+v, want the defaults %+v", l, eventstore.DefaultLimits)
	}
}
