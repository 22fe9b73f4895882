// Command conformanceserver is the MCP server Warden's CI runs the official MCP
// conformance suite (@modelcontextprotocol/conformance, its server scenarios)
// against, both directly and behind the gateway. It is a real server built with the
// official Go SDK and offers exactly what those scenarios ask for: the test_* tools
// (text, image, audio, embedded resource and mixed content, an isError result,
// logging and progress during a call, sampling and elicitation requests back to the
// client, a tool whose input schema uses JSON Schema 2020-12 keywords, and
// test_reconnection, which closes its SSE stream mid-call), the test:// resources and
// resource template, resource subscriptions, the test_* prompts, completion,
// logging/setLevel and ping; and for protocol 2026-07-28 the
// test_input_required_result_* tools and prompt, which answer with input_required
// results (elicitation, sampling and roots/list input requests, signed
// requestStates, several rounds; see mrtr.go), and the tools of the Tasks extension's
// tasks-* scenarios (greet, slow_compute, failing_job, protocol_error_job,
// confirm_delete, multi_input, test_tool_with_task; see tasks.go).
//
// The sampling and elicitation tools ask through the SDK's multi-round-trip results
// (SEP-2322), so they work with clients of either protocol era: the SDK turns the
// request into sampling/createMessage or elicitation/create for a client older than
// 2026-07-28 (the suite's client is 2025-11-25), and a newer client (the Go SDK's own
// default) answers it and calls again.
//
// Flags:
//
//	-listen ADDR  serve streamable HTTP at http://ADDR/mcp (ADDR may use port 0) and
//	              print "listening on http://<actual addr>/mcp" to stderr once it
//	              listens. Each HTTP session is its own SDK server session, so its
//	              log level and resource subscriptions are its own. Streams are
//	              resumable (an in-memory event store), and requests from a localhost
//	              connection whose Host is not localhost are refused (the SDK's DNS
//	              rebinding protection). Requests of protocol 2026-07-28 are served
//	              statelessly by a server of their own, behind mcptasks.Handler: it
//	              advertises the Tasks extension (io.modelcontextprotocol/tasks) and
//	              serves tasks to the requests that declare it, one owner for all
//	              clients. Over stdio and at earlier protocol versions the tasks
//	              tools answer in their own request and no extension is advertised.
//	-stdio        serve one session over stdin/stdout; logs go to stderr only.
//	-prompt-description TEXT
//	              the description of test_simple_prompt instead of the default
//	              "A simple prompt without arguments": a test gives a second run a
//	              different prompt definition (the gateway's pin on it must then
//	              quarantine it).
//
// Flags for Warden's own tests, which no conformance scenario uses (without them the
// server is exactly the one above):
//
//	-test-tools   also offer the tool warden_test_update_resource {"uri"}, which
//	              sends notifications/resources/updated for uri to the sessions
//	              subscribed to it and answers "updated <uri>: <n> subscribed
//	              session(s)", n counted before sending; offer completion values for
//	              the id of test://template/{id}/data (those of ids, by prefix); and
//	              write "subscribed <uri>" and "unsubscribed <uri>" to stderr for every
//	              resources/subscribe and resources/unsubscribe, and
//	              "completion <ref type> <name or URI> <argument>=<value>" for every
//	              completion/complete.
//	-no-subscribe do not offer resource subscriptions (the resources capability
//	              has no subscribe, and resources/subscribe is an unknown method).
//	-test-files   also offer the resource template test://files/{+path}, read the
//	              way file servers resolve a path: the path is percent-decoded and
//	              cleaned ("." and ".." segments resolved), then looked up among
//	              public/readme.txt and secret/key.txt.
//
// The SDK writes the SSE priming event and the close event's retry field of
// test_reconnection only on a request whose Mcp-Protocol-Version header is
// 2025-11-25 or later. The suite's server-sse-polling scenario sends 2025-03-26 on
// that request, so it reports both as warnings (its active suite leaves the scenario
// out).
package main

//lint:file-ignore SA1019 the conformance scenarios of the 2025 protocol line exercise logging and sampling, deprecated from 2026-07-28 on

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenhq/warden/internal/mcptasks"
)

