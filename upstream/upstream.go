// The client side of the gateway: one Server per configured MCP server, admitted by
// the transport policy, discovered, pinned, and called through a bounded pool of
// connections.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/schema"
)

const (
	// upstreamProtocolVersion is the MCP version the gateway asks upstreams for. It
	// is the last version with the stateful initialize handshake, in which
	// server-to-client traffic during a call travels on the call's own connection
	// (what the gateway routes) and tools/list is never answered from a client-side
	// cache. Servers answering with an older supported version are accepted.
	upstreamProtocolVersion = "2025-11-25"
	// gatewayClientName is the client implementation name declared to upstreams.
	gatewayClientName = "warden-gateway"
	// gatewayClientVersion is the client implementation version declared to upstreams.
	gatewayClientVersion = "1"

	defaultBackoffMin = 200 * time.Millisecond
	defaultBackoffMax = 30 * time.Second
	// startTimeout bounds starting one connection (process start and initialize).
	startTimeout = 30 * time.Second
	// terminateGrace is how long a gracefully closed child gets, after its stdin is
	// closed, before it is sent SIGTERM (and SIGKILL after as long again).
	terminateGrace = 2 * time.Second
	// stderrWaitDelay bounds the wait for a dead child's stderr to close (a grandchild
	// may hold it open).
	stderrWaitDelay = 2 * time.Second
	// rediscoverTimeout bounds one rediscovery after tools/list_changed.
	rediscoverTimeout = 2 * time.Minute
	// maxListPages bounds the tools/list pages followed in one discovery.
	maxListPages = 1000
	// maxStderrLine is the longest stderr line forwarded; the rest is cut.
	maxStderrLine = 4096
	// stderrLinesPerSecond bounds the stderr lines forwarded per connection.
	stderrLinesPerSecond = 100
	// progressBuffer is how many progress notifications of one call may wait for its
	// Progress hook; more are dropped.
	progressBuffer = 16
	// progressSettleMax bounds the wait, once an upstream answered a call, for the SDK
	// to handle the progress notifications the upstream sent ahead of its answer.
	progressSettleMax = 100 * time.Millisecond
	// progressQuiet ends that wait for a url server (whose notifications cannot be
	// counted as they are read): no notification handled for this long.
	progressQuiet = 2 * time.Millisecond
)

// ErrServerRestarting is wrapped by the error of a call that needs a new connection
// to an upstream server while the server is in restart backoff after a failure.
var ErrServerRestarting = errors.New("upstream server is restarting")

// ErrClosed is wrapped by the error of any use of an [Server] after Close.
var ErrClosed = errors.New("upstream closed")

// ErrNotSent is wrapped by the error of an [Server.Call] that failed before the
// request began to be sent to the upstream (the tool is unknown or quarantined, no
// connection could be had or started, the definitions could not be verified, the
// BeforeSend hook refused): the upstream cannot have run the call. Once sending has
// begun an error never wraps it, even when the connection then failed: the request
// may have reached the server.
var ErrNotSent = errors.New("the call was not sent to the upstream")

// notSentError marks err as [ErrNotSent], keeping its message.
type notSentError struct{ err error }

func (e notSentError) Error() string   { return e.err.Error() }
func (e notSentError) Unwrap() []error { return []error{ErrNotSent, e.err} }

func notSent(err error) error {
	if err == nil || errors.Is(err, ErrNotSent) {
		return err
	}
	return notSentError{err}
}

// Options configure an [Server]. The zero value is usable and denies
// everything: no transport is admitted and, without Pins, nothing is discovered.
type Options struct {
	// Policy admits the server's transport; nil means the zero policy, which denies
	// every transport. It also gives the connection bound and the child environment.
	Policy *TransportPolicy
	// Pins stores the tool definition pins. Nil makes Discover refuse (fail closed):
	// a definition that cannot be pinned is not served.
	Pins pin.Store
	// Sink receives transport denials and definition changes; may be nil.
	Sink warden.Sink
	// Logger receives operational logs, including the child's stderr; nil discards.
	Logger *slog.Logger
	// OnToolsChanged is called after a tools/list_changed notification from the
	// upstream has re-run discovery, and after Refresh changed what is served. It
	// runs on the Server's own goroutine: never concurrently for one Server, and
	// coalesced (a burst of notifications gives few calls). It must not call Close.
	OnToolsChanged func(server string)
	// CallTimeout bounds one upstream tools/call once it holds a connection; 0 means
	// no bound beyond the caller's context.
	CallTimeout time.Duration
	// HTTPClient is used for url servers; nil means a client with dial, TLS and idle
	// timeouts (no overall timeout: MCP streams are long-lived). The Server uses a
	// copy that refuses redirects (a redirect could lead past the host allowlist) and
	// adds the server's configured headers; the caller's client is not modified.
	HTTPClient *http.Client
	// BackoffMin and BackoffMax bound the delay before a new connection is started
	// after consecutive failed starts or crashes: BackoffMin doubled for every further
	// failure, at most BackoffMax. Zero means 200ms and 30s.
	BackoffMin, BackoffMax time.Duration
}

