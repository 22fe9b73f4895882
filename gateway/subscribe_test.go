package gateway_test

// completion/complete and resource subscriptions through the gateway, against the
// conformance fixture (internal/conformanceserver) as a real stdio upstream run with
// -test-tools: its tool warden_test_update_resource makes it send
// notifications/resources/updated and says how many of its sessions are subscribed
// (the gateway's connection is its one session), and it writes every subscribe and
// unsubscribe it gets to stderr, which the gateway logs.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

// The reader role (reader-agent, bob, and the stdio front) sees the prompt with
// arguments and reads the fixture's resources; the writer role sees neither. Both
// may call the update tool.
const subPolicy = `version: 1
roles:
  reader: [mcp__conf__warden_test_update_resource, "prompt:mcp__conf__test_prompt_with_arguments", "resource:conf"]
  writer: [mcp__conf__warden_test_update_resource]
active_role: reader
`

const subIdentities = `listen: 127.0.0.1:0
stdio:
  principal: local-user
  role: reader
clients:
  - principal: reader-agent
    role: reader
    token_env: GW_READER_TOKEN
  - principal: writer-agent
    role: writer
    token_env: GW_WRITER_TOKEN
  - principal: bob
    role: reader
    token_env: GW_BOB_TOKEN
`

const (
	subWatched  = "test://watched-resource"
	subStatic   = "test://static-text"
	subTemplate = "test://template/{id}/data"
	subPrompt   = "mcp__conf__test_prompt_with_arguments"
	subUpdate   = "mcp__conf__warden_test_update_resource"
)

// subStart starts a gateway whose one upstream is the fixture with -test-tools, over
// at most one connection (so the update tool runs in the process that holds the
// gateway's subscriptions).
func subStart(t *testing.T) *gwEnv {
	t.Helper()
	return subStartWith(t, subPolicy, "-test-tools")
}

// subStartWith is subStart with another policy and the fixture's flags.
func subStartWith(t *testing.T, policy string, flags ...string) *gwEnv {
	t.Helper()
	mcptest.BuildBinary(t, "./internal/conformanceserver") // beside the peers gwStart puts on PATH
	args, _ := json.Marshal(append([]string{"-stdio"}, flags...))
	return gwStart(t, gwSetup{
		policy: policy,
		transport: `transport:
  allow_commands: true
  commands: [conformanceserver]
  max_connections_per_server: 1
`,
		servers: `servers:
  conf:
    command: conformanceserver
    args: ` + string(args) + `
`,
		identities: subIdentities,
	})
}

// subDirect connects to the fixture itself (with -test-tools), as the gateway does.
func subDirect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test-direct", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "-stdio", "-test-tools")}, nil)
	if err != nil {
		t.Fatalf("connect to the fixture: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func subComplete(t *testing.T, cs *mcp.ClientSession, ref *mcp.CompleteReference, arg, value string) (*mcp.CompleteResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
}

// subWireError returns err's JSON-RPC error, failing t when it has none.
func subWireError(t *testing.T, what string, err error) *jsonrpc.Error {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("%s: error %v, want a JSON-RPC error", what, err)
	}
	return werr
}

// subWantNotFound checks that err is exactly the SDK's resource-not-found error of
// uri: code -32602 (the SDK follows SEP-2164; before 1.7.0 it was -32002), message
// "Resource not found", data {"uri": uri}.
func subWantNotFound(t *testing.T, what string, err error, uri string) {
	t.Helper()
	got := subWireError(t, what, err)
	want := mcp.ResourceNotFoundError(uri).(*jsonrpc.Error)
	if got.Code != jsonrpc.CodeInvalidParams || got.Message != "Resource not found" || got.Code != want.Code || got.Message != want.Message || string(got.Data) != string(want.Data) {
		t.Errorf("%s: error %d %q %s, want %d %q %s", what, got.Code, got.Message, got.Data, want.Code, want.Message, want.Data)
	}
}

