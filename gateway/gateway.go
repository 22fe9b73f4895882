package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/schema"
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

// Reload applies a new configuration: the policy is loaded, upstream servers whose
// configuration (or the transport policy) changed are admitted and discovered again,
// the tool definitions of the servers kept are listed and their pins checked again,
// and the new revision replaces the old one atomically. On any error the old revision
// stays in force and the error says why. Settings that need a restart (listen, path,
// ui) are reported in the log and otherwise ignored; the operators are the inbox's,
// which its owner updates (Inbox.SetOperators).
func (g *Gateway) Reload(ctx context.Context, cfg *File) error {
	pol, err := policy.LoadFile(cfg.Policy, nil)
	if err != nil {
		return err
	}
	// Every configured role must exist before anything is started for this revision.
	if _, err := policyViews(pol, cfg); err != nil {
		return err
	}
	g.mu.Lock()
	unlocked := false
	defer func() {
		if !unlocked {
			g.mu.Unlock()
		}
	}()
	if g.closed {
		return errors.New("mcp: gateway is closed")
	}
	if old := g.state.Load(); old != nil {
		// Operators are not the gateway's: the inbox takes the new list at once (see
		// warden serve); only the addresses need a restart.
		if old.cfg.Listen != cfg.Listen || old.cfg.Path != cfg.Path || old.cfg.UIPath != cfg.UIPath {
			g.log.Warn("listen, path and ui apply after a restart; the running values stay in force")
		}
	}
	// Upstreams: keep those whose configuration and transport policy are unchanged.
	next := map[string]*upstreamEntry{}
	var started, kept []*upstreamEntry
	for _, sc := range cfg.Servers {
		if e, ok := g.upstreams[sc.Name]; ok && reflect.DeepEqual(e.cfg, sc) && reflect.DeepEqual(e.tp, cfg.Transport) {
			next[sc.Name] = e
			if e.up != nil && e.done && e.err == nil {
				kept = append(kept, e)
			}
			continue
		}
		e := &upstreamEntry{cfg: sc, tp: cfg.Transport}
		tp := cfg.Transport
		up, err := upstream.New(sc, upstream.Options{
			Policy:         &tp,
			Pins:           g.opts.Store,
			Sink:           g.sink,
			Logger:         g.log.With("server", sc.Name),
			OnToolsChanged: func(string) { g.rebuild() },
			CallTimeout:    cfg.CallTimeout,
		})
		if err != nil {
			e.err, e.done = err, true
		} else {
			e.up = up
			started = append(started, e)
		}
		next[sc.Name] = e
	}
	g.discover(ctx, started)
	g.reverify(ctx, kept)
	st, err := g.build(cfg, pol, next)
	if err != nil {
		// Close outside g.mu: an upstream's worker may be waiting for it in rebuild
		// (after a tools/list_changed), and Close waits for that worker.
		g.mu.Unlock()
		unlocked = true
		for _, e := range started {
			e.up.Close()
		}
		return err
	}
	var stale []*upstreamEntry
	for name, e := range g.upstreams {
		if next[name] != e && e.up != nil {
			stale = append(stale, e)
		}
	}
	g.upstreams = next
	g.swap(st)
	for _, e := range stale {
		go e.up.Close()
	}
	g.log.Info("gateway configuration in force", "revision", pol.Revision(), "tools", len(st.names), "servers", len(next))
	return nil
}

// discover runs the first discovery of new upstreams concurrently. A server that
// fails is retried in the background until it succeeds or the gateway closes.
func (g *Gateway) discover(ctx context.Context, entries []*upstreamEntry) {
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tools, problems, err := e.up.Discover(ctx)
			for _, p := range problems {
				g.log.Warn("upstream tool refused", "server", p.Server, "tool", p.Tool, "problem", p.Problem)
			}
			e.err, e.done = err, true
			if err != nil {
				var denied *upstream.DeniedError
				if errors.As(err, &denied) {
					g.log.Error("upstream server denied by the transport policy; it serves nothing", "server", e.cfg.Name, "reason", denied.Message)
					return
				}
				g.log.Error("upstream server discovery failed; retrying in the background", "server", e.cfg.Name, "error", err)
				g.bgWG.Add(1)
				go g.retryDiscovery(e)
				return
			}
			g.log.Info("upstream server discovered", "server", e.cfg.Name, "tools", len(tools))
		}()
	}
	wg.Wait()
}

