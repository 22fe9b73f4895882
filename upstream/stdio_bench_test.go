package upstream

import (
	"context"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The transports compared by BenchmarkStdioCallRoundTrip: the SDK's CommandTransport
// (what the pool used before) and ours.
var benchTransports = []struct {
	name string
	make func(*exec.Cmd) mcp.Transport
}{
	{"sdk", func(cmd *exec.Cmd) mcp.Transport {
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}
	}},
	{"warden", func(cmd *exec.Cmd) mcp.Transport {
		return &commandTransport{Command: cmd, TerminateDuration: terminateGrace}
	}},
}

// connectFault starts the fault server over the transport made by mk and returns
// the client session, closed at the end of tb.
func connectFault(tb testing.TB, mk func(*exec.Cmd) mcp.Transport) *mcp.ClientSession {
	tb.Helper()
	needFaultServer(tb)
	cmd := exec.Command("faultserver", "-mode", "ok")
	dieWithGateway(cmd)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), mk(cmd), &mcp.ClientSessionOptions{ProtocolVersion: ServerConfig{}.protocol()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkStdioCallRoundTrip measures one tools/call round trip (echo) to a real
// child process over each transport: b.N calls, one at a time.
func BenchmarkStdioCallRoundTrip(b *testing.B) {
	for _, tr := range benchTransports {
		b.Run(tr.name, func(b *testing.B) {
			cs := connectFault(b, tr.make)
			params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatalf("call: %v %v", res, err)
				}
			}
		})
	}
}

// BenchmarkStdioConnRoundTrip measures the transport alone: one small tools/call
// message written to cat and read back, over each transport's Connection.
func BenchmarkStdioConnRoundTrip(b *testing.B) {
	if _, err := exec.LookPath("cat"); err != nil {
		b.Skipf("cat not found: %v", err)
	}
	for _, tr := range benchTransports {
		b.Run(tr.name, func(b *testing.B) {
			cmd := exec.Command("cat")
			dieWithGateway(cmd)
			ctx := context.Background()
			conn, err := tr.make(cmd).Connect(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close() })
			msg := callMessage(b, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := conn.Write(ctx, msg); err != nil {
					b.Fatal(err)
				}
				if _, err := conn.Read(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
