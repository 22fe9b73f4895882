// Package warden is the vocabulary of Warden, fail-closed governance for AI-agent tool
// calls.
//
// "Can the agent do this?" is answered at several enforcement points, in a fixed order,
// and every answer is data: a [Decision] that names the rule that decided, a machine
// [Decision.Reason] for routing alerts, a human [Decision.Rationale] for operators, and the
// text the model reads ([Decision.TellLLM]).
//
// This package holds the types every other package speaks: [Tool], [Call], [Identity],
// [Args] (an ordered JSON object), [Request], [Decision], [Effect], [Capability] and the
// [Checker] interface. It imports none of Warden's subpackages; they adapt one thing each
// (policy files, the shell parser, JSON Schema, stores, MCP) to this vocabulary.
//
// # Fail closed
//
// The zero [Decision] is a denial, and so is every answer that is not an explicit allow:
// an unknown [Effect], a checker that returns an error, panics or does not answer in time.
// Something that did not answer did not say yes.
//
// # Capabilities
//
// A tool declares what it touches ([Tool.Capabilities]); a checker declares what it governs
// ([Checker.Governs]). A capability is asked about only when both sides declared it
// ([CheckerGoverns]). Warden never infers a tool's capabilities from its name, schema or
// description.
package warden
