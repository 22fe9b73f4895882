// Requests an upstream sends its client (the gateway) during a call: sampling,
// elicitation and roots, answered by whoever made the call, on connections that
// declared exactly what that caller can answer.

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol 2026-07-28 on, but the session-based versions the gateway speaks still carry them, and a gateway must route what its clients and upstreams use.

package upstream

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientRequests answer the requests an upstream sends its client while one call is
// in flight on the connection: server-to-client requests on the session-based
// protocol line, and the input requests of an input_required round from 2026-07-28
// on (the Server fulfils those with these functions and retries the call, at most
// 10 rounds, see fulfilRounds; an answer that fails ends the call with that error,
// since an input response cannot carry an error back). A nil field means the call's client cannot answer
// that kind: the connection the call goes out on does not declare it, so the
// upstream should not ask (and is refused if it does). The functions run on the
// SDK's goroutine for the request, with a context that carries the values of the
// call's context (as [CallOptions.Progress] and [CallOptions.Log] get it) and ends
// when the upstream's request ends or the call does.
type ClientRequests struct {
	// Sampling answers sampling/createMessage.
	Sampling func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// Elicitation answers elicitation/create.
	Elicitation func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// Roots answers roots/list (and a roots/list input request): the call's
	// client's roots. Nothing else answers it: the SDK's own root list of the
	// Server's clients is never used (see answerRoots).
	Roots func(ctx context.Context) (*mcp.ListRootsResult, error)
}

// clientClass is the set of client capabilities a connection declares.
type clientClass uint8

const (
	classSampling clientClass = 1 << iota
	classElicitation
	classRoots
	// classRelay connections pass an upstream's input_required rounds to the caller
	// ([CallOptions.Relay]) instead of answering them.
	classRelay
	classCount = 1 << iota // number of classes
)

// class returns the capabilities r can answer (0 for a nil r).
func (r *ClientRequests) class() clientClass {
	var c clientClass
	if r == nil {
		return c
	}
	if r.Sampling != nil {
		c |= classSampling
	}
	if r.Elicitation != nil {
		c |= classElicitation
	}
	if r.Roots != nil {
		c |= classRoots
	}
	return c
}

// clientFor returns the MCP client of class's connections, made on first use: it
// declares sampling, elicitation and roots only when class has them (roots without
// listChanged: the gateway has no list of its own to announce changes of). Every
// roots/list the upstream sends, and every roots/list input request of a round it
// answers input_required (fulfilRounds, in place of the SDK's own fulfilment, which
// would answer roots from the client's static list), goes to the call in flight's
// ClientRequests.Roots, and is refused when there is none.
func (u *Server) clientFor(class clientClass) *mcp.Client {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.clients[class]; c != nil {
		return c
	}
	opts := &mcp.ClientOptions{
		Logger: u.log,
		// Only what the class can route (an empty value: the SDK's default declares
		// roots).
		Capabilities: &mcp.ClientCapabilities{},
		// The Server fulfils input_required rounds itself (fulfilRounds) or passes
		// them to the caller (classRelay); the SDK's fulfilment would answer a
		// roots/list input request from the client's static root list.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			if req != nil {
				u.unverify(req.Session)
			}
			u.queue(u.rediscover)
		},
		// A changed prompt or resource list is re-listed like a changed tool list: the
		// connection serves nothing until it has listed everything again.
		PromptListChangedHandler: func(_ context.Context, req *mcp.PromptListChangedRequest) {
			if req != nil {
				u.unverify(req.Session)
			}
			u.queue(u.rediscover)
		},
		ResourceListChangedHandler: func(_ context.Context, req *mcp.ResourceListChangedRequest) {
			if req != nil {
				u.unverify(req.Session)
			}
			u.queue(u.rediscover)
		},
		ProgressNotificationHandler: u.onProgress,
		ResourceUpdatedHandler:      u.onResourceUpdated,
	}
	if class&classSampling != 0 {
		opts.Capabilities.Sampling = &mcp.SamplingCapabilities{}
		opts.CreateMessageHandler = u.onCreateMessage
	}
	if class&classElicitation != 0 {
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		opts.ElicitationHandler = u.onElicit
	}
	if class&classRoots != 0 {
		opts.Capabilities.RootsV2 = &mcp.RootCapabilities{}
	}
	u.routeLogs(opts)
	c := mcp.NewClient(&mcp.Implementation{Name: gatewayClientName, Version: gatewayClientVersion}, opts)
	// answer is the client's handling of a request the upstream sends it, roots/list
	// answered by answerRoots: what fulfilRounds answers an input request with.
	var answer mcp.MethodHandler
	c.AddReceivingMiddleware(u.watchAcks, func(next mcp.MethodHandler) mcp.MethodHandler {
		answer = u.answerRoots(next)
		return answer
	})
	if class&classRelay != 0 {
		// The caller answers the rounds (on its retry), never this client.
		c.AddSendingMiddleware(uncached, declareTasks)
	} else {
		c.AddSendingMiddleware(uncached, declareTasks, fulfilRounds(answer))
	}
	u.clients[class] = c
	return c
}

// uncached keeps the SDK's client-side list and read cache (SEP-2549, used on
// sessions of protocol 2026-07-28 and later) empty: it sets the ttlMs of every
// cacheable result to 0 before the SDK stores it, and the SDK never serves an entry
// whose ttlMs is 0. What the gateway lists is what it verifies against the pins, so
// a definition must always come from the upstream, never from a cache the upstream's
// ttlMs filled; the gateway gives its own clients its own ttlMs.
func uncached(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		var c *mcp.Cacheable
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			if r != nil {
				c = &r.Cacheable
			}
		case *mcp.ListPromptsResult:
			if r != nil {
				c = &r.Cacheable
			}
		case *mcp.ListResourcesResult:
			if r != nil {
				c = &r.Cacheable
			}
		case *mcp.ListResourceTemplatesResult:
			if r != nil {
				c = &r.Cacheable
			}
		case *mcp.ReadResourceResult:
			if r != nil {
				c = &r.Cacheable
			}
		}
		if c != nil {
			c.TTLMs = 0
		}
		return res, nil
	}
}

