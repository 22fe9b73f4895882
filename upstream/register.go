// Loading MCP tools into a registry for an agent or any other library use (ADR D3, D5):
// servers are admitted by the transport policy, discovered, and their tools registered
// next to the built-in ones, before the registry's one Bind.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/pin"
)

// DefaultCallTimeout is the bound on one upstream call that a gateway file without
// limits.call_timeout gets, and the one warden run passes as
// [ToolsOptions.CallTimeout].
const DefaultCallTimeout = 2 * time.Minute

// ToolsConfig names the MCP servers whose tools [RegisterTools] registers, and what
// admits them. The zero value registers nothing: no server, and a transport policy
// that denies every command and URL.
type ToolsConfig struct {
	// Servers are the servers to admit and discover, in the order their tools are
	// registered.
	Servers []ServerConfig
	// ProjectFile names a project file of server definitions (".mcp.json", see
	// [LoadProjectServers]). It is read only when TrustProjectSettings is set; its
	// servers come after Servers.
	ProjectFile string
	// TrustProjectSettings (the ADR's trust_project_settings) lets ProjectFile be
	// read. Trusting the file is not admitting its servers: each still goes through
	// Transport. Without it the file is not even opened, and [Tools.Problems] says so.
	TrustProjectSettings bool
	// Transport admits each server before anything is started or connected to (the
	// ADR's mcp_security). The zero value denies every command and every URL.
	Transport TransportPolicy
}

// ToolsOptions are the optional settings of [RegisterTools]; nil means the zero value.
type ToolsOptions struct {
	// Pins stores the tool definition pins. Nil means a new [pin.Memory]: the first
	// definition seen in this process is trusted, and a change while it runs
	// quarantines the tool. Give a [store.Store] to notice changes across runs.
	Pins pin.Store
	// Sink receives transport denials and definition changes; may be nil.
	Sink warden.Sink
	// Logger receives operational logs, the children's stderr included; nil discards.
	Logger *slog.Logger
	// CallTimeout bounds one upstream call; 0 means only the call's context does.
	CallTimeout time.Duration
}

// Tools are the upstream servers whose tools [RegisterTools] registered. Close stops
// them (every child process): call it once the Guard bound over their tools is no
// longer used. Tools is safe for concurrent use.
type Tools struct {
	ups      []*Server
	names    []string
	problems []error

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{} // closed when closeErr is set
}

// Names returns the names of the tools registered, in registration order.
func (t *Tools) Names() []string { return slices.Clone(t.names) }

// Problems returns what was not registered, and why, one error per server or tool,
// each naming the server: a server the transport policy denied (wrapping its
// *[DeniedError]) or whose discovery failed registers nothing; a tool refused at
// discovery (see [ToolProblem]), a quarantined tool (wrapping its *[pin.QuarantinedError]),
// or a tool whose name the registry already holds is left out. A project file not
// read because it is not trusted is reported too (wrapping [ErrUntrustedProjectFile]).
func (t *Tools) Problems() []error { return slices.Clone(t.problems) }

// Close stops every upstream server: child processes are ended, connections closed.
// A call of a registered tool afterwards fails unsent. It is safe to call more than
// once; later calls return the first call's result. Close waits until ctx ends; then
// every server process still running is sent SIGKILL with its process group, Close
// returns an error wrapping ctx.Err() and the servers are reaped in the background.
func (t *Tools) Close(ctx context.Context) error {
	t.closeOnce.Do(func() {
		t.closed = make(chan struct{})
		go func() { t.closeErr = closeAll(t.ups); close(t.closed) }()
	})
	select {
	case <-t.closed:
		return t.closeErr
	case <-ctx.Done():
		for _, u := range t.ups {
			u.killLive()
		}
		return fmt.Errorf("closing the MCP servers: %w", ctx.Err())
	}
}