// Tool is one tool discovered on an upstream server that passed the checks.
// A Quarantined tool must be hidden from clients and refused with [pin.QuarantineText].
type Tool struct {
	// Name is the governed name: the server's ToolPrefix followed by Remote.
	Name string
	// Remote is the tool's name on the upstream server.
	Remote string
	// Server is the server's name.
	Server string
	// Tool is the definition as listed upstream. It is shared: do not modify it.
	Tool *mcp.Tool
	// InputSchema is the input schema as JSON: present, a JSON object with "type":
	// "object", and compiled successfully by [schema.Compiler].
	InputSchema json.RawMessage
	// Hash is the definition hash (see [pin.Hash]).
	Hash string
	// Quarantined reports that the definition changed since it was approved, or
	// that its pin could not be checked: the tool must not be served.
	Quarantined bool

	def json.RawMessage // canonical definition, for re-checking the pin
}

// ToolProblem reports a tool refused at discovery; the server's other tools are
// still served.
type ToolProblem struct {
	// Server is the server's name; Tool the governed name the tool would have had.
	Server, Tool string
	// Problem says what is wrong, e.g. "input schema is missing".
	Problem string
}

// String renders the problem for logs and operators.
func (p ToolProblem) String() string {
	return fmt.Sprintf("server %q: tool %q refused: %s", p.Server, p.Tool, p.Problem)
}

// Server is the gateway's client of one upstream MCP server. It admits the server
// through the transport policy before anything starts, discovers and pins its tools,
// and calls them over a pool of at most Policy.MaxConns() connections, each held
// exclusively by one call for the call's duration.
//
// Every connection lists the server's tools, and every definition's pin is checked,
// before the first call goes out on it, and again after it sends tools/list_changed
// (or after [Server.Reverify]): a call never reaches a connection whose listed
// definition of the tool is not the one served, approved and not quarantined.
//
// A connection that failed (process crashed, stream ended, answer unreadable) or
// whose call timed out or was cancelled is closed and its process killed, never
// reused. New connections after consecutive failures wait out an exponential
// backoff; meanwhile calls that need one fail fast with [ErrServerRestarting].
// Nothing the upstream sends can crash the gateway: panics of the SDK on upstream
// data are turned into errors.
//
// An Server is safe for concurrent use. Close it to stop every child process.
type Server struct {
	cfg        ServerConfig
	opts       Options
	policy     *TransportPolicy
	log        *slog.Logger
	client     *mcp.Client
	httpClient *http.Client
	ownsHTTP   bool // httpClient's transport was made here: Close closes its idle connections

	slots chan struct{} // one token per connection in use
	done  chan struct{} // closed by Close

	mu          sync.Mutex
	closed      bool
	admitted    bool
	idle        []*upstreamConn
	live        map[*upstreamConn]struct{}
	sessions    map[*mcp.ClientSession]*upstreamConn // the live connections, by session
	failures    int
	retryAt     time.Time
	lastFailure string
	tools       []Tool
	problems    []ToolProblem

	discMu sync.Mutex // serializes discovery and Refresh

	workerOnce   sync.Once
	workerCancel context.CancelFunc
	rediscover   chan struct{} // a queued rediscovery (capacity 1)
	changed      chan struct{} // a queued OnToolsChanged (capacity 1)

	wg sync.WaitGroup // connection watchers and the worker

	rediscoveries atomic.Int64 // rediscoveries run after list_changed (for tests)
	verifications atomic.Int64 // connections verified (for tests)
	starts        atomic.Int64 // connections started (for tests)
	progressSeq   atomic.Int64 // numbers the progress tokens sent upstream
}

// upstreamConn is one client session to the server.
type upstreamConn struct {
	cs   *mcp.ClientSession
	proc *os.Process // nil for url servers
	pid  int

	// progressRead counts the progress notifications read from the connection, as
	// they are read; nil when the transport does not let them be counted (url
	// servers). progressHandled counts those the SDK has handed to the client's
	// handler (later, on a goroutine of its own).
	progressRead    *atomic.Int64
	progressHandled atomic.Int64
	// changedRead counts the tools/list_changed notifications read from the
	// connection, as they are read (command servers; nil for url servers): one read
	// unverifies the connection at once, before any answer read after it is handled.
	changedRead *atomic.Int64

	// Guarded by Server.mu.
	//
	// defs holds the definition hash of every tool the connection listed when it was
	// last verified (remote name -> hash); nil until then. The connection is verified
	// while gen and changedRead still have the values they had when that listing
	// began: a tools/list_changed (or Reverify) moves them, and a call never goes out
	// on a connection that is not verified (see [Server.Call]).
	defs             map[string]string
	gen, verifiedGen int64
	verifiedRead     int64
	busy             bool
	cancel           context.CancelFunc // of the call in flight
	progress         *progressRoute     // of the call in flight, when it asked for progress
	discarded        bool               // closed on purpose; its end is not a failure
	failCounted      bool
	dead             bool

	shutOnce sync.Once
}

