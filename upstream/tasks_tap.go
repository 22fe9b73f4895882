// The raw side of a connection that the tasks extension needs and the SDK does not
// give: the undecoded answer to a tools/call, and requests of the Server's own
// (tasks/get, tasks/update, tasks/cancel) whose answers the SDK never sees.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Why a tap, and where it sits.
//
// The SDK's ClientSession decodes a tools/call answer into an mcp.CallToolResult,
// which has no place for a CreateTaskResult's taskId and status, and it has no
// method to send a request it does not know (tasks/get and the others). So the
// Server watches the JSON-RPC messages under the SDK, at the one layer each
// transport lets it:
//
//   - A command server's connection is the Server's own (commandTransport), so it is
//     wrapped (tapConn): a call written with a [taskCall] in its context has its
//     response copied to it as read, and a request of the Server's own (an id
//     starting [ownIDPrefix], a string where the SDK numbers its calls) is written
//     on the same connection and its response taken off it before the SDK reads on.
//   - A url server's connection is the SDK's streamable client connection, which
//     cannot be wrapped (its unexported methods would be hidden: without them it
//     sends no protocol version header). It is kept as the SDK made it, and the
//     Server writes its own requests to it directly: at 2026-07-28 every request is
//     a POST of its own, and the SDK passes the POST the context of the write. The
//     HTTP client under it (progressCountingTransport) finds the taskCall in that
//     context, sets the request's Mcp-Name header (the SDK sets Mcp-Method), and
//     copies the JSON-RPC response in the POST's answer (a JSON body or an event
//     stream) to the taskCall as the SDK reads it. The SDK also gets the answer to
//     a request of the Server's own, and drops it: its id is not one of its calls.
//     Notifications on that answer (progress, log messages) reach the SDK's
//     handlers as on any other, so the call's hooks get them.
//
// In both, the copy is made before the SDK has the message, so it is there when
// the SDK's call returns.

// ownIDPrefix starts the ids of the Server's own requests on a connection.
const ownIDPrefix = "warden-task-"

// captureMax bounds the bytes of one answer copied to a taskCall (the SDK's own
// bound on an event of a stream).
const captureMax = mcp.DefaultMaxEventSize

// A taskCall goes in the context of a request whose raw answer the Server wants: a
// tools/call to a server that offers tasks (declare set: the request declares the
// extension, see declareTasks) or a request of the Server's own (name set: its
// Mcp-Name header).
type taskCall struct {
	declare bool
	name    string

	got chan struct{} // signalled (capacity 1) on each response or end

	mu    sync.Mutex
	ids   []jsonrpc.ID      // the calls a tapConn watches for it (see connTap.forget)
	caps  json.RawMessage   // the client capabilities the tools/call declared
	last  *jsonrpc.Response // the last response seen
	ended bool              // an answer ended without a response
}

func newTaskCall(declare bool, name string) *taskCall {
	return &taskCall{declare: declare, name: name, got: make(chan struct{}, 1)}
}

type taskCallKey struct{}

func withTaskCall(ctx context.Context, tc *taskCall) context.Context {
	return context.WithValue(ctx, taskCallKey{}, tc)
}

func taskCallOf(ctx context.Context) *taskCall {
	tc, _ := ctx.Value(taskCallKey{}).(*taskCall)
	return tc
}

func (tc *taskCall) signal() {
	select {
	case tc.got <- struct{}{}:
	default:
	}
}

// set records resp, the latest response to the request (a multi-round trip the
// SDK answers itself sends several; the last is the call's answer).
func (tc *taskCall) set(resp *jsonrpc.Response) {
	tc.mu.Lock()
	tc.last = resp
	tc.mu.Unlock()
	tc.signal()
}

// end records that an answer ended without a response.
func (tc *taskCall) end() {
	tc.mu.Lock()
	tc.ended = true
	tc.mu.Unlock()
	tc.signal()
}

func (tc *taskCall) response() (*jsonrpc.Response, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.last, tc.ended
}

func (tc *taskCall) setCaps(caps json.RawMessage) {
	tc.mu.Lock()
	tc.caps = caps
	tc.mu.Unlock()
}

func (tc *taskCall) declared() json.RawMessage {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.caps
}

// connTap is a connection's side channel (see the comment at the top of the file).
type connTap struct {
	conn    mcp.Connection // what the SDK writes to: the Server writes its own requests there
	wrapped bool           // a command server's: responses are taken off Read here

	seq atomic.Int64

	mu      sync.Mutex
	watched map[jsonrpc.ID]*taskCall // calls written whose response is copied (wrapped only)

	doneOnce sync.Once
	done     chan struct{} // closed when the wrapped connection's Read fails
}

func newConnTap() *connTap { return &connTap{done: make(chan struct{})} }

// nextID returns an id for a request of the Server's own.
func (t *connTap) nextID() jsonrpc.ID {
	id, _ := jsonrpc.MakeID(ownIDPrefix + strconv.FormatInt(t.seq.Add(1), 10))
	return id
}

func (t *connTap) watch(id jsonrpc.ID, tc *taskCall) {
	tc.mu.Lock()
	tc.ids = append(tc.ids, id)
	tc.mu.Unlock()
	t.mu.Lock()
	if t.watched == nil {
		t.watched = map[jsonrpc.ID]*taskCall{}
	}
	t.watched[id] = tc
	t.mu.Unlock()
}

