package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/store"
)

// The catalog tests run the conformance fixture (./internal/conformanceserver) as a
// real child process named "conf": three resources, one resource template and four
// prompts.

const confTemplate = "test://template/{id}/data"

// confUpstream returns a discovered Server of the fixture, its pins in pins (a new
// store when nil).
func confUpstream(t *testing.T, pins store.Store, sink warden.Sink) *Server {
	t.Helper()
	mcptest.BuildBinary(t, "./internal/conformanceserver") // built beside the fault server, on PATH
	opts := Options{
		Policy: &TransportPolicy{AllowCommands: true, Commands: []string{"conformanceserver"}},
		Pins:   pins,
		Sink:   sink,
	}
	u := newUpstream(t, ServerConfig{Name: "conf", Command: "conformanceserver", Args: []string{"-stdio"}}, opts)
	discover(t, u)
	return u
}

// confDirect connects to the fixture without the upstream package, for the results
// that must come through unchanged.
func confDirect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	bin := mcptest.BuildBinary(t, "./internal/conformanceserver")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "catalog-direct", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "-stdio")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func sameJSON(t *testing.T, what string, got, want any) {
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

func TestCatalogDiscover(t *testing.T) {
	t.Parallel()
	pins := openPinStore(t)
	rec := &warden.Recorder{}
	u := confUpstream(t, pins, rec)

	var names []string
	for _, p := range u.Prompts() {
		names = append(names, p.Name)
		if p.Server != "conf" || p.Name != "mcp__conf__"+p.Remote || p.Prompt == nil || p.Prompt.Name != p.Remote ||
			p.Quarantined || !strings.HasPrefix(p.Hash, "sha256:") || p.PinName() != "prompt:"+p.Name {
			t.Errorf("prompt %+v", p)
		}
		hash, _, err := pin.HashPrompt(p.Prompt)
		if err != nil || hash != p.Hash {
			t.Errorf("prompt %s: hash %s, HashPrompt %s, %v", p.Name, p.Hash, hash, err)
		}
		// First use pins the definition as approved.
		stored, err := pins.GetPin(context.Background(), p.PinName())
		if err != nil || !stored.Approved || stored.Hash != p.Hash {
			t.Errorf("pin of %s: %+v, %v", p.Name, stored, err)
		}
	}
	slices.Sort(names)
	want := []string{"mcp__conf__test_input_required_result_prompt", "mcp__conf__test_prompt_with_arguments", "mcp__conf__test_prompt_with_embedded_resource", "mcp__conf__test_prompt_with_image", "mcp__conf__test_simple_prompt"}
	if !slices.Equal(names, want) {
		t.Errorf("prompts %q, want %q", names, want)
	}

	var uris []string
	for _, r := range u.Resources() {
		uris = append(uris, r.URI)
		if r.Server != "conf" || r.Resource == nil || r.Resource.URI != r.URI || r.Resource.Name == "" {
			t.Errorf("resource %+v", r)
		}
	}
	slices.Sort(uris)
	if want := []string{"test://input-required/greeting", "test://static-binary", "test://static-text", "test://watched-resource"}; !slices.Equal(uris, want) {
		t.Errorf("resources %q, want %q", uris, want)
	}

	tmpls := u.ResourceTemplates()
	if len(tmpls) != 1 {
		t.Fatalf("templates %+v, want one", tmpls)
	}
	tm := tmpls[0]
	if tm.URITemplate != confTemplate || tm.Server != "conf" || tm.Quarantined || tm.Template == nil || tm.Template.Name != "template-data" ||
		tm.PinName() != "resource-template:conf/"+confTemplate {
		t.Errorf("template %+v (pin %s)", tm, tm.PinName())
	}
	if stored, err := pins.GetPin(context.Background(), tm.PinName()); err != nil || !stored.Approved || stored.Hash != tm.Hash {
		t.Errorf("pin of the template: %+v, %v", stored, err)
	}
	if p := u.CatalogProblems(); len(p) != 0 {
		t.Errorf("catalog problems: %v", p)
	}
	if ev := rec.Events(); len(ev) != 0 {
		t.Errorf("events on first use: %+v", ev)
	}

	// What was listed is the fixture's listing as it is.
	direct := confDirect(t)
	ctx := context.Background()
	dp, err := direct.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range dp.Prompts {
		for _, p := range u.Prompts() {
			if p.Remote == want.Name {
				sameJSON(t, "prompt "+want.Name, p.Prompt, want)
			}
		}
	}
	dt, err := direct.ListResourceTemplates(ctx, nil)
	if err != nil || len(dt.ResourceTemplates) != 1 {
		t.Fatalf("the fixture's templates: %+v, %v", dt, err)
	}
	sameJSON(t, "template", tm.Template, dt.ResourceTemplates[0])
}

func TestCatalogRoute(t *testing.T) {
	t.Parallel()
	u := confUpstream(t, nil, nil)
	if r := u.Route("test://static-text"); !r.Listed || r.Template != nil || !r.Offers() {
		t.Errorf("route of a listed URI: %+v", r)
	}
	for _, uri := range []string{"test://template/42/data", "test://template/a-b.c_d~e/data"} {
		r := u.Route(uri)
		if r.Listed || r.Template == nil || r.Template.URITemplate != confTemplate || !r.Offers() {
			t.Errorf("route of the template URI %s: %+v", uri, r)
		}
	}
	for _, uri := range []string{"test://unknown", "test://template/42/data/more", "x-test://template/42/data", "test://template/a/b/data", "test://static-text/"} {
		if r := u.Route(uri); r.Listed || r.Template != nil || r.Offers() {
			t.Errorf("route of %s, which the server does not offer: %+v", uri, r)
		}
	}
	// Matches is the template's own expansion only.
	tm := u.ResourceTemplates()[0]
	if !tm.Matches("test://template/7/data") || tm.Matches("test://template/7/data?x=1") {
		t.Errorf("Matches of %s", tm.URITemplate)
	}
	if (ResourceTemplate{URITemplate: confTemplate}).Matches("test://template/7/data") {
		t.Error("a template without a matcher matches")
	}
}

// Expand and Variables: RFC 6570 simple expansion (reserved characters encoded, a
// variable without a value left out), and an error for a template not compiled.
func TestCatalogTemplateExpand(t *testing.T) {
	t.Parallel()
	u := confUpstream(t, nil, nil)
	tm := u.ResourceTemplates()[0]
	if got := tm.Variables(); !slices.Equal(got, []string{"id"}) {
		t.Errorf("Variables of %s: %q", tm.URITemplate, got)
	}
	for _, c := range []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{"id": "7"}, "test://template/7/data"},
		{map[string]string{"id": "a/b?c"}, "test://template/a%2Fb%3Fc/data"},
		{map[string]string{"id": ".."}, "test://template/../data"},
		{map[string]string{}, "test://template//data"},
		{map[string]string{"other": "x"}, "test://template//data"},
		{map[string]string{"id": "1", "x": ""}, "test://template/1/data"},
	} {
		got, err := tm.Expand(c.values)
		if err != nil || got != c.want {
			t.Errorf("Expand(%v) = %q, %v; want %q", c.values, got, err, c.want)
		}
	}
	bare := ResourceTemplate{URITemplate: confTemplate}
	if _, err := bare.Expand(map[string]string{"id": "7"}); err == nil || err.Error() != `resource template "test://template/{id}/data" was not compiled` {
		t.Errorf("Expand of a template not compiled: %v", err)
	}
	if v := bare.Variables(); v != nil {
		t.Errorf("Variables of a template not compiled: %q", v)
	}
}

