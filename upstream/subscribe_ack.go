// Resource subscriptions on connections of protocol 2026-07-28: the SDK's
// ClientSession.Subscribe opens a subscriptions/listen stream in the background and
// returns before the server has answered, so neither a refusal nor the moment the
// subscription holds reaches its caller. The server's first message on the stream
// is notifications/subscriptions/acknowledged, naming the resources it agreed to:
// the gateway waits for that.

package upstream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscribeAckTimeout bounds the wait for a subscription's acknowledgement.
const subscribeAckTimeout = 10 * time.Second

// ackMethod is the notification that acknowledges a subscriptions/listen.
const ackMethod = "notifications/subscriptions/acknowledged"

// subAcks are the acknowledgements awaited, by connection and URI.
type subAcks struct {
	mu      sync.Mutex
	waiting map[subAckKey]chan []string
}

type subAckKey struct {
	cs  *mcp.ClientSession
	uri string
}

// expect registers a wait for uri's acknowledgement on cs; done ends it.
func (a *subAcks) expect(cs *mcp.ClientSession, uri string) (ch <-chan []string, done func()) {
	c := make(chan []string, 1)
	k := subAckKey{cs, uri}
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting = map[subAckKey]chan []string{}
	}
	a.waiting[k] = c
	a.mu.Unlock()
	return c, func() {
		a.mu.Lock()
		if a.waiting[k] == c {
			delete(a.waiting, k)
		}
		a.mu.Unlock()
	}
}

// acknowledged passes an acknowledgement on cs (the resources the server agreed to)
// to the waits it answers: every URI awaited on cs whose listen it is. A listen
// stream subscribes one URI (the SDK opens one per Subscribe), so the waits of
// cs are told the agreed list, each checking for its own URI.
func (a *subAcks) acknowledged(cs *mcp.ClientSession, agreed []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, c := range a.waiting {
		if k.cs != cs {
			continue
		}
		if slices.Contains(agreed, k.uri) {
			select {
			case c <- agreed:
			default:
			}
		}
	}
}

// watchAcks is the client's receiving middleware that sees acknowledgements.
func (u *Server) watchAcks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == ackMethod {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && p != nil {
				if cs, ok := req.GetSession().(*mcp.ClientSession); ok {
					u.acks.acknowledged(cs, p.Notifications.ResourceSubscriptions)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// subscribeOn subscribes uri on c (held by the caller). From protocol 2026-07-28 on
// it returns once the server has acknowledged the subscription, and an error when
// no acknowledgement naming uri comes within subscribeAckTimeout (the listen is
// then cancelled).
func (u *Server) subscribeOn(ctx context.Context, c *upstreamConn, uri string) error {
	if !stateless(c.cs) {
		_, err := sdkGuard(func() (struct{}, error) { return struct{}{}, c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) })
		return err
	}
	ch, done := u.acks.expect(c.cs, uri)
	defer done()
	if _, err := sdkGuard(func() (struct{}, error) { return struct{}{}, c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) }); err != nil {
		return err
	}
	t := time.NewTimer(subscribeAckTimeout)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		err := ctx.Err()
		_ = c.cs.Unsubscribe(context.WithoutCancel(ctx), &mcp.UnsubscribeParams{URI: uri})
		return err
	case <-t.C:
		_ = c.cs.Unsubscribe(context.WithoutCancel(ctx), &mcp.UnsubscribeParams{URI: uri})
		return fmt.Errorf("the server did not acknowledge the subscription (subscriptions/listen) within %s: it refused it or did not answer", subscribeAckTimeout)
	}
}
