//lint:file-ignore SA1019 relayed input requests still carry sampling, deprecated from 2026-07-28 on

package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A relayed call (CallOptions.Relay) gets the upstream's input_required round back
// as a result, with the upstream's own input requests and requestState, instead of
// the SDK answering it; the retry carries the answers and that state, and the
// upstream completes. The link is protocol 2026-07-28 (the fixture offers it).
func TestRelayPassesRoundsToTheCaller(t *testing.T) {
	t.Parallel()
	u := confUpstream(t, nil, nil)
	ctx := context.Background()
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	const tool = "test_input_required_result_request_state"
	first, err := u.Call(ctx, tool, nil, &CallOptions{Relay: &Relay{Capabilities: caps}})
	if err != nil {
		t.Fatalf("first round: %v", err)
	}
	if !first.NeedsInput() || first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("first round = %+v, want input_required with the fixture's input request and requestState", first)
	}
	if _, ok := first.InputRequests["confirm"].(*mcp.ElicitParams); !ok {
		t.Fatalf("input requests = %#v, want the elicitation confirm", first.InputRequests)
	}
	if got, want := InputRequiredText(first.InputRequests), "[input required: the server asks the client for confirm (elicitation/create) before it answers]"; got != want {
		t.Errorf("InputRequiredText = %q, want %q", got, want)
	}
	answer := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}}
	done, err := u.Call(ctx, tool, nil, &CallOptions{Relay: &Relay{Capabilities: caps, Responses: answer, State: first.RequestState}})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if done.NeedsInput() || !strings.Contains(ResultText(done), "state-ok") {
		t.Errorf("retry = %+v (%q), want the completed result saying state-ok", done, ResultText(done))
	}
	// The upstream checks its own state: a changed one is its JSON-RPC error.
	_, err = u.Call(ctx, tool, nil, &CallOptions{Relay: &Relay{Capabilities: caps, Responses: answer, State: first.RequestState + "x"}})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("retry with a changed upstream state: %v, want the upstream's invalid params error", err)
	}
}

// A relayed request declares to the upstream exactly the capabilities Relay gives:
// without sampling, the fixture's test_missing_capability refuses with -32021; with
// it, the fixture asks for a sample (an input_required round).
func TestRelayDeclaresTheCallersCapabilities(t *testing.T) {
	t.Parallel()
	u := confUpstream(t, nil, nil)
	ctx := context.Background()
	_, err := u.Call(ctx, "test_missing_capability", nil, &CallOptions{Relay: &Relay{}})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Fatalf("relayed call declaring nothing: %v, want the upstream's -32021", err)
	}
	res, err := u.Call(ctx, "test_missing_capability", nil, &CallOptions{Relay: &Relay{Capabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}}})
	if err != nil {
		t.Fatalf("relayed call declaring sampling: %v", err)
	}
	if !res.NeedsInput() {
		t.Errorf("relayed call declaring sampling = %+v, want an input_required round asking for a sample", res)
	}
}

// The relay is for tools/call, prompts/get and resources/read: a request of another
// kind cannot carry a round.
func TestRelayRoundRefusesOtherRequests(t *testing.T) {
	if err := relayRound(&mcp.ListToolsParams{}, &Relay{}); err == nil || !strings.Contains(err.Error(), "cannot be relayed") {
		t.Errorf("relayRound of a tools/list: %v, want refused", err)
	}
	rp := &mcp.ReadResourceParams{URI: "test://x"}
	if err := relayRound(rp, &Relay{State: "s", Responses: mcp.InputResponseMap{"a": &mcp.ElicitResult{Action: "decline"}}}); err != nil || rp.RequestState != "s" || len(rp.InputResponses) != 1 {
		t.Errorf("relayRound of a resources/read: %v %+v, want the round in its params", err, rp)
	}
	p := &mcp.GetPromptParams{Name: "p"}
	if err := relayRound(p, &Relay{State: "s", Responses: mcp.InputResponseMap{"a": &mcp.ElicitResult{Action: "decline"}}}); err != nil {
		t.Fatal(err)
	}
	if p.RequestState != "s" || len(p.InputResponses) != 1 || p.Meta[mcp.MetaKeyClientCapabilities] == nil {
		t.Errorf("prompt params after relayRound = %+v, want the state, the answers and the declared capabilities", p)
	}
}
