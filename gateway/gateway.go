// The Gateway: its options, the state it serves from, building one, readiness and
// shutdown.

package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/internal/eventstore"
	"github.com/wardenhq/warden/internal/fanout"
	"github.com/wardenhq/warden/internal/mcptasks"
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
	// OAuthClient fetches the oauth issuers' discovery documents and keys (nil: a
	// client with a 10s timeout); OAuthNow is the clock their tokens are checked
	// against (nil: time.Now).
	OAuthClient *http.Client
	OAuthNow    func() time.Time
}

// Gateway serves the tools, prompts, resources and resource templates of admitted
// upstream MCP servers to MCP clients, every tools/call, prompts/get, resources/read
// and upstream sampling, elicitation or roots request governed by the pipeline: the
// caller's role selects the policy view, refusals are data the model reads, human
// decisions are asked by elicitation (by multi-round trip on protocol 2026-07-28) or
// stored for an operator, and everything is audited.
//
// A Gateway is safe for concurrent use. Configuration changes ([Gateway.Reload]) apply
// atomically to calls that start afterwards; calls in flight finish under the
// configuration they started with.
type Gateway struct {
	opts   Options
	log    *slog.Logger
	events *EventLog
	sink   warden.Sink

	mu        sync.Mutex // serializes reloads and rebuilds
	upstreams map[string]*upstreamEntry
	installed map[string]string // tool name -> definition hash, as installed on the fronts
	// What the fronts serve of the catalog, by prompt name, resource URI and URI
	// template (see installCatalog).
	installedPrompts, installedResources, installedTemplates map[string]string
	started                                                  bool
	closed                                                   bool

	subs     subscriptions // resource subscriptions of the fronts' sessions
	mrtrKeys mrtrKeys      // the requestState MAC key, read from the store

	state  atomic.Pointer[gatewayState]
	fronts []*front

	halted sync.Map // MCP session id -> halt text
	// principalHalts is set once any principal was halted on the stateless front, so
	// the stateful front's calls look up a principal's halt only when one may exist.
	principalHalts atomic.Bool
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

	// journal is the audit journal every revision's journal is made from (With), so
	// Close can wait for the deferred entries of all of them.
	journal *audit.Journal

	// bg is the context of the gateway's background work (discovery retries, pin
	// re-checks), cancelled by Shutdown, which waits for bgWG.
	bg       context.Context
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup

	head *headPublisher // publishes the audit chain's head (see head.go)

	metrics *metrics // the Prometheus registry and metrics (see metrics.go)

	// replay keeps the recent events of the stateful HTTP front's streams, so that a
	// client whose connection dropped resumes a stream with Last-Event-ID (see
	// replayLimits). An *eventstore.Store, which tests may see through a hook.
	replay replayStore

	// tasks serves the tasks extension on the stateless front (see tasks.go), made
	// by the first MCPHandler.
	tasksOnce sync.Once
	tasks     *mcptasks.Handler
}

// replayStore is what the gateway needs of its replay store.
type replayStore interface {
	mcp.EventStore
	Stats(sessionID ...string) eventstore.Stats
	Limits() eventstore.Limits
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
	cand    *policy.Policy       // shadow_policy, or nil
	views   map[string]*roleView // by role; "" is the policy's active role
	tools   map[string]*governedTool
	clients map[string]Client // by token hash
	names   []string          // served tool names, sorted
	cat     catalogState      // prompts, resources and resource templates
	oauth   *oauthState       // nil without an oauth section
}

type roleView struct {
	pol   *policy.Policy
	guard *warden.Guard
}

type governedTool struct {
	up   *upstream.Server
	tool upstream.Tool
}

