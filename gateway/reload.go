// Building the gateway's state from a file and swapping it in: reloads, discovery
// and its retries, re-verification of kept upstreams, and the pin re-check.

package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/schema"
	"github.com/wardenhq/warden/upstream"
)

// Reload applies a new configuration: the policy is loaded, upstream servers whose
// configuration (or the transport policy) changed are admitted and discovered again,
// the tool definitions of the servers kept are listed and their pins checked again,
// and the new revision replaces the old one atomically; then the sessions' resource
// subscriptions are judged again under it, and those it does not allow end (see
// rejudgeSubscriptions) before Reload returns. On any error the old revision
// stays in force and the error says why. Settings that need a restart (listen, path,
// ui, trusted_proxies) are reported in the log and otherwise ignored; the operators
// are the inbox's, which its owner updates (Inbox.SetOperators). A Reload before
// [Gateway.Start] is refused and changes nothing.
func (g *Gateway) Reload(ctx context.Context, cfg *File) error {
	pol, cand, err := loadPolicies(cfg)
	if err != nil {
		return err
	}
	// Every configured role must exist before anything is started for this revision.
	views, err := policyViews(pol, cfg)
	if err != nil {
		return err
	}
	if _, err := candidateViews(cand, views, cfg); err != nil {
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
	if !g.started {
		// Before Start the gateway serves nothing; Start puts the first revision in force.
		return errors.New("gateway: Reload before Start")
	}
	if old := g.state.Load(); old != nil {
		// Operators are not the gateway's: the inbox takes the new list at once (see
		// warden serve); only the addresses need a restart.
		if old.cfg.Listen != cfg.Listen || old.cfg.Path != cfg.Path || old.cfg.UIPath != cfg.UIPath ||
			!slices.Equal(old.cfg.TrustedProxies, cfg.TrustedProxies) {
			g.log.Warn("listen, path, ui and trusted_proxies apply after a restart; the running values stay in force")
		}
		if old.cfg.MetricsListen != cfg.MetricsListen {
			g.log.Warn("metrics.listen applies after a restart; the running value stays in force")
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
		up, err := upstream.New(sc, &upstream.Options{
			Policy:            &tp,
			Pins:              g.opts.Store,
			Sink:              g.sink,
			Logger:            g.log, // the server adds its name to every line
			OnToolsChanged:    func(string) { g.rebuild() },
			OnResourceUpdated: g.resourceUpdated,
			CallTimeout:       cfg.CallTimeout,
			CancelGrace:       cfg.CancelGrace,
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
	st, err := g.build(cfg, pol, cand, next)
	if err != nil {
		// Close outside g.mu: an upstream's worker may be waiting for it in rebuild
		// (after a tools/list_changed), and Close waits for that worker.
		g.mu.Unlock()
		unlocked = true
		for _, e := range started {
			e.up.Close(context.Background())
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
		go e.up.Close(context.Background())
	}
	attrs := []any{"revision", pol.Revision(), "tools", len(st.names), "servers", len(next)}
	if sh := pol.Shadow(); sh != nil {
		attrs = append(attrs, "shadow_items_revision", sh.Revision())
	}
	if cand != nil {
		attrs = append(attrs, "shadow_policy_revision", cand.Revision())
	}
	g.log.Info("gateway configuration in force", attrs...)
	// Outside g.mu: ending an upstream subscription is a request to the server.
	g.mu.Unlock()
	unlocked = true
	g.rejudgeSubscriptions(rejudgeReload)
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
			logStarting(g.log, e.cfg)
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
		for _, up := range st.cat.quarantinedServers() {
			if !slices.Contains(ups, up) {
				ups = append(ups, up)
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
// current tools (after a tools/list_changed or an operator's pin approval), then
// judges the sessions' resource subscriptions again under it.
func (g *Gateway) rebuild() {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.state.Load()
	if g.closed || old == nil {
		return
	}
	st, err := g.build(old.cfg, old.pol, old.cand, g.upstreams)
	if err != nil {
		g.log.Error("cannot bind the changed tool set; the previous one stays in force", "error", err)
		return
	}
	g.swap(st)
	// A template quarantined or gone ends its subscriptions. In the background: a
	// rebuild can run on an upstream's own worker, which must not wait for a request
	// to that upstream.
	g.bgWG.Add(1)
	go func() {
		defer g.bgWG.Done()
		g.rejudgeSubscriptions(rejudgeRebuild)
	}()
}

// build binds one guard per role over the upstreams' tools. cand is the candidate
// (shadow_policy), or nil.
func (g *Gateway) build(cfg *File, pol, cand *policy.Policy, ups map[string]*upstreamEntry) (*gatewayState, error) {
	st := &gatewayState{cfg: cfg, pol: pol, cand: cand, tools: map[string]*governedTool{}, clients: map[string]Client{}}
	var err error
	if st.oauth, err = g.oauthFor(cfg); err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
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
	st.cat = g.buildCatalog(ups, names)
	var servers []string // the servers whose requests during a call are judged
	for _, name := range names {
		if ups[name].up != nil {
			servers = append(servers, name)
		}
	}
	views, err := policyViews(pol, cfg)
	if err != nil {
		return nil, err
	}
	cviews, err := candidateViews(cand, views, cfg)
	if err != nil {
		return nil, err
	}
	st.views = map[string]*roleView{}
	// The journal of this revision: audit.redact_args applies from the revision that sets it.
	journal := sendJournal{g.journal.With(&audit.Options{RedactArgs: cfg.RedactArgs, Deferred: true, Logger: g.log, Observe: g.metrics.observeAudit}), g}
	for role, p := range views {
		var reg warden.Registry
		for _, name := range st.names {
			if err := reg.Register(g.executable(st.tools[name])); err != nil {
				return nil, err
			}
		}
		for _, x := range append(g.metrics.timeUpstreams(st.cat.executables()), askExecutables(servers)...) {
			if err := reg.Register(x); err != nil {
				return nil, err
			}
		}
		// The enforcing policy itself, or wrapped to note its checks for the shadows
		// (it answers the same: see shadowChecker).
		var checker warden.Checker = p
		if shadows := shadowsOf(p, cviews[role]); len(shadows) > 0 {
			checker = shadowChecker{Policy: p, shadows: shadows}
		}
		guard, err := reg.Bind(warden.Config{
			Checkers: []warden.Checker{checker},
			Schemas:  schema.Compiler{},
			Sinks:    []warden.Sink{g.sink},
			Journal:  journal,
			Revision: p.Revision(),
			CanPause: true,
			Logger:   g.log,
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
	if cfg.OAuth != nil {
		for _, is := range cfg.OAuth.Issuers {
			for _, cc := range is.Clients {
				roles = append(roles, cc.Client.Role)
			}
		}
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
	g.installCatalog(st.cat)
}

// logStarting says which upstream the gateway is about to start or reach, before the
// wait for it (a `go run` server is compiled first, which on a fresh machine takes
// minutes with nothing else printed). It names the command, or the URL's scheme and
// host, and never arguments, headers or a URL's path and query, which can hold
// secrets.
func logStarting(log *slog.Logger, c upstream.ServerConfig) {
	switch {
	case c.Command == "go" && len(c.Args) > 0 && c.Args[0] == "run":
		log.Info("starting upstream server (building it with go run first: the first start can take a minute or more)", "server", c.Name, "command", c.Command)
	case c.Command != "":
		log.Info("starting upstream server", "server", c.Name, "command", c.Command)
	default:
		where := "the configured URL"
		if u, err := url.Parse(c.URL); err == nil && u.Host != "" {
			where = u.Scheme + "://" + u.Host
		}
		log.Info("connecting to upstream server", "server", c.Name, "url", where)
	}
}
