//lint:file-ignore SA1019 the tests answer sampling, deprecated from protocol 2026-07-28 on, which the gateway routes for the session-based versions it serves

package gateway_test

// Sampling and elicitation an upstream asks for during a call, through the gateway:
// the upstream is the conformance fixture (internal/conformanceserver -stdio, a
// go-sdk server) whose test_sampling asks its client for sampling/createMessage and
// whose elicitation tools ask for elicitation/create, and which answers with an error
// result when its client (the gateway's connection) did not declare the capability.
// The clients are the SDK's, with or without a CreateMessageHandler or an
// ElicitationHandler (which declare the capabilities).

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

const askServers = `servers:
  conf:
    command: conformanceserver
    args: [-stdio]
`

const askTransport = `transport:
  allow_commands: true
  commands: [conformanceserver]
`

// The callers: sampler and elicitor answer what their client declares, plain
// declares nothing.
const askIdentities = `listen: 127.0.0.1:0
stdio:
  principal: local-user
clients:
  - principal: sampler
    token_env: GW_WRITER_TOKEN
  - principal: plain
    token_env: GW_READER_TOKEN
  - principal: elicitor
    token_env: GW_BOB_TOKEN
`

// askAllowed allows the fixture's tools and its sampling and elicitation requests,
// in rules mode: each by its own rule.
const askAllowed = `version: 1
mode: rules
rules:
  allow:
    mcp__conf__test_sampling: ['*']
    mcp__conf__test_elicitation: ['*']
    mcp__conf__test_elicitation_sep1034_defaults: ['*']
    mcp__conf__test_elicitation_sep1330_enums: ['*']
    mcp__conf__test_simple_text: ['*']
    sampling:conf: ['*']
    elicitation:conf: ['*']
`

// The fixture's error result for a client that did not declare the capability.
const (
	askNoSampling    = "MCP tool 'test_sampling' (server 'conf') returned an error: the client does not support sampling"
	askNoElicitation = "MCP tool 'test_elicitation' (server 'conf') returned an error: the client does not support elicitation"
)

// askRefusedText is what the caller of test_sampling reads when the gateway answered
// the fixture's sampling request with the JSON-RPC error text: the fixture's SDK
// fails the call with it.
func askRefusedText(text string) string {
	return `Tool 'mcp__conf__test_sampling' failed: server "conf": tool "test_sampling": calling "tools/call": multi-round-trip: fulfilling input request "ask": calling "sampling/createMessage": ` + text
}

// askServersAt is askServers with the upstream link pinned to protocol ("" for
// the newest).
func askServersAt(protocol string) string {
	if protocol == "" {
		return askServers
	}
	return askServers + "    protocol: " + protocol + "\n"
}

// askRefusedTextAt is askRefusedText for an upstream link of protocol: on the
// session-based line the fixture asks by a server-to-client request and fails its
// call with the error it gets back (askRefusedText); from 2026-07-28 on it asks by
// an input_required round, which the gateway fulfils for its session-based client,
// and an answer that cannot be given ends the call at the gateway (an input
// response cannot carry an error back to the upstream).
func askRefusedTextAt(protocol, text string) string {
	if protocol != "" {
		return askRefusedText(text)
	}
	return `Tool 'mcp__conf__test_sampling' failed: server "conf": tool "test_sampling": multi round-trip: fulfilling input request "ask": ` + text
}

// askProtocols are the upstream links the asks tests run over.
var askProtocols = []string{"2025-11-25", ""}

func askStart(t *testing.T, policy, extra string) *gwEnv {
	t.Helper()
	mcptest.PeersOnPATH(t, "./internal/conformanceserver")
	return gwStart(t, gwSetup{policy: policy, servers: askServers, transport: askTransport, identities: askIdentities, extra: extra})
}

