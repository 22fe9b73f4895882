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
// # The pipeline
//
// Tools from every source are registered in a [Registry]; [Registry.Bind] snapshots it
// and builds one plan per tool, so coverage never depends on where a tool came from. The
// resulting [Guard] runs every call through one path, in a fixed order: session gate,
// permission checkers (pass S1), call-side [Middleware], checkers again on the final
// arguments (pass S2), JSON Schema validation, the skill gate, a human decision
// (escalation, ask or check-in, one mechanism), credentials, the tool, result-side
// middleware in reverse order, error handlers, result ceilings. Each call yields an
// [Outcome] that says what the model reads, which stage decided, and whether the tool
// executed; a halt also returns a [*PolicyHaltError]. A [Journal] records every call
// durably, writing ahead of execution; [Sink]s receive [Event]s.
//
// # What is judged is what runs
//
// [Args] and [Array] are immutable all the way down: no accessor hands out storage, and
// every value taken in ([NewArgs], [Args.With], [NewArray], [ParseArgs], JSON decoding)
// is copied into immutable forms. What a checker, middleware, validator or tool receives
// cannot change what another stage sees, what executes, [Outcome.Args] or the journal
// record; a checker that overwrites a step of the run's history it was shown
// ([Request.Sequence]) is refused. After the tool runs, a result-side link's replace or
// deny holds on every path, the tool's error and error handlers included (see "The
// result side" on [Guard]).
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
