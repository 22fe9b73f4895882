package gateway

import (
	"context"
	"time"
)

// The requestStates the stateless front issues are checkpoints in the store (one per
// question asked, claimed by its retry). They are worthless once expired: a retry
// checks the expiry the state carries before it claims it, so an expired state is
// refused whether its checkpoint is there or not. The sweep deletes them, so that a
// gateway asked millions of questions does not keep millions of rows: every
// mrtrSweepInterval, the states last written more than mrtrStateTTL+mrtrSweepMargin
// ago. The margin covers replicas whose clocks disagree: a state is deleted only
// once every replica within the margin of this one's clock sees it expired.
const (
	mrtrSweepInterval = 10 * time.Minute
	mrtrSweepMargin   = time.Hour
)

// sweepStates deletes the expired requestStates once and returns how many it deleted.
func (g *Gateway) sweepStates(ctx context.Context, now time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return g.opts.Store.DeleteCheckpoints(ctx, mrtrStatePrefix, now.Add(-mrtrStateTTL-mrtrSweepMargin))
}

// runStateSweep sweeps every interval until ctx ends. A failed sweep is logged and
// tried again at the next tick; it never affects a call.
func (g *Gateway) runStateSweep(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n, err := g.sweepStates(ctx, now)
			switch {
			case err != nil && ctx.Err() == nil:
				g.log.Warn("could not delete expired requestStates from the store; trying again later", "error", err)
			case n > 0:
				g.log.Debug("deleted expired requestStates from the store", "count", n)
			}
		}
	}
}
