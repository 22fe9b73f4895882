package mcptasks_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/mcptasks"
)

// A tools/call of a tool that only runs as a task, from a request that does not
// declare the extension, is refused however its body spells its keys: the SDK reads
// the JSON keys case-sensitively (its own decoder), so a second, differently cased
// "Name" key must not make the Handler see another tool than the one the SDK runs.
func TestAttackRequiredToolCaseVariantKey(t *testing.T) {
	f := newFixture(t, &mcptasks.Options{Required: func(tool string) bool { return tool == "quick" }})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	send := func(body string) string {
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "quick")
		req.Header.Set("X-Owner", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return string(raw)
	}
	plain := send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"quick","arguments":{},` + meta + `}}`)
	if !strings.Contains(plain, "-32021") {
		t.Fatalf("the plain call of a task-only tool without the declaration: %s, want -32021", plain)
	}
	variant := send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"quick","Name":"other","arguments":{},` + meta + `}}`)
	if strings.Contains(variant, "quick answer") || !strings.Contains(variant, "-32021") {
		t.Errorf("the same call with a second key \"Name\": %s, want -32021 (the SDK ran the task-only tool without a task)", variant)
	}
}
