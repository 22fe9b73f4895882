// Requests an upstream sends during a call (sampling, elicitation, roots), judged
// by the pipeline as calls of the caller's identity and passed to the client whose
// call it is, only when that client declared it can answer them.

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol 2026-07-28 on, but the session-based versions the gateway speaks still carry them, and a gateway must route what its clients and upstreams use.

package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/upstream"
)

// clientAsks returns who answers the requests server sends during a call of cl in
// session ss: the client itself, for what it declared (sampling, elicitation, roots),
// each request first judged by the policy (roots as a call of roots:<server> with no
// arguments, its answer the client's roots/list). Nil when it declared none, and on
// the stateless front: a 2026-07-28 client takes no server-to-client requests
// whatever it declares, so its call goes out on a connection that declares none
// (relayInput passes its upstream's rounds on instead).
func (g *Gateway) clientAsks(f *front, st *gatewayState, cl Client, ss *mcp.ServerSession, server string) *upstream.ClientRequests {
	if ss == nil || server == "" || f.kind == statelessFront {
		return nil
	}
	init := ss.InitializeParams()
	if init == nil || init.Capabilities == nil {
		return nil
	}
	caps := init.Capabilities
	asks := &upstream.ClientRequests{}
	if caps.Sampling != nil {
		asks.Sampling = func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			res, err := g.askClient(ctx, f, st, cl, ss, upstream.SamplingTarget(server), p, func(ctx context.Context) (mcp.Result, string, error) {
				r, err := ss.CreateMessage(ctx, p)
				if err != nil {
					return nil, "", err
				}
				return r, samplingText(r), nil
			})
			if err != nil {
				return nil, err
			}
			return res.(*mcp.CreateMessageResult), nil
		}
	}
	if caps.Elicitation != nil {
		asks.Elicitation = func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			res, err := g.askClient(ctx, f, st, cl, ss, upstream.ElicitationTarget(server), p, func(ctx context.Context) (mcp.Result, string, error) {
				r, err := ss.Elicit(ctx, p)
				if err != nil {
					return nil, "", err
				}
				content, _ := json.Marshal(r.Content)
				return r, fmt.Sprintf("%s %s", r.Action, content), nil
			})
			if err != nil {
				return nil, err
			}
			return res.(*mcp.ElicitResult), nil
		}
	}
	if caps.RootsV2 != nil {
		// RootsV2 is what the SDK sets when the client's initialize has a roots
		// capability (the deprecated Roots field is a value, set from it).
		asks.Roots = func(ctx context.Context) (*mcp.ListRootsResult, error) {
			res, err := g.askClient(ctx, f, st, cl, ss, upstream.RootsTarget(server), struct{}{}, func(ctx context.Context) (mcp.Result, string, error) {
				r, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
				if err != nil {
					return nil, "", err
				}
				return r, rootsText(r), nil
			})
			if err != nil {
				return nil, err
			}
			return res.(*mcp.ListRootsResult), nil
		}
	}
	if asks.Sampling == nil && asks.Elicitation == nil && asks.Roots == nil {
		return nil
	}
	return asks
}

// askClient judges one upstream request as a call of target with the request's
// parameters as arguments (rules, roles, conditions, asks, halts, audit), and when
// it may run, forwards it to the client. A refusal is an error for the upstream
// with the text the policy gives. In a session halted since the call began, the
// request is refused with the halt's text, recorded like every later call there.
func (g *Gateway) askClient(ctx context.Context, f *front, st *gatewayState, cl Client, ss *mcp.ServerSession, target string, params any, forward func(context.Context) (mcp.Result, string, error)) (mcp.Result, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, refused("The request could not be read: " + err.Error())
	}
	session := f.sessionOf(ss, cl)
	if text, ok := g.halted.Load(session); ok {
		g.refuse(ctx, st, target, warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}, session, raw, warden.StageGate, haltedReason)
		return nil, refused(text.(string))
	}
	args, err := warden.ParseArgs(raw)
	if err != nil {
		return nil, refused("The request could not be read: " + err.Error())
	}
	slot := &resultSlot{forward: forward}
	out, text, ok := g.govern(ctx, f, st, cl, ss, slot, target, args)
	switch {
	case !ok:
		return nil, refused(text)
	case out.Status != warden.StatusRan || out.IsError:
		return nil, refused(out.ModelText)
	case slot.other == nil:
		return nil, refused("The client gave no answer.")
	case out.ModelText != slot.text:
		// The pipeline changed what the upstream may read of the answer: it gets that
		// text only (for sampling), or nothing it was not meant to have.
		if r, ok := slot.other.(*mcp.CreateMessageResult); ok {
			return &mcp.CreateMessageResult{Role: r.Role, Model: r.Model, StopReason: r.StopReason, Content: &mcp.TextContent{Text: out.ModelText}}, nil
		}
		return nil, refused(out.ModelText)
	}
	return slot.other, nil
}

// askExecutable is the registry entry of an upstream's request kind (target
// "sampling:<server>", "elicitation:<server>" or "roots:<server>"): its Run writes the audit intent and
// forwards the request to the client (the forward function of the call's slot).
func askExecutable(target, server, kind string) warden.Executable {
	return warden.Executable{
		Tool: warden.Tool{
			Name:        target,
			Description: fmt.Sprintf("The MCP server %s asks the client for %s", server, kind),
			Source:      "mcp:" + server,
		},
		Run: func(ctx context.Context, _ warden.Args, _ *warden.Credential) (any, error) {
			slot, _ := ctx.Value(slotKey{}).(*resultSlot)
			if slot == nil || slot.forward == nil {
				return nil, fmt.Errorf("%w: %s is only forwarded during a call", warden.ErrNotExecuted, kind)
			}
			if err := slot.beginIntent(ctx); err != nil {
				return nil, fmt.Errorf("%w: %w", warden.ErrNotExecuted, err)
			}
			res, text, err := slot.forward(ctx)
			if err != nil {
				return nil, err
			}
			slot.other, slot.text = res, text
			return text, nil
		},
	}
}

// askExecutables returns the sampling, elicitation and roots entries of every
// server.
func askExecutables(servers []string) []warden.Executable {
	out := make([]warden.Executable, 0, 3*len(servers))
	for _, s := range servers {
		out = append(out,
			askExecutable(upstream.SamplingTarget(s), s, "sampling"),
			askExecutable(upstream.ElicitationTarget(s), s, "elicitation"),
			askExecutable(upstream.RootsTarget(s), s, "roots"))
	}
	return out
}

// rootsText is the text of a roots answer the pipeline judges: the roots as JSON.
func rootsText(r *mcp.ListRootsResult) string {
	roots := r.Roots
	if roots == nil {
		roots = []*mcp.Root{}
	}
	b, err := json.Marshal(roots)
	if err != nil {
		return fmt.Sprintf("[%d roots]", len(roots))
	}
	return string(b)
}

// samplingText is the text of a sampling answer the pipeline judges.
func samplingText(r *mcp.CreateMessageResult) string {
	if t, ok := r.Content.(*mcp.TextContent); ok {
		return string(r.Role) + ": " + t.Text
	}
	return fmt.Sprintf("%s: [%T content]", r.Role, r.Content)
}