// askConnect connects over streamable HTTP like connect, optionally without the
// standalone SSE stream (which a client need not open): then the server's requests
// reach the client only on the stream of the client's own request.
func (e *gwEnv) askConnect(t *testing.T, token string, opts *mcp.ClientOptions, standaloneSSE bool) *mcp.ClientSession {
	t.Helper()
	if standaloneSSE {
		return e.connect(t, token, opts)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test-nosse", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: e.url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token, Next: e.tr}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: mcptest.SessionProtocolVersion})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// gwSampler answers every sampling request with reply and the prompt's text, and
// keeps the requests.
type gwSampler struct {
	reply string
	fail  error  // when set, every answer is this error
	hold  func() // when set, runs before answering
	mu    sync.Mutex
	got   []*mcp.CreateMessageParams
}

func (s *gwSampler) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{CreateMessageHandler: s.answer}
}

func (s *gwSampler) answer(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	s.mu.Lock()
	s.got = append(s.got, req.Params)
	s.mu.Unlock()
	if s.hold != nil {
		s.hold()
	}
	if s.fail != nil {
		return nil, s.fail
	}
	return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: s.reply + " to " + promptOf(req.Params)}}, nil
}

func (s *gwSampler) asked() []*mcp.CreateMessageParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

func promptOf(p *mcp.CreateMessageParams) string {
	if len(p.Messages) == 1 {
		if tc, ok := p.Messages[0].Content.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return fmt.Sprintf("<%d messages>", len(p.Messages))
}

// askSamplingParams is the JSON of the fixture's sampling request for prompt.
func askSamplingParams(prompt string) string {
	b, _ := json.Marshal(prompt)
	return `{"maxTokens":100,"messages":[{"content":{"type":"text","text":` + string(b) + `},"role":"user"}]}`
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// One sampling request during a call reaches the caller's handler with the
// upstream's parameters, its answer reaches the upstream, and the audit log holds the
// call and the request, both of the caller, the request judged by its own rule: over
// HTTP and over stdio.
func TestAskSamplingReachesTheCaller(t *testing.T) {
	e := askStart(t, askAllowed, "")
	for _, front := range []string{"http", "stdio"} {
		t.Run(front, func(t *testing.T) {
			s := &gwSampler{reply: "a sampled reply"}
			var cs *mcp.ClientSession
			principal := "sampler"
			if front == "http" {
				cs = e.connect(t, gwWriterToken, s.options())
			} else {
				cs, principal = e.connectStdio(t, s.options()), "local-user"
			}
			prompt := "Write a haiku about audit logs, via " + front
			gwWant(t, gwCall(t, cs, "mcp__conf__test_sampling", map[string]any{"prompt": prompt}), false, "LLM response: a sampled reply to "+prompt)

			asked := s.asked()
			if len(asked) != 1 {
				t.Fatalf("the client was asked %d times, want once: %+v", len(asked), asked)
			}
			if got, want := jsonOf(t, asked[0]), askSamplingParams(prompt); got != want {
				t.Errorf("the client was asked\n  %s\nwant the upstream's request unchanged\n  %s", got, want)
			}

			calls := e.calls(t, "mcp__conf__test_sampling", principal)
			asks := e.calls(t, "sampling:conf", principal)
			if len(calls) != 1 || len(asks) != 1 {
				t.Fatalf("audit: %d records of the call, %d of the sampling request, want 1 and 1: %+v %+v", len(calls), len(asks), calls, asks)
			}
			call, ask := calls[0], asks[0]
			if call.Tool != "mcp__conf__test_sampling" || !call.Executed || call.Status != warden.StatusRan || call.Stage != warden.StageExecute ||
				call.Identity.Principal != principal || call.Session == "" {
				t.Errorf("audit of the call: %+v", call)
			}
			if ask.Tool != "sampling:conf" || !ask.Executed || ask.Status != warden.StatusRan || ask.Stage != warden.StageExecute ||
				ask.Identity != call.Identity || ask.Session != call.Session || ask.CallID == call.CallID ||
				string(ask.Args) != askSamplingParams(prompt) {
				t.Errorf("audit of the sampling request:\n  %+v\nthe call's:\n  %+v", ask, call)
			}
			if ask.Seq <= call.Seq {
				t.Errorf("the sampling request (seq %d) is recorded before the call it was made in (seq %d)", ask.Seq, call.Seq)
			}
		})
	}
}

// A client that declared no sampling is served by connections that declared none:
// the fixture sees no sampling capability and says so, nothing is asked, and no
// sampling request is recorded, even when a client with sampling has its own
// connection open; and a connection of a client with sampling only declares no
// elicitation.
func TestAskSamplingClientWithout(t *testing.T) {
	e := askStart(t, askAllowed, "")
	s := &gwSampler{reply: "sampled"}
	sampler := e.connect(t, gwWriterToken, s.options())
	plain := e.connect(t, gwReaderToken, nil)

	gwWant(t, gwCall(t, plain, "mcp__conf__test_sampling", map[string]any{"prompt": "plain 1"}), true, askNoSampling)
	gwWant(t, gwCall(t, sampler, "mcp__conf__test_sampling", map[string]any{"prompt": "sampler 1"}), false, "LLM response: sampled to sampler 1")
	gwWant(t, gwCall(t, plain, "mcp__conf__test_sampling", map[string]any{"prompt": "plain 2"}), true, askNoSampling)
	gwWant(t, gwCall(t, sampler, "mcp__conf__test_elicitation", map[string]any{"message": "who are you?"}), true, askNoElicitation)

	if got := s.asked(); len(got) != 1 || promptOf(got[0]) != "sampler 1" {
		t.Errorf("the sampling client was asked %d times (%+v), want once, for its own call", len(got), got)
	}
	if recs := e.calls(t, "sampling:conf", "plain"); len(recs) != 0 {
		t.Errorf("sampling requests recorded for the client without sampling: %+v", recs)
	}
	if recs := e.calls(t, "elicitation:*", ""); len(recs) != 0 {
		t.Errorf("elicitation requests recorded, with no client that declared elicitation: %+v", recs)
	}
	recs := e.calls(t, "mcp__conf__test_sampling", "plain")
	if len(recs) != 2 {
		t.Fatalf("%d audit records of the plain client's calls, want 2: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if !r.Executed || r.Stage != warden.StageExecute || r.Identity.Principal != "plain" {
			t.Errorf("audit of the plain client's call: %+v", r)
		}
	}
}

// A sampling request the policy does not allow never reaches the client: the
// upstream gets a JSON-RPC error with the policy's text (the fixture fails its call
// with it), and the audit log records the request refused at the permission stage.
// Rules mode without a rule for sampling:<server> (the call itself allowed), a
// condition that denies it with a text for the model, and a role that does not
// include it.
func TestAskSamplingRefused(t *testing.T) {
	for _, tc := range []struct {
		name, policy, identities string
		text, ruleID             string
	}{{
		name:   "no rule",
		policy: "version: 1\nmode: rules\nrules:\n  allow:\n    mcp__conf__test_sampling: ['*']\n",
		text:   "[permission denied: no matching rule, default deny]", ruleID: "default",
	}, {
		name: "condition",
		policy: `version: 1
mode: allow_all
conditions:
  - id: no-sampling
    when: 'tool == "sampling:conf"'
    effect: deny
    tell_llm: "This server may not ask for sampling."
`,
		text: "This server may not ask for sampling.", ruleID: "no-sampling",
	}, {
		name:       "role",
		policy:     "version: 1\nroles:\n  agent: [mcp__conf__test_sampling]\nactive_role: agent\n",
		identities: strings.Replace(askIdentities, "    token_env: GW_WRITER_TOKEN\n", "    token_env: GW_WRITER_TOKEN\n    role: agent\n", 1),
		text:       "[permission denied: Tool 'sampling:conf' is not in the 'agent' role allowlist.]", ruleID: "agent.allowlist.miss",
	}} {
		for _, protocol := range askProtocols {
			t.Run(tc.name+" at "+cmp.Or(protocol, "newest"), func(t *testing.T) {
				if tc.identities == "" {
					tc.identities = askIdentities
				}
				mcptest.PeersOnPATH(t, "./internal/conformanceserver")
				e := gwStart(t, gwSetup{policy: tc.policy, servers: askServersAt(protocol), transport: askTransport, identities: tc.identities})
				s := &gwSampler{reply: "never sent"}
				cs := e.connect(t, gwWriterToken, s.options())
				gwWant(t, gwCall(t, cs, "mcp__conf__test_sampling", map[string]any{"prompt": "p"}), true, askRefusedTextAt(protocol, tc.text))
				if got := s.asked(); len(got) != 0 {
					t.Errorf("the client was asked although the policy refused: %+v", got)
				}
				ask := e.lastCall(t, "sampling:conf", "sampler")
				if ask.Executed || ask.Status != warden.StatusRefused || ask.Stage != warden.StagePermission || ask.Effect != "deny" ||
					ask.RuleID != tc.ruleID || ask.Identity.Principal != "sampler" || ask.Session != cs.ID() || string(ask.Args) != askSamplingParams("p") {
					t.Errorf("audit of the refused sampling request: %+v", ask)
				}
				call := e.lastCall(t, "mcp__conf__test_sampling", "sampler")
				if !call.Executed || call.Status != warden.StatusFailed || call.Session != cs.ID() {
					t.Errorf("audit of the call whose sampling was refused: %+v", call)
				}
			})
		}
	}
}

// A client that fails to answer a sampling request: the call fails with the
// client's error (on the session-based line the upstream gets it and fails its
// call with it), and the request is recorded as executed and failed.
func TestAskSamplingClientFails(t *testing.T) {
	for _, protocol := range askProtocols {
		t.Run(cmp.Or(protocol, "newest"), func(t *testing.T) { testAskSamplingClientFails(t, protocol) })
	}
}

func testAskSamplingClientFails(t *testing.T, protocol string) {
	mcptest.PeersOnPATH(t, "./internal/conformanceserver")
	e := gwStart(t, gwSetup{policy: askAllowed, servers: askServersAt(protocol), transport: askTransport, identities: askIdentities})
	s := &gwSampler{fail: fmt.Errorf("the user rejected the sampling request")}
	cs := e.connect(t, gwWriterToken, s.options())
	res := gwCall(t, cs, "mcp__conf__test_sampling", map[string]any{"prompt": "p"})
	if text := mcptest.ResultText(res); !res.IsError || !strings.HasPrefix(text, askRefusedTextAt(protocol, "")) || !strings.Contains(text, "the user rejected the sampling request") {
		t.Errorf("result (isError %t) %q, want the call failed with the client's error", res.IsError, text)
	}
	if got := s.asked(); len(got) != 1 {
		t.Errorf("the client was asked %d times, want once", len(got))
	}
	ask := e.lastCall(t, "sampling:conf", "sampler")
	if !ask.Executed || ask.Status != warden.StatusFailed || ask.Stage != warden.StageExecute {
		t.Errorf("audit of the sampling request the client failed: %+v", ask)
	}
}

// gwElicitAnswer answers elicitation by the message: "accept" with content, and
// anything else with decline; it keeps the requests.
type gwElicitAnswer struct {
	content map[string]any
	mu      sync.Mutex
	got     []*mcp.ElicitParams
}

func (a *gwElicitAnswer) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		a.mu.Lock()
		a.got = append(a.got, req.Params)
		a.mu.Unlock()
		if strings.HasPrefix(req.Params.Message, "accept") {
			return &mcp.ElicitResult{Action: "accept", Content: a.content}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
}

func (a *gwElicitAnswer) asked() []*mcp.ElicitParams {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}

// askDirect returns the elicitation requests the fixture makes in each of tools when
// a client calls it directly (not through the gateway), as JSON, answering decline.
func askDirect(t *testing.T, tools map[string]any) map[string]string {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	out := map[string]string{}
	var cur string
	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			out[cur] = jsonOf(t, req.Params)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "-stdio")}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for tool, args := range tools {
		cur = tool
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args}); err != nil {
			t.Fatalf("direct call %s: %v", tool, err)
		}
	}
	return out
}

