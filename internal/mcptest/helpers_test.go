package mcptest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

func TestLogBufferCount(t *testing.T) {
	var b mcptest.LogBuffer
	fmt.Fprint(&b, "level=INFO msg=\"configuration reloaded\" trigger=SIGHUP\n")
	fmt.Fprint(&b, "level=INFO msg=\"configuration reloaded\" trigger=\"file change\"\n")
	fmt.Fprint(&b, "level=WARN msg=\"reload refused\" trigger=SIGHUP")
	for _, c := range []struct {
		parts []string
		want  int
	}{
		{[]string{"configuration reloaded"}, 2},
		{[]string{"configuration reloaded", "trigger=SIGHUP"}, 1},
		{[]string{"trigger=SIGHUP"}, 2}, // the last line has no newline
		{[]string{"shutting down"}, 0},
		{nil, 3},
	} {
		if got := b.Count(c.parts...); got != c.want {
			t.Errorf("Count(%q) = %d, want %d", c.parts, got, c.want)
		}
	}
}

// WaitCount returns once a Write from another goroutine makes the count, and at once
// when the count is already there.
func TestLogBufferWaitCount(t *testing.T) {
	var b mcptest.LogBuffer
	fmt.Fprintln(&b, "msg=one")
	b.WaitCount(t, time.Minute, 1, "msg=one")
	go func() {
		fmt.Fprintln(&b, "msg=other")
		fmt.Fprintln(&b, "msg=two")
	}()
	b.WaitCount(t, time.Minute, 1, "msg=two")
	if b.Await(time.Millisecond, 1, "msg=three") {
		t.Error("Await reported a line that was never written")
	}
	if n := b.Count("msg="); n != 3 {
		t.Errorf("%d lines, want 3", n)
	}
}

// WaitLen returns once enough notifications were added, by another goroutine.
func TestProgressLogWaitLen(t *testing.T) {
	var l mcptest.ProgressLog
	go func() {
		for i := 1; i <= 3; i++ {
			l.Add(&mcp.ProgressNotificationParams{Progress: float64(i)})
		}
	}()
	got := l.WaitLen(t, 3, time.Minute)
	if len(got) != 3 || got[2].Progress != 3 {
		t.Errorf("WaitLen: %+v", got)
	}
}

func TestBearer(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	for _, token := range []string{"t0ken", ""} {
		hc := &http.Client{Transport: mcptest.Bearer{Token: token, Next: srv.Client().Transport}}
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 || got[0] != "Bearer t0ken" || got[1] != "" {
		t.Errorf("Authorization headers %q, want \"Bearer t0ken\" then none", got)
	}
}
