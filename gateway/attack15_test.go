package gateway_test

// Hostile review 15: bypasses and fail-open paths of the catalog, the upstream's
// requests during a call and the stateless front, each proven against the real
// gateway, real upstream processes and go-sdk clients.

//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 on, but the session-based versions the gateway speaks still carry it, and these tests route it.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

// a15RolesPolicy lets role full call the fixture's sampling and elicitation tools and
// test_simple_text, and the fixture ask full's client for sampling and elicitation.
const a15RolesPolicy = `version: 1
roles:
  full: [mcp__conf__test_sampling, mcp__conf__test_elicitation, "sampling:conf", "elicitation:conf", mcp__conf__test_simple_text]
  narrow: [mcp__conf__test_simple_text]
active_role: full
`

// a15AsksPolicy is a15RolesPolicy escalating every sampling request of the fixture
// and halting on test_simple_text.
const a15AsksPolicy = a15RolesPolicy + `conditions:
  - id: ask-sampling
    when: 'tool == "sampling:conf"'
    effect: escalate
    rationale: sampling needs a person
  - id: halt-simple
    when: 'tool == "mcp__conf__test_simple_text"'
    effect: halt
    reason: security:test
    rationale: the halting tool was called
    tell_llm: "` + a15HaltText + `"
`

const a15HaltText = "The halting tool was called. This session is stopped."

// a15Sampler answers sampling requests and counts them.
type a15Sampler struct{ n atomic.Int32 }

func (s *a15Sampler) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		s.n.Add(1)
		return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "sampled"}}, nil
	}}
}

// A call waiting for an operator when its session halts does not run once the
// operator approves it: the halt refuses every call of the session that has not run.
func TestAttack15ApprovedAfterHaltDoesNotRun(t *testing.T) {
	e := gwStart(t, gwSetup{extra: "approvals:\n  wait: 2m\n"})
	e.writeNotes(t, "drop")
	w := e.connect(t, gwWriterToken, nil)
	created, stop := e.asked.watch()
	defer stop()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		done <- mcptest.CallTool(t, w, 2*time.Minute, "mcp__notes__delete_note", map[string]any{"name": "drop"})
	}()
	p := <-created
	if p.Tool != "mcp__notes__delete_note" {
		t.Fatalf("asked about %s", p.Tool)
	}
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "n", "text": "my password"}), true, gwHaltText)
	if _, err := e.st.Decide(context.Background(), p.ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	gwWant(t, <-done, true, gwHaltText)
	for _, r := range e.calls(t, "mcp__notes__delete_note", "writer-agent") {
		if r.Executed {
			t.Errorf("the delete ran in the halted session: %+v", r)
		}
	}
	if rec := e.lastCall(t, "mcp__notes__delete_note", "writer-agent"); rec.Status != warden.StatusRefused || rec.Stage != warden.StageHuman || !strings.Contains(rec.Rationale, "halted") {
		t.Errorf("audit of the refused delete (declined: the session halted while it waited): %+v", rec)
	}
	other := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, other, "mcp__notes__read_note", map[string]any{"name": "drop"}), false, "x")
}

// An upstream's sampling request that waits for an operator when the session halts
// is refused once approved: it never reaches the client.
func TestAttack15SamplingApprovedAfterHaltIsRefused(t *testing.T) {
	e := catStart(t, gwSetup{policy: a15AsksPolicy, extra: "approvals:\n  wait: 2m\n"})
	sampler := &a15Sampler{}
	cs := e.connect(t, gwWriterToken, sampler.options())
	created, stop := e.asked.watch()
	defer stop()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		done <- mcptest.CallTool(t, cs, 2*time.Minute, "mcp__conf__test_sampling", map[string]any{"prompt": "hello"})
	}()
	p := <-created
	if p.Tool != "sampling:conf" {
		t.Fatalf("asked about %s", p.Tool)
	}
	gwWant(t, gwCall(t, cs, "mcp__conf__test_simple_text", map[string]any{}), true, a15HaltText)
	if _, err := e.st.Decide(context.Background(), p.ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; !res.IsError {
		t.Errorf("the sampling tool succeeded in a halted session: %s", mcptest.ResultText(res))
	}
	if n := sampler.n.Load(); n != 0 {
		t.Errorf("the client was asked to sample %d times after its session halted", n)
	}
	if rec := e.lastCall(t, "sampling:conf", "full-agent"); rec.Executed || rec.Status != warden.StatusRefused || rec.Stage != warden.StageHuman || !strings.Contains(rec.Rationale, "halted") {
		t.Errorf("audit of the refused sampling request (declined: the session halted while it waited): %+v", rec)
	}
}