// New checks cfg and opts and returns an Server for the server. It starts
// nothing: no process, no connection, no goroutine.
//
// Errors: an invalid cfg (see [ServerConfig.Validate]) or Policy (see
// [TransportPolicy.Validate]), a header that is not a valid HTTP header or that the
// MCP transport manages itself, a negative CallTimeout or backoff, or BackoffMin
// greater than BackoffMax.
func New(cfg ServerConfig, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	policy := opts.Policy
	if policy == nil {
		policy = &TransportPolicy{}
	}
	if err := policy.Validate(); err != nil {
		return nil, fmt.Errorf("server %q: transport policy: %w", cfg.Name, err)
	}
	if opts.CallTimeout < 0 || opts.BackoffMin < 0 || opts.BackoffMax < 0 {
		return nil, fmt.Errorf("server %q: call timeout and backoff must not be negative", cfg.Name)
	}
	if opts.BackoffMin == 0 {
		opts.BackoffMin = defaultBackoffMin
	}
	if opts.BackoffMax == 0 {
		opts.BackoffMax = max(defaultBackoffMax, opts.BackoffMin)
	}
	if opts.BackoffMin > opts.BackoffMax {
		return nil, fmt.Errorf("server %q: backoff min %s is greater than max %s", cfg.Name, opts.BackoffMin, opts.BackoffMax)
	}
	headers, err := upstreamHeaders(cfg)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(slog.String("server", cfg.Name))

	u := &Server{
		cfg:        cfg,
		opts:       opts,
		policy:     policy,
		log:        log,
		slots:      make(chan struct{}, policy.MaxConns()),
		done:       make(chan struct{}),
		live:       make(map[*upstreamConn]struct{}),
		sessions:   make(map[*mcp.ClientSession]*upstreamConn),
		rediscover: make(chan struct{}, 1),
		changed:    make(chan struct{}, 1),
	}
	if cfg.Transport() == "url" {
		u.httpClient = upstreamHTTPClient(opts.HTTPClient, headers, policy.MaxConns())
		u.ownsHTTP = opts.HTTPClient == nil
	}
	u.client = mcp.NewClient(&mcp.Implementation{Name: gatewayClientName, Version: gatewayClientVersion}, &mcp.ClientOptions{
		Logger: log,
		// Nothing the gateway cannot route: no roots, no sampling, no elicitation.
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			if req != nil {
				u.unverify(req.Session)
			}
			u.queue(u.rediscover)
		},
		ProgressNotificationHandler: u.onProgress,
	})
	return u, nil
}

// Name returns the server's name.
func (u *Server) Name() string { return u.cfg.Name }

// managedHeaders are set by the MCP transport itself; a configured value could break
// or hijack the session.
var managedHeaders = []string{"Accept", "Content-Type", "Content-Length", "Host", "Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Connection", "Transfer-Encoding"}

func upstreamHeaders(cfg ServerConfig) (http.Header, error) {
	if len(cfg.Headers) == 0 {
		return nil, nil
	}
	h := make(http.Header, len(cfg.Headers))
	for k, v := range cfg.Headers {
		if k == "" || strings.IndexFunc(k, func(r rune) bool {
			return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r)
		}) >= 0 {
			return nil, fmt.Errorf("server %q: header name %q is not a valid HTTP header name", cfg.Name, k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("server %q: the value of header %q holds a line break or NUL", cfg.Name, k)
		}
		ck := textproto.CanonicalMIMEHeaderKey(k)
		if slices.Contains(managedHeaders, ck) {
			return nil, fmt.Errorf("server %q: header %q is managed by the MCP transport and cannot be configured", cfg.Name, k)
		}
		h.Set(ck, v)
	}
	return h, nil
}

// upstreamHTTPClient returns a copy of base (or a default client) that refuses
// redirects and adds headers to every request.
func upstreamHTTPClient(base *http.Client, headers http.Header, conns int) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	} else {
		c.Transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   conns + 1,
			ForceAttemptHTTP2:     true,
		}
	}
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("redirect to %s refused: an upstream MCP server is reached only at its configured URL", req.URL.Redacted())
	}
	if len(headers) > 0 {
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = &headerRoundTripper{next: next, headers: headers}
	}
	return &c
}

// headerRoundTripper adds the server's configured headers to every request.
type headerRoundTripper struct {
	next    http.RoundTripper
	headers http.Header
}

func (t *headerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		r.Header[k] = slices.Clone(v)
	}
	return t.next.RoundTrip(r)
}

// CloseIdleConnections passes the request on, so http.Client.CloseIdleConnections
// reaches the transport.
func (t *headerRoundTripper) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Discover admits the server through the transport policy (before any process
// starts or connection opens), connects, lists every tool (following pagination
// cursors), checks each, pins each, and returns them.
//
// A transport denial returns the *[DeniedError] (its event already emitted) and
// nothing else happens. Without a pin store Discover refuses before admission. Tools
// refused individually (missing, non-object or uncompilable input schema, invalid or
// duplicate name) are returned in problems; the rest are returned in tools, the
// quarantined ones flagged. The result becomes [Server.Tools]. After a successful
// Discover, a tools/list_changed from the upstream re-runs discovery in the
// background.
func (u *Server) Discover(ctx context.Context) (tools []Tool, problems []ToolProblem, err error) {
	if u.isClosed() {
		return nil, nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	if u.opts.Pins == nil {
		return nil, nil, fmt.Errorf("server %q: no pin store: tool definitions cannot be pinned, so no tool is discovered", u.cfg.Name)
	}
	if err := u.policy.Admit(ctx, u.cfg, u.opts.Sink); err != nil {
		return nil, nil, err
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	u.admitted = true
	u.mu.Unlock()
	u.startWorker()
	// The caller builds what it serves from the result: no OnToolsChanged.
	tools, problems, _, err = u.discover(ctx)
	return tools, problems, err
}

// Tools returns the tools of the last successful discovery (a copy; the Tool
// definitions are shared and must not be modified). Quarantined tools are included,
// flagged.
func (u *Server) Tools() []Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.tools)
}

// Problems returns the tools refused by the last successful discovery (a copy).
func (u *Server) Problems() []ToolProblem {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.problems)
}