func closeAll(ups []*Server) error {
	errs := make([]error, len(ups))
	var wg sync.WaitGroup
	for i, u := range ups {
		wg.Go(func() { errs[i] = u.Close(context.Background()) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RegisterTools admits, discovers and registers into reg the tools of the servers cfg
// names, so that the registry's one Bind covers them with the built-in tools: register
// the built-in tools, call RegisterTools, then Bind (ADR D3: "load and register MCP
// tools under MCPSecurityConfig", then "snapshot the registry", then bind). The Guard
// bound afterwards governs a discovered tool like any other: a deny_all policy denies
// it, and its rules use its governed name ("mcp__<server>__<tool>" by default).
//
// For each server, in order (ADR D5):
//
//   - the transport policy admits it or not, before any process starts or connection
//     opens. A denial registers nothing of that server: it is reported in
//     [Tools.Problems] with the policy's exact message, and the
//     warden.transport.denied event goes to opts.Sink. Admission allows no tool;
//   - an admitted server is discovered (started, listed, every definition pinned);
//     servers are discovered concurrently, each bounded by ctx. A server that cannot be
//     discovered registers nothing and is reported;
//   - its tools that are not quarantined are registered with [Server.Executable],
//     in the server's order. A tool refused at discovery, a quarantined one, and one
//     whose name reg already holds (a built-in tool keeps its name) are left out and
//     reported.
//
// The tools registered are fixed: a tool the server adds later is not registered (the
// registry is bound once), and one it removes or changes afterwards is refused when
// called, unsent.
//
// Errors, with nothing left running: an invalid server configuration (see
// [ServerConfig.Validate]) or transport policy, two servers of one name, a trusted
// project file that cannot be read or decoded, and a registry that refuses a tool
// (already bound: [warden.ErrRegistryBound]). Otherwise the returned Tools own the
// servers' processes and connections until [Tools.Close]; the caller owns reg.
func RegisterTools(ctx context.Context, reg *warden.Registry, cfg ToolsConfig, opts *ToolsOptions) (*Tools, error) {
	var o ToolsOptions
	if opts != nil {
		o = *opts
	}
	if o.Pins == nil {
		o.Pins = new(pin.Memory)
	}
	if err := cfg.Transport.Validate(); err != nil {
		return nil, fmt.Errorf("mcp: transport policy: %w", err)
	}
	t := &Tools{}
	servers := slices.Clone(cfg.Servers)
	if cfg.ProjectFile != "" {
		if !cfg.TrustProjectSettings {
			// Fail closed: an untrusted project file is not even opened.
			t.problems = append(t.problems, fmt.Errorf("%w: %s was not read (trust_project_settings is false); trusting it would not admit its commands or URLs: the transport policy still decides", ErrUntrustedProjectFile, cfg.ProjectFile))
		} else {
			project, err := LoadProjectServers(cfg.ProjectFile, true)
			if err != nil {
				return nil, fmt.Errorf("mcp: %w", err)
			}
			servers = append(servers, project...)
		}
	}
	seen := map[string]bool{}
	for _, s := range servers {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("mcp: server %q is defined twice", s.Name)
		}
		seen[s.Name] = true
	}

	// The upstreams read the policy for as long as they run: a copy the caller cannot
	// change under them.
	policy := cfg.Transport
	policy.Commands = slices.Clone(policy.Commands)
	policy.Hosts = slices.Clone(policy.Hosts)
	policy.EnvDeny = slices.Clone(policy.EnvDeny)
	ups := make([]*Server, len(servers))
	for i, s := range servers {
		u, err := New(s, &Options{
			Policy:      &policy,
			Pins:        o.Pins,
			Sink:        o.Sink,
			Logger:      o.Logger,
			CallTimeout: o.CallTimeout,
		})
		if err != nil {
			// New starts nothing: there is nothing to stop.
			return nil, fmt.Errorf("mcp: %w", err)
		}
		ups[i] = u
	}
	type discovery struct {
		tools    []Tool
		problems []ToolProblem
		err      error
	}
	found := make([]discovery, len(ups))
	var wg sync.WaitGroup
	for i, u := range ups {
		wg.Go(func() {
			tools, problems, err := u.Discover(ctx)
			found[i] = discovery{tools, problems, err}
		})
	}
	wg.Wait()

	registered := map[string]bool{}
	for _, tool := range reg.Tools() {
		registered[tool.Name] = true
	}
	var idle []*Server // servers that serve nothing here: stopped at once
	for i, u := range ups {
		d, name := found[i], servers[i].Name
		var denied *DeniedError
		switch {
		case errors.As(d.err, &denied):
			t.problems = append(t.problems, fmt.Errorf("server %q not admitted by the transport policy, so none of its tools is registered: %w", name, denied))
			idle = append(idle, u)
			continue
		case d.err != nil:
			t.problems = append(t.problems, fmt.Errorf("server %q: discovery failed, so none of its tools is registered: %w", name, d.err))
			idle = append(idle, u)
			continue
		}
		for _, p := range d.problems {
			t.problems = append(t.problems, errors.New(p.String()))
		}
		n := 0
		for _, tool := range d.tools {
			switch {
			case tool.Quarantined:
				t.problems = append(t.problems, fmt.Errorf("server %q: tool %q not registered: %w", name, tool.Name, &pin.QuarantinedError{Tool: tool.Name}))
				continue
			case registered[tool.Name]:
				t.problems = append(t.problems, fmt.Errorf("server %q: tool %q not registered: the registry already holds a tool of that name", name, tool.Name))
				continue
			}
			if err := reg.Register(u.Executable(tool)); err != nil {
				closeAll(ups)
				return nil, fmt.Errorf("mcp: registering the tools of server %q: %w", name, err)
			}
			registered[tool.Name] = true
			t.names = append(t.names, tool.Name)
			n++
		}
		if n == 0 {
			idle = append(idle, u)
			continue
		}
		t.ups = append(t.ups, u)
	}
	if err := closeAll(idle); err != nil {
		o.logger().Warn("stopping an upstream server that serves no tool failed", "error", err)
	}
	return t, nil
}

func (o ToolsOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}
