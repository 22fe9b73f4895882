package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/wardenhq/warden"
)

// resourceURL is the URL the schema document is registered under in the compiler. It
// only needs to be absolute and unlikely to appear in a schema; every compile uses a
// fresh compiler, so there is nothing to collide with.
const resourceURL = "warden-schema:///tool-input.json"

// Schema is a compiled tool input schema. Safe for concurrent use.
type Schema struct {
	check func(v any) error // the compiled schema's Validate; a field so tests can make it fail
}

// Problem is one way the arguments fail the schema: where (a JSONPath-like location,
// "$" for the arguments object itself) and what. It is the root package's
// [warden.ArgProblem].
type Problem = warden.ArgProblem

// Compiler is the standard [warden.SchemaCompiler]: it compiles with [Compile].
type Compiler struct{}

var _ warden.SchemaCompiler = Compiler{}

// CompileSchema compiles a tool's input schema (see [Compile]).
func (Compiler) CompileSchema(tool string, raw json.RawMessage) (warden.ArgsValidator, error) {
	s, err := Compile(tool, raw)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ValidateArgs implements [warden.ArgsValidator]; it is [Schema.Validate].
func (s *Schema) ValidateArgs(args warden.Args) []warden.ArgProblem { return s.Validate(args) }

// errExternalRef is what the loader answers for every URL it is asked for.
var errExternalRef = errors.New("external references are refused")

// refusingLoader is the compiler's only URL loader. The schema document itself is
// added as an in-memory resource and the draft meta-schemas are built into the
// library, so the compiler asks the loader only for URLs outside the schema: all of
// them are refused, without any network or file access.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w: %q", errExternalRef, url)
}

// Compile compiles a tool's input schema once. raw nil/empty => the empty object schema {"type":"object"}.
//
// Errors read "schema for tool '<tool>': <what is wrong>". A tool whose schema does not
// compile must not be callable; see the package documentation.
func Compile(tool string, raw json.RawMessage) (*Schema, error) {
	fail := func(format string, a ...any) (*Schema, error) {
		return nil, fmt.Errorf("schema for tool '%s': %s", tool, fmt.Sprintf(format, a...))
	}
	var doc any
	if len(bytes.TrimSpace(raw)) == 0 {
		doc = map[string]any{"type": "object"}
	} else {
		if err := checkJSON(raw); err != nil {
			return fail("invalid JSON: %v", err)
		}
		var err error
		doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return fail("invalid JSON: %v", err)
		}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return fail("the schema must be a JSON object, not %s", describe(doc))
	}
	if t, ok := obj["type"]; ok && !isObjectType(t) {
		return fail(`"type" must be "object" (tool arguments are always a JSON object), not %s`,
			string(warden.AppendJSONValue(nil, t)))
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(resourceURL, doc); err != nil {
		return fail("%v", err)
	}
	sch, err := c.Compile(resourceURL)
	if err != nil {
		return fail("%s", compileError(err))
	}
	return &Schema{check: sch.Validate}, nil
}

// isObjectType reports whether a "type" value admits only objects: "object" or
// ["object"].
func isObjectType(t any) bool {
	switch v := t.(type) {
	case string:
		return v == "object"
	case []any:
		return len(v) == 1 && v[0] == "object"
	}
	return false
}

func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "the boolean schema " + strconv.FormatBool(t)
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// compileError turns a library compile error into one line, naming refused references
// and the meta-schema violations of an invalid schema.
func compileError(err error) string {
	var lue *jsonschema.LoadURLError
	if errors.As(err, &lue) && errors.Is(lue.Err, errExternalRef) {
		return fmt.Sprintf("reference to %q refused: external references are refused; "+
			"only references inside the schema (such as \"#/$defs/name\") are allowed", lue.URL)
	}
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			var parts []string
			walkLeaves(ve, func(leaf *jsonschema.ValidationError) {
				loc := "/" + strings.Join(escapeTokens(leaf.InstanceLocation), "/")
				parts = append(parts, fmt.Sprintf("at %s: %s", loc, leafMessage(leaf)))
			})
			slices.Sort(parts)
			parts = slices.Compact(parts)
			return "not a valid JSON Schema: " + strings.Join(parts, "; ")
		}
	}
	msg := strings.ReplaceAll(err.Error(), resourceURL, "schema")
	return strings.Join(strings.Fields(msg), " ") // one line
}

