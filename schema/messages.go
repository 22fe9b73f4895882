package schema

import (
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// leafMessage is the message for one error's own kind: the library's English message,
// except for two families of kinds, worded the same way here:
//   - kinds carrying numbers: the library's English printer groups digits ("got 1,500,
//     want 1,000"), which an agent can misread as two JSON values, and rounds bounds
//     through float64; here integers print exactly and other numbers in their shortest
//     form;
//   - additionalProperties: the library lists the names in map order, which varies from
//     run to run; here they are sorted so the refusal text is stable.
func leafMessage(e *jsonschema.ValidationError) string {
	if msg, ok := numericMessage(e.ErrorKind); ok {
		return msg
	}
	if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
		names := slices.Clone(k.Properties)
		slices.Sort(names)
		return "additional properties " + joinQuoted(names) + " not allowed"
	}
	leaf := jsonschema.ValidationError{
		SchemaURL:        e.SchemaURL,
		InstanceLocation: e.InstanceLocation,
		ErrorKind:        e.ErrorKind,
	}
	if out := leaf.DetailedOutput(); out.Error != nil {
		return out.Error.String()
	}
	return "invalid value"
}

func numericMessage(k jsonschema.ErrorKind) (string, bool) {
	itoa := strconv.Itoa
	gotWant := func(name string, got, want int) string {
		return name + ": got " + itoa(got) + ", want " + itoa(want)
	}
	ratGotWant := func(name string, got, want *big.Rat) string {
		return name + ": got " + ratString(got) + ", want " + ratString(want)
	}
	switch k := k.(type) {
	case *kind.Minimum:
		return ratGotWant("minimum", k.Got, k.Want), true
	case *kind.Maximum:
		return ratGotWant("maximum", k.Got, k.Want), true
	case *kind.ExclusiveMinimum:
		return ratGotWant("exclusiveMinimum", k.Got, k.Want), true
	case *kind.ExclusiveMaximum:
		return ratGotWant("exclusiveMaximum", k.Got, k.Want), true
	case *kind.MultipleOf:
		return ratGotWant("multipleOf", k.Got, k.Want), true
	case *kind.MinProperties:
		return gotWant("minProperties", k.Got, k.Want), true
	case *kind.MaxProperties:
		return gotWant("maxProperties", k.Got, k.Want), true
	case *kind.MinItems:
		return gotWant("minItems", k.Got, k.Want), true
	case *kind.MaxItems:
		return gotWant("maxItems", k.Got, k.Want), true
	case *kind.MinLength:
		return gotWant("minLength", k.Got, k.Want), true
	case *kind.MaxLength:
		return gotWant("maxLength", k.Got, k.Want), true
	case *kind.AdditionalItems:
		return "last " + itoa(k.Count) + " additionalItem(s) not allowed", true
	case *kind.UniqueItems:
		return "items at " + itoa(k.Duplicates[0]) + " and " + itoa(k.Duplicates[1]) + " are equal", true
	case *kind.OneOf:
		if len(k.Subschemas) < 2 {
			return "'oneOf' failed, none matched", true
		}
		return "'oneOf' failed, subschemas " + itoa(k.Subschemas[0]) + ", " + itoa(k.Subschemas[1]) + " matched", true
	case *kind.MinContains:
		if len(k.Got) == 0 {
			return "min " + itoa(k.Want) + " items required to match contains schema, but none matched", true
		}
		return "min " + itoa(k.Want) + " items required to match contains schema, but matched " +
			itoa(len(k.Got)) + " items at " + joinInts(k.Got), true
	case *kind.MaxContains:
		return "max " + itoa(k.Want) + " items required to match contains schema, but matched " +
			itoa(len(k.Got)) + " items at " + joinInts(k.Got), true
	}
	return "", false
}

// ratString writes an integer exactly and any other number in the shortest form that
// reads back as the same float64.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// quote writes s in single quotes the way the library's messages do: Go escapes for
// control and invalid characters, a backslash before a single quote.
func quote(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	return "'" + strings.ReplaceAll(q, "'", `\'`) + "'"
}

func joinQuoted(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = quote(n)
	}
	return strings.Join(parts, ", ")
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, " ")
}
