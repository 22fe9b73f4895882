//lint:file-ignore SA1019 the tests answer roots, deprecated from protocol 2026-07-28 on, which the gateway routes for the session-based versions it serves

package gateway_test

// Roots an upstream asks for during a call, through the gateway: the upstream is
// faultserver -roots (a go-sdk server over stdio) whose tool roots asks its client
// for roots (roots/list on the session-based line, an input_required round from
// 2026-07-28 on) and answers with what the client declared and the roots it got.
// The clients are the SDK's, declaring roots (mcp.Client AddRoots, the SDK's
// default capabilities) or not.

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
)

// noRoots is the options of a client that declares nothing (the SDK's default
// declares roots): its calls go out on the plain connections, as discovery's and
// the subscriptions' are, not on connections of a class of their own. For tests
// whose upstream has one connection.
func noRoots() *mcp.ClientOptions {
	return &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
}

// rootsServersAt is the fault server with its roots tool, its link pinned to
// protocol ("" for the newest).
func rootsServersAt(protocol string) string {
	s := "servers:\n  fault:\n    command: faultserver\n    args: [-roots]\n"
	if protocol != "" {
		s += "    protocol: " + protocol + "\n"
	}
	return s
}

const rootsTransport = `transport:
  allow_commands: true
  commands: [faultserver]
  max_connections_per_server: 2
`

// rootsAllowed allows the tool and the server's roots requests, each by its own
// rule.
const rootsAllowed = `version: 1
mode: rules
rules:
  allow:
    mcp__fault__roots: ['*']
    roots:fault: ['*']
`

// The upstream links and the session-based front versions the tests run over.
var (
	rootsUpstreams = []string{"2025-11-25", "2025-06-18", ""}
	rootsFronts    = []string{"2025-11-25", "2025-06-18"}
)

// rootsProto is the protocol the fault server speaks on a link pinned to protocol.
func rootsProto(protocol string) string { return cmp.Or(protocol, "2026-07-28") }

// rootsConnect connects over streamable HTTP at protocol with a client that has
// roots (declaring them, as the SDK does by default) or, for none, declares no
// roots.
func (e *gwEnv) rootsConnect(t *testing.T, token, protocol string, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	var opts *mcp.ClientOptions
	if roots == nil {
		opts = &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test-roots", Version: "1"}, opts)
	c.AddRoots(roots...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: e.url, HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token, Next: e.tr}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect at %s: %v", protocol, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != protocol {
		t.Fatalf("the session speaks %s, want %s", got, protocol)
	}
	return cs
}

// rootsErrorResult starts the text of the fault server's error result as the
// gateway passes it on.
const rootsErrorResult = "MCP tool 'roots' (server 'fault') returned an error: "

// rootsFailed is what the caller reads when the upstream's roots request was
// answered with the error text: on the session-based line the fault server's error
// result, from 2026-07-28 on the call's failure at the gateway (an input response
// cannot carry an error back).
func rootsFailed(protocol, text string) (string, bool) {
	if protocol != "" {
		return rootsErrorResult + "protocol=" + protocol + ` declared=true roots/list failed: calling "roots/list": ` + text, true
	}
	return `Tool 'mcp__fault__roots' failed: server "fault": tool "roots": multi round-trip: fulfilling input request "roots": ` + text, true
}

// The upstream's roots request during a call reaches the caller, whose client
// answers with its own roots, exactly what the upstream gets; the audit log holds
// the call and the request (roots:fault, no arguments), both of the caller, the
// request judged by its own rule. For every session-based front version and every
// upstream link.
func TestAskRootsReachTheCaller(t *testing.T) {
	for _, up := range rootsUpstreams {
		t.Run("upstream "+rootsProto(up), func(t *testing.T) {
			e := gwStart(t, gwSetup{policy: rootsAllowed, servers: rootsServersAt(up), transport: rootsTransport, identities: askIdentities})
			for _, front := range rootsFronts {
				t.Run("front "+front, func(t *testing.T) {
					cs := e.rootsConnect(t, gwWriterToken, front,
						&mcp.Root{URI: "file:///home/ann/" + front, Name: "work"},
						&mcp.Root{URI: "file:///srv/shared", Name: "shared"})
					gwWant(t, gwCall(t, cs, "mcp__fault__roots", map[string]any{}), false,
						"protocol="+rootsProto(up)+" declared=true roots=file:///home/ann/"+front+" (work), file:///srv/shared (shared)")

					calls := e.calls(t, "mcp__fault__roots", "sampler")
					asks := e.calls(t, "roots:fault", "sampler")
					if len(calls) == 0 || len(asks) == 0 {
						t.Fatalf("audit: %d records of the call, %d of the roots request", len(calls), len(asks))
					}
					call, ask := calls[len(calls)-1], asks[len(asks)-1]
					if call.Session != cs.ID() || !call.Executed || call.Status != warden.StatusRan {
						t.Errorf("audit of the call: %+v", call)
					}
					if ask.Tool != "roots:fault" || !ask.Executed || ask.Status != warden.StatusRan || ask.Stage != warden.StageExecute ||
						ask.Identity != call.Identity || ask.Session != call.Session || ask.CallID == call.CallID || string(ask.Args) != "{}" || ask.Seq <= call.Seq {
						t.Errorf("audit of the roots request:\n  %+v\nthe call's:\n  %+v", ask, call)
					}
				})
			}
		})
	}
}

