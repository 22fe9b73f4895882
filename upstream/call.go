// One call to an upstream tool: a verified connection is taken from the pool, the
// request is sent, and an answer is told apart from a transport failure.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/pin"
)

// CallOptions are optional settings of one [Server.Call]. A nil *CallOptions is
// the zero value.
type CallOptions struct {
	// Progress, when set, asks the upstream for progress: the call is sent with a
	// progress token of the Server's own, and every notifications/progress the
	// upstream sends with that token on the call's connection while the call is in
	// flight is passed to Progress, in the order received. p is the upstream's
	// notification (its ProgressToken is the Server's token); Progress must not
	// modify it. Notifications without a call in flight, or with another token, are
	// dropped (logged at debug level).
	//
	// Progress runs on a goroutine of the call, never on the connection's read loop,
	// one notification at a time; ctx is the call's context. It must return promptly:
	// up to 16 notifications wait for it and more are dropped, and Call returns only
	// after Progress has seen every notification the upstream sent before its answer
	// (on the call's own stream, for a url server) or ctx has ended. Nil means no
	// progress is asked for.
	Progress func(ctx context.Context, p *mcp.ProgressNotificationParams)
	// Log, when set, receives every notifications/message (a log message) the
	// upstream sends on the call's connection while the call is in flight, in order;
	// p must not be modified. ctx is the call's context. It runs on the SDK's
	// goroutine for notifications, one at a time, so it must return promptly; Call
	// returns only after Log has seen every log message the upstream sent before its
	// answer (as for Progress). Log messages without a call in flight, or when Log
	// is nil, go to the Server's Logger at debug level. The Server asks every upstream that
	// offers logging for all levels (logging/setLevel debug) when it connects: the
	// caller filters by the level its own client asked for.
	Log LogHook
	// Client, when set, answers the requests the upstream sends its client while the
	// call is in flight (see [ClientRequests]): the call goes out on a connection
	// that declared exactly the capabilities Client can answer. Nil declares none.
	Client *ClientRequests
	// Relay, when set, passes the upstream's own multi-round trips (protocol
	// 2026-07-28: a result of type input_required, with input requests and a
	// requestState) to the caller instead of answering them: the request goes out on
	// a connection whose client does not fulfil input requests, declaring for this
	// request the capabilities Relay gives, and carrying Relay's answers and state
	// when it is a retry. An input_required result is returned as a result
	// (NeedsInput reports it). Client is not used for such a request's rounds. For a
	// tools/call, a prompts/get and a resources/read.
	//
	// An upstream task waiting for input (status input_required, see [Server.Call])
	// is passed on the same way: the call returns a result whose InputRequests are
	// the task's and whose RequestState is a task state of the Server's own, naming
	// the task (signed with a key of this Server's, random per process, so that a
	// forged state, or one of another Server, is refused unsent). The retry carrying
	// that state and the answers sends them to the task (tasks/update) instead of a
	// new tools/call, and follows the task on. The caller must keep the state
	// integrity-protected between the rounds as it keeps the upstream's own (the
	// gateway wraps both in its HMAC-signed relay state); it holds the task's and
	// the tool's names, nothing secret. A command server's task lives in its
	// process: the retry needs that connection idle, and fails otherwise.
	Relay *Relay
	// OnTask, when set, is called once, on the call's goroutine and with its
	// context, when the upstream answers the tools/call by creating a task (protocol
	// 2026-07-28's tasks extension, see [Server.Call]), before the task is followed:
	// the call is then a long-running one. It is not called for a retry that
	// resumes a task (Relay.State a task state), nor when the upstream answers at
	// once. It must return promptly.
	OnTask func(ctx context.Context)
	// BeforeSend, when set, is called once the call holds a verified connection, right
	// before the request is sent; an error aborts the call unsent (the error returned
	// wraps it and [ErrNotSent]). The gateway writes the call's audit intent here.
	BeforeSend func(ctx context.Context) error
}

// Relay is one round of a relayed multi-round trip (see [CallOptions.Relay]).
type Relay struct {
	// Capabilities are the client capabilities declared to the upstream for this
	// request: only sampling, elicitation and roots are passed on (nil: none).
	Capabilities *mcp.ClientCapabilities
	// Responses answer the upstream's input requests of the previous round, and
	// State is the requestState it gave with them; both empty on a first request.
	Responses mcp.InputResponseMap
	State     string
}

