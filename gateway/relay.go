// The relay of an upstream's own multi-round trips to a client of protocol
// 2026-07-28 (see mrtr_relay.go for the state): a call on the stateless front goes
// upstream declaring the capabilities the client declared in its request; when the
// upstream answers input_required, each of its input requests is judged like a
// request of its kind from that server during a call (sampling:<server>,
// elicitation:<server>, roots:<server>), and only when all may go does the client
// get them, with a requestState of the gateway's own. The client's retry is checked against that
// state, judged again under the policy in force, and only then sent upstream with
// the answers and the upstream's own state.

//lint:file-ignore SA1019 sampling and roots are deprecated from protocol 2026-07-28 on, but input requests still carry them

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/upstream"
)

// relayRequest is what a request on the stateless front brings to a relayed round:
// the capabilities the client declared in it, and on a retry of a relayed round what
// the checked state gives (the upstream's state, the answers to forward and the
// approval the call already had).
type relayRequest struct {
	caps     *mcp.ClientCapabilities
	state    string
	forward  mcp.InputResponseMap
	approval relayApproval
}

// relayApproval is the human decision that let a relayed call run (zero: none
// needed): its approval binding, who gave it, and until when (Unix seconds) it
// carries over to the call's later rounds.
type relayApproval struct {
	binding, by string
	until       int64
}

// relayOf returns the relay context of a request on the stateless front of cl's
// call of name with args to the definition def. When the request's requestState is
// a relay state, it is checked against this call as st judges it and claimed: a
// state that fails is a JSON-RPC error (invalid params) saying why, and nothing is
// sent. Otherwise (no state, or an approval state) retry is false and the state is
// the approval path's.
func (g *Gateway) relayOf(ctx context.Context, st *gatewayState, cl Client, session, name string, args warden.Args, def, state string, responses mcp.InputResponseMap, caps *mcp.ClientCapabilities) (r *relayRequest, retry bool, err error) {
	r = &relayRequest{caps: caps}
	if state == "" {
		return r, false, nil
	}
	if _, ok, _ := g.verifyRelayState(ctx, state); !ok && !looksRelayed(responses) {
		return r, false, nil
	}
	c := relayCall{Tool: name, Args: args, Def: def, Revision: st.views[cl.Role].guard.Revision()}
	up, forward, approval, refusal := g.openRelayState(ctx, cl, c, state, responses)
	if refusal != "" {
		// Recorded like every refusal: the audit log shows each retry that was turned away.
		g.refuse(ctx, st, name, warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}, session, args.AppendJSON(nil), warden.StageHuman, relayRefusedReason+refusal)
		return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: refusal}
	}
	r.state, r.forward, r.approval = up, forward, approval
	return r, true, nil
}

// relayRefusedReason starts the audit reason of a relayed retry whose state was
// refused.
const relayRefusedReason = "the requestState of a relayed retry was refused: "

// relaySlot sets slot's relay for a request of cl's call of name with args on the
// stateless front (none on the others), and returns the requestState and
// inputResponses left for the approval path: none when they were a relay's.
func (g *Gateway) relaySlot(ctx context.Context, f *front, st *gatewayState, cl Client, session string, slot *resultSlot, name string, args warden.Args, state string, responses mcp.InputResponseMap, caps *mcp.ClientCapabilities) (string, mcp.InputResponseMap, error) {
	if f.kind != statelessFront {
		return state, responses, nil
	}
	relay, retry, err := g.relayOf(ctx, st, cl, session, name, args, slot.def, state, responses, caps)
	if err != nil {
		return "", nil, err
	}
	slot.relay = relay
	if retry {
		return "", nil, nil
	}
	return state, responses, nil
}

// looksRelayed reports whether a retry answers something other than the gateway's
// own approval question: then its requestState can only be a relay state, and one
// that does not verify is refused as one.
func looksRelayed(responses mcp.InputResponseMap) bool {
	for id := range responses {
		if id != mrtrInputID {
			return true
		}
	}
	return false
}

// relayOptions is the upstream request's relay round of r.
func (r *relayRequest) relayOptions() *upstream.Relay {
	return &upstream.Relay{Capabilities: r.caps, Responses: r.forward, State: r.state}
}

