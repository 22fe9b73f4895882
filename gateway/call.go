// The call path of one tools/call: the pipeline run with the gateway's per-call
// slot (progress forwarding, the audit intent written when the request is sent, the
// full upstream result), fault memory per session, and refusals made before the
// pipeline.

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/internal/mcptasks"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
)

// executable wraps one upstream tool for the pipeline: the shared adapter
// ([upstream.Server.Executable]) with the gateway's per-call slot (progress forwarding, the
// deferred audit intent, the full result).
func (g *Gateway) executable(gt *governedTool) warden.Executable {
	return g.metrics.timeUpstream(gt.tool.Server, keepCapabilityErrors(gt.up.ExecutableWith(gt.tool, slotHook)))
}

// keepCapabilityErrors has x's Run keep, in the call's slot, an upstream's protocol
// error (a JSON-RPC error answering the request): the pipeline records it like any
// upstream error, and on the stateless front a refusal of a request that needs a
// client capability it did not declare (protocol 2026-07-28's -32021) reaches the
// client as that error, not as a tool result about it; so does any protocol error
// of a call carried as a task (the task fails with it, under the text the pipeline
// gave, as the tasks extension separates protocol errors from tool errors).
func keepCapabilityErrors(x warden.Executable) warden.Executable {
	run := x.Run
	x.Run = func(ctx context.Context, args warden.Args, cred *warden.Credential) (any, error) {
		res, err := run(ctx, args, cred)
		var rpc *jsonrpc.Error
		if slot, _ := ctx.Value(slotKey{}).(*resultSlot); slot != nil && errors.As(err, &rpc) {
			slot.protocolErr = &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message, Data: rpc.Data}
		}
		return res, err
	}
	return x
}

// protocolError is the JSON-RPC error a stateless front's call answers with instead
// of its tool result (nil for none, see keepCapabilityErrors): the upstream's -32021
// as it came, or, for a call carried as a task, the upstream's error code with the
// pipeline's text.
func (s *resultSlot) protocolError(ctx context.Context, out warden.Outcome) *jsonrpc.Error {
	e := s.protocolErr
	switch {
	case e == nil || !out.Executed || !out.IsError:
		return nil
	case e.Code == mcp.CodeMissingRequiredClientCapabilities:
		return e
	case mcptasks.IsTask(ctx):
		return &jsonrpc.Error{Code: e.Code, Message: out.ModelText}
	}
	return nil
}

// slotHook takes the call's options from the gateway's slot, and gives the slot the
// upstream's full result.
func slotHook(ctx context.Context) (*upstream.CallOptions, func(*mcp.CallToolResult, string)) {
	slot, _ := ctx.Value(slotKey{}).(*resultSlot)
	if slot == nil {
		return nil, nil
	}
	return slot.options(), func(res *mcp.CallToolResult, text string) { slot.res, slot.text = res, text }
}

// options are the upstream request options of the slot's call: its audit intent
// written right before sending, progress and log messages forwarded.
func (s *resultSlot) options() *upstream.CallOptions {
	opts := &upstream.CallOptions{BeforeSend: s.beforeSend, Client: s.asks, OnTask: s.onTask}
	if s.relay != nil {
		opts.Relay = s.relay.relayOptions()
	}
	if s.progress != nil {
		opts.Progress = s.progress.forward
	}
	if s.logs != nil {
		opts.Log = s.logs.forward
	}
	return opts
}

type slotKey struct{}