func main() {
	listen := flag.String("listen", "", "serve streamable HTTP at http://ADDR/mcp")
	stdio := flag.Bool("stdio", false, "serve over stdin/stdout")
	var opts options
	flag.StringVar(&opts.promptDesc, "prompt-description", simplePromptDescription, "the description of test_simple_prompt")
	flag.BoolVar(&opts.testTools, "test-tools", false, "also offer warden_test_update_resource, template completions and subscription logs (Warden's tests)")
	flag.BoolVar(&opts.noSubscribe, "no-subscribe", false, "do not offer resource subscriptions")
	flag.BoolVar(&opts.testFiles, "test-files", false, "also offer the template test://files/{+path}, resolved like a file path (Warden's tests)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("conformanceserver: ")
	if (*listen == "") == !*stdio {
		log.Fatal("exactly one of -listen ADDR and -stdio is required")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	server := newServer(opts)

	if *stdio {
		if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
			log.Fatal(err)
		}
		return
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: httpHandler(server, opts), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// httpHandler serves streamable HTTP at /mcp: a request of protocol 2026-07-28 or
// later (by its Mcp-Protocol-Version header) statelessly, behind mcptasks.Handler,
// by a server of its own that offers the tasks extension; any other by server, with
// sessions.
func httpHandler(server *mcp.Server, o options) http.Handler {
	stateful := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	// Protocol 2026-07-28 has no sessions: the SDK serves it with its stateless
	// handler only. A request naming that version (or a later one) goes there.
	o.tasks = true
	server2026 := newServer(o)
	stateless := mcptasks.NewHandler(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server2026 }, &mcp.StreamableHTTPOptions{Stateless: true}),
		&mcptasks.Options{
			Required: taskRequired,
			// Every client of the fixture is one owner: the suite's scenarios poll
			// their tasks from several connections.
			Owner: func(*http.Request) string { return "conformance" },
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	}))
	return mux
}

// Fixed texts the scenarios name.
const (
	simpleText        = "This is a simple text response for testing."
	errorText         = "This tool intentionally returns an error for testing"
	staticText        = "This is the content of the static text resource."
	embeddedText      = "This is an embedded resource content."
	promptSimpleText  = "This is a simple prompt for testing."
	promptEmbeddedRes = "Embedded resource content for testing."
)

// redPixelPNG is a 1x1 red PNG, encoded once at start.
var redPixelPNG = func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}()

// silentWAV is a tiny valid WAV file: 8 kHz, 16-bit mono, 80 samples (10ms) of silence.
var silentWAV = func() []byte {
	const rate, samples = 8000, 80
	data := make([]byte, samples*2)
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + len(data)))
	b.WriteString("WAVEfmt ")
	le(uint32(16))       // fmt chunk size
	le(uint16(1))        // PCM
	le(uint16(1))        // channels
	le(uint32(rate))     // sample rate
	le(uint32(rate * 2)) // byte rate
	le(uint16(2))        // block align
	le(uint16(16))       // bits per sample
	b.WriteString("data")
	le(uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}()

// noArgs is the input schema of a tool without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// simplePromptDescription is test_simple_prompt's description unless
// -prompt-description gives another.
const simplePromptDescription = "A simple prompt without arguments"

// options are the flags for Warden's own tests (see the package documentation).
type options struct {
	promptDesc  string // test_simple_prompt's description ("" is the default)
	testTools   bool
	noSubscribe bool
	testFiles   bool
	// tasks: the server is the one behind mcptasks.Handler and advertises the
	// tasks extension.
	tasks bool
}

// newServer returns the fixture with the options o.
func newServer(o options) *mcp.Server {
	if o.promptDesc == "" {
		o.promptDesc = simplePromptDescription
	}
	w := &watchers{uris: map[string]map[*mcp.ServerSession]bool{}, log: o.testTools}
	so := &mcp.ServerOptions{
		Instructions:      "Fixture for the MCP conformance suite's server scenarios.",
		CompletionHandler: complete,
		Capabilities: &mcp.ServerCapabilities{
			Logging: &mcp.LoggingCapabilities{},
		},
	}
	if o.testTools {
		so.CompletionHandler = completeWithTemplates
	}
	if o.tasks {
		so.Capabilities.AddExtension(mcptasks.Extension, map[string]any{})
	}
	if !o.noSubscribe {
		// The SDK records each session's subscriptions itself; any URI may be watched.
		so.SubscribeHandler = w.subscribe
		so.UnsubscribeHandler = w.unsubscribe
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "warden-conformance-server", Version: "1.0.0"}, so)
	addTools(s)
	addInputRequiredTools(s)
	addStatelessTools(s)
	addTaskTools(s)
	addResources(s)
	addPrompts(s, o.promptDesc)
	if o.testTools {
		addTestTools(s, w)
	}
	if o.testFiles {
		addTestFiles(s)
	}
	return s
}

// testFiles are the files of -test-files, by cleaned path.
var testFiles = map[string]string{
	"public/readme.txt": "This file is public.",
	"secret/key.txt":    "This file is secret.",
}

