// Tasks on the stateless front: the tasks extension of protocol 2026-07-28
// (internal/mcptasks) in front of the SDK's stateless handler, so that a call which
// waits for an operator, or runs as a task on its upstream, is carried as a task the
// client polls instead of a request held open.

package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/wardenhq/warden/internal/mcptasks"
)

// taskTTL is how long the gateway keeps a task: as long as a call may wait for an
// operator (until its approval expires) and then run, and a while for the client to
// fetch the result.
func taskTTL(cfg *File) time.Duration {
	return cfg.ApprovalExpiry + cfg.CallTimeout + 10*time.Minute
}

// Bounds of the tasks the gateway keeps: a call beyond them waits in its request, as
// for a client that does not take tasks. A waiting call holds several times its
// request in memory (the parsed arguments, the pending decision), so the bytes are
// kept low: one identity's tasks hold at most 16 MiB of requests and results, all
// tasks 128 MiB.
const (
	taskMaxPerOwner   = 100
	taskMaxOwnerBytes = 16 << 20
	taskMaxBytes      = 128 << 20
)

// tasksHandler returns next (the stateless front's SDK handler) behind the gateway's
// tasks handler, made once per gateway from the first MCPHandler's configuration.
// Tasks belong to the identity that made them: its token, or for a JWT its issuer
// and subject together with the client (tenant, principal, role) the token mapped
// to, so that another token of the same subject mapping to another client never
// reaches them.
func (g *Gateway) tasksHandler(cfg *File, next http.Handler) http.Handler {
	g.tasksOnce.Do(func() {
		g.tasks = mcptasks.NewHandler(next, &mcptasks.Options{
			Owner: func(r *http.Request) string {
				ti := auth.TokenInfoFromContext(r.Context())
				if ti == nil || ti.UserID == "" {
					return ""
				}
				if cl, ok := ti.Extra[oauthClientKey].(Client); ok {
					// One subject's tokens may map to several clients (by their claims):
					// a task is of the client its token mapped to, not of every token
					// of the subject.
					return fmt.Sprintf("%q %#v", ti.UserID, cl)
				}
				return ti.UserID
			},
			TTL:           taskTTL(cfg),
			MaxPerOwner:   taskMaxPerOwner,
			MaxOwnerBytes: taskMaxOwnerBytes,
			MaxBytes:      taskMaxBytes,
			MaxBodyBytes:  cfg.MaxRequestBytes,
			Logger:        g.log,
		})
	})
	if g.tasks == nil {
		return next // made after Close: nothing becomes a task
	}
	return g.tasks
}

// closeTasks cancels the calls carried as tasks (the approvals they wait for stay
// in the store) and waits for them to end.
func (g *Gateway) closeTasks(ctx context.Context) error {
	g.tasksOnce.Do(func() {}) // no MCPHandler yet: none will make tasks now
	h := g.tasks
	if h == nil {
		return nil
	}
	return h.Close(ctx)
}
