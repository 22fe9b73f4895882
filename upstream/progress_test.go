package upstream_test

// Progress pass-through, with real processes: the fault server's progress tool sends
// notifications/progress with the request's token while it serves a call; the
// Server hands those of the call in flight to the call's hook (the gateway's
// forwarding to its clients is tested in package gateway).

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
)

// progressUpstream starts an Upstream of the fault server (built and put on PATH)
// logging at debug level into log, and discovers it.
func progressUpstream(t *testing.T, log *mcptest.LogBuffer) *upstream.Server {
	t.Helper()
	mcptest.PeersOnPATH(t, "./internal/faultserver")
	return discoveredUpstream(t, log, upstream.ServerConfig{Name: "fault", Command: "faultserver"},
		&upstream.TransportPolicy{AllowCommands: true, Commands: []string{"faultserver"}})
}

// discoveredUpstream returns a discovered Upstream of cfg, logging at debug level
// into log, closed when t ends.
func discoveredUpstream(t *testing.T, log *mcptest.LogBuffer, cfg upstream.ServerConfig, policy *upstream.TransportPolicy) *upstream.Server {
	t.Helper()
	log.LogOnFailure(t, "upstream log")
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "pins.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u, err := upstream.New(cfg, &upstream.Options{
		Policy: policy,
		Pins:   st,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := u.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := u.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	return u
}

func callProgress(t *testing.T, u *upstream.Server, args string, opts *upstream.CallOptions) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := u.Call(ctx, "progress", json.RawMessage(args), opts)
	if err != nil {
		t.Fatalf("progress %s: %v", args, err)
	}
	return mcptest.ResultText(res)
}

// The Upstream hands a call's progress notifications to its hook, in order, before
// Call returns; notifications with another token, or with no call in flight, are
// dropped and logged; a call without a hook sends no token.
func TestUpstreamProgress(t *testing.T) {
	log := &mcptest.LogBuffer{}
	u := progressUpstream(t, log)

	for round := range 3 { // the same pooled connection serves every round
		var got mcptest.ProgressLog
		var returned, late atomic.Bool
		opts := &upstream.CallOptions{Progress: func(ctx context.Context, p *mcp.ProgressNotificationParams) {
			if returned.Load() {
				late.Store(true)
			}
			if ctx.Err() != nil {
				t.Errorf("the hook's context has ended: %v", ctx.Err())
			}
			got.Add(p)
		}}
		if text := callProgress(t, u, `{"n":5,"stray":true,"late":true}`, opts); text != "sent 5" {
			t.Fatalf("round %d: result %q", round, text)
		}
		returned.Store(true)
		list := got.All()
		if len(list) == 0 {
			t.Fatalf("round %d: no progress notification reached the hook", round)
		}
		token, ok := list[0].ProgressToken.(string)
		if !ok || !strings.HasPrefix(token, "warden-") {
			t.Fatalf("round %d: the upstream got the token %#v, want one of the Upstream's own", round, list[0].ProgressToken)
		}
		mcptest.WantSteps(t, list, 5, token)

		// The late notification (100ms after the answer) finds no call in flight.
		log.WaitCount(t, 10*time.Second, round+1, "progress notification dropped: no call asking for progress")
		if late.Load() || got.Len() != 5 {
			t.Errorf("round %d: the hook ran after Call returned (%d notifications)", round, got.Len())
		}
	}
	if n := log.Count("progress notification dropped: its token is not the call's"); n != 6 {
		t.Errorf("%d stray notifications logged as dropped, want 6 (2 a round)", n)
	}

	// No hook: no token is sent, so the upstream sends nothing.
	if text := callProgress(t, u, `{"n":3}`, nil); text != "no progress token" {
		t.Errorf("without a hook: %q", text)
	}
	if text := callProgress(t, u, `{"n":3}`, &upstream.CallOptions{}); text != "no progress token" {
		t.Errorf("with a nil hook: %q", text)
	}

	// A slow hook never stalls the connection: what does not fit its queue is
	// dropped, the rest arrives in order, and the call ends once the hook has seen
	// what was queued. The hook is held on its first notification until the Server
	// has handled the whole burst: the stray notification the upstream sends after
	// the 200 is handled (and logged as dropped) only after all 200 were.
	const stray = "progress notification dropped: its token is not the call's"
	strays := log.Count(stray)
	release := make(chan struct{})
	go func() {
		defer close(release)
		if !log.Await(time.Minute, strays+1, stray) {
			t.Error("the notification sent after the burst was never handled")
		}
	}()
	var got mcptest.ProgressLog
	var held atomic.Bool
	slow := &upstream.CallOptions{Progress: func(_ context.Context, p *mcp.ProgressNotificationParams) {
		if !held.Swap(true) {
			<-release
		}
		got.Add(p)
	}}
	if text := callProgress(t, u, `{"n":200,"stray_after":true}`, slow); text != "sent 200" {
		t.Fatalf("slow hook: result %q", text)
	}
	list := got.All()
	// Up to 16 wait for the hook (see CallOptions.Progress), and the held one may
	// have been taken from the queue before it filled.
	if len(list) < 16 || len(list) > 17 {
		t.Errorf("slow hook saw %d of 200 notifications; want 16 or 17, the rest dropped", len(list))
	}
	for i := 1; i < len(list); i++ {
		if list[i].Progress <= list[i-1].Progress {
			t.Errorf("out of order: %v after %v", list[i].Progress, list[i-1].Progress)
		}
	}
	if log.Count("progress notifications dropped: the call's queue was full") != 1 {
		t.Errorf("the drops were not logged")
	}
	t.Logf("slow hook: %d of 200 notifications seen", len(list))
}

// A url server's progress reaches the hook too, every notification before Call
// returns (they are counted in the HTTP responses as the SDK reads them).
func TestUpstreamProgressURL(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "http-progress", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		N int `json:"n"`
	}) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= in.N; i++ {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: float64(in.N), Message: fmt.Sprintf("step %d of %d", i, in.N),
			})
			if err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("sent %d", in.N)}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close) // after the Upstream's Close (cleanups run last first)
	log := &mcptest.LogBuffer{}
	u := discoveredUpstream(t, log, upstream.ServerConfig{Name: "web", URL: hs.URL},
		&upstream.TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}})
	for range 5 {
		var got mcptest.ProgressLog
		text := callProgress(t, u, `{"n":10}`, &upstream.CallOptions{Progress: func(_ context.Context, p *mcp.ProgressNotificationParams) { got.Add(p) }})
		if text != "sent 10" {
			t.Fatalf("result %q", text)
		}
		list := got.All()
		if len(list) == 0 {
			t.Fatal("no progress notification reached the hook")
		}
		mcptest.WantSteps(t, list, 10, list[0].ProgressToken)
	}
	// Call waited for as many as were counted, no more: never for the bound.
	if n := log.Count("progress notifications not handled in time"); n != 0 {
		t.Errorf("%d calls waited for notifications that never came", n)
	}
}