// asksOf returns the ClientRequests of the call in flight on the connection of cs,
// and that call's context.
func (u *Server) asksOf(cs *mcp.ClientSession) (*ClientRequests, context.Context) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.sessions[cs]; c != nil && c.busy && c.asks != nil {
		return c.asks, c.asksCtx
	}
	return nil, nil
}

// answerContext returns the context an answer function runs with: the values and
// the end of call (the call in flight), also ended when req (the upstream's request,
// whose values are the connection's: those of whatever call started it) ends.
func answerContext(req, call context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(call)
	stop := context.AfterFunc(req, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// noCallToAsk is the answer to an upstream request that no call in flight can take.
func noCallToAsk(kind string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: kind + " is only answered during a call, by the client that made it"}
}

func (u *Server) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	asks, callCtx := u.asksOf(req.Session)
	if asks == nil || asks.Sampling == nil {
		u.log.Warn("upstream asked for sampling with no call in flight that can answer it; refused")
		return nil, noCallToAsk("sampling")
	}
	ctx, done := answerContext(ctx, callCtx)
	defer done()
	return guardAnswer("sampling", u.log, func() (*mcp.CreateMessageResult, error) { return asks.Sampling(ctx, req.Params) })
}

func (u *Server) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	asks, callCtx := u.asksOf(req.Session)
	if asks == nil || asks.Elicitation == nil {
		u.log.Warn("upstream asked for elicitation with no call in flight that can answer it; refused")
		return nil, noCallToAsk("elicitation")
	}
	ctx, done := answerContext(ctx, callCtx)
	defer done()
	return guardAnswer("elicitation", u.log, func() (*mcp.ElicitResult, error) { return asks.Elicitation(ctx, req.Params) })
}

// answerRoots is a receiving middleware of the Server's MCP clients: it answers
// roots/list through the call in flight's ClientRequests.Roots, never passing it to
// the SDK (whose answer is the client's static root list, which cannot be the
// calling client's).
func (u *Server) answerRoots(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		cs, _ := req.GetSession().(*mcp.ClientSession)
		return u.onListRoots(ctx, cs)
	}
}

func (u *Server) onListRoots(ctx context.Context, cs *mcp.ClientSession) (*mcp.ListRootsResult, error) {
	var asks *ClientRequests
	var callCtx context.Context
	if cs != nil {
		asks, callCtx = u.asksOf(cs)
	}
	if asks == nil || asks.Roots == nil {
		u.log.Warn("upstream asked for roots with no call in flight that can answer it; refused")
		return nil, noCallToAsk("roots")
	}
	ctx, done := answerContext(ctx, callCtx)
	defer done()
	res, err := guardAnswer("roots", u.log, func() (*mcp.ListRootsResult, error) { return asks.Roots(ctx) })
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "roots failed in the gateway: no answer"}
	}
	if res.Roots == nil {
		res.Roots = []*mcp.Root{} // a list, never null
	}
	return res, nil
}

// guardAnswer runs an answer function, turning a panic into an error for the
// upstream (logged).
func guardAnswer[T any](kind string, log *slog.Logger, f func() (*T, error)) (res *T, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("answering an upstream request panicked", slog.String("kind", kind), slog.String("panic", fmt.Sprint(r)))
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: kind + " failed in the gateway"}
		}
	}()
	return f()
}

// Target prefixes of the upstream's own requests as the pipeline judges them:
// "sampling:<server>", "elicitation:<server>" and "roots:<server>", the server being
// the one that asks.
const (
	SamplingTargetPrefix    = "sampling:"
	ElicitationTargetPrefix = "elicitation:"
	RootsTargetPrefix       = "roots:"
)

// SamplingTarget returns the call target of a sampling request of server.
func SamplingTarget(server string) string { return SamplingTargetPrefix + server }

// ElicitationTarget returns the call target of an elicitation request of server.
func ElicitationTarget(server string) string { return ElicitationTargetPrefix + server }

// RootsTarget returns the call target of a roots/list request of server.
func RootsTarget(server string) string { return RootsTargetPrefix + server }

// relayCapabilities is the per-request client capabilities value (the _meta
// io.modelcontextprotocol/clientCapabilities) of caps: sampling, elicitation and
// roots, as declared.
func relayCapabilities(caps *mcp.ClientCapabilities) map[string]any {
	out := map[string]any{}
	if caps == nil {
		return out
	}
	if caps.Sampling != nil {
		out["sampling"] = caps.Sampling
	}
	if caps.Elicitation != nil {
		out["elicitation"] = caps.Elicitation
	}
	if caps.RootsV2 != nil {
		out["roots"] = caps.RootsV2
	}
	return out
}

// relayRound puts r's answers, state and capabilities into params, the gateway's
// own request.
func relayRound(params mcp.RequestParams, r *Relay) error {
	switch p := params.(type) {
	case *mcp.CallToolParams:
		p.InputResponses, p.RequestState = r.Responses, r.State
	case *mcp.GetPromptParams:
		p.InputResponses, p.RequestState = r.Responses, r.State
	case *mcp.ReadResourceParams:
		p.InputResponses, p.RequestState = r.Responses, r.State
	default:
		return fmt.Errorf("a %T cannot be relayed", params)
	}
	meta := params.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	meta[mcp.MetaKeyClientCapabilities] = relayCapabilities(r.Capabilities)
	params.SetMeta(meta)
	return nil
}
