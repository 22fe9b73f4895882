// Command faultserver is a real MCP server over stdio, built with the official Go SDK,
// whose misbehaviour is chosen by flags. The mcp package's tests start it as a child
// process to exercise the gateway's client side against crashes, hangs, bad tool
// definitions and notification floods. It writes only MCP messages to stdout and logs
// to stderr.
//
// Modes (-mode):
//
//	ok            tools echo {text}, fail {text} (an isError result), crash (exits 3
//	              mid-call), hang (never returns), slow {ms} (sleeps, then reports its
//	              pid and start/end times), pid, getenv {name}, progress {n, ms, stray,
//	              late} (sends n progress notifications with the request's token, ms
//	              apart; stray adds, before them, two with other tokens; stray_after
//	              adds one with another token after them; late sends one more 100ms
//	              after the answer; answers "sent <n>", or "no progress token" when
//	              the request had none)
//	badschemas    the ok tools, plus tools listed with a missing input schema, a
//	              non-object schema, a schema that does not compile and a bad name
//	changing      the ok tools; echo's description is read from -descfile on every
//	              tools/list; poke sends one tools/list_changed, flood {n} sends n
//	              and answers after the client has answered a ping sent after them;
//	              setdesc {text, wait_for} makes echo's description text in this
//	              process only, sends one tools/list_changed, then (with wait_for)
//	              answers only once the file wait_for exists, and returns its pid
//	die-on-start  exits with code 2 before reading anything
//	garbage       a hand-written JSON-RPC server (not the SDK) that answers initialize
//	              and tools/list correctly enough, and answers tools/call of "junk"
//	              {what} with malformed data: what is nullcontent, badtype, notjson,
//	              wrongid, badobject, badresult, hugeline, request or notify; tool
//	              "ok" answers normally
//
// Other flags: -marker appends "<pid>\n" to a file when the process starts (before
// anything else), -pagesize sets the tools/list page size, -no-pong never answers a
// ping (an SDK-based mode only), -fail-if-exists FILE exits with code 2 at start while
// FILE exists, -ask-after-cancel adds the tool askafter (logs "askafter: waiting for
// the cancel", and once its call is cancelled sends elicitation/create on the same
// session and logs "askafter: elicitation after the cancel: " and the answer or the
// error), -roots adds the tool roots {mark, wait_for} (creates the file mark when
// set, waits up to a minute for the file wait_for when set, then asks its client for
// its roots: by roots/list on the session-based protocol line, by an input_required
// round with the input request "roots" from 2026-07-28 on; answers "protocol=<v>
// declared=<whether the client declared roots> roots=<uri> (<name>), ...", or an
// error result "protocol=<v> declared=<d> roots/list failed: <error>"; with forever,
// from 2026-07-28 on, it asks again in every round, however answered). slow logs
// "slow: cancelled" when its call is cancelled. -wire-dump DIR
// remembers the ids and methods of the last 4096 messages received and sent and, on
// every SIGUSR1, writes them to DIR/faultserver-<pid>.wire.txt, marking each call
// received that no response was sent to. Stdin is read non-blocking, through the
// runtime's poller; -blocking-stdin reads it as mcp.StdioTransport does, with
// blocking reads, which exposes a Go 1.26 runtime stall (see stdio.go).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

//lint:file-ignore SA1019 the roots tool asks for roots, deprecated from protocol 2026-07-28 on, which the gateway routes for the session-based versions

