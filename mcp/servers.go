// Package mcp puts Warden in front of Model Context Protocol servers.
//
// It admits upstream servers through a fail-closed [TransportPolicy] (REFERENCE
// section 10) before any process starts or connection opens, discovers their tools
// over the official Go SDK, pins every tool definition so a silent change is noticed,
// and serves the governed tools to MCP clients through the same call pipeline as every
// other Warden tool (the [Gateway]).
//
// Decisions this package makes:
//   - transport admission never creates a tool allow, and a tool allow never admits a
//     transport: the two are separate questions;
//   - a tool whose input schema is missing, not an object or does not compile is
//     refused and reported, never served;
//   - a governed MCP tool has one name everywhere (list, policy rules, audit, events):
//     its server's prefix (default "mcp__<server>__") followed by the upstream name;
//   - roots are never forwarded to a shared upstream, and the gateway declares to
//     upstreams only capabilities it can route;
//   - a call never goes out on a connection whose definitions were not listed and
//     pin-checked since it started, since its last tools/list_changed, or since the
//     last reload (SIGHUP);
//   - a tool a caller cannot see (outside its role, or quarantined) answers a
//     tools/call exactly like a tool that does not exist;
//   - a transport failure of an upstream is never taken for its answer: the
//     connection is closed and restarted after a backoff;
//   - a call is audited as executed once its request began to be sent upstream, and
//     only then (its audit intent is written at that moment);
//   - the client's own user approves by elicitation only where the configuration
//     says so for that identity (approvals.elicitation: allow and self_approve).
//
// # MCP tools in an agent or a program
//
// [RegisterTools] gives an agent (or any program using the library) the tools of MCP
// servers next to its built-in ones: each server a [ToolsConfig] names (and those of
// a project file, read only when TrustProjectSettings is set) is admitted by the
// transport policy, discovered and pinned, and its tools registered into the
// [warden.Registry] before the registry's one Bind, so one Guard governs every tool
// whatever its source (ADR D3, D5):
//
//	var reg warden.Registry
//	reg.Register(builtin)
//	tools, err := mcp.RegisterTools(ctx, &reg, mcp.ToolsConfig{
//		Servers:   []mcp.ServerConfig{{Name: "notes", Command: "notes-server"}},
//		Transport: mcp.TransportPolicy{AllowCommands: true, Commands: []string{"notes-server"}},
//	}, nil)
//	if err != nil { ... }
//	defer tools.Close() // stops the servers
//	guard, err := reg.Bind(warden.Config{Checkers: []warden.Checker{pol}, Schemas: schema.Compiler{}})
//	a, err := agent.New(model, guard, nil)
//
// A server the transport policy denies registers nothing and is reported in
// [Tools.Problems]; a policy in deny_all mode denies the discovered tools like the
// built-in ones; an upstream's isError answer is a tool result the model reads. The
// adapter underneath is [Upstream.Executable], the gateway's too. Without a pin store,
// definitions are pinned in memory ([MemoryPins]) for the life of the process.
package mcp

import (
	"fmt"
	"regexp"
)

// ServerConfig describes one upstream MCP server: either a command started as a
// child process speaking MCP over stdin/stdout, or a streamable HTTP URL.
type ServerConfig struct {
	// Name identifies the server in tool names, events and errors.
	Name string
	// Command is the program to start (a bare name, looked up in PATH); Args its
	// arguments; Env extra environment entries for the child; Dir its working
	// directory (empty: the gateway's).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL is the streamable HTTP endpoint; Headers are sent with every request.
	URL     string
	Headers map[string]string
	// Prefix is put in front of every tool name of this server. Nil means the
	// default "mcp__<Name>__"; an empty prefix is allowed when names do not collide.
	Prefix *string

	// EnvRefs names the variables of Warden's own environment that a project file's
	// ${VAR} references put into Env or Headers ([LoadProjectServers] sets it):
	// [TransportPolicy.Admit] refuses the server when one of them is a secret by the
	// policy's env_deny patterns (unless keep_secret_env), since the child's
	// environment is filtered by name and a reference could rename a secret.
	EnvRefs []string
}

// Transport names the transport the server uses: "command" or "url".
func (c ServerConfig) Transport() string {
	if c.URL != "" {
		return "url"
	}
	return "command"
}

// ToolPrefix returns the prefix of this server's governed tool names.
func (c ServerConfig) ToolPrefix() string {
	if c.Prefix != nil {
		return *c.Prefix
	}
	return "mcp__" + c.Name + "__"
}

var serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// toolNamePattern is what a governed tool name may hold: the characters MCP clients
// accept in tool names.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Validate reports a configuration that cannot describe a server: a bad name, both or
// neither of Command and URL, or a prefix with characters a tool name cannot hold.
func (c ServerConfig) Validate() error {
	switch {
	case !serverNamePattern.MatchString(c.Name):
		return fmt.Errorf("server name %q: use 1 to 64 letters, digits, '_' or '-'", c.Name)
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("server %q: give either command or url, not both", c.Name)
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("server %q: give a command or a url", c.Name)
	case c.URL == "" && len(c.Headers) > 0:
		return fmt.Errorf("server %q: headers apply only to a url server", c.Name)
	case c.Command == "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != ""):
		return fmt.Errorf("server %q: args, env and dir apply only to a command server", c.Name)
	}
	if p := c.ToolPrefix(); p != "" && !toolNamePattern.MatchString(p) {
		return fmt.Errorf("server %q: tool prefix %q may hold only letters, digits, '_', '.' and '-'", c.Name, p)
	}
	return nil
}

// ValidToolName reports whether name can be a governed tool name.
func ValidToolName(name string) bool { return toolNamePattern.MatchString(name) }