func TestGatewayCompletion(t *testing.T) {
	e := subStart(t)
	direct := subDirect(t)
	reader := e.connect(t, gwReaderToken, nil)
	writer := e.connect(t, gwWriterToken, nil)

	// A visible prompt: the fixture's own answer, asked with the upstream name.
	promptRef := &mcp.CompleteReference{Type: "ref/prompt", Name: subPrompt}
	got, err := subComplete(t, reader, promptRef, "arg1", "pa")
	if err != nil {
		t.Fatalf("complete %s through the gateway: %v", subPrompt, err)
	}
	want, err := subComplete(t, direct, &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg1", "pa")
	if err != nil {
		t.Fatalf("complete on the fixture: %v", err)
	}
	if !slices.Equal(want.Completion.Values, []string{"paris", "park", "party"}) {
		t.Fatalf("the fixture completes arg1=pa with %q", want.Completion.Values)
	}
	if !reflect.DeepEqual(got.Completion, want.Completion) {
		t.Errorf("through the gateway: %+v\nthe fixture: %+v", got.Completion, want.Completion)
	}

	// A prompt hidden from the writer role answers exactly like one nobody serves.
	_, hiddenErr := subComplete(t, writer, promptRef, "arg1", "pa")
	unknown := subPrompt[:len(subPrompt)-1] + "Z"
	_, unknownErr := subComplete(t, writer, &mcp.CompleteReference{Type: "ref/prompt", Name: unknown}, "arg1", "pa")
	hw, uw := subWireError(t, "hidden prompt", hiddenErr), subWireError(t, "unknown prompt", unknownErr)
	if hw.Code != jsonrpc.CodeInvalidParams || hw.Message != fmt.Sprintf("unknown prompt %q", subPrompt) || len(hw.Data) != 0 {
		t.Errorf("hidden prompt: error %d %q %s, want %d %q", hw.Code, hw.Message, hw.Data, jsonrpc.CodeInvalidParams, fmt.Sprintf("unknown prompt %q", subPrompt))
	}
	if uw.Code != hw.Code || strings.ReplaceAll(uw.Message, unknown, subPrompt) != hw.Message || string(uw.Data) != string(hw.Data) {
		t.Errorf("hidden prompt: error %+v; unknown prompt: error %+v", hw, uw)
	}
	// ... and like prompts/get of the hidden prompt.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, getErr := writer.GetPrompt(ctx, &mcp.GetPromptParams{Name: subPrompt, Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
	if gw := subWireError(t, "prompts/get of the hidden prompt", getErr); gw.Code != hw.Code || gw.Message != hw.Message {
		t.Errorf("prompts/get of the hidden prompt: %+v; completion: %+v", gw, hw)
	}

	// A resource template of a server whose resources the role may read.
	tmplRef := &mcp.CompleteReference{Type: "ref/resource", URI: subTemplate}
	got, err = subComplete(t, reader, tmplRef, "id", "1")
	if err != nil {
		t.Fatalf("complete %s through the gateway: %v", subTemplate, err)
	}
	want, err = subComplete(t, direct, tmplRef, "id", "1")
	if err != nil {
		t.Fatalf("complete %s on the fixture: %v", subTemplate, err)
	}
	if !slices.Equal(want.Completion.Values, []string{"1", "12", "123"}) {
		t.Fatalf("the fixture completes id=1 with %q", want.Completion.Values)
	}
	if !reflect.DeepEqual(got.Completion, want.Completion) {
		t.Errorf("template through the gateway: %+v\nthe fixture: %+v", got.Completion, want.Completion)
	}
	// One it may not read: resource not found, as for a template nobody serves.
	_, err = subComplete(t, writer, tmplRef, "id", "1")
	subWantNotFound(t, "template hidden from the writer", err, subTemplate)
	_, err = subComplete(t, reader, &mcp.CompleteReference{Type: "ref/resource", URI: "test://nowhere/{id}"}, "id", "1")
	subWantNotFound(t, "template nobody serves", err, "test://nowhere/{id}")

	// An unknown reference type (which the SDK's client will not send) is invalid.
	resp := subRawStdio(t, e, "completion/complete", `{"ref":{"type":"ref/tool","name":"x"},"argument":{"name":"a","value":""}}`)
	if resp.Error == nil {
		t.Fatalf("ref/tool: result %s, want an error", resp.Result)
	}
	if rw := subWireError(t, "ref/tool", resp.Error); rw.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("ref/tool: error %d %q, want code %d", rw.Code, rw.Message, jsonrpc.CodeInvalidParams)
	}
}

// subRawStdio serves the stdio front over in-memory transports, initializes a
// session with raw JSON-RPC messages, sends one request of method with params, and
// returns its response.
func subRawStdio(t *testing.T, e *gwEnv, method, params string) *jsonrpc.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clientT, serverT := mcp.NewInMemoryTransports()
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.gw.ServeStdio(sctx, serverT) }()
	defer func() {
		stop()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("ServeStdio did not return")
		}
	}()
	conn, err := clientT.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id := func(n float64) jsonrpc.ID {
		t.Helper()
		id, err := jsonrpc.MakeID(n)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	send := func(id jsonrpc.ID, method, params string) {
		t.Helper()
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}); err != nil {
			t.Fatalf("write %s: %v", method, err)
		}
	}
	answer := func(id jsonrpc.ID) *jsonrpc.Response {
		t.Helper()
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if r, ok := msg.(*jsonrpc.Response); ok && r.ID == id {
				return r
			}
		}
	}
	send(id(1), "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	if r := answer(id(1)); r.Error != nil {
		t.Fatalf("initialize: %v", r.Error)
	}
	send(jsonrpc.ID{}, "notifications/initialized", `{}`)
	send(id(2), method, params)
	return answer(id(2))
}

// subUpdates collects a session's notifications/resources/updated.
type subUpdates chan string

func (u subUpdates) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		u <- req.Params.URI
	}}
}

// next waits (bounded) for the next update and checks its URI.
func (u subUpdates) next(t *testing.T, who, uri string) {
	t.Helper()
	select {
	case got := <-u:
		if got != uri {
			t.Fatalf("%s got an update of %s, want %s", who, got, uri)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s got no update of %s", who, uri)
	}
}

// none checks, after a ping round trip on cs, that no update is waiting.
func (u subUpdates) none(t *testing.T, who string, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("ping %s: %v", who, err)
	}
	select {
	case got := <-u:
		t.Fatalf("%s got an update of %s, want none", who, got)
	default:
	}
}

