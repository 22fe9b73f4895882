// The connection pool: at most MaxConns connections per server, taken and released
// by calls, started on demand (a child process or an HTTP session), watched for
// their end, and restarted after a backoff when they fail.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// acquire returns a connection of client class class held exclusively by the
// caller: an idle one, or a new one (when MaxConns connections exist already, an
// idle one of another class is closed first). It waits for a free slot, bounded by
// ctx.
func (u *Server) acquire(ctx context.Context, class clientClass) (*upstreamConn, error) {
	return u.acquireFrom(ctx, false, class, 0)
}

// acquireUnverifiedFirst is acquire of a plain connection (class 0) preferring an
// idle one that needs verifying.
func (u *Server) acquireUnverifiedFirst(ctx context.Context) (*upstreamConn, error) {
	return u.acquireFrom(ctx, true, 0, 0)
}

// acquireFrom is acquire; prefer, when not 0, names the connection (its seq) to
// take: a command server's task lives in its process, so a call resuming it must
// get that connection, and fails when it is not idle (for a url server any
// connection reaches the task, so another one is taken then).
func (u *Server) acquireFrom(ctx context.Context, unverifiedFirst bool, class clientClass, prefer int64) (*upstreamConn, error) {
	select {
	case u.slots <- struct{}{}:
	case <-u.done:
		return nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("server %q: waiting for a free connection (all %d in use): %w", u.cfg.Name, cap(u.slots), ctx.Err())
	}
	c, err := u.take(ctx, unverifiedFirst, class, prefer)
	if err != nil {
		<-u.slots
		return nil, err
	}
	return c, nil
}

// take returns an idle connection of class or starts one; the caller holds a slot.
func (u *Server) take(ctx context.Context, unverifiedFirst bool, class clientClass, prefer int64) (*upstreamConn, error) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	if prefer != 0 {
		for i, c := range u.idle {
			if !c.dead && c.class == class && c.seq == prefer {
				u.idle = slices.Delete(u.idle, i, i+1)
				c.busy = true
				u.mu.Unlock()
				return c, nil
			}
		}
		if u.cfg.Transport() != "url" {
			u.mu.Unlock()
			return nil, fmt.Errorf("server %q: the server process that holds the task (connection %d) is busy with another call or has ended", u.cfg.Name, prefer)
		}
	}
	if unverifiedFirst {
		for i, c := range u.idle {
			if !c.dead && c.class == class && !u.verifiedLocked(c) {
				u.idle = slices.Delete(u.idle, i, i+1)
				c.busy = true
				u.mu.Unlock()
				return c, nil
			}
		}
	}
	for i := len(u.idle) - 1; i >= 0; i-- {
		c := u.idle[i]
		if c.dead || c.class != class {
			continue // a dead one's watcher is cleaning it up
		}
		u.idle = slices.Delete(u.idle, i, i+1)
		c.busy = true
		u.mu.Unlock()
		return c, nil
	}
	if wait := u.retryAt.Sub(u.now()); wait > 0 {
		why, at := u.lastFailure, u.retryAt
		u.mu.Unlock()
		return nil, fmt.Errorf("server %q: %w after a failure (%s); the next start is in %s (at %s)", u.cfg.Name, ErrServerRestarting, why, wait.Round(time.Millisecond), at.Format(time.RFC3339Nano))
	}
	victim := u.makeRoomLocked()
	u.starting++
	u.wg.Add(1) // Close waits for a start in progress
	u.mu.Unlock()
	defer u.wg.Done()
	if victim != nil {
		// Gone (its process reaped) before another starts: the bound is on
		// processes, and a server may take a while to exit once its stdin closes.
		u.shutdown(victim, true)
	}

	c, err := u.start(ctx, class)
	if err != nil {
		u.mu.Lock()
		u.starting--
		u.mu.Unlock()
		if ctx.Err() == nil {
			u.mu.Lock()
			u.noteFailureLocked("start failed: " + err.Error())
			wasDown := u.downLocked()
			u.startFailed = true
			if !wasDown && u.downLocked() {
				u.queue(u.changed) // the served set empties (see Tools)
			}
			u.scheduleRecoveryLocked()
			u.mu.Unlock()
		}
		return nil, fmt.Errorf("server %q: starting: %w", u.cfg.Name, err)
	}
	u.mu.Lock()
	u.starting--
	if u.closed {
		u.mu.Unlock()
		u.shutdown(c, false)
		return nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	// Up again; what it serves is known once this connection is verified, which
	// queues OnToolsChanged when that changes the served set.
	u.startFailed = false
	c.busy = true
	u.live[c] = struct{}{}
	u.sessions[c.cs] = c
	u.wg.Add(1)
	u.mu.Unlock()
	go u.watch(c)
	return c, nil
}