// resultSlot carries, past the pipeline, what a call's Run needs from the client's
// request (where its progress goes) and the upstream's full result, so content the
// model may see unchanged (images, structured content) is passed through as is.
type resultSlot struct {
	progress *progressForwarder // nil: the client asked for no progress
	logs     *logForwarder      // nil: no client session to send log messages to
	res      *mcp.CallToolResult
	other    mcp.Result // a prompts/get, resources/read, sampling, elicitation or roots result
	text     string
	// server names the upstream the call goes to ("" for none): its requests during
	// the call are answered by the caller (asks).
	server string
	// remote is the called tool's name on that server ("" for none) and role the
	// caller's configured role ("" for the policy's active role): what a call's span
	// says beside its events (see [CallOriginOf]).
	remote, role string
	asks         *upstream.ClientRequests
	// forward passes an upstream's request (sampling, elicitation, roots) to the client.
	forward func(context.Context) (mcp.Result, string, error)
	// def is the definition hash of what is called ("" for none); mrtr is set on the
	// stateless front, where a person is asked by multi-round trip, and ask is the
	// input_required answer when one was issued.
	def  string
	mrtr *mrtrContext
	ask  *mrtrAsk
	// relay is set on the stateless front for a call to a server: the upstream's own
	// input_required rounds are relayed to the client (see relay.go); approved is the
	// human decision that let this round run (zero: none).
	relay    *relayRequest
	approved relayApproval
	// protocolErr is the upstream's JSON-RPC error answering the request (see
	// keepCapabilityErrors), nil for none.
	protocolErr *jsonrpc.Error

	// The audit intent the pipeline began (see [sendJournal]), written only once the
	// request is about to be sent. Used by the call's own goroutine only.
	journal  *audit.Journal
	call     warden.Call
	intent   warden.Outcome
	deferred bool // Begin was called: an intent waits to be written
	begun    bool // the intent is written, as ref
	ref      warden.JournalRef
	// notes are the enforcing checks of the current pipeline run, for the shadows;
	// shadow is their verdicts, decided when the intent was begun (see shadow.go).
	notes  shadowNotes
	shadow []store.ShadowVerdict

	// For the metrics: when the upstream request was sent (zero: it was not), and
	// whether it was kept from being sent because its intent could not be written.
	sentAt       time.Time
	intentFailed bool
}

// onTask is the upstream request's [upstream.CallOptions.OnTask]: the upstream runs
// the call as a task, so a client that takes tasks gets one of the gateway's too
// instead of holding its request open (see tasks.go); any other waits as for any
// call, up to limits.call_timeout.
func (s *resultSlot) onTask(ctx context.Context) {
	mcptasks.Promote(ctx, fmt.Sprintf("Running as a task on the server %s.", s.server))
}

// beforeSend is the upstream request's [upstream.CallOptions.BeforeSend]: the audit
// intent is written, and the request is sent from now on.
func (s *resultSlot) beforeSend(ctx context.Context) error {
	if err := s.beginIntent(ctx); err != nil {
		s.intentFailed = true
		return err
	}
	s.sentAt = time.Now()
	return nil
}

// beginIntent writes the call's deferred audit intent: the upstream is about to
// receive the request ([upstream.CallOptions.BeforeSend]). An error refuses to send (fail
// closed: a call that cannot be recorded does not run).
func (s *resultSlot) beginIntent(ctx context.Context) error {
	if !s.deferred || s.begun {
		return nil
	}
	ref, err := s.journal.Begin(audit.WithShadow(ctx, s.shadow), s.call, s.intent)
	if err != nil {
		return fmt.Errorf("the call could not be recorded in the audit log: %w", err)
	}
	s.ref, s.begun = ref, true
	return nil
}

// sendJournal is the gateway's journal. The pipeline begins a call's journal entry
// right before it runs the tool; for a governed MCP call the entry's intent is
// instead written when the request is about to be sent upstream (once a verified
// connection is held), so a call that never got that far (no connection, a start
// or verification failure, a quarantine found at the connection) is recorded as a
// call that never executed, and one whose intent is written is one the upstream may
// have received. Calls without the gateway's slot (none today) are journaled at once.
//
// The shadows are asked about the call's checks when its entry is begun or recorded
// (see shadow.go); their verdicts go into that entry.
type sendJournal struct {
	inner *audit.Journal
	g     *Gateway
}

func (j sendJournal) Begin(ctx context.Context, c warden.Call, o warden.Outcome) (warden.JournalRef, error) {
	slot, _ := ctx.Value(slotKey{}).(*resultSlot)
	if slot == nil {
		return j.inner.Begin(ctx, c, o)
	}
	slot.journal, slot.call, slot.intent, slot.deferred, slot.begun = j.inner, c, o, true, false
	slot.shadow = j.g.shadowVerdicts(ctx, slot.takeChecks(), c)
	return 0, nil
}