func TestCatalogReadResource(t *testing.T) {
	t.Parallel()
	u := confUpstream(t, nil, nil)
	direct := confDirect(t)
	ctx := context.Background()
	for _, uri := range []string{"test://static-text", "test://static-binary", "test://template/42/data"} {
		got, err := u.ReadResource(ctx, uri, nil)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		want, err := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "contents of "+uri, got.Contents, want.Contents)
	}
	bin, err := u.ReadResource(ctx, "test://static-binary", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ResourceText(bin), "[binary resource test://static-binary, image/png, "+strconv.Itoa(len(bin.Contents[0].Blob))+" bytes]"; got != want {
		t.Errorf("ResourceText of the binary resource: %q, want %q", got, want)
	}

	// A URI the server does not offer is never sent.
	sent := false
	_, err = u.ReadResource(ctx, "test://unknown", &CallOptions{BeforeSend: func(context.Context) error { sent = true; return nil }})
	if !errors.Is(err, ErrNoResource) || !errors.Is(err, ErrNotSent) || sent {
		t.Errorf("read of an unknown URI: %v (sent %t); want ErrNoResource and ErrNotSent, nothing sent", err, sent)
	}
	if err == nil || !strings.Contains(err.Error(), `server "conf": resource "test://unknown"`) {
		t.Errorf("the error does not say what and where: %v", err)
	}
	// A template URI the server refuses is sent, and its answer is the server's error.
	_, err = u.ReadResource(ctx, "test://template/a/b/data", nil)
	if !errors.Is(err, ErrNoResource) || !errors.Is(err, ErrNotSent) {
		t.Errorf("read of a URI no template matches: %v", err)
	}
	// The template's expansion admits an empty id, which the fixture refuses: that
	// read is sent, and its error is the server's answer.
	if r := u.Route("test://template//data"); r.Template == nil {
		t.Fatalf("route of test://template//data: %+v, want the template", r)
	}
	_, err = u.ReadResource(ctx, "test://template//data", nil)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || errors.Is(err, ErrNotSent) || errors.Is(err, ErrNoResource) {
		t.Errorf("read of a template URI the server refuses: %v; want the server's resource-not-found, sent", err)
	}
}

