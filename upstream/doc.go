// Package upstream is Warden's client side of the Model Context Protocol: the MCP
// servers Warden stands in front of.
//
// It admits upstream servers through a fail-closed [TransportPolicy] (REFERENCE
// section 10) before any process starts or connection opens, supervises the child
// processes it starts, keeps a bounded pool of connections per server with a backoff
// after failures, discovers tools over the official Go SDK, checks every definition
// against its pin (package pin) before a call goes out on a connection, routes
// progress notifications to the call they belong to, and adapts each discovered tool
// to a [warden.Executable]. The gateway (package gateway) serves these tools to MCP
// clients; an agent or any program registers them with [RegisterTools].
//
// It is its own package because all of this is the same for every caller and needs
// nothing of the gateway: upstream imports pin, never gateway, inbox or cmd.
//
// Decisions this package makes:
//   - transport admission never creates a tool allow, and a tool allow never admits a
//     transport: the two are separate questions;
//   - a tool whose input schema is missing, not an object or does not compile is
//     refused and reported, never served;
//   - a governed MCP tool has one name everywhere (list, policy rules, audit, events):
//     its server's prefix (default "mcp__<server>__") followed by the upstream name;
//   - roots are never forwarded to a shared upstream, and only capabilities that can
//     be routed are declared to upstreams;
//   - a call never goes out on a connection whose definitions were not listed and
//     pin-checked since it started, since its last tools/list_changed, or since the
//     last reload (SIGHUP);
//   - a transport failure of an upstream is never taken for its answer: the
//     connection is closed and restarted after a backoff;
//   - [CallOptions.BeforeSend] runs once a verified connection is held and before the
//     request is sent, so a caller (the gateway's audit intent) can refuse to send;
//   - an upstream's task (protocol 2026-07-28's tasks extension, declared only to a
//     server that offers it) is followed inside [Server.Call] on the call's
//     connection until it ends; a caller learns of it only through
//     [CallOptions.OnTask], and a relayed input round names the task in a state
//     signed by the Server, refused unsent when it does not verify.
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
//	tools, err := upstream.RegisterTools(ctx, &reg, upstream.ToolsConfig{
//		Servers:   []upstream.ServerConfig{{Name: "notes", Command: "notes-server"}},
//		Transport: upstream.TransportPolicy{AllowCommands: true, Commands: []string{"notes-server"}},
//	}, nil)
//	if err != nil { ... }
//	defer tools.Close(ctx) // stops the servers
//	guard, err := reg.Bind(warden.Config{Checkers: []warden.Checker{pol}, Schemas: schema.Compiler{}})
//	a, err := agent.New(model, guard, nil)
//
// A server the transport policy denies registers nothing and is reported in
// [Tools.Problems]; a policy in deny_all mode denies the discovered tools like the
// built-in ones; an upstream's isError answer is a tool result the model reads. The
// adapter underneath is [Server.Executable], the gateway's too. Without a pin store,
// definitions are pinned in memory ([pin.Memory]) for the life of the process.
package upstream