func (j sendJournal) End(ctx context.Context, ref warden.JournalRef, c warden.Call, o warden.Outcome) error {
	slot, _ := ctx.Value(slotKey{}).(*resultSlot)
	switch {
	case slot == nil:
		return j.inner.End(ctx, ref, c, o)
	case slot.begun:
		return j.inner.End(ctx, slot.ref, c, o)
	}
	// The request was never sent: no intent was written, and the call did not execute.
	o.Executed = false
	return j.inner.Record(audit.WithShadow(ctx, slot.shadow), c, o)
}

func (j sendJournal) Record(ctx context.Context, c warden.Call, o warden.Outcome) error {
	if slot, _ := ctx.Value(slotKey{}).(*resultSlot); slot != nil {
		ctx = audit.WithShadow(ctx, j.g.shadowVerdicts(ctx, slot.takeChecks(), c))
	}
	return j.inner.Record(ctx, c, o)
}

// progressSendTimeout bounds forwarding one progress notification to a client. A
// client that does not take one in time gets no more for that call, so a stalled
// client never holds an upstream connection for long.
const progressSendTimeout = 2 * time.Second

// progressForwarder passes an upstream's progress notifications for one call to the
// client that made it, with the client's progress token.
type progressForwarder struct {
	log     *slog.Logger
	tool    string
	session *mcp.ServerSession
	token   any
	failed  atomic.Bool
}

// forward is the call's [upstream.CallOptions.Progress] hook: progress, total and message go
// to the client unchanged, under its own token.
func (f *progressForwarder) forward(ctx context.Context, p *mcp.ProgressNotificationParams) {
	if f.failed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, progressSendTimeout)
	defer cancel()
	err := f.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: f.token,
		Progress:      p.Progress,
		Total:         p.Total,
		Message:       p.Message,
	})
	if err != nil {
		f.failed.Store(true)
		f.log.Debug("progress notification not delivered to the client; the rest of the call's are dropped", "tool", f.tool, "error", err)
	}
}

// shuttingDownText answers a request that arrives once the gateway is shutting down.
const shuttingDownText = "The gateway is shutting down; nothing ran. Call again once it is back."

// enter counts a request in flight, unless the gateway is draining (then it reports
// false and counts nothing). A true answer must be matched by g.inflight.Done.
func (g *Gateway) enter() bool {
	g.flightMu.Lock()
	defer g.flightMu.Unlock()
	if g.draining {
		return false
	}
	g.inflight.Add(1)
	return true
}

