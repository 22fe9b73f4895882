package gateway

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
