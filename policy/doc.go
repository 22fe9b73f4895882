// Package policy decides whether a tool call may run: rule policies, role policies,
// CEL conditions, and policy files that combine them.
//
// # Rule policies
//
// A [RulePolicy] has a mode. allow_all allows at once (no shell check), deny_all denies
// at once, and rules evaluates glob patterns per tool in a fixed order:
//
//	bash only: the shell check  => deny "Shell control operator requires explicit approval: '<command>'"
//	first matching deny rule     => deny     "denied by rule: <pattern>"
//	first matching allow rule    => allow    "allowed by rule: <pattern>"
//	first matching escalate rule => ask      "escalate by rule: <pattern>"
//	no match                     => deny     "no matching rule, default deny"
//
// Each list is the tool's own patterns followed by the "*" patterns. The decision's
// RuleID is the pattern.
//
// # Resources and prompts
//
// MCP resources and prompts are judged as tool calls to named targets: a resources/read
// as "resource:<server>" (the upstream server's configured name) with the arguments
// {"uri": <the uri>}, a prompts/get as "prompt:<governed prompt name>" (such as
// "prompt:mcp__notes__summarize") with the prompt's arguments. Two family keys apply to
// a whole family: "resource:*" to every target whose canonical name starts with
// "resource:", "prompt:*" to every one starting with "prompt:". For such a target each
// list is its own patterns, then its family's, then the "*" patterns, and the first
// match in the deny list, then the allow list, then the escalate list decides, as for
// any tool. A deny "*" anywhere in the combined deny list therefore denies every call,
// and [RulePolicy.MayAllow] hides the target. A key that is a prefix alone
// ("resource:", "prompt:") is an error; no other key holding "*" is a family. Tool names are lower-cased and mapped through aliases
// (bash_tool => bash, reader_tool => reader, editor_tool => editor, search_tool =>
// search, context_tool => context, plus any the configuration adds).
//
// Globs follow Python's fnmatch, case-insensitively and anchored: "*" matches any run of
// characters including "/" and newlines, "?" one character, "[seq]" and "[!seq]" classes,
// an unclosed "[" is literal, and there are no backslash escapes.
//
// # Match strings
//
// What the globs are matched against depends on the canonical tool: bash matches the
// normalized command; editor its file_path; reader its path; search its pattern, a space
// and its path. Every other tool (MCP tools included) matches its action argument, a
// space, and all argument values in the order of the call's JSON object joined by single
// spaces: strings verbatim, numbers as written, true/false, null, objects and arrays as
// compact JSON. A resource ("resource:<server>") matches its uri argument when it is a
// string, else the empty string; a prompt uses the generic rule. A match template
// ("{env} {service}") replaces that rule for one tool; a template on a family key, for
// every member of the family that has no template of its own.
//
// # The shell check
//
// A bash command must be one simple command (see package shell). The command and every
// command it wraps (sudo, env, timeout, sh -c '...', find -exec, xargs, ...) are judged,
// and the most restrictive answer wins: deny (or no match) over escalate over allow. So
// "sudo /bin/rm -rf /" is judged as both "sudo /bin/rm -rf /" and "rm -rf /" (only a
// command word loses its directory). Even an allow rule of "*" does not override the
// shell check.
//
// # Escalation
//
// An escalate rule returns [warden.Ask]. With an [EscalationHandler] the policy answers
// inline: approve allows (optionally with replacement arguments, which the second
// security pass judges again), decline denies with "Permission escalation for
// <tool>.<action> was declined: <rationale>", and a handler error denies as a fault.
// Without a handler the front end either puts the question to a person or refuses with
// [warden.EscalationFault].
//
// # Role policies
//
// [FromRoles] builds a tool allowlist per role, with optional capability and skill
// rules; see [RolePolicy.Check] for the exact order and rule ids. A role whose skill
// rule lists a skill may call read_skill (rule "<r>.skills") without listing it among
// its tools: the skill rule is its listing, and a second one is not needed. (In a
// combined [Policy] the rule layer still judges read_skill like any other tool.)
//
// # What the model is offered
//
// [RolePolicy], [RulePolicy] and [Policy] are [warden.VisibilityChecker]s: IsAllowed
// answers, with no call in hand, whether a tool may be shown to the model, and a
// [warden.Guard] checking with them offers exactly the tools they allow
// ([warden.Guard.Offers]). A role policy's IsAllowed answers as its tool_call check
// does; a rule policy's is [RulePolicy.MayAllow]; a combined policy's needs both
// layers (conditions judge calls, not tools).
//
// # Names in files
//
// A key or list item that names a tool, a role or a skill must be a YAML string:
// `123:`, `true:`, `~:` or `- 42` is an error naming the file, line and column, with
// the hint to quote it ("123": is the tool 123).
//
// # Combination and files
//
// A [Policy] combines a rule layer, a role layer and conditions; every layer that applies
// is evaluated and the strongest answer wins (halt > deny > ask > allow). [LoadFile]
// reads the YAML policy format strictly and gives every policy a [Policy.Revision].
//
// # Shadow items and shadow files
//
// A rule entry may be a mapping instead of a list of patterns, {patterns: [...],
// enforce: bool}, and a condition may say enforce: bool; enforce: true (or a plain
// list) is the same as leaving it out. An item with enforce: false is a shadow item:
// [Parse] leaves it out of the returned policy exactly as if it were not in the file
// (decisions and [Policy.Revision] included), and [Policy.Shadow] is the whole file with
// every shadow item enforcing, which a front end evaluates beside the policy and never
// instead of it (the gateway records where it is stricter). Shadow items are validated
// like any other: a mapping with an unknown key, without patterns, or whose enforce is
// not a boolean is an error. A file whose items are all shadow is what remains without
// them; when nothing does, it decides nothing and is refused.
//
// A file whose top level says enforce: false is a shadow file. [Parse] refuses it
// ([ErrShadowFile]): a file meant to be evaluated only never becomes the enforcing
// policy, and never an allow-all by accident. [ParseShadow] and [LoadShadowFile] load
// it, or any other policy file, as a shadow: every item counts.
//
// The two revisions: the enforcing one covers the file without its shadow items (so
// editing a shadow item voids no approval bound to it), and the shadow's covers the
// whole file as if every item enforced, which is the revision the file has once its
// enforce: false marks are removed.
//
// # Bounded conditions
//
// A [Condition] runs under a cost limit ([DefaultConditionCostLimit], or
// condition_cost_limit in a file) and, when it holds a comprehension, stops once its
// context is done. A [Policy] with conditions is [warden.Synchronous] and
// [warden.Interruptible], so a Guard calls it inline but under its checker deadline. A
// condition stopped either way is a fault denial: the model reads
// [warden.UnauthorizedText] and the rationale names the condition and what ran out.
// [Conditions.CostEstimates] gives each condition's static worst case, assuming
// arguments up to [EstimateArgBytes].
//
// # Warnings
//
// [Policy.Warnings] lists what a file holds that is valid but can never do what it
// says: a bash pattern whose command word has a directory ("/bin/rm *": commands are
// judged by the base name), a pattern with a '[' that no ']' closes ("rm [*" matches a
// literal bracket), a tool key with an invisible or non-ASCII character, a role
// allowlist item that is a family key (role allowlists name targets exactly), and a
// condition that compares tool with a name an alias renames (conditions see the name
// as called, rules the canonical name). Warnings never change a decision.
//
// Everything here fails closed: an unknown mode, preset, role or capability is an error
// at construction; a layer that panics, a condition that cannot be evaluated, and a
// request no layer answers are denials.
package policy
