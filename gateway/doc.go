// Package gateway is `warden serve`: an MCP server in front of upstream MCP servers
// (package upstream) that runs every tool call through the Warden pipeline.
//
// It reads the gateway file ([File], [LoadFile]: the policy, the store, the upstream
// servers and their transport policy, the clients and operators, approvals and
// limits), builds a [Gateway] from it, and serves the governed tools over two fronts:
// streamable HTTP with a bearer token per client ([Gateway.MCPHandler]) and stdio for
// one local client ([Gateway.ServeStdio]). A call that needs a person waits for an
// operator's decision (made in the web inbox, package inbox, or with `warden
// decide`) or, where the file allows it for that identity, for the client's own user
// by MCP elicitation. The gateway keeps recent events in memory ([EventLog]) for the
// inbox's audit pages.
//
// Decisions this package makes:
//   - a tool a caller cannot see (outside its role, or quarantined) answers a
//     tools/call exactly like a tool that does not exist;
//   - a call is audited as executed once its request began to be sent upstream, and
//     only then (its audit intent is written at that moment);
//   - the client's own user approves by elicitation only where the file says so for
//     that identity (approvals.elicitation: allow and self_approve);
//   - a reload that fails keeps the configuration in force.
//
// It is its own package because serving (fronts, identities, human decisions,
// reloads) is what only `warden serve` needs; the upstream client and pinning are
// shared with agents and libraries and live in packages upstream and pin, which do not
// import this one. The inbox does not import it either: cmd/warden wires the two.
package gateway
