package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/eventstore"
	"github.com/wardenhq/warden/internal/mcptasks"
	"github.com/wardenhq/warden/upstream"
)

// front is one way clients reach the gateway: the stateful HTTP front (bearer
// tokens, one identity per token; the session-based protocol versions), the
// stateless HTTP front (the same identities; protocol 2026-07-28) or the stdio front
// (one configured identity). Each has its own SDK server holding every governed tool,
// prompt, resource and template; lists are filtered per caller.
type front struct {
	g      *Gateway
	kind   string // "http" or "stdio"
	server *mcp.Server
	// stdioSessions names each stdio connection's session (the transport has no
	// id), by *mcp.ServerSession.
	stdioSessions sync.Map
}

// Protocol versions the fronts speak: the session-based versions on the stateful
// HTTP front and on stdio, and 2026-07-28 (no sessions, no server-to-client
// requests: a person is asked by a multi-round-trip result) on the stateless HTTP
// front. MCPHandler routes each HTTP request by its Mcp-Protocol-Version header.
var (
	frontProtocolVersions     = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	statelessProtocolVersions = []string{statelessVersion}
)

// statelessVersion is the first protocol version without sessions.
const statelessVersion = "2026-07-28"

// Front kinds: the stateful HTTP front, the stdio front and the stateless HTTP front.
const (
	httpFront      = "http"
	stdioFront     = "stdio"
	statelessFront = "http-stateless"
)

// listTTL is the cache lifetime the gateway gives 2026-07-28 clients for what it
// lists and reads: views are per identity (cacheScope private) and follow policy
// reloads, so they are kept short.
const listTTL = 30 * time.Second

func (g *Gateway) newFront(kind, version string) *front {
	f := &front{g: g, kind: kind}
	versions := frontProtocolVersions
	var extensions map[string]any
	if kind == statelessFront {
		versions = statelessProtocolVersions
		extensions = map[string]any{mcptasks.Extension: map[string]any{}}
	}
	f.server = mcp.NewServer(&mcp.Implementation{Name: "warden-gateway", Title: "Warden gateway", Version: version}, &mcp.ServerOptions{
		Instructions: "Tools served through Warden. Every call is checked against a policy; a refused call returns a tool error that says why. Some calls wait for a person to approve them.",
		PageSize:     1000,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Completions: &mcp.CompletionCapabilities{},
			Extensions:  extensions,
		},
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return g.complete(ctx, f, req)
		},
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return g.subscribe(ctx, f, req)
		},
		UnsubscribeHandler:        g.unsubscribe,
		SupportedProtocolVersions: versions,
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.CacheScope, c.TTLMs = "private", int(listTTL/time.Millisecond)
		},
		GetSessionID: func() string { return newID("mcp") },
	})
	f.server.AddReceivingMiddleware(f.filterList, f.hideCalls)
	f.server.AddSendingMiddleware(f.onlySubscribed)
	return f
}

// unknownTool is the error of a tools/call naming a tool this caller cannot see. It is
// the error the SDK itself gives for a name no server tool has, built here for both
// cases, so a hidden tool (outside the caller's role, or quarantined) answers exactly
// like one that does not exist: nothing confirms that it exists, nothing names a role.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// visible reports whether the caller cl may see the tool name: it is served, not
// quarantined, and the caller's role policy may allow it ([policy.Policy.IsAllowed]).
// When it is not, why says why (for the audit log only; "" for a name nobody serves).
func visible(st *gatewayState, cl Client, name string) (ok bool, why string) {
	gt, served := st.tools[name]
	view := st.views[cl.Role]
	switch {
	case !served || view == nil:
		return false, ""
	case gt.tool.Quarantined:
		return false, quarantinedReason
	case !view.pol.IsAllowed(name):
		return false, fmt.Sprintf("tool hidden from the caller: not allowed to role %q", cl.Role)
	}
	return true, ""
}

// hideCalls answers a tools/call of a tool the caller cannot see (see [visible]) with
// [unknownTool], before the tool's handler runs; a served tool that is hidden is
// audited as refused. A caller that cannot be identified (its token was removed by a
// reload) gets the same refusal whatever tool it names, so it learns nothing about
// which tools exist.
func (f *front) hideCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		st := f.g.state.Load()
		cl, err := f.identifyRequest(st, req)
		if err != nil {
			return textResult(err.Error(), true), nil
		}
		name := call.Params.Name
		if ok, why := visible(st, cl, name); !ok {
			if why != "" {
				id := warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}
				f.g.refuse(ctx, st, name, id, f.sessionOf(call.Session, cl), call.Params.Arguments, warden.StageLookup, why)
			}
			return nil, unknownTool(name)
		}
		return next(ctx, method, req)
	}
}

// install adds (or replaces) one governed tool on this front.
func (f *front) install(t upstream.Tool) {
	def := &mcp.Tool{
		Name:         t.Name,
		Title:        t.Tool.Title,
		Description:  t.Tool.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: t.Tool.OutputSchema,
		Annotations:  t.Tool.Annotations,
	}
	name := t.Name
	f.server.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.g.callTool(ctx, f, name, req)
	})
}

