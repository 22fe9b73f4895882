package upstream

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session of protocol 2026-07-28 caches list results for the ttlMs the server
// gives (SEP-2549). The gateway's upstream clients never answer a list from that
// cache: a definition the upstream changed is seen on the next list, however long
// the ttlMs, while a plain SDK client at the same version still sees the old one
// (which shows the cache is in play).
func TestListsNeverFromTheSDKCache(t *testing.T) {
	var desc atomic.Value
	desc.Store("first definition")
	server := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs, c.CacheScope = int(time.Hour/time.Millisecond), "public"
		},
	})
	addTool := func() {
		server.AddTool(&mcp.Tool{Name: "echo", Description: desc.Load().(string), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	addTool()
	server.AddPrompt(&mcp.Prompt{Name: "p", Description: desc.Load().(string)},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(c *mcp.Client) *mcp.ClientSession {
		t.Helper()
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		return cs
	}
	u := &Server{log: slog.New(slog.DiscardHandler), sessions: map[*mcp.ClientSession]*upstreamConn{}}
	gw := connect(u.clientFor(0))
	plain := connect(mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil))
	list := func(cs *mcp.ClientSession) (tool, prompt string) {
		t.Helper()
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) != 1 {
			t.Fatalf("tools/list: %+v, %v", tools, err)
		}
		prompts, err := cs.ListPrompts(ctx, nil)
		if err != nil || len(prompts.Prompts) != 1 {
			t.Fatalf("prompts/list: %+v, %v", prompts, err)
		}
		return tools.Tools[0].Description, prompts.Prompts[0].Description
	}
	for _, cs := range []*mcp.ClientSession{gw, plain} {
		if tool, prompt := list(cs); tool != "first definition" || prompt != "first definition" {
			t.Fatalf("first lists: tool %q, prompt %q", tool, prompt)
		}
	}

	desc.Store("changed definition")
	addTool() // replaces echo
	server.AddPrompt(&mcp.Prompt{Name: "p", Description: desc.Load().(string)},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})

	if tool, prompt := list(gw); tool != "changed definition" || prompt != "changed definition" {
		t.Errorf("the gateway's client after the change: tool %q, prompt %q; want the changed definitions", tool, prompt)
	}
	if tool, _ := list(plain); tool != "first definition" {
		t.Errorf("a plain client after the change lists %q: the SDK's cache was not in play, so this test shows nothing", tool)
	}
}
