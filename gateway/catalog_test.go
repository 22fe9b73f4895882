package gateway_test

// Wire tests of the catalog: the conformance fixture's prompts, resources and
// resource template served through the gateway to SDK clients, listed per caller and
// got or read through the pipeline, with the audit log checked for each request.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/store"
)

// The governed names of the fixture's prompts (server "conf", default prefix).
const (
	catSimple    = "mcp__conf__test_simple_prompt"
	catWithArgs  = "mcp__conf__test_prompt_with_arguments"
	catEmbedded  = "mcp__conf__test_prompt_with_embedded_resource"
	catImage     = "mcp__conf__test_prompt_with_image"
	catReader    = "resource:conf"
	catTemplate  = "test://template/{id}/data"
	catHaltText  = "Reading that resource is not allowed. This session is stopped; a person will take over."
	catNotWanted = "The watched resource is not for agents."
	catNoArg     = "That value of arg1 is not allowed. Choose another."
)

// catPolicy: role full gets every prompt and reads the conf server's resources, role
// narrow gets one prompt and one tool and reads nothing. Conditions deny one URI,
// escalate a template URI and a prompt, and halt on another template URI.
const catPolicy = `version: 1
roles:
  full: [prompt:mcp__conf__test_simple_prompt, prompt:mcp__conf__test_prompt_with_arguments,
         prompt:mcp__conf__test_prompt_with_embedded_resource, prompt:mcp__conf__test_prompt_with_image,
         resource:conf, mcp__conf__test_simple_text]
  narrow: [prompt:mcp__conf__test_simple_prompt, mcp__conf__test_simple_text]
active_role: full
conditions:
  - id: no-watched
    when: 'tool == "resource:conf" && string(args.uri) == "test://watched-resource"'
    effect: deny
    rationale: the watched resource is not for agents
    tell_llm: "` + catNotWanted + `"
  - id: confirm-ask
    when: 'tool == "resource:conf" && string(args.uri) == "test://template/ask/data"'
    effect: escalate
    rationale: reading the ask data needs a person's approval
  - id: confirm-embedded
    when: 'tool == "prompt:mcp__conf__test_prompt_with_embedded_resource"'
    effect: escalate
    rationale: the embedded-resource prompt needs a person's approval
  - id: no-forbidden-arg
    when: 'tool == "prompt:mcp__conf__test_prompt_with_arguments" && string(args.arg1) == "forbidden"'
    effect: deny
    rationale: arg1 may not be forbidden
    tell_llm: "` + catNoArg + `"
  - id: stop-halt
    when: 'tool == "resource:conf" && string(args.uri).startsWith("test://template/halt/")'
    effect: halt
    reason: security:exfiltration
    rationale: an agent read the halt data
    tell_llm: "` + catHaltText + `"
`

// The writer token is full-agent's (role full), the reader token narrow-agent's.
const catIdentities = `listen: 127.0.0.1:0
stdio:
  principal: local-user
  role: full
clients:
  - principal: full-agent
    role: full
    token_env: GW_WRITER_TOKEN
  - principal: narrow-agent
    role: narrow
    token_env: GW_READER_TOKEN
`

const catTransport = "transport:\n  allow_commands: true\n  commands: [conformanceserver]\n"

const catServers = "servers:\n  conf:\n    command: conformanceserver\n    args: [-stdio]\n"

// catStart starts a gateway serving the conformance fixture as server "conf"; empty
// fields of s take the catalog defaults above.
func catStart(t *testing.T, s gwSetup) *gwEnv {
	t.Helper()
	mcptest.PeersOnPATH(t, "./internal/conformanceserver")
	if s.policy == "" {
		s.policy = catPolicy
	}
	if s.transport == "" {
		s.transport = catTransport
	}
	if s.servers == "" {
		s.servers = catServers
	}
	if s.identities == "" {
		s.identities = catIdentities
	}
	e := gwStart(t, s)
	if err := e.gw.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	return e
}

// catDirect connects straight to the fixture (no gateway), for the results the
// gateway must pass through unchanged.
func catDirect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "catalog-direct", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "-stdio")}, nil)
	if err != nil {
		t.Fatalf("connect to the fixture: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func catGet(t *testing.T, cs *mcp.ClientSession, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
}

func catRead(t *testing.T, cs *mcp.ClientSession, uri string) (*mcp.ReadResourceResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

// catRPCError returns err as the wire's JSON-RPC error, failing t when it is not one.
func catRPCError(t *testing.T, what string, err error) *jsonrpc.Error {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("%s: error %v (%T), want a JSON-RPC error", what, err, err)
	}
	return werr
}

// catWantRefused checks that err is the gateway's refusal (CodeRefused) with exactly
// text.
func catWantRefused(t *testing.T, what string, err error, text string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want the refusal %q", what, text)
	}
	if werr := catRPCError(t, what, err); werr.Code != gateway.CodeRefused || werr.Message != text {
		t.Errorf("%s: error %d %q, want %d %q", what, werr.Code, werr.Message, gateway.CodeRefused, text)
	}
}