// reverifyTimeout bounds re-checking one server's definitions on a reload.
const reverifyTimeout = 30 * time.Second

// reverify re-checks, concurrently, the tool definitions of the upstreams a reload
// keeps ([upstream.Server.Reverify]), before the new revision is built from their tools: a
// definition changed since they were discovered is quarantined before the revision
// serves it. A server that cannot be reached keeps its tools, with every connection
// unverified (none serves a call before it has been listed again).
func (g *Gateway) reverify(ctx context.Context, entries []*upstreamEntry) {
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Go(func() {
			// Bounded: a hung server must not hold the reload (and g.mu) forever.
			ctx, cancel := context.WithTimeout(ctx, reverifyTimeout)
			defer cancel()
			if err := e.up.Reverify(ctx); err != nil {
				g.log.Warn("cannot re-check the tool definitions of a server on reload; each connection is checked before its next call", "server", e.cfg.Name, "error", err)
			}
		})
	}
	wg.Wait()
}

func (g *Gateway) retryDiscovery(e *upstreamEntry) {
	defer g.bgWG.Done()
	delay := time.Second
	for {
		select {
		case <-g.bg.Done():
			return
		case <-time.After(delay):
		}
		g.mu.Lock()
		current := !g.closed && g.upstreams[e.cfg.Name] == e
		g.mu.Unlock()
		if !current {
			return
		}
		ctx, cancel := context.WithTimeout(g.bg, time.Minute)
		_, _, err := e.up.Discover(ctx)
		cancel()
		g.mu.Lock()
		e.err = err
		g.mu.Unlock()
		if err == nil {
			g.log.Info("upstream server discovered after retry", "server", e.cfg.Name)
			g.rebuild()
			return
		}
		delay = min(delay*2, 30*time.Second)
	}
}

// pinRecheckInterval is how often, while a tool is quarantined, the gateway re-reads
// the pins of the servers holding one.
const pinRecheckInterval = 2 * time.Second

// recheckPins makes an operator's decision on a changed tool definition take effect
// without a restart: the approval is written to the store, usually by another process
// (`warden pins approve`), so while any served tool is quarantined the gateway
// re-reads its server's pins every pinRecheckInterval. [upstream.Server.Refresh] reports a
// change through OnToolsChanged, which rebuilds the served tool set.
func (g *Gateway) recheckPins() {
	defer g.bgWG.Done()
	tick := time.NewTicker(pinRecheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-g.bg.Done():
			return
		case <-tick.C:
		}
		var ups []*upstream.Server
		st := g.state.Load()
		for _, name := range st.names {
			gt := st.tools[name]
			if gt.tool.Quarantined && !slices.Contains(ups, gt.up) {
				ups = append(ups, gt.up)
			}
		}
		for _, up := range ups {
			ctx, cancel := context.WithTimeout(g.bg, 30*time.Second)
			if err := up.Refresh(ctx); err != nil && g.bg.Err() == nil {
				g.log.Warn("cannot re-read tool definition pins; the tools stay quarantined", "server", up.Name(), "error", err)
			}
			cancel()
		}
	}
}

// rebuild binds a new revision from the current configuration and the upstreams'
// current tools (after a tools/list_changed or an operator's pin approval).
func (g *Gateway) rebuild() {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.state.Load()
	if g.closed || old == nil {
		return
	}
	st, err := g.build(old.cfg, old.pol, g.upstreams)
	if err != nil {
		g.log.Error("cannot bind the changed tool set; the previous one stays in force", "error", err)
		return
	}
	g.swap(st)
}