// Call calls the upstream tool remote (its upstream name) with args (a JSON object;
// empty means {}) over a pooled connection held for the whole call, and returns the
// upstream's result. A result with IsError set is returned as a result, not an error.
// opts may be nil (see [CallOptions]).
//
// It refuses a tool that was not discovered (or was refused), and a quarantined tool
// with a *[pin.QuarantinedError]. Waiting for a free connection is bounded by ctx; the
// call itself by ctx and CallTimeout. Errors: ctx's error (wrapped) when ctx ends
// first; context.DeadlineExceeded (wrapped) when CallTimeout passes; an error
// wrapping [ErrServerRestarting] while the server is in restart backoff; an error
// wrapping the upstream's *jsonrpc.Error when it answers with a protocol error; an
// error saying the connection failed when the process crashed or the stream ended,
// and, for a url server, when the request could not be sent (connection refused), got
// an HTTP error status (even one carrying a JSON-RPC error body) or a malformed,
// cut-off or early-ending answer. A failed connection is never reused: it is closed
// and the next call starts a new one, after the restart backoff. Every error returned
// before the request began to be sent wraps [ErrNotSent].
//
// Tasks: a server of protocol 2026-07-28 that offers the tasks extension
// (io.modelcontextprotocol/tasks in its server/discover capabilities) is told, in
// the client capabilities of every tools/call, that the Server takes tasks; no
// other server is. When it answers with a task (a CreateTaskResult), Call follows
// the task on the same connection, held until the task ends, and returns as if the
// call had answered at once: it polls tasks/get (at the task's pollIntervalMs,
// bounded to [50ms, 5s], 500ms when it gives none) until the task is terminal,
// and returns a completed task's result (content, structured content, isError and
// _meta as the upstream gave them); a failed task's error as an error wrapping a
// *jsonrpc.Error with its code, message and data; for a task the upstream
// cancelled, an error saying so. Progress and log messages the upstream sends
// meanwhile reach opts' hooks as during any call. When ctx ends (or CallTimeout
// passes) first, the task is cancelled (tasks/cancel, bounded by 5s of its own)
// and ctx's error returned. A task waiting for input is relayed (opts.Relay set,
// see [CallOptions.Relay]), answered through opts.Client when it can answer every
// request the task lists (one at a time, the answers sent with tasks/update),
// and otherwise cancelled, the call ending with an error saying that the server
// asked for input that cannot be passed on. See [CallOptions.OnTask] to learn
// that a call became a task.
func (u *Server) Call(ctx context.Context, remote string, args json.RawMessage, opts *CallOptions) (*mcp.CallToolResult, error) {
	res, sent, err := u.call(ctx, remote, args, opts)
	if err != nil && !sent {
		err = notSent(err)
	}
	return res, err
}

// call is Call; sent reports whether the request began to be sent.
func (u *Server) call(ctx context.Context, remote string, args json.RawMessage, opts *CallOptions) (_ *mcp.CallToolResult, sent bool, _ error) {
	u.mu.Lock()
	var tool *Tool
	for i := range u.tools {
		if u.tools[i].Remote == remote {
			t := u.tools[i]
			tool = &t
			break
		}
	}
	u.mu.Unlock()
	if err := u.usable(); err != nil {
		return nil, false, err
	}
	switch {
	case tool == nil:
		return nil, false, fmt.Errorf("server %q offers no tool %q", u.cfg.Name, remote)
	case tool.Quarantined:
		return nil, false, &pin.QuarantinedError{Tool: tool.Name}
	}
	arguments, err := callArguments(args)
	if err != nil {
		return nil, false, fmt.Errorf("tool %q: %w", tool.Name, err)
	}
	params := &mcp.CallToolParams{Name: remote, Arguments: arguments}
	x := exchange{key: remote, what: fmt.Sprintf("tool %q", remote), params: params, opts: opts}
	if opts != nil && opts.Relay != nil && isTaskState(opts.Relay.State) {
		// The retry of a relayed task round: the answers go to the task.
		st, err := u.openTaskState(opts.Relay.State, remote)
		if err != nil {
			return nil, false, err
		}
		x.conn, x.progressToken = st.Conn, st.Progress
		return roundTrip(ctx, u, x, func(ctx context.Context, c *upstreamConn) (*mcp.CallToolResult, error) {
			return u.resumeTask(ctx, c, x, st)
		})
	}
	return roundTrip(ctx, u, x, func(ctx context.Context, c *upstreamConn) (*mcp.CallToolResult, error) {
		return u.callTool(ctx, c, x, params)
	})
}