// Refresh re-reads the pin of every discovered tool, so an approval (or a reset)
// made by an operator in another process takes effect without a rediscovery: a
// quarantined tool whose pin now matches is served again, and a served tool whose
// pin no longer matches is quarantined. When that changes anything, OnToolsChanged
// is called (on the Server's goroutine). A pin that cannot be read quarantines its
// tool and is reported in the joined error.
func (u *Server) Refresh(ctx context.Context) error {
	u.discMu.Lock()
	defer u.discMu.Unlock()
	if u.opts.Pins == nil {
		return fmt.Errorf("server %q: no pin store", u.cfg.Name)
	}
	tools := u.Tools()
	changed := false
	var errs []error
	for i := range tools {
		q, err := pin.Check(ctx, u.opts.Pins, u.opts.Sink, tools[i].Name, tools[i].Hash, tools[i].def)
		if err != nil {
			errs = append(errs, err)
		}
		if q != tools[i].Quarantined {
			tools[i].Quarantined = q
			changed = true
		}
	}
	if changed {
		u.mu.Lock()
		u.tools = tools
		u.mu.Unlock()
		u.queue(u.changed)
	}
	return errors.Join(errs...)
}

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
	// (for a url server, those the SDK handles within a short wait after the answer)
	// or ctx has ended. Nil means no progress is asked for.
	Progress func(ctx context.Context, p *mcp.ProgressNotificationParams)
	// BeforeSend, when set, is called once the call holds a verified connection, right
	// before the request is sent; an error aborts the call unsent (the error returned
	// wraps it and [ErrNotSent]). The gateway writes the call's audit intent here.
	BeforeSend func(ctx context.Context) error
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
	closed, admitted := u.closed, u.admitted
	var tool *Tool
	for i := range u.tools {
		if u.tools[i].Remote == remote {
			t := u.tools[i]
			tool = &t
			break
		}
	}
	u.mu.Unlock()
	switch {
	case closed:
		return nil, false, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	case !admitted:
		return nil, false, fmt.Errorf("server %q: not discovered: call Discover first", u.cfg.Name)
	case tool == nil:
		return nil, false, fmt.Errorf("server %q offers no tool %q", u.cfg.Name, remote)
	case tool.Quarantined:
		return nil, false, &pin.QuarantinedError{Tool: tool.Name}
	}
	arguments, err := callArguments(args)
	if err != nil {
		return nil, false, fmt.Errorf("tool %q: %w", tool.Name, err)
	}

	c, err := u.acquireVerified(ctx, remote)
	if err != nil {
		return nil, false, err
	}
	if opts != nil && opts.BeforeSend != nil {
		if err := opts.BeforeSend(ctx); err != nil {
			u.release(c, true)
			return nil, false, fmt.Errorf("server %q: tool %q not sent: %w", u.cfg.Name, remote, err)
		}
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if u.opts.CallTimeout > 0 {
		var cancelTimeout context.CancelFunc
		callCtx, cancelTimeout = context.WithTimeout(callCtx, u.opts.CallTimeout)
		defer cancelTimeout()
	}
	params := &mcp.CallToolParams{Name: remote, Arguments: arguments}
	var route *progressRoute
	if opts != nil && opts.Progress != nil {
		route = u.openProgress(callCtx, c, opts.Progress)
		params.SetProgressToken(route.token)
	}
	u.mu.Lock()
	c.cancel = cancel
	c.progress = route
	u.mu.Unlock()

	res, err := sdkGuard(func() (*mcp.CallToolResult, error) {
		return c.cs.CallTool(callCtx, params)
	})
	if route != nil {
		u.closeProgress(ctx, c, route, err == nil || upstreamAnswered(err))
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
		return nil, true, fmt.Errorf("server %q: tool %q: %w", u.cfg.Name, remote, err)
	case u.isClosed():
		u.release(c, false)
		return nil, true, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	case ctx.Err() != nil:
		u.release(c, false)
		return nil, true, fmt.Errorf("server %q: tool %q: %w", u.cfg.Name, remote, ctx.Err())
	case callCtx.Err() != nil:
		u.release(c, false)
		return nil, true, fmt.Errorf("server %q: tool %q did not answer within %s: %w", u.cfg.Name, remote, u.opts.CallTimeout, context.DeadlineExceeded)
	default:
		u.failed(c, err.Error())
		u.release(c, false)
		return nil, true, fmt.Errorf("server %q: the call of %q failed on the connection, which is closed (a new one is started on the next call): %w", u.cfg.Name, remote, err)
	}
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

// acquireVerified returns a connection for a call of remote on which the tool's
// definition is the one served, approved and not quarantined: a connection not
// verified since it started (or since its tools/list_changed, or a Reverify) lists
// its tools and has every pin checked first, and one that listed a different
// definition than the one served (its process may still run an older one) is closed
// and another taken. Errors: those of acquire and of the listing, a
// *[pin.QuarantinedError] when the listing quarantined the tool, an error when the
// server no longer offers it or when MaxConns+1 connections in a row disagree.
func (u *Server) acquireVerified(ctx context.Context, remote string) (*upstreamConn, error) {
	for attempt := 0; ; attempt++ {
		c, err := u.acquire(ctx)
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
		u.mu.Lock()
		var tool *Tool
		for i := range u.tools {
			if u.tools[i].Remote == remote {
				tool = &u.tools[i]
				break
			}
		}
		var served, listed string
		quarantined := false
		if tool != nil {
			served, quarantined = tool.Hash, tool.Quarantined
			listed = c.defs[remote]
		}
		name := u.cfg.ToolPrefix() + remote
		u.mu.Unlock()
		switch {
		case tool == nil:
			u.release(c, true)
			return nil, fmt.Errorf("server %q no longer offers tool %q", u.cfg.Name, remote)
		case quarantined:
			u.release(c, true)
			return nil, &pin.QuarantinedError{Tool: name}
		case listed == served:
			return c, nil
		case attempt >= cap(u.slots):
			u.release(c, false)
			return nil, fmt.Errorf("server %q: %d connections in a row listed another definition of %q than the one served", u.cfg.Name, attempt+1, remote)
		}
		u.log.Info("closing a connection that listed another definition of the tool than the one served", slog.Int("pid", c.pid), slog.String("tool", name))
		u.release(c, false)
	}
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

// Close closes every connection, kills child processes that do not exit (idle
// children get a graceful close: stdin closed, then SIGTERM, then SIGKILL; children
// serving a call are killed at once, and the call fails), waits until every child is
// reaped and every goroutine of the Server has ended, and stops rediscovery.
// Close is idempotent; later uses of the Server fail with [ErrClosed].
func (u *Server) Close() error {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		u.wg.Wait()
		return nil
	}
	u.closed = true
	close(u.done)
	conns := make([]*upstreamConn, 0, len(u.live))
	for c := range u.live {
		conns = append(conns, c)
		c.discarded = true
		if c.busy && c.cancel != nil {
			c.cancel()
		}
	}
	busy := make(map[*upstreamConn]bool, len(conns))
	for _, c := range conns {
		busy[c] = c.busy
	}
	u.idle = nil
	stopWorker := u.workerCancel
	u.mu.Unlock()
	if stopWorker != nil {
		stopWorker()
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { u.shutdown(c, !busy[c]) })
	}
	wg.Wait()
	u.wg.Wait()
	if u.ownsHTTP {
		u.httpClient.CloseIdleConnections()
	}
	return nil
}

