// The stdio transport to an upstream server's child process: the SDK's
// CommandTransport without its per-message allocations.

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultTerminate is how long Close waits at each step when TerminateDuration is
// not set, as in the SDK.
const defaultTerminate = 5 * time.Second

// A commandTransport is an [mcp.Transport] that runs a command and exchanges
// newline-delimited JSON-RPC messages with it over its stdin and stdout, like
// [mcp.CommandTransport], whose framing, limits and shutdown it keeps:
//
//   - Connect starts Command (its other fields, such as SysProcAttr, Env, Dir and
//     Stderr, are the caller's) with pipes for stdin and stdout.
//   - A message is a JSON object, or a batch array of them, ending its line (or the
//     output); blank lines are skipped; a message longer than MaxLineLength bytes,
//     invalid JSON, data after a message on its line, or output ending inside a
//     message is a read error, after which the connection reads nothing more. The
//     end of the output between messages reads as io.EOF.
//   - When a call written to the child is unanswered and the child has written
//     nothing for ProbeQuiet, the connection writes the child a ping (a string id
//     starting "warden-probe-"), once per quiet period, and keeps the answer to
//     itself: a write to its stdin is what wakes a stalled Go 1.26 server (see
//     [stdioProbeQuiet]).
//   - Close closes the child's stdin, waits TerminateDuration for it to exit, then
//     sends SIGTERM and waits TerminateDuration again, then kills it and waits once
//     more; it returns the error of exec.Cmd.Wait (an *exec.ExitError for an exit
//     other than 0), or an error when the child could not be reaped.
//
// What it does not do that the SDK's does: allocate a 32 KiB decoder buffer per
// message read. A message that fits the 16 KiB read buffer is decoded where it was
// read; only its params or result are copied out.
type commandTransport struct {
	Command *exec.Cmd
	// TerminateDuration is the wait at each step of Close; 0 or less means 5s.
	TerminateDuration time.Duration
	// MaxLineLength bounds the bytes of one message read; 0 or less means
	// mcp.DefaultMaxLineLength.
	MaxLineLength int
	// ProbeQuiet is how long the child may be silent while a call to it is
	// unanswered before the connection writes it a ping of its own (see
	// [stdioProbeQuiet], the value for 0); less than 0 means never.
	ProbeQuiet time.Duration
}

// Connect starts the command and returns the connection to it. ctx is not used
// after Connect returns: the process lives until the connection is closed.
func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.Command == nil {
		return nil, errors.New("stdio transport: no command to start")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stdout, err := t.Command.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.Command.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.Command.Start(); err != nil {
		return nil, err
	}
	td := t.TerminateDuration
	if td <= 0 {
		td = defaultTerminate
	}
	limit := t.MaxLineLength
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	c := &stdioConn{
		cmd:       t.Command,
		stdin:     stdin,
		terminate: td,
		incoming:  make(chan readResult),
		closed:    make(chan struct{}),
		wire:      newWireRing(t.Command.Process.Pid),
	}
	quiet := t.ProbeQuiet
	if quiet == 0 {
		quiet = stdioProbeQuiet
	}
	if quiet > 0 {
		c.live = newLiveness(quiet, c.writePing)
	}
	go c.readLoop(newFrameReader(stdout, limit), stdout)
	return c, nil
}

// stdioConn is the connection of a commandTransport.
type stdioConn struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration

	// incoming carries what readLoop read, one message (or batch) at a time.
	incoming chan readResult
	// queue holds the rest of the last batch read; Read is not called
	// concurrently with itself.
	queue []jsonrpc.Message

	writeMu sync.Mutex

	batchMu sync.Mutex
	batches map[jsonrpc.ID]*inBatch // incoming calls that came in a batch

	closeOnce sync.Once
	closed    chan struct{} // closed when Close starts
	closeErr  error

	// wire remembers the last messages written, read and delivered (see
	// [StdioWireLogs]).
	wire *wireRing
	// live pings a silent child (nil: never; see [commandTransport]).
	live *liveness
}

type readResult struct {
	msgs  []jsonrpc.Message // one, or a batch
	batch bool
	err   error
}

// inBatch collects the responses to the calls of one incoming batch.
type inBatch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

// readLoop reads the child's output until it ends, fails or the connection is
// closed, then drains it (so a child writing on does not block on a full pipe).
func (c *stdioConn) readLoop(fr *frameReader, stdout io.Reader) {
	defer func() { _, _ = io.Copy(io.Discard, stdout) }()
	for {
		var res readResult
		frame, err := fr.next()
		if err == nil {
			res.msgs, res.batch, err = decodeFrame(frame)
			for _, m := range res.msgs {
				c.wire.record(WireRead, m)
			}
			if err == nil && c.live != nil {
				res.msgs = c.heard(res.msgs)
				if len(res.msgs) == 0 {
					continue // only the answer to a probe
				}
			}
		}
		if errors.Is(err, os.ErrClosed) {
			err = io.EOF // Close reaped the child, which closed its stdout
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("reading from server process %d: %w", c.cmd.Process.Pid, err)
			}
			res = readResult{err: err}
		}
		select {
		case c.incoming <- res:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// SessionID returns "": a stdio connection has no session id.
func (c *stdioConn) SessionID() string { return "" }

// Read returns the next message from the child. It returns ctx's error when ctx
// ends first, and io.EOF once Close has been called or the output ended between
// messages; a read error (see [commandTransport]) is returned once, after which
// Read blocks until Close.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		c.wire.record(WireDelivered, m)
		return m, nil
	}
	var res readResult
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case res = <-c.incoming:
	}
	if res.err != nil {
		return nil, res.err
	}
	if res.batch {
		if err := c.addBatch(res.msgs); err != nil {
			return nil, err
		}
	}
	c.queue = res.msgs[1:]
	c.wire.record(WireDelivered, res.msgs[0])
	return res.msgs[0], nil
}

