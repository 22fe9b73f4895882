// Resource subscriptions of the fronts' sessions: judged like reads, audited, held
// upstream once per URI, re-judged on every reload, and their updates passed only to
// the sessions the gateway holds a subscription for.

package gateway

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
)

// Audit names of the subscription requests: the record of a resources/subscribe of
// a URI of server is "subscribe:resource:<server>" (an unsubscribe
// "unsubscribe:resource:<server>"), with the argument {"uri": ...} a read of it has.
const (
	subscribeToolPrefix   = "subscribe:"
	unsubscribeToolPrefix = "unsubscribe:"
)

// haltedSubscribeText is what a halted session's resources/subscribe is refused with.
const haltedSubscribeText = "This session is halted; nothing more is served in it."

// subscriptions tracks which MCP sessions of a front subscribed to which resource
// URIs, so the gateway holds one upstream subscription per URI while any session
// wants it and ends it with the last one (an unsubscribe, the session's end, or a
// reload whose policy no longer lets the session read it).
type subscriptions struct {
	// op serializes subscribing, releasing and re-judging, so that a subscribe never
	// counts on an upstream subscription a concurrent release of the last session is
	// ending, and none judged under a revision a reload replaced is added after the
	// reload re-judged the others.
	op       sync.Mutex
	mu       sync.Mutex
	sessions map[string]map[*mcp.ServerSession]subscriber // by URI
	owner    map[string]*upstream.Server                  // the server subscribed to, by URI
	watched  map[*mcp.ServerSession]bool                  // sessions whose end is awaited
}

// subscriber is who holds a session's subscription: the front and the identity it
// subscribed with.
type subscriber struct {
	f  *front
	cl Client
}

// holds reports whether the gateway holds a subscription of ss to uri.
func (s *subscriptions) holds(uri string, ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[uri][ss]
	return ok
}

// watchVerdict is the judgement of a session watching a URI (see judgeWatch).
type watchVerdict struct {
	up      *upstream.Server // the server serving the URI; nil when none does
	target  string           // "resource:<server>"; "" when nothing is recorded
	stage   warden.Stage     // the refusing stage, "" when allowed
	reason  string
	d       warden.Decision // the policy's decision, when decided
	decided bool
	err     error // the client's answer when refused; nil when allowed
}

// judgeWatch judges whether cl may watch uri in session ss under st, as a read of it
// would be judged: the URI routes to a server (see routeResource); the session is not
// halted; the role may read that server's resources; a URI read through a template is
// in normal form (see unnormalURI); and the policy's decision on reading it
// ("resource:<server>" with {"uri": uri}) is allow or ask (an ask is a person's
// decision on each read, which the subscription does not bypass: an update carries
// only the URI). A URI the caller may not read answers exactly like one nobody serves.
func (g *Gateway) judgeWatch(ctx context.Context, st *gatewayState, f *front, ss *mcp.ServerSession, cl Client, uri string) watchVerdict {
	up, quarantined, err := routeResource(st, uri, func(server string) bool { return mayRead(st, cl, server) })
	if err != nil {
		return watchVerdict{err: err}
	}
	if up == nil {
		v := watchVerdict{err: mcp.ResourceNotFoundError(uri)}
		if quarantined != "" {
			v.target, v.stage, v.reason = upstream.ResourceTarget(quarantined), warden.StageLookup, "resource template definition changed since it was approved"
		}
		return v
	}
	v := watchVerdict{up: up, target: upstream.ResourceTarget(up.Name())}
	if _, halted := g.haltedText(f, ss, cl); halted {
		v.stage, v.reason, v.err = warden.StageGate, haltedReason, refused(haltedSubscribeText)
		return v
	}
	if !mayRead(st, cl, up.Name()) {
		v.stage, v.reason, v.err = warden.StageLookup, fmt.Sprintf("resources hidden from the caller: not allowed to role %q", cl.Role), mcp.ResourceNotFoundError(uri)
		return v
	}
	if _, listed := st.cat.resources[uri]; !listed {
		if why := unnormalURI(uri); why != "" {
			v.stage, v.reason = warden.StageValidation, "resource URI not in normal form: "+why
			v.err = refused(fmt.Sprintf("The resource URI %s is not in normal form: %s. Nothing was subscribed.", uri, why))
			return v
		}
	}
	args, err := warden.ParseArgs(uriArgs(uri))
	if err != nil {
		v.stage, v.reason, v.err = warden.StageValidation, err.Error(), refused(err.Error())
		return v
	}
	v.d, v.decided = judge(ctx, st, cl, v.target, args), true
	if v.d.Effect != warden.Allow && v.d.Effect != warden.Ask {
		v.stage, v.reason, v.err = warden.StagePermission, v.d.Reason, mcp.ResourceNotFoundError(uri)
	}
	return v
}