func (u *Server) isClosed() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closed
}

// queue sends a non-blocking signal on ch (capacity 1): at most one is pending.
func (u *Server) queue(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// startWorker starts the goroutine that runs rediscoveries and OnToolsChanged.
func (u *Server) startWorker() {
	u.workerOnce.Do(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.closed {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		u.workerCancel = cancel
		u.wg.Add(1)
		go u.work(ctx)
	})
}

func (u *Server) work(ctx context.Context) {
	defer u.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.rediscover:
			u.rediscoveries.Add(1)
			dctx, cancel := context.WithTimeout(ctx, rediscoverTimeout)
			_, problems, _, err := u.discover(dctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					u.log.Warn("rediscovery after tools/list_changed failed; the previous tools stay", slog.String("error", err.Error()))
				}
				continue
			}
			for _, p := range problems {
				u.log.Warn("tool refused", slog.String("tool", p.Tool), slog.String("problem", p.Problem))
			}
			u.toolsChanged(ctx)
		case <-u.changed:
			u.toolsChanged(ctx)
		}
	}
}

// toolsChanged calls OnToolsChanged, containing a panic.
func (u *Server) toolsChanged(ctx context.Context) {
	f := u.opts.OnToolsChanged
	if f == nil || ctx.Err() != nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			u.log.Error("OnToolsChanged panicked", slog.String("panic", fmt.Sprint(r)))
		}
	}()
	f(u.cfg.Name)
}

