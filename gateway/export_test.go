package gateway

import (
	"context"
	"time"
)

// SweepStates runs one sweep of expired requestStates as if the clock read now.
func (g *Gateway) SweepStates(ctx context.Context, now time.Time) (int, error) {
	return g.sweepStates(ctx, now)
}

// MRTRStatePrefix is the store checkpoint prefix of issued requestStates.
const MRTRStatePrefix = mrtrStatePrefix

// MRTRStateLife is how long after it was issued a requestState is swept.
const MRTRStateLife = mrtrStateTTL + mrtrSweepMargin