// judge asks cl's role policy in st about a call of target with args, as the
// pipeline's permission pass does; a checker error is a fault denial.
func judge(ctx context.Context, st *gatewayState, cl Client, target string, args warden.Args) warden.Decision {
	view := st.views[cl.Role]
	if view == nil {
		return warden.Decision{Effect: warden.Deny, RuleID: "role.unknown", Rationale: fmt.Sprintf("role %q is not in the policy", cl.Role), Fault: true}
	}
	d, err := view.pol.Check(ctx, warden.Request{
		Capability: warden.CapToolCall,
		Actor:      cl.Principal,
		Target:     target,
		Args:       args,
		Identity:   warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal},
	})
	if err != nil {
		return warden.Decision{Effect: warden.Deny, RuleID: "check.error", Rationale: err.Error(), Fault: true}
	}
	return d
}

// watchRecord is the audit record of a subscription request judged v.
func watchRecord(prefix string, v watchVerdict, session string, cl Client) store.CallRecord {
	rec := store.CallRecord{
		Session: session, Tool: prefix + v.target, Identity: warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal},
		Stage: v.stage, Reason: v.reason, Status: warden.StatusRan, Executed: true,
		RuleID: v.d.RuleID, Rationale: v.d.Rationale,
	}
	if v.err != nil {
		rec.Status, rec.Executed = warden.StatusRefused, false
		if v.decided && v.stage == warden.StagePermission {
			rec.Effect = v.d.Effect.String()
		}
	}
	return rec
}

// subscribe serves a resources/subscribe: judged as a read of the URI would be (see
// judgeWatch) and recorded in the audit log as "subscribe:resource:<server>"
// (refused, or ran once the subscription is held), except for a URI no server
// serves, which a read does not record either.
func (g *Gateway) subscribe(ctx context.Context, f *front, req *mcp.SubscribeRequest) error {
	st := g.state.Load()
	req = listenSubscribe(ctx, req)
	cl, err := f.identifyRequest(st, req)
	if err != nil {
		return refused(err.Error())
	}
	uri := req.Params.URI
	s := &g.subs
	s.op.Lock()
	defer s.op.Unlock()
	// Judged under the revision in force now: a reload re-judges the subscriptions
	// held after it is in force, under s.op, so this one is judged either by the
	// reload or under the reload's revision.
	if now := g.state.Load(); now != st {
		st = now
		if cl, err = f.identifyRequest(st, req); err != nil {
			return refused(err.Error())
		}
	}
	session := f.sessionOf(req.Session, cl)
	v := g.judgeWatch(ctx, st, f, req.Session, cl, uri)
	if v.err != nil {
		if v.target != "" {
			g.record(ctx, st, watchRecord(subscribeToolPrefix, v, session, cl), uriArgs(uri))
		}
		return v.err
	}
	up := v.up
	s.mu.Lock()
	first := len(s.sessions[uri]) == 0
	s.mu.Unlock()
	if first {
		t0 := time.Now()
		if err := up.Subscribe(ctx, uri); err != nil {
			rec := watchRecord(subscribeToolPrefix, v, session, cl)
			rec.Status, rec.Stage, rec.Reason, rec.Duration = warden.StatusFailed, warden.StageExecute, "upstream subscribe failed: "+err.Error(), time.Since(t0)
			// Sent unless the server does not take subscriptions at all (or the request
			// may have been, when the error cannot tell).
			rec.Executed = !errors.Is(err, upstream.ErrNoSubscriptions) && !errors.Is(err, upstream.ErrNotSent)
			g.record(ctx, st, rec, uriArgs(uri))
			return refused("Subscribing failed: " + err.Error())
		}
	}
	s.mu.Lock()
	if s.sessions[uri] == nil {
		s.sessions[uri] = map[*mcp.ServerSession]subscriber{}
		s.owner[uri] = up
	}
	s.sessions[uri][req.Session] = subscriber{f: f, cl: cl}
	if ss := req.Session; ss != nil && !s.watched[ss] {
		s.watched[ss] = true
		go func() {
			ss.Wait()
			g.dropSession(ss)
		}()
	}
	s.mu.Unlock()
	g.record(ctx, st, watchRecord(subscribeToolPrefix, v, session, cl), uriArgs(uri))
	return nil
}