// usable refuses a request to a Server that is closed or was never discovered.
func (u *Server) usable() error {
	u.mu.Lock()
	closed, admitted := u.closed, u.admitted
	u.mu.Unlock()
	switch {
	case closed:
		return fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	case !admitted:
		return fmt.Errorf("server %q: not discovered: call Discover first", u.cfg.Name)
	}
	return nil
}

// exchange describes one request [roundTrip] sends.
type exchange struct {
	// key names the definition the connection must have listed as served (see
	// [Server.acquireVerified]): a tool's upstream name, a prompt's or a resource
	// template's definition key (promptKey, templateKey), or "" when the request
	// needs only a verified connection.
	key string
	// what names the request in errors, e.g. `tool "echo"`.
	what string
	// params gets the Server's progress token when opts asks for progress.
	params mcp.RequestParams
	opts   *CallOptions
	// conn, when not 0, is the connection (its seq) the request must go out on,
	// and progressToken the progress token to ask with: those of the upstream
	// task a relayed retry resumes (see acquireFrom).
	conn          int64
	progressToken string
}

// roundTrip sends one request over a verified pooled connection held for the whole
// exchange and tells an answer apart from a transport failure, as [Server.Call]
// documents: the BeforeSend hook, CallTimeout, progress and log routing, and the
// connection's fate (kept, settled after a cancel, or closed) are the same for every
// kind of request. sent reports whether the request began to be sent.
func roundTrip[T any](ctx context.Context, u *Server, x exchange, send func(context.Context, *upstreamConn) (*T, error)) (_ *T, sent bool, _ error) {
	opts := x.opts
	var asks *ClientRequests
	class := clientClass(0)
	if opts != nil && opts.Relay != nil {
		if err := relayRound(x.params, opts.Relay); err != nil {
			return nil, false, err
		}
		class = classRelay
	} else if opts != nil {
		asks = opts.Client
		class = asks.class()
	}
	c, err := u.acquireVerifiedOn(ctx, x.key, class, x.conn)
	if err != nil {
		return nil, false, err
	}
	if opts != nil && opts.BeforeSend != nil {
		if err := opts.BeforeSend(ctx); err != nil {
			u.release(c, true)
			return nil, false, fmt.Errorf("server %q: %s not sent: %w", u.cfg.Name, x.what, err)
		}
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if u.opts.CallTimeout > 0 {
		var cancelTimeout context.CancelFunc
		callCtx, cancelTimeout = context.WithTimeout(callCtx, u.opts.CallTimeout)
		defer cancelTimeout()
	}
	if x.params != nil {
		askLogsOf(c, x.params)
	}
	var route *progressRoute
	if opts != nil && opts.Progress != nil {
		route = u.openProgress(callCtx, c, opts.Progress)
		if x.progressToken != "" {
			// A resumed task reports progress with its first request's token.
			route.token = x.progressToken
		}
		x.params.SetProgressToken(route.token)
	}
	u.mu.Lock()
	c.cancel = cancel
	c.progress = route
	c.asks, c.asksCtx = asks, callCtx
	var logs *logRoute
	if opts != nil && opts.Log != nil {
		logs = u.openLogs(callCtx, c, opts.Log)
		c.log = logs
	}
	u.mu.Unlock()

	res, err := sdkGuard(func() (*T, error) { return send(callCtx, c) })
	answered := err == nil || upstreamAnswered(err)
	if logs != nil && answered {
		// The log messages sent ahead of the answer reach the hook before the caller
		// gets the answer.
		u.settleRouted(c, logs.readBase, logs.handledBase, logs.handled)
	}
	if route != nil {
		u.closeProgress(ctx, c, route, answered)
	}
	if err == nil && res == nil {
		err = errors.New("the upstream returned no result")
	}
	if err == nil {
		u.release(c, true)
		u.noteSuccess()
		return res, true, nil
	}
	switch {
	case upstreamAnswered(err):
		// The server answered with a JSON-RPC error: the connection is healthy.
		u.release(c, true)
		return nil, true, fmt.Errorf("server %q: %s: %w", u.cfg.Name, x.what, err)
	case u.isClosed():
		u.release(c, false)
		return nil, true, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	case ctx.Err() != nil:
		// The caller gave up. The SDK has sent the upstream notifications/cancelled; the
		// connection is kept if it still serves (see Options.CancelGrace).
		u.settleCancelled(c, x.what)
		return nil, true, fmt.Errorf("server %q: %s: %w", u.cfg.Name, x.what, ctx.Err())
	case callCtx.Err() != nil:
		u.release(c, false)
		return nil, true, fmt.Errorf("server %q: %s did not answer within %s: %w", u.cfg.Name, x.what, u.opts.CallTimeout, context.DeadlineExceeded)
	default:
		u.failed(c, err.Error())
		u.release(c, false)
		return nil, true, fmt.Errorf("server %q: the request for %s failed on the connection, which is closed (a new one is started on the next request): %w", u.cfg.Name, x.what, err)
	}
}

// settleCancelled releases c, whose call the caller cancelled, off the caller's path:
// back to the pool when the upstream answers a ping within CancelGrace, closed (its
// process killed) when it does not. The slot stays taken until then, so the
// connection bound holds. Close waits for it. The call has ended: from now on the
// upstream's requests on c are refused like any with no call in flight.
func (u *Server) settleCancelled(c *upstreamConn, what string) {
	u.mu.Lock()
	c.asks = nil
	if u.closed {
		u.mu.Unlock()
		u.release(c, false)
		return
	}
	u.wg.Add(1)
	u.mu.Unlock()
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), u.opts.CancelGrace)
		defer cancel()
		_, err := sdkGuard(func() (*mcp.CallToolResult, error) { return nil, c.cs.Ping(ctx, nil) })
		if err != nil {
			u.log.Warn("upstream did not answer a ping after a cancelled call; closing the connection",
				slog.String("request", what), slog.Int("pid", c.pid), slog.Duration("grace", u.opts.CancelGrace), slog.String("error", err.Error()))
		}
		u.release(c, err == nil)
	}()
}

