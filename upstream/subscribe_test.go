package upstream

// Complete, Subscribe and Unsubscribe against real child processes: the conformance
// fixture (internal/conformanceserver) run with -test-tools, whose tool
// warden_test_update_resource sends notifications/resources/updated and says how many
// of its sessions are subscribed (each process serves one session: one connection),
// and the fault server, which offers neither completions nor resources.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

const subWatched = "test://watched-resource"

// subUpstream returns a discovered Server of the fixture started with args (after
// -stdio), over at most maxConns connections.
func subUpstream(t *testing.T, maxConns int, opts Options, args ...string) *Server {
	t.Helper()
	mcptest.BuildBinary(t, "./internal/conformanceserver") // beside the fault server, on PATH
	cfg := ServerConfig{Name: "conf", Command: "conformanceserver", Args: append([]string{"-stdio"}, args...)}
	opts.Policy = &TransportPolicy{AllowCommands: true, Commands: []string{"conformanceserver"}, MaxConnectionsPerServer: maxConns}
	u := newUpstream(t, cfg, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := u.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	return u
}

// subUpdates collects the Server's OnResourceUpdated calls as "server uri".
type subUpdates chan string

func (ch subUpdates) hook(server, uri string) { ch <- server + " " + uri }

func (ch subUpdates) next(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("OnResourceUpdated(%s), want (%s)", got, want)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no OnResourceUpdated(%s)", want)
	}
}

func (ch subUpdates) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-ch:
		t.Fatalf("OnResourceUpdated(%s), want none", got)
	default:
	}
}

// subTrigger has the fixture announce an update of uri on the connection the call
// takes, and checks how many of its sessions were subscribed (0 or 1).
func subTrigger(t *testing.T, u *Server, uri string, subscribed int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := u.Call(ctx, "warden_test_update_resource", []byte(fmt.Sprintf(`{"uri":%q}`, uri)), nil)
	if err != nil {
		t.Fatalf("warden_test_update_resource: %v", err)
	}
	if got, want := mcptest.ResultText(res), fmt.Sprintf("updated %s: %d subscribed session(s)", uri, subscribed); res.IsError || got != want {
		t.Fatalf("warden_test_update_resource: %q (isError %v), want %q", got, res.IsError, want)
	}
}

func TestSubscribeUpdatesUnsubscribe(t *testing.T) {
	t.Parallel()
	ch := make(subUpdates, 10)
	var logs mcptest.LogBuffer
	u := subUpstream(t, 1, Options{OnResourceUpdated: ch.hook, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, "-test-tools")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := u.Subscribe(ctx, subWatched); err != nil {
		t.Fatal(err)
	}
	// Subscribe returned once the server acknowledged it: it holds now.
	subTrigger(t, u, subWatched, 1)
	ch.next(t, "conf "+subWatched)
	// Subscribing again sends nothing: still one subscription.
	if err := u.Subscribe(ctx, subWatched); err != nil {
		t.Fatal(err)
	}
	subTrigger(t, u, subWatched, 1)
	ch.next(t, "conf "+subWatched)
	// Another URI is not subscribed.
	subTrigger(t, u, "test://static-text", 0)
	if err := u.Unsubscribe(ctx, subWatched); err != nil {
		t.Fatal(err)
	}
	// At 2026-07-28 the unsubscribe ends the listen stream, which the server sees a
	// moment later (its stderr says when); an update in between is dropped.
	logs.WaitCount(t, time.Minute, 1, "conformanceserver: unsubscribed "+subWatched)
	subTrigger(t, u, subWatched, 0)
	ch.none(t)
	// Unsubscribing a URI not subscribed does nothing.
	if err := u.Unsubscribe(ctx, subWatched); err != nil {
		t.Errorf("second Unsubscribe: %v", err)
	}
}

// A server that does not offer subscriptions: Subscribe wraps ErrNoSubscriptions
// and sends nothing.
func TestSubscribeWithoutSubscriptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		u    func(t *testing.T) *Server
	}{
		{"resources without subscribe", func(t *testing.T) *Server { return subUpstream(t, 1, Options{}, "-no-subscribe") }},
		{"no resources", func(t *testing.T) *Server {
			u := newUpstream(t, faultServer("conf"), Options{Policy: faultPolicy(1)})
			if _, _, err := u.Discover(context.Background()); err != nil {
				t.Fatal(err)
			}
			return u
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := tc.u(t)
			err := u.Subscribe(context.Background(), subWatched)
			if !errors.Is(err, ErrNoSubscriptions) {
				t.Fatalf("Subscribe: %v, want ErrNoSubscriptions", err)
			}
			if want := `server "conf": ` + ErrNoSubscriptions.Error(); err.Error() != want {
				t.Errorf("Subscribe: %q, want %q", err, want)
			}
			u.mu.Lock()
			n := len(u.subs)
			u.mu.Unlock()
			if n != 0 {
				t.Errorf("%d subscriptions recorded", n)
			}
		})
	}
}