func TestCatalogGetPrompt(t *testing.T) {
	t.Parallel()
	u := confUpstream(t, nil, nil)
	direct := confDirect(t)
	ctx := context.Background()
	for remote, args := range map[string]map[string]string{
		"test_simple_prompt":                 nil,
		"test_prompt_with_arguments":         {"arg1": "a", "arg2": "b"},
		"test_prompt_with_embedded_resource": {"resourceUri": "test://x"},
		"test_prompt_with_image":             nil,
	} {
		got, err := u.GetPrompt(ctx, remote, args, nil)
		if err != nil {
			t.Fatalf("get %s: %v", remote, err)
		}
		want, err := direct.GetPrompt(ctx, &mcp.GetPromptParams{Name: remote, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "messages of "+remote, got.Messages, want.Messages)
	}
	img, err := u.GetPrompt(ctx, "test_prompt_with_image", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := img.Messages[0].Content.(*mcp.ImageContent).Data
	if got, want := PromptText(img), "user: [image, image/png, "+strconv.Itoa(len(data))+" bytes]\n\nuser: Please analyze the image above."; got != want {
		t.Errorf("PromptText: %q, want %q", got, want)
	}
	// The governed name is not the upstream's.
	if _, err := u.GetPrompt(ctx, "mcp__conf__test_simple_prompt", nil, nil); !errors.Is(err, ErrNotSent) || !strings.Contains(err.Error(), `offers no prompt "mcp__conf__test_simple_prompt"`) {
		t.Errorf("get by the governed name: %v", err)
	}
	// The server's own refusal of missing arguments is an answer, sent.
	_, err = u.GetPrompt(ctx, "test_prompt_with_embedded_resource", nil, nil)
	if err == nil || errors.Is(err, ErrNotSent) {
		t.Errorf("get without the required argument: %v; want the server's error", err)
	}
}

// A prompt and a template whose pins hold another approved definition are
// quarantined: listed, flagged, refused before sending with a *pin.QuarantinedError.
func TestCatalogQuarantine(t *testing.T) {
	t.Parallel()
	pins := openPinStore(t)
	ctx := context.Background()
	other := "sha256:" + strings.Repeat("0", 64)
	for _, name := range []string{"prompt:mcp__conf__test_simple_prompt", "resource-template:conf/" + confTemplate} {
		if err := pins.PutPin(ctx, store.Pin{Name: name, Hash: other, Definition: json.RawMessage(`{}`), Approved: true, ApprovedBy: "ops"}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &warden.Recorder{}
	u := confUpstream(t, pins, rec)
	for _, p := range u.Prompts() {
		if p.Quarantined != (p.Remote == "test_simple_prompt") {
			t.Errorf("prompt %s quarantined=%t", p.Name, p.Quarantined)
		}
	}
	if tm := u.ResourceTemplates(); len(tm) != 1 || !tm[0].Quarantined {
		t.Errorf("templates %+v, want the one quarantined", tm)
	}
	_, err := u.GetPrompt(ctx, "test_simple_prompt", nil, nil)
	var qe *pin.QuarantinedError
	if !errors.As(err, &qe) || qe.Tool != "mcp__conf__test_simple_prompt" || !errors.Is(err, ErrNotSent) {
		t.Errorf("get of the quarantined prompt: %v", err)
	}
	_, err = u.ReadResource(ctx, "test://template/1/data", nil)
	if !errors.As(err, &qe) || qe.Tool != "resource-template:conf/"+confTemplate || !errors.Is(err, ErrNotSent) {
		t.Errorf("read through the quarantined template: %v", err)
	}
	if _, err := u.GetPrompt(ctx, "test_prompt_with_image", nil, nil); err != nil {
		t.Errorf("an unchanged prompt: %v", err)
	}
	if _, err := u.ReadResource(ctx, "test://static-text", nil); err != nil {
		t.Errorf("a listed resource: %v", err)
	}
	var changed []string
	for _, ev := range rec.Named(warden.EventDefinitionChanged) {
		changed = append(changed, ev.Tool)
	}
	slices.Sort(changed)
	if want := []string{"prompt:mcp__conf__test_simple_prompt", "resource-template:conf/" + confTemplate}; !slices.Equal(changed, want) {
		t.Errorf("definition-changed events for %q, want %q", changed, want)
	}

	// An operator approves the listed definitions; Refresh serves them again.
	for _, name := range []string{"prompt:mcp__conf__test_simple_prompt", "resource-template:conf/" + confTemplate} {
		stored, err := pins.GetPin(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pin.Approve(ctx, pins, name, stored.PendingHash, "ops"); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := u.GetPrompt(ctx, "test_simple_prompt", nil, nil); err != nil {
		t.Errorf("the approved prompt: %v", err)
	}
	if _, err := u.ReadResource(ctx, "test://template/1/data", nil); err != nil {
		t.Errorf("the approved template: %v", err)
	}
}

// The executables: names, schemas, and Run through GetPrompt and ReadResource.
func TestCatalogExecutables(t *testing.T) {
	t.Parallel()
	u := confUpstream(t, nil, nil)
	var withArgs Prompt
	for _, p := range u.Prompts() {
		if p.Remote == "test_prompt_with_arguments" {
			withArgs = p
		}
	}
	x := u.PromptExecutable(withArgs, nil)
	if x.Tool.Name != "prompt:mcp__conf__test_prompt_with_arguments" || x.Tool.Source != "mcp:conf" || x.Tool.Description != "A prompt with two required arguments" {
		t.Errorf("prompt executable %+v", x.Tool)
	}
	const schema = `{"additionalProperties":false,"properties":{"arg1":{"description":"First test argument","type":"string"},"arg2":{"description":"Second test argument","type":"string"}},"required":["arg1","arg2"],"type":"object"}`
	if string(x.Tool.InputSchema) != schema {
		t.Errorf("prompt schema %s\nwant %s", x.Tool.InputSchema, schema)
	}
	ctx := context.Background()
	args, err := warden.ParseArgs(json.RawMessage(`{"arg1":"x","arg2":"y"}`))
	if err != nil {
		t.Fatal(err)
	}
	var hooked mcp.Result
	out, err := x.Run(ctx, args, nil)
	if err != nil || out != "user: Prompt with arguments: arg1='x', arg2='y'" {
		t.Errorf("Run: %q, %v", out, err)
	}
	bad, err := warden.ParseArgs(json.RawMessage(`{"arg1":1,"arg2":"y"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Run(ctx, bad, nil); !errors.Is(err, warden.ErrNotExecuted) {
		t.Errorf("Run with a number: %v, want ErrNotExecuted", err)
	}

	r := u.ResourceExecutable(func(context.Context) (*CallOptions, func(mcp.Result, string)) {
		return nil, func(res mcp.Result, _ string) { hooked = res }
	})
	if r.Tool.Name != "resource:conf" || r.Tool.Source != "mcp:conf" {
		t.Errorf("resource executable %+v", r.Tool)
	}
	uri, err := warden.ParseArgs(json.RawMessage(`{"uri":"test://static-text"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err = r.Run(ctx, uri, nil)
	if err != nil || out != "This is the content of the static text resource." {
		t.Errorf("Run: %q, %v", out, err)
	}
	if res, ok := hooked.(*mcp.ReadResourceResult); !ok || len(res.Contents) != 1 || res.Contents[0].URI != "test://static-text" {
		t.Errorf("the hook was told %#v", hooked)
	}
	unknown, err := warden.ParseArgs(json.RawMessage(`{"uri":"test://unknown"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, unknown, nil); !errors.Is(err, warden.ErrNotExecuted) || !errors.Is(err, ErrNoResource) {
		t.Errorf("Run of an unknown URI: %v, want ErrNotExecuted and ErrNoResource", err)
	}
}

// Definitions that cannot be served are refused and reported; the rest are served.
func TestCatalogProblems(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "odd", Version: "1"}, nil)
	prompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "ok"}}}}, nil
	}
	srv.AddPrompt(&mcp.Prompt{Name: "good"}, prompt)
	srv.AddPrompt(&mcp.Prompt{Name: "has space"}, prompt)
	srv.AddPrompt(&mcp.Prompt{Name: "twice", Arguments: []*mcp.PromptArgument{{Name: "a"}, {Name: "a"}}}, prompt)
	srv.AddPrompt(&mcp.Prompt{Name: "nameless-arg", Arguments: []*mcp.PromptArgument{{Name: ""}}}, prompt)
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "ok"}}}, nil
	}
	srv.AddResource(&mcp.Resource{URI: "odd://fine", Name: "fine"}, read)
	srv.AddResource(&mcp.Resource{URI: "relative/path", Name: "relative"}, read)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "odd://t/{x}", Name: "t"}, read)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "{host}/x", Name: "schemeless"}, read)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })

	policy := &TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}}
	u := newUpstream(t, ServerConfig{Name: "odd", URL: hs.URL + "/mcp"}, Options{Policy: policy})
	discover(t, u)

	var prompts []string
	for _, p := range u.Prompts() {
		prompts = append(prompts, p.Name)
	}
	if !slices.Equal(prompts, []string{"mcp__odd__good"}) {
		t.Errorf("served prompts %q", prompts)
	}
	if r := u.Resources(); len(r) != 1 || r[0].URI != "odd://fine" {
		t.Errorf("served resources %+v", r)
	}
	if tm := u.ResourceTemplates(); len(tm) != 1 || tm[0].URITemplate != "odd://t/{x}" {
		t.Errorf("served templates %+v", tm)
	}
	got := map[string]string{}
	for _, p := range u.CatalogProblems() {
		if p.Server != "odd" {
			t.Errorf("problem of server %q: %v", p.Server, p)
		}
		got[p.Kind+" "+p.Name] = p.Problem
	}
	want := map[string]string{
		"prompt mcp__odd__has space":    `prompt name "has space" is not a valid name (the governed name "mcp__odd__has space" must be 1 to 128 letters, digits, '_', '.' or '-')`,
		"prompt mcp__odd__twice":        `argument "a" is listed twice`,
		"prompt mcp__odd__nameless-arg": "an argument has no name",
		"resource relative/path":        "the URI is not an absolute URI",
		"resource template {host}/x":    "the URI template does not start with a scheme",
	}
	if len(got) != len(want) {
		t.Errorf("problems %v\nwant %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("problem of %s: %q, want %q", k, got[k], w)
		}
	}
	if s := (CatalogProblem{Server: "odd", Kind: "resource", Name: "relative/path", Problem: "the URI is not an absolute URI"}).String(); s != `server "odd": resource "relative/path" refused: the URI is not an absolute URI` {
		t.Errorf("String: %q", s)
	}
	// The refused ones are not reachable.
	ctx := context.Background()
	if _, err := u.GetPrompt(ctx, "has space", nil, nil); !errors.Is(err, ErrNotSent) {
		t.Errorf("get of a refused prompt: %v", err)
	}
	if _, err := u.ReadResource(ctx, "relative/path", nil); !errors.Is(err, ErrNoResource) {
		t.Errorf("read of a refused resource: %v", err)
	}
	if res, err := u.ReadResource(ctx, "odd://t/1", nil); err != nil || res.Contents[0].Text != "ok" {
		t.Errorf("read through the served template: %+v, %v", res, err)
	}
}

// A server that declares resources but answers resources/templates/list (or
// prompts/list) with "method not found", as servers built on the low-level SDKs
// often do, has none of that kind to list: its tools and resources are served.
func TestCatalogListMethodNotFound(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "lowlevel", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	srv.AddResource(&mcp.Resource{URI: "low://doc", Name: "doc"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "the doc"}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if r.Method == http.MethodPost && (msg.Method == "resources/templates/list" || msg.Method == "prompts/list") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, msg.ID)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })

	policy := &TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}}
	u := newUpstream(t, ServerConfig{Name: "low", URL: hs.URL + "/mcp"}, Options{Policy: policy})
	tools, _, err := u.Discover(context.Background())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if names := toolNames(tools); !slices.Equal(names, []string{"mcp__low__echo"}) {
		t.Errorf("tools %q", names)
	}
	if r := u.Resources(); len(r) != 1 || r[0].URI != "low://doc" {
		t.Errorf("resources %+v", r)
	}
	if n := len(u.ResourceTemplates()) + len(u.Prompts()); n != 0 {
		t.Errorf("%d templates and prompts, want none", n)
	}
	ctx := context.Background()
	if r, err := u.Call(ctx, "echo", json.RawMessage(`{"text":"hi"}`), nil); err != nil || textOf(t, r) != "hi" {
		t.Errorf("echo: %v", err)
	}
	if res, err := u.ReadResource(ctx, "low://doc", nil); err != nil || res.Contents[0].Text != "the doc" {
		t.Errorf("read: %+v, %v", res, err)
	}
}

// A URI matching a quarantined template and a served one of the same server is read
// through the served one: only a URI that matches nothing but quarantined templates
// is refused.
func TestCatalogRouteSkipsQuarantinedTemplate(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "two", Version: "1"}, nil)
	for _, tmpl := range []string{"odd://t/{x}", "odd://{host}/x"} {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tmpl, Name: tmpl}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "read " + req.Params.URI}}}, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	pins := openPinStore(t)
	ctx := context.Background()
	quarantined := "resource-template:two/odd://t/{x}"
	if err := pins.PutPin(ctx, store.Pin{Name: quarantined, Hash: "sha256:" + strings.Repeat("0", 64), Definition: json.RawMessage(`{}`), Approved: true, ApprovedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	policy := &TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"127.0.0.1"}}
	u := newUpstream(t, ServerConfig{Name: "two", URL: hs.URL + "/mcp"}, Options{Policy: policy, Pins: pins})
	discover(t, u)
	tmpls := u.ResourceTemplates()
	if len(tmpls) != 2 || tmpls[0].URITemplate != "odd://t/{x}" || !tmpls[0].Quarantined || tmpls[1].Quarantined {
		t.Fatalf("templates %+v, want odd://t/{x} (quarantined) listed first", tmpls)
	}
	if r := u.Route("odd://t/x"); r.Template == nil || r.Template.URITemplate != "odd://{host}/x" {
		t.Errorf("route of odd://t/x: %+v, want the served template odd://{host}/x", r)
	}
	res, err := u.ReadResource(ctx, "odd://t/x", nil)
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "read odd://t/x" {
		t.Errorf("read of odd://t/x: %+v, %v; want it read through the served template", res, err)
	}
	// Matching only the quarantined template: refused.
	var qe *pin.QuarantinedError
	if _, err := u.ReadResource(ctx, "odd://t/y", nil); !errors.As(err, &qe) || qe.Tool != quarantined || !errors.Is(err, ErrNotSent) {
		t.Errorf("read of odd://t/y: %v; want the quarantine refusal", err)
	}
}