// catWantNotFound checks that reading uri fails exactly as reading a URI nobody
// serves does (same code, message and data, the URI aside): the SDK's
// mcp.ResourceNotFoundError, whose code is -32602 since go-sdk 1.7 (SEP-2164).
func catWantNotFound(t *testing.T, cs *mcp.ClientSession, uri string) {
	t.Helper()
	const nobody = "test://nobody-serves-this"
	_, err := catRead(t, cs, uri)
	if err == nil {
		t.Fatalf("read %s: a result, want resource not found", uri)
	}
	_, werr := catRead(t, cs, nobody)
	got, want := catRPCError(t, "read "+uri, err), catRPCError(t, "read "+nobody, werr)
	wantData := strings.ReplaceAll(string(want.Data), nobody, uri)
	if got.Code != jsonrpc.CodeInvalidParams || got.Code != want.Code || got.Message != want.Message || string(got.Data) != wantData {
		t.Errorf("read %s: error %d %q %s\nread of a URI nobody serves: %d %q %s", uri, got.Code, got.Message, got.Data, want.Code, want.Message, want.Data)
	}
}

// catWantUnknownPrompt checks that getting name fails exactly as getting a prompt
// nobody serves does, with the SDK's own unknown-prompt error.
func catWantUnknownPrompt(t *testing.T, cs *mcp.ClientSession, name string, args map[string]string) {
	t.Helper()
	nonexistent := name[:len(name)-1] + "Z"
	_, err := catGet(t, cs, name, args)
	if err == nil {
		t.Fatalf("get %s: a result, want unknown prompt", name)
	}
	_, nerr := catGet(t, cs, nonexistent, args)
	got, want := catRPCError(t, "get "+name, err), catRPCError(t, "get "+nonexistent, nerr)
	if got.Code != jsonrpc.CodeInvalidParams || got.Code != want.Code || string(got.Data) != string(want.Data) ||
		got.Message != fmt.Sprintf("unknown prompt %q", name) || got.Message != strings.ReplaceAll(want.Message, nonexistent, name) {
		t.Errorf("get %s: error %d %q %s\nget %s: %d %q %s", name, got.Code, got.Message, got.Data, nonexistent, want.Code, want.Message, want.Data)
	}
}

func catPrompts(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Prompt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	m := map[string]*mcp.Prompt{}
	for _, p := range res.Prompts {
		m[p.Name] = p
	}
	return m
}