func main() {
	mode := flag.String("mode", "ok", "behaviour: ok, badschemas, changing, die-on-start")
	marker := flag.String("marker", "", "file to which the pid is appended at start")
	descFile := flag.String("descfile", "", "file holding echo's description (mode changing)")
	pageSize := flag.Int("pagesize", 0, "tools/list page size (0: the SDK default)")
	noPong := flag.Bool("no-pong", false, "never answer a ping")
	failIfExists := flag.String("fail-if-exists", "", "exit with code 2 at start while this file exists")
	refuseListings := flag.Bool("refuse-listings", false, "serve one prompt and one resource but answer prompts/list and resources/templates/list with a JSON-RPC error")
	askAfterCancel := flag.Bool("ask-after-cancel", false, "add the tool askafter, which elicits once its call is cancelled")
	roots := flag.Bool("roots", false, "add the tool roots, which asks its client for its roots and lists them")
	wireDump := flag.String("wire-dump", "", "remember the ids of the last messages received and sent, and write them to faultserver-<pid>.wire.txt in this directory on SIGUSR1")
	blockingStdin := flag.Bool("blocking-stdin", false, "read stdin with blocking reads, as mcp.StdioTransport does (exposes the Go 1.26 stop-the-world stall, see internal/repro/stwsyscall)")
	flag.Parse()

	log.SetOutput(os.Stderr)
	log.SetFlags(0)
	log.SetPrefix("faultserver: ")

	if *marker != "" {
		f, err := os.OpenFile(*marker, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			log.Fatalf("marker: %v", err)
		}
		fmt.Fprintf(f, "%d\n", os.Getpid())
		f.Close()
	}
	log.Printf("starting mode=%s pid=%d", *mode, os.Getpid())
	if *failIfExists != "" {
		if _, err := os.Stat(*failIfExists); err == nil {
			log.Printf("%s exists: failing to start", *failIfExists)
			os.Exit(2)
		}
	}

	switch *mode {
	case "ok", "badschemas", "changing":
	case "die-on-start":
		log.Printf("dying on start")
		os.Exit(2)
	case "garbage":
		runGarbage()
		log.Printf("exiting")
		return
	default:
		log.Fatalf("unknown mode %q", *mode)
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "faultserver", Version: "0.0.1"}, &mcp.ServerOptions{PageSize: *pageSize})
	tr := &injectingTransport{wireDump: *wireDump, blockingStdin: *blockingStdin}
	addOKTools(srv)
	if *refuseListings {
		addRefusedListings(srv)
	}
	if *askAfterCancel {
		addAskAfter(srv)
	}
	if *roots {
		addRoots(srv)
	}
	if *noPong {
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "ping" {
					log.Printf("not answering a ping")
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
	}

	switch *mode {
	case "badschemas":
		srv.AddReceivingMiddleware(appendBadTools)
	case "changing":
		override := &descOverride{}
		srv.AddReceivingMiddleware(describeFromFile(*descFile, override))
		type setdescIn struct {
			Text    string `json:"text"`
			WaitFor string `json:"wait_for,omitempty"`
		}
		mcp.AddTool(srv, &mcp.Tool{Name: "setdesc", Description: "Changes echo's description in this process and sends tools/list_changed."},
			func(ctx context.Context, _ *mcp.CallToolRequest, in setdescIn) (*mcp.CallToolResult, any, error) {
				override.set(in.Text)
				if err := tr.notifyListChanged(ctx, 1); err != nil {
					return nil, nil, err
				}
				for in.WaitFor != "" {
					if _, err := os.Stat(in.WaitFor); err == nil {
						break
					}
					select {
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					case <-time.After(5 * time.Millisecond):
					}
				}
				return text(fmt.Sprint(os.Getpid())), nil, nil
			})
		mcp.AddTool(srv, &mcp.Tool{Name: "poke", Description: "Sends one tools/list_changed notification."},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				if err := tr.notifyListChanged(ctx, 1); err != nil {
					return nil, nil, err
				}
				return text("poked"), nil, nil
			})
		type floodIn struct {
			N int `json:"n"`
		}
		mcp.AddTool(srv, &mcp.Tool{Name: "flood", Description: "Sends n tools/list_changed notifications, then answers once the client has handled them."},
			func(ctx context.Context, req *mcp.CallToolRequest, in floodIn) (*mcp.CallToolResult, any, error) {
				if err := tr.notifyListChanged(ctx, in.N); err != nil {
					return nil, nil, err
				}
				// A client handles what it reads in order, so its answer to this ping
				// means it has handled every notification sent before: when the call
				// returns, the flood is over on the client's side too.
				if err := req.Session.Ping(ctx, nil); err != nil {
					return nil, nil, err
				}
				return text(fmt.Sprintf("sent %d", in.N)), nil, nil
			})
	}

	if err := srv.Run(context.Background(), tr); err != nil {
		log.Printf("run: %v", err)
	}
	log.Printf("exiting")
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

