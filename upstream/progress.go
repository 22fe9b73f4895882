// Progress routing: notifications/progress from an upstream reach the hook of the
// call in flight that asked for them, in order, and never a call that has returned.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressRoute takes the progress notifications of one call to its Progress hook:
// the SDK's handler hands them over without waiting, a goroutine of the call runs
// the hook.
type progressRoute struct {
	token string
	// The connection's counters when the route opened.
	readBase, handledBase int64

	// handled is signalled (capacity 1) each time the SDK has handled a progress
	// notification while the route is registered on its connection.
	handled chan struct{}

	mu      sync.Mutex
	ended   bool
	dropped int
	queue   chan *mcp.ProgressNotificationParams
	done    chan struct{} // closed when the hook's goroutine has returned
}

// deliver queues p for the hook, or drops it when its queue is full; it never
// blocks. It reports false when the route has ended.
func (r *progressRoute) deliver(p *mcp.ProgressNotificationParams) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	select {
	case r.queue <- p:
	default:
		r.dropped++
	}
	return true
}

// openProgress starts the progress route of a call on c (which the caller holds);
// the caller registers it on c.
func (u *Server) openProgress(ctx context.Context, c *upstreamConn, hook func(context.Context, *mcp.ProgressNotificationParams)) *progressRoute {
	r := &progressRoute{
		token:       fmt.Sprintf("warden-%d", u.progressSeq.Add(1)),
		handledBase: c.progressHandled.Load(),
		handled:     make(chan struct{}, 1),
		queue:       make(chan *mcp.ProgressNotificationParams, progressBuffer),
		done:        make(chan struct{}),
	}
	if c.progressRead != nil {
		r.readBase = c.progressRead.Load()
	}
	go func() {
		defer close(r.done)
		for p := range r.queue {
			u.runProgress(ctx, hook, p)
		}
	}()
	return r
}

// runProgress calls hook, containing a panic.
func (u *Server) runProgress(ctx context.Context, hook func(context.Context, *mcp.ProgressNotificationParams), p *mcp.ProgressNotificationParams) {
	defer func() {
		if r := recover(); r != nil {
			u.log.Error("progress hook panicked", slog.String("panic", fmt.Sprint(r)))
		}
	}()
	hook(ctx, p)
}

// closeProgress ends the call's progress route once the call is over: when the
// upstream answered, it first lets the SDK handle the notifications that arrived
// ahead of the answer; then it unregisters the route and waits until the hook has
// seen what is queued (or ctx ends).
func (u *Server) closeProgress(ctx context.Context, c *upstreamConn, r *progressRoute, answered bool) {
	if answered {
		u.settleProgress(c, r)
	}
	u.mu.Lock()
	if c.progress == r {
		c.progress = nil
	}
	u.mu.Unlock()
	r.mu.Lock()
	r.ended = true
	dropped := r.dropped
	close(r.queue)
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	if dropped > 0 {
		u.log.Debug("progress notifications dropped: the call's queue was full", slog.Int("pid", c.pid), slog.Int("dropped", dropped))
	}
}

// routedNotification reports whether notifications of method are routed to the call
// in flight, and so counted as read (progressRead) and as handed over
// (progressHandled): progress notifications and log messages.
func routedNotification(method string) bool {
	return method == "notifications/progress" || method == "notifications/message"
}

// settleProgress waits, at most progressSettleMax, until the SDK has handled the
// progress notifications the upstream sent before answering. The SDK delivers an
// answer as soon as it is read, but hands notifications to the handler on a goroutine
// of its own, one at a time in the order read; every notification is counted as the
// SDK reads it (see [progressCounter] and [progressCountingClient]), so the wait ends
// when as many have been handled as had been read when the answer came. Each
// notification handled wakes the wait (no polling); the bound is for a notification
// that was read but that the SDK refuses to hand over (invalid params).
func (u *Server) settleProgress(c *upstreamConn, r *progressRoute) {
	u.settleRouted(c, r.readBase, r.handledBase, r.handled)
}

