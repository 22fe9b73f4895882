//lint:file-ignore SA1019 the fixture's sampling and logging, deprecated from protocol 2026-07-28 on

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenhq/warden/internal/mcptest"
)

// TestStdio starts the built binary with -stdio as a child process and talks to it
// with the SDK's client over a CommandTransport, the way the gateway does.
func TestStdio(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var sampled, elicited []string
	client := mcp.NewClient(&mcp.Implementation{Name: "conformanceserver-test", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					sampled = append(sampled, tc.Text)
				}
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "a sampled reply"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited = append(elicited, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ann", "email": "ann@example.com"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "-stdio")}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()

	if got := cs.InitializeResult().ServerInfo.Name; got != "warden-conformance-server" {
		t.Errorf("server name = %q", got)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var toolNames []string
	for _, tool := range tools.Tools {
		toolNames = append(toolNames, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s: description %q, input schema %v", tool.Name, tool.Description, tool.InputSchema)
		}
		if tool.Name == "json_schema_2020_12_tool" {
			schema, _ := json.Marshal(tool.InputSchema)
			var m map[string]any
			if err := json.Unmarshal(schema, &m); err != nil {
				t.Fatal(err)
			}
			if m["$schema"] != "https://json-schema.org/draft/2020-12/schema" || m["$defs"] == nil || m["additionalProperties"] != false {
				t.Errorf("json_schema_2020_12_tool lost 2020-12 keywords: %s", schema)
			}
		}
	}
	slices.Sort(toolNames)
	wantTools := []string{
		"confirm_delete", "failing_job", "greet", "json_schema_2020_12_tool", "multi_input", "protocol_error_job", "slow_compute", "test_audio_content", "test_elicitation",
		"test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums", "test_embedded_resource",
		"test_error_handling", "test_image_content",
		"test_input_required_result_capabilities", "test_input_required_result_elicitation",
		"test_input_required_result_list_roots", "test_input_required_result_multi_round",
		"test_input_required_result_multiple_inputs", "test_input_required_result_request_state",
		"test_input_required_result_sampling", "test_input_required_result_tampered_state",
		"test_logging_tool", "test_missing_capability", "test_multiple_content_types", "test_reconnection",
		"test_sampling", "test_simple_text", "test_streaming_elicitation", "test_tool_with_logging", "test_tool_with_progress",
		"test_tool_with_task",
	}
	if !slices.Equal(toolNames, wantTools) {
		t.Errorf("tools = %v\nwant %v", toolNames, wantTools)
	}

	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	if want := []string{"test://input-required/greeting", "test://static-binary", "test://static-text", "test://watched-resource"}; !slices.Equal(uris, want) {
		t.Errorf("resources = %v, want %v", uris, want)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	if len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
		t.Errorf("resource templates = %+v", templates.ResourceTemplates)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/123/data"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if len(read.Contents) != 1 || read.Contents[0].Text != `{"id":"123","templateTest":true,"data":"Data for ID: 123"}` {
		t.Errorf("template read = %+v", read.Contents)
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var promptNames []string
	for _, p := range prompts.Prompts {
		promptNames = append(promptNames, p.Name)
	}
	slices.Sort(promptNames)
	wantPrompts := []string{"test_input_required_result_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"}
	if !slices.Equal(promptNames, wantPrompts) {
		t.Errorf("prompts = %v, want %v", promptNames, wantPrompts)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil {
		t.Fatalf("tools/call test_simple_text: %v", err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("test_simple_text = %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "This is a simple text response for testing." {
		t.Errorf("test_simple_text content = %#v", res.Content[0])
	}

	// Requests from the server back to the client work over stdio too.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "say hi"}})
	if err != nil {
		t.Fatalf("tools/call test_sampling: %v", err)
	}
	if got := mcptest.ResultText(res); res.IsError || got != "LLM response: a sampled reply" {
		t.Errorf("test_sampling = %q (isError %v)", got, res.IsError)
	}
	if !slices.Equal(sampled, []string{"say hi"}) {
		t.Errorf("client was asked to sample %q, want [say hi]", sampled)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "who are you?"}})
	if err != nil {
		t.Fatalf("tools/call test_elicitation: %v", err)
	}
	want := `User response: action=accept, content={"email":"ann@example.com","username":"ann"}`
	if got := mcptest.ResultText(res); res.IsError || got != want {
		t.Errorf("test_elicitation = %q (isError %v), want %q", got, res.IsError, want)
	}
	if !slices.Equal(elicited, []string{"who are you?"}) {
		t.Errorf("client was asked %q, want [who are you?]", elicited)
	}
}

// connectFixture starts the built binary with args and connects to it over stdio,
// with protocol version 2025-11-25 (the gateway's to its upstreams: a newer client
// subscribes with subscriptions/listen instead of resources/subscribe).
func connectFixture(t *testing.T, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "conformanceserver-test", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, args...)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// -test-tools adds warden_test_update_resource, which notifies the subscribed
// session and counts it, and completion values of the template's id.
func TestTestTools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	updated := make(chan string, 10)
	cs := connectFixture(t, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	}, "-stdio", "-test-tools")
	const uri = "test://watched-resource"
	update := func() string {
		t.Helper()
		return mcptest.ResultText(mcptest.CallTool(t, cs, 30*time.Second, "warden_test_update_resource", map[string]any{"uri": uri}))
	}
	if got, want := update(), "updated "+uri+": 0 subscribed session(s)"; got != want {
		t.Errorf("before subscribing: %q, want %q", got, want)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if got, want := update(), "updated "+uri+": 1 subscribed session(s)"; got != want {
		t.Errorf("subscribed: %q, want %q", got, want)
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("update of %q, want %q", got, uri)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if got, want := update(), "updated "+uri+": 0 subscribed session(s)"; got != want {
		t.Errorf("unsubscribed: %q, want %q", got, want)
	}

	res, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1", "12", "123"}; !slices.Equal(res.Completion.Values, want) || res.Completion.Total != 3 {
		t.Errorf("template completion = %+v, want values %q", res.Completion, want)
	}

	// Without the flag: no such tool, no template values.
	plain := connectFixture(t, nil, "-stdio")
	if _, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "warden_test_update_resource", Arguments: map[string]any{"uri": uri}}); err == nil {
		t.Error("warden_test_update_resource is offered without -test-tools")
	}
	res, err = plain.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"},
	})
	if err != nil || len(res.Completion.Values) != 0 {
		t.Errorf("template completion without -test-tools = %+v, %v; want no values", res, err)
	}
}

// -no-subscribe takes resource subscriptions away, and nothing else.
func TestNoSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connectFixture(t, nil, "-stdio", "-no-subscribe")
	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || caps.Resources.Subscribe || caps.Completions == nil {
		t.Errorf("capabilities: resources %+v, completions %+v; want resources without subscribe, and completions", caps.Resources, caps.Completions)
	}
	var werr *jsonrpc.Error
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("resources/subscribe: %v, want method not found (%d)", err, jsonrpc.CodeMethodNotFound)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://watched-resource"}); err != nil {
		t.Errorf("resources/read: %v", err)
	}
}
