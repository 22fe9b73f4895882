package upstream

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// After an answer, Call waits until the SDK has handled as many notifications as
// were read, woken by each one (no timer involved), and at most progressSettleMax
// for notifications that never get handled. On the bubble's clock, both exactly.
func TestSettleProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := &mcp.ClientSession{} // only a key: the connection's session
		read := new(atomic.Int64)
		c := &upstreamConn{cs: cs, progressRead: read}
		u := &Server{log: slog.New(slog.DiscardHandler), sessions: map[*mcp.ClientSession]*upstreamConn{cs: c}}
		hook := func(context.Context, *mcp.ProgressNotificationParams) {}
		handOver := func(r *progressRoute) {
			u.onProgress(context.Background(), &mcp.ProgressNotificationClientRequest{Session: cs, Params: &mcp.ProgressNotificationParams{ProgressToken: r.token}})
		}

		// Three read before the answer, handled after it: each wakes the wait.
		r := u.openProgress(context.Background(), c, hook)
		c.progress = r
		read.Add(3)
		start := time.Now()
		settled := make(chan struct{})
		go func() { u.settleProgress(c, r); close(settled) }()
		for range 3 {
			synctest.Wait()
			select {
			case <-settled:
				t.Fatal("settled before every notification read was handled")
			default:
			}
			handOver(r)
		}
		<-settled
		if d := time.Since(start); d != 0 {
			t.Errorf("settling took %s on the bubble's clock, want no wait beyond the notifications", d)
		}
		u.closeProgress(context.Background(), c, r, false)

		// One read that the SDK never hands over: the wait ends at the bound.
		r = u.openProgress(context.Background(), c, hook)
		c.progress = r
		read.Add(1)
		start = time.Now()
		u.settleProgress(c, r)
		if d := time.Since(start); d != progressSettleMax {
			t.Errorf("settling took %s, want the bound %s", d, progressSettleMax)
		}
		u.closeProgress(context.Background(), c, r, false)
	})
}

// The counter splits a server-sent event stream into events as the SDK does and
// counts the progress notifications among them, however the stream is cut into reads.
func TestSSEProgressCounter(t *testing.T) {
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`
	long := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","message":"` + strings.Repeat("x", sseMaxCounted) + `"}}`
	for _, c := range []struct {
		name, stream string
		want         int64
	}{
		{"one", "data: " + progress + "\n\n", 1},
		{"crlf", "id: 1\r\ndata: " + progress + "\r\n\r\n", 1},
		{"named message", "event: message\ndata: " + progress + "\n\n", 1},
		{"other name", "event: ping\ndata: " + progress + "\n\n", 0},
		{"two and an answer", "data: " + progress + "\n\ndata: " + progress + "\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n", 2},
		{"with an id is a call", `data: {"jsonrpc":"2.0","id":1,"method":"notifications/progress","params":{}}` + "\n\n", 0},
		{"a log message counts too", `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"notifications/progress"}}` + "\n\n", 1},
		{"other method", `data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"notifications/progress"}}` + "\n\n", 0},
		{"split data lines", "data: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"notifications/progress\",\"params\":{}}\n\n", 1},
		{"cut by the end", "data: " + progress, 1},
		{"cut by the end after the line", "data: " + progress + "\n", 1},
		{"comment and priming event", ": keep-alive\n\nid: 7\n\ndata: " + progress + "\n\n", 1},
		{"too long to count", "data: " + long + "\n\ndata: " + progress + "\n\n", 1},
		{"not json", "data: notifications/progress\n\n", 0},
	} {
		for _, size := range []int{1, 3, 7, 64, 1 << 20} {
			var read atomic.Int64
			body := &sseProgressCounter{ReadCloser: io.NopCloser(&chunks{data: []byte(c.stream), size: size}), read: &read}
			got, err := io.ReadAll(body)
			if err != nil || !bytes.Equal(got, []byte(c.stream)) {
				t.Fatalf("%s: the body was changed: %v", c.name, err)
			}
			if n := read.Load(); n != c.want {
				t.Errorf("%s, reads of %d bytes: counted %d, want %d", c.name, size, n, c.want)
			}
		}
	}
}

// chunks returns data in reads of at most size bytes, io.EOF with the last.
type chunks struct {
	data []byte
	size int
}

func (c *chunks) Read(p []byte) (int, error) {
	n := copy(p, c.data[:min(len(c.data), c.size)])
	c.data = c.data[n:]
	if len(c.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}