// build binds one guard per role over the upstreams' tools.
func (g *Gateway) build(cfg *File, pol *policy.Policy, ups map[string]*upstreamEntry) (*gatewayState, error) {
	st := &gatewayState{cfg: cfg, pol: pol, tools: map[string]*governedTool{}, clients: map[string]Client{}}
	for _, c := range cfg.Clients {
		st.clients[c.TokenHash] = c
	}
	names := make([]string, 0, len(ups))
	for name := range ups {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e := ups[name]
		if e.up == nil {
			continue
		}
		for _, t := range e.up.Tools() {
			if prev, ok := st.tools[t.Name]; ok {
				g.log.Error("tool refused: its name is already served by another server", "tool", t.Name, "server", t.Server, "served_by", prev.tool.Server)
				continue
			}
			st.tools[t.Name] = &governedTool{up: e.up, tool: t}
			st.names = append(st.names, t.Name)
		}
	}
	sort.Strings(st.names)
	views, err := policyViews(pol, cfg)
	if err != nil {
		return nil, err
	}
	st.views = map[string]*roleView{}
	for role, p := range views {
		var reg warden.Registry
		for _, name := range st.names {
			if err := reg.Register(g.executable(st.tools[name])); err != nil {
				return nil, err
			}
		}
		guard, err := reg.Bind(warden.Config{
			Checkers: []warden.Checker{p},
			Schemas:  schema.Compiler{},
			Sinks:    []warden.Sink{g.sink},
			Journal:  g.journal,
			Revision: p.Revision(),
			CanPause: true,
		})
		if err == nil && len(guard.Problems()) > 0 {
			err = errors.Join(guard.Problems()...)
		}
		if err != nil {
			return nil, fmt.Errorf("binding the tools for role %q: %w", role, err)
		}
		st.views[role] = &roleView{pol: p, guard: guard}
	}
	return st, nil
}

// policyViews returns the policy as each configured identity's role sees it.
func policyViews(pol *policy.Policy, cfg *File) (map[string]*policy.Policy, error) {
	views := map[string]*policy.Policy{"": pol}
	roles := []string{cfg.Stdio.Role}
	for _, c := range cfg.Clients {
		roles = append(roles, c.Role)
	}
	for _, r := range roles {
		if _, ok := views[r]; ok {
			continue
		}
		p, err := pol.WithActiveRole(r)
		if err != nil {
			return nil, fmt.Errorf("role %q named in %s: %w", r, cfg.File, err)
		}
		views[r] = p
	}
	return views, nil
}

// swap puts st in force and brings the fronts' tool lists in line with it.
func (g *Gateway) swap(st *gatewayState) {
	g.state.Store(st)
	var gone []string
	for name := range g.installed {
		if _, ok := st.tools[name]; !ok {
			gone = append(gone, name)
		}
	}
	for _, f := range g.fronts {
		if len(gone) > 0 {
			f.server.RemoveTools(gone...)
		}
	}
	for _, name := range gone {
		delete(g.installed, name)
	}
	for _, name := range st.names {
		t := st.tools[name].tool
		key := t.Hash + fmt.Sprint(t.Quarantined)
		if g.installed[name] == key {
			continue
		}
		for _, f := range g.fronts {
			f.install(t)
		}
		g.installed[name] = key
	}
}

// executable wraps one upstream tool for the pipeline: the shared adapter
// ([upstream.Server.Executable]) with the gateway's per-call slot (progress forwarding, the
// deferred audit intent, the full result).
func (g *Gateway) executable(gt *governedTool) warden.Executable {
	return gt.up.ExecutableWith(gt.tool, slotHook)
}

// slotHook takes the call's options from the gateway's slot, and gives the slot the
// upstream's full result.
func slotHook(ctx context.Context) (*upstream.CallOptions, func(*mcp.CallToolResult, string)) {
	slot, _ := ctx.Value(slotKey{}).(*resultSlot)
	if slot == nil {
		return nil, nil
	}
	opts := &upstream.CallOptions{BeforeSend: slot.beginIntent}
	if slot.progress != nil {
		opts.Progress = slot.progress.forward
	}
	return opts, func(res *mcp.CallToolResult, text string) { slot.res, slot.text = res, text }
}

type slotKey struct{}

