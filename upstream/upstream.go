// One upstream MCP server: a Server per configured server, admitted by the transport
// policy, discovered, pinned, and called through a bounded pool of connections. This
// file holds its options, its state, building one and closing it.

package upstream

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fanout"
	"github.com/wardenhq/warden/pin"
)

const (
	// gatewayClientName is the client implementation name declared to upstreams.
	gatewayClientName = "warden-gateway"
	// gatewayClientVersion is the client implementation version declared to upstreams.
	gatewayClientVersion = "1"

	defaultBackoffMin = 200 * time.Millisecond
	defaultBackoffMax = 30 * time.Second
	// defaultCancelGrace is Options.CancelGrace's default.
	defaultCancelGrace = 5 * time.Second
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
)

// ErrServerRestarting is wrapped by the error of a call that needs a new connection
// to an upstream server while the server is in restart backoff after a failure.
var ErrServerRestarting = errors.New("upstream server is restarting")

// ErrClosed is wrapped by the error of any use of a [Server] after Close.
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

// Options configure a [Server]. The zero value is usable and denies
// everything: no transport is admitted and, without Pins, nothing is discovered.
type Options struct {
	// Policy admits the server's transport; nil means the zero policy, which denies
	// every transport. It also gives the connection bound and the child environment.
	Policy *TransportPolicy
	// Pins stores the tool definition pins. Nil makes Discover refuse (fail closed):
	// a definition that cannot be pinned is not served.
	Pins pin.Store
	// Sink receives transport denials and definition changes; may be nil. A panic in
	// Sink is recovered and logged to Logger.
	Sink warden.Sink
	// Logger receives operational logs, including the child's stderr, each line with
	// the server's name under "server" (so Logger should not carry that key); nil
	// discards.
	Logger *slog.Logger
	// OnToolsChanged is called after a tools/list_changed notification from the
	// upstream has re-run discovery, and after Refresh changed what is served. It
	// runs on the Server's own goroutine: never concurrently for one Server, and
	// coalesced (a burst of notifications gives few calls). It must not call Close.
	OnToolsChanged func(server string)
	// OnResourceUpdated is called with the server's name and the URI for every
	// notifications/resources/updated of a URI subscribed with [Server.Subscribe]. It
	// runs on the SDK's goroutine for notifications and must return promptly.
	OnResourceUpdated func(server, uri string)
	// Now is the clock of the restart backoff (when the next start may be); nil
	// means time.Now. Tests set it to step past a backoff without waiting for it.
	Now func() time.Time
	// CallTimeout bounds one upstream tools/call once it holds a connection; 0 means
	// no bound beyond the caller's context. A call that passes it is cancelled and its
	// connection closed (the process killed): an upstream that does not answer in time
	// is not trusted with the next call.
	CallTimeout time.Duration
	// CancelGrace is how long a connection whose call the caller cancelled (its
	// context ended: the MCP client cancelled the request or went away) gets to show
	// it is still serving: the upstream is sent notifications/cancelled, and the
	// connection is kept for later calls when it answers a ping within CancelGrace,
	// closed (the process killed) otherwise. Zero means 5s.
	CancelGrace time.Duration
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
	// TaskSupport is the tool's execution.taskSupport as listed ("forbidden",
	// "optional" or "required"; protocol 2026-07-28's tasks extension), kept only
	// from a server that offers that extension; "" when not listed. When set it is
	// part of Hash (see [pin.HashWithTaskSupport]).
	TaskSupport string

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
// whose call timed out is closed and its process killed, never reused; one whose
// call its caller cancelled is kept when it still answers (see
// [Options.CancelGrace]). New connections after consecutive failures wait out an
// exponential backoff; meanwhile calls that need one fail fast with
// [ErrServerRestarting].
//
// Once discovered, a server whose last connection ended or failed is started again
// in the background (after the backoff), and its tools listed and checked anew, so
// what is served follows the process now running (OnToolsChanged is called when
// that changes anything). While its last start failed and no connection is live,
// the server is down: [Server.Health] says why, and [Server.Tools] is empty.
// Nothing the upstream sends can crash the gateway: panics of the SDK on upstream
// data are turned into errors.
//
// An Server is safe for concurrent use. Close it to stop every child process.
type Server struct {
	cfg    ServerConfig
	opts   Options
	policy *TransportPolicy
	log    *slog.Logger
	sink   fanout.Sinks // opts.Sink, its panics recovered and logged to log
	// clients are the MCP clients of the server's connections, one per client class
	// (what the connection declares it can route: sampling, elicitation, roots), made on
	// first use under mu. See clientFor.
	clients    [classCount]*mcp.Client
	httpClient *http.Client
	ownsHTTP   bool // httpClient's transport was made here: Close closes its idle connections

	slots chan struct{} // one token per connection in use
	done  chan struct{} // closed by Close

	mu          sync.Mutex
	closed      bool
	starting    int // connections being started, not yet live (see makeRoomLocked)
	admitted    bool
	idle        []*upstreamConn
	live        map[*upstreamConn]struct{}
	sessions    map[*mcp.ClientSession]*upstreamConn // the live connections, by session
	failures    int
	retryAt     time.Time
	lastFailure string
	startFailed bool        // the last start failed (down while no connection is live)
	discovered  bool        // a Discover succeeded: lost connections are restarted
	recovery    *time.Timer // the pending background restart, if any
	tools       []Tool
	problems    []ToolProblem
	// The catalog of the last successful discovery (see catalog.go).
	prompts         []Prompt
	resources       []Resource
	templates       []ResourceTemplate
	catalogProblems []CatalogProblem
	// caps are the capabilities the last verified connection's server declared.
	caps *mcp.ServerCapabilities
	// subs holds the resource subscriptions, by URI: the connection that sent
	// resources/subscribe (nil or dead: to send again, see renewSubscriptions).
	subs map[string]*upstreamConn

	// subMu serializes the changes of subscriptions that send a request (Subscribe,
	// Unsubscribe, resubscribe), so that one URI is subscribed on one connection.
	// It is taken after discMu (verify resubscribes) and never while acquiring a
	// connection; u.mu is taken under it.
	subMu sync.Mutex
	// acks are the subscription acknowledgements awaited at 2026-07-28 (see
	// subscribeOn).
	acks subAcks

	discMu sync.Mutex // serializes discovery and Refresh

	workerOnce   sync.Once
	workerCancel context.CancelFunc
	rediscover   chan struct{} // a queued rediscovery (capacity 1)
	recover      chan struct{} // a queued background restart (capacity 1)
	changed      chan struct{} // a queued OnToolsChanged (capacity 1)
	renew        chan struct{} // a queued renewal of lost subscriptions (capacity 1)

	wg sync.WaitGroup // connection watchers and the worker

	rediscoveries atomic.Int64 // rediscoveries run after list_changed (for tests)
	verifications atomic.Int64 // connections verified (for tests)
	starts        atomic.Int64 // connections started (for tests)
	progressSeq   atomic.Int64 // numbers the progress tokens sent upstream

	// taskKey signs the states of the upstream tasks the Server relays (see
	// sealTaskState); random, made by New.
	taskKey [32]byte
}

// upstreamConn is one client session to the server.
type upstreamConn struct {
	cs    *mcp.ClientSession
	class clientClass // what the connection declared it routes (see clientFor)
	proc  *os.Process // nil for url servers
	pid   int
	// seq numbers the connection among the Server's (from 1), so that a task's
	// state can name the command server process holding the task.
	seq int64
	// tap is the connection's side channel for the tasks extension (tasks_tap.go),
	// and tasks reports that the connection is of protocol 2026-07-28 or later and
	// its server offers the extension: the calls on it declare it.
	tap   *connTap
	tasks bool
	// logsPerRequest: the connection is of protocol 2026-07-28 or later and the
	// upstream offers logging, so each request asks for its log messages (every
	// level) in its _meta, where logging/setLevel no longer exists.
	logsPerRequest bool

	// progressRead counts the progress notifications read from the connection, as
	// they are read (for a url server, as the SDK reads its HTTP responses).
	// progressHandled counts those the SDK has handed to the client's handler (later,
	// on a goroutine of its own).
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
	log              *logRoute          // of the call in flight, when it takes log messages
	asks             *ClientRequests    // of the call in flight: who answers the upstream's requests
	asksCtx          context.Context    // of the call in flight: what asks run with (see answerContext)
	discarded        bool               // closed on purpose; its end is not a failure
	failCounted      bool
	dead             bool

	shutOnce sync.Once
}

// New checks cfg and opts and returns a Server for the server; a nil opts is the
// zero Options. It starts nothing: no process, no connection, no goroutine (the
// first [Server.Discover] or [Server.Call] starts a connection).
//
// Errors: an invalid cfg (see [ServerConfig.Validate]) or Policy (see
// [TransportPolicy.Validate]), a header that is not a valid HTTP header or that the
// MCP transport manages itself, a negative CallTimeout, CancelGrace or backoff, or BackoffMin
// greater than BackoffMax.
func New(cfg ServerConfig, o *Options) (*Server, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
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
	if opts.CallTimeout < 0 || opts.CancelGrace < 0 || opts.BackoffMin < 0 || opts.BackoffMax < 0 {
		return nil, fmt.Errorf("server %q: call timeout, cancel grace and backoff must not be negative", cfg.Name)
	}
	if opts.CancelGrace == 0 {
		opts.CancelGrace = defaultCancelGrace
	}
	if opts.BackoffMin == 0 {
		opts.BackoffMin = defaultBackoffMin
	}
	if opts.BackoffMax == 0 {
		opts.BackoffMax = max(defaultBackoffMax, opts.BackoffMin)
	}
	if opts.Now == nil {
		opts.Now = time.Now
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
		sink:       fanout.Sinks{Log: log, Sinks: []warden.Sink{opts.Sink}},
		slots:      make(chan struct{}, policy.MaxConns()),
		done:       make(chan struct{}),
		live:       make(map[*upstreamConn]struct{}),
		sessions:   make(map[*mcp.ClientSession]*upstreamConn),
		subs:       make(map[string]*upstreamConn),
		rediscover: make(chan struct{}, 1),
		recover:    make(chan struct{}, 1),
		changed:    make(chan struct{}, 1),
		renew:      make(chan struct{}, 1),
	}
	if _, err := rand.Read(u.taskKey[:]); err != nil {
		return nil, fmt.Errorf("server %q: making the task state key: %w", cfg.Name, err)
	}
	if cfg.Transport() == "url" {
		u.httpClient = upstreamHTTPClient(opts.HTTPClient, headers, policy.MaxConns())
		u.ownsHTTP = opts.HTTPClient == nil
	}
	return u, nil
}

// Name returns the server's name.
func (u *Server) Name() string { return u.cfg.Name }

// Close closes every connection, kills child processes that do not exit (idle
// children get a graceful close: stdin closed, then SIGTERM, then SIGKILL; children
// serving a call are killed at once, and the call fails), waits until every child is
// reaped and every goroutine of the Server has ended, and stops rediscovery.
// Close is idempotent; later uses of the Server fail with [ErrClosed].
//
// Close waits for all of that until ctx ends; then every child still running is
// sent SIGKILL, with its process group, before Close returns an error wrapping
// ctx.Err(), and the children are reaped in the background. A caller that exits
// right after Close (warden serve) leaves nothing it started behind.
func (u *Server) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { u.close(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		u.killLive()
		return fmt.Errorf("server %q: close: %w", u.cfg.Name, ctx.Err())
	}
}

// killLive sends SIGKILL to every child process of a live connection and to its
// process group, without waiting for them.
func (u *Server) killLive() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.live {
		if c.proc != nil {
			endGroup(c.pid)
			_ = c.proc.Kill() // an error means it has exited already
		}
	}
}

func (u *Server) close() {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		u.wg.Wait()
		return
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
	if u.recovery != nil {
		u.recovery.Stop()
	}
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
}

// now reads the clock of the restart backoff.
func (u *Server) now() time.Time { return u.opts.Now() }

func (u *Server) isClosed() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closed
}
