//lint:file-ignore SA1019 relayed input requests include sampling and roots, deprecated from 2026-07-28 on

package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
)

// The requestState of a relayed round carries the upstream's state inside the
// gateway's MAC: the right retry gets the upstream's state back and only the
// answers to what was asked; a changed state, an approval state, a replay, another
// principal, another call, a changed definition or policy, and a retry that does not
// answer every question are refused with the text saying why.
func TestRelayState(t *testing.T) {
	e := gwStart(t, gwSetup{identities: gwSelfApproveIdentities, extra: mrtrExtra})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	writer := gateway.Client{Principal: "writer-agent", Role: "writer"}
	call := gateway.RelayCall{Tool: "mcp__conf__test_input_required_result_multiple_inputs", Args: warden.MustParseArgs(`{"a":1}`), Def: "sha256:def", Revision: "rev-1"}
	asked := mcp.InputRequestMap{
		"user_name":    &mcp.ElicitParams{Message: "What is your name?"},
		"greeting":     &mcp.CreateMessageParams{MaxTokens: 50},
		"client_roots": &mcp.ListRootsParams{},
	}
	answered := mcp.InputResponseMap{
		"user_name":    &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}},
		"greeting":     &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m"},
		"client_roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///r"}}},
		"extra":        &mcp.ElicitResult{Action: "accept"},
	}
	issue := func(c gateway.RelayCall) string {
		t.Helper()
		s, err := e.gw.IssueRelayState(ctx, writer, c, asked, "upstream-state-1")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	refused := func(what string, cl gateway.Client, c gateway.RelayCall, state string, resps mcp.InputResponseMap, want string) {
		t.Helper()
		up, fwd, why := e.gw.OpenRelayState(ctx, cl, c, state, resps)
		if why != want || up != "" || fwd != nil {
			t.Errorf("%s: upstream %q, forward %v, refusal %q\nwant the refusal %q", what, up, fwd, why, want)
		}
	}

	state := issue(call)
	payload, sig, _ := strings.Cut(state, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[len(b)/2] == 'A' {
			b[len(b)/2] = 'B'
		} else {
			b[len(b)/2] = 'A'
		}
		return string(b)
	}
	const tampered = "The requestState of this retry is not valid: it was changed, or it was not issued by this gateway for a relayed question. Nothing was forwarded; call again without it to be asked again."
	for _, bad := range []string{flip(payload) + "." + sig, payload + "." + flip(sig), payload, state + "-TAMPERED", "x.y"} {
		refused("tampered "+bad[:min(len(bad), 12)], writer, call, bad, answered, tampered)
	}
	// An approval state of this gateway is not a relay state.
	e.writeNotes(t, "n")
	approval := ask2026(t, connect2026(t, e.url, gwWriterToken, e.tr, manualMRTR()), "n")
	refused("an approval state", writer, call, approval.RequestState, answered, tampered)

	refused("another principal", gateway.Client{Principal: "bob", Role: "writer"}, call, state, answered,
		"The requestState of this retry was issued to another principal. Nothing was forwarded.")
	other := call
	other.Args = warden.MustParseArgs(`{"a":2}`)
	refused("other arguments", writer, other, state, answered,
		"The requestState of this retry was issued for another call (mcp__conf__test_input_required_result_multiple_inputs, not this call of mcp__conf__test_input_required_result_multiple_inputs with these arguments). Nothing was forwarded; call again to be asked about this one.")
	other = call
	other.Tool = "mcp__conf__test_input_required_result_elicitation"
	refused("another tool", writer, other, state, answered,
		"The requestState of this retry was issued for another call (mcp__conf__test_input_required_result_multiple_inputs, not this call of mcp__conf__test_input_required_result_elicitation with these arguments). Nothing was forwarded; call again to be asked about this one.")
	other = call
	other.Def = "sha256:changed"
	refused("a changed definition", writer, other, state, answered,
		"The definition of mcp__conf__test_input_required_result_multiple_inputs changed since this question was asked. Nothing was forwarded; call again to be asked about the current one.")
	other = call
	other.Revision = "rev-2"
	refused("a changed policy", writer, other, state, answered,
		"The policy changed since this question was asked (revision rev-1, now rev-2). Nothing was forwarded; call again to be judged under the current policy.")
	wrongKind := mcp.InputResponseMap{"user_name": answered["user_name"], "greeting": &mcp.ElicitResult{Action: "accept"}}
	refused("missing and wrong-kind answers", writer, call, state, wrongKind,
		"The retry does not answer every question it was asked: no answer of the kind asked for client_roots (roots/list), greeting (sampling/createMessage). Nothing was forwarded; call again to be asked again.")

	// None of the refusals used the state up: the right retry is taken, once.
	up, fwd, why := e.gw.OpenRelayState(ctx, writer, call, state, answered)
	if why != "" || up != "upstream-state-1" {
		t.Fatalf("the right retry: upstream %q, refusal %q", up, why)
	}
	if got := fmt.Sprint(len(fwd), fwd["user_name"] != nil, fwd["greeting"] != nil, fwd["client_roots"] != nil, fwd["extra"] == nil); got != "3 true true true true" {
		t.Errorf("forwarded answers: %v, want exactly the three asked for", fwd)
	}
	refused("a replay", writer, call, state, answered, "This requestState was already used. Nothing was forwarded; call again to be asked again.")

	// A swept state is refused, never honoured.
	swept := issue(call)
	if n, err := e.gw.SweepStates(ctx, time.Now().Add(gateway.MRTRStateLife+time.Second)); err != nil || n == 0 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	refused("a swept state", writer, call, swept, answered, tampered)

	// A kind the gateway does not relay is not issued at all.
	if _, err := e.gw.IssueRelayState(ctx, writer, call, mcp.InputRequestMap{"x": nil}, ""); err == nil {
		t.Error("a state was issued for an input request of no known kind")
	}
}

// An approval carried by a relay state lasts until the time it was given plus the
// state's lifetime, however many rounds follow: a state whose carry-over has ended
// still relays the round, without the approval (the call is asked again).
func TestRelayStateApprovalEnds(t *testing.T) {
	e := gwStart(t, gwSetup{identities: gwSelfApproveIdentities, extra: mrtrExtra})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	writer := gateway.Client{Principal: "writer-agent", Role: "writer"}
	call := gateway.RelayCall{Tool: "mcp__conf__t", Args: warden.MustParseArgs(`{}`), Def: "sha256:def", Revision: "rev-1"}
	asked := mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "?"}}
	answer := mcp.InputResponseMap{"q": &mcp.ElicitResult{Action: "accept"}}
	for _, tc := range []struct {
		name         string
		until        int64
		wantBinding  string
		wantApprover string
	}{
		{"in time", time.Now().Add(time.Minute).Unix(), "binding-1", "ann"},
		{"ended", time.Now().Add(-time.Second).Unix(), "", ""},
	} {
		state, err := e.gw.IssueRelayStateApproved(ctx, writer, call, asked, "up", "binding-1", "ann", tc.until)
		if err != nil {
			t.Fatal(err)
		}
		binding, by, refusal := e.gw.OpenRelayStateApproval(ctx, writer, call, state, answer)
		if refusal != "" || binding != tc.wantBinding || by != tc.wantApprover {
			t.Errorf("%s: approval %q by %q, refusal %q; want %q by %q and no refusal", tc.name, binding, by, refusal, tc.wantBinding, tc.wantApprover)
		}
	}
}
