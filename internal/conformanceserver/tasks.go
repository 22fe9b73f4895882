package main

// The tools of the suite's tasks-* scenarios (the tasks extension of protocol
// 2026-07-28, io.modelcontextprotocol/tasks, SEP-2663). A tool that may run as a
// task calls mcptasks.Promote: behind mcptasks.Handler (the -listen server's
// stateless handler, for a request that declares the extension) that makes the call
// a task, and the tool goes on in the background; anywhere else (stdio, the
// stateful handler, a request that does not declare the extension) Promote reports
// false and the tool answers the call itself, synchronously.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenhq/warden/internal/mcptasks"
)

// taskRequired names the tools that run only as tasks: behind mcptasks.Handler a
// call to one of them from a request that does not declare the extension is
// refused with -32021 before the tool runs.
func taskRequired(tool string) bool {
	return tool == "failing_job" || tool == "test_tool_with_task"
}

// numberArg returns the number argument name of a call, or def when it is absent.
func numberArg(req *mcp.CallToolRequest, name string, def float64) (float64, error) {
	var args map[string]any
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return 0, fmt.Errorf("arguments: %v", err)
		}
	}
	v, ok := args[name]
	if !ok || v == nil {
		return def, nil
	}
	n, ok := v.(float64)
	if !ok || n < 0 {
		return 0, fmt.Errorf("argument %q must be a non-negative number", name)
	}
	return n, nil
}

// optionalString returns the string argument name of a call, "" when it is absent.
func optionalString(req *mcp.CallToolRequest, name string) string {
	s, _ := stringArg(req, name)
	return s
}

// yesNoSchema is the form of a confirmation: one required boolean, confirm.
var yesNoSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"confirm": map[string]any{"type": "boolean", "description": "Whether to go ahead"}},
	"required":   []string{"confirm"},
}

// multiInputs are the two elicitations multi_input asks for at once, by id.
var multiInputs = map[string]*mcp.ElicitParams{
	"first":  {Message: "First input: what is your name?", RequestedSchema: nameSchema("name")},
	"second": {Message: "Second input: what is your name again?", RequestedSchema: nameSchema("name")},
}

func addTaskTools(s *mcp.Server) {
	tool := func(name, desc string, schema any, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	tool("greet", "Says hello to name (never a task)",
		json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"Whom to greet"}},"required":["name"]}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, err := stringArg(req, "name")
			if err != nil {
				return toolError(err.Error()), nil
			}
			return text("Hello, " + name + "!"), nil
		})
	tool("slow_compute", "Runs as a task where it can: waits seconds, then answers with label; a cancelled task stops waiting",
		json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","description":"How long to compute, in seconds (0: at once)"},"label":{"type":"string","description":"A label to answer with"}}}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			seconds, err := numberArg(req, "seconds", 1)
			if err != nil {
				return toolError(err.Error()), nil
			}
			label := optionalString(req, "label")
			mcptasks.Promote(ctx, "computing "+label)
			if err := pause(ctx, time.Duration(seconds*float64(time.Second))); err != nil {
				return nil, err
			}
			return text(fmt.Sprintf("slow_compute %s: done after %gs", label, seconds)), nil
		})
	tool("failing_job", "Runs only as a task: reports a tool execution error (isError) after about a second", noArgs,
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mcptasks.Promote(ctx, "about to fail")
			if err := pause(ctx, time.Second); err != nil {
				return nil, err
			}
			return toolError("failing_job failed, as it always does"), nil
		})
	tool("protocol_error_job", "Runs as a task where it can: ends with a JSON-RPC error (internal error), not a tool result", noArgs,
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mcptasks.Promote(ctx, "about to break")
			if err := pause(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job failed with a protocol error, as it always does"}
		})
	tool("confirm_delete", "Runs as a task where it can: asks for a confirmation (input request confirm, an elicitation), then says whether filename was deleted (nothing is)",
		json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string","description":"The file to delete"}},"required":["filename"]}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			filename, err := stringArg(req, "filename")
			if err != nil {
				return toolError(err.Error()), nil
			}
			mcptasks.Promote(ctx, "waiting for confirmation")
			r, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
			if !ok || r == nil {
				return inputRequired(mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
					Message: "Delete " + filename + "?", RequestedSchema: yesNoSchema,
				}}, ""), nil
			}
			if yes, _ := r.Content["confirm"].(bool); r.Action == "accept" && yes {
				return text("Deleted " + filename), nil
			}
			return text("Kept " + filename + " (action " + r.Action + ")"), nil
		})
	tool("multi_input", "Runs as a task where it can: asks for two inputs at once (first and second, elicitations) and answers with both once both are answered", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mcptasks.Promote(ctx, "waiting for two inputs")
			pending := mcp.InputRequestMap{}
			got := map[string]string{}
			for id, ask := range multiInputs {
				name, ok := accepted(req.Params.InputResponses, id, "name")
				if !ok {
					pending[id] = ask
					continue
				}
				got[id] = name
			}
			if len(pending) > 0 {
				return inputRequired(pending, ""), nil
			}
			return text(fmt.Sprintf("first=%s; second=%s", got["first"], got["second"])), nil
		})
	tool("test_tool_with_task", "Runs only as a task: asks for the user's name (input request user_name, an elicitation, with a signed requestState) before it is a task, then becomes one and greets them", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const me = "test_tool_with_task"
			name, ok := accepted(req.Params.InputResponses, "user_name", "name")
			if !ok || req.Params.RequestState == "" {
				return inputRequired(mcp.InputRequestMap{"user_name": askName}, signState(fixtureState{Tool: me, Round: 1})), nil
			}
			if _, err := openState(me, req.Params.RequestState); err != nil {
				return nil, err
			}
			mcptasks.Promote(ctx, "greeting "+name)
			if err := pause(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
			return text("Hello, " + name + "! (from a task)"), nil
		})
}
