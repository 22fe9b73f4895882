package warden

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/wardenhq/warden/internal/jsontext"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Args is an ordered JSON object: the arguments of a tool call, keys in the order the
// caller wrote them. Order is behaviour: a rule policy's match string joins argument
// values in this order.
//
// Values are decoded JSON: string, [json.Number], bool, nil, Args (a nested object) or
// [Array] (an array of such values). An Args is immutable all the way down: no method
// hands out anything that aliases its storage (nested objects and arrays are immutable
// values themselves, and [Args.Map] builds a new tree), and every method that changes
// something returns a new Args. So what one stage of the pipeline receives (a checker,
// a middleware, the tool, a journal) cannot change what another stage sees, what
// executes or what is recorded. The zero value is the empty object and is ready to use.
// Args is safe for concurrent use.
type Args struct {
	fields []Field
}

// Field is one key of an [Args] object and its decoded value.
type Field struct {
	Key   string
	Value any
}

// ErrNotObject is returned by [ParseArgs] when the input is valid JSON but not an object.
var ErrNotObject = errors.New("arguments must be a JSON object")

// ParseArgs decodes a JSON object, keeping its key order. It refuses anything but one
// object ([ErrNotObject]), duplicate keys at any depth (a reader that takes the first and
// one that takes the last would judge different calls), keys that differ only in case
// (Go's encoding/json would read either), and trailing data.
func ParseArgs(data []byte) (Args, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return Args{}, fmt.Errorf("arguments: empty input: %w", ErrNotObject)
		}
		return Args{}, fmt.Errorf("arguments: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Args{}, ErrNotObject
	}
	a, err := decodeObject(dec, "")
	if err != nil {
		return Args{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Args{}, errors.New("arguments: unexpected data after the JSON object")
	}
	return a, nil
}

// MustParseArgs is [ParseArgs] for literals in tests and examples: it panics on error.
func MustParseArgs(s string) Args {
	a, err := ParseArgs([]byte(s))
	if err != nil {
		panic("warden.MustParseArgs: " + err.Error())
	}
	return a
}

func decodeObject(dec *json.Decoder, path string) (Args, error) {
	var fields []Field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Args{}, fmt.Errorf("arguments: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return Args{}, fmt.Errorf("arguments: object key expected at %s", pathOrRoot(path))
		}
		for _, f := range fields {
			if f.Key == key {
				return Args{}, fmt.Errorf("arguments: duplicate key %q at %s", key, pathOrRoot(path))
			}
			// encoding/json matches keys case-insensitively, last one wins: a policy
			// reading "command" and a tool reading "Command" would judge different calls.
			if strings.EqualFold(f.Key, key) {
				return Args{}, fmt.Errorf("arguments: keys %q and %q differ only in case at %s", f.Key, key, pathOrRoot(path))
			}
		}
		v, err := decodeValue(dec, path+"/"+key)
		if err != nil {
			return Args{}, err
		}
		fields = append(fields, Field{Key: key, Value: v})
	}
	if _, err := dec.Token(); err != nil { // closing brace
		return Args{}, fmt.Errorf("arguments: %w", err)
	}
	return Args{fields: fields}, nil
}

func decodeValue(dec *json.Decoder, path string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return decodeObject(dec, path)
		case '[':
			var elems []any
			for i := 0; dec.More(); i++ {
				v, err := decodeValue(dec, path+"/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				elems = append(elems, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("arguments: %w", err)
			}
			return Array{elems: elems}, nil
		}
		return nil, fmt.Errorf("arguments: unexpected %q at %s", t, pathOrRoot(path))
	default:
		return t, nil // string, json.Number, bool, nil
	}
}