func TestComplete(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := subUpstream(t, 1, Options{}, "-test-tools")
	res, err := u.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg2", Value: "w"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"world", "wonder"}; !slices.Equal(res.Completion.Values, want) || res.Completion.Total != 2 {
		t.Errorf("completion %+v, want values %q", res.Completion, want)
	}

	// The fault server offers no completions: no values, and nothing is sent.
	f := newUpstream(t, faultServer("fault"), Options{Policy: faultPolicy(1)})
	if _, _, err := f.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	res, err = f.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "anything"},
		Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"},
	})
	if err != nil {
		t.Fatalf("Complete on a server without completions: %v", err)
	}
	if res.Completion.Values == nil || len(res.Completion.Values) != 0 || res.Completion.Total != 0 || res.Completion.HasMore {
		t.Errorf("Complete on a server without completions: %+v, want empty values", res.Completion)
	}
}

// subKillHolder kills the process of the connection holding the subscription to uri
// and waits until the Server has forgotten that connection.
func subKillHolder(t *testing.T, u *Server, uri string) {
	t.Helper()
	u.mu.Lock()
	holder := u.subs[uri]
	u.mu.Unlock()
	if holder == nil || holder.pid == 0 {
		t.Fatalf("no connection holds the subscription to %s", uri)
	}
	if err := syscall.Kill(holder.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, time.Minute, fmt.Sprintf("the killed connection (pid %d) is gone", holder.pid), func() bool {
		return !slices.Contains(u.livePIDs(), holder.pid)
	})
}

// The process of the connection holding a subscription is killed: the next
// connection (the restart) subscribes again, and updates still arrive.
func TestSubscribeRenewedAfterRestart(t *testing.T) {
	t.Parallel()
	ch := make(subUpdates, 10)
	u := subUpstream(t, 1, Options{OnResourceUpdated: ch.hook, BackoffMin: time.Millisecond, BackoffMax: time.Millisecond}, "-test-tools")
	if err := u.Subscribe(context.Background(), subWatched); err != nil {
		t.Fatal(err)
	}
	subTrigger(t, u, subWatched, 1)
	ch.next(t, "conf "+subWatched)
	subKillHolder(t, u, subWatched)
	// The restart (in the background, or by the call) verifies the new connection,
	// which subscribes again before anything else goes out on it.
	mcptest.WaitFor(t, time.Minute, "a new connection is live", func() bool { return len(u.livePIDs()) == 1 })
	subTrigger(t, u, subWatched, 1)
	ch.next(t, "conf "+subWatched)
	u.mu.Lock()
	holder := u.subs[subWatched]
	u.mu.Unlock()
	if holder == nil || holder.dead {
		t.Errorf("the subscription is held by %+v, want the live connection", holder)
	}
}