// A roots request the policy does not allow never reaches the client: the upstream
// gets an error with the policy's text, and the audit log records the request
// refused at the permission stage. Rules mode without a rule for roots:fault, and
// a condition that denies it with a text for the model.
func TestAskRootsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, policy, text, ruleID string
	}{{
		name:   "no rule",
		policy: "version: 1\nmode: rules\nrules:\n  allow:\n    mcp__fault__roots: ['*']\n",
		text:   "[permission denied: no matching rule, default deny]", ruleID: "default",
	}, {
		name: "condition",
		policy: `version: 1
mode: allow_all
conditions:
  - id: no-roots
    when: 'tool == "roots:fault"'
    effect: deny
    tell_llm: "This server may not see the client's roots."
`,
		text: "This server may not see the client's roots.", ruleID: "no-roots",
	}} {
		for _, up := range rootsUpstreams {
			t.Run(tc.name+" upstream "+rootsProto(up), func(t *testing.T) {
				e := gwStart(t, gwSetup{policy: tc.policy, servers: rootsServersAt(up), transport: rootsTransport, identities: askIdentities})
				cs := e.rootsConnect(t, gwWriterToken, "2025-11-25", &mcp.Root{URI: "file:///secret", Name: "secret"})
				res := gwCall(t, cs, "mcp__fault__roots", map[string]any{})
				want, isErr := rootsFailed(up, tc.text)
				gwWant(t, res, isErr, want)
				if strings.Contains(mcptest.ResultText(res), "file:///secret") {
					t.Errorf("the refused roots reached the upstream: %q", mcptest.ResultText(res))
				}
				ask := e.lastCall(t, "roots:fault", "sampler")
				if ask.Executed || ask.Status != warden.StatusRefused || ask.Stage != warden.StagePermission || ask.Effect != "deny" ||
					ask.RuleID != tc.ruleID || ask.Identity.Principal != "sampler" || ask.Session != cs.ID() || string(ask.Args) != "{}" {
					t.Errorf("audit of the refused roots request: %+v", ask)
				}
			})
		}
	}
}

// A client that declared no roots is served by connections that declared none: the
// upstream sees no roots capability, its request is refused by the gateway (never
// answered with a list of the gateway's own), and nothing is recorded as asked;
// while a client with roots, on the same gateway, gets its own.
func TestAskRootsClientWithout(t *testing.T) {
	for _, up := range rootsUpstreams {
		t.Run("upstream "+rootsProto(up), func(t *testing.T) {
			e := gwStart(t, gwSetup{policy: rootsAllowed, servers: rootsServersAt(up), transport: rootsTransport, identities: askIdentities})
			plain := e.rootsConnect(t, gwReaderToken, "2025-11-25")
			rooted := e.rootsConnect(t, gwWriterToken, "2025-06-18", &mcp.Root{URI: "file:///home/ann", Name: "ann"})
			const refusal = "roots is only answered during a call, by the client that made it"
			for i := range 2 {
				res := gwCall(t, plain, "mcp__fault__roots", map[string]any{})
				if up != "" {
					gwWant(t, res, true, rootsErrorResult+"protocol="+up+` declared=false roots/list failed: calling "roots/list": `+refusal)
				} else {
					gwWant(t, res, true, `Tool 'mcp__fault__roots' failed: server "fault": tool "roots": multi round-trip: fulfilling input request "roots": `+refusal)
				}
				gwWant(t, gwCall(t, rooted, "mcp__fault__roots", map[string]any{}), false,
					fmt.Sprintf("protocol=%s declared=true roots=file:///home/ann (ann)", rootsProto(up)))
				if recs := e.calls(t, "roots:fault", ""); len(recs) != i+1 {
					t.Errorf("%d roots requests recorded after round %d, want %d (the rooted client's only)", len(recs), i, i+1)
				}
			}
			if recs := e.calls(t, "roots:fault", "plain"); len(recs) != 0 {
				t.Errorf("roots requests recorded for the client without roots: %+v", recs)
			}
		})
	}
}

