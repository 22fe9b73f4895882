// Package pin pins MCP tool definitions: the first definition of a tool seen is
// trusted and stored (trust on first use); a later change is held for an operator's
// review and the tool is quarantined (hidden and refused) until the operator approves
// exactly the definition they saw.
//
// [Hash] gives a definition its canonical hash, [Check] compares a listed definition
// with its pin, [Approve] records an operator's approval, [Diff] shows what changed,
// and [Memory] is a [Store] for programs without a database.
//
// It is its own package because three different callers share it and none of them
// should need the others: the upstream client checks definitions (package upstream),
// the web inbox and `warden pins` approve them. It imports neither the gateway, the
// upstream client nor the inbox.
package pin