// relayInput answers an upstream's input_required round of cl's call of name with
// args on the stateless front: every input request is one the client declared it can
// answer and one the policy lets the server send (judged and audited as a request
// of sampling:<server>, elicitation:<server> or roots:<server>, its parameters the
// arguments). Then the client
// gets the input requests as the upstream gave them and a relay state. Otherwise
// refusal says which request was refused and why, and the client gets nothing of
// them.
func (g *Gateway) relayInput(ctx context.Context, f *front, st *gatewayState, cl Client, ss *mcp.ServerSession, slot *resultSlot, name string, args warden.Args, reqs mcp.InputRequestMap, upstreamState string) (state, refusal string) {
	caps := slot.relay.caps
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	// Every kind is checked before any request is judged: a round refused for an
	// undeclared kind has none of its requests recorded as passed to the client.
	ids := slices.Sorted(maps.Keys(reqs))
	targets := make(map[string]string, len(ids))
	for _, id := range ids {
		method := upstream.InputMethod(reqs[id])
		var declared bool
		switch method {
		case "elicitation/create":
			declared, targets[id] = caps.Elicitation != nil, upstream.ElicitationTarget(slot.server)
		case "sampling/createMessage":
			declared, targets[id] = caps.Sampling != nil, upstream.SamplingTarget(slot.server)
		case "roots/list":
			declared, targets[id] = caps.RootsV2 != nil, upstream.RootsTarget(slot.server)
		default:
			return "", fmt.Sprintf("The server %s asked the client for input of a kind the gateway does not pass on (input request %q). The call did not complete.", slot.server, id)
		}
		if !declared {
			return "", fmt.Sprintf("The server %s asked the client for %s (input request %q), which the client did not declare in this request. The call did not complete.", slot.server, method, id)
		}
	}
	for _, id := range ids {
		if text, ok := g.judgeRelayed(ctx, f, st, cl, ss, targets[id], reqs[id]); !ok {
			return "", fmt.Sprintf("The server %s asked the client for %s (input request %q), which was refused: %s The call did not complete.", slot.server, upstream.InputMethod(reqs[id]), id, text)
		}
	}
	c := relayCall{Tool: name, Args: args, Def: slot.def, Revision: st.views[cl.Role].guard.Revision()}
	token, err := g.issueRelayState(ctx, cl, c, reqs, upstreamState, slot.approved)
	if err != nil {
		g.log.Error("cannot issue a relayed requestState; the call is refused", "tool", name, "error", err)
		return "", "The gateway could not record the server's question for the retry, so the call cannot continue now. Try again later."
	}
	return token, ""
}

// relayedText is what the audit records as the outcome of an allowed input request:
// the round goes to the client only when every one of its requests is allowed (the
// call's own record says whether it did), and the answer comes on the retry, which
// is judged again.
const relayedText = "allowed: passed to the client if every input request of the round is allowed; its answer comes with the retry of the call"

// judgeRelayed judges the input request r as a request of target (sampling:<server>,
// elicitation:<server> or roots:<server>) of cl's, recorded like one forwarded
// during a call. ok reports that it may go to the client; otherwise text is the
// refusal.
func (g *Gateway) judgeRelayed(ctx context.Context, f *front, st *gatewayState, cl Client, ss *mcp.ServerSession, target string, r mcp.InputRequest) (text string, ok bool) {
	raw, err := json.Marshal(r)
	if err != nil {
		return "The request could not be read: " + err.Error(), false
	}
	args, err := warden.ParseArgs(raw)
	if err != nil {
		return "The request could not be read: " + err.Error(), false
	}
	slot := &resultSlot{forward: func(context.Context) (mcp.Result, string, error) {
		return &mcp.ElicitResult{}, relayedText, nil
	}}
	out, text, ok := g.govern(ctx, f, st, cl, ss, slot, target, args)
	switch {
	case !ok:
		return text, false
	case out.Status != warden.StatusRan || out.IsError:
		return out.ModelText, false
	}
	return "", true
}