func escapeTokens(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		t = strings.ReplaceAll(t, "~", "~0")
		out[i] = strings.ReplaceAll(t, "/", "~1")
	}
	return out
}

// checkJSON refuses what the library's decoder would accept silently: duplicate object
// keys at any depth (two readers of the schema could disagree on which one counts).
func checkJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := checkValue(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the schema")
	}
	return nil
}

func checkValue(dec *json.Decoder, ptr string) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]struct{}{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			if _, dup := seen[key]; dup {
				if ptr == "" {
					return fmt.Errorf("duplicate key %q at the top level", key)
				}
				return fmt.Errorf("duplicate key %q at %q", key, ptr)
			}
			seen[key] = struct{}{}
			if err := checkValue(dec, ptr+"/"+escapeTokens([]string{key})[0]); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := checkValue(dec, ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // closing delimiter
	return err
}

// Validate returns nil when args satisfy the schema, else the problems in a stable order (sorted by path then message).
//
// args is not modified. A failure of the validator itself is returned as the single
// problem {Path: "$", Message: "schema validation failed: ..."}, so it refuses the call.
func (s *Schema) Validate(args warden.Args) (problems []Problem) {
	defer func() {
		if r := recover(); r != nil {
			problems = []Problem{{Path: "$", Message: fmt.Sprintf("schema validation failed: %v", r)}}
		}
	}()
	if s == nil || s.check == nil {
		return []Problem{{Path: "$", Message: "schema validation failed: no compiled schema"}}
	}
	inst := args.Map()
	err := s.check(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Path: "$", Message: "schema validation failed: " + err.Error()}}
	}
	walkLeaves(ve, func(leaf *jsonschema.ValidationError) {
		problems = append(problems, Problem{
			Path:    jsonPath(inst, leaf.InstanceLocation),
			Message: leafMessage(leaf),
		})
	})
	if len(problems) == 0 { // an error without leaves still refuses
		problems = []Problem{{Path: "$", Message: leafMessage(ve)}}
	}
	slices.SortFunc(problems, func(a, b Problem) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(problems)
}

// walkLeaves calls f for every error in the tree that has no causes: the failed
// assertions themselves, without the "allOf failed" / "validation failed" wrappers.
func walkLeaves(e *jsonschema.ValidationError, f func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 {
		f(e)
		return
	}
	for _, c := range e.Causes {
		walkLeaves(c, f)
	}
}

// jsonPath renders an instance location as "$", "$.a", "$.a[0]" or "$['a b']". Array
// indices and object keys are told apart by walking the instance itself, so a key
// named "0" stays a key.
func jsonPath(inst any, toks []string) string {
	var b strings.Builder
	b.WriteByte('$')
	cur := inst
	for _, tok := range toks {
		switch v := cur.(type) {
		case []any:
			b.WriteByte('[')
			b.WriteString(tok)
			b.WriteByte(']')
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
			continue
		case map[string]any:
			cur = v[tok]
		default:
			cur = nil
		}
		if isIdentifier(tok) {
			b.WriteByte('.')
			b.WriteString(tok)
		} else {
			b.WriteString("['")
			writeQuoted(&b, tok)
			b.WriteString("']")
		}
	}
	return b.String()
}

// isIdentifier reports whether key can be written as ".key": ASCII letters, digits and
// underscores, not starting with a digit.
func isIdentifier(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// writeQuoted writes key for a single-quoted JSONPath name: backslash and quote
// escaped, control characters as escapes.
func writeQuoted(b *strings.Builder, key string) {
	for _, r := range key {
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
}

// RefusalText renders the exact text returned to the agent instead of the tool's
// result when its arguments fail the schema:
//
//	Invalid arguments for tool '<tool>' — the call was not executed.
//	- '<path>': <message>
//	Fix the arguments to match the tool's input schema and call it again.
//
// with one "- " line per problem, in the order given, lines joined by "\n".
func RefusalText(tool string, problems []Problem) string {
	return warden.InvalidArgsText(tool, problems)
}