// makeRoomLocked takes out of the pool an idle connection (of another client
// class: take found none of its own) when MaxConns connections are live or being
// started, and returns it, marked discarded, for the caller to close before it
// starts one more, so that the bound holds (two calls that start connections of
// new classes at once, an idle one of a third class live, must not have three
// processes). It returns nil when there is room. u.mu is held.
func (u *Server) makeRoomLocked() *upstreamConn {
	live := u.starting
	for c := range u.live {
		if !c.dead && !c.discarded {
			live++
		}
	}
	if live < cap(u.slots) {
		return nil
	}
	for i, c := range u.idle {
		if c.dead || c.discarded {
			continue
		}
		u.idle = slices.Delete(u.idle, i, i+1)
		c.discarded = true
		return c
	}
	return nil
}

// release gives back the caller's slot, returning c to the idle set when healthy and
// closing it otherwise.
func (u *Server) release(c *upstreamConn, healthy bool) {
	u.mu.Lock()
	c.busy, c.cancel, c.progress, c.log, c.asks, c.asksCtx = false, nil, nil, nil, nil, nil
	closed := u.closed
	switch {
	case healthy && !c.dead && !c.discarded && !closed:
		u.idle = append(u.idle, c)
		u.mu.Unlock()
	case closed:
		u.mu.Unlock() // Close shuts every connection down
	default:
		// Closed off the caller's path: closing an HTTP session may wait for its
		// DELETE. Close waits for it.
		c.discarded = true
		u.wg.Add(1)
		u.mu.Unlock()
		go func() {
			defer u.wg.Done()
			u.shutdown(c, false)
		}()
	}
	<-u.slots
}

// failed records that c broke while in use (once per connection).
func (u *Server) failed(c *upstreamConn, why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !c.failCounted && !c.discarded && !u.closed {
		c.failCounted = true
		u.noteFailureLocked(why)
		u.log.Warn("upstream connection failed", slog.Int("pid", c.pid), slog.String("error", why), slog.Time("next_start", u.retryAt))
	}
}

// noteFailureLocked moves the backoff one step.
func (u *Server) noteFailureLocked(why string) {
	u.failures++
	d := u.opts.BackoffMin
	for i := 1; i < u.failures && d < u.opts.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, u.opts.BackoffMax)
	u.retryAt = u.now().Add(d)
	u.lastFailure = why
}

// noteSuccess resets the backoff.
func (u *Server) noteSuccess() {
	u.mu.Lock()
	u.failures, u.retryAt, u.lastFailure = 0, time.Time{}, ""
	u.mu.Unlock()
}

// watch waits until c's session ends (the process exited, the stream ended, or c was
// closed) and forgets c. An end nobody asked for is a failure.
func (u *Server) watch(c *upstreamConn) {
	defer u.wg.Done()
	why := "the connection ended"
	if err := c.cs.Wait(); err != nil && !isExitError(err) {
		why += ": " + err.Error()
	}
	u.mu.Lock()
	c.dead = true
	delete(u.live, c)
	delete(u.sessions, c.cs)
	u.idle = slices.DeleteFunc(u.idle, func(x *upstreamConn) bool { return x == c })
	if !c.discarded && !c.failCounted && !u.closed {
		c.failCounted = true
		u.noteFailureLocked(why)
		u.log.Warn("upstream connection ended", slog.Int("pid", c.pid), slog.String("error", why), slog.Time("next_start", u.retryAt))
	}
	if c.failCounted && len(u.live) == 0 {
		// The last connection failed: start another, so that what is served is the
		// running process's (or nothing, if it cannot start).
		u.scheduleRecoveryLocked()
	}
	if !u.closed && u.holdsSubscriptionLocked(c) {
		u.queue(u.renew)
	}
	discarded := c.discarded
	u.mu.Unlock()
	if !discarded {
		// Reap the process and release the session's resources.
		u.shutdown(c, false)
	}
}

