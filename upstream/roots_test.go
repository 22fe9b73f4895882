//lint:file-ignore SA1019 the tests answer roots, deprecated from protocol 2026-07-28 on, which the gateway routes for the session-based versions it speaks

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

// rootsProtocols are the upstream links the roots tests run over: the two
// session-based versions, where the fault server asks by roots/list, and
// 2026-07-28, where it asks by an input_required round the Server fulfils.
var rootsProtocols = []string{"2025-11-25", "2025-06-18", "2026-07-28"}

// rootsUpstream returns a discovered Server of faultserver -roots over protocol,
// its directory put on PATH for the test (whatever PATH held before).
func rootsUpstream(t *testing.T, protocol string, maxConns int) *Server {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/faultserver")
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := faultServer("fault", "-roots")
	cfg.Protocol = protocol
	u := newUpstream(t, cfg, Options{Policy: faultPolicy(maxConns)})
	if _, _, err := u.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return u
}

// fixedRoots answers roots with roots, counting its answers.
func fixedRoots(n *atomic.Int32, roots ...*mcp.Root) func(context.Context) (*mcp.ListRootsResult, error) {
	return func(context.Context) (*mcp.ListRootsResult, error) {
		n.Add(1)
		return &mcp.ListRootsResult{Roots: roots}, nil
	}
}

// callRoots calls the fault server's roots tool with args and returns its text,
// whether it is an error result, and the call's error.
func callRoots(t *testing.T, u *Server, args map[string]any, opts *CallOptions) (string, bool, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := u.Call(context.Background(), "roots", raw, opts)
	if err != nil {
		return "", false, err
	}
	return textOf(t, res), res.IsError, nil
}