type textIn struct {
	Text string `json:"text"`
}

func addOKTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Returns an error result holding its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			r := text(in.Text)
			r.IsError = true
			return r, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exits the process with code 3 mid-call."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			log.Printf("crashing")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "hang", Description: "Never returns, even when cancelled."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			log.Printf("hanging")
			select {}
		})
	type slowIn struct {
		MS int `json:"ms"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Sleeps ms milliseconds; reports pid, start and end (unix ns)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			start := time.Now()
			if in.MS >= 1000 {
				log.Printf("slow: sleeping %dms", in.MS) // tests wait for it before cancelling
			}
			select {
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			case <-ctx.Done():
				log.Printf("slow: cancelled after %s", time.Since(start).Round(time.Millisecond))
				return nil, nil, ctx.Err()
			}
			return text(fmt.Sprintf("%d %d %d", os.Getpid(), start.UnixNano(), time.Now().UnixNano())), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "pid", Description: "Returns the server's process id."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(os.Getpid())), nil, nil
		})
	type progressIn struct {
		N     int  `json:"n"`
		MS    int  `json:"ms,omitempty"`
		Stray bool `json:"stray,omitempty"`
		Late  bool `json:"late,omitempty"`
		// StrayAfter sends, after the n, one more with another token: handled by the
		// client only after the n were (a client handles what it reads in order).
		StrayAfter bool `json:"stray_after,omitempty"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "progress", Description: "Sends n progress notifications with the request's progress token, then returns."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			if token == nil {
				return text("no progress token"), nil, nil
			}
			notify := func(ctx context.Context, token any, i int) error {
				return req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      float64(i),
					Total:         float64(in.N),
					Message:       fmt.Sprintf("step %d of %d", i, in.N),
				})
			}
			if in.Stray {
				for _, other := range []any{"stray-token", 424242} {
					if err := notify(ctx, other, 0); err != nil {
						return nil, nil, err
					}
				}
			}
			for i := 1; i <= in.N; i++ {
				if i > 1 && in.MS > 0 {
					select {
					case <-time.After(time.Duration(in.MS) * time.Millisecond):
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					}
				}
				if err := notify(ctx, token, i); err != nil {
					return nil, nil, err
				}
			}
			if in.StrayAfter {
				if err := notify(ctx, "stray-token", in.N+1); err != nil {
					return nil, nil, err
				}
			}
			if in.Late {
				go func() {
					// Deliberately late, on the server's own clock: a server that sends
					// progress after its answer. The tests observe the notification being
					// dropped (a log line), never this delay.
					time.Sleep(100 * time.Millisecond)
					if err := notify(context.Background(), token, in.N+1); err != nil {
						log.Printf("late progress notification: %v", err)
					}
				}()
			}
			return text(fmt.Sprintf("sent %d", in.N)), nil, nil
		})
	type envIn struct {
		Name string `json:"name"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "getenv", Description: "Returns the value of an environment variable and whether it is set."},
		func(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			return text(fmt.Sprintf("%t %s", ok, v)), nil, nil
		})
}

// appendBadTools adds, to the last page of tools/list, tools the SDK would refuse to
// register: they reach the client exactly as written here.
func appendBadTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "tools/list" {
			return res, err
		}
		lr, ok := res.(*mcp.ListToolsResult)
		if !ok || lr.NextCursor != "" {
			return res, err
		}
		out := *lr
		out.Tools = append(append([]*mcp.Tool(nil), lr.Tools...),
			&mcp.Tool{Name: "noschema", Description: "No input schema."},
			&mcp.Tool{Name: "stringschema", InputSchema: json.RawMessage(`{"type":"string"}`)},
			&mcp.Tool{Name: "badref", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/nope"}}}`)},
			&mcp.Tool{Name: "bad name", InputSchema: json.RawMessage(`{"type":"object"}`)},
			&mcp.Tool{Name: "twice", InputSchema: json.RawMessage(`{"type":"object"}`)},
			&mcp.Tool{Name: "twice", Description: "same name again", InputSchema: json.RawMessage(`{"type":"object"}`)},
		)
		return &out, nil
	}
}