// Elicitation during a call reaches the caller's handler with the upstream's request
// exactly as the upstream sends it to a client directly (message, form schema with
// defaults and every enum shape); an accept's content reaches the tool, and a decline
// passes through as a decline. Each request is recorded as the caller's.
func TestAskElicitationReachesTheCaller(t *testing.T) {
	e := askStart(t, askAllowed, "")
	a := &gwElicitAnswer{content: map[string]any{"username": "ann", "email": "ann@example.com"}}
	cs := e.connect(t, gwBobToken, a.options())

	gwWant(t, gwCall(t, cs, "mcp__conf__test_elicitation", map[string]any{"message": "accept: who are you?"}), false,
		`User response: action=accept, content={"email":"ann@example.com","username":"ann"}`)
	gwWant(t, gwCall(t, cs, "mcp__conf__test_elicitation", map[string]any{"message": "decline: who are you?"}), false,
		`User response: action=decline, content=null`)
	gwWant(t, gwCall(t, cs, "mcp__conf__test_elicitation_sep1034_defaults", map[string]any{}), false,
		`Elicitation completed: action=decline, content=null`)
	gwWant(t, gwCall(t, cs, "mcp__conf__test_elicitation_sep1330_enums", map[string]any{}), false,
		`Elicitation completed: action=decline, content=null`)

	tools := map[string]any{
		"test_elicitation":                  map[string]any{"message": "accept: who are you?"},
		"test_elicitation_sep1034_defaults": map[string]any{},
		"test_elicitation_sep1330_enums":    map[string]any{},
	}
	direct := askDirect(t, tools)
	asked := a.asked()
	if len(asked) != 4 {
		t.Fatalf("the client was asked %d times, want 4: %+v", len(asked), asked)
	}
	for i, tool := range []string{"test_elicitation", "", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"} {
		got := jsonOf(t, asked[i])
		if tool == "" {
			if !strings.Contains(got, `"message":"decline: who are you?"`) {
				t.Errorf("request %d: %s", i, got)
			}
			continue
		}
		if got != direct[tool] {
			t.Errorf("%s: through the gateway the client was asked\n  %s\ndirectly\n  %s", tool, got, direct[tool])
		}
	}

	recs := e.calls(t, "elicitation:conf", "elicitor")
	if len(recs) != 4 {
		t.Fatalf("%d audit records of elicitation requests, want 4: %+v", len(recs), recs)
	}
	for i, r := range recs {
		if r.Tool != "elicitation:conf" || !r.Executed || r.Status != warden.StatusRan || r.Stage != warden.StageExecute ||
			r.Identity.Principal != "elicitor" || r.Session != cs.ID() || string(r.Args) != jsonOf(t, asked[i]) {
			t.Errorf("audit of elicitation request %d: %+v", i, r)
		}
	}
}

