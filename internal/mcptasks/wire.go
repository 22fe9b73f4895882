// Package mcptasks is the MCP tasks extension (io.modelcontextprotocol/tasks, SEP-2663)
// for protocol 2026-07-28, which go-sdk v1.8.0 does not implement: its wire shapes
// (this file), and [Handler], which serves the extension in front of the SDK's
// stateless streamable HTTP handler.
//
// A task is server-directed: a tools/call from a client that declared the extension
// runs as usual until its handler calls [Promote]; the client then gets a
// CreateTaskResult at once, and the call goes on in the background. The client
// polls it with tasks/get, answers its input requests with tasks/update and stops it
// with tasks/cancel. A call that never promotes answers as if there were no
// extension.
package mcptasks

import (
	"encoding/json"
	"time"
)

// Extension is the extension's identifier, under capabilities.extensions of a server
// that offers it and of a request whose client takes it.
const Extension = "io.modelcontextprotocol/tasks"

// MetaClientCapabilities is the _meta key under which a 2026-07-28 request carries
// its client's capabilities.
const MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// The methods of the extension. MethodResult and MethodList belonged to the earlier,
// experimental tasks of protocol 2025-11-25 and are removed: a server answers them
// -32601.
const (
	MethodGet    = "tasks/get"
	MethodUpdate = "tasks/update"
	MethodCancel = "tasks/cancel"
	MethodResult = "tasks/result"
	MethodList   = "tasks/list"
)

// Status is a task's state. Completed, Failed and Cancelled are terminal.
type Status string

const (
	StatusWorking       Status = "working"
	StatusInputRequired Status = "input_required"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCancelled     Status = "cancelled"
)

// Terminal reports whether s is a state a task never leaves.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// JSON-RPC error codes the extension uses beside the standard ones.
const (
	// CodeMissingRequiredClientCapability answers a tasks method, or a call to a tool
	// that only runs as a task, from a request that did not declare the extension.
	CodeMissingRequiredClientCapability = -32021
	// CodeHeaderMismatch answers a request whose Mcp-Method or Mcp-Name header is
	// missing or differs from its body.
	CodeHeaderMismatch = -32020
)

// Task is what every task answer carries: CreateTaskResult (resultType "task") and
// tasks/get's DetailedTask (resultType "complete", with Result, Error or
// InputRequests by status). Times are RFC 3339 in UTC; TTLMs and PollIntervalMs are
// integer milliseconds.
type Task struct {
	ResultType     string `json:"resultType"`
	TaskID         string `json:"taskId"`
	Status         Status `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`

	// Result is a completed task's tool result, as the tool call would have
	// answered it; Error a failed task's JSON-RPC error; InputRequests, keyed by
	// the server's ids, what an input_required task waits for.
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *WireError                 `json:"error,omitempty"`
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// WireError is a JSON-RPC error object.
type WireError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// TaskParams are the params of tasks/get and tasks/cancel; UpdateParams of
// tasks/update.
type TaskParams struct {
	TaskID string `json:"taskId"`
}

type UpdateParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// Timestamp formats t as the extension's times are written.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Declares reports whether a request's _meta declares the extension among its
// client's capabilities (meta is the request's params._meta, nil for none).
func Declares(meta map[string]json.RawMessage) bool {
	raw, ok := meta[MetaClientCapabilities]
	if !ok {
		return false
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[Extension]
	return ok
}

// RequiredCapabilities is the data of a -32021 error for the extension: the
// capabilities the request lacked, shaped like a client's capabilities.
func RequiredCapabilities() json.RawMessage {
	return json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + Extension + `":{}}}}`)
}
