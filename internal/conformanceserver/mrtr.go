//lint:file-ignore SA1019 the input-required-result scenarios exercise sampling, roots and logging, deprecated from 2026-07-28 on

package main

// The tools and the prompt of the suite's input-required-result-* scenarios
// (SEP-2322, protocol 2026-07-28): each answers its first call with an
// input_required result naming the input requests the scenario expects (by the ids
// the scenario uses) and completes once the retry brings the answers. A
// requestState, where a tool issues one, is the fixture's signed word: an HMAC-SHA256
// over the tool's name, the round and what earlier rounds answered, with a key made
// at start, so a changed or foreign state is a JSON-RPC error (invalid params).

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stateKey signs the requestStates this process issues.
var stateKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// fixtureState is what a requestState of this fixture carries.
type fixtureState struct {
	Tool  string            `json:"tool"`
	Round int               `json:"round"`
	Data  map[string]string `json:"data,omitempty"`
}

func stateMAC(payload string) []byte {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte("conformanceserver-state\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// signState returns the requestState for s.
func signState(s fixtureState) string {
	raw, _ := json.Marshal(s)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return payload + "." + base64.RawURLEncoding.EncodeToString(stateMAC(payload))
}

// openState verifies a requestState issued for tool and returns what it carries;
// anything else is an invalid-params error saying why.
func openState(tool, state string) (fixtureState, error) {
	bad := func(why string) (fixtureState, error) {
		return fixtureState{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState rejected: " + why}
	}
	if state == "" {
		return bad("the retry has no requestState (echo the one of the input_required result)")
	}
	payload, sig, ok := strings.Cut(state, ".")
	if !ok {
		return bad("it is not a state this server issued")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, stateMAC(payload)) {
		return bad("its integrity check failed (it was changed, or another server issued it)")
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return bad("its payload is not base64url")
	}
	var s fixtureState
	if err := json.Unmarshal(raw, &s); err != nil {
		return bad("its payload is not JSON")
	}
	if s.Tool != tool {
		return bad(fmt.Sprintf("it was issued for %s, not %s", s.Tool, tool))
	}
	return s, nil
}

// nameSchema is the schema of a form with the one required string field.
func nameSchema(field string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{field: map[string]any{"type": "string"}},
		"required":   []string{field},
	}
}

// accepted returns the string field of an accepted elicitation answer under id.
func accepted(resps mcp.InputResponseMap, id, field string) (string, bool) {
	r, ok := resps[id].(*mcp.ElicitResult)
	if !ok || r == nil || r.Action != "accept" {
		return "", false
	}
	v, _ := r.Content[field].(string)
	return v, true
}

// sampled returns the text of a sampling answer under id.
func sampled(resps mcp.InputResponseMap, id string) (string, bool) {
	r, ok := resps[id].(*mcp.CreateMessageWithToolsResult)
	if !ok || r == nil {
		return "", false
	}
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n"), true
}

// rooted returns the root URIs of a roots/list answer under id.
func rooted(resps mcp.InputResponseMap, id string) ([]string, bool) {
	r, ok := resps[id].(*mcp.ListRootsResult)
	if !ok || r == nil {
		return nil, false
	}
	uris := []string{}
	for _, root := range r.Roots {
		if root != nil {
			uris = append(uris, root.URI)
		}
	}
	return uris, true
}

func inputRequired(reqs mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
}

var (
	askName  = &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema("name")}
	askRoots = &mcp.ListRootsParams{}
)

func askSampling(text string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		MaxTokens: maxTokens,
	}
}