// askLiveChildren counts this process's live (not exited) children that run the
// conformance fixture: the gateway's upstream processes.
func askLiveChildren(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	n := 0
	for _, d := range entries {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		if end < 0 || !strings.HasPrefix(s[strings.IndexByte(s, '(')+1:end], "conformanceser") {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) >= 2 && f[1] == me && f[0] != "Z" && f[0] != "X" {
			n++
		}
	}
	return n
}

// Two callers at once on one server, one whose client samples and one whose client
// does not, within max_connections_per_server: every call completes, each caller gets
// exactly its own routing (only the sampling client is asked, only for its own
// prompts; the other's calls see no sampling capability), and the gateway never has
// more upstream processes than the bound. With a bound of 2 the two callers' calls
// overlap: the sampling client answers its first request only once the other caller
// has had an answer.
func TestAskConcurrentCallersOwnRouting(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts the upstream processes in /proc")
	}
	const rounds = 4
	for _, bound := range []int{1, 2} {
		t.Run(fmt.Sprintf("max_connections_per_server=%d", bound), func(t *testing.T) {
			mcptest.PeersOnPATH(t, "./internal/conformanceserver")
			e := gwStart(t, gwSetup{policy: askAllowed, servers: askServers, identities: askIdentities,
				transport: askTransport + fmt.Sprintf("  max_connections_per_server: %d\n", bound)})
			var (
				mu       sync.Mutex
				maxLive  int
				plainGot = make(chan struct{})
				once     sync.Once
			)
			noteLive := func() {
				n := askLiveChildren(t)
				mu.Lock()
				maxLive = max(maxLive, n)
				mu.Unlock()
			}
			s := &gwSampler{reply: "sampled"}
			s.hold = func() {
				noteLive()
				if bound > 1 {
					once.Do(func() {
						select {
						case <-plainGot:
						case <-time.After(time.Minute):
							t.Error("the plain caller got no answer while a sampling call was in flight")
						}
					})
				}
			}
			sampler := e.connect(t, gwWriterToken, s.options())
			plain := e.connect(t, gwReaderToken, nil)

			var wg sync.WaitGroup
			results := map[string][]string{}
			run := func(who string, cs *mcp.ClientSession) {
				defer wg.Done()
				for i := range rounds {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__conf__test_sampling", Arguments: map[string]any{"prompt": fmt.Sprintf("%s %d", who, i)}})
					cancel()
					text := fmt.Sprintf("error: %v", err)
					if err == nil {
						text = fmt.Sprintf("isError=%t %s", res.IsError, mcptest.ResultText(res))
					}
					noteLive()
					mu.Lock()
					results[who] = append(results[who], text)
					mu.Unlock()
					if who == "plain" && i == 0 {
						close(plainGot)
					}
				}
			}
			wg.Add(2)
			go run("sampler", sampler)
			go run("plain", plain)
			wg.Wait()

			for i := range rounds {
				if got, want := results["sampler"][i], fmt.Sprintf("isError=false LLM response: sampled to sampler %d", i); got != want {
					t.Errorf("sampler call %d: %q, want %q", i, got, want)
				}
				if got, want := results["plain"][i], "isError=true "+askNoSampling; got != want {
					t.Errorf("plain call %d: %q, want %q", i, got, want)
				}
			}
			var prompts []string
			for _, p := range s.asked() {
				prompts = append(prompts, promptOf(p))
			}
			if want := []string{"sampler 0", "sampler 1", "sampler 2", "sampler 3"}; !slices.Equal(prompts, want) {
				t.Errorf("the sampling client was asked for %q, want %q", prompts, want)
			}
			if maxLive > bound || maxLive == 0 {
				t.Errorf("up to %d upstream processes were live, bound %d", maxLive, bound)
			}
			if recs := e.calls(t, "sampling:conf", ""); len(recs) != rounds {
				t.Errorf("%d sampling requests recorded, want %d", len(recs), rounds)
			} else {
				for _, r := range recs {
					if r.Identity.Principal != "sampler" || r.Session != sampler.ID() || r.Status != warden.StatusRan {
						t.Errorf("audit of a sampling request: %+v", r)
					}
				}
			}
			for who, cs := range map[string]*mcp.ClientSession{"sampler": sampler, "plain": plain} {
				recs := e.calls(t, "mcp__conf__test_sampling", who)
				if len(recs) != rounds {
					t.Errorf("%d calls of %s recorded, want %d", len(recs), who, rounds)
				}
				for _, r := range recs {
					if !r.Executed || r.Session != cs.ID() {
						t.Errorf("audit of a call of %s: %+v", who, r)
					}
				}
			}
		})
	}
}