// unsubscribe serves a resources/unsubscribe. One that ends a subscription the
// session held is recorded as "unsubscribe:resource:<server>" (ran), for the identity
// that subscribed; one of a URI the session does not watch changes nothing and is
// not recorded.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	// The end of a 2026-07-28 subscriptions/listen unsubscribes in the listen's own
	// context, which has ended by then: the upstream unsubscribe and the record must
	// still be made.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsubscribeTimeout)
	defer cancel()
	s := &g.subs
	s.op.Lock()
	defer s.op.Unlock()
	sub, up, ok := g.releaseLocked(ctx, req.Params.URI, req.Session)
	if ok && up != nil {
		st := g.state.Load()
		v := watchVerdict{target: upstream.ResourceTarget(up.Name())}
		g.record(ctx, st, watchRecord(unsubscribeToolPrefix, v, sub.f.sessionOf(req.Session, sub.cl), sub.cl), uriArgs(req.Params.URI))
	}
	return nil
}

// unsubscribeTimeout bounds one unsubscribe's upstream request and record.
const unsubscribeTimeout = 30 * time.Second

// listenSubscribe returns req with the identity of the request it came in: a
// subscription of protocol 2026-07-28 comes inside subscriptions/listen, where the
// SDK subscribes each URI by a request of its own making that carries none, in the
// context of the listen request, which carries the token the front's bearer check
// verified for it. A request that carries its own is returned as it is.
func listenSubscribe(ctx context.Context, req *mcp.SubscribeRequest) *mcp.SubscribeRequest {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		return req
	}
	info := auth.TokenInfoFromContext(ctx)
	if info == nil {
		return req
	}
	r := *req
	r.Extra = &mcp.RequestExtra{TokenInfo: info}
	return &r
}

// releaseSubscription removes ss's subscription to uri, ending the upstream one
// when no session wants it any more.
func (g *Gateway) releaseSubscription(ctx context.Context, uri string, ss *mcp.ServerSession) {
	s := &g.subs
	s.op.Lock()
	defer s.op.Unlock()
	g.releaseLocked(ctx, uri, ss)
}

// releaseLocked is releaseSubscription with s.op held. It returns who held the
// subscription and the server subscribed to (ok false: ss held none to uri).
func (g *Gateway) releaseLocked(ctx context.Context, uri string, ss *mcp.ServerSession) (sub subscriber, up *upstream.Server, ok bool) {
	s := &g.subs
	s.mu.Lock()
	set := s.sessions[uri]
	sub, ok = set[ss]
	if !ok {
		s.mu.Unlock()
		return subscriber{}, nil, false
	}
	delete(set, ss)
	last := len(set) == 0
	up = s.owner[uri]
	if last {
		delete(s.sessions, uri)
		delete(s.owner, uri)
	}
	s.mu.Unlock()
	if last && up != nil {
		if err := up.Unsubscribe(ctx, uri); err != nil {
			g.log.Warn("cannot end an upstream resource subscription", "uri", uri, "error", err)
		}
	}
	return sub, up, true
}

