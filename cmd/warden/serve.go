package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/store"
)

type serveOptions struct {
	config string
	stdio  bool
	// watch is how often the config and the files it names are checked for changes;
	// 0 turns the check off (only SIGHUP reloads).
	watch time.Duration
	// logFormat is "text" or "json"; logLevel is one of debug, info, warn, error.
	logFormat, logLevel string
}

func newServeCommand(stdout, stderr io.Writer, proc *process) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve -c gateway.yaml",
		Short: "Run the MCP gateway: upstream servers' tools, governed, over HTTP and/or stdio",
		Long: `Run the MCP gateway.

Upstream MCP servers named in the config are admitted by the transport policy,
their tools are discovered and pinned, and every call from an MCP client runs
through the policy, human approvals and the audit log.

The HTTP front (listen:) authenticates clients with bearer tokens and serves the
web inbox. With --stdio the gateway instead speaks MCP on stdin/stdout as the
config's stdio identity, for a client that starts it as a subprocess (no HTTP
front, so several such copies can run beside a shared HTTP gateway; they share
its store, so operators decide their approvals in the same inbox); logs go to
stderr only, and the process ends when the client closes stdin.

SIGHUP, or a change to the config or policy file, reloads both: the new revision
applies to new calls; a bad file keeps the old revision and the log says why. The
files are compared by content every --watch interval (1s; 0 turns that off), with
each file hashed before it is read, so an edit saved during a reload is applied by
the next one. Operator changes take effect on the reload: a removed operator, or one
whose token changed, is signed out of the inbox at once and the old token is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := newServeProgram(o, cmd.InOrStdin(), stdout, stderr, proc)
			return execute(cmd.Context(), p, err)
		},
	}
	cmd.Flags().StringVarP(&o.config, "config", "c", "", "the gateway config file")
	cmd.Flags().BoolVar(&o.stdio, "stdio", false, "serve MCP on stdin/stdout only (as the config's stdio identity), not HTTP")
	cmd.Flags().DurationVar(&o.watch, "watch", time.Second, "how often the config and policy files are checked for changes (0: only SIGHUP reloads)")
	cmd.Flags().StringVar(&o.logFormat, "log-format", "text", "the log's format on stderr: text (key=value lines) or json (one JSON object per line)")
	cmd.Flags().StringVar(&o.logLevel, "log-level", "info", "the least severe log records written: debug, info, warn or error")
	cmd.AddCommand(&cobra.Command{
		Use:   "hash-token",
		Short: "Print the token_sha256 value for a token read from stdin",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return internalError(err)
			}
			tok := strings.TrimRight(line, "\r\n")
			if len(tok) < 16 {
				return usageErrorf("the token on stdin is %d characters; use a random token of at least 16 (e.g. openssl rand -hex 32)", len(tok))
			}
			fmt.Fprintln(stdout, inbox.HashToken(tok))
			return nil
		},
	})
	return cmd
}

// serveProgram is one run of the gateway, built from the flags. It changes nothing
// process-wide itself: what only a process may change (the GC setting, SIGHUP, what a
// second SIGINT does) it asks of proc, which in-process tests leave nil.
type serveProgram struct {
	noResources // Run closes everything it opened before it returns
	o           serveOptions
	stdin       io.Reader
	stdout      io.Writer
	stderr      io.Writer
	proc        *process
}

// newServeProgram checks the flags; nothing is read or started until Run.
func newServeProgram(o serveOptions, stdin io.Reader, stdout, stderr io.Writer, proc *process) (*serveProgram, error) {
	if o.config == "" {
		return nil, usageErrorf("name the gateway config with -c FILE (see examples/gateway/gateway.yaml)")
	}
	if o.watch < 0 {
		return nil, usageErrorf("--watch %s: give a positive interval, or 0 to reload on SIGHUP only", o.watch)
	}
	if _, err := newLogger(io.Discard, o.logFormat, o.logLevel); err != nil {
		return nil, err
	}
	if proc == nil {
		proc = &process{}
	}
	return &serveProgram{o: o, stdin: stdin, stdout: stdout, stderr: stderr, proc: proc}, nil
}

// Run serves until ctx ends (main cancels it on SIGINT and SIGTERM), the stdio client
// goes away or a front fails, then shuts down: calls in flight finish, for at most 30
// seconds. Everything it opened is closed when it returns.
func (p *serveProgram) Run(ctx context.Context) error {
	o, stdin, stdout, stderr := p.o, p.stdin, p.stdout, p.stderr
	p.proc.tuneForServe()
	// Every file is hashed before it is read, so that an edit made while the gateway
	// starts (discovery can take a while) is reloaded rather than missed.
	watch := &configWatch{config: o.config, stdioOnly: o.stdio}
	cfg, err := watch.load(nil)
	if err != nil {
		return configError(err)
	}
	if cfg.Listen == "" && !o.stdio {
		return usageErrorf("%s sets no listen address: add `listen: 127.0.0.1:8080`, or pass --stdio", o.config)
	}
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	// SIGHUP reloads; catch it before anything can see the gateway up (its default
	// action would end the process).
	hup, stopHUP := p.proc.reloads()
	defer stopHUP()

	st, err := store.Open(ctx, cfg.Store)
	if err != nil {
		return configError(fmt.Errorf("%s: opening the store %s: %w", cfg.File, redactDSN(cfg.Store), err))
	}
	defer st.Close()
	traces, err := startTraces(ctx, cfg, log)
	if err != nil {
		return configError(err)
	}
	defer stopTraces(ctx, traces, log) // after gw.Close: the last calls' spans are sent
	var sinks []warden.Sink
	if traces != nil {
		sinks = append(sinks, traces.Sink())
	}
	gw, err := gateway.New(cfg, &gateway.Options{Store: st, Logger: log, Version: version(), Sinks: sinks})
	if err == nil {
		if err = gw.Start(ctx); err != nil {
			gw.Close(context.Background())
		}
	}
	if err != nil {
		return configError(err)
	}

	// The metrics listener is opened first, so that a port it cannot have stops the
	// start before any client is served. Not with --stdio: copies sharing the config
	// would compete for the port.
	var mln net.Listener
	if cfg.MetricsListen != "" && !o.stdio {
		if mln, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			gw.Close(context.Background())
			return configError(fmt.Errorf("%s: metrics.listen %s: %w (pick a free address for metrics.listen, or remove the metrics section)", cfg.File, cfg.MetricsListen, err))
		}
		defer mln.Close() // on an early return; the metrics server closes it too
	} else if cfg.MetricsListen != "" {
		log.Info("metrics.listen is not opened with --stdio", "address", cfg.MetricsListen)
	}

	var srv *http.Server
	var ib *inbox.Inbox
	var requests requestCounter
	serveErr := make(chan error, 3)
	if cfg.Listen != "" && !o.stdio {
		mux := http.NewServeMux()
		mux.Handle(cfg.Path, gw.MCPHandler())
		prm := gw.ProtectedResourceHandler()
		mux.Handle("/.well-known/oauth-protected-resource", prm)
		mux.Handle("/.well-known/oauth-protected-resource/", prm)
		health := gw.HealthHandler()
		mux.Handle("/healthz", health)
		mux.Handle("/readyz", health)
		if len(cfg.Operators) > 0 {
			ib, err = inbox.New(st, inboxOperators(cfg), &inbox.Options{Path: cfg.UIPath, Events: gw.Events().ForCall, Logger: log, TrustedProxies: cfg.TrustedProxies})
			if err != nil {
				gw.Close(context.Background())
				return configError(fmt.Errorf("%s: web inbox: %w", cfg.File, err))
			}
			mux.Handle(cfg.UIPath, ib)
		}
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			gw.Close(context.Background())
			return configError(fmt.Errorf("%s: listen %s: %w", cfg.File, cfg.Listen, err))
		}
		srv = &http.Server{Handler: requests.wrap(mux), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		log.Info("warden gateway listening", "mcp", "http://"+ln.Addr().String()+cfg.Path, "inbox", inboxURL(ln, cfg, ib != nil))
		go func() { serveErr <- srv.Serve(ln) }()
	}
	var msrv *http.Server
	if mln != nil {
		msrv = metricsServer(gw, log)
		log.Info("warden metrics listening", "url", "http://"+mln.Addr().String()+"/metrics")
		go func() { serveErr <- msrv.Serve(mln) }()
	}
	if o.stdio {
		go func() {
			// Not the signal context: on SIGTERM, calls in flight finish (gw.Shutdown waits
			// for them) and the process then exits.
			err := gw.ServeStdio(context.WithoutCancel(ctx), &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
			if err == nil || errors.Is(err, io.EOF) {
				err = errStdioClosed
			}
			serveErr <- err
		}()
	}

	var ticks <-chan time.Time
	if o.watch > 0 {
		tick := time.NewTicker(o.watch)
		defer tick.Stop()
		ticks = tick.C
	}

	applyInbox := func(next *gateway.File) { applyOperators(ib, next, log) }
	goRunEnded := p.proc.goRunEnded()
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-goRunEnded:
			log.Info("the go run that started warden has ended: stopping as on SIGTERM")
			break loop
		case <-hup:
			reloadGateway(ctx, gw, watch, log, "SIGHUP", applyInbox)
		case <-ticks:
			if watch.changed() {
				reloadGateway(ctx, gw, watch, log, "file change", applyInbox)
			}
		case err := <-serveErr:
			if !errors.Is(err, errStdioClosed) {
				runErr = internalError(err)
			}
			break loop
		}
	}
	// From here a second SIGTERM or Ctrl-C ends the process at once.
	p.proc.shuttingDown()
	log.Info("shutting down: finishing calls in flight")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if srv != nil {
		// Stop accepting connections and wait for the requests that carry calls.
		// GETs are not waited for: a session's standalone SSE stream and the inbox's
		// event stream never end by themselves and would hold srv.Shutdown until the
		// deadline, so they are cut once the calls are answered.
		httpDone := make(chan struct{})
		go func() { srv.Shutdown(sctx); close(httpDone) }()
		if ib != nil {
			ib.Close()
		}
		requests.drain(sctx)
		select {
		case <-httpDone:
		case <-time.After(responseGrace):
		case <-sctx.Done():
		}
		srv.Close()
		<-httpDone
	}
	if err := gw.Close(sctx); err != nil {
		log.Warn("shutdown", "error", err)
	}
	if msrv != nil {
		// Last, so the gateway can be watched until it has stopped.
		if err := msrv.Shutdown(sctx); err != nil {
			msrv.Close()
		}
	}
	return runErr
}

// metricsServer serves the gateway's metrics at /metrics and nothing else.
func metricsServer(gw *gateway.Gateway, log *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", gw.MetricsHandler())
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// inboxOperators returns the operators of cfg as the inbox takes them.
func inboxOperators(cfg *gateway.File) []inbox.Operator {
	ops := make([]inbox.Operator, len(cfg.Operators))
	for i, op := range cfg.Operators {
		ops[i] = inbox.Operator{Name: op.Name, TokenHash: op.TokenHash}
	}
	return ops
}

// responseGrace is how long a shutting-down gateway lets the last responses be
// written before it closes the connections left (streams).
const responseGrace = time.Second

// requestCounter counts the HTTP requests in flight other than GETs: MCP messages
// (tool calls among them) and operators' decisions.
type requestCounter struct{ n atomic.Int64 }

func (c *requestCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			c.n.Add(1)
			defer c.n.Add(-1)
		}
		h.ServeHTTP(w, r)
	})
}

// drain waits until no counted request is in flight, or ctx ends.
func (c *requestCounter) drain(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for c.n.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

var errStdioClosed = errors.New("stdio client disconnected")

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func inboxURL(ln net.Listener, cfg *gateway.File, on bool) string {
	if !on {
		return "off (no operators configured)"
	}
	return "http://" + ln.Addr().String() + cfg.UIPath
}

// version is the module version the binary was built from ("dev" for a work tree).
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// applyOperators puts the operators of a reloaded config (nil: the reload was refused,
// nothing changes) into effect at once: a removed operator, or one whose token changed,
// is signed out and refused from here on. SetOperators fails closed on a list it cannot
// accept (nobody signs in), which the config decoder already refuses.
func applyOperators(ib *inbox.Inbox, next *gateway.File, log *slog.Logger) {
	switch {
	case next == nil:
	case ib != nil:
		if err := ib.SetOperators(inboxOperators(next)); err != nil {
			log.Error("web inbox: the new operators are not valid; nobody can sign in until the config is fixed", "error", err)
		}
	case len(next.Operators) > 0:
		log.Warn("web inbox: operators were added, but the inbox was off at start; it starts after a restart")
	}
}

// newLogger returns the gateway's logger on w, in format ("text" or "json", the
// flag --log-format; "" is text) writing records at level and above ("debug",
// "info", "warn" or "error", the flag --log-level; "" is info). Any other value is
// a usage error that names the flag and the values it takes.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	switch level {
	case "debug":
		lv = slog.LevelDebug
	case "info", "":
		lv = slog.LevelInfo
	case "warn":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, usageErrorf("--log-format %q: want text or json", format)
	}
}