// sdkTransportErrors match (by code, with errors.Is) the JSON-RPC errors the SDK makes
// up itself for a failure of the connection, which are never an upstream's answer:
// "rejected by transport" (-32005: for a url server, a request that could not be sent
// such as a refused connection, and every HTTP error status, even one whose body is a
// JSON-RPC error), "client is closing" (-32003) and "server is closing" (-32004).
var sdkTransportErrors = []error{
	&jsonrpc.Error{Code: -32005},
	&jsonrpc.Error{Code: -32003},
	&jsonrpc.Error{Code: -32004},
}

// upstreamAnswered reports whether err is the upstream's own JSON-RPC error answer, read
// from a healthy connection. Anything else (a transport failure, an HTTP error status,
// a malformed or cut-off answer, an SDK failure) is not an answer: the caller treats
// the connection as failed and starts a new one (fail closed: an error the gateway
// cannot place is never taken for a healthy exchange).
func upstreamAnswered(err error) bool {
	var terr *taskError
	if errors.As(err, &terr) {
		return true // the upstream's task ended the call; the connection is healthy
	}
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		return false
	}
	for _, t := range sdkTransportErrors {
		if errors.Is(err, t) {
			return false
		}
	}
	return true
}

// acquireVerified returns a connection for a request needing the definition key
// (see [exchange]) on which that definition is the one served, approved and not
// quarantined: a connection not verified since it started (or since its
// list_changed, or a Reverify) lists its tools, prompts and resource templates and
// has every pin checked first, and one that listed a different definition than the
// one served (its process may still run an older one) is closed and another taken.
// An empty key needs only a verified connection. Errors: those of acquire and of the
// listing, a *[pin.QuarantinedError] when the listing quarantined the definition, an
// error when the server no longer offers it or when MaxConns+1 connections in a row
// disagree.
func (u *Server) acquireVerified(ctx context.Context, key string, class clientClass) (*upstreamConn, error) {
	return u.acquireVerifiedOn(ctx, key, class, 0)
}