// resultSlot carries, past the pipeline, what a call's Run needs from the client's
// request (where its progress goes) and the upstream's full result, so content the
// model may see unchanged (images, structured content) is passed through as is.
type resultSlot struct {
	progress *progressForwarder // nil: the client asked for no progress
	res      *mcp.CallToolResult
	text     string

	// The audit intent the pipeline began (see [sendJournal]), written only once the
	// request is about to be sent. Used by the call's own goroutine only.
	journal  *audit.Journal
	call     warden.Call
	intent   warden.Outcome
	deferred bool // Begin was called: an intent waits to be written
	begun    bool // the intent is written, as ref
	ref      warden.JournalRef
}

// beginIntent writes the call's deferred audit intent: the upstream is about to
// receive the request ([upstream.CallOptions.BeforeSend]). An error refuses to send (fail
// closed: a call that cannot be recorded does not run).
func (s *resultSlot) beginIntent(ctx context.Context) error {
	if !s.deferred || s.begun {
		return nil
	}
	ref, err := s.journal.Begin(ctx, s.call, s.intent)
	if err != nil {
		return fmt.Errorf("the call could not be recorded in the audit log: %w", err)
	}
	s.ref, s.begun = ref, true
	return nil
}

// sendJournal is the gateway's journal. The pipeline begins a call's journal entry
// right before it runs the tool; for a governed MCP call the entry's intent is
// instead written when the request is about to be sent upstream (once a verified
// connection is held), so a call that never got that far (no connection, a start
// or verification failure, a quarantine found at the connection) is recorded as a
// call that never executed, and one whose intent is written is one the upstream may
// have received. Calls without the gateway's slot (none today) are journaled at once.
type sendJournal struct{ inner *audit.Journal }

var _ warden.Journal = sendJournal{}

func (j sendJournal) Begin(ctx context.Context, c warden.Call, o warden.Outcome) (warden.JournalRef, error) {
	slot, _ := ctx.Value(slotKey{}).(*resultSlot)
	if slot == nil {
		return j.inner.Begin(ctx, c, o)
	}
	slot.journal, slot.call, slot.intent, slot.deferred, slot.begun = j.inner, c, o, true, false
	return 0, nil
}

func (j sendJournal) End(ctx context.Context, ref warden.JournalRef, c warden.Call, o warden.Outcome) error {
	slot, _ := ctx.Value(slotKey{}).(*resultSlot)
	switch {
	case slot == nil:
		return j.inner.End(ctx, ref, c, o)
	case slot.begun:
		return j.inner.End(ctx, slot.ref, c, o)
	}
	// The request was never sent: no intent was written, and the call did not execute.
	o.Executed = false
	return j.inner.Record(ctx, c, o)
}

func (j sendJournal) Record(ctx context.Context, c warden.Call, o warden.Outcome) error {
	return j.inner.Record(ctx, c, o)
}

// progressSendTimeout bounds forwarding one progress notification to a client. A
// client that does not take one in time gets no more for that call, so a stalled
// client never holds an upstream connection for long.
const progressSendTimeout = 2 * time.Second

// progressForwarder passes an upstream's progress notifications for one call to the
// client that made it, with the client's progress token.
type progressForwarder struct {
	log     *slog.Logger
	tool    string
	session *mcp.ServerSession
	token   any
	failed  atomic.Bool
}

// forward is the call's [upstream.CallOptions.Progress] hook: progress, total and message go
// to the client unchanged, under its own token.
func (f *progressForwarder) forward(ctx context.Context, p *mcp.ProgressNotificationParams) {
	if f.failed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, progressSendTimeout)
	defer cancel()
	err := f.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: f.token,
		Progress:      p.Progress,
		Total:         p.Total,
		Message:       p.Message,
	})
	if err != nil {
		f.failed.Store(true)
		f.log.Debug("progress notification not delivered to the client; the rest of the call's are dropped", "tool", f.tool, "error", err)
	}
}