// A 2026-07-28 client gets no server-to-client requests, so the upstream connection
// its call goes out on declares neither sampling nor elicitation: the upstream is
// told the client cannot answer, and no request is judged, audited as run and then
// dropped.
func TestAttack15StatelessCallDeclaresNoAsks(t *testing.T) {
	e := catStart(t, gwSetup{policy: a15RolesPolicy})
	sampler := &a15Sampler{}
	opts := sampler.options()
	opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "u", "email": "e"}}, nil
	}
	cs := connect2026(t, e.url, gwWriterToken, e.tr, opts)
	for tool, want := range map[string]string{
		"mcp__conf__test_sampling":    "the client does not support sampling",
		"mcp__conf__test_elicitation": "the client does not support elicitation",
	} {
		res := call2026(t, cs, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"prompt": "p", "message": "m"}})
		if got := mcptest.ResultText(res); !res.IsError || !strings.HasSuffix(got, "returned an error: "+want) {
			t.Errorf("%s at 2026-07-28: %q, want the fixture's own %q", tool, got, want)
		}
	}
	for _, target := range []string{"sampling:conf", "elicitation:conf"} {
		if recs := e.calls(t, target, ""); len(recs) != 0 {
			t.Errorf("%s requests judged for a 2026-07-28 client: %+v", target, recs)
		}
	}
	// A session-based client of the same identity is still asked.
	old := e.connect(t, gwWriterToken, sampler.options())
	gwWant(t, gwCall(t, old, "mcp__conf__test_sampling", map[string]any{"prompt": "p"}), false, "LLM response: sampled")
	catWantRecord(t, e, "sampling:conf", "full-agent", warden.StatusRan, "", true)
}

// A halt on the stateless front, which has no sessions, halts the principal: the
// principal's session-based connections (opened before or after the halt) are
// refused too, so switching protocol versions does not lift it. A halt in a
// session stays with that session.
func TestAttack15StatelessHaltHoldsAcrossProtocols(t *testing.T) {
	e := gwStart(t, gwSetup{})
	e.writeNotes(t, "keep")
	before := e.connect(t, gwWriterToken, nil)
	s2026 := connect2026(t, e.url, gwWriterToken, e.tr, nil)
	gwWant(t, call2026(t, s2026, &mcp.CallToolParams{Name: "mcp__notes__write_note", Arguments: map[string]any{"name": "n", "text": "my password"}}), true, gwHaltText)
	gwWant(t, call2026(t, s2026, &mcp.CallToolParams{Name: "mcp__notes__read_note", Arguments: map[string]any{"name": "keep"}}), true, gwHaltText)
	after := e.connect(t, gwWriterToken, nil)
	for what, cs := range map[string]*mcp.ClientSession{"a session opened before the halt": before, "a session opened after it": after} {
		gwWant(t, gwCall(t, cs, "mcp__notes__read_note", map[string]any{"name": "keep"}), true, gwHaltText)
		if tools := gwTools(t, cs); len(tools) != 0 {
			t.Errorf("%s of the halted principal lists %v", what, tools)
		}
	}
	for _, r := range e.calls(t, "mcp__notes__read_note", "writer-agent") {
		if r.Executed {
			t.Errorf("the halted principal read a note: %+v", r)
		}
	}
	// Another principal is not halted.
	gwWant(t, gwCall(t, e.connect(t, gwBobToken, nil), "mcp__notes__read_note", map[string]any{"name": "keep"}), false, "x")

	// A halt in a session halts that session only.
	bob := e.connect(t, gwBobToken, nil)
	gwWant(t, gwCall(t, bob, "mcp__notes__write_note", map[string]any{"name": "n", "text": "my password"}), true, gwHaltText)
	gwWant(t, gwCall(t, e.connect(t, gwBobToken, nil), "mcp__notes__read_note", map[string]any{"name": "keep"}), false, "x")
	gwWant(t, call2026(t, connect2026(t, e.url, gwBobToken, e.tr, nil), &mcp.CallToolParams{Name: "mcp__notes__read_note", Arguments: map[string]any{"name": "keep"}}), false, "x")
}

