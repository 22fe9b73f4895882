// Human decisions at the gateway: a call that needs a person waits for an operator
// (the inbox, warden decide) or, where the file allows it, for the client's own user
// by elicitation.

package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/internal/mcptasks"
	"github.com/wardenhq/warden/store"
)

// ApprovalBinding is the digest an operator's approval authorizes: the identity (its
// principal and tenant), the tool, the kind of question, the asking middleware and
// the exact arguments. An approval of one principal's call never authorizes another
// principal's identical call (a principal of the same name in another tenant
// included), nor the same arguments for a different tool. An identity without a
// tenant has the binding it had before tenants were part of it.
func ApprovalBinding(id warden.Identity, p *warden.PendingDecision) string {
	h := sha256.New()
	fields := []string{id.Principal, p.Tool, string(p.Kind), p.Middleware, p.Digest}
	if id.Tenant != "" {
		fields = append(fields, "tenant", id.Tenant)
	}
	for _, s := range fields {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// WaitingText is what the model reads when nobody decided within the wait.
func WaitingText(id, tool string) string {
	return fmt.Sprintf("Approval required: this call is waiting for an operator (approval id %s). "+
		"Nothing ran. Once it is approved, call %s again with exactly the same arguments and it will run; "+
		"different arguments need a new approval.", id, tool)
}

// decide obtains the answer to a pending question: an earlier approval of exactly
// this call, the client's user by elicitation (only when approvals.elicitation is
// allow and the caller's identity sets self_approve), or an operator within the wait. A nil
// answer means nobody decided; the text says what the model reads.
func (g *Gateway) decide(ctx context.Context, f *front, st *gatewayState, cl Client, session string, p *warden.PendingDecision, ss *mcp.ServerSession) (warden.Answer, string) {
	binding := ApprovalBinding(warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}, p)
	s := g.opts.Store
	if got, ok, err := s.ConsumeApproval(ctx, binding, session); err != nil {
		g.log.Error("approval store unavailable; the call is refused", "error", err)
		return nil, "The approval store is unavailable, so this call cannot be approved now. Nothing ran; try again later."
	} else if ok {
		return warden.Approved{By: got.DecidedBy, Note: got.Note, Digest: p.ApprovalDigest()}, ""
	}
	// One wait for the whole decision: a client that never answers its elicitation
	// must not hold the call (or a shutdown) longer than approvals.wait, and what is
	// left of it after the elicitation is the operator's.
	wctx, cancel := context.WithTimeout(ctx, st.cfg.ApprovalWait)
	defer cancel()
	// Only an identity configured to approve its own asks is asked (fail closed: by
	// default every ask goes to an operator).
	if st.cfg.Elicitation && cl.SelfApprove && canElicit(ss) {
		res, err := ss.Elicit(wctx, &mcp.ElicitParams{
			Message:         ElicitationMessage(p),
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		})
		switch {
		case err != nil:
			g.log.Warn("elicitation failed; asking an operator instead", "tool", p.Tool, "error", err)
		case res.Action == "accept":
			return warden.Approved{By: cl.Principal, Digest: p.ApprovalDigest()}, ""
		default:
			return warden.Declined{By: cl.Principal, Note: "the client's user chose " + res.Action}, ""
		}
	}
	pending, err := g.pendingFor(ctx, st, binding, session, p)
	if err != nil {
		g.log.Error("cannot store a pending decision; the call is refused", "error", err)
		return nil, "The approval store is unavailable, so this call cannot be approved now. Nothing ran; try again later."
	}
	if mcptasks.Promote(ctx, fmt.Sprintf("Waiting for an operator to decide approval %s. Nothing has run yet.", pending.ID)) {
		// A 2026-07-28 client that takes tasks polls for the answer instead of holding
		// its request open: the call waits until the approval expires.
		var wcancel context.CancelFunc
		wctx, wcancel = context.WithDeadline(ctx, pending.Expires)
		defer wcancel()
	}
	decided, err := s.WaitDecision(wctx, pending.ID)
	switch {
	case err == nil && decided.State == store.StateApproved:
		if got, ok, err := s.ConsumeApproval(ctx, binding, session); err == nil && ok {
			return warden.Approved{By: got.DecidedBy, Note: got.Note, Digest: p.ApprovalDigest()}, ""
		}
		return nil, WaitingText(pending.ID, p.Tool)
	case err == nil && decided.State == store.StateDeclined:
		return warden.Declined{By: decided.DecidedBy, Note: decided.Note}, ""
	case errors.Is(err, store.ErrExpired):
		return nil, fmt.Sprintf("Approval %s expired before anyone decided. Nothing ran.", pending.ID)
	case ctx.Err() != nil:
		return nil, "call cancelled: " + ctx.Err().Error()
	case err != nil && !errors.Is(err, context.DeadlineExceeded):
		g.log.Error("waiting for a decision failed", "id", pending.ID, "error", err)
	}
	return nil, WaitingText(pending.ID, p.Tool)
}

// pendingFor returns the undecided pending decision for this exact call in this
// session, creating it when there is none (a retry waits on the same item).
func (g *Gateway) pendingFor(ctx context.Context, st *gatewayState, binding, session string, p *warden.PendingDecision) (store.Pending, error) {
	s := g.opts.Store
	open, err := s.ListPending(ctx, store.PendingFilter{Session: session})
	if err != nil {
		return store.Pending{}, err
	}
	for _, q := range open {
		if q.Digest == binding {
			return q, nil
		}
	}
	decision, err := json.Marshal(p)
	if err != nil {
		return store.Pending{}, err
	}
	rec := store.Pending{
		Kind: p.Kind, Question: p.Question, Detail: p.Detail, Tool: p.Tool,
		Args: p.Args.AppendJSON(nil), Digest: binding, Identity: p.Identity, Session: session,
		Revision: p.Revision, Expires: time.Now().Add(st.cfg.ApprovalExpiry), Decision: decision,
	}
	if p.Evidence != nil {
		if rec.Evidence, err = json.Marshal(p.Evidence); err != nil {
			return store.Pending{}, err
		}
	}
	created, err := s.CreatePending(ctx, rec)
	if err == nil {
		g.log.Info("call waiting for an operator", "id", created.ID, "tool", p.Tool, "principal", p.Identity.Principal)
	}
	return created, err
}

// ElicitationMessage is the question put to a client's user: the question and the
// exact call that will run if they accept, with the full digest of its arguments.
// Every control, bidi and invisible character is written as an escape
// (internal/display: \u202e in the question and tool name, JSON escapes in the
// arguments), so the client cannot show the user a reordered or partly hidden call;
// the arguments are never cut.
func ElicitationMessage(p *warden.PendingDecision) string {
	args, _ := display.JSON(p.Args.AppendJSON(nil))
	var b strings.Builder
	b.WriteString(display.Line(p.Question).String())
	if p.Detail != "" {
		b.WriteString("\n\n" + display.Block(p.Detail).String())
	}
	fmt.Fprintf(&b, "\n\nTool: %s\nArguments:\n%s\n", display.Line(p.Tool).String(), args.String())
	if p.Digest != "" {
		fmt.Fprintf(&b, "Arguments digest: %s\n", display.Line(p.Digest).String())
	}
	b.WriteString("\nAccept to run exactly this call; decline to refuse it.")
	return b.String()
}