// Every sampling and elicitation request goes to the caller on the stream of the
// caller's own call, not only the first one on a connection: a client without the
// standalone SSE stream (which it need not open) is asked on every call, and so is a
// client with it. Each call's request is the caller's of that call.
func TestAskEveryCallOnItsOwnStream(t *testing.T) {
	e := askStart(t, askAllowed, "")
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("standalone_sse=%t", sse), func(t *testing.T) {
			s := &gwSampler{reply: "sampled"}
			a := &gwElicitAnswer{content: map[string]any{"username": "ann", "email": "ann@example.com"}}
			opts := s.options()
			opts.ElicitationHandler = a.options().ElicitationHandler
			cs := e.askConnect(t, gwWriterToken, opts, sse)
			for i := range 3 {
				prompt := fmt.Sprintf("prompt %d", i)
				gwWant(t, gwCall(t, cs, "mcp__conf__test_sampling", map[string]any{"prompt": prompt}), false, "LLM response: sampled to "+prompt)
				gwWant(t, gwCall(t, cs, "mcp__conf__test_elicitation", map[string]any{"message": fmt.Sprintf("accept %d", i)}), false,
					`User response: action=accept, content={"email":"ann@example.com","username":"ann"}`)
			}
			if n, m := len(s.asked()), len(a.asked()); n != 3 || m != 3 {
				t.Errorf("the client was asked for sampling %d times and elicitation %d times, want 3 and 3", n, m)
			}
		})
	}
}