func addInputRequiredTools(s *mcp.Server) {
	tool := func(name, desc string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: noArgs}, h)
	}
	tool("test_input_required_result_elicitation", "Asks for the user's name (input request user_name, an elicitation) and greets them",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, ok := accepted(req.Params.InputResponses, "user_name", "name")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"user_name": askName}, ""), nil
			}
			return text("Hello, " + name + "!"), nil
		})
	tool("test_input_required_result_sampling", "Asks the client's model for the capital of France (input request capital_question, a sampling request)",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			reply, ok := sampled(req.Params.InputResponses, "capital_question")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"capital_question": askSampling("What is the capital of France?", 100)}, ""), nil
			}
			return text("LLM response: " + reply), nil
		})
	tool("test_input_required_result_list_roots", "Asks for the client's roots (input request client_roots, roots/list) and lists them",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			roots, ok := rooted(req.Params.InputResponses, "client_roots")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"client_roots": askRoots}, ""), nil
			}
			return text("Client roots: " + strings.Join(roots, ", ")), nil
		})
	tool("test_input_required_result_request_state", "Asks for a confirmation (input request confirm) with a signed requestState, and says state-ok once the retry echoes it intact",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return confirmTool(req, "test_input_required_result_request_state")
		})
	tool("test_input_required_result_tampered_state", "Like test_input_required_result_request_state; a changed requestState is a JSON-RPC error (invalid params)",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return confirmTool(req, "test_input_required_result_tampered_state")
		})
	tool("test_input_required_result_multiple_inputs", "Asks for a name (user_name), a sampled greeting (greeting) and the client's roots (client_roots) at once, with a signed requestState",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const me = "test_input_required_result_multiple_inputs"
			resps := req.Params.InputResponses
			name, okName := accepted(resps, "user_name", "name")
			greeting, okGreeting := sampled(resps, "greeting")
			roots, okRoots := rooted(resps, "client_roots")
			if !okName || !okGreeting || !okRoots || req.Params.RequestState == "" {
				return inputRequired(mcp.InputRequestMap{
					"user_name":    askName,
					"greeting":     askSampling("Generate a greeting", 50),
					"client_roots": askRoots,
				}, signState(fixtureState{Tool: me, Round: 1})), nil
			}
			if _, err := openState(me, req.Params.RequestState); err != nil {
				return nil, err
			}
			return text(fmt.Sprintf("name=%s; greeting=%s; roots=%s", name, greeting, strings.Join(roots, ", "))), nil
		})
	tool("test_input_required_result_multi_round", "Asks for a name (step1), then with a new requestState for a favorite color (step2), then answers",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const me = "test_input_required_result_multi_round"
			step1 := func() *mcp.CallToolResult {
				return inputRequired(mcp.InputRequestMap{"step1": &mcp.ElicitParams{
					Message: "Step 1: What is your name?", RequestedSchema: nameSchema("name"),
				}}, signState(fixtureState{Tool: me, Round: 1}))
			}
			if req.Params.RequestState == "" {
				return step1(), nil
			}
			st, err := openState(me, req.Params.RequestState)
			if err != nil {
				return nil, err
			}
			resps := req.Params.InputResponses
			switch st.Round {
			case 1:
				name, ok := accepted(resps, "step1", "name")
				if !ok {
					return step1(), nil
				}
				return inputRequired(mcp.InputRequestMap{"step2": &mcp.ElicitParams{
					Message: "Step 2: What is your favorite color?", RequestedSchema: nameSchema("color"),
				}}, signState(fixtureState{Tool: me, Round: 2, Data: map[string]string{"name": name}})), nil
			case 2:
				color, ok := accepted(resps, "step2", "color")
				if !ok {
					return inputRequired(mcp.InputRequestMap{"step2": &mcp.ElicitParams{
						Message: "Step 2: What is your favorite color?", RequestedSchema: nameSchema("color"),
					}}, req.Params.RequestState), nil
				}
				return text(fmt.Sprintf("Hello %s, your favorite color is %s.", st.Data["name"], color)), nil
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestState rejected: round %d is not a round of %s", st.Round, me)}
		})
	tool("test_input_required_result_capabilities", "Asks for input only by the kinds the request's client capabilities declare (elicitation, sampling, roots)",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			caps := req.ClientCapabilities()
			reqs := mcp.InputRequestMap{}
			if caps != nil && caps.Elicitation != nil {
				reqs["user_name"] = askName
			}
			if caps != nil && caps.Sampling != nil {
				reqs["greeting"] = askSampling("Generate a greeting", 50)
			}
			if caps != nil && caps.RootsV2 != nil {
				reqs["client_roots"] = askRoots
			}
			if len(reqs) == 0 {
				return toolError("the client declares none of elicitation, sampling and roots, so there is nothing to ask it"), nil
			}
			var missing []string
			for id := range reqs {
				if _, ok := req.Params.InputResponses[id]; !ok {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return inputRequired(reqs, ""), nil
			}
			ids := make([]string, 0, len(reqs))
			for id := range reqs {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			return text("Answered: " + strings.Join(ids, ", ")), nil
		})

	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that asks the user for its context (input request user_context) first"},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			c, ok := accepted(req.Params.InputResponses, "user_context", "context")
			if !ok {
				return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": &mcp.ElicitParams{
					Message: "What context should the prompt use?", RequestedSchema: nameSchema("context"),
				}}}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Use this context: " + c}},
			}}, nil
		})

	// A resource that asks who reads it first (not a suite scenario: the gateway's
	// relay of a resources/read round is tested with it).
	const askingURI = "test://input-required/greeting"
	s.AddResource(&mcp.Resource{URI: askingURI, Name: "input_required_greeting", MIMEType: "text/plain", Description: "A greeting that asks the reader's name (input request reader_name) first"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			name, ok := accepted(req.Params.InputResponses, "reader_name", "name")
			if !ok {
				return &mcp.ReadResourceResult{InputRequests: mcp.InputRequestMap{"reader_name": askName}}, nil
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: askingURI, MIMEType: "text/plain", Text: "Hello, " + name + "!"}}}, nil
		})
}