// settleRouted is settleProgress for any routed notification (see
// routedNotification): it waits until as many have been handed over since
// handledBase as had been read since readBase when the answer came, woken by wake.
func (u *Server) settleRouted(c *upstreamConn, readBase, handledBase int64, wake <-chan struct{}) {
	if c.progressRead == nil {
		return
	}
	want := c.progressRead.Load() - readBase
	handled := func() int64 { return c.progressHandled.Load() - handledBase }
	if handled() >= want {
		return
	}
	limit := time.NewTimer(progressSettleMax)
	defer limit.Stop()
	for handled() < want {
		select {
		case <-wake:
		case <-limit.C:
			u.log.Debug("progress notifications not handled in time after the answer", slog.Int("pid", c.pid), slog.Int64("read", want), slog.Int64("handled", handled()))
			return
		}
	}
}

// onProgress is the SDK's handler of every upstream progress notification: it passes
// those of a call in flight, with the call's token, to the call's route, and drops
// the others.
func (u *Server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	u.mu.Lock()
	c := u.sessions[req.Session]
	var r *progressRoute
	var logs *logRoute
	if c != nil {
		r, logs = c.progress, c.log
	}
	u.mu.Unlock()
	tok, ok := req.Params.ProgressToken.(string)
	var dropped string
	switch {
	case r == nil:
		dropped = "progress notification dropped: no call asking for progress is in flight on the connection"
	case !ok || tok != r.token:
		dropped = "progress notification dropped: its token is not the call's"
	case !r.deliver(req.Params):
		dropped = "progress notification dropped: the call has ended"
	}
	pid := 0
	if c != nil {
		pid = c.pid
		// Counted once handed over (delivered or dropped), before anything else is
		// done with it: settleRouted waits for this, and a call that begins after a
		// notification was handled must find it counted.
		c.progressHandled.Add(1)
		for _, ch := range []chan struct{}{progressWake(r), logWake(logs)} {
			if ch != nil {
				select {
				case ch <- struct{}{}:
				default: // a wake-up is pending already
				}
			}
		}
	}
	if dropped != "" {
		u.log.Debug(dropped, slog.Int("pid", pid))
	}
}

// progressCounter wraps a command server's transport so that every progress
// notification is counted as it is read (see [Server.settleProgress]).
//
// A url server's transport cannot be wrapped (the SDK's streamable connection has
// unexported methods that a wrapper would hide); its notifications are counted in
// the HTTP responses instead, see [progressCountingClient].
type progressCounter struct {
	mcp.Transport
	read, changed *atomic.Int64
}

func (t *progressCounter) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &progressCountingConn{Connection: conn, read: t.read, changed: t.changed}, nil
}

type progressCountingConn struct {
	mcp.Connection
	read, changed *atomic.Int64
}

func (c *progressCountingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() {
		switch {
		case routedNotification(req.Method):
			c.read.Add(1)
		case listChanged(req.Method):
			c.changed.Add(1)
		}
	}
	return msg, err
}

// progressCountingClient returns a copy of hc whose responses, when they are
// server-sent event streams, count in read every progress notification they carry as
// the SDK reads it. On the streamable HTTP transport the SDK passes the messages of
// a stream on in the order it reads them, the answer to a call last on the call's
// stream, so every notification sent ahead of an answer is counted before the answer
// is delivered.
func progressCountingClient(hc *http.Client, read *atomic.Int64) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = &progressCountingTransport{next: next, read: read}
	return &c
}

type progressCountingTransport struct {
	next http.RoundTripper
	read *atomic.Int64
}

func (t *progressCountingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tc := taskCallOf(req.Context())
	if tc != nil && tc.name != "" && req.Method == http.MethodPost {
		// A request of the Server's own (see tasks_tap.go): the SDK sets its
		// Mcp-Method header, not its Mcp-Name.
		req = req.Clone(req.Context())
		req.Header.Set("Mcp-Name", tc.name)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	switch mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); {
	case mt == "text/event-stream":
		resp.Body = &sseProgressCounter{ReadCloser: resp.Body, read: t.read, capture: tc}
	case mt == "application/json" && tc != nil && req.Method == http.MethodPost:
		resp.Body = &jsonCapture{ReadCloser: resp.Body, tc: tc}
	}
	return resp, nil
}