// subTrigger has the fixture announce an update of uri (through the gateway, on its
// one connection) and checks how many of its sessions (0 or 1: the gateway's) were
// subscribed.
func subTrigger(t *testing.T, cs *mcp.ClientSession, uri string, subscribed int) {
	t.Helper()
	gwWant(t, gwCall(t, cs, subUpdate, map[string]any{"uri": uri}), false, fmt.Sprintf("updated %s: %d subscribed session(s)", uri, subscribed))
}

func subSubscribe(t *testing.T, cs *mcp.ClientSession, uri string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
}

func subUnsubscribe(t *testing.T, cs *mcp.ClientSession, uri string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("unsubscribe %s: %v", uri, err)
	}
}

// The fixture's stderr lines, as the gateway logs them.
func subLogged(verb, uri string) []string {
	return []string{"upstream stderr", "conformanceserver: " + verb + " " + uri}
}

func TestGatewaySubscriptions(t *testing.T) {
	e := subStart(t)
	aUpdates, bUpdates := make(subUpdates, 10), make(subUpdates, 10)
	a := e.connect(t, gwReaderToken, aUpdates.options())
	b := e.connect(t, gwBobToken, bUpdates.options())
	// w declares no roots: its calls share the one connection (max 1) that holds the
	// subscriptions, which a call of another client class would close.
	w := e.connect(t, gwWriterToken, noRoots())

	// A watches one resource, B another: each gets the updates of its own only.
	if err := subSubscribe(t, a, subWatched); err != nil {
		t.Fatalf("A subscribes to %s: %v", subWatched, err)
	}
	if err := subSubscribe(t, b, subStatic); err != nil {
		t.Fatalf("B subscribes to %s: %v", subStatic, err)
	}
	subTrigger(t, w, subWatched, 1)
	aUpdates.next(t, "A", subWatched)
	bUpdates.none(t, "B", b)
	e.log.WaitCount(t, time.Minute, 1, subLogged("subscribed", subWatched)...)
	subTrigger(t, w, subStatic, 1)
	bUpdates.next(t, "B", subStatic)
	aUpdates.none(t, "A", a)

	// B watches A's resource too: the gateway holds one upstream subscription, which
	// B's unsubscribe leaves to A.
	if err := subSubscribe(t, b, subWatched); err != nil {
		t.Fatalf("B subscribes to %s: %v", subWatched, err)
	}
	if n := e.log.Count(subLogged("subscribed", subWatched)...); n != 1 {
		t.Errorf("the upstream got %d subscriptions to %s, want 1", n, subWatched)
	}
	subTrigger(t, w, subWatched, 1)
	aUpdates.next(t, "A", subWatched)
	bUpdates.next(t, "B", subWatched)
	subUnsubscribe(t, b, subWatched)
	subTrigger(t, w, subWatched, 1)
	aUpdates.next(t, "A", subWatched)
	bUpdates.none(t, "B", b)

	// A unsubscribes: the upstream subscription ends, and A gets nothing more.
	subUnsubscribe(t, a, subWatched)
	subTrigger(t, w, subWatched, 0)
	aUpdates.none(t, "A", a)
	e.log.WaitCount(t, time.Minute, 1, subLogged("unsubscribed", subWatched)...)

	// A URI of the server's template may be watched by a role that reads it.
	uri := "test://template/5/data"
	if err := subSubscribe(t, a, uri); err != nil {
		t.Fatalf("A subscribes to %s: %v", uri, err)
	}
	subTrigger(t, w, uri, 1)
	aUpdates.next(t, "A", uri)
	subUnsubscribe(t, a, uri)

	// A role that may not read the server's resources: resource not found, for a
	// listed resource, a template URI and a URI nobody serves alike.
	for _, u := range []string{subWatched, uri, "test://nowhere"} {
		subWantNotFound(t, "writer subscribes to "+u, subSubscribe(t, w, u), u)
	}
	subWantNotFound(t, "reader subscribes to a URI nobody serves", subSubscribe(t, a, "test://nowhere"), "test://nowhere")
	if n := e.log.Count(subLogged("subscribed", subWatched)...); n != 1 {
		t.Errorf("the upstream got %d subscriptions to %s, want 1", n, subWatched)
	}

	// A session that ends without unsubscribing gives its subscriptions up.
	if err := subSubscribe(t, a, subWatched); err != nil {
		t.Fatalf("A subscribes to %s again: %v", subWatched, err)
	}
	subTrigger(t, w, subWatched, 1)
	aUpdates.next(t, "A", subWatched)
	if err := a.Close(); err != nil {
		t.Fatalf("A closes: %v", err)
	}
	e.log.WaitCount(t, time.Minute, 2, subLogged("unsubscribed", subWatched)...)
	subTrigger(t, w, subWatched, 0)
	// B's subscription is still served.
	subTrigger(t, w, subStatic, 1)
	bUpdates.next(t, "B", subStatic)
}