// descOverride is a description of echo set in this process by setdesc.
type descOverride struct {
	mu   sync.Mutex
	text string
}

func (o *descOverride) set(s string) {
	o.mu.Lock()
	o.text = s
	o.mu.Unlock()
}

func (o *descOverride) get() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.text
}

// describeFromFile sets echo's description, in every tools/list answer, to the
// content of path as it is now (or to the process's override, once setdesc set one).
func describeFromFile(path string, override *descOverride) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || method != "tools/list" {
				return res, err
			}
			lr, ok := res.(*mcp.ListToolsResult)
			if !ok {
				return res, err
			}
			desc := "Returns its text."
			if o := override.get(); o != "" {
				desc = o
			} else if path != "" {
				b, rerr := os.ReadFile(path)
				if rerr != nil {
					return nil, rerr
				}
				desc = strings.TrimSpace(string(b))
			}
			out := *lr
			out.Tools = make([]*mcp.Tool, len(lr.Tools))
			for i, t := range lr.Tools {
				c := *t // never modify the server's own tool
				if c.Name == "echo" {
					c.Description = desc
				}
				out.Tools[i] = &c
			}
			return &out, nil
		}
	}
}

// injectingTransport is the stdio transport, keeping its connection so that raw
// notifications can be written to the client outside the SDK's debouncing.
type injectingTransport struct {
	wireDump      string // see wireConn
	blockingStdin bool   // see stdioTransport

	mu   sync.Mutex
	conn mcp.Connection
}

func (t *injectingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	base, err := stdioTransport(t.blockingStdin)
	if err != nil {
		return nil, err
	}
	c, err := base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if t.wireDump != "" {
		wc := &wireConn{Connection: c}
		wc.dumpOnSignal(t.wireDump)
		c = wc
	}
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return c, nil
}

func (t *injectingTransport) notifyListChanged(ctx context.Context, n int) error {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return fmt.Errorf("not connected")
	}
	for range n {
		msg := &jsonrpc.Request{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)}
		if err := c.Write(ctx, msg); err != nil {
			return err
		}
	}
	return nil
}

