package gateway

import (
	"context"
	"iter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/eventstore"
)

// SweepStates runs one sweep of expired requestStates as if the clock read now.
func (g *Gateway) SweepStates(ctx context.Context, now time.Time) (int, error) {
	return g.sweepStates(ctx, now)
}

// MRTRStatePrefix is the store checkpoint prefix of issued requestStates.
const MRTRStatePrefix = mrtrStatePrefix

// MRTRStateLife is how long after it was issued a requestState is swept.
const MRTRStateLife = mrtrStateTTL + mrtrSweepMargin

// RelayCall is the call a relayed round's requestState is bound to.
type RelayCall = relayCall

// IssueRelayState issues the requestState of a relayed round.
func (g *Gateway) IssueRelayState(ctx context.Context, cl Client, c RelayCall, requests mcp.InputRequestMap, upstreamState string) (string, error) {
	return g.issueRelayState(ctx, cl, c, requests, upstreamState, relayApproval{})
}

// IssueRelayStateApproved is IssueRelayState of a round whose call was approved
// (binding, by whom) with the carry-over ending at until (Unix seconds).
func (g *Gateway) IssueRelayStateApproved(ctx context.Context, cl Client, c RelayCall, requests mcp.InputRequestMap, upstreamState, binding, by string, until int64) (string, error) {
	return g.issueRelayState(ctx, cl, c, requests, upstreamState, relayApproval{binding: binding, by: by, until: until})
}

// OpenRelayStateApproval is OpenRelayState returning the approval binding and
// approver the retry carries ("" for none).
func (g *Gateway) OpenRelayStateApproval(ctx context.Context, cl Client, c RelayCall, state string, responses mcp.InputResponseMap) (binding, by, refusal string) {
	_, _, a, refusal := g.openRelayState(ctx, cl, c, state, responses)
	return a.binding, a.by, refusal
}

// OpenRelayState checks and claims the requestState of a relayed retry.
func (g *Gateway) OpenRelayState(ctx context.Context, cl Client, c RelayCall, state string, responses mcp.InputResponseMap) (string, mcp.InputResponseMap, string) {
	up, forward, _, refusal := g.openRelayState(ctx, cl, c, state, responses)
	return up, forward, refusal
}

// SetReplayLimits gives the gateway a new, empty replay store with the limits l, for
// the HTTP handlers MCPHandler makes from now on. onResume, when set, is called at
// each resume (Last-Event-ID) of a stream, after the events to replay were read and
// before the SDK lets the stream take new events.
func (g *Gateway) SetReplayLimits(l eventstore.Limits, onResume func(session, stream string)) {
	g.replay = &hookedReplay{Store: eventstore.New(l, nil), onResume: onResume}
}

type hookedReplay struct {
	*eventstore.Store
	onResume func(session, stream string)
}

func (h *hookedReplay) After(ctx context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	seq := h.Store.After(ctx, session, stream, index)
	if h.onResume != nil {
		h.onResume(session, stream)
	}
	return seq
}

// ReplayStats is what the gateway's replay store holds (see [eventstore.Store.Stats]).
func (g *Gateway) ReplayStats(session ...string) eventstore.Stats {
	return g.replay.Stats(session...)
}

// ReplayLimits are the limits of the gateway's replay store.
func (g *Gateway) ReplayLimits() eventstore.Limits {
	return g.replay.Limits()
}