// callTool serves one tools/call through the pipeline.
func (g *Gateway) callTool(ctx context.Context, f *front, name string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if !g.enter() {
		return textResult(shuttingDownText, true), nil
	}
	defer g.inflight.Done()
	st := g.state.Load()
	cl, err := f.identify(st, req)
	if err != nil {
		return textResult(err.Error(), true), nil
	}
	session := f.sessionOf(req.Session, cl)
	id := warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}
	if text, ok := g.haltedText(f, req.Session, cl); ok {
		// Refused like every other refusal: the audit log shows each call the halted
		// session still tried.
		g.refuse(ctx, st, name, id, session, req.Params.Arguments, warden.StageGate, haltedReason)
		return textResult(text, true), nil
	}
	// hideCalls checked visibility against the revision it loaded; a reload since
	// may have hidden the tool. Refused the same way (fail closed).
	if ok, why := visible(st, cl, name); !ok {
		if why != "" {
			g.refuse(ctx, st, name, id, session, req.Params.Arguments, warden.StageLookup, why)
		}
		return nil, unknownTool(name)
	}
	raw := json.RawMessage(req.Params.Arguments)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	args, err := warden.ParseArgs(raw)
	if err != nil {
		return textResult(fmt.Sprintf("Invalid arguments for %s: %v. Send the arguments as one JSON object.", name, err), true), nil
	}
	slot := newSlot(g, name, req.Session, req.Params.GetProgressToken())
	slot.server, slot.def, slot.remote = st.tools[name].tool.Server, st.tools[name].tool.Hash, st.tools[name].tool.Remote
	state, responses, err := g.relaySlot(ctx, f, st, cl, f.sessionOf(req.Session, cl), slot, name, args, req.Params.RequestState, req.Params.InputResponses, req.ClientCapabilities())
	if err != nil {
		return nil, err
	}
	slot.mrtr = f.mrtrOf(state, responses, req.ClientCapabilities())
	out, text, ok := g.govern(ctx, f, st, cl, req.Session, slot, name, args)
	if slot.ask != nil {
		return &mcp.CallToolResult{InputRequests: slot.ask.requests, RequestState: slot.ask.state}, nil
	}
	if !ok {
		return textResult(text, true), nil
	}
	if e := slot.protocolError(ctx, out); e != nil && f.kind == statelessFront {
		return nil, e
	}
	if out.Executed && slot.res != nil && slot.res.NeedsInput() {
		if slot.relay == nil || out.ModelText != slot.text {
			// Not a round the client can answer, or the pipeline changed what it says.
			return textResult("The server asked for input the gateway cannot pass on in this call: "+out.ModelText, true), nil
		}
		token, refusal := g.relayInput(ctx, f, st, cl, req.Session, slot, name, args, slot.res.InputRequests, slot.res.RequestState)
		if refusal != "" {
			return textResult(refusal, true), nil
		}
		return &mcp.CallToolResult{InputRequests: slot.res.InputRequests, RequestState: token}, nil
	}
	if out.Executed && slot.res != nil && out.ModelText == slot.text && !slot.res.IsError {
		return slot.res, nil
	}
	return textResult(out.ModelText, out.IsError), nil
}

// newSlot makes the per-call slot of a request of session ss (nil: none) for the
// governed name: progress is forwarded when the client sent a progress token, log
// messages when there is a session to send them to.
func newSlot(g *Gateway, name string, ss *mcp.ServerSession, token any) *resultSlot {
	slot := &resultSlot{}
	if token != nil && ss != nil {
		slot.progress = &progressForwarder{log: g.log, tool: name, session: ss, token: token}
	}
	if ss != nil {
		slot.logs = &logForwarder{log: g.log, tool: name, session: ss}
	}
	return slot
}