// acquireVerifiedOn is acquireVerified preferring the connection prefer (see
// acquireFrom; 0 for any).
func (u *Server) acquireVerifiedOn(ctx context.Context, key string, class clientClass, prefer int64) (*upstreamConn, error) {
	for attempt := 0; ; attempt++ {
		c, err := u.acquireFrom(ctx, false, class, prefer)
		if err != nil {
			return nil, err
		}
		u.mu.Lock()
		verified := u.verifiedLocked(c)
		u.mu.Unlock()
		if !verified {
			// Bounded like a start: a server that never lists must not hold the call.
			vctx, cancel := context.WithTimeout(ctx, startTimeout)
			_, _, changed, err := u.verify(vctx, c)
			cancel()
			if err != nil {
				return nil, err // verify released c
			}
			if changed {
				u.queue(u.changed)
			}
		}
		if key == "" {
			return c, nil
		}
		u.mu.Lock()
		def, offered := u.servedLocked(key)
		listed := c.defs[key]
		u.mu.Unlock()
		switch {
		case !offered:
			u.release(c, true)
			return nil, fmt.Errorf("server %q no longer offers %s", u.cfg.Name, describeKey(key))
		case def.quarantined:
			u.release(c, true)
			return nil, &pin.QuarantinedError{Tool: def.name}
		case listed == def.hash:
			return c, nil
		case attempt >= cap(u.slots):
			u.release(c, false)
			return nil, fmt.Errorf("server %q: %d connections in a row listed another definition of %s than the one served", u.cfg.Name, attempt+1, describeKey(key))
		}
		u.log.Info("closing a connection that listed another definition than the one served", slog.Int("pid", c.pid), slog.String("definition", def.name))
		u.release(c, false)
	}
}

// servedDef is what the served set holds of one definition.
type servedDef struct {
	name        string // the governed (or pin) name
	hash        string
	quarantined bool
}

// servedLocked returns the served definition of key. u.mu is held.
func (u *Server) servedLocked(key string) (servedDef, bool) {
	switch {
	case strings.HasPrefix(key, promptKeyPrefix):
		remote := key[len(promptKeyPrefix):]
		for _, p := range u.prompts {
			if p.Remote == remote {
				return servedDef{p.Name, p.Hash, p.Quarantined}, true
			}
		}
	case strings.HasPrefix(key, templateKeyPrefix):
		uriTemplate := key[len(templateKeyPrefix):]
		for _, t := range u.templates {
			if t.URITemplate == uriTemplate {
				return servedDef{t.PinName(), t.Hash, t.Quarantined}, true
			}
		}
	default:
		for _, t := range u.tools {
			if t.Remote == key {
				return servedDef{t.Name, t.Hash, t.Quarantined}, true
			}
		}
	}
	return servedDef{}, false
}

// describeKey names the definition of key in errors.
func describeKey(key string) string {
	switch {
	case strings.HasPrefix(key, promptKeyPrefix):
		return fmt.Sprintf("prompt %q", key[len(promptKeyPrefix):])
	case strings.HasPrefix(key, templateKeyPrefix):
		return fmt.Sprintf("resource template %q", key[len(templateKeyPrefix):])
	}
	return fmt.Sprintf("tool %q", key)
}

// callArguments checks that args is one JSON object and returns it for sending
// verbatim (numbers keep their exact text).
func callArguments(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, errors.New("arguments must be one JSON object")
	}
	return json.RawMessage(trimmed), nil
}

// marshalGuarded encodes v, turning a panic (a value type the encoder cannot handle,
// a bad MarshalJSON) into an error.
func marshalGuarded(v any) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("encoding panicked: %v", r)
		}
	}()
	return json.Marshal(v)
}

// sdkGuard runs f, turning a panic inside the SDK (on data from the upstream) into
// an error.
func sdkGuard[T any](f func() (T, error)) (res T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			res, err = zero, fmt.Errorf("MCP SDK failed on the upstream's data: %v", r)
		}
	}()
	return f()
}