// An operator's approval of one tenant's call does not authorize the identical call
// of a principal of the same name in another tenant.
func TestAttack15ApprovalBoundToTenant(t *testing.T) {
	ids := `listen: 127.0.0.1:0
stdio:
  principal: local-user
  role: writer
clients:
  - principal: alice
    tenant: acme
    role: writer
    token_env: GW_WRITER_TOKEN
  - principal: alice
    tenant: globex
    role: writer
    token_env: GW_BOB_TOKEN
`
	e := gwStart(t, gwSetup{identities: ids, extra: "approvals:\n  wait: 300ms\n"})
	acme, globex := e.connect(t, gwWriterToken, nil), e.connect(t, gwBobToken, nil)
	gwWant(t, gwCall(t, acme, "mcp__notes__write_note", map[string]any{"name": "a", "text": "x"}), false, `Wrote note "a" (1 bytes).`)
	const tool = "mcp__notes__delete_note"
	res := gwCall(t, acme, tool, map[string]any{"name": "a"})
	p := e.onePending(t, tool, `{"name":"a"}`)
	gwWant(t, res, true, gateway.WaitingText(p.ID, tool))
	if _, err := e.st.Decide(context.Background(), p.ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	res = gwCall(t, globex, tool, map[string]any{"name": "a"})
	if !res.IsError || !strings.Contains(mcptest.ResultText(res), "waiting for an operator") {
		t.Errorf("globex's alice ran acme's approved call: %s", mcptest.ResultText(res))
	}
	for _, r := range e.calls(t, tool, "alice") {
		if r.Executed && r.Identity.Tenant != "acme" {
			t.Errorf("a call of tenant %q ran on acme's approval: %+v", r.Identity.Tenant, r)
		}
	}
	// acme's own retry runs on it.
	gwWant(t, gwCall(t, acme, tool, map[string]any{"name": "a"}), false, `Deleted note "a".`)
}

// a15FilesPolicy lets role full read the fixture's files except those under
// test://files/secret/.
const a15FilesPolicy = `version: 1
roles:
  full: ["resource:conf"]
  narrow: [mcp__conf__test_simple_text]
active_role: full
rules:
  deny:  {"resource:conf": ["test://files/secret/*"]}
  allow: {"resource:conf": ["*"]}
`

// A URI pattern of the policy judges the URI as written, and an upstream resolving
// a template URI like a file path (percent-decoding it, resolving "." and "..")
// reads what another spelling of the same URI names: a template-routed read whose
// URI has dot segments or percent-encoded unreserved characters, which no URI in
// normal form (RFC 3986, section 6.2.2) has, is refused (audited) before it reaches
// the upstream.
func TestAttack15ResourceURISpellings(t *testing.T) {
	e := catStart(t, gwSetup{policy: a15FilesPolicy, servers: "servers:\n  conf:\n    command: conformanceserver\n    args: [-stdio, -test-files]\n"})
	cs := e.connect(t, gwWriterToken, nil)
	if res, err := catRead(t, cs, "test://files/public/readme.txt"); err != nil || res.Contents[0].Text != "This file is public." {
		t.Fatalf("read of the public file: %+v, %v", res, err)
	}
	catWantNotFound(t, cs, "test://files/secret/key.txt")
	for _, uri := range []string{
		"test://files/public/../secret/key.txt",
		"test://files/public/%2e%2e/secret/key.txt",
		"test://files/public/..%2Fsecret/key.txt",
		"test://files/./secret/key.txt",
		"test://files/%73ecret/key.txt",
	} {
		res, err := catRead(t, cs, uri)
		if err == nil {
			t.Errorf("read %s: %q, want a refusal", uri, res.Contents[0].Text)
			continue
		}
		if werr := catRPCError(t, "read "+uri, err); werr.Code != gateway.CodeRefused || !strings.Contains(werr.Message, "not in normal form") {
			t.Errorf("read %s: error %d %q, want the normal-form refusal", uri, werr.Code, werr.Message)
		}
		if rec := catWantRecord(t, e, catReader, "full-agent", warden.StatusRefused, warden.StageValidation, false); string(rec.Args) != fmt.Sprintf(`{"uri":%q}`, uri) {
			t.Errorf("audit of the refused read of %s: %+v", uri, rec)
		}
	}
	// A reserved character percent-encoded is data, not another spelling: the read
	// reaches the upstream (which has no such file).
	if _, err := catRead(t, cs, "test://files/public/read%2Fme.txt"); err == nil {
		t.Error("read of a file the fixture does not have succeeded")
	}
	catWantRecord(t, e, catReader, "full-agent", warden.StatusFailed, warden.StageExecute, true)
}

// A URI of a server's template whose read the policy denies is not watched either:
// resources/subscribe answers it like a URI nobody serves, and the upstream is not
// asked; nor is a template URI that is not in normal form.
func TestAttack15SubscribeDeniedTemplateURI(t *testing.T) {
	mcptest.BuildBinary(t, "./internal/conformanceserver")
	e := gwStart(t, gwSetup{
		policy: subPolicy + `conditions:
  - id: no-seven
    when: 'tool == "resource:conf" && string(args.uri) == "test://template/7/data"'
    effect: deny
    rationale: the data of id 7 is not for agents
`,
		transport:  "transport:\n  allow_commands: true\n  commands: [conformanceserver]\n  max_connections_per_server: 1\n",
		servers:    "servers:\n  conf:\n    command: conformanceserver\n    args: [-stdio, -test-tools]\n",
		identities: subIdentities,
	})
	updates := make(subUpdates, 10)
	a := e.connect(t, gwReaderToken, updates.options())
	w := e.connect(t, gwWriterToken, nil)
	const denied = "test://template/7/data"
	catWantNotFound(t, a, denied)
	subWantNotFound(t, "reader subscribes to "+denied, subSubscribe(t, a, denied), denied)
	if err := subSubscribe(t, a, "test://template/%37/data"); err == nil {
		t.Error("a subscription to another spelling of the denied URI was made")
	}
	subTrigger(t, w, denied, 0)
	updates.none(t, "reader", a)
	// The other ids are watched as before.
	if err := subSubscribe(t, a, "test://template/8/data"); err != nil {
		t.Fatalf("subscribe to test://template/8/data: %v", err)
	}
	subTrigger(t, w, "test://template/8/data", 1)
	updates.next(t, "reader", "test://template/8/data")
}