// dropSession releases every subscription of an MCP session that ended.
func (g *Gateway) dropSession(ss *mcp.ServerSession) {
	s := &g.subs
	s.mu.Lock()
	delete(s.watched, ss)
	var uris []string
	for uri, set := range s.sessions {
		if _, ok := set[ss]; ok {
			uris = append(uris, uri)
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(g.bg, 10*time.Second)
	defer cancel()
	for _, uri := range uris {
		g.releaseSubscription(ctx, uri, ss)
	}
}

// errEnded marks a subscription a reload ends for a reason of its own.
var errEnded = errors.New("subscription ended")

// rejudgeTimeout bounds ending the upstream subscriptions a reload drops.
const rejudgeTimeout = 30 * time.Second

// rejudgeSubscriptions judges every subscription the sessions hold again under the
// revision in force (after a reload, or after a rebuild changed the served
// definitions: why says which, for the audit and the log), with the session's
// identity as that revision knows it (a token client's current entry; an OAuth
// client's mapping as verified when it subscribed, judged under the new policy), as
// a new resources/subscribe would be (see judgeWatch). A subscription the revision
// does not allow, or whose URI now routes to another server, is ended: the session
// gets no more updates of it (see onlySubscribed), the upstream subscription ends
// with the last session that wanted it, and the refusal is recorded in the audit log
// as "subscribe:resource:<server>", with the reason prefixed "re-judged after <why>: ".
// It returns how many it ended.
func (g *Gateway) rejudgeSubscriptions(why string) int {
	ctx, cancel := context.WithTimeout(g.bg, rejudgeTimeout)
	defer cancel()
	s := &g.subs
	s.op.Lock()
	defer s.op.Unlock()
	// The revision in force under s.op: of two reloads, the later one's (a
	// subscribe judges under the same one, see subscribe).
	st := g.state.Load()
	type held struct {
		uri   string
		ss    *mcp.ServerSession
		sub   subscriber
		owner *upstream.Server
	}
	var all []held
	s.mu.Lock()
	for uri, set := range s.sessions {
		for ss, sub := range set {
			all = append(all, held{uri: uri, ss: ss, sub: sub, owner: s.owner[uri]})
		}
	}
	s.mu.Unlock()
	if len(all) == 0 {
		return 0
	}
	sort.Slice(all, func(i, j int) bool { return all[i].uri < all[j].uri })
	dropped := 0
	for _, h := range all {
		cl, known := reidentify(st, h.sub.f, h.sub.cl)
		var v watchVerdict
		if known {
			v = g.judgeWatch(ctx, st, h.sub.f, h.ss, cl, h.uri)
			if v.err == nil && v.up != h.owner {
				v.stage, v.reason, v.err = warden.StageLookup, "the URI is served by another server now", errEnded
			}
		} else {
			cl = h.sub.cl
			v = watchVerdict{stage: warden.StageLookup, reason: "this client's token is no longer configured", err: errEnded}
		}
		if v.err == nil {
			continue
		}
		if v.target == "" && h.owner != nil {
			v.target = upstream.ResourceTarget(h.owner.Name())
		}
		switch {
		case v.reason != "":
		case v.d.Rationale != "":
			v.reason = v.d.Rationale
		default:
			v.reason = "not allowed by the policy"
		}
		dropped++
		v.reason = "re-judged after " + why + ": " + v.reason
		g.record(ctx, st, watchRecord(subscribeToolPrefix, v, h.sub.f.sessionOf(h.ss, cl), cl), uriArgs(h.uri))
		g.log.Debug("resource subscription ended", "uri", h.uri, "principal", cl.Principal, "reason", v.reason)
		g.releaseLocked(ctx, h.uri, h.ss)
	}
	g.log.Info("resource subscriptions re-judged after "+why, "held", len(all), "dropped", dropped)
	return dropped
}

// Why the subscriptions are judged again (see rejudgeSubscriptions).
const (
	rejudgeReload  = "a reload"
	rejudgeRebuild = "the served definitions changed"
)

// reidentify returns the identity of a session's subscriber cl under st: the stdio
// front's configured identity, a token client's current entry (known false when the
// reload removed its token), or an OAuth client as it was mapped.
func reidentify(st *gatewayState, f *front, cl Client) (Client, bool) {
	switch {
	case f.kind == stdioFront:
		return st.cfg.Stdio, true
	case cl.TokenHash != "":
		now, ok := st.clients[cl.TokenHash]
		return now, ok
	}
	return cl, true
}

// onlySubscribed is the fronts' sending middleware that passes a
// notifications/resources/updated only to a session the gateway holds a
// subscription of its URI for. The SDK keeps its own record of each session's
// subscriptions, which only the session's unsubscribe or end clears; a subscription
// the gateway ended (by a reload) is dropped here.
func (f *front) onlySubscribed(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "notifications/resources/updated" {
			return next(ctx, method, req)
		}
		p, _ := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if p == nil || !f.g.subs.holds(p.URI, ss) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// resourceUpdated passes an upstream's update of uri to the sessions that
// subscribed to it, when that server is the one the gateway subscribed to for uri
// (a server cannot announce updates of another server's resources).
func (g *Gateway) resourceUpdated(server, uri string) {
	g.subs.mu.Lock()
	up := g.subs.owner[uri]
	g.subs.mu.Unlock()
	if up == nil || up.Name() != server {
		g.log.Debug("resource update from a server that does not serve the URI; dropped", "server", server, "uri", uri)
		return
	}
	ctx, cancel := context.WithTimeout(g.bg, progressSendTimeout)
	defer cancel()
	for _, f := range g.fronts {
		_ = f.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}