// addBatch records the calls of an incoming batch, whose responses are written
// together once all are there, as the SDK does.
func (c *stdioConn) addBatch(msgs []jsonrpc.Message) error {
	var b *inBatch
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		if b == nil {
			b = &inBatch{unresolved: map[jsonrpc.ID]int{}}
		}
		if _, dup := b.unresolved[req.ID]; dup {
			return fmt.Errorf("reading from server process %d: a batch holds the request id %v twice", c.cmd.Process.Pid, req.ID.Raw())
		}
		b.unresolved[req.ID] = len(b.responses)
		b.responses = append(b.responses, nil)
	}
	if b == nil {
		return nil
	}
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for id := range b.unresolved {
		if _, seen := c.batches[id]; seen {
			return fmt.Errorf("reading from server process %d: %w: batch contains previously seen request %v", c.cmd.Process.Pid, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}, id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*inBatch{}
	}
	for id := range b.unresolved {
		c.batches[id] = b
	}
	return nil
}

// resolveBatch records resp when it answers a call of an incoming batch: it
// reports whether it did, and returns the batch's responses once it is complete.
func (c *stdioConn) resolveBatch(resp *jsonrpc.Response) ([]*jsonrpc.Response, bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	b.responses[b.unresolved[resp.ID]] = resp
	delete(b.unresolved, resp.ID)
	delete(c.batches, resp.ID)
	if len(b.unresolved) > 0 {
		return nil, true
	}
	return b.responses, true
}

// Write sends msg to the child as one line. Writes are serialized; a Write after
// Close (or once Close has begun) fails with an error wrapping
// mcp.ErrConnectionClosed, and one that ctx has ended with ctx's error.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.closed:
		return fmt.Errorf("writing to server process %d: %w", c.cmd.Process.Pid, mcp.ErrConnectionClosed)
	default:
	}
	e := encodeBuffers.Get().(*encodeBuffer)
	defer func() {
		if e.buf.Cap() <= maxPooledEncode {
			e.buf.Reset()
			encodeBuffers.Put(e)
		}
	}()
	e.buf.Reset()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if batch, ok := c.resolveBatch(resp); ok {
			if batch == nil {
				return nil // the batch is not complete
			}
			if err := e.encodeBatch(batch); err != nil {
				return err
			}
			return c.writeLine(e.buf.Bytes(), nil, batch)
		}
	}
	if err := e.encodeLine(msg); err != nil {
		return err
	}
	if c.live != nil {
		// Before the write: the answer may be read before writeLine returns.
		c.live.wrote(msg)
	}
	if err := c.writeLine(e.buf.Bytes(), msg, nil); err != nil {
		if c.live != nil {
			c.live.unwritten(msg)
		}
		return err
	}
	return nil
}

// heard tells the probe about msgs, read from the child, and returns them less the
// answers to its pings.
func (c *stdioConn) heard(msgs []jsonrpc.Message) []jsonrpc.Message {
	kept := msgs[:0]
	for _, m := range msgs {
		if !c.live.heard(m) {
			kept = append(kept, m)
		}
	}
	return kept
}

// writePing writes the probe's ping with id to the child; a failed write is in
// the wire log, and the child's end shows in the read loop.
func (c *stdioConn) writePing(id jsonrpc.ID) {
	select {
	case <-c.closed:
		return
	default:
	}
	msg := &jsonrpc.Request{ID: id, Method: "ping", Params: json.RawMessage(`{}`)}
	e := encodeBuffers.Get().(*encodeBuffer)
	defer func() {
		e.buf.Reset()
		encodeBuffers.Put(e)
	}()
	e.buf.Reset()
	if e.encodeLine(msg) == nil {
		_ = c.writeLine(e.buf.Bytes(), msg, nil)
	}
}

// writeLine writes line, which holds msg (or, when msg is nil, the responses of
// batch), recording them in c.wire before the write and again if it fails.
func (c *stdioConn) writeLine(line []byte, msg jsonrpc.Message, batch []*jsonrpc.Response) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.recordWrite(WireWritten, msg, batch)
	if _, err := c.stdin.Write(line); err != nil {
		c.recordWrite(WireWriteFailed, msg, batch)
		if errors.Is(err, os.ErrClosed) {
			err = mcp.ErrConnectionClosed
		}
		return fmt.Errorf("writing to server process %d: %w", c.cmd.Process.Pid, err)
	}
	return nil
}

func (c *stdioConn) recordWrite(stage WireStage, msg jsonrpc.Message, batch []*jsonrpc.Response) {
	if msg != nil {
		c.wire.record(stage, msg)
	}
	for _, r := range batch {
		c.wire.record(stage, r)
	}
}

// Close ends the connection and the child (see [commandTransport]); Read returns
// io.EOF as soon as Close begins. Every call returns the first one's result, once
// the child is reaped.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		if c.live != nil {
			c.live.stop()
		}
		c.wire.forget()
		close(c.closed)
		c.closeErr = c.stop()
	})
	return c.closeErr
}

// stop closes the child's stdin and waits for it to exit, asking harder after each
// wait of c.terminate, as the SDK's CommandTransport does.
func (c *stdioConn) stop() error {
	if err := c.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin of server process %d: %w", c.cmd.Process.Pid, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(c.terminate)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	kerr := c.cmd.Process.Kill() // fails when it has just exited: the wait tells
	if err, ok := wait(); ok {
		return err
	}
	if kerr != nil {
		return fmt.Errorf("killing server process %d: %w", c.cmd.Process.Pid, kerr)
	}
	return fmt.Errorf("server process %d did not exit %s after SIGKILL", c.cmd.Process.Pid, c.terminate)
}