// The upstream's roots/list during a call (or its roots/list input request, from
// 2026-07-28 on) is answered by the call's Roots, exactly: the connection declares
// roots when Roots is set, and a call without Roots (none, or sampling only) goes
// out on a connection that declares none, whose roots/list is refused, never
// answered from the SDK's own (empty) root list. An answer that fails is the
// upstream's error (on the session-based line) or the call's (from 2026-07-28 on).
func TestClientRequestsRoots(t *testing.T) {
	for _, protocol := range rootsProtocols {
		t.Run(protocol, func(t *testing.T) {
			u := rootsUpstream(t, protocol, 1)
			session := protocol < "2026-07-28"
			var n atomic.Int32
			roots := &CallOptions{Client: &ClientRequests{Roots: fixedRoots(&n,
				&mcp.Root{URI: "file:///home/ann/project", Name: "project"},
				&mcp.Root{URI: "file:///home/ann/notes", Name: "notes"})}}
			text, isErr, err := callRoots(t, u, map[string]any{}, roots)
			if want := "protocol=" + protocol + " declared=true roots=file:///home/ann/project (project), file:///home/ann/notes (notes)"; err != nil || isErr || text != want {
				t.Errorf("call with roots: %q (isError %t, error %v), want %q", text, isErr, err, want)
			}

			sampling := &sampleAnswer{reply: "never"}
			for name, opts := range map[string]*CallOptions{
				"no client":     nil,
				"sampling only": {Client: &ClientRequests{Sampling: sampling.answer}},
			} {
				text, isErr, err := callRoots(t, u, map[string]any{}, opts)
				const refusal = "roots is only answered during a call, by the client that made it"
				if session {
					if want := "protocol=" + protocol + " declared=false roots/list failed: calling \"roots/list\": " + refusal; err != nil || !isErr || text != want {
						t.Errorf("call with %s: %q (isError %t, error %v), want the error result %q", name, text, isErr, err, want)
					}
				} else if want := `multi round-trip: fulfilling input request "roots": ` + refusal; err == nil || !strings.HasSuffix(err.Error(), want) {
					t.Errorf("call with %s: %q (isError %t), error %v, want the call failed with %q", name, text, isErr, err, want)
				}
			}
			if got := n.Load(); got != 1 {
				t.Errorf("Roots answered %d times, want once (for the call with roots)", got)
			}

			failing := &CallOptions{Client: &ClientRequests{Roots: func(context.Context) (*mcp.ListRootsResult, error) {
				return nil, errors.New("the user keeps their roots to themselves")
			}}}
			text, isErr, err = callRoots(t, u, map[string]any{}, failing)
			if session {
				if !isErr || err != nil || !strings.HasPrefix(text, "protocol="+protocol+" declared=true roots/list failed: ") || !strings.Contains(text, "the user keeps their roots to themselves") {
					t.Errorf("call whose Roots fails: %q (isError %t, error %v), want the upstream's error result with the answer's error", text, isErr, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), `fulfilling input request "roots": the user keeps their roots to themselves`) {
				t.Errorf("call whose Roots fails: %q, error %v, want the call failed with the answer's error", text, err)
			}
		})
	}
}

// Two calls in flight at once on two connections, each with its own Roots: the
// upstream's request of each call is answered by that call's Roots (the fault server
// asks only once both calls have started, each waiting for the other's mark).
func TestClientRequestsRootsConcurrentCalls(t *testing.T) {
	for _, protocol := range rootsProtocols {
		t.Run(protocol, func(t *testing.T) {
			u := rootsUpstream(t, protocol, 2)
			dir := t.TempDir()
			var wg sync.WaitGroup
			got := make([]string, 2)
			for i, who := range []string{"ann", "bob"} {
				other := []string{"bob", "ann"}[i]
				var n atomic.Int32
				opts := &CallOptions{Client: &ClientRequests{Roots: fixedRoots(&n, &mcp.Root{URI: "file:///home/" + who, Name: who})}}
				args := map[string]any{"mark": filepath.Join(dir, who), "wait_for": filepath.Join(dir, other)}
				wg.Go(func() {
					text, isErr, err := callRoots(t, u, args, opts)
					got[i] = fmt.Sprintf("%s isError=%t err=%v answers=%d", text, isErr, err, n.Load())
				})
			}
			wg.Wait()
			for i, who := range []string{"ann", "bob"} {
				if want := fmt.Sprintf("protocol=%s declared=true roots=file:///home/%s (%s) isError=false err=<nil> answers=1", protocol, who, who); got[i] != want {
					t.Errorf("%s's call: %q, want %q", who, got[i], want)
				}
			}
		})
	}
}

// An upstream that asks for input in every round (protocol 2026-07-28) gets at most
// 10 rounds: the call fails after the 9th answered round, as the SDK's own
// fulfilment would.
func TestClientRequestsRoundsBounded(t *testing.T) {
	u := rootsUpstream(t, "2026-07-28", 1)
	var n atomic.Int32
	opts := &CallOptions{Client: &ClientRequests{Roots: fixedRoots(&n, &mcp.Root{URI: "file:///r"})}}
	_, _, err := callRoots(t, u, map[string]any{"forever": true}, opts)
	if err == nil || !strings.Contains(err.Error(), "multi-round-trip: exceeded maximum retries (10)") {
		t.Errorf("call of an upstream that always asks: %v, want the bound's error", err)
	}
	if got := n.Load(); got != 9 {
		t.Errorf("Roots answered %d rounds, want 9 (the 10th round ends the call)", got)
	}
}

// Two calls that need connections of two new classes at once, with MaxConns 2 and
// the idle plain connection of discovery live, never have three processes: a
// connection being started counts against the bound, so the second start closes
// the idle one (the two calls are in flight together: each waits for the other's
// mark before it asks for roots, where the processes are counted).
func TestClientRequestsConcurrentStartsKeepTheBound(t *testing.T) {
	u := rootsUpstream(t, "2025-11-25", 2)
	old := u.livePIDs()
	if len(old) != 1 {
		t.Fatalf("after discovery the live connections are %v, want one", old)
	}
	dir := t.TempDir()
	var (
		mu   sync.Mutex
		seen []int
	)
	count := func(context.Context) (*mcp.ListRootsResult, error) {
		live := liveProcesses(append(old, u.livePIDs()...)...)
		mu.Lock()
		if len(live) > len(seen) {
			seen = live
		}
		mu.Unlock()
		return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///r", Name: "r"}}}, nil
	}
	sampling := &sampleAnswer{reply: "unused"}
	classes := []*ClientRequests{{Roots: count}, {Roots: count, Sampling: sampling.answer}}
	got := make([]string, 2)
	var wg sync.WaitGroup
	for i, asks := range classes {
		args := map[string]any{"mark": filepath.Join(dir, fmt.Sprint(i)), "wait_for": filepath.Join(dir, fmt.Sprint(1-i))}
		wg.Go(func() {
			text, isErr, err := callRoots(t, u, args, &CallOptions{Client: asks})
			got[i] = fmt.Sprintf("%s isError=%t err=%v", text, isErr, err)
		})
	}
	wg.Wait()
	for i := range classes {
		if want := "protocol=2025-11-25 declared=true roots=file:///r (r) isError=false err=<nil>"; got[i] != want {
			t.Errorf("call %d: %q, want %q", i, got[i], want)
		}
	}
	if len(seen) != 2 || slices.Contains(seen, old[0]) {
		t.Errorf("while both calls were in flight the live processes were %v (the idle plain one was %d); want the two calls' own", seen, old[0])
	}
}