// forget stops watching the calls of tc that got no response (the SDK gave up on
// them), once the request tc went with is over.
func (t *connTap) forget(tc *taskCall) {
	tc.mu.Lock()
	ids := tc.ids
	tc.ids = nil
	tc.mu.Unlock()
	t.mu.Lock()
	for _, id := range ids {
		if t.watched[id] == tc {
			delete(t.watched, id)
		}
	}
	t.mu.Unlock()
}

func (t *connTap) take(id jsonrpc.ID) *taskCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	tc := t.watched[id]
	delete(t.watched, id)
	return tc
}

// forgetting returns a function that forgets tc on c's tap (see forget).
func forgetting(c *upstreamConn, tc *taskCall) func() {
	return func() {
		if c.tap != nil {
			c.tap.forget(tc)
		}
	}
}

// ended returns a channel closed once a wrapped connection can read no more (nil,
// never closed, for a url server's: its answers end one by one, see taskCall.end).
func (t *connTap) ended() <-chan struct{} {
	if !t.wrapped {
		return nil
	}
	return t.done
}

// tapTransport records the connection its transport makes in tap, wrapped in a
// tapConn when wrap is set (command servers) and as it is otherwise.
type tapTransport struct {
	mcp.Transport
	tap  *connTap
	wrap bool
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if t.wrap {
		conn = &tapConn{Connection: conn, tap: t.tap}
		t.tap.wrapped = true
	}
	t.tap.conn = conn
	return conn, nil
}

// tapConn is a command server's connection, watched by its tap.
type tapConn struct {
	mcp.Connection
	tap *connTap
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var id jsonrpc.ID
	watched := false
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if tc := taskCallOf(ctx); tc != nil {
			// Before the write: the response may be read before Write returns.
			id, watched = req.ID, true
			c.tap.watch(id, tc)
		}
	}
	err := c.Connection.Write(ctx, msg)
	if err != nil && watched {
		c.tap.take(id)
	}
	return err
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.tap.doneOnce.Do(func() { close(c.tap.done) })
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			if tc := c.tap.take(resp.ID); tc != nil {
				tc.set(resp)
				if ownID(resp.ID) {
					continue // the SDK has no call of that id
				}
			}
		}
		return msg, nil
	}
}

func ownID(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, ownIDPrefix)
}

// jsonCapture copies the JSON-RPC response of a POST's JSON answer to tc as the SDK
// reads it (a url server's, see the comment at the top of the file).
type jsonCapture struct {
	io.ReadCloser
	tc   *taskCall
	buf  bytes.Buffer
	over bool
	once sync.Once
}

func (j *jsonCapture) Read(p []byte) (int, error) {
	n, err := j.ReadCloser.Read(p)
	if !j.over {
		if j.buf.Len()+n > captureMax {
			j.over, j.buf = true, bytes.Buffer{}
		} else {
			j.buf.Write(p[:n])
		}
	}
	if err == io.EOF {
		j.finish()
	}
	return n, err
}

func (j *jsonCapture) Close() error {
	j.finish()
	return j.ReadCloser.Close()
}

func (j *jsonCapture) finish() {
	j.once.Do(func() {
		if !j.over {
			if msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(j.buf.Bytes())); err == nil {
				if resp, ok := msg.(*jsonrpc.Response); ok {
					j.tc.set(resp)
					return
				}
			}
		}
		j.tc.end()
	})
}

// captureEvent copies data, an event of a POST's event stream, to tc when it is a
// JSON-RPC response.
func captureEvent(tc *taskCall, data []byte) bool {
	if !bytes.Contains(data, []byte(`"id"`)) {
		return false
	}
	// A copy: the caller reuses data, and the decoded result may share its bytes.
	msg, err := jsonrpc.DecodeMessage(bytes.Clone(data))
	if err != nil {
		return false
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		tc.set(resp)
		return true
	}
	return false
}

// sendOwn sends a request of the Server's own on c (held by the caller) and returns
// its result: params is encoded as the request's params. It waits for the answer
// until ctx ends or the connection does. A JSON-RPC error answer is returned
// wrapped; any other error means no answer came.
func (u *Server) sendOwn(ctx context.Context, c *upstreamConn, method, name string, params any) (json.RawMessage, error) {
	if c.tap == nil || c.tap.conn == nil {
		return nil, errors.New("the connection has no side channel for task requests")
	}
	raw, err := marshalGuarded(params)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", method, err)
	}
	id := c.tap.nextID()
	tc := newTaskCall(false, name)
	wctx := withTaskCall(ctx, tc)
	if c.tap.wrapped {
		c.tap.watch(id, tc)
	}
	if err := c.tap.conn.Write(wctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		c.tap.take(id)
		return nil, fmt.Errorf("%s: sending: %w", method, err)
	}
	for {
		select {
		case <-ctx.Done():
			c.tap.take(id)
			return nil, ctx.Err()
		case <-c.tap.ended():
			return nil, fmt.Errorf("%s: the connection ended before the upstream answered", method)
		case <-tc.got:
		}
		resp, ended := tc.response()
		switch {
		case resp != nil && resp.Error != nil:
			return nil, fmt.Errorf("%s: %w", method, resp.Error)
		case resp != nil:
			return resp.Result, nil
		case ended:
			return nil, fmt.Errorf("%s: the upstream's answer ended without a response", method)
		}
	}
}