// govern runs one governed call (a tools/call, a prompts/get or a resources/read)
// through the caller's role guard with the slot in its context: the pipeline, a
// human decision when it asks one, the halt of the session and the fault memory.
// When ok is false the call ended without an outcome the client may use (halted,
// nobody decided, cancelled, refused by the resume): text is what the client reads.
// Otherwise out is the pipeline's outcome, a refusal included.
func (g *Gateway) govern(ctx context.Context, f *front, st *gatewayState, cl Client, ss *mcp.ServerSession, slot *resultSlot, name string, args warden.Args) (out warden.Outcome, text string, ok bool) {
	session := f.sessionOf(ss, cl)
	id := warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}
	// A halted session runs nothing more: the callers refuse a request of a halted
	// session before this, and an upstream's request during a call (sampling,
	// elicitation) is refused here.
	if text, halted := g.haltedText(f, ss, cl); halted {
		g.refuse(ctx, st, name, id, session, args.AppendJSON(nil), warden.StageGate, haltedReason)
		return warden.Outcome{}, text, false
	}
	view := st.views[cl.Role]
	slot.role = cl.Role
	if slot.server != "" {
		// nil on the stateless front: protocol 2026-07-28 has no server-to-client requests.
		slot.asks = g.clientAsks(f, st, cl, ss, slot.server)
	}
	ctx = context.WithValue(ctx, slotKey{}, slot)
	call := warden.Call{ID: newID("call"), Tool: name, Args: args, Identity: id, Session: session}
	if list, ok := g.faulted.Load(session); ok {
		call.Unauthorized = list.([]string)
	}
	out, err := view.guard.Call(ctx, call)
	defer g.noteFault(session, f.lasting(ss), &out)
	if err == nil && out.Status == warden.StatusPending && out.Pending != nil {
		var answer warden.Answer
		var text string
		if r := slot.relay; r != nil && r.approval.binding != "" && r.approval.binding == ApprovalBinding(id, out.Pending) {
			// A later round of a relayed call that was approved: the same call, with
			// the same arguments, definition and policy revision (its state says so).
			answer = warden.Approved{By: r.approval.by, Note: "approved in an earlier round of this multi-round call", Digest: out.Pending.ApprovalDigest()}
		} else if m := slot.mrtr; m != nil && st.cfg.Elicitation && cl.SelfApprove && (m.canElicit || m.state != "") {
			// The client's own user is asked, by multi-round trip (see mrtr.go).
			answer, text = g.mrtrDecide(ctx, cl, out.Pending, out.Revision, slot)
		} else {
			answer, text = g.decide(ctx, f, st, cl, session, out.Pending, ss)
		}
		if answer == nil {
			return out, text, false
		}
		if a, ok := answer.(warden.Approved); ok {
			until := time.Now().Add(mrtrStateTTL).Unix()
			if r := slot.relay; r != nil && r.approval.binding == ApprovalBinding(id, out.Pending) {
				until = r.approval.until // carried over: it keeps the time of the approval
			}
			slot.approved = relayApproval{binding: ApprovalBinding(id, out.Pending), by: a.By, until: until}
		}
		if text, halted := g.haltedText(f, ss, cl); halted {
			// The session was halted while the call waited: an approval given since
			// does not run it. The refusal is recorded as the call's decision.
			out, _ = view.guard.Resume(ctx, *out.Pending, warden.Declined{By: "warden-gateway", Note: "the session was halted while the call waited"}, warden.Caller{Identity: id, Session: session, Unauthorized: call.Unauthorized})
			return out, text, false
		}
		if why := g.staleSince(st, f, cl); why != "" {
			// A reload while the call waited (for a task, up to approvals.expires) changed
			// the policy it was judged under or removed or changed its identity: an
			// approval given since does not run it under the configuration of before.
			out, _ = view.guard.Resume(ctx, *out.Pending, warden.Declined{By: "warden-gateway", Note: why}, warden.Caller{Identity: id, Session: session, Unauthorized: call.Unauthorized})
			return out, "The call did not run: " + why + ". Call again to have it judged under the configuration now in force.", false
		}
		out, err = view.guard.Resume(ctx, *out.Pending, answer, warden.Caller{Identity: id, Session: session, Unauthorized: call.Unauthorized})
	}
	var halt *warden.PolicyHaltError
	if errors.As(err, &halt) {
		text := out.ModelText
		if text == "" {
			text = halt.TellLLM
		}
		if f.kind == statelessFront {
			g.principalHalts.Store(true) // set before the halt is: haltedText reads it first
		}
		if _, already := g.halted.LoadOrStore(session, text); !already && f.lasting(ss) != nil {
			// The halt lasts as long as the session; forget it once the session ends.
			go func(ss *mcp.ServerSession) {
				ss.Wait()
				g.halted.Delete(session)
			}(ss)
		}
		return out, text, false
	}
	if err != nil || out.Status == warden.StatusPending {
		// Cancelled, refused by the resume, or a second question on one call (which
		// cannot be answered in the same call): never a success.
		text := out.ModelText
		if text == "" && err != nil {
			text = "The call did not run: " + err.Error()
		}
		return out, text, false
	}
	return out, "", true
}

// staleSince reports why a call of cl that began under st may no longer run under
// the state now in force ("" when it may): a reload since removed or changed its
// identity (its token's entry; for a JWT's client, any change of the oauth section),
// or changed the policy revision of its role.
func (g *Gateway) staleSince(st *gatewayState, f *front, cl Client) string {
	cur := g.state.Load()
	if cur == st {
		return ""
	}
	if now, ok := reidentify(cur, f, cl); !ok || now != cl {
		return "a reload while the call waited removed or changed this client's identity"
	}
	if f.kind != stdioFront && cl.TokenHash == "" && !reflect.DeepEqual(st.cfg.OAuth, cur.cfg.OAuth) {
		// A JWT's client was mapped from its claims, which are not kept: any change of
		// the mappings may have unmapped it.
		return "a reload while the call waited changed the oauth mappings this client's token was mapped by"
	}
	was, now := st.views[cl.Role], cur.views[cl.Role]
	if was == nil || now == nil || was.pol.Revision() != now.pol.Revision() {
		return "the policy changed while the call waited"
	}
	return ""
}