// callTool serves one tools/call through the pipeline.
func (g *Gateway) callTool(ctx context.Context, f *front, name string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	g.flightMu.Lock()
	if g.draining {
		g.flightMu.Unlock()
		return textResult("The gateway is shutting down; nothing ran. Call again once it is back.", true), nil
	}
	g.inflight.Add(1)
	g.flightMu.Unlock()
	defer g.inflight.Done()
	st := g.state.Load()
	cl, err := f.identify(st, req)
	if err != nil {
		return textResult(err.Error(), true), nil
	}
	session := f.sessionID(req)
	id := warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}
	if text, ok := g.halted.Load(session); ok {
		// Refused like every other refusal: the audit log shows each call the halted
		// session still tried.
		g.auditRefusal(ctx, st, name, id, session, req, warden.StageGate, haltedReason)
		return textResult(text.(string), true), nil
	}
	// hideCalls checked visibility against the revision it loaded; a reload since
	// may have hidden the tool. Refused the same way (fail closed).
	if ok, why := visible(st, cl, name); !ok {
		if why != "" {
			g.auditRefusal(ctx, st, name, id, session, req, warden.StageLookup, why)
		}
		return nil, unknownTool(name)
	}
	view := st.views[cl.Role]
	raw := json.RawMessage(req.Params.Arguments)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	args, err := warden.ParseArgs(raw)
	if err != nil {
		return textResult(fmt.Sprintf("Invalid arguments for %s: %v. Send the arguments as one JSON object.", name, err), true), nil
	}
	slot := &resultSlot{}
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		slot.progress = &progressForwarder{log: g.log, tool: name, session: req.Session, token: token}
	}
	ctx = context.WithValue(ctx, slotKey{}, slot)
	call := warden.Call{ID: newID("call"), Tool: name, Args: args, Identity: id, Session: session}
	if list, ok := g.faulted.Load(session); ok {
		call.Unauthorized = list.([]string)
	}
	out, err := view.guard.Call(ctx, call)
	defer g.noteFault(session, req, &out)
	if err == nil && out.Status == warden.StatusPending && out.Pending != nil {
		answer, text := g.decide(ctx, f, st, cl, session, out.Pending, req)
		if answer == nil {
			return textResult(text, true), nil
		}
		out, err = view.guard.ResumeAs(ctx, *out.Pending, answer, warden.Caller{Identity: id, Session: session, Unauthorized: call.Unauthorized})
	}
	var halt *warden.PolicyHaltError
	if errors.As(err, &halt) {
		text := out.ModelText
		if text == "" {
			text = halt.TellLLM
		}
		if _, already := g.halted.LoadOrStore(session, text); !already && req.Session != nil {
			// The halt lasts as long as the session; forget it once the session ends.
			go func(ss *mcp.ServerSession) {
				ss.Wait()
				g.halted.Delete(session)
			}(req.Session)
		}
		return textResult(text, true), nil
	}
	if err != nil || out.Status == warden.StatusPending {
		// Cancelled, refused by the resume, or a second question on one call (which
		// cannot be answered in the same call): never a success.
		text := out.ModelText
		if text == "" && err != nil {
			text = "The call did not run: " + err.Error()
		}
		return textResult(text, true), nil
	}
	if out.Executed && slot.res != nil && out.ModelText == slot.text && !slot.res.IsError {
		return slot.res, nil
	}
	return textResult(out.ModelText, out.IsError), nil
}

// Reasons of the refusals the gateway records itself, before the pipeline.
const (
	haltedReason      = "session halted: every call after a halt is refused"
	quarantinedReason = "tool definition changed since it was approved"
)

// noteFault remembers, for the rest of the session, a tool whose authorization faulted
// (a checker errored, panicked or timed out): later calls to it are refused without
// asking the checker again, as the fault text says. Calls without a session are not
// tracked: there is no run to remember it for.
func (g *Gateway) noteFault(session string, req *mcp.CallToolRequest, out *warden.Outcome) {
	name, ok := warden.UnauthorizedTarget(*out)
	if session == "" || !ok {
		return
	}
	g.faultMu.Lock()
	defer g.faultMu.Unlock()
	old, known := g.faulted.Load(session)
	var list []string
	if known {
		list = old.([]string)
	}
	if slices.Contains(list, name) {
		return
	}
	g.faulted.Store(session, append(slices.Clip(list), name))
	if !known && req.Session != nil {
		// Forget the session's faults once it ends.
		go func(ss *mcp.ServerSession) {
			ss.Wait()
			g.faulted.Delete(session)
		}(req.Session)
	}
}