// discover verifies one connection (preferring one a tools/list_changed or
// Reverify unverified) and makes its tools the served set.
// It reports whether that changed what is served; the caller says so (OnToolsChanged)
// when it should.
func (u *Server) discover(ctx context.Context) ([]Tool, []ToolProblem, bool, error) {
	c, err := u.acquireUnverifiedFirst(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	tools, problems, changed, err := u.verify(ctx, c)
	if err != nil {
		return nil, nil, false, err // verify released c
	}
	u.release(c, true)
	return tools, problems, changed, nil
}

// verify lists every tool on c (which the caller holds), checks and pins each, makes
// the result the served set and records on c the definitions it listed, so that calls
// may go out on c. It reports whether the served set changed (names, definitions or
// quarantine). On error c has been released (closed when the connection failed) and
// nothing changed.
func (u *Server) verify(ctx context.Context, c *upstreamConn) ([]Tool, []ToolProblem, bool, error) {
	u.discMu.Lock()
	defer u.discMu.Unlock()
	u.mu.Lock()
	gen := c.gen
	u.mu.Unlock()
	var read int64
	if c.changedRead != nil {
		read = c.changedRead.Load()
	}
	listed, err := u.listOn(ctx, c)
	if err != nil {
		return nil, nil, false, err
	}
	tools, problems := u.checkTools(ctx, listed)
	defs := make(map[string]string, len(tools))
	for _, t := range tools {
		defs[t.Remote] = t.Hash
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		u.release(c, false)
		return nil, nil, false, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	changed := !sameTools(u.tools, tools)
	u.tools, u.problems = tools, problems
	c.defs, c.verifiedGen, c.verifiedRead = defs, gen, read
	u.mu.Unlock()
	u.verifications.Add(1)
	return slices.Clone(tools), slices.Clone(problems), changed, nil
}

// sameTools reports whether a and b serve the same tools with the same definitions
// and quarantine flags.
func sameTools(a, b []Tool) bool {
	return slices.EqualFunc(a, b, func(x, y Tool) bool {
		return x.Name == y.Name && x.Hash == y.Hash && x.Quarantined == y.Quarantined
	})
}

// verifiedLocked reports whether c's definitions were listed since its last
// tools/list_changed (or Reverify). u.mu is held. For a command server a
// tools/list_changed counts from the moment it is read off the connection, ahead of
// any answer read after it; for a url server (whose stream cannot be wrapped), from
// the moment the SDK hands it to the client's handler.
func (u *Server) verifiedLocked(c *upstreamConn) bool {
	if c.defs == nil || c.gen != c.verifiedGen {
		return false
	}
	return c.changedRead == nil || c.changedRead.Load() == c.verifiedRead
}

// unverify marks the connection of session cs as needing a new listing before any
// call goes out on it (after its tools/list_changed).
func (u *Server) unverify(cs *mcp.ClientSession) {
	u.mu.Lock()
	if c := u.sessions[cs]; c != nil {
		c.gen++
	}
	u.mu.Unlock()
}

// Reverify re-checks the server's tool definitions now: every connection is marked
// unverified (none serves a call again before it has listed its tools and had every
// pin checked), and one is verified at once, making its tools the served set. The
// gateway calls it on a configuration reload (SIGHUP) for a server it keeps. An
// error (the server cannot be reached) leaves the connections unverified.
func (u *Server) Reverify(ctx context.Context) error {
	u.mu.Lock()
	admitted := u.admitted
	for c := range u.live {
		c.gen++
	}
	u.mu.Unlock()
	if !admitted {
		return fmt.Errorf("server %q: not discovered", u.cfg.Name)
	}
	_, _, changed, err := u.discover(ctx)
	if changed {
		u.queue(u.changed)
	}
	return err
}

// listOn lists every tool over c (which the caller holds), following cursors. On
// error c is released: kept when the upstream answered, closed otherwise.
func (u *Server) listOn(ctx context.Context, c *upstreamConn) ([]*mcp.Tool, error) {
	var (
		tools  []*mcp.Tool
		cursor string
		seen   = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == maxListPages {
			u.release(c, true)
			return nil, fmt.Errorf("server %q: tools/list did not end after %d pages", u.cfg.Name, maxListPages)
		}
		params := &mcp.ListToolsParams{Cursor: cursor}
		res, err := sdkGuard(func() (*mcp.ListToolsResult, error) { return c.cs.ListTools(ctx, params) })
		if err == nil && res == nil {
			err = errors.New("empty tools/list result")
		}
		if err != nil {
			switch {
			case upstreamAnswered(err):
				u.release(c, true)
			case ctx.Err() != nil || u.isClosed():
				u.release(c, false)
			default:
				u.failed(c, err.Error())
				u.release(c, false)
			}
			return nil, fmt.Errorf("server %q: listing tools: %w", u.cfg.Name, err)
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			u.release(c, true)
			return nil, fmt.Errorf("server %q: tools/list repeated the cursor %q", u.cfg.Name, res.NextCursor)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	u.noteSuccess()
	return tools, nil
}

// checkTools refuses the tools that cannot be served and pins the others.
func (u *Server) checkTools(ctx context.Context, listed []*mcp.Tool) ([]Tool, []ToolProblem) {
	prefix := u.cfg.ToolPrefix()
	count := make(map[string]int, len(listed))
	for _, t := range listed {
		if t != nil {
			count[t.Name]++
		}
	}
	reported := map[string]bool{}
	var (
		tools    []Tool
		problems []ToolProblem
	)
	for _, t := range listed {
		if t == nil {
			continue
		}
		name := prefix + t.Name
		refuse := func(problem string) {
			problems = append(problems, ToolProblem{Server: u.cfg.Name, Tool: name, Problem: problem})
		}
		if n := count[t.Name]; n > 1 {
			// Which definition would be the real one? Neither is served.
			if !reported[t.Name] {
				reported[t.Name] = true
				refuse(fmt.Sprintf("duplicate tool name: %q is listed %d times", t.Name, n))
			}
			continue
		}
		if t.Name == "" || !ValidToolName(name) {
			refuse(fmt.Sprintf("tool name %q is not a valid tool name (the governed name %q must be 1 to 128 letters, digits, '_', '.' or '-')", t.Name, name))
			continue
		}
		raw, problem := checkInputSchema(name, t.InputSchema)
		if problem != "" {
			refuse(problem)
			continue
		}
		hash, def, err := pin.Hash(t)
		if err != nil {
			refuse("definition cannot be hashed: " + err.Error())
			continue
		}
		q, err := pin.Check(ctx, u.opts.Pins, u.opts.Sink, name, hash, def)
		if err != nil {
			u.log.Error("tool definition pin could not be checked; the tool is quarantined", slog.String("tool", name), slog.String("error", err.Error()))
			refuse("definition pin could not be checked, so the tool is quarantined: " + err.Error())
		}
		tools = append(tools, Tool{
			Name:        name,
			Remote:      t.Name,
			Server:      u.cfg.Name,
			Tool:        t,
			InputSchema: raw,
			Hash:        hash,
			Quarantined: q,
			def:         def,
		})
	}
	return tools, problems
}

// checkInputSchema returns the input schema as JSON, or why it cannot be used.
func checkInputSchema(tool string, v any) (json.RawMessage, string) {
	if v == nil {
		return nil, "input schema is missing"
	}
	raw, err := marshalGuarded(v)
	if err != nil {
		return nil, "input schema cannot be encoded: " + err.Error()
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, "input schema is missing"
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, "input schema is not an object schema"
	}
	var typ string
	if t, ok := obj["type"]; !ok || json.Unmarshal(t, &typ) != nil || typ != "object" {
		return nil, "input schema is not an object schema"
	}
	if _, err := sdkGuard(func() (warden.ArgsValidator, error) { return schema.Compiler{}.CompileSchema(tool, raw) }); err != nil {
		return nil, "input schema does not compile: " + err.Error()
	}
	return json.RawMessage(raw), ""
}

// acquire returns a connection held exclusively by the caller: an idle one, or a new
// one when fewer than MaxConns exist. It waits for a free slot, bounded by ctx.
func (u *Server) acquire(ctx context.Context) (*upstreamConn, error) {
	return u.acquireFrom(ctx, false)
}

// acquireUnverifiedFirst is acquire preferring an idle connection that needs
// verifying.
func (u *Server) acquireUnverifiedFirst(ctx context.Context) (*upstreamConn, error) {
	return u.acquireFrom(ctx, true)
}

func (u *Server) acquireFrom(ctx context.Context, unverifiedFirst bool) (*upstreamConn, error) {
	select {
	case u.slots <- struct{}{}:
	case <-u.done:
		return nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("server %q: waiting for a free connection (all %d in use): %w", u.cfg.Name, cap(u.slots), ctx.Err())
	}
	c, err := u.take(ctx, unverifiedFirst)
	if err != nil {
		<-u.slots
		return nil, err
	}
	return c, nil
}

// take returns an idle connection or starts one; the caller holds a slot.
func (u *Server) take(ctx context.Context, unverifiedFirst bool) (*upstreamConn, error) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	if unverifiedFirst {
		for i, c := range u.idle {
			if !c.dead && !u.verifiedLocked(c) {
				u.idle = slices.Delete(u.idle, i, i+1)
				c.busy = true
				u.mu.Unlock()
				return c, nil
			}
		}
	}
	for len(u.idle) > 0 {
		c := u.idle[len(u.idle)-1]
		u.idle = u.idle[:len(u.idle)-1]
		if c.dead {
			continue // its watcher is cleaning it up
		}
		c.busy = true
		u.mu.Unlock()
		return c, nil
	}
	if wait := time.Until(u.retryAt); wait > 0 {
		why, at := u.lastFailure, u.retryAt
		u.mu.Unlock()
		return nil, fmt.Errorf("server %q: %w after a failure (%s); the next start is in %s (at %s)", u.cfg.Name, ErrServerRestarting, why, wait.Round(time.Millisecond), at.Format(time.RFC3339Nano))
	}
	u.wg.Add(1) // Close waits for a start in progress
	u.mu.Unlock()
	defer u.wg.Done()

	c, err := u.start(ctx)
	if err != nil {
		if ctx.Err() == nil {
			u.mu.Lock()
			u.noteFailureLocked("start failed: " + err.Error())
			u.mu.Unlock()
		}
		return nil, fmt.Errorf("server %q: starting: %w", u.cfg.Name, err)
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		u.shutdown(c, false)
		return nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	c.busy = true
	u.live[c] = struct{}{}
	u.sessions[c.cs] = c
	u.wg.Add(1)
	u.mu.Unlock()
	go u.watch(c)
	return c, nil
}

// release gives back the caller's slot, returning c to the idle set when healthy and
// closing it otherwise.
func (u *Server) release(c *upstreamConn, healthy bool) {
	u.mu.Lock()
	c.busy, c.cancel, c.progress = false, nil, nil
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
	u.retryAt = time.Now().Add(d)
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
func (u *Server) start(ctx context.Context) (*upstreamConn, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	u.starts.Add(1)
	var (
		transport mcp.Transport
		cmd       *exec.Cmd
		read      *atomic.Int64
		changed   *atomic.Int64
	)
	if u.cfg.Transport() == "url" {
		// Not wrapped: the SDK's streamable connection has unexported methods that a
		// wrapper would hide.
		transport = &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.httpClient}
	} else {
		cmd = exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Env = u.policy.ChildEnv(os.Environ(), u.cfg.Env)
		dieWithGateway(cmd)
		cmd.Dir = u.cfg.Dir
		cmd.Stderr = &stderrLines{log: u.log, cmd: cmd}
		cmd.WaitDelay = stderrWaitDelay
		read, changed = new(atomic.Int64), new(atomic.Int64)
		transport = &progressCounter{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}, read: read, changed: changed}
	}
	cs, err := sdkGuard(func() (*mcp.ClientSession, error) {
		return u.client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: upstreamProtocolVersion})
	})
	if err != nil {
		if cmd != nil && cmd.Process != nil {
			// The SDK closes a session whose handshake failed; make sure the child is
			// gone even when it panicked first.
			_ = cmd.Process.Kill()
		}
		return nil, err
	}
	c := &upstreamConn{cs: cs, progressRead: read, changedRead: changed}
	if cmd != nil {
		c.proc, c.pid = cmd.Process, cmd.Process.Pid
		u.log.Debug("upstream started", slog.Int("pid", c.pid))
	}
	return c, nil
}

// progressRoute takes the progress notifications of one call to its Progress hook:
// the SDK's handler hands them over without waiting, a goroutine of the call runs
// the hook.
type progressRoute struct {
	token string
	// The connection's counters when the route opened.
	readBase, handledBase int64

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

// settleProgress waits, at most progressSettleMax, until the SDK has handled the
// progress notifications the upstream sent before answering. The SDK delivers an
// answer as soon as it is read, but handles notifications on a goroutine of its own,
// so some read before the answer may not have been handled yet. For a command
// server every notification read is counted, so the wait ends when as many have been
// handled; for a url server it ends when none was handled for progressQuiet.
func (u *Server) settleProgress(c *upstreamConn, r *progressRoute) {
	deadline := time.Now().Add(progressSettleMax)
	handled := func() int64 { return c.progressHandled.Load() - r.handledBase }
	if c.progressRead != nil {
		want := c.progressRead.Load() - r.readBase
		for handled() < want {
			if time.Now().After(deadline) {
				u.log.Debug("progress notifications not handled in time after the answer", slog.Int("pid", c.pid), slog.Int64("read", want), slog.Int64("handled", handled()))
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
		return
	}
	for n := handled(); time.Now().Before(deadline); {
		time.Sleep(progressQuiet)
		m := handled()
		if m == n {
			return
		}
		n = m
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
	if c != nil {
		r = c.progress
	}
	u.mu.Unlock()
	pid := 0
	if c != nil {
		pid = c.pid
		// Counted once handed over: settleProgress waits for this.
		defer c.progressHandled.Add(1)
	}
	tok, ok := req.Params.ProgressToken.(string)
	switch {
	case r == nil:
		u.log.Debug("progress notification dropped: no call asking for progress is in flight on the connection", slog.Int("pid", pid))
	case !ok || tok != r.token:
		u.log.Debug("progress notification dropped: its token is not the call's", slog.Int("pid", pid))
	case !r.deliver(req.Params):
		u.log.Debug("progress notification dropped: the call has ended", slog.Int("pid", pid))
	}
}

// progressCounter wraps a command server's transport so that every progress
// notification is counted as it is read (see [Server.settleProgress]).
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
		switch req.Method {
		case "notifications/progress":
			c.read.Add(1)
		case "notifications/tools/list_changed":
			c.changed.Add(1)
		}
	}
	return msg, err
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

// stderrLines forwards a child's stderr to the logger line by line: lines longer
// than maxStderrLine are cut, and at most stderrLinesPerSecond lines a second are
// logged (the number dropped is logged when the next second starts).
type stderrLines struct {
	log *slog.Logger
	// cmd.Process is set by Start before the goroutine that calls Write starts.
	cmd *exec.Cmd

	// Used only by the exec package's copying goroutine.
	buf         []byte
	cut         bool
	windowStart time.Time
	inWindow    int
	dropped     int
}

func (w *stderrLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxStderrLine - len(w.buf); len(chunk) > room {
			chunk, w.cut = chunk[:max(room, 0)], true
		}
		w.buf = append(w.buf, chunk...)
		if i < 0 {
			break
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (w *stderrLines) emit() {
	line := strings.TrimRight(string(w.buf), "\r")
	cut := w.cut
	w.buf, w.cut = w.buf[:0], false
	now := time.Now()
	if now.Sub(w.windowStart) >= time.Second {
		if w.dropped > 0 {
			w.log.Warn("upstream stderr lines dropped", slog.Int("pid", w.cmd.Process.Pid), slog.Int("lines", w.dropped))
		}
		w.windowStart, w.inWindow, w.dropped = now, 0, 0
	}
	if w.inWindow >= stderrLinesPerSecond {
		w.dropped++
		return
	}
	w.inWindow++
	attrs := []slog.Attr{slog.Int("pid", w.cmd.Process.Pid), slog.String("line", line)}
	if cut {
		attrs = append(attrs, slog.Bool("truncated", true))
	}
	w.log.LogAttrs(context.Background(), slog.LevelInfo, "upstream stderr", attrs...)
}
