package mcptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Request2026 is one JSON-RPC request of protocol 2026-07-28 over streamable HTTP,
// sent as a client without an SDK sends it (see [Post2026]).
type Request2026 struct {
	URL    string
	Client *http.Client // nil: a client with a 30 s timeout
	ID     int          // the request's id; 0 is sent as 1
	Method string
	// Params are the request's params; the request's _meta (protocol version,
	// client info and Capabilities) is added to a copy.
	Params       map[string]any
	Capabilities map[string]any
	// Header is set after the standard headers (Mcp-Protocol-Version, Mcp-Method,
	// and Mcp-Name from the params' name or taskId), so a test can change them.
	Header map[string]string
}

// Reply2026 is the answer to a [Request2026]: the HTTP status and the JSON-RPC
// result or error.
type Reply2026 struct {
	Status int
	Result json.RawMessage
	Error  *RPCError
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Post2026 sends r and returns its answer: the JSON body, or in an event stream the
// response to r's id. A transport failure or a body without that response fails tb.
func Post2026(tb testing.TB, r Request2026) Reply2026 {
	tb.Helper()
	if r.ID == 0 {
		r.ID = 1
	}
	params := map[string]any{}
	for k, v := range r.Params {
		params[k] = v
	}
	caps := r.Capabilities
	if caps == nil {
		caps = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "warden-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.ID, "method": r.Method, "params": params})
	if err != nil {
		tb.Fatalf("%s: %v", r.Method, err)
	}
	req, err := http.NewRequest(http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("%s: %v", r.Method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", r.Method)
	for _, k := range []string{"name", "taskId"} {
		if v, ok := r.Params[k].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	client := r.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("%s: %v", r.Method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s: reading the answer: %v", r.Method, err)
	}
	msgs := [][]byte{data}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msgs = nil
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, len(data)+1)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				msgs = append(msgs, []byte(strings.TrimSpace(d)))
			}
		}
	}
	for _, m := range msgs {
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *RPCError       `json:"error"`
		}
		if json.Unmarshal(m, &a) == nil && string(a.ID) == strings.TrimSpace(string(mustJSON(r.ID))) && (a.Result != nil || a.Error != nil) {
			return Reply2026{Status: resp.StatusCode, Result: a.Result, Error: a.Error}
		}
	}
	tb.Fatalf("%s: no answer to request %d in HTTP %d %q", r.Method, r.ID, resp.StatusCode, data)
	return Reply2026{}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