func catResources(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Resource {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	m := map[string]*mcp.Resource{}
	for _, r := range res.Resources {
		m[r.URI] = r
	}
	return m
}

func catTemplates(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.ResourceTemplate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	m := map[string]*mcp.ResourceTemplate{}
	for _, r := range res.ResourceTemplates {
		m[r.URITemplate] = r
	}
	return m
}

// catKeys returns the sorted keys of m.
func catKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// catSameJSON checks that got and want encode to the same JSON.
func catSameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// catWantRecord checks the newest audit record of tool for principal.
func catWantRecord(t *testing.T, e *gwEnv, tool, principal string, status warden.Status, stage warden.Stage, executed bool) store.CallRecord {
	t.Helper()
	rec := e.lastCall(t, tool, principal)
	if rec.Tool != tool || rec.Status != status || rec.Executed != executed || rec.Identity.Principal != principal ||
		(stage != "" && rec.Stage != stage) {
		t.Errorf("audit of %s for %s: %+v\nwant status %s, stage %q, executed %t", tool, principal, rec, status, stage, executed)
	}
	return rec
}

// 1. The catalog lists are filtered per caller.
func TestCatalogListsPerIdentity(t *testing.T) {
	e := catStart(t, gwSetup{})
	full := e.connect(t, gwWriterToken, nil)
	narrow := e.connect(t, gwReaderToken, nil)
	stdio := e.connectStdio(t, nil)
	direct := catDirect(t)

	wantFull := []string{catSimple, catEmbedded, catWithArgs, catImage}
	slices.Sort(wantFull)
	for who, cs := range map[string]*mcp.ClientSession{"full": full, "stdio": stdio} {
		if got := catKeys(catPrompts(t, cs)); !slices.Equal(got, wantFull) {
			t.Errorf("%s lists prompts %q, want %q", who, got, wantFull)
		}
		// The watched resource is denied by a condition: it is not listed.
		if got, want := catKeys(catResources(t, cs)), []string{"test://input-required/greeting", "test://static-binary", "test://static-text"}; !slices.Equal(got, want) {
			t.Errorf("%s lists resources %q, want %q", who, got, want)
		}
		if got := catKeys(catTemplates(t, cs)); !slices.Equal(got, []string{catTemplate}) {
			t.Errorf("%s lists templates %q, want %q", who, got, catTemplate)
		}
	}
	if got := catKeys(catPrompts(t, narrow)); !slices.Equal(got, []string{catSimple}) {
		t.Errorf("narrow lists prompts %q, want only %s", got, catSimple)
	}
	if got := catResources(t, narrow); len(got) != 0 {
		t.Errorf("narrow (no %s) lists resources %q", catReader, catKeys(got))
	}
	if got := catTemplates(t, narrow); len(got) != 0 {
		t.Errorf("narrow (no %s) lists templates %q", catReader, catKeys(got))
	}
	if got := gwTools(t, narrow); !slices.Equal(got, []string{"mcp__conf__test_simple_text"}) {
		t.Errorf("narrow lists tools %q", got)
	}

	// What is listed is the upstream's definition, under the governed name.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prompts, err := direct.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := catPrompts(t, full)
	for _, p := range prompts.Prompts {
		want := *p
		want.Name = "mcp__conf__" + p.Name
		if !slices.Contains(wantFull, want.Name) {
			continue // not the role's
		}
		catSameJSON(t, "listed prompt "+want.Name, listed[want.Name], &want)
	}
	resources, err := direct.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	shown := catResources(t, full)
	for _, r := range resources.Resources {
		if r.URI != "test://watched-resource" {
			catSameJSON(t, "listed resource "+r.URI, shown[r.URI], r)
		}
	}
	templates, err := direct.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.ResourceTemplates) != 1 {
		t.Fatalf("the fixture lists templates %+v", templates.ResourceTemplates)
	}
	catSameJSON(t, "listed template", catTemplates(t, full)[catTemplate], templates.ResourceTemplates[0])

	// Listing is not a call: nothing is audited.
	if recs := e.calls(t, "*", ""); len(recs) != 0 {
		t.Errorf("listing wrote audit records: %+v", recs)
	}
}

