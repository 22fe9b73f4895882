// The Gateway: its options, the state it serves from, building one, readiness and
// shutdown.

package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
)

// Options are what a Gateway needs besides its configuration.
type Options struct {
	// Store holds the audit log, pending decisions and tool pins. Required; the
	// caller opens and closes it.
	Store store.Store
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Sinks receive every event, in addition to the gateway's own EventLog.
	Sinks []warden.Sink
	// Version is reported to MCP clients.
	Version string
}

// Gateway serves the tools of admitted upstream MCP servers to MCP clients, every
// call governed by the pipeline: the caller's role selects the policy view, refusals
// are tool results, human decisions are asked by elicitation or stored for an
// operator, and everything is audited.
//
// A Gateway is safe for concurrent use. Configuration changes ([Gateway.Reload]) apply
// atomically to calls that start afterwards; calls in flight finish under the
// configuration they started with.
type Gateway struct {
	opts    Options
	log     *slog.Logger
	events  *EventLog
	sink    warden.Sink
	journal sendJournal

	mu        sync.Mutex // serializes reloads and rebuilds
	upstreams map[string]*upstreamEntry
	installed map[string]string // tool name -> definition hash, as installed on the fronts
	closed    bool

	state  atomic.Pointer[gatewayState]
	fronts []*front

	halted sync.Map // MCP session id -> halt text
	// faulted maps an MCP session to the tools whose authorization faulted in it
	// ([]string, replaced under faultMu, never edited, so a call may keep the one it
	// read): the fault text promises the model that this will not change during the
	// run, so they are refused for the rest of the session. Reading it takes no lock.
	faultMu sync.Mutex
	faulted sync.Map
	// flight counts calls in flight; once draining is set no call starts, so
	// Shutdown's wait cannot race a late Add.
	flightMu sync.Mutex
	draining bool
	inflight sync.WaitGroup
	ready    atomic.Bool

	// bg is the context of the gateway's background work (discovery retries, pin
	// re-checks), cancelled by Shutdown, which waits for bgWG.
	bg       context.Context
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup
}

type upstreamEntry struct {
	cfg  upstream.ServerConfig
	tp   upstream.TransportPolicy
	up   *upstream.Server
	err  error // the last discovery error, if the server serves nothing
	done bool  // the first discovery finished (successfully or not)
}

// gatewayState is one immutable revision of everything a call needs.
type gatewayState struct {
	cfg     *File
	pol     *policy.Policy
	views   map[string]*roleView // by role; "" is the policy's active role
	tools   map[string]*governedTool
	clients map[string]Client // by token hash
	names   []string          // served tool names, sorted
}

type roleView struct {
	pol   *policy.Policy
	guard *warden.Guard
}

type governedTool struct {
	up   *upstream.Server
	tool upstream.Tool
}

// New loads the policy, admits and discovers every upstream server, and binds
// the governed tools. A server that is denied or cannot be reached serves nothing and
// is reported in the log and by [Gateway.Ready]; the gateway still starts.
func New(ctx context.Context, cfg *File, opts Options) (*Gateway, error) {
	if opts.Store == nil {
		return nil, errors.New("mcp: a gateway needs a store for its audit log, approvals and pins")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{
		opts:      opts,
		log:       log,
		events:    NewEventLog(10000),
		upstreams: map[string]*upstreamEntry{},
		installed: map[string]string{},
	}
	g.bg, g.bgCancel = context.WithCancel(context.Background())
	g.journal = sendJournal{audit.NewJournal(opts.Store, &audit.Options{RedactArgs: cfg.RedactArgs})}
	g.sink = multiSink(append([]warden.Sink{g.events, logSink{log}}, opts.Sinks...))
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	for _, kind := range []string{"http", "stdio"} {
		g.fronts = append(g.fronts, g.newFront(kind, version))
	}
	if err := g.Reload(ctx, cfg); err != nil {
		g.Close()
		return nil, err
	}
	g.ready.Store(true)
	g.bgWG.Add(1)
	go g.recheckPins()
	return g, nil
}

// Events returns the gateway's in-memory event log.
func (g *Gateway) Events() *EventLog { return g.events }

// File returns the configuration in force.
func (g *Gateway) File() *File { return g.state.Load().cfg }

// Revision returns the revision of the policy in force (see [policy.Policy.Revision]).
func (g *Gateway) Revision() string { return g.state.Load().pol.Revision() }

var _ warden.Journal = sendJournal{}

// Ready reports whether the gateway has finished its first discovery and every
// configured server serves tools; the error lists what is missing.
func (g *Gateway) Ready() error {
	if !g.ready.Load() {
		return errors.New("starting")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var problems []string
	names := make([]string, 0, len(g.upstreams))
	for name := range g.upstreams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if e := g.upstreams[name]; e.err != nil {
			problems = append(problems, fmt.Sprintf("server %s: %v", name, e.err))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Close waits up to the context's deadline for calls in flight, then stops every
// upstream connection. It is safe to call more than once.
func (g *Gateway) Close() error {
	return g.Shutdown(context.Background())
}

// Shutdown is Close bounded by ctx: in-flight calls get until ctx ends to finish.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	ups := g.upstreams
	g.mu.Unlock()
	g.flightMu.Lock()
	g.draining = true
	g.flightMu.Unlock()
	done := make(chan struct{})
	go func() { g.inflight.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("calls still in flight at shutdown: %w", ctx.Err())
	}
	g.bgCancel()
	g.bgWG.Wait()
	var wg sync.WaitGroup
	for _, e := range ups {
		if e.up != nil {
			wg.Add(1)
			go func() { defer wg.Done(); e.up.Close() }()
		}
	}
	wg.Wait()
	return err
}