// auditRefusal records a call the gateway refused before the pipeline (it never
// executed). A failure to record is logged; the call is refused either way.
func (g *Gateway) auditRefusal(ctx context.Context, st *gatewayState, name string, id warden.Identity, session string, req *mcp.CallToolRequest, stage warden.Stage, reason string) {
	rec := store.CallRecord{
		CallID: newID("call"), Session: session, Tool: name, Identity: id,
		Stage: stage, Reason: reason,
		Revision: st.pol.Revision(), Status: warden.StatusRefused,
	}
	if args, err := warden.ParseArgs(req.Params.Arguments); err == nil {
		rec.ArgsDigest = args.Digest()
		if !st.cfg.RedactArgs {
			rec.Args = args.AppendJSON(nil)
		}
	}
	if err := g.opts.Store.RecordCall(context.WithoutCancel(ctx), rec); err != nil {
		g.log.Error("cannot record a refused call", "tool", name, "error", err)
	}
}

// ApprovalBinding is the digest an operator's approval authorizes: the principal,
// the tool, the kind of question, the asking middleware and the exact arguments. An
// approval of one principal's call never authorizes another principal's identical
// call, nor the same arguments for a different tool.
func ApprovalBinding(principal string, p *warden.PendingDecision) string {
	h := sha256.New()
	for _, s := range []string{principal, p.Tool, string(p.Kind), p.Middleware, p.Digest} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// WaitingText is what the model reads when nobody decided within the wait.
func WaitingText(id, tool string) string {
	return fmt.Sprintf("Approval required: this call is waiting for an operator (approval id %s). "+
		"Nothing ran. Once it is approved, call %s again with exactly the same arguments and it will run; "+
		"different arguments need a new approval.", id, tool)
}

// decide obtains the answer to a pending question: an earlier approval of exactly
// this call, the client's user by elicitation (only when approvals.elicitation is
// allow and the caller's identity sets self_approve), or an operator within the wait. A nil
// answer means nobody decided; the text says what the model reads.
func (g *Gateway) decide(ctx context.Context, f *front, st *gatewayState, cl Client, session string, p *warden.PendingDecision, req *mcp.CallToolRequest) (warden.Answer, string) {
	binding := ApprovalBinding(cl.Principal, p)
	s := g.opts.Store
	if got, ok, err := s.ConsumeApproval(ctx, binding, session); err != nil {
		g.log.Error("approval store unavailable; the call is refused", "error", err)
		return nil, "The approval store is unavailable, so this call cannot be approved now. Nothing ran; try again later."
	} else if ok {
		return warden.Approved{By: got.DecidedBy, Note: got.Note, Digest: p.ApprovalDigest()}, ""
	}
	// Only an identity configured to approve its own asks is asked (fail closed: by
	// default every ask goes to an operator).
	if st.cfg.Elicitation && cl.SelfApprove && f.canElicit(req) {
		// A client that never answers must not hold the call (or a shutdown) forever:
		// the user gets as long as an operator would.
		ectx, cancel := context.WithTimeout(ctx, st.cfg.ApprovalWait)
		res, err := req.Session.Elicit(ectx, &mcp.ElicitParams{
			Message:         ElicitationMessage(p),
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		})
		cancel()
		switch {
		case err != nil:
			g.log.Warn("elicitation failed; asking an operator instead", "tool", p.Tool, "error", err)
		case res.Action == "accept":
			return warden.Approved{By: cl.Principal, Digest: p.ApprovalDigest()}, ""
		default:
			return warden.Declined{By: cl.Principal, Note: "the client's user chose " + res.Action}, ""
		}
	}
	pending, err := g.pendingFor(ctx, st, binding, session, p)
	if err != nil {
		g.log.Error("cannot store a pending decision; the call is refused", "error", err)
		return nil, "The approval store is unavailable, so this call cannot be approved now. Nothing ran; try again later."
	}
	wctx, cancel := context.WithTimeout(ctx, st.cfg.ApprovalWait)
	decided, err := s.WaitDecision(wctx, pending.ID)
	cancel()
	switch {
	case err == nil && decided.State == store.StateApproved:
		if got, ok, err := s.ConsumeApproval(ctx, binding, session); err == nil && ok {
			return warden.Approved{By: got.DecidedBy, Note: got.Note, Digest: p.ApprovalDigest()}, ""
		}
		return nil, WaitingText(pending.ID, p.Tool)
	case err == nil && decided.State == store.StateDeclined:
		return warden.Declined{By: decided.DecidedBy, Note: decided.Note}, ""
	case errors.Is(err, store.ErrExpired):
		return nil, fmt.Sprintf("Approval %s expired before anyone decided. Nothing ran.", pending.ID)
	case ctx.Err() != nil:
		return nil, "call cancelled: " + ctx.Err().Error()
	case err != nil && !errors.Is(err, context.DeadlineExceeded):
		g.log.Error("waiting for a decision failed", "id", pending.ID, "error", err)
	}
	return nil, WaitingText(pending.ID, p.Tool)
}

// pendingFor returns the undecided pending decision for this exact call in this
// session, creating it when there is none (a retry waits on the same item).
func (g *Gateway) pendingFor(ctx context.Context, st *gatewayState, binding, session string, p *warden.PendingDecision) (store.Pending, error) {
	s := g.opts.Store
	open, err := s.ListPending(ctx, store.PendingFilter{Session: session})
	if err != nil {
		return store.Pending{}, err
	}
	for _, q := range open {
		if q.Digest == binding {
			return q, nil
		}
	}
	decision, err := json.Marshal(p)
	if err != nil {
		return store.Pending{}, err
	}
	rec := store.Pending{
		Kind: p.Kind, Question: p.Question, Detail: p.Detail, Tool: p.Tool,
		Args: p.Args.AppendJSON(nil), Digest: binding, Identity: p.Identity, Session: session,
		Revision: p.Revision, Expires: time.Now().Add(st.cfg.ApprovalExpiry), Decision: decision,
	}
	if p.Evidence != nil {
		if rec.Evidence, err = json.Marshal(p.Evidence); err != nil {
			return store.Pending{}, err
		}
	}
	created, err := s.CreatePending(ctx, rec)
	if err == nil {
		g.log.Info("call waiting for an operator", "id", created.ID, "tool", p.Tool, "principal", p.Identity.Principal)
	}
	return created, err
}

// ElicitationMessage is the question put to a client's user: the question and the
// exact call that will run if they accept, with the full digest of its arguments.
// Every control, bidi and invisible character is written as an escape
// (internal/display: \u202e in the question and tool name, JSON escapes in the
// arguments), so the client cannot show the user a reordered or partly hidden call;
// the arguments are never cut.
func ElicitationMessage(p *warden.PendingDecision) string {
	args, _ := display.JSON(p.Args.AppendJSON(nil))
	var b strings.Builder
	b.WriteString(display.Line(p.Question).String())
	if p.Detail != "" {
		b.WriteString("\n\n" + display.Block(p.Detail).String())
	}
	fmt.Fprintf(&b, "\n\nTool: %s\nArguments:\n%s\n", display.Line(p.Tool).String(), args.String())
	if p.Digest != "" {
		fmt.Fprintf(&b, "Arguments digest: %s\n", display.Line(p.Digest).String())
	}
	b.WriteString("\nAccept to run exactly this call; decline to refuse it.")
	return b.String()
}

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

func textResult(text string, isErr bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

type multiSink []warden.Sink

func (m multiSink) Emit(ctx context.Context, e warden.Event) {
	for _, s := range m {
		s.Emit(ctx, e)
	}
}

// logSink writes the events an operator must notice (transport denials, changed
// tool definitions) to the log.
type logSink struct{ log *slog.Logger }

func (l logSink) Emit(_ context.Context, e warden.Event) {
	switch e.Name {
	case warden.EventTransportDenied, warden.EventDefinitionChanged:
		l.log.Warn(e.Name, "tool", e.Tool, "target", e.Target, "detail", e.Detail, "reason", e.Reason)
	}
}