// 2 and 3. prompts/get: an allowed get passes the upstream's result through unchanged
// and is audited; a hidden prompt answers like a nonexistent one; arguments the
// prompt does not take, or missing required ones, are refused before anything runs.
func TestCatalogPromptGet(t *testing.T) {
	e := catStart(t, gwSetup{})
	full := e.connect(t, gwWriterToken, nil)
	narrow := e.connect(t, gwReaderToken, nil)
	direct := catDirect(t)

	for _, c := range []struct {
		name string
		args map[string]string
	}{
		{catImage, nil},
		{catSimple, nil},
		{catWithArgs, map[string]string{"arg1": "alpha", "arg2": "beta"}},
	} {
		got, err := catGet(t, full, c.name, c.args)
		if err != nil {
			t.Fatalf("get %s: %v", c.name, err)
		}
		want, err := catGet(t, direct, strings.TrimPrefix(c.name, "mcp__conf__"), c.args)
		if err != nil {
			t.Fatal(err)
		}
		// The messages are the upstream's; the rest of a result (_meta, resultType)
		// depends on the protocol version each side negotiated.
		catSameJSON(t, "messages of "+c.name, got.Messages, want.Messages)
		if got.Description != want.Description {
			t.Errorf("description of %s's result: %q, want %q", c.name, got.Description, want.Description)
		}
		rec := catWantRecord(t, e, "prompt:"+c.name, "full-agent", warden.StatusRan, "", true)
		if rec.Session != full.ID() {
			t.Errorf("audit of %s: session %q, want %q", c.name, rec.Session, full.ID())
		}
		if c.args != nil {
			if wantArgs, _ := json.Marshal(c.args); string(rec.Args) != string(wantArgs) {
				t.Errorf("audit of %s: args %s, want %s", c.name, rec.Args, wantArgs)
			}
		}
	}
	// The image's bytes reach the client as the upstream sent them.
	img, err := catGet(t, full, catImage, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ic, ok := img.Messages[0].Content.(*mcp.ImageContent); !ok || ic.MIMEType != "image/png" || len(ic.Data) < 8 || string(ic.Data[1:4]) != "PNG" {
		t.Errorf("image prompt's first message: %#v", img.Messages[0].Content)
	}

	// narrow may get only the simple prompt.
	if _, err := catGet(t, narrow, catSimple, nil); err != nil {
		t.Errorf("narrow gets %s: %v", catSimple, err)
	}
	catWantUnknownPrompt(t, narrow, catImage, nil)
	rec := catWantRecord(t, e, "prompt:"+catImage, "narrow-agent", warden.StatusRefused, warden.StageLookup, false)
	if rec.Reason != `prompt hidden from the caller: not allowed to role "narrow"` {
		t.Errorf("reason of the hidden prompt's refusal: %q", rec.Reason)
	}
	// A prompt nobody serves is not a call of anything: no record.
	if recs := e.calls(t, "prompt:"+catImage[:len(catImage)-1]+"Z", ""); len(recs) != 0 {
		t.Errorf("a nonexistent prompt was audited: %+v", recs)
	}

	// A condition denying this get: refused with its text, nothing ran.
	_, err = catGet(t, full, catWithArgs, map[string]string{"arg1": "forbidden", "arg2": "beta"})
	catWantRefused(t, "a denied get", err, catNoArg)
	if rec := catWantRecord(t, e, "prompt:"+catWithArgs, "full-agent", warden.StatusRefused, warden.StagePermission, false); rec.RuleID != "no-forbidden-arg" {
		t.Errorf("audit of the denied get: %+v", rec)
	}
	// The stdio front serves the same prompts.
	stdio := e.connectStdio(t, nil)
	if res, err := catGet(t, stdio, catWithArgs, map[string]string{"arg1": "x", "arg2": "y"}); err != nil || len(res.Messages) != 1 {
		t.Errorf("get over stdio: %+v, %v", res, err)
	}
	catWantRecord(t, e, "prompt:"+catWithArgs, "local-user", warden.StatusRan, "", true)

	// Argument checks: a missing required argument, an argument the prompt does not
	// take.
	for what, args := range map[string]map[string]string{
		"missing arg2": {"arg1": "alpha"},
		"extra arg3":   {"arg1": "alpha", "arg2": "beta", "arg3": "gamma"},
	} {
		before := len(e.calls(t, "prompt:"+catWithArgs, "full-agent"))
		_, err := catGet(t, full, catWithArgs, args)
		if err == nil {
			t.Fatalf("%s: the prompt was got", what)
		}
		if werr := catRPCError(t, what, err); werr.Code != gateway.CodeRefused || werr.Message == "" {
			t.Errorf("%s: error %d %q, want code %d with a text", what, werr.Code, werr.Message, gateway.CodeRefused)
		}
		recs := e.calls(t, "prompt:"+catWithArgs, "full-agent")
		if len(recs) != before+1 {
			t.Fatalf("%s: %d new audit records, want 1", what, len(recs)-before)
		}
		if r := recs[len(recs)-1]; r.Executed || r.Status != warden.StatusRefused || r.Stage != warden.StageValidation {
			t.Errorf("%s: audit %+v, want refused at validation, not executed", what, r)
		}
	}
}

// 4. resources/read: allowed reads pass the contents through unchanged and are
// audited; a URI denied by a condition, and any URI of a server the role may not
// read, answer exactly as a URI nobody serves.
func TestCatalogResourceRead(t *testing.T) {
	e := catStart(t, gwSetup{})
	full := e.connect(t, gwWriterToken, nil)
	narrow := e.connect(t, gwReaderToken, nil)
	direct := catDirect(t)

	for _, uri := range []string{"test://static-text", "test://static-binary", "test://template/42/data"} {
		got, err := catRead(t, full, uri)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		want, err := catRead(t, direct, uri)
		if err != nil {
			t.Fatal(err)
		}
		catSameJSON(t, "contents of "+uri, got.Contents, want.Contents)
		rec := catWantRecord(t, e, catReader, "full-agent", warden.StatusRan, "", true)
		if string(rec.Args) != fmt.Sprintf(`{"uri":%q}`, uri) || rec.Session != full.ID() {
			t.Errorf("audit of reading %s: %+v", uri, rec)
		}
	}
	bin, err := catRead(t, full, "test://static-binary")
	if err != nil {
		t.Fatal(err)
	}
	if c := bin.Contents[0]; c.MIMEType != "image/png" || c.Text != "" || len(c.Blob) < 8 || string(c.Blob[1:4]) != "PNG" {
		t.Errorf("binary contents: %+v", c)
	}

	catWantNotFound(t, full, "test://watched-resource")
	rec := catWantRecord(t, e, catReader, "full-agent", warden.StatusRefused, warden.StagePermission, false)
	if rec.RuleID != "no-watched" || rec.Effect != "deny" || string(rec.Args) != `{"uri":"test://watched-resource"}` {
		t.Errorf("audit of the denied read: %+v", rec)
	}

	for _, uri := range []string{"test://static-text", "test://template/42/data"} {
		catWantNotFound(t, narrow, uri)
		rec := catWantRecord(t, e, catReader, "narrow-agent", warden.StatusRefused, warden.StageLookup, false)
		if rec.Reason != `resources hidden from the caller: not allowed to role "narrow"` || string(rec.Args) != fmt.Sprintf(`{"uri":%q}`, uri) {
			t.Errorf("audit of narrow's read of %s: %+v", uri, rec)
		}
	}
	// A URI nobody serves reaches no server: no record.
	if n := len(e.calls(t, catReader, "narrow-agent")); n != 2 {
		t.Errorf("%d audit records of narrow's reads, want 2", n)
	}
}

// 5. An escalated read runs once an operator approves it, exactly once; a declined
// prompts/get is refused with the decline's text.
func TestCatalogEscalation(t *testing.T) {
	e := catStart(t, gwSetup{extra: "approvals:\n  wait: 2m\n"})
	full := e.connect(t, gwWriterToken, nil)
	direct := catDirect(t)
	const uri = "test://template/ask/data"

	decided := e.decideWhenAsked(catReader, store.Verdict{Approve: true, By: "ops", Note: "fine"})
	got, err := catRead(t, full, uri)
	if err != nil {
		t.Fatalf("approved read: %v", err)
	}
	want, err := catRead(t, direct, uri)
	if err != nil {
		t.Fatal(err)
	}
	catSameJSON(t, "contents of the approved read", got.Contents, want.Contents)
	d := <-decided
	if d.err != nil {
		t.Fatal(d.err)
	}
	if d.p.Tool != catReader || string(d.p.Args) != `{"uri":"test://template/ask/data"}` || d.p.Identity.Principal != "full-agent" ||
		d.p.Session != full.ID() || d.p.Kind != warden.KindEscalate || d.p.State != store.StateApproved {
		t.Errorf("the decision the operator saw: %+v", d.p)
	}
	recs := e.calls(t, catReader, "full-agent")
	ran := 0
	for _, r := range recs {
		if r.Executed {
			ran++
			if r.Status != warden.StatusRan || r.ApprovedBy != "ops" || string(r.Args) != `{"uri":"test://template/ask/data"}` {
				t.Errorf("audit of the approved read: %+v", r)
			}
		}
	}
	if ran != 1 {
		t.Errorf("the approved read ran %d times, want once: %+v", ran, recs)
	}
	if p, err := e.st.GetPending(context.Background(), d.p.ID); err != nil || !p.Consumed {
		t.Errorf("the approval was not consumed: %+v, %v", p, err)
	}

	args := map[string]string{"resourceUri": "test://embedded"}
	decided = e.decideWhenAsked("prompt:"+catEmbedded, store.Verdict{Approve: false, By: "ops", Note: "not this one"})
	_, err = catGet(t, full, catEmbedded, args)
	catWantRefused(t, "declined prompt", err, warden.DeclinedText("not this one"))
	if d := <-decided; d.err != nil || d.p.State != store.StateDeclined || string(d.p.Args) != `{"resourceUri":"test://embedded"}` {
		t.Errorf("the declined decision: %+v, %v", d.p, d.err)
	}
	catWantRecord(t, e, "prompt:"+catEmbedded, "full-agent", warden.StatusRefused, warden.StageHuman, false)
}

// 5. Nobody decides within approvals.wait: the read is refused with the waiting text,
// and the approval given afterwards authorizes the identical retry.
func TestCatalogEscalationTimeout(t *testing.T) {
	e := catStart(t, gwSetup{extra: "approvals:\n  wait: 300ms\n"})
	full := e.connect(t, gwWriterToken, nil)
	const uri = "test://template/ask/data"
	_, err := catRead(t, full, uri)
	p := e.onePending(t, catReader, `{"uri":"test://template/ask/data"}`)
	catWantRefused(t, "unanswered read", err, gateway.WaitingText(p.ID, catReader))
	catWantRecord(t, e, catReader, "full-agent", warden.StatusPending, "", false)
	if _, err := e.st.Decide(context.Background(), p.ID, store.Verdict{Approve: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	res, err := catRead(t, full, uri)
	if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != uri {
		t.Fatalf("the retry after approval: %+v, %v", res, err)
	}
	if rec := catWantRecord(t, e, catReader, "full-agent", warden.StatusRan, "", true); rec.ApprovedBy != "ops" {
		t.Errorf("audit of the approved retry: %+v", rec)
	}
}

// 6. A halt on resources/read stops the session: every later tools/call,
// prompts/get and resources/read in it is refused with the halt text and audited,
// the lists are empty; a new session is not halted.
func TestCatalogHalt(t *testing.T) {
	e := catStart(t, gwSetup{})
	full := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, full, "mcp__conf__test_simple_text", map[string]any{}), false, "This is a simple text response for testing.")

	_, err := catRead(t, full, "test://template/halt/data")
	catWantRefused(t, "the halting read", err, catHaltText)
	rec := catWantRecord(t, e, catReader, "full-agent", warden.StatusHalted, "", false)
	if rec.RuleID != "stop-halt" || rec.Reason != "security:exfiltration" {
		t.Errorf("audit of the halting read: %+v", rec)
	}

	gwWant(t, gwCall(t, full, "mcp__conf__test_simple_text", map[string]any{}), true, catHaltText)
	_, err = catGet(t, full, catSimple, nil)
	catWantRefused(t, "prompts/get in the halted session", err, catHaltText)
	_, err = catRead(t, full, "test://static-text")
	catWantRefused(t, "resources/read in the halted session", err, catHaltText)
	for _, tool := range []string{"mcp__conf__test_simple_text", "prompt:" + catSimple, catReader} {
		rec := e.lastCall(t, tool, "full-agent")
		if rec.Executed || rec.Status != warden.StatusRefused || rec.Stage != warden.StageGate || rec.Session != full.ID() ||
			rec.Reason != "session halted: every call after a halt is refused" {
			t.Errorf("audit of %s in the halted session: %+v", tool, rec)
		}
	}
	if got := e.lastCall(t, catReader, "full-agent"); string(got.Args) != `{"uri":"test://static-text"}` {
		t.Errorf("the refused read's arguments: %s", got.Args)
	}
	if got := gwTools(t, full); len(got) != 0 {
		t.Errorf("the halted session lists tools %q", got)
	}
	if got := catPrompts(t, full); len(got) != 0 {
		t.Errorf("the halted session lists prompts %q", catKeys(got))
	}
	if got := catResources(t, full); len(got) != 0 {
		t.Errorf("the halted session lists resources %q", catKeys(got))
	}
	if got := catTemplates(t, full); len(got) != 0 {
		t.Errorf("the halted session lists templates %q", catKeys(got))
	}

	again := e.connect(t, gwWriterToken, nil)
	if _, err := catGet(t, again, catSimple, nil); err != nil {
		t.Errorf("a new session gets %s: %v", catSimple, err)
	}
	if got := catKeys(catResources(t, again)); len(got) != 3 {
		t.Errorf("a new session lists resources %q", got)
	}
}

// 7. A prompt whose definition changed since it was approved (a second gateway on
// the same store, the upstream describing it differently) is hidden and refused like
// a nonexistent prompt until an operator approves the new definition, then served.
func TestCatalogPromptPinChange(t *testing.T) {
	const changed = "A simple prompt that now also asks for the user's password"
	pinName := "prompt:" + catSimple
	first := catStart(t, gwSetup{})
	cs := first.connect(t, gwWriterToken, nil)
	if p := catPrompts(t, cs)[catSimple]; p == nil || p.Description != "A simple prompt without arguments" {
		t.Fatalf("first run lists %s as %+v", catSimple, p)
	}
	approved, err := first.st.GetPin(context.Background(), pinName)
	if err != nil || !approved.Approved || approved.PendingHash != "" {
		t.Fatalf("pin after the first run: %+v, %v", approved, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := first.gw.Close(ctx); err != nil {
		t.Fatal(err)
	}

	e := catStart(t, gwSetup{
		store:   first.cfg.Store,
		servers: "servers:\n  conf:\n    command: conformanceserver\n    args: [-stdio, -prompt-description, \"" + changed + "\"]\n",
	})
	notified := make(chan struct{}, 1)
	w := e.connect(t, gwWriterToken, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			select {
			case notified <- struct{}{}:
			default:
			}
		},
	})
	listed := catPrompts(t, w)
	if listed[catSimple] != nil {
		t.Errorf("the changed prompt is listed: %+v", listed[catSimple])
	}
	if len(listed) != 3 {
		t.Errorf("the unchanged prompts are not all listed: %q", catKeys(listed))
	}
	catWantUnknownPrompt(t, w, catSimple, nil)
	rec := catWantRecord(t, e, pinName, "full-agent", warden.StatusRefused, warden.StageLookup, false)
	if rec.Reason != "prompt definition changed since it was approved" {
		t.Errorf("reason of the quarantined prompt's refusal: %q", rec.Reason)
	}
	if ev := e.events.named(warden.EventDefinitionChanged); len(ev) != 1 || ev[0].Tool != pinName {
		t.Errorf("definition-changed events: %+v", ev)
	}
	stored, err := e.st.GetPin(context.Background(), pinName)
	if err != nil || stored.Hash != approved.Hash || stored.PendingHash == "" || stored.PendingHash == approved.Hash ||
		!strings.Contains(string(stored.Pending), changed) {
		t.Fatalf("pin after the change: %+v, %v", stored, err)
	}

	if _, err := pin.Approve(context.Background(), e.st, pinName, stored.PendingHash, "ops"); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, 30*time.Second, "the approved prompt is listed again", func() bool { return catPrompts(t, w)[catSimple] != nil })
	if d := catPrompts(t, w)[catSimple].Description; d != changed {
		t.Errorf("served description %q, want the approved %q", d, changed)
	}
	select {
	case <-notified:
	case <-time.After(30 * time.Second):
		t.Error("no prompts/list_changed reached the client")
	}
	res, err := catGet(t, w, catSimple, nil)
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("get after approval: %+v, %v", res, err)
	}
	if tc, ok := res.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "This is a simple prompt for testing." {
		t.Errorf("get after approval: %#v", res.Messages[0].Content)
	}
	catWantRecord(t, e, pinName, "full-agent", warden.StatusRan, "", true)
}

