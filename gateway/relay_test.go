//lint:file-ignore SA1019 relayed input requests include sampling and roots, deprecated from 2026-07-28 on

package gateway_test

// The relay of an upstream's own multi-round trips (protocol 2026-07-28,
// input_required results) end to end: a real gateway, the conformance fixture as a
// stdio upstream, and a go-sdk client at 2026-07-28 with its own multi-round trips
// off, so the test sees each input_required result and retries itself.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

// relayIdentities: ann (self-approving) and bob in the default tenant, and another
// ann in tenant globex.
const relayIdentities = `listen: 127.0.0.1:0
stdio:
  principal: local-user
clients:
  - principal: ann
    token_env: GW_WRITER_TOKEN
    self_approve: true
  - principal: bob
    token_env: GW_BOB_TOKEN
  - principal: ann
    tenant: globex
    token_env: GW_READER_TOKEN
`

// relayAllowAll allows everything, the relayed input requests included.
const relayAllowAll = "version: 1\nmode: allow_all\n"

const (
	relayMulti          = "mcp__conf__test_input_required_result_multi_round"
	relayTampered       = "The requestState of this retry is not valid: it was changed, or it was not issued by this gateway for a relayed question. Nothing was forwarded; call again without it to be asked again."
	relayReplayed       = "This requestState was already used. Nothing was forwarded; call again to be asked again."
	relayOtherPrincipal = "The requestState of this retry was issued to another principal. Nothing was forwarded."
	relayNoStep1Answer  = "The retry does not answer every question it was asked: no answer of the kind asked for step1 (elicitation/create). Nothing was forwarded; call again to be asked again."
)

func relayStart(t *testing.T, policy, extra string) *gwEnv {
	t.Helper()
	mcptest.PeersOnPATH(t, "./internal/conformanceserver")
	return gwStart(t, gwSetup{policy: policy, servers: askServers, transport: askTransport, identities: relayIdentities, extra: extra})
}

// relayClient is a 2026-07-28 client that hands input_required results to the test;
// it declares elicitation, and sampling too when sampling is set.
func relayClient(t *testing.T, e *gwEnv, token string, sampling bool) *mcp.ClientSession {
	t.Helper()
	opts := manualMRTR()
	if sampling {
		opts.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, fmt.Errorf("the test answers input requests itself")
		}
	}
	return connect2026(t, e.url, token, e.tr, opts)
}

// relayTry calls tool with args, state and responses, and returns the result or the
// protocol error.
func relayTry(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, state string, resps mcp.InputResponseMap) (*mcp.CallToolResult, error) {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, RequestState: state, InputResponses: resps})
}

// relayOK is relayTry that must give a result.
func relayOK(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, state string, resps mcp.InputResponseMap) *mcp.CallToolResult {
	t.Helper()
	res, err := relayTry(t, cs, tool, args, state, resps)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

// relayAsked is relayOK that must give an input_required result asking exactly ids
// under a requestState.
func relayAsked(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, state string, resps mcp.InputResponseMap, ids ...string) *mcp.CallToolResult {
	t.Helper()
	res := relayOK(t, cs, tool, args, state, resps)
	if !res.NeedsInput() || res.RequestState == "" || len(res.InputRequests) != len(ids) {
		t.Fatalf("%s: want input_required asking %v with a requestState, got %+v (%s)", tool, ids, res, mcptest.ResultText(res))
	}
	for _, id := range ids {
		if res.InputRequests[id] == nil {
			t.Fatalf("%s: input requests %v do not ask %s", tool, res.InputRequests, id)
		}
	}
	return res
}

// relayRPCError checks that err is a JSON-RPC error of code with exactly message.
func relayRPCError(t *testing.T, what string, res *mcp.CallToolResult, err error, code int64, message string) {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("%s: want JSON-RPC error %d %q, got result %+v (%s), error %v", what, code, message, res, resultText(res), err)
	}
	if rpc.Code != code || rpc.Message != message {
		t.Fatalf("%s: JSON-RPC error %d %q\nwant %d %q", what, rpc.Code, rpc.Message, code, message)
	}
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	return mcptest.ResultText(res)
}

