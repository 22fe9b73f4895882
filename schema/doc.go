// Package schema validates the final arguments of a tool call against the tool's input
// JSON Schema, just before the call is executed.
//
// # Model
//
// A tool's input schema is compiled once with [Compile] into a [Schema], which is
// immutable and safe for concurrent use. Every call's arguments are then checked with
// [Schema.Validate]: nil means the arguments conform; otherwise the result lists one
// [Problem] per failed leaf assertion (the leaves of the validator's error tree), each
// with a JSONPath-like location ("$", "$.amount", "$.items[0].name", "$['a b']") and
// the validator library's English message (numbers printed without digit grouping,
// names of unexpected properties sorted). A missing required property is reported at
// the path of the object that lacks it. Problems come sorted by path, then message, so
// the output is stable. [RefusalText] renders them as the exact text returned to the
// agent in place of the tool's result. Validation is fail-closed: if the validator itself
// fails (panics), Validate reports that as a problem, and a problem is a refusal.
//
// Tool arguments are always a JSON object, so a schema must be a JSON object, and if it
// states a "type" that type must be "object". A nil or empty schema means
// {"type":"object"}: any object. A schema without "$schema" is read as JSON Schema
// draft 2020-12, the MCP default; "$schema" selects draft-07 or 2019-09 (and the older
// drafts the validator library knows) when present.
//
// # External references are never loaded
//
// A schema is untrusted input: it typically comes from an MCP upstream server that
// Warden governs rather than trusts. Resolving a "$ref" (or a custom "$schema") that
// points outside the schema document would let that server make the gateway fetch
// arbitrary URLs or read local files (file:///etc/passwd), and would make the meaning
// of a schema depend on what those places return at compile time. So every reference
// that leaves the schema's own in-memory document is refused and the schema fails to
// compile; references inside it ("#/$defs/x", "#/definitions/x", anchors, "$id"s of
// embedded resources) work as usual. The standard draft meta-schemas are built into the
// validator library and need no loading.
//
// # Failing schemas
//
// A schema that fails to compile (invalid JSON, not an object, a "type" other than
// "object", an external reference, a keyword value the meta-schema rejects, a regular
// expression Go cannot compile, duplicate keys) leaves the tool without a usable
// schema. This package only reports the error; the caller must then treat the tool as
// uncallable, never as unvalidated.
//
// # Format
//
// "format" follows the validator library's default for the schema's draft: for 2020-12
// and 2019-09 (the MCP default case) it is an annotation only, so a value such as
// "not-an-email" for "format": "email" is accepted; only a draft-07 (or older) schema
// gets format assertions, because those drafts define format as an assertion. Tool
// authors who need a shape enforced should use "pattern", "enum" or length bounds,
// which are always asserted. "contentEncoding", "contentMediaType" and "contentSchema"
// are never asserted.
package schema