// New checks file and opts and returns a Gateway for them. It does no I/O and starts
// nothing: [Gateway.Start] loads the policy, admits and discovers the upstream
// servers and starts the background work. Until Start has succeeded the gateway
// serves no tool and [Gateway.Ready] reports it is starting. A nil opts is the zero
// Options, which New refuses: a gateway needs a store.
func New(file *File, opts *Options) (*Gateway, error) {
	if file == nil {
		return nil, errors.New("gateway: no gateway file")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Store == nil {
		return nil, errors.New("gateway: a gateway needs a store for its audit log, approvals and pins")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{
		opts:      o,
		log:       log,
		events:    NewEventLog(10000),
		upstreams: map[string]*upstreamEntry{},
		installed: map[string]string{},

		installedPrompts:   map[string]string{},
		installedResources: map[string]string{},
		installedTemplates: map[string]string{},
		subs:               subscriptions{sessions: map[string]map[*mcp.ServerSession]subscriber{}, owner: map[string]*upstream.Server{}, watched: map[*mcp.ServerSession]bool{}},
	}
	g.metrics = newMetrics(g)
	g.replay = eventstore.New(replayLimits(file), nil)
	g.journal = audit.NewJournal(o.Store, &audit.Options{Deferred: true, Logger: log, Observe: g.metrics.observeAudit})
	g.head = newHeadPublisher(o.Store, g.File, log)
	g.bg, g.bgCancel = context.WithCancel(context.Background())
	g.sink = fanout.Sinks{Log: log, Sinks: append([]warden.Sink{g.events, logSink{log}, g.metrics}, o.Sinks...)}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	for _, kind := range []string{httpFront, stdioFront, statelessFront} {
		g.fronts = append(g.fronts, g.newFront(kind, version))
	}
	// Nothing is served before Start: no policy, no tool, no client.
	g.state.Store(&gatewayState{cfg: file, views: map[string]*roleView{}, tools: map[string]*governedTool{}, clients: map[string]Client{}})
	return g, nil
}

// Start loads the policy, admits and discovers every upstream server, binds the
// governed tools and starts the background re-check of pins. ctx bounds the first
// discovery. A server that is denied or cannot be reached serves nothing and is
// reported in the log and by [Gateway.Ready]; the gateway still starts. An error (the
// policy cannot be loaded, the gateway was started or closed already) leaves the
// gateway serving nothing; Close it.
func (g *Gateway) Start(ctx context.Context) error {
	g.mu.Lock()
	switch {
	case g.closed:
		g.mu.Unlock()
		return errors.New("gateway: Start after Close")
	case g.started:
		g.mu.Unlock()
		return errors.New("gateway: started twice")
	}
	g.started = true
	file := g.state.Load().cfg
	g.mu.Unlock()
	if err := g.Reload(ctx, file); err != nil {
		return err
	}
	// Under mu, so that a Close since the Reload either came first (and Start reports
	// it; Close has stopped what Reload started) or waits for the background work to
	// be counted before it waits for it.
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("gateway: closed while starting")
	}
	g.ready.Store(true)
	g.bgWG.Add(1)
	go g.recheckPins()
	interval := file.HeadInterval
	if interval == 0 {
		interval = defaultHeadInterval
	}
	g.bgWG.Go(func() { g.head.run(g.bg, interval) })
	g.bgWG.Go(func() { g.runStateSweep(g.bg, mrtrSweepInterval) })
	return nil
}

// Events returns the gateway's in-memory event log.
func (g *Gateway) Events() *EventLog { return g.events }

// File returns the configuration in force.
func (g *Gateway) File() *File { return g.state.Load().cfg }

// Revision returns the revision of the policy in force (see [policy.Policy.Revision]).
// Before Start it is "".
func (g *Gateway) Revision() string {
	if pol := g.state.Load().pol; pol != nil {
		return pol.Revision()
	}
	return ""
}

// ShadowRevision returns the revision of the shadow policy in force (shadow_policy),
// or "" when there is none.
func (g *Gateway) ShadowRevision() string {
	if cand := g.state.Load().cand; cand != nil {
		return cand.Revision()
	}
	return ""
}

var _ warden.Journal = sendJournal{}

// Ready reports whether the gateway has finished its first discovery and every
// configured server serves tools: it was discovered and is not down (its process
// ended and cannot be started again; see [upstream.Server.Health]). The error lists
// what is missing.
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
		e := g.upstreams[name]
		switch {
		case e.err != nil:
			problems = append(problems, fmt.Sprintf("server %s: %v", name, e.err))
		case e.up != nil:
			if err := e.up.Health(); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Close stops the gateway: no call starts any more, calls in flight get until ctx
// ends to finish (then Close returns an error wrapping ctx.Err()), the audit
// completions the journal deferred are waited for until they are durable or ctx ends,
// the background work ends, and every upstream server is stopped, each waited for
// until ctx ends. It is safe to call more than once; later calls return nil at once.
// The store is the caller's: close it after Close returns.
func (g *Gateway) Close(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	ups := g.upstreams
	started := g.started
	g.mu.Unlock()
	g.flightMu.Lock()
	g.draining = true
	g.flightMu.Unlock()
	if err := g.closeTasks(ctx); err != nil {
		g.log.Warn("gateway: calls carried as tasks did not end in time", "err", err)
	}
	done := make(chan struct{})
	go func() { g.inflight.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("calls still in flight at shutdown: %w", ctx.Err())
	}
	// The completions of the calls that finished are queued; wait for them to be durable
	// (a call whose completion is not would show as started, outcome unknown).
	if ferr := g.journal.Flush(ctx); ferr != nil {
		err = errors.Join(err, fmt.Errorf("the audit log's last completions: %w", ferr))
	}
	if started {
		g.head.publish(ctx) // the last head, so that a tail deleted after shutdown shows
	}
	g.bgCancel()
	g.bgWG.Wait()
	var wg sync.WaitGroup
	for _, e := range ups {
		if e.up != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if cerr := e.up.Close(ctx); cerr != nil {
					g.log.Warn("gateway: an upstream server did not stop in time", "server", e.cfg.Name, "err", cerr)
				}
			}()
		}
	}
	wg.Wait()
	return err
}