// The connection holding a subscription ends while another, verified, stays: the
// subscription is sent again on the one left, and updates still arrive.
func TestSubscribeRenewedOnAnotherConnection(t *testing.T) {
	t.Parallel()
	ch := make(subUpdates, 10)
	u := subUpstream(t, 2, Options{OnResourceUpdated: ch.hook}, "-test-tools")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Two verified connections, both idle.
	c1, err := u.acquireVerified(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := u.acquireVerified(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	u.release(c1, true)
	u.release(c2, true)
	if n := len(u.livePIDs()); n != 2 {
		t.Fatalf("%d connections live, want 2", n)
	}
	if err := u.Subscribe(ctx, subWatched); err != nil {
		t.Fatal(err)
	}
	subKillHolder(t, u, subWatched)
	if n := len(u.livePIDs()); n != 1 {
		t.Fatalf("%d connections live, want 1", n)
	}
	// The subscription is renewed off the caller's path: wait for the connection
	// left to hold it, then check the server agrees.
	mcptest.WaitFor(t, time.Minute, "the subscription is held by a live connection", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		h := u.subs[subWatched]
		return h != nil && !h.dead
	})
	subTrigger(t, u, subWatched, 1)
	ch.next(t, "conf "+subWatched)
}

// The only connection, holding a subscription, is closed on purpose (its call timed
// out): a new connection is started for the subscription, before any request needs
// one, and the new process is sent resources/subscribe.
func TestSubscribeRenewedAfterDiscard(t *testing.T) {
	t.Parallel()
	logs := &mcptest.LogBuffer{}
	logs.LogOnFailure(t, "upstream log")
	logger := slog.New(mcptest.KeysOnce(t, slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	u := subUpstream(t, 1, Options{Logger: logger, CallTimeout: 20 * time.Millisecond}, "-test-tools")
	if err := u.Subscribe(context.Background(), subWatched); err != nil {
		t.Fatal(err)
	}
	subscribed := []string{"upstream stderr", "conformanceserver: subscribed " + subWatched}
	logs.WaitCount(t, time.Minute, 1, subscribed...)
	u.mu.Lock()
	first := u.subs[subWatched]
	u.mu.Unlock()
	// test_tool_with_logging takes about 100ms.
	if _, err := u.Call(context.Background(), "test_tool_with_logging", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call: %v, want a timeout", err)
	}
	mcptest.WaitFor(t, time.Minute, "the subscription is held by a new live connection", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		h := u.subs[subWatched]
		return h != nil && h != first && !h.dead
	})
	logs.WaitCount(t, time.Minute, 2, subscribed...)
	if pids := u.livePIDs(); len(pids) != 1 || pids[0] == first.pid {
		t.Errorf("live connections %v, want one other than the timed-out pid %d", pids, first.pid)
	}
}

// While the server is down (its only connection ended; the restart is an hour
// away), Subscribe and Complete say so: the server still offers subscriptions and
// completions.
func TestSubscribeAndCompleteWhileDown(t *testing.T) {
	t.Parallel()
	u := subUpstream(t, 1, Options{BackoffMin: time.Hour, BackoffMax: time.Hour}, "-test-tools")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := u.Subscribe(ctx, subWatched); err != nil {
		t.Fatal(err)
	}
	subKillHolder(t, u, subWatched)
	err := u.Subscribe(ctx, "test://static-text")
	if errors.Is(err, ErrNoSubscriptions) || !errors.Is(err, ErrServerRestarting) {
		t.Errorf("Subscribe while down: %v, want ErrServerRestarting", err)
	}
	res, err := u.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg2", Value: "w"},
	})
	if !errors.Is(err, ErrServerRestarting) || !errors.Is(err, ErrNotSent) {
		t.Errorf("Complete while down: %+v, %v; want an error wrapping ErrServerRestarting and ErrNotSent", res, err)
	}
	if err != nil && !strings.Contains(err.Error(), `server "conf"`) {
		t.Errorf("Complete while down: %q does not name the server", err)
	}
}

// Concurrent Subscribes of one URI send one resources/subscribe, on one connection,
// even when each could take a connection of its own.
func TestSubscribeConcurrent(t *testing.T) {
	t.Parallel()
	const n = 4
	u := subUpstream(t, n, Options{}, "-test-tools")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var conns []*upstreamConn
	for range n {
		c, err := u.acquireVerified(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		u.release(c, true)
	}
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		go func() {
			<-start
			errs <- u.Subscribe(ctx, subWatched)
		}()
	}
	close(start)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Each process (one per connection) says whether it was subscribed.
	total := 0
	for _, c := range conns {
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "warden_test_update_resource", Arguments: map[string]any{"uri": subWatched}})
		if err != nil {
			t.Fatal(err)
		}
		var k int
		if _, err := fmt.Sscanf(mcptest.ResultText(res), "updated "+subWatched+": %d subscribed session(s)", &k); err != nil {
			t.Fatalf("%q: %v", mcptest.ResultText(res), err)
		}
		total += k
	}
	if total != 1 {
		t.Errorf("%d connections are subscribed to %s, want 1", total, subWatched)
	}
}