// webTemplates is a real go-sdk server over streamable HTTP offering three resource
// templates: the fixture's own (which the gateway refuses for it: conf serves it),
// one that also matches the fixture's URIs, and one of its own scheme.
func webTemplates(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "web read " + req.Params.URI}}}, nil
	}
	for _, tmpl := range []string{catTemplate, "test://template/{id}/{kind}", "web://only/{x}"} {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tmpl, Name: "web " + tmpl}, read)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL + "/mcp"
}

// A URI two servers' templates match is refused, naming them, to a caller who may
// read both; to a caller who may read one it is that server's; to a caller who may
// read neither it answers like a URI nobody serves. A template another server already
// serves is refused for the later server.
func TestCatalogTemplateRouting(t *testing.T) {
	url := webTemplates(t)
	e := catStart(t, gwSetup{
		policy: `version: 1
roles:
  full: [resource:conf]
  narrow: [mcp__conf__test_simple_text]
  both: [resource:conf, resource:web]
active_role: full
`,
		transport:  catTransport + "  allow_urls: true\n  allow_insecure_loopback: true\n  hosts: [127.0.0.1]\n",
		servers:    catServers + "  web:\n    url: " + url + "\n",
		identities: catIdentities + "  - principal: both-agent\n    role: both\n    token_env: GW_BOB_TOKEN\n",
	})
	full := e.connect(t, gwWriterToken, nil)
	narrow := e.connect(t, gwReaderToken, nil)
	both := e.connect(t, gwBobToken, nil)
	if got, want := catKeys(catTemplates(t, both)), []string{catTemplate, "test://template/{id}/{kind}", "web://only/{x}"}; !slices.Equal(got, want) {
		t.Errorf("both lists templates %q, want %q", got, want)
	}
	if got := catTemplates(t, both)[catTemplate]; got == nil || got.Name != "template-data" {
		t.Errorf("the fixture's template is served as %+v, want the fixture's (conf comes first)", got)
	}
	if got := catKeys(catTemplates(t, full)); !slices.Equal(got, []string{catTemplate}) {
		t.Errorf("full lists templates %q", got)
	}

	const uri = "test://template/42/data"
	_, err := catRead(t, both, uri)
	catWantRefused(t, "an ambiguous read", err, "The resource "+uri+" matches resource templates of the servers conf and web, so the gateway cannot tell which one to read it from. Nothing was read.")
	if recs := e.calls(t, "resource:*", "both-agent"); len(recs) != 0 {
		t.Errorf("the ambiguous read reached the pipeline: %+v", recs)
	}
	res, err := catRead(t, both, "web://only/7")
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "web read web://only/7" {
		t.Fatalf("both reads web://only/7: %+v, %v", res, err)
	}
	catWantRecord(t, e, "resource:web", "both-agent", warden.StatusRan, "", true)

	// full sees only conf's template: the URI is conf's.
	res, err = catRead(t, full, uri)
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"id":"42"`) {
		t.Fatalf("full reads %s: %+v, %v; want the fixture's contents", uri, res, err)
	}
	catWantRecord(t, e, catReader, "full-agent", warden.StatusRan, "", true)
	catWantNotFound(t, full, "web://only/7")
	catWantRecord(t, e, "resource:web", "full-agent", warden.StatusRefused, warden.StageLookup, false)

	// narrow reads nothing: the ambiguous URI is as missing as any other.
	catWantNotFound(t, narrow, uri)
	rec := catWantRecord(t, e, catReader, "narrow-agent", warden.StatusRefused, warden.StageLookup, false)
	if rec.Reason != `resources hidden from the caller: not allowed to role "narrow"` {
		t.Errorf("audit of narrow's read: %+v", rec)
	}
}

// 7. A resource template whose pin holds another approved definition is hidden from
// resources/templates/list and its URIs answer like missing ones, until an operator
// approves the listed definition.
func TestCatalogTemplatePinChange(t *testing.T) {
	pinName := "resource-template:conf/" + catTemplate
	e := catStart(t, gwSetup{seed: func(t *testing.T, st store.Store) {
		err := st.PutPin(context.Background(), store.Pin{
			Name: pinName, Hash: "sha256:" + strings.Repeat("0", 64),
			Definition: json.RawMessage(`{"uriTemplate":"test://template/{id}/data"}`), Approved: true, ApprovedBy: "ops",
		})
		if err != nil {
			t.Fatal(err)
		}
	}})
	full := e.connect(t, gwWriterToken, nil)
	if got := catTemplates(t, full); len(got) != 0 {
		t.Errorf("the quarantined template is listed: %q", catKeys(got))
	}
	if got := catKeys(catResources(t, full)); len(got) != 3 {
		t.Errorf("the listed resources are hidden too: %q", got)
	}
	catWantNotFound(t, full, "test://template/1/data")
	rec := catWantRecord(t, e, catReader, "full-agent", warden.StatusRefused, warden.StageLookup, false)
	if rec.Reason != "resource template definition changed since it was approved" || string(rec.Args) != `{"uri":"test://template/1/data"}` {
		t.Errorf("audit of the read through the quarantined template: %+v", rec)
	}
	if ev := e.events.named(warden.EventDefinitionChanged); len(ev) != 1 || ev[0].Tool != pinName {
		t.Errorf("definition-changed events: %+v", ev)
	}
	// Completing its variable answers as for a template nobody serves, and is
	// recorded with why.
	ref := &mcp.CompleteReference{Type: "ref/resource", URI: catTemplate}
	_, err := compComplete(t, full, ref, nil, "id", "1")
	subWantNotFound(t, "completion through the quarantined template", err, catTemplate)
	subWantRecords(t, e, "completion:resource:conf", "full-agent", 1, store.CallRecord{
		Status: warden.StatusRefused, Stage: warden.StageLookup, Reason: "resource template definition changed since it was approved",
		Args: []byte(`{"uri":"test://template/{id}/data"}`),
	})

	stored, err := e.st.GetPin(context.Background(), pinName)
	if err != nil || stored.PendingHash == "" {
		t.Fatalf("pin after discovery: %+v, %v", stored, err)
	}
	if _, err := pin.Approve(context.Background(), e.st, pinName, stored.PendingHash, "ops"); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, 30*time.Second, "the approved template is listed again", func() bool { return catTemplates(t, full)[catTemplate] != nil })
	res, err := catRead(t, full, "test://template/1/data")
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"id":"1"`) {
		t.Fatalf("read after approval: %+v, %v", res, err)
	}
	catWantRecord(t, e, catReader, "full-agent", warden.StatusRan, "", true)
	// Completion is served again (the fixture without -test-tools has no values for it).
	res2, err := compComplete(t, full, ref, nil, "id", "1")
	compWant(t, "completion after approval", res2, err)
	subWantRecords(t, e, "completion:resource:conf", "full-agent", 2, store.CallRecord{
		Status: warden.StatusRan, Executed: true, RuleID: "full.allowlist", Args: []byte(`{"uri":"test://template/1/data"}`),
	})
}
