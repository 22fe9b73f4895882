package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one server-sent event: its id and data.
type sseEvent struct{ id, data string }

// readEvents reads server-sent events from r until n have been read or it ends.
func readEvents(t *testing.T, r io.Reader, n int) []sseEvent {
	t.Helper()
	var (
		out []sseEvent
		cur sseEvent
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
				if len(out) == n {
					return out
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id:"):
			cur.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			cur.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	return out
}

// A 2025-line client whose response stream breaks in the middle of a call resumes
// it with Last-Event-ID and gets the rest, the call's result included.
func TestStreamResumesWithLastEventID(t *testing.T) {
	e := gwStart(t, gwSetup{policy: progressPolicy})
	post := func(session, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+gwWriterToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := e.tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	session := init.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, init.Body)
	init.Body.Close()
	if session == "" {
		t.Fatalf("initialize gave no session (status %d)", init.StatusCode)
	}
	done := post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	done.Body.Close()

	call := post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__fault__progress","arguments":{"n":4,"ms":100},"_meta":{"progressToken":"p"}}}`)
	first := readEvents(t, call.Body, 1)
	call.Body.Close() // the stream breaks after the first event
	if len(first) != 1 || first[0].id == "" || !strings.Contains(first[0].data, "notifications/progress") {
		t.Fatalf("first event = %+v, want a progress notification with an id", first)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+gwWriterToken)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Last-Event-ID", first[0].id)
	res, err := e.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("resume: status %d: %s", res.StatusCode, b)
	}
	var rest []sseEvent
	for _, ev := range readEvents(t, res.Body, 4) {
		rest = append(rest, ev)
		if strings.Contains(ev.data, `"id":2`) {
			break
		}
	}
	var progress int
	var result string
	for _, ev := range rest {
		switch {
		case strings.Contains(ev.data, "notifications/progress"):
			progress++
		case strings.Contains(ev.data, `"id":2`):
			result = ev.data
		}
		if ev.id == first[0].id {
			t.Errorf("the resumed stream repeated the event the client had: %+v", ev)
		}
	}
	if progress != 3 || !bytes.Contains([]byte(result), []byte(`sent 4`)) {
		t.Errorf("resumed stream: %d progress notifications (want the 3 missed) and result %q (want the call's)", progress, result)
	}
}