// shutdown closes c once: kill first unless graceful, then close the session, which
// for a command server waits until the process is reaped.
func (u *Server) shutdown(c *upstreamConn, graceful bool) {
	c.shutOnce.Do(func() {
		if !graceful && c.proc != nil {
			_ = c.proc.Kill() // an error means it has exited already
		}
		if err := c.cs.Close(); err != nil && !isExitError(err) {
			u.log.Debug("closing upstream connection", slog.Int("pid", c.pid), slog.String("error", err.Error()))
		}
		if c.proc != nil {
			// The server is done (Close waits for it); whatever it started goes too.
			endGroup(c.pid)
		}
	})
}

func isExitError(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// start opens one new connection: starts the command (or connects to the URL) and
// runs the initialize handshake.
func (u *Server) start(ctx context.Context, class clientClass) (*upstreamConn, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	seq := u.starts.Add(1)
	tap := newConnTap()
	var (
		transport mcp.Transport
		cmd       *exec.Cmd
		read      *atomic.Int64
		changed   *atomic.Int64
	)
	if u.cfg.Transport() == "url" {
		// The connection is not wrapped (the SDK's streamable connection has
		// unexported methods that a wrapper would hide): its HTTP responses are.
		read = new(atomic.Int64)
		transport = &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: progressCountingClient(u.httpClient, read)}
	} else {
		cmd = exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Env = u.policy.ChildEnv(os.Environ(), u.cfg.Env)
		dieWithGateway(cmd)
		cmd.Dir = u.cfg.Dir
		cmd.Stderr = &stderrLines{log: u.log, cmd: cmd}
		cmd.WaitDelay = stderrWaitDelay
		read, changed = new(atomic.Int64), new(atomic.Int64)
		transport = &progressCounter{Transport: &commandTransport{Command: cmd, TerminateDuration: terminateGrace}, read: read, changed: changed}
	}
	transport = &tapTransport{Transport: transport, tap: tap, wrap: cmd != nil}
	cs, err := sdkGuard(func() (*mcp.ClientSession, error) {
		return u.clientFor(class).Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: u.cfg.protocol()})
	})
	if err != nil {
		if cmd != nil && cmd.Process != nil {
			// The SDK closes a session whose handshake failed; make sure the child is
			// gone even when it panicked first.
			_ = cmd.Process.Kill()
		}
		return nil, err
	}
	c := &upstreamConn{cs: cs, class: class, progressRead: read, changedRead: changed, seq: seq, tap: tap, tasks: offersTasks(cs)}
	if cmd != nil {
		c.proc, c.pid = cmd.Process, cmd.Process.Pid
		u.log.Debug("upstream started", slog.Int("pid", c.pid))
	}
	u.askForLogs(ctx, c)
	return c, nil
}

// livePIDs returns the process ids of the live connections (for tests).
func (u *Server) livePIDs() []int {
	u.mu.Lock()
	defer u.mu.Unlock()
	var pids []int
	for c := range u.live {
		if c.pid != 0 {
			pids = append(pids, c.pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// downLocked reports whether the server is down: its last start failed and no
// connection is live. u.mu is held.
func (u *Server) downLocked() bool { return u.startFailed && len(u.live) == 0 }

// Health reports whether the server can serve now: nil, or when it is down (its last
// start failed and no connection is live) an error saying why and when the next
// start is due. A down server that was discovered is started again in the
// background.
func (u *Server) Health() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.downLocked() || u.closed {
		return nil
	}
	return fmt.Errorf("server %q is down: %s; the next start is at %s", u.cfg.Name, u.lastFailure, u.retryAt.Format(time.RFC3339))
}

// scheduleRecoveryLocked arranges a background restart of a discovered server once
// its backoff has passed (one pending at a time). u.mu is held.
func (u *Server) scheduleRecoveryLocked() {
	if !u.discovered || u.closed || u.recovery != nil {
		return
	}
	wait := max(u.retryAt.Sub(u.now()), 0)
	u.recovery = time.AfterFunc(wait, func() {
		u.mu.Lock()
		u.recovery = nil
		u.mu.Unlock()
		u.queue(u.recover)
	})
}