func pathOrRoot(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

// NewArgs builds an Args from key/value pairs in order: NewArgs("command", "ls").
// Values may be any Go value that encodes as JSON; they are normalized to the decoded
// forms Args holds. It returns an error for an odd number of parameters, a non-string
// key, a duplicate key or a value that does not encode as JSON.
func NewArgs(kv ...any) (Args, error) {
	if len(kv)%2 != 0 {
		return Args{}, errors.New("warden.NewArgs: odd number of parameters")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return Args{}, fmt.Errorf("warden.NewArgs: key %d is %T, not a string", i/2, kv[i])
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsontext.AppendString(nil, k))
		b.WriteByte(':')
		v, err := json.Marshal(kv[i+1])
		if err != nil {
			return Args{}, fmt.Errorf("warden.NewArgs: value of %q: %w", k, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return ParseArgs(b.Bytes())
}

// Len returns the number of keys.
func (a Args) Len() int { return len(a.fields) }

// Fields returns the keys and values in order. The values are immutable (see [Args]).
func (a Args) Fields() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for _, f := range a.fields {
			if !yield(f.Key, f.Value) {
				return
			}
		}
	}
}

// At returns the i-th key and value (0 <= i < Len()). It lets hot paths walk the
// arguments without an iterator closure.
func (a Args) At(i int) (string, any) {
	f := a.fields[i]
	return f.Key, f.Value
}

// Keys returns the keys in order, as a new slice.
func (a Args) Keys() []string {
	keys := make([]string, len(a.fields))
	for i, f := range a.fields {
		keys[i] = f.Key
	}
	return keys
}

// Get returns the value of key and whether it is present.
func (a Args) Get(key string) (any, bool) {
	for i := range a.fields {
		if a.fields[i].Key == key {
			return a.fields[i].Value, true
		}
	}
	return nil, false
}

// String returns the value of key when it is present and a JSON string.
func (a Args) String(key string) (string, bool) {
	v, ok := a.Get(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// With returns a copy of a with key set to value: replaced in place when key exists,
// appended otherwise. A string, bool, nil, Args or [Array] is stored as it is (a string
// that is not valid UTF-8 is stored as JSON would carry it, with U+FFFD for each bad
// byte, so what is judged is what is encoded); any other Go value, []any and maps
// included, is copied through JSON into the decoded forms, so the caller keeps no alias
// into the result. With panics if value does not encode as JSON (a [json.Number] that
// is not a JSON number included: its text would be spliced into the encoding).
func (a Args) With(key string, value any) Args {
	value = normalize(value)
	fields := slices.Clone(a.fields)
	for i := range fields {
		if fields[i].Key == key {
			fields[i].Value = value
			return Args{fields: fields}
		}
	}
	return Args{fields: append(fields, Field{Key: key, Value: value})}
}

// Without returns a copy of a without key.
func (a Args) Without(key string) Args {
	fields := make([]Field, 0, len(a.fields))
	for _, f := range a.fields {
		if f.Key != key {
			fields = append(fields, f)
		}
	}
	return Args{fields: fields}
}

// normalize turns a Go value into one of the immutable decoded forms (see [Args]). The
// immutable forms are kept as they are; everything else is copied through JSON, so no
// caller-owned slice or map is ever stored.
func normalize(v any) any {
	switch t := v.(type) {
	case nil, bool, Args, Array:
		return v
	case string:
		if utf8.ValidString(t) {
			return v
		}
		// Fall through to JSON: the encoder writes U+FFFD for each invalid byte, and
		// the value must be the one its encoding carries.
	case json.Number:
		if isJSONNumber(string(t)) {
			return v
		}
		panic("warden: Args value is not a JSON number: " + strconv.Quote(string(t)))
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("warden: Args value does not encode as JSON: " + err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	out, err := decodeValue(dec, "")
	if err != nil {
		panic("warden: Args value does not decode: " + err.Error())
	}
	return out
}

// same reports whether a and b share their storage (and so, being immutable, are the
// same value), without comparing contents.
func (a Args) same(b Args) bool {
	return len(a.fields) == len(b.fields) && (len(a.fields) == 0 || &a.fields[0] == &b.fields[0])
}

// Equal reports whether a and b have the same keys in the same order with equal values.
// Numbers compare by their JSON text. Order matters because it changes match strings.
func (a Args) Equal(b Args) bool {
	if len(a.fields) != len(b.fields) {
		return false
	}
	for i := range a.fields {
		if a.fields[i].Key != b.fields[i].Key || !valueEqual(a.fields[i].Value, b.fields[i].Value) {
			return false
		}
	}
	return true
}

func valueEqual(x, y any) bool {
	switch xv := x.(type) {
	case nil:
		return y == nil
	case string:
		yv, ok := y.(string)
		return ok && xv == yv
	case json.Number:
		yv, ok := y.(json.Number)
		return ok && xv == yv
	case bool:
		yv, ok := y.(bool)
		return ok && xv == yv
	case Args:
		yv, ok := y.(Args)
		return ok && xv.Equal(yv)
	case Array:
		yv, ok := y.(Array)
		return ok && xv.Equal(yv)
	}
	return false
}

// MarshalJSON encodes a as a compact JSON object in key order, without HTML escaping.
func (a Args) MarshalJSON() ([]byte, error) { return a.AppendJSON(nil), nil }

// UnmarshalJSON decodes with the rules of [ParseArgs].
func (a *Args) UnmarshalJSON(b []byte) error {
	v, err := ParseArgs(b)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// AppendJSON appends the compact JSON encoding of a, in key order, to dst.
func (a Args) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	for i, f := range a.fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsontext.AppendString(dst, f.Key)
		dst = append(dst, ':')
		dst = AppendJSONValue(dst, f.Value)
	}
	return append(dst, '}')
}

// Map returns a as a new map[string]any tree (nested objects become maps, arrays
// []any), as JSON Schema validators and expression languages want it. Numbers stay
// [json.Number]. The tree shares nothing with a: the caller may modify it freely.
func (a Args) Map() map[string]any {
	m := make(map[string]any, len(a.fields))
	for _, f := range a.fields {
		m[f.Key] = plain(f.Value)
	}
	return m
}

func plain(v any) any {
	switch t := v.(type) {
	case Args:
		return t.Map()
	case Array:
		out := make([]any, len(t.elems))
		for i := range t.elems {
			out[i] = plain(t.elems[i])
		}
		return out
	}
	return v
}

// Digest returns "sha256:" and the hex SHA-256 of the canonical JSON of a: keys sorted
// at every depth, compact, numbers as written. Approvals are bound to this digest.
func (a Args) Digest() string {
	sum := sha256.Sum256(a.appendCanonical(nil))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (a Args) appendCanonical(dst []byte) []byte {
	idx := make([]int, len(a.fields))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(x, y int) int {
		switch {
		case a.fields[x].Key < a.fields[y].Key:
			return -1
		case a.fields[x].Key > a.fields[y].Key:
			return 1
		}
		return 0
	})
	dst = append(dst, '{')
	for n, i := range idx {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = jsontext.AppendString(dst, a.fields[i].Key)
		dst = append(dst, ':')
		dst = appendCanonicalValue(dst, a.fields[i].Value)
	}
	return append(dst, '}')
}

func appendCanonicalValue(dst []byte, v any) []byte {
	switch t := v.(type) {
	case Args:
		return t.appendCanonical(dst)
	case Array:
		dst = append(dst, '[')
		for i := range t.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonicalValue(dst, t.elems[i])
		}
		return append(dst, ']')
	}
	return AppendJSONValue(dst, v)
}

// AppendJSONValue appends the compact JSON of one decoded value (see [Args]) to dst:
// strings quoted without HTML escaping, numbers as written, true/false, null, objects in
// key order, arrays ([Array], or a []any such as [Args.Map] builds). A value of any
// other Go type is encoded with encoding/json.
func AppendJSONValue(dst []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...)
	case string:
		return jsontext.AppendString(dst, t)
	case json.Number:
		return append(dst, t...)
	case bool:
		return strconv.AppendBool(dst, t)
	case Args:
		return t.AppendJSON(dst)
	case Array:
		return t.AppendJSON(dst)
	case []any:
		dst = append(dst, '[')
		for i := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONValue(dst, t[i])
		}
		return append(dst, ']')
	}
	b, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}