// CloseIdleConnections passes the request on, so http.Client.CloseIdleConnections
// reaches the transport.
func (t *progressCountingTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// sseMaxCounted bounds what sseProgressCounter keeps of one line or one event: a
// progress notification is far smaller, so a longer event is not one it counts.
const sseMaxCounted = 64 << 10

// sseProgressCounter counts the progress notifications in a server-sent event
// stream as its bytes are read, splitting it into events as the SDK does: lines end
// at "\n" (a trailing "\r" is dropped), a blank line or the end of the stream ends an
// event, "data" lines are joined with "\n", and only events named "message" (or not
// named) carry messages.
//
// With capture set (a request whose answer the Server wants, see tasks_tap.go) it
// also copies the stream's JSON-RPC response to capture, for events up to
// captureMax bytes.
type sseProgressCounter struct {
	io.ReadCloser
	read    *atomic.Int64
	capture *taskCall
	ended   bool

	line      []byte // the current line so far
	longLine  bool   // the current line exceeded sseMaxCounted
	data      []byte // the current event's data so far
	hasData   bool
	name      string
	longEvent bool // the current event exceeded sseMaxCounted: it is not counted
}

func (c *sseProgressCounter) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.scan(p[:n])
	if err == io.EOF {
		if len(c.line) > 0 || c.longLine {
			c.endLine()
		}
		c.endEvent()
		c.endCapture()
	}
	return n, err
}

// Close tells capture that the stream ended.
func (c *sseProgressCounter) Close() error {
	c.endCapture()
	return c.ReadCloser.Close()
}

func (c *sseProgressCounter) endCapture() {
	if c.capture != nil && !c.ended {
		c.ended = true
		c.capture.end()
	}
}

// max is the longest line or event kept.
func (c *sseProgressCounter) max() int {
	if c.capture != nil {
		return captureMax
	}
	return sseMaxCounted
}

func (c *sseProgressCounter) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.appendLine(b)
			return
		}
		c.appendLine(b[:i])
		c.endLine()
		b = b[i+1:]
	}
}

func (c *sseProgressCounter) appendLine(b []byte) {
	if c.longLine {
		return
	}
	if len(c.line)+len(b) > c.max() {
		c.longLine, c.line = true, c.line[:0]
		return
	}
	c.line = append(c.line, b...)
}

func (c *sseProgressCounter) endLine() {
	line := bytes.TrimRight(c.line, "\r")
	c.line = c.line[:0]
	if c.longLine {
		c.longLine, c.longEvent = false, true
		return
	}
	if len(line) == 0 {
		c.endEvent()
		return
	}
	field, value, ok := bytes.Cut(line, []byte{':'})
	if !ok {
		return
	}
	switch string(field) {
	case "event":
		c.name = strings.TrimSpace(string(value))
	case "data":
		if c.longEvent {
			return
		}
		if c.hasData {
			c.data = append(c.data, '\n')
		}
		c.hasData = true
		c.data = append(c.data, bytes.TrimSpace(value)...)
		if len(c.data) > c.max() {
			c.longEvent, c.data = true, c.data[:0]
		}
	}
}

func (c *sseProgressCounter) endEvent() {
	data, count := c.data, c.hasData && !c.longEvent && (c.name == "" || c.name == "message")
	c.data, c.hasData, c.name, c.longEvent = c.data[:0], false, "", false
	if count && c.capture != nil && captureEvent(c.capture, data) {
		return
	}
	if !count || !bytes.Contains(data, []byte("notifications/")) {
		return
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &m) == nil && routedNotification(m.Method) && len(m.ID) == 0 {
		c.read.Add(1)
	}
}

// listChanged reports whether method is a notification that the upstream's tools,
// prompts or resources changed: each makes the connection list them again before it
// serves another request.
func listChanged(method string) bool {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		return true
	}
	return false
}