// Reasons of the refusals the gateway records itself, before the pipeline.
const (
	haltedReason      = "session halted: every call after a halt is refused"
	quarantinedReason = "tool definition changed since it was approved"
)

// noteFault remembers, for the rest of the session, a tool whose authorization faulted
// (a checker errored, panicked or timed out): later calls to it are refused without
// asking the checker again, as the fault text says. Calls without a session are not
// tracked: there is no run to remember it for.
func (g *Gateway) noteFault(session string, ss *mcp.ServerSession, out *warden.Outcome) {
	name, ok := warden.UnauthorizedTarget(*out)
	if session == "" || !ok {
		return
	}
	g.faultMu.Lock()
	defer g.faultMu.Unlock()
	old, known := g.faulted.Load(session)
	var list []string
	if known {
		list = old.([]string)
	}
	if slices.Contains(list, name) {
		return
	}
	g.faulted.Store(session, append(slices.Clip(list), name))
	if !known && ss != nil {
		// Forget the session's faults once it ends.
		go func(ss *mcp.ServerSession) {
			ss.Wait()
			g.faulted.Delete(session)
		}(ss)
	}
}

// refuse is the one path of a call the gateway refuses before the pipeline (a halted
// session, a tool hidden or quarantined): like a refusal in the pipeline, the call is
// recorded in the audit log as refused and never executed, and a
// [warden.EventToolEnd] with its stage, status and reason goes to every sink. A
// failure to record is logged; the call is refused either way.
func (g *Gateway) refuse(ctx context.Context, st *gatewayState, name string, id warden.Identity, session string, arguments json.RawMessage, stage warden.Stage, reason string) {
	g.record(ctx, st, store.CallRecord{
		Session: session, Tool: name, Identity: id,
		Stage: stage, Reason: reason, Status: warden.StatusRefused,
	}, arguments)
}

// record writes one audit record the gateway makes itself, outside the pipeline (a
// refusal before it, a completion, a resource subscription): rec with a new call id,
// the revision of st and the arguments (digest, and the arguments themselves unless
// audit.redact_args), and sends the matching [warden.EventToolEnd] to every sink. A
// failure to record is logged.
func (g *Gateway) record(ctx context.Context, st *gatewayState, rec store.CallRecord, arguments json.RawMessage) {
	rec.CallID, rec.Revision = newID("call"), st.pol.Revision()
	if args, err := warden.ParseArgs(arguments); err == nil {
		rec.ArgsDigest = args.Digest()
		if !st.cfg.RedactArgs {
			rec.Args = args.AppendJSON(nil)
		}
	}
	ctx = context.WithoutCancel(ctx) // what happened is recorded and told
	ctx = withRefusedOrigin(ctx, st, rec.Tool)
	t0 := time.Now()
	err := g.opts.Store.RecordCall(ctx, rec)
	g.metrics.observeAudit("record", time.Since(t0), err)
	if err != nil {
		g.log.Error("cannot record a call", "tool", rec.Tool, "status", rec.Status, "error", err)
	}
	now := time.Now()
	e := warden.Event{
		Name: warden.EventToolEnd, Time: now, Start: now.Add(-rec.Duration), Duration: rec.Duration,
		Session: rec.Session, Identity: rec.Identity, CallID: rec.CallID, Tool: rec.Tool, Revision: rec.Revision,
		Executed: rec.Executed, Status: rec.Status, Stage: rec.Stage, Reason: rec.Reason, RuleID: rec.RuleID,
	}
	if eff, err := warden.ParseEffect(rec.Effect); err == nil {
		e.Effect = eff
	}
	g.sink.Emit(ctx, e)
}

func textResult(text string, isErr bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