// filterList keeps, in a tools/list result, only the tools this caller may see:
// tools the caller's role policy may allow that are not quarantined, and none at all
// in a halted session.
func (f *front) filterList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch method {
		case "prompts/list", "resources/list", "resources/templates/list":
			st := f.g.state.Load()
			cl, err := f.identifyRequest(st, req)
			if err != nil {
				return nil, err
			}
			ss, _ := req.GetSession().(*mcp.ServerSession)
			_, halted := f.g.haltedText(f, ss, cl)
			return filterCatalogList(ctx, st, cl, halted, res), nil
		case "tools/list":
		default:
			return res, err
		}
		list, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return nil, errors.New("tools/list: unexpected result")
		}
		st := f.g.state.Load()
		cl, err := f.identifyRequest(st, req)
		if err != nil {
			return nil, err
		}
		kept := make([]*mcp.Tool, 0, len(list.Tools))
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if _, halted := f.g.haltedText(f, ss, cl); halted {
			// A halted session may call nothing, so it is offered nothing.
			list = &mcp.ListToolsResult{}
		}
		for _, t := range list.Tools {
			if ok, _ := visible(st, cl, t.Name); ok {
				kept = append(kept, t)
			}
		}
		out := *list
		out.Tools = kept
		return &out, nil
	}
}

// identify returns the client a tools/call comes from.
func (f *front) identify(st *gatewayState, req *mcp.CallToolRequest) (Client, error) {
	return f.identifyRequest(st, req)
}

func (f *front) identifyRequest(st *gatewayState, req mcp.Request) (Client, error) {
	if f.kind == stdioFront {
		return st.cfg.Stdio, nil
	}
	var info *auth.TokenInfo
	if extra := req.GetExtra(); extra != nil {
		info = extra.TokenInfo
	}
	if info == nil {
		return Client{}, errors.New("unauthenticated request")
	}
	if cl, ok := info.Extra[oauthClientKey].(Client); ok {
		// Mapped from a JWT that was verified, against the state then current, for
		// this very HTTP request.
		return cl, nil
	}
	hash, _ := info.Extra["token_hash"].(string)
	cl, ok := st.clients[hash]
	if !ok {
		// The token was valid when the session started but a reload removed it.
		return Client{}, errors.New("this client's token is no longer configured; reconnect with a current token")
	}
	return cl, nil
}

// sessionOf names the session of a request of cl in MCP session ss: the HTTP session
// id, or for a stdio connection an id made on its first request. A request without a
// session (which the SDK does not produce) shares one fixed id, so a halt can never
// be escaped that way. On the stateless front (protocol 2026-07-28, no sessions) the
// session is the principal's: "principal:<tenant>/<principal>", so a halt there stops
// every later request of that principal, on that front and in its HTTP sessions (see
// haltedText), until the gateway restarts.
func (f *front) sessionOf(ss *mcp.ServerSession, cl Client) string {
	if f.kind == statelessFront {
		return principalSession(cl)
	}
	if ss == nil {
		return "mcp_nosession"
	}
	if f.kind == httpFront && ss.ID() != "" {
		return ss.ID()
	}
	id, _ := f.stdioSessions.LoadOrStore(ss, newID("stdio"))
	return id.(string)
}

// principalSession is the session of cl's requests on the stateless front.
func principalSession(cl Client) string {
	return "principal:" + cl.Tenant + "/" + cl.Principal
}

// haltedText reports whether a halt refuses the requests of cl in MCP session ss,
// with the text of the call that halted: a halt of that session, and on the HTTP
// fronts also a halt of cl's principal on the stateless front. The stateless front
// has no sessions, so a halt there halts the principal, and the principal's
// session-based connections (opened before or after it) are refused too: switching
// protocol versions does not lift it. A halt in a session halts that session only.
func (g *Gateway) haltedText(f *front, ss *mcp.ServerSession, cl Client) (string, bool) {
	if text, ok := g.halted.Load(f.sessionOf(ss, cl)); ok {
		return text.(string), true
	}
	if f.kind == httpFront && g.principalHalts.Load() {
		if text, ok := g.halted.Load(principalSession(cl)); ok {
			return text.(string), true
		}
	}
	return "", false
}

// canElicit reports whether the client of session ss declared elicitation.
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

func (g *Gateway) front(kind string) *front {
	for _, f := range g.fronts {
		if f.kind == kind {
			return f
		}
	}
	return nil
}

// replayLimits bound what the stateful HTTP front keeps of its streams for clients
// that resume them (see [eventstore.Limits]): the defaults, and streams are kept
// while idle at least as long as a call may take to answer (limits.call_timeout, and
// approvals.wait for a person), plus a minute for the client to come back, so that a
// call's result can still be resumed after a long call.
func replayLimits(cfg *File) eventstore.Limits {
	l := eventstore.DefaultLimits
	l.Idle = max(l.Idle, cfg.CallTimeout+cfg.ApprovalWait+time.Minute)
	return l
}