// runGarbage serves newline-delimited JSON-RPC by hand, so it can send what the SDK
// would never produce.
func runGarbage() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(line string) {
		out.WriteString(line)
		out.WriteByte('\n')
		out.Flush()
	}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
				Arguments       struct {
					What string `json:"what"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			log.Printf("unreadable request: %v", err)
			continue
		}
		if len(req.ID) == 0 {
			continue // a notification
		}
		id := string(req.ID)
		result := func(v string) { send(`{"jsonrpc":"2.0","id":` + id + `,"result":` + v + `}`) }
		switch req.Method {
		case "initialize":
			result(`{"protocolVersion":"` + req.Params.ProtocolVersion + `","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"garbage","version":"0"}}`)
		case "ping":
			result(`{}`)
		case "tools/list":
			result(`{"tools":[null,
				{"name":"ok","inputSchema":{"type":"object"}},
				{"name":"junk","inputSchema":{"type":"object","properties":{"what":{"type":"string"}}}},
				{"name":"headers","inputSchema":{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}},
				{"name":"arrayschema","inputSchema":[1,2]}]}`)
		case "tools/call":
			if req.Params.Name == "ok" {
				result(`{"content":[{"type":"text","text":"fine"}]}`)
				continue
			}
			switch req.Params.Arguments.What {
			case "nullcontent":
				result(`{"content":[null]}`)
			case "badtype":
				result(`{"content":[{"type":"bogus","text":1}]}`)
			case "notjson":
				send(`}{ this is not json`)
			case "wrongid":
				send(`{"jsonrpc":"2.0","id":987654,"result":{"content":[]}}`)
			case "badobject":
				send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":"x","message":7}}`)
			case "badresult":
				result(`[1,2,3]`)
			case "hugeline":
				result(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 12<<20) + `"}]}`)
			case "request":
				send(`{"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`)
				send(`{"jsonrpc":"2.0","id":"srv-2","method":"roots/list","params":{}}`)
				send(`{"jsonrpc":"2.0","id":"srv-3","method":"elicitation/create","params":{"message":"hi","requestedSchema":{"type":"object"}}}`)
				result(`{"content":[{"type":"text","text":"after requests"}]}`)
			case "notify":
				send(`{"jsonrpc":"2.0","method":"notifications/progress","params":5}`)
				send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"nonsense","data":null}}`)
				send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":"x"}`)
				send(`{"jsonrpc":"2.0","method":"no/such/method"}`)
				result(`{"content":[{"type":"text","text":"after notifications"}]}`)
			default:
				send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"unknown junk"}}`)
			}
		default:
			send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
}

// addRefusedListings serves one prompt and one resource, so that the server
// declares both, and refuses prompts/list and resources/templates/list with a
// JSON-RPC error (a server that declares what it cannot list).
func addRefusedListings(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "A prompt that cannot be listed"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "fault://listed", Name: "listed", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "listed contents"}}}, nil
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "prompts/list" || method == "resources/templates/list" {
				log.Printf("refusing %s", method)
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + " is broken here"}
			}
			return next(ctx, method, req)
		}
	})
}

// addAskAfter adds askafter: it waits for its call to be cancelled, then asks the
// client for input on the session anyway (as a server that ignores the cancel
// would), and logs what the client answered.
func addAskAfter(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "askafter", Description: "Once cancelled, sends elicitation/create and logs the answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			log.Printf("askafter: waiting for the cancel")
			<-ctx.Done()
			actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := req.Session.Elicit(actx, &mcp.ElicitParams{
				Message:         "asked after the cancel",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			})
			if err != nil {
				log.Printf("askafter: elicitation after the cancel: error: %v", err)
			} else {
				log.Printf("askafter: elicitation after the cancel: answered %s", res.Action)
			}
			return nil, nil, ctx.Err()
		})
}

// addRoots adds roots (see the package comment).
func addRoots(srv *mcp.Server) {
	srv.AddTool(&mcp.Tool{
		Name:        "roots",
		Description: "Asks the client for its roots and lists them.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"mark":     map[string]any{"type": "string"},
			"wait_for": map[string]any{"type": "string"},
			"forever":  map[string]any{"type": "boolean"},
		}},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Mark    string `json:"mark"`
			WaitFor string `json:"wait_for"`
			Forever bool   `json:"forever"`
		}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
		}
		proto := req.ProtocolVersion()
		caps := req.ClientCapabilities()
		head := fmt.Sprintf("protocol=%s declared=%t", proto, caps != nil && caps.RootsV2 != nil)
		if r, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult); ok && !in.Forever {
			return text(head + " roots=" + rootsList(r)), nil
		}
		if in.Mark != "" {
			if err := os.WriteFile(in.Mark, nil, 0o600); err != nil {
				return nil, err
			}
		}
		if in.WaitFor != "" {
			deadline := time.Now().Add(time.Minute)
			for {
				if _, err := os.Stat(in.WaitFor); err == nil {
					break
				}
				if time.Now().After(deadline) {
					return toolErr(head + " the file " + in.WaitFor + " did not appear within a minute"), nil
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		if proto >= "2026-07-28" {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil
		}
		r, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return toolErr(fmt.Sprintf("%s roots/list failed: %v", head, err)), nil
		}
		return text(head + " roots=" + rootsList(r)), nil
	})
}

func toolErr(s string) *mcp.CallToolResult {
	r := text(s)
	r.IsError = true
	return r
}

// rootsList is the roots of r as "<uri> (<name>)", comma-separated.
func rootsList(r *mcp.ListRootsResult) string {
	var parts []string
	for _, root := range r.Roots {
		if root != nil {
			parts = append(parts, fmt.Sprintf("%s (%s)", root.URI, root.Name))
		}
	}
	return strings.Join(parts, ", ")
}