// addTestFiles adds the template of -test-files.
func addTestFiles(s *mcp.Server) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "test://files/{+path}",
		Name:        "test-files",
		Description: "Files under a root, by path",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		rel, ok := strings.CutPrefix(uri, "test://files/")
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		decoded, err := url.PathUnescape(rel)
		if err != nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		body, ok := testFiles[strings.TrimPrefix(path.Clean("/"+decoded), "/")]
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: body}}}, nil
	})
}

// watchers records which sessions subscribed to which URIs (the SDK keeps its own
// record but does not show it), for warden_test_update_resource to report.
type watchers struct {
	mu   sync.Mutex
	uris map[string]map[*mcp.ServerSession]bool
	log  bool // write each subscribe and unsubscribe to stderr
}

func (w *watchers) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	uri := req.Params.URI
	if w.uris[uri] == nil {
		w.uris[uri] = map[*mcp.ServerSession]bool{}
	}
	w.uris[uri][req.Session] = true
	if w.log {
		log.Printf("subscribed %s", uri)
	}
	return nil
}

func (w *watchers) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	uri := req.Params.URI
	delete(w.uris[uri], req.Session)
	if len(w.uris[uri]) == 0 {
		delete(w.uris, uri)
	}
	if w.log {
		log.Printf("unsubscribed %s", uri)
	}
	return nil
}

// count returns the number of connected sessions of s subscribed to uri.
func (w *watchers) count(s *mcp.Server, uri string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for ss := range s.Sessions() {
		if w.uris[uri][ss] {
			n++
		}
	}
	return n
}

// addTestTools adds the tools of -test-tools.
func addTestTools(s *mcp.Server, w *watchers) {
	s.AddTool(&mcp.Tool{
		Name:        "warden_test_update_resource",
		Description: "Sends notifications/resources/updated for uri to the sessions subscribed to it and says how many there were",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","description":"The URI of the updated resource"}},"required":["uri"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		uri, err := stringArg(req, "uri")
		if err != nil {
			return toolError(err.Error()), nil
		}
		n := w.count(s, uri)
		if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			return toolError("resources/updated: " + err.Error()), nil
		}
		return text(fmt.Sprintf("updated %s: %d subscribed session(s)", uri, n)), nil
	})
}

func text(t string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
}

func toolError(t string) *mcp.CallToolResult {
	r := text(t)
	r.IsError = true
	return r
}

