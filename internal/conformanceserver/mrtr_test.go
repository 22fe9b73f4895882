//lint:file-ignore SA1019 the input-required-result scenarios exercise sampling, roots and logging, deprecated from 2026-07-28 on

package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

// connect2026 serves the fixture statelessly (as -listen does for 2026-07-28) and
// connects a 2026-07-28 client that hands input_required results to the test.
func connect2026(t *testing.T) *mcp.ClientSession {
	t.Helper()
	server := newServer(options{})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "fixture-test-2026", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("the test answers input requests itself")
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect at 2026-07-28: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callMRTR(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cs.CallTool(ctx, p)
}

// The multi-round tool asks twice, each time with a new signed state, and answers
// with what both rounds brought; a changed state or one of another tool is a
// JSON-RPC invalid-params error, and nothing is answered.
func TestMultiRoundAndTamperedState(t *testing.T) {
	cs := connect2026(t)
	const tool = "test_input_required_result_multi_round"
	r1, err := callMRTR(t, cs, &mcp.CallToolParams{Name: tool})
	if err != nil || !r1.NeedsInput() || r1.RequestState == "" || r1.InputRequests["step1"] == nil {
		t.Fatalf("round 1: %+v, %v; want input_required with step1 and a state", r1, err)
	}
	r2, err := callMRTR(t, cs, &mcp.CallToolParams{Name: tool, RequestState: r1.RequestState,
		InputResponses: mcp.InputResponseMap{"step1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}}})
	if err != nil || !r2.NeedsInput() || r2.RequestState == "" || r2.RequestState == r1.RequestState || r2.InputRequests["step2"] == nil {
		t.Fatalf("round 2: %+v, %v; want input_required with step2 and a new state", r2, err)
	}
	r3, err := callMRTR(t, cs, &mcp.CallToolParams{Name: tool, RequestState: r2.RequestState,
		InputResponses: mcp.InputResponseMap{"step2": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "blue"}}}})
	if err != nil || r3.NeedsInput() {
		t.Fatalf("round 3: %+v, %v", r3, err)
	}
	if got := mcptest.ResultText(r3); got != "Hello Ann, your favorite color is blue." {
		t.Errorf("round 3 = %q", got)
	}

	// The state of round 2 says who answered round 1: changing a byte of it is refused.
	payload, sig, _ := strings.Cut(r2.RequestState, ".")
	forged := strings.Replace(payload, payload[:4], "AAAA", 1) + "." + sig
	confirmed := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}
	for name, tc := range map[string]struct{ tool, state, want string }{
		"changed":      {tool, forged, "requestState rejected: its integrity check failed (it was changed, or another server issued it)"},
		"appended":     {"test_input_required_result_tampered_state", "", ""},
		"another tool": {"test_input_required_result_request_state", r1.RequestState, "requestState rejected: it was issued for " + tool + ", not test_input_required_result_request_state"},
	} {
		state := tc.state
		if name == "appended" {
			first, err := callMRTR(t, cs, &mcp.CallToolParams{Name: tc.tool})
			if err != nil || !first.NeedsInput() || first.RequestState == "" {
				t.Fatalf("tampered_state round 1: %+v, %v", first, err)
			}
			ok, err := callMRTR(t, cs, &mcp.CallToolParams{Name: tc.tool, RequestState: first.RequestState, InputResponses: mcp.InputResponseMap{"confirm": confirmed}})
			if got := mcptest.ResultText(ok); err != nil || got != `state-ok: action=accept, content={"ok":true}` {
				t.Errorf("intact state: %q, %v", got, err)
			}
			state = first.RequestState + "-TAMPERED"
			tc.want = "requestState rejected: its integrity check failed (it was changed, or another server issued it)"
		}
		res, err := callMRTR(t, cs, &mcp.CallToolParams{Name: tc.tool, RequestState: state,
			InputResponses: mcp.InputResponseMap{"step2": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "red"}}, "confirm": confirmed}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || werr.Message != tc.want {
			t.Errorf("%s state: %+v, %v; want invalid params %q", name, res, err, tc.want)
		}
	}
}

// The capability tool asks only by the kinds the request declares, and a tool that
// needs an undeclared capability is refused with -32021 naming it.
func TestCapabilityRestricted(t *testing.T) {
	cs := connect2026(t) // declares elicitation (the client has a handler) and roots, not sampling
	res, err := callMRTR(t, cs, &mcp.CallToolParams{Name: "test_input_required_result_capabilities"})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("%+v, %v", res, err)
	}
	_, elicit := res.InputRequests["user_name"].(*mcp.ElicitParams)
	_, roots := res.InputRequests["client_roots"].(*mcp.ListRootsParams)
	if !elicit || !roots || len(res.InputRequests) != 2 {
		t.Errorf("input requests = %#v, want the elicitation user_name and roots client_roots only", res.InputRequests)
	}
	_, err = callMRTR(t, cs, &mcp.CallToolParams{Name: "test_missing_capability"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities || string(werr.Data) != `{"requiredCapabilities":{"sampling":{}}}` {
		t.Errorf("test_missing_capability without sampling: %v (data %s)", err, werr.Data)
	}
}