// A call approved by an operator after its session was halted does not run, so the
// sampling it would make never reaches the client: the caller reads the halt's text,
// and nothing is recorded as asked. (A sampling request arriving in a halted session
// by any other way is refused at the gate: askClient checks the halt too.)
func TestAskSamplingInAHaltedSession(t *testing.T) {
	const policy = `version: 1
mode: allow_all
conditions:
  - id: confirm-sampling-tool
    when: 'tool == "mcp__conf__test_sampling"'
    effect: escalate
  - id: stop
    when: 'tool == "mcp__conf__test_simple_text"'
    effect: halt
    reason: test:stop
    tell_llm: "This session is stopped."
`
	e := askStart(t, policy, "approvals:\n  wait: 2m\n")
	s := &gwSampler{reply: "sampled"}
	cs := e.connect(t, gwWriterToken, s.options())
	created, stop := e.asked.watch()
	defer stop()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__conf__test_sampling", Arguments: map[string]any{"prompt": "p"}})
		if err != nil {
			t.Error(err)
			res = &mcp.CallToolResult{}
		}
		done <- res
	}()
	p := <-created
	gwWant(t, gwCall(t, cs, "mcp__conf__test_simple_text", map[string]any{}), true, "This session is stopped.")
	if _, err := e.st.Decide(context.Background(), p.ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if got := s.asked(); len(got) != 0 {
		t.Errorf("the halted session's client was asked for sampling: %+v", got)
	}
	if text := mcptest.ResultText(res); !res.IsError || text != "This session is stopped." {
		t.Errorf("the call approved after the halt: %q", text)
	}
	if recs := e.calls(t, "sampling:conf", ""); len(recs) != 0 {
		t.Errorf("sampling recorded for a call that must not run: %+v", recs)
	}
	for _, r := range e.calls(t, "mcp__conf__test_sampling", "") {
		if r.Executed {
			t.Errorf("the call approved after the halt ran: %+v", r)
		}
	}
}

// Protocol 2026-07-28 has no server-to-client requests: a call from the stateless
// front goes out on a connection that declares neither sampling nor elicitation, even
// when the client declares both, so the upstream answers as it does for a client
// without them, and nothing is asked or recorded as asked.
func TestAskNoneOnTheStatelessFront(t *testing.T) {
	e := askStart(t, askAllowed, "")
	s := &gwSampler{reply: "sampled"}
	opts := s.options()
	opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	cs := connect2026(t, e.url, gwWriterToken, e.tr, opts)
	gwWant(t, call2026(t, cs, &mcp.CallToolParams{Name: "mcp__conf__test_sampling", Arguments: map[string]any{"prompt": "p"}}), true, askNoSampling)
	gwWant(t, call2026(t, cs, &mcp.CallToolParams{Name: "mcp__conf__test_elicitation", Arguments: map[string]any{"message": "m"}}), true, askNoElicitation)
	if got := s.asked(); len(got) != 0 {
		t.Errorf("the 2026-07-28 client was asked for sampling: %+v", got)
	}
	if recs := e.calls(t, "sampling:*", ""); len(recs) != 0 {
		t.Errorf("sampling recorded for a 2026-07-28 call: %+v", recs)
	}
}