// stringArg returns the required string argument name of a call.
func stringArg(req *mcp.CallToolRequest, name string) (string, error) {
	var args map[string]any
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return "", fmt.Errorf("arguments: %v", err)
		}
	}
	v, ok := args[name].(string)
	if !ok {
		return "", fmt.Errorf("argument %q (a string) is required", name)
	}
	return v, nil
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func addTools(s *mcp.Server) {
	tool := func(name, desc string, schema any, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	tool("test_simple_text", "Returns a simple text content item", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(simpleText), nil
		})
	tool("test_image_content", "Returns an image content item (a 1x1 red PNG)", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: redPixelPNG, MIMEType: "image/png"}}}, nil
		})
	tool("test_audio_content", "Returns an audio content item (10ms of silence as WAV)", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: silentWAV, MIMEType: "audio/wav"}}}, nil
		})
	tool("test_embedded_resource", "Returns an embedded text resource", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: embeddedText,
			}}}}, nil
		})
	tool("test_multiple_content_types", "Returns text, image and embedded resource content", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "Multiple content types test:"},
				&mcp.ImageContent{Data: redPixelPNG, MIMEType: "image/png"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
				}},
			}}, nil
		})
	tool("test_error_handling", "Always fails with an isError result", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolError(errorText), nil
		})
	tool("test_tool_with_logging", "Sends three info log messages, about 50ms apart, while it runs", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					if err := pause(ctx, 50*time.Millisecond); err != nil {
						return nil, err
					}
				}
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "test_tool_with_logging", Data: msg}); err != nil {
					return nil, err
				}
			}
			return text("Tool with logging executed successfully"), nil
		})
	tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100, about 50ms apart, to the request's progress token", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			for i, p := range []float64{0, 50, 100} {
				if i > 0 {
					if err := pause(ctx, 50*time.Millisecond); err != nil {
						return nil, err
					}
				}
				if token == nil {
					continue
				}
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: p, Total: 100, Message: fmt.Sprintf("%v of 100", p),
				}); err != nil {
					return nil, err
				}
			}
			return text("Tool with progress executed successfully"), nil
		})
	tool("test_sampling", "Asks the client to sample an LLM completion of prompt (sampling/createMessage)",
		json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			prompt, err := stringArg(req, "prompt")
			if err != nil {
				return toolError(err.Error()), nil
			}
			if !clientCan(req.Session, func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil }) {
				return toolError("the client does not support sampling"), nil
			}
			resp, ask := askClient(req, &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
				MaxTokens: 100,
			})
			if ask != nil {
				return ask, nil
			}
			res, ok := resp.(*mcp.CreateMessageWithToolsResult)
			if !ok {
				return toolError(fmt.Sprintf("sampling: unexpected answer %T", resp)), nil
			}
			var replies []string
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					replies = append(replies, t.Text)
				} else {
					replies = append(replies, jsonText(c))
				}
			}
			reply := strings.Join(replies, "\n")
			return text("LLM response: " + reply), nil
		})
	tool("test_elicitation", "Asks the client for a username and email (elicitation/create) showing message",
		json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			message, err := stringArg(req, "message")
			if err != nil {
				return toolError(err.Error()), nil
			}
			res, ask := elicit(req, message, map[string]any{
				"type": "object",
				"properties": map[string]any{
					"username": map[string]any{"type": "string", "description": "User's response"},
					"email":    map[string]any{"type": "string", "description": "User's email address"},
				},
				"required": []string{"username", "email"},
			})
			if ask != nil {
				return ask, nil
			}
			return text(fmt.Sprintf("User response: action=%s, content=%s", res.Action, jsonText(res.Content))), nil
		})
	tool("test_elicitation_sep1034_defaults", "Elicits a form whose string, integer, number, enum and boolean fields have defaults (SEP-1034)", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, ask := elicit(req, "Please review and update the form fields with defaults", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
					"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
					"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
				},
			})
			if ask != nil {
				return ask, nil
			}
			return text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, jsonText(res.Content))), nil
		})
	tool("test_elicitation_sep1330_enums", "Elicits a form with the five enum shapes of SEP-1330", noArgs,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			titled := func(prefix string, titles ...string) []map[string]any {
				var out []map[string]any
				for i, t := range titles {
					out = append(out, map[string]any{"const": fmt.Sprintf("%s%d", prefix, i+1), "title": t})
				}
				return out
			}
			res, ask := elicit(req, "Please select options from the enum fields", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"untitledSingle": map[string]any{"type": "string", "description": "Untitled single-select",
						"enum": []string{"option1", "option2", "option3"}},
					"titledSingle": map[string]any{"type": "string", "description": "Titled single-select",
						"oneOf": titled("value", "First Option", "Second Option", "Third Option")},
					"legacyEnum": map[string]any{"type": "string", "description": "Legacy titled enum (enumNames, deprecated)",
						"enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
					"untitledMulti": map[string]any{"type": "array", "description": "Untitled multi-select",
						"items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
					"titledMulti": map[string]any{"type": "array", "description": "Titled multi-select",
						"items": map[string]any{"anyOf": titled("value", "First Choice", "Second Choice", "Third Choice")}},
				},
			})
			if ask != nil {
				return ask, nil
			}
			return text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, jsonText(res.Content))), nil
		})
	tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"$defs": {
			"address": {
				"type": "object",
				"properties": {"street": {"type": "string"}, "city": {"type": "string"}}
			}
		},
		"properties": {
			"name": {"type": "string"},
			"address": {"$ref": "#/$defs/address"}
		},
		"additionalProperties": false
	}`), func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("Received: " + string(req.Params.Arguments)), nil
	})
	tool("test_reconnection", "Closes its SSE response stream mid-call, then answers; the client gets the answer by resuming the stream (SEP-1699)", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 500 * time.Millisecond})
				// Answer after the stream is gone, so that the answer is only
				// delivered to a client that resumes it.
				if err := pause(ctx, 100*time.Millisecond); err != nil {
					return nil, err
				}
			}
			return text("Reconnection test completed successfully"), nil
		})
}

// clientCan reports whether the client declared a capability, by has. A session
// without initialize parameters (a stateless request) is given the benefit of the
// doubt: the client answers for itself.
func clientCan(ss *mcp.ServerSession, has func(*mcp.ClientCapabilities) bool) bool {
	p := ss.InitializeParams()
	if p == nil {
		return true
	}
	return p.Capabilities != nil && has(p.Capabilities)
}

// askID names the one input request a tool makes.
const askID = "ask"

// askClient asks the client for input the SDK's way for both protocol eras: the
// first invocation returns a result whose InputRequests holds ir (a
// multi-round-trip result, SEP-2322); a client on 2026-07-28 or later fulfils it and
// calls again with the answer in InputResponses, and for an older client the SDK
// sends ir itself as a server-to-client request (sampling/createMessage,
// elicitation/create) and calls the handler again with the answer. So resp is the
// answer, or ask is the result to return for now.
func askClient(req *mcp.CallToolRequest, ir mcp.InputRequest) (resp mcp.InputResponse, ask *mcp.CallToolResult) {
	if r, ok := req.Params.InputResponses[askID]; ok {
		return r, nil
	}
	return nil, &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{askID: ir}}
}

// elicit asks the client (elicitation/create) for a form with message and schema.
func elicit(req *mcp.CallToolRequest, message string, schema map[string]any) (*mcp.ElicitResult, *mcp.CallToolResult) {
	if !clientCan(req.Session, func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil }) {
		return nil, toolError("the client does not support elicitation")
	}
	resp, ask := askClient(req, &mcp.ElicitParams{Message: message, RequestedSchema: schema})
	if ask != nil {
		return nil, ask
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return nil, toolError(fmt.Sprintf("elicitation: unexpected answer %T", resp))
	}
	return res, nil
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func addResources(s *mcp.Server) {
	static := func(uri, name, desc, mime string, contents *mcp.ResourceContents) {
		s.AddResource(&mcp.Resource{URI: uri, Name: name, Description: desc, MIMEType: mime},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{contents}}, nil
			})
	}
	static("test://static-text", "static-text", "A static text resource", "text/plain",
		&mcp.ResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: staticText})
	static("test://static-binary", "static-binary", "A static binary resource (a 1x1 red PNG)", "image/png",
		&mcp.ResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: redPixelPNG})
	static("test://watched-resource", "watched-resource", "A resource clients may subscribe to", "text/plain",
		&mcp.ResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "This resource may be watched for updates."})

	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "test://template/{id}/data",
		Name:        "template-data",
		Description: "Data for the id in the URI",
		MIMEType:    "application/json",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, ok := strings.CutPrefix(uri, "test://template/")
		if ok {
			id, ok = strings.CutSuffix(id, "/data")
		}
		if !ok || id == "" || strings.Contains(id, "/") {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		body, err := json.Marshal(struct {
			ID           string `json:"id"`
			TemplateTest bool   `json:"templateTest"`
			Data         string `json:"data"`
		}{id, true, "Data for ID: " + id})
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
	})
}

func addPrompts(s *mcp.Server, simpleDesc string) {
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: simpleDesc},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: promptSimpleText})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{
		Name:        "test_prompt_with_arguments",
		Description: "A prompt with two required arguments",
		Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])}),
		}}, nil
	})
	s.AddPrompt(&mcp.Prompt{
		Name:        "test_prompt_with_embedded_resource",
		Description: "A prompt that embeds the resource resourceUri",
		Arguments:   []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		uri := req.Params.Arguments["resourceUri"]
		if uri == "" {
			return nil, errors.New(`argument "resourceUri" is required`)
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: promptEmbeddedRes}}),
			user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
		}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image (a 1x1 red PNG)"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: redPixelPNG, MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."}),
			}}, nil
		})
}

// completions are the values offered for the arguments of test_prompt_with_arguments.
var completions = map[string][]string{
	"arg1": {"paris", "park", "party", "test", "testValue1"},
	"arg2": {"world", "wonder", "testValue2"},
}

// complete offers, for a prompt argument, the known values that start with what was
// typed so far; anything else gets no values.
func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	values := []string{}
	p := req.Params
	if p.Ref != nil && p.Ref.Type == "ref/prompt" && p.Ref.Name == "test_prompt_with_arguments" {
		for _, v := range completions[p.Argument.Name] {
			if strings.HasPrefix(v, p.Argument.Value) {
				values = append(values, v)
			}
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}

// ids are the values -test-tools offers for the id of test://template/{id}/data.
var ids = []string{"1", "12", "123", "7"}

// completeWithTemplates is complete that also offers, for the id variable of
// test://template/{id}/data, the ids that start with what was typed so far, and logs
// every request it gets.
func completeWithTemplates(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	if p.Ref != nil {
		log.Printf("completion %s %s%s %s=%s", p.Ref.Type, p.Ref.Name, p.Ref.URI, p.Argument.Name, p.Argument.Value)
	}
	if p.Ref == nil || p.Ref.Type != "ref/resource" || p.Ref.URI != "test://template/{id}/data" || p.Argument.Name != "id" {
		return complete(ctx, req)
	}
	values := []string{}
	for _, v := range ids {
		if strings.HasPrefix(v, p.Argument.Value) {
			values = append(values, v)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}
