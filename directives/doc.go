// Package directives holds role prompt directives: the text a role's system prompt
// carries about its authority, its operational boundaries and the conditions under which
// it should stop and escalate (ADR D1).
//
// Directives are model guidance, NOT enforcement. They tell a model how it is expected to
// behave; they decide nothing about what may run. Warden never parses them into rules,
// never derives a permission from them, and installs no escalation handler because of
// them: the "STOP and emit an escalation_request" sentence is an instruction to the
// model, not a mechanism. What may actually run is decided by the policy (package
// policy) through the Guard, which checks every call whatever the prompt said.
//
// # Packs
//
// A [Pack] is a named set of roles loaded from YAML with [LoadPack] or [ParsePack]:
//
//	name: support-pack
//	roles:
//	  support:
//	    authority:   ["Answer customer questions about orders and refunds."]
//	    boundaries:  ["Never promise a refund before the refund tool confirms it."]
//	    escalations: ["The customer threatens legal action."]
//	    model: claude-sonnet-4-5
//	    effort: medium
//	    default_modes: [chat]
//	    modes_allow: [chat, email]
//	    active: true
//
// Loading is strict: unknown keys, duplicate keys, values of the wrong type, empty list
// items, YAML anchors and aliases, and more than one YAML document are errors. Every
// error is a *[warden.ConfigError] located by file, line and column (several are joined
// with [errors.Join]).
//
// # Rendering
//
// [Render] turns one role's directives into the exact block a system prompt carries.
// Lines are joined by "\n", sections are separated by one blank line, a section whose
// list is empty is left out, and directives with every list empty render as "":
//
//	## Authority
//	- <text>
//
//	## Operational Boundaries
//	- <text>
//
//	## Escalation Conditions
//	When any condition occurs, STOP and emit an escalation_request with the reason:
//	- <text>
//
// [Pack.Render] renders a role of a pack; a role the pack does not define renders as "".
//
// # Catalog
//
// [Catalog] describes a pack as JSON for tools and dashboards. Each role's prompt text is
// nested under "directives" with "enforcing": false, so nobody reading the catalog
// mistakes guidance for a rule.
//
// # Names
//
// The type was first called RolePolicy; that name suggested enforcement, so it is now
// [RolePromptDirectives]. [RolePolicy] remains as a deprecated alias of the same type,
// and [Pack.Policies] and [Pack.Policy] as deprecated read aliases.
package directives