// confirmTool is the tool name that asks for confirm with a signed requestState and
// says state-ok when the retry brings the answer and the intact state.
func confirmTool(req *mcp.CallToolRequest, name string) (*mcp.CallToolResult, error) {
	r, answered := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
	if !answered && req.Params.RequestState == "" {
		return inputRequired(mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
			Message: "Please confirm",
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
				"required":   []string{"ok"},
			},
		}}, signState(fixtureState{Tool: name, Round: 1})), nil
	}
	if _, err := openState(name, req.Params.RequestState); err != nil {
		return nil, err
	}
	if !answered || r == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `the retry does not answer the input request "confirm"`}
	}
	return text(fmt.Sprintf("state-ok: action=%s, content=%s", r.Action, jsonText(r.Content))), nil
}

// missingCapability is the MissingRequiredClientCapabilityError (-32021) of a call
// that needs the client capability need, which its request did not declare. (The
// data is written by hand: the SDK's ClientCapabilities always marshals roots.)
func missingCapability(tool, need string) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{need: map[string]any{}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: tool + " needs a client capability this request does not declare", Data: data}
}

// addStatelessTools adds the diagnostic tools of the suite's server-stateless
// scenario.
func addStatelessTools(s *mcp.Server) {
	tool := func(name, desc string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: noArgs}, h)
	}
	tool("test_missing_capability", "Needs sampling: a request that does not declare it is refused (-32021); one that does is asked for a sample",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
				return nil, missingCapability("test_missing_capability", "sampling")
			}
			reply, ok := sampled(req.Params.InputResponses, "sample")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"sample": askSampling("Say anything", 20)}, ""), nil
			}
			return text("LLM response: " + reply), nil
		})
	tool("test_streaming_elicitation", "Needs elicitation: asks for the user's name by an input_required result (never by a request on the response stream)",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
				return nil, missingCapability("test_streaming_elicitation", "elicitation")
			}
			name, ok := accepted(req.Params.InputResponses, "user_name", "name")
			if !ok {
				return inputRequired(mcp.InputRequestMap{"user_name": askName}, ""), nil
			}
			return text("Hello, " + name + "!"), nil
		})
	tool("test_logging_tool", "Logs one info message (sent only when the request asks for a log level) and answers",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformanceserver", Data: "test_logging_tool ran"}); err != nil {
				return nil, err
			}
			return text("Logging tool executed"), nil
		})
}