// MCPHandler returns the streamable HTTP handler of the MCP endpoint: bearer-token
// authentication (401 with a WWW-Authenticate challenge without a configured token),
// a request body limit, DNS
// rebinding and cross-origin protection, and idle session expiry.
//
// The stateful front (protocol 2025-11-25 and earlier) keeps the events of its SSE
// streams (bounded: see replayLimits), so a client whose connection dropped resumes
// a stream with a GET carrying Last-Event-ID, and gets what it missed, a call's
// result included. A stream is resumed only in its session, and a session only by
// the identity that opened it: its token (or for a JWT, its issuer and subject);
// any other gets 403. What a session's streams kept is dropped when it closes.
func (g *Gateway) MCPHandler() http.Handler {
	cfg := g.File()
	f, sf := g.front(httpFront), g.front(statelessFront)
	stateful := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.server }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      cfg.SessionIdle,
		MaxRequestBodyBytes: cfg.MaxRequestBytes,
		Logger:              g.log,
		EventStore:          g.replay,
	})
	// A 2026-07-28 request's call ends when its client goes away (the POST is the
	// whole request): the pipeline's wait ends, and an upstream call is cancelled.
	stateless := g.tasksHandler(cfg, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sf.server }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		MaxRequestBodyBytes:          cfg.MaxRequestBytes,
		Logger:                       g.log,
	}))
	// A request that names protocol 2026-07-28 or later goes to the stateless front;
	// anything else (an initialize, a session's requests) to the stateful one.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= statelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	// verify takes the identity from the request's context, where challenge put it.
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id, ok := r.Context().Value(identityKey{}).(identity)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		if id.jwt != nil {
			return &auth.TokenInfo{UserID: id.userID, Expiration: id.expiry, Extra: map[string]any{oauthClientKey: *id.jwt}}, nil
		}
		if _, ok := g.state.Load().clients[id.hash]; !ok {
			return nil, auth.ErrInvalidToken
		}
		// The SDK binds a session to the UserID of the request that opened it and
		// refuses the session's later requests (and its stream resumptions) from any
		// other: the token's hash, so two tokens of the same principal (in two
		// tenants, or with two roles) never share a session.
		return &auth.TokenInfo{
			UserID:     "token:" + id.hash,
			Expiration: time.Now().Add(24 * time.Hour),
			Extra:      map[string]any{"token_hash": id.hash},
		}, nil
	}
	authed := auth.RequireBearerToken(verify, nil)(h)
	// challenge answers a request without a valid bearer token itself (see
	// authenticate), with the WWW-Authenticate header of RFC 6750 and RFC 9728, and
	// hands the identity to verify in the request's context. Both fronts, stateful and
	// stateless, are behind it: every HTTP request is authenticated the same way.
	challenge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := g.authenticate(w, r)
		if !ok {
			return
		}
		authed.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
	})
	return http.NewCrossOriginProtection().Handler(challenge)
}

// HealthHandler answers /healthz (the process serves) and /readyz (every configured
// server was discovered and is not down, and the store can record calls: a probe
// write commits and the last audit write did not fail; 503 with the reasons
// otherwise).
func (g *Gateway) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		err := g.Ready()
		if err == nil {
			// A write, not a read: a full disk or a read-only database refuses every
			// call while reads still work.
			ctx, cancel := context.WithTimeout(r.Context(), readyWriteTimeout)
			err = g.opts.Store.CheckWrite(ctx)
			cancel()
			if err != nil {
				err = fmt.Errorf("store: cannot record calls: %w", err)
			}
		}
		body := map[string]any{"ready": err == nil}
		if err != nil {
			body["reason"] = err.Error()
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(body)
	})
	return mux
}

// ServeStdio serves the stdio front on one connection (for clients that start the
// gateway as a subprocess) until the client disconnects or ctx ends.
func (g *Gateway) ServeStdio(ctx context.Context, t mcp.Transport) error {
	return g.front(stdioFront).server.Run(ctx, t)
}

// readyWriteTimeout bounds /readyz's probe write; the store's own write timeout may be
// shorter.
const readyWriteTimeout = 5 * time.Second

// lasting returns ss when it is a session that outlives the request (nil on the
// stateless front, where each request has a session of its own): what is kept per
// session (a halt, fault memory) is forgotten when a lasting session ends, and kept
// per principal otherwise.
func (f *front) lasting(ss *mcp.ServerSession) *mcp.ServerSession {
	if f.kind == statelessFront {
		return nil
	}
	return ss
}

// mrtrOf returns, on the stateless front, what a request brings to a human decision
// by multi-round trip (see mrtrContext); nil on the other fronts, which never honour
// a requestState.
func (f *front) mrtrOf(state string, responses mcp.InputResponseMap, caps *mcp.ClientCapabilities) *mrtrContext {
	if f.kind != statelessFront {
		return nil
	}
	return &mrtrContext{state: state, responses: responses, canElicit: caps != nil && caps.Elicitation != nil}
}