// relayInner returns the upstream's state a relay state carries (its payload is
// base64url JSON; field "u").
func relayInner(t *testing.T, state string) string {
	t.Helper()
	payload, _, ok := strings.Cut(state, ".")
	if !ok {
		t.Fatalf("requestState %q is not payload.mac", state)
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatalf("requestState payload: %v", err)
	}
	var c struct {
		U string `json:"u"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("requestState payload %s: %v", raw, err)
	}
	return c.U
}

// fixtureRound decodes the fixture's own state (payload.mac, payload base64url JSON).
func fixtureRound(t *testing.T, state string) string {
	t.Helper()
	payload, _, _ := strings.Cut(state, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatalf("the fixture's state %q: %v", state, err)
	}
	return string(raw)
}

func accept(field, value string) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{field: value}}
}

// The happy path: two relayed rounds of the fixture's multi-round tool, each under a
// requestState of the gateway's that carries (and hides from verbatim reuse) the
// fixture's, then the final text; the audit log has one record per round and one
// per relayed elicitation, each judged and recorded as passed to the client.
func TestRelayMultiRound(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	cs := relayClient(t, e, gwWriterToken, false)

	r1 := relayAsked(t, cs, relayMulti, nil, "", nil, "step1")
	if got := jsonOf(t, r1.InputRequests["step1"]); got != `{"mode":"form","message":"Step 1: What is your name?","requestedSchema":{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}}` {
		t.Errorf("step1 as the client got it: %s", got)
	}
	up1 := relayInner(t, r1.RequestState)
	if got := fixtureRound(t, up1); got != `{"tool":"test_input_required_result_multi_round","round":1}` {
		t.Errorf("the upstream state inside the gateway's: %s", got)
	}
	if r1.RequestState == up1 || strings.Contains(r1.RequestState, up1) {
		t.Errorf("the client got the fixture's own state %q, want the gateway's", up1)
	}

	r2 := relayAsked(t, cs, relayMulti, nil, r1.RequestState, mcp.InputResponseMap{"step1": accept("name", "Ann")}, "step2")
	up2 := relayInner(t, r2.RequestState)
	if got := fixtureRound(t, up2); got != `{"tool":"test_input_required_result_multi_round","round":2,"data":{"name":"Ann"}}` {
		t.Errorf("round 2's upstream state: %s", got)
	}
	if r2.RequestState == r1.RequestState || strings.Contains(r2.RequestState, up2) {
		t.Errorf("round 2's requestState is not a new state of the gateway's: %q", r2.RequestState)
	}
	gwWant(t, relayOK(t, cs, relayMulti, nil, r2.RequestState, mcp.InputResponseMap{"step2": accept("color", "blue")}), false, "Hello Ann, your favorite color is blue.")

	calls := e.calls(t, relayMulti, "ann")
	if len(calls) != 3 {
		t.Fatalf("%d audit records of the call, want 3 (one per round): %+v", len(calls), calls)
	}
	for i, r := range calls {
		if !r.Executed || r.Status != warden.StatusRan || r.Stage != warden.StageExecute || r.Identity.Principal != "ann" || string(r.Args) != "{}" {
			t.Errorf("audit of round %d: %+v", i, r)
		}
	}
	asks := e.calls(t, "elicitation:conf", "ann")
	if len(asks) != 2 {
		t.Fatalf("%d audit records of relayed elicitations, want 2: %+v", len(asks), asks)
	}
	for i, want := range []string{jsonOf(t, r1.InputRequests["step1"]), jsonOf(t, r2.InputRequests["step2"])} {
		r := asks[i]
		if !r.Executed || r.Status != warden.StatusRan || r.Identity.Principal != "ann" || string(r.Args) != want {
			t.Errorf("audit of relayed elicitation %d: %+v\nwant args %s", i, r, want)
		}
		if r.Seq <= calls[i].Seq || r.Seq >= calls[i+1].Seq {
			t.Errorf("relayed elicitation %d (seq %d) is not recorded between rounds %d (seq %d) and %d (seq %d)", i, r.Seq, i, calls[i].Seq, i+1, calls[i+1].Seq)
		}
	}
}

// A relayed elicitation the policy refuses (rules mode allowing only the tool) ends
// the call with a tool error naming the input request and the policy's text; the
// client gets no input requests, and the audit log records the refusal.
func TestRelayElicitationRefused(t *testing.T) {
	e := relayStart(t, "version: 1\nmode: rules\nrules:\n  allow:\n    "+relayMulti+": ['*']\n", "")
	cs := relayClient(t, e, gwWriterToken, false)
	res := relayOK(t, cs, relayMulti, nil, "", nil)
	if res.NeedsInput() || res.RequestState != "" {
		t.Errorf("the client got the refused input requests: %+v", res)
	}
	gwWant(t, res, true, `The server conf asked the client for elicitation/create (input request "step1"), which was refused: [permission denied: no matching rule, default deny] The call did not complete.`)
	ask := e.lastCall(t, "elicitation:conf", "ann")
	if ask.Executed || ask.Status != warden.StatusRefused || ask.Stage != warden.StagePermission || ask.Effect != "deny" || ask.RuleID != "default" ||
		string(ask.Args) != `{"mode":"form","message":"Step 1: What is your name?","requestedSchema":{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}}` {
		t.Errorf("audit of the refused elicitation: %+v (args %s)", ask, ask.Args)
	}
	call := e.lastCall(t, relayMulti, "ann")
	if !call.Executed || call.Seq >= ask.Seq {
		t.Errorf("audit of the call whose input request was refused: %+v (elicitation seq %d)", call, ask.Seq)
	}
}

// An input request of a kind the client did not declare in its request ends the
// call with a tool error saying so; nothing of it reaches the client, and nothing
// else of the round is judged.
func TestRelayUndeclaredKind(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	cs := relayClient(t, e, gwWriterToken, false) // elicitation only
	res := relayOK(t, cs, "mcp__conf__test_input_required_result_sampling", nil, "", nil)
	if res.NeedsInput() {
		t.Errorf("the client got an undeclared input request: %+v", res)
	}
	gwWant(t, res, true, `The server conf asked the client for sampling/createMessage (input request "capital_question"), which the client did not declare in this request. The call did not complete.`)
	// The go-sdk client declares roots by default: the first undeclared request (by
	// id) is the sampling one.
	res = relayOK(t, cs, "mcp__conf__test_input_required_result_multiple_inputs", nil, "", nil)
	gwWant(t, res, true, `The server conf asked the client for sampling/createMessage (input request "greeting"), which the client did not declare in this request. The call did not complete.`)
	if recs := e.calls(t, "sampling:conf", ""); len(recs) != 0 {
		t.Errorf("an undeclared sampling request was judged: %+v", recs)
	}
	if recs := e.calls(t, "elicitation:conf", ""); len(recs) != 0 {
		t.Errorf("a round with an undeclared request had its elicitation judged: %+v", recs)
	}
	// A client that declares sampling is asked, and its answer completes the call.
	sc := relayClient(t, e, gwWriterToken, true)
	r := relayAsked(t, sc, "mcp__conf__test_input_required_result_sampling", nil, "", nil, "capital_question")
	gwWant(t, relayOK(t, sc, "mcp__conf__test_input_required_result_sampling", nil, r.RequestState, mcp.InputResponseMap{
		"capital_question": &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris"}},
	}), false, "LLM response: Paris")
	if recs := e.calls(t, "sampling:conf", "ann"); len(recs) != 1 || !recs[0].Executed || recs[0].Status != warden.StatusRan {
		t.Errorf("audit of the relayed sampling request: %+v", recs)
	}
}

// A retry's relay state is checked before anything is sent: a changed state,
// another principal's (another tenant's too), another call's or tool's, a retry that
// does not answer every question with an answer of the kind asked, a replay, and a
// state issued under another policy revision are each a -32602 error saying why,
// and nothing runs upstream for them.
func TestRelayRetryRefusals(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	cs := relayClient(t, e, gwWriterToken, false)
	r1 := relayAsked(t, cs, relayMulti, nil, "", nil, "step1")
	step1 := mcp.InputResponseMap{"step1": accept("name", "Ann")}
	before := len(e.calls(t, relayMulti, ""))

	payload, sig, _ := strings.Cut(r1.RequestState, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[len(b)/2] == 'A' {
			b[len(b)/2] = 'B'
		} else {
			b[len(b)/2] = 'A'
		}
		return string(b)
	}
	for _, bad := range []string{flip(payload) + "." + sig, payload + "." + flip(sig), payload + ".", "x.y"} {
		res, err := relayTry(t, cs, relayMulti, nil, bad, step1)
		relayRPCError(t, "tampered "+bad, res, err, jsonrpc.CodeInvalidParams, relayTampered)
	}
	res, err := relayTry(t, relayClient(t, e, gwBobToken, false), relayMulti, nil, r1.RequestState, step1)
	relayRPCError(t, "another principal", res, err, jsonrpc.CodeInvalidParams, relayOtherPrincipal)
	res, err = relayTry(t, relayClient(t, e, gwReaderToken, false), relayMulti, nil, r1.RequestState, step1)
	relayRPCError(t, "the same principal name in another tenant", res, err, jsonrpc.CodeInvalidParams, relayOtherPrincipal)
	res, err = relayTry(t, cs, relayMulti, map[string]any{"x": 1}, r1.RequestState, step1)
	relayRPCError(t, "other arguments", res, err, jsonrpc.CodeInvalidParams,
		"The requestState of this retry was issued for another call ("+relayMulti+", not this call of "+relayMulti+" with these arguments). Nothing was forwarded; call again to be asked about this one.")
	const other = "mcp__conf__test_input_required_result_elicitation"
	res, err = relayTry(t, cs, other, nil, r1.RequestState, mcp.InputResponseMap{"user_name": accept("name", "Mallory")})
	relayRPCError(t, "another tool", res, err, jsonrpc.CodeInvalidParams,
		"The requestState of this retry was issued for another call ("+relayMulti+", not this call of "+other+" with these arguments). Nothing was forwarded; call again to be asked about this one.")
	for what, resps := range map[string]mcp.InputResponseMap{
		"no answers":       nil,
		"another id":       {"step2": accept("name", "Ann")},
		"a sampling reply": {"step1": &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Ann"}}},
		"a roots reply":    {"step1": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///ann"}}}},
	} {
		res, err := relayTry(t, cs, relayMulti, nil, r1.RequestState, resps)
		relayRPCError(t, what, res, err, jsonrpc.CodeInvalidParams, relayNoStep1Answer)
	}
	// Each refused retry is recorded as refused, never as executed: 4 tampered, 2
	// other principals, other arguments and 4 answers that are not the one asked.
	refusedRetries := func(want int) {
		t.Helper()
		var refused int
		for _, r := range e.calls(t, relayMulti, "")[before:] {
			if r.Executed || r.Status != warden.StatusRefused || r.Stage != warden.StageHuman || !strings.HasPrefix(r.Reason, "the requestState of a relayed retry was refused: ") {
				continue
			}
			refused++
		}
		if refused != want {
			t.Errorf("%d refused retries recorded, want %d: %+v", refused, want, e.calls(t, relayMulti, "")[before:])
		}
	}
	refusedRetries(11)

	// The refusals above did not use the state up: the right retry goes on, once.
	r2 := relayAsked(t, cs, relayMulti, nil, r1.RequestState, step1, "step2")
	res, err = relayTry(t, cs, relayMulti, nil, r1.RequestState, step1)
	relayRPCError(t, "replayed", res, err, jsonrpc.CodeInvalidParams, relayReplayed)

	// A policy change between the rounds: the state of the old revision is refused.
	old := e.gw.Revision()
	mcptest.WriteFile(t, e.dir, "policy.yaml", []byte(relayAllowAll+"conditions:\n  - id: never\n    when: 'tool == \"nothing\"'\n    effect: deny\n"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.gw.Reload(ctx, e.cfg); err != nil {
		t.Fatal(err)
	}
	if e.gw.Revision() == old {
		t.Fatal("the changed policy has the same revision")
	}
	res, err = relayTry(t, cs, relayMulti, nil, r2.RequestState, mcp.InputResponseMap{"step2": accept("color", "blue")})
	relayRPCError(t, "policy reloaded", res, err, jsonrpc.CodeInvalidParams,
		fmt.Sprintf("The policy changed since this question was asked (revision %s, now %s). Nothing was forwarded; call again to be judged under the current policy.", old, e.gw.Revision()))

	refusedRetries(13) // and the replay and the retry of the old revision
	var executed []store.CallRecord
	for _, r := range e.calls(t, relayMulti, "") {
		if r.Executed {
			executed = append(executed, r)
		}
	}
	if len(executed) != before+1 {
		t.Fatalf("%d executed audit records of the tool, want %d (the first round and the one right retry): %+v", len(executed), before+1, executed)
	}
	for _, r := range executed {
		if r.Identity.Principal != "ann" || r.Identity.Tenant != "" {
			t.Errorf("a refused retry ran: %+v", r)
		}
	}
}

// Answers without a relay state never reach the upstream: a first call that brings
// inputResponses (or an approval-looking state with them) is sent upstream without
// them, so the upstream asks as on any first call.
func TestRelaySmuggledAnswers(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	cs := relayClient(t, e, gwWriterToken, false)
	const tool = "mcp__conf__test_input_required_result_elicitation"
	mallory := mcp.InputResponseMap{"user_name": accept("name", "Mallory")}
	r := relayAsked(t, cs, tool, nil, "", mallory, "user_name")
	if r.RequestState == "" {
		t.Fatal("no relay state")
	}
	// An approval-looking state with an answer to another question is refused as a
	// relay state that does not verify.
	res, err := relayTry(t, cs, tool, nil, "eyJ2IjoxfQ.AAAA", mallory)
	relayRPCError(t, "a made-up state", res, err, jsonrpc.CodeInvalidParams, relayTampered)
	// A made-up state with only the gateway's approval id goes the approval path:
	// the call is not escalated, so it runs as a first call, without the answers.
	relayAsked(t, cs, tool, nil, "eyJ2IjoxfQ.AAAA", mcp.InputResponseMap{"warden_approval": &mcp.ElicitResult{Action: "accept"}}, "user_name")
	gwWant(t, relayOK(t, cs, tool, nil, r.RequestState, mcp.InputResponseMap{"user_name": accept("name", "Ann")}), false, "Hello, Ann!")

	// A session client (2025-11-25) has neither relay nor approval states honoured:
	// its answers are not forwarded, and the upstream's question goes to its
	// elicitation handler.
	var asked []*mcp.ElicitParams
	sc := e.connect(t, gwBobToken, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params)
		return accept("name", "Sue"), nil
	}})
	r3 := relayAsked(t, cs, tool, nil, "", nil, "user_name")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sres, err := sc.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: r3.RequestState, InputResponses: mallory})
	if err != nil {
		t.Fatal(err)
	}
	gwWant(t, sres, false, "Hello, Sue!")
	if len(asked) != 1 || asked[0].Message != "What is your name?" {
		t.Errorf("the session client's handler was asked %+v, want the fixture's question once", asked)
	}
	// ann's state is still open: the session client's call did not claim it.
	gwWant(t, relayOK(t, cs, tool, nil, r3.RequestState, mcp.InputResponseMap{"user_name": accept("name", "Ann")}), false, "Hello, Ann!")
}

// relayEscalate escalates the multi-round tool; ann may approve her own asks by
// multi-round trip.
const relayEscalate = `version: 1
mode: allow_all
conditions:
  - id: confirm-multi
    when: 'tool == "mcp__conf__test_input_required_result_multi_round"'
    effect: escalate
    rationale: the multi-round tool needs a person's approval
`

// A call that needs a person's approval is asked once: the gateway's own question
// comes first (round 0), the accept runs the first upstream round, whose question is
// relayed; its retry carries the approval (not asked again) and so does the next,
// up to the final text. A later round with other arguments is refused, and a new
// call is asked again.
func TestRelayApprovalCarriedAcrossRounds(t *testing.T) {
	e := relayStart(t, relayEscalate, mrtrExtra)
	cs := relayClient(t, e, gwWriterToken, false)

	r0 := relayAsked(t, cs, relayMulti, nil, "", nil, "warden_approval")
	if q := r0.InputRequests["warden_approval"].(*mcp.ElicitParams); !strings.Contains(q.Message, "the multi-round tool needs a person's approval") {
		t.Errorf("the approval question: %s", q.Message)
	}
	if len(e.calls(t, "elicitation:conf", "")) != 0 {
		t.Error("the gateway's own question was recorded as a relayed elicitation")
	}
	r1 := relayAsked(t, cs, relayMulti, nil, r0.RequestState, mcp.InputResponseMap{"warden_approval": &mcp.ElicitResult{Action: "accept"}}, "step1")
	if got := fixtureRound(t, relayInner(t, r1.RequestState)); got != `{"tool":"test_input_required_result_multi_round","round":1}` {
		t.Errorf("round 1's upstream state: %s", got)
	}
	// Other arguments with round 1's state: refused, nothing is asked or sent.
	res, err := relayTry(t, cs, relayMulti, map[string]any{"x": 1}, r1.RequestState, mcp.InputResponseMap{"step1": accept("name", "Ann")})
	relayRPCError(t, "a later round with other arguments", res, err, jsonrpc.CodeInvalidParams,
		"The requestState of this retry was issued for another call ("+relayMulti+", not this call of "+relayMulti+" with these arguments). Nothing was forwarded; call again to be asked about this one.")

	r2 := relayAsked(t, cs, relayMulti, nil, r1.RequestState, mcp.InputResponseMap{"step1": accept("name", "Ann")}, "step2")
	gwWant(t, relayOK(t, cs, relayMulti, nil, r2.RequestState, mcp.InputResponseMap{"step2": accept("color", "green")}), false, "Hello Ann, your favorite color is green.")

	var ran []string
	for _, r := range e.calls(t, relayMulti, "ann") {
		if r.Executed {
			ran = append(ran, fmt.Sprintf("%s by %q", r.Status, r.ApprovedBy))
		}
	}
	if want := `[ran by "ann" ran by "ann" ran by "ann"]`; fmt.Sprint(ran) != want {
		t.Errorf("executed rounds in the audit log: %v, want %s", ran, want)
	}
	if ps := e.pending(t, relayMulti, "{}"); len(ps) != 0 {
		t.Errorf("the carried approval left operator decisions: %+v", ps)
	}
	// A new call of the same tool is a new call: asked again.
	relayAsked(t, cs, relayMulti, nil, "", nil, "warden_approval")
	// A relay state presented with the gateway's approval answer instead of the
	// upstream's: the state verifies as a relay state, and the retry answers none of
	// its questions.
	r1b := relayAsked(t, cs, relayMulti, nil, relayAsked(t, cs, relayMulti, nil, "", nil, "warden_approval").RequestState,
		mcp.InputResponseMap{"warden_approval": &mcp.ElicitResult{Action: "accept"}}, "step1")
	res, err = relayTry(t, cs, relayMulti, nil, r1b.RequestState, mcp.InputResponseMap{"warden_approval": &mcp.ElicitResult{Action: "accept"}})
	relayRPCError(t, "a relay state with an approval answer", res, err, jsonrpc.CodeInvalidParams, relayNoStep1Answer)
	// An approval state presented with the upstream's answers: not a relay state.
	a := relayAsked(t, cs, relayMulti, nil, "", nil, "warden_approval")
	res, err = relayTry(t, cs, relayMulti, nil, a.RequestState, mcp.InputResponseMap{"warden_approval": &mcp.ElicitResult{Action: "accept"}, "step1": accept("name", "Ann")})
	relayRPCError(t, "an approval state with an upstream answer", res, err, jsonrpc.CodeInvalidParams, relayTampered)
}

// An upstream's -32021 (the request lacks a client capability it needs) reaches a
// 2026-07-28 client as that error; a session client gets a tool error as before.
// A 2026-07-28 client that declares the capability is asked, and completes.
func TestRelayMissingCapability(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	const tool = "mcp__conf__test_missing_capability"
	res, err := relayTry(t, relayClient(t, e, gwWriterToken, false), tool, nil, "", nil)
	relayRPCError(t, "a 2026-07-28 client without sampling", res, err, mcp.CodeMissingRequiredClientCapabilities,
		"test_missing_capability needs a client capability this request does not declare")
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && string(rpc.Data) != `{"requiredCapabilities":{"sampling":{}}}` {
		t.Errorf("the -32021 error's data: %s", rpc.Data)
	}
	rec := e.lastCall(t, tool, "ann")
	if !rec.Executed || rec.Status != warden.StatusFailed {
		t.Errorf("audit of the call refused for a capability: %+v", rec)
	}

	gwWant(t, gwCall(t, e.connect(t, gwBobToken, nil), tool, map[string]any{}), true,
		`Tool 'mcp__conf__test_missing_capability' failed: server "conf": tool "test_missing_capability": calling "tools/call": test_missing_capability needs a client capability this request does not declare`)

	sc := relayClient(t, e, gwWriterToken, true)
	r := relayAsked(t, sc, tool, nil, "", nil, "sample")
	gwWant(t, relayOK(t, sc, tool, nil, r.RequestState, mcp.InputResponseMap{
		"sample": &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "anything"}},
	}), false, "LLM response: anything")
}

// prompts/get is relayed the same way: the fixture's prompt asks for the user's
// context; the client gets the question under a state of the gateway's, and its
// retry gets the messages. The state is the prompt's: a tool call cannot use it.
func TestRelayPrompt(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	cs := relayClient(t, e, gwWriterToken, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var name string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p.Name, "test_input_required_result_prompt") {
			name = p.Name
		}
	}
	if name == "" {
		t.Fatal("the gateway lists no input-required prompt")
	}
	r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if !r.NeedsInput() || r.RequestState == "" || len(r.InputRequests) != 1 || r.InputRequests["user_context"] == nil || len(r.Messages) != 0 {
		t.Fatalf("prompts/get %s: want input_required asking user_context under a requestState, got %+v", name, r)
	}
	if relayInner(t, r.RequestState) != "" {
		t.Errorf("the fixture's prompt issues no state, the gateway's carries %q", relayInner(t, r.RequestState))
	}
	res, err := relayTry(t, cs, "mcp__conf__test_input_required_result_elicitation", nil, r.RequestState, mcp.InputResponseMap{"user_context": accept("context", "c")})
	relayRPCError(t, "a prompt's state on a tool call", res, err, jsonrpc.CodeInvalidParams,
		"The requestState of this retry was issued for another call (prompt:"+name+", not this call of mcp__conf__test_input_required_result_elicitation with these arguments). Nothing was forwarded; call again to be asked about this one.")
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, RequestState: r.RequestState, InputResponses: mcp.InputResponseMap{"user_context": accept("context", "the audit log")}})
	if err != nil {
		t.Fatal(err)
	}
	if s := jsonOf(t, got.Messages); s != `[{"content":{"type":"text","text":"Use this context: the audit log"},"role":"user"}]` {
		t.Errorf("the prompt's messages: %s", s)
	}
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, RequestState: r.RequestState, InputResponses: mcp.InputResponseMap{"user_context": accept("context", "again")}})
	relayRPCError(t, "a replayed prompt state", nil, err, jsonrpc.CodeInvalidParams, relayReplayed)
	if recs := e.calls(t, "prompt:"+name, "ann"); len(recs) != 3 || !recs[0].Executed || !recs[1].Executed ||
		recs[2].Executed || recs[2].Status != warden.StatusRefused || recs[2].Reason != "the requestState of a relayed retry was refused: "+relayReplayed {
		t.Errorf("audit records of the prompt: %+v, want one executed per round and the refused replay", recs)
	}
	if recs := e.calls(t, "elicitation:conf", "ann"); len(recs) != 1 || string(recs[0].Args) != jsonOf(t, r.InputRequests["user_context"]) {
		t.Errorf("audit of the prompt's relayed elicitation: %+v", recs)
	}
}

// Attacks on the relay: the fixture's own state, read out of the gateway's (it is
// readable, not secret) and sent raw, is never forwarded; and a round refused for
// an input request the client did not declare records none of its other input
// requests as passed to the client (the client got none of them).
func TestRelayAttacks(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	cs := relayClient(t, e, gwWriterToken, false)
	r1 := relayAsked(t, cs, relayMulti, nil, "", nil, "step1")
	inner := relayInner(t, r1.RequestState)
	res, err := relayTry(t, cs, relayMulti, nil, inner, mcp.InputResponseMap{"step1": accept("name", "Mallory")})
	relayRPCError(t, "the upstream's raw state with an answer", res, err, jsonrpc.CodeInvalidParams, relayTampered)
	// Without answers it goes the approval path, which ignores it: the upstream gets
	// a first call, and asks step1 again (its round 1, not round 2 with Mallory).
	again := relayAsked(t, cs, relayMulti, nil, inner, nil, "step1")
	if got := fixtureRound(t, relayInner(t, again.RequestState)); got != `{"tool":"test_input_required_result_multi_round","round":1}` {
		t.Errorf("the upstream's state after a raw-state retry: %s", got)
	}

	// A client that declares sampling but not elicitation: the round asks both (and
	// roots, which the go-sdk client declares by default).
	sc := connect2026(t, e.url, gwBobToken, e.tr, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, fmt.Errorf("the test answers input requests itself")
		},
	})
	res = relayOK(t, sc, "mcp__conf__test_input_required_result_multiple_inputs", nil, "", nil)
	gwWant(t, res, true, `The server conf asked the client for elicitation/create (input request "user_name"), which the client did not declare in this request. The call did not complete.`)
	for _, r := range e.calls(t, "sampling:conf", "bob") {
		if r.Executed || r.Status == warden.StatusRan {
			t.Errorf("a sampling request the client never got is recorded as passed to it: %+v", r)
		}
	}
}

// Answers to questions the round did not ask are dropped: the fixture's
// capabilities tool asks by the kinds each request declares, so a retry that now
// declares sampling and brings a sampling answer the first round did not ask would
// complete if that answer reached it; the gateway drops it, and the fixture asks
// again, for all three.
func TestRelayExtraAnswersDropped(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	const tool = "mcp__conf__test_input_required_result_capabilities"
	r := relayAsked(t, relayClient(t, e, gwWriterToken, false), tool, nil, "", nil, "user_name", "client_roots")
	sc := relayClient(t, e, gwWriterToken, true)
	again := relayAsked(t, sc, tool, nil, r.RequestState, mcp.InputResponseMap{
		"user_name":    accept("name", "Ann"),
		"client_roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///ann"}}},
		"greeting":     &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi"}},
	}, "user_name", "client_roots", "greeting")
	gwWant(t, relayOK(t, sc, tool, nil, again.RequestState, mcp.InputResponseMap{
		"user_name":    accept("name", "Ann"),
		"client_roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///ann"}}},
		"greeting":     &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi"}},
	}), false, "Answered: client_roots, greeting, user_name")
}

// A principal halted between two rounds gets the halt's text on the retry, and the
// upstream gets nothing: the relay state is not even claimed.
func TestRelayHaltBetweenRounds(t *testing.T) {
	e := relayStart(t, relayAllowAll+`conditions:
  - id: stop
    when: 'tool == "mcp__conf__test_simple_text"'
    effect: halt
    reason: test:stop
    tell_llm: "This principal is stopped."
`, "")
	cs := relayClient(t, e, gwWriterToken, false)
	r1 := relayAsked(t, cs, relayMulti, nil, "", nil, "step1")
	gwWant(t, relayOK(t, cs, "mcp__conf__test_simple_text", nil, "", nil), true, "This principal is stopped.")
	gwWant(t, relayOK(t, cs, relayMulti, nil, r1.RequestState, mcp.InputResponseMap{"step1": accept("name", "Ann")}), true, "This principal is stopped.")
	calls := e.calls(t, relayMulti, "ann")
	if len(calls) != 2 || !calls[0].Executed || calls[1].Executed || calls[1].Stage != warden.StageGate {
		t.Errorf("audit of the call's rounds: %+v", calls)
	}
}

// A prompt's relayed elicitation the policy refuses: prompts/get fails with the
// gateway's refusal error naming the input request and the policy's text, and the
// audit log records the refused elicitation.
func TestRelayPromptElicitationRefused(t *testing.T) {
	const name = "mcp__conf__test_input_required_result_prompt"
	e := relayStart(t, "version: 1\nmode: rules\nrules:\n  allow:\n    prompt:"+name+": ['*']\n", "")
	cs := relayClient(t, e, gwWriterToken, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != gateway.CodeRefused ||
		rpc.Message != `The server conf asked the client for elicitation/create (input request "user_context"), which was refused: [permission denied: no matching rule, default deny] The call did not complete.` {
		t.Fatalf("prompts/get with a refused input request: %+v, error %v", r, err)
	}
	ask := e.lastCall(t, "elicitation:conf", "ann")
	if ask.Executed || ask.Status != warden.StatusRefused || ask.Stage != warden.StagePermission || ask.RuleID != "default" {
		t.Errorf("audit of the refused elicitation: %+v", ask)
	}
	if p := e.lastCall(t, "prompt:"+name, "ann"); !p.Executed || p.Seq >= ask.Seq {
		t.Errorf("audit of the prompt's round: %+v", p)
	}
}

// A resources/read round is relayed like a tool's: the client gets the server's
// question under a requestState of the gateway's, the retry brings the answer and
// reads the resource, the relayed elicitation is judged and recorded, and the state
// is used once.
func TestRelayResourceRead(t *testing.T) {
	e := relayStart(t, relayAllowAll, "")
	cs := relayClient(t, e, gwWriterToken, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var uri string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(r.Name, "input_required_greeting") {
			uri = r.URI
		}
	}
	if uri == "" {
		t.Fatal("the gateway lists no input-required resource")
	}
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if !r.NeedsInput() || r.RequestState == "" || len(r.InputRequests) != 1 || r.InputRequests["reader_name"] == nil || len(r.Contents) != 0 {
		t.Fatalf("resources/read %s: want input_required asking reader_name under a requestState, got %+v", uri, r)
	}
	got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri, RequestState: r.RequestState, InputResponses: mcp.InputResponseMap{"reader_name": accept("name", "Ada")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Contents) != 1 || got.Contents[0].Text != "Hello, Ada!" {
		t.Errorf("the resource after the answer: %+v", got)
	}
	if r.TTLMs != 0 || r.CacheScope != "private" || got.TTLMs != 30000 || got.CacheScope != "private" {
		t.Errorf("caching: the question %+v, the answer %+v; want the question stale at once, the read private for 30 s", r.Cacheable, got.Cacheable)
	}
	// A client caches what it read (ttlMs): the replay comes from a fresh one.
	again := relayClient(t, e, gwWriterToken, false)
	_, err = again.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri, RequestState: r.RequestState, InputResponses: mcp.InputResponseMap{"reader_name": accept("name", "Eve")}})
	relayRPCError(t, "a replayed resource state", nil, err, jsonrpc.CodeInvalidParams, relayReplayed)
	if recs := e.calls(t, "resource:conf", "ann"); len(recs) != 3 || !recs[0].Executed || !recs[1].Executed || recs[2].Executed || recs[2].Status != warden.StatusRefused {
		t.Errorf("audit records of the reads: %+v, want one executed per round and the refused replay", recs)
	}
	if recs := e.calls(t, "elicitation:conf", "ann"); len(recs) != 1 || string(recs[0].Args) != jsonOf(t, r.InputRequests["reader_name"]) {
		t.Errorf("audit of the read's relayed elicitation: %+v", recs)
	}
	// A client of the session-based line never gets a round it cannot answer: the
	// read fails closed.
	old := e.connect(t, gwWriterToken, nil)
	if _, err := old.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Error("a 2025-11-25 client's read of the asking resource succeeded")
	}
}