// Two callers at once, each with its own roots: the upstream's request of each call
// (made once both calls are in flight: each waits for the other's mark) is answered
// by that call's client, recorded for its own session.
func TestAskRootsConcurrentCallers(t *testing.T) {
	for _, up := range rootsUpstreams {
		t.Run("upstream "+rootsProto(up), func(t *testing.T) {
			e := gwStart(t, gwSetup{policy: rootsAllowed, servers: rootsServersAt(up), transport: rootsTransport, identities: askIdentities})
			dir := t.TempDir()
			who := []string{"sampler", "plain"}
			sessions := []*mcp.ClientSession{
				e.rootsConnect(t, gwWriterToken, "2025-11-25", &mcp.Root{URI: "file:///home/sampler", Name: "sampler"}),
				e.rootsConnect(t, gwReaderToken, "2025-06-18", &mcp.Root{URI: "file:///home/plain", Name: "plain"}),
			}
			got := make([]string, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				args := map[string]any{"mark": filepath.Join(dir, who[i]), "wait_for": filepath.Join(dir, who[1-i])}
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					res, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fault__roots", Arguments: args})
					got[i] = fmt.Sprintf("error: %v", err)
					if err == nil {
						got[i] = fmt.Sprintf("isError=%t %s", res.IsError, mcptest.ResultText(res))
					}
				})
			}
			wg.Wait()
			for i, w := range who {
				if want := fmt.Sprintf("isError=false protocol=%s declared=true roots=file:///home/%s (%s)", rootsProto(up), w, w); got[i] != want {
					t.Errorf("%s's call: %q, want %q", w, got[i], want)
				}
				recs := e.calls(t, "roots:fault", w)
				if len(recs) != 1 || recs[0].Session != sessions[i].ID() || recs[0].Status != warden.StatusRan {
					t.Errorf("audit of %s's roots requests: %+v", w, recs)
				}
			}
		})
	}
}

// On the stateless front (protocol 2026-07-28) the upstream's roots input request
// is judged as roots:fault before the client sees it: allowed, the client gets it
// and its answer reaches the upstream on the retry; refused, the call ends with the
// policy's text and the client gets nothing of it. Both are recorded.
func TestRelayRootsJudged(t *testing.T) {
	t.Run("allowed", func(t *testing.T) {
		e := gwStart(t, gwSetup{policy: rootsAllowed, servers: rootsServersAt(""), transport: rootsTransport, identities: relayIdentities})
		cs := connect2026(t, e.url, gwWriterToken, e.tr, manualMRTR())
		res := relayAsked(t, cs, "mcp__fault__roots", nil, "", nil, "roots")
		if _, ok := res.InputRequests["roots"].(*mcp.ListRootsParams); !ok {
			t.Fatalf("input request roots = %#v, want a roots/list", res.InputRequests["roots"])
		}
		ask := e.lastCall(t, "roots:fault", "ann")
		if !ask.Executed || ask.Status != warden.StatusRan || string(ask.Args) != "{}" {
			t.Errorf("audit of the relayed roots request: %+v", ask)
		}
		gwWant(t, relayOK(t, cs, "mcp__fault__roots", nil, res.RequestState, mcp.InputResponseMap{
			"roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///home/ann", Name: "ann"}}},
		}), false, "protocol=2026-07-28 declared=true roots=file:///home/ann (ann)")
	})
	t.Run("refused", func(t *testing.T) {
		e := gwStart(t, gwSetup{policy: "version: 1\nmode: rules\nrules:\n  allow:\n    mcp__fault__roots: ['*']\n", servers: rootsServersAt(""), transport: rootsTransport, identities: relayIdentities})
		cs := connect2026(t, e.url, gwWriterToken, e.tr, manualMRTR())
		res := relayOK(t, cs, "mcp__fault__roots", nil, "", nil)
		if res.NeedsInput() || res.RequestState != "" {
			t.Errorf("the client got the refused input request: %+v", res)
		}
		gwWant(t, res, true, `The server fault asked the client for roots/list (input request "roots"), which was refused: [permission denied: no matching rule, default deny] The call did not complete.`)
		ask := e.lastCall(t, "roots:fault", "ann")
		if ask.Executed || ask.Status != warden.StatusRefused || ask.Stage != warden.StagePermission || ask.RuleID != "default" || string(ask.Args) != "{}" {
			t.Errorf("audit of the refused roots request: %+v", ask)
		}
	})
}
