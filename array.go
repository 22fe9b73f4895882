package warden

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
)

// Array is an immutable JSON array: the decoded form of an array inside [Args]. Its
// elements are decoded values (string, [json.Number], bool, nil, [Args] or Array), so an
// Array, like Args, is immutable all the way down: no method hands out its storage, and
// a stage that receives one cannot change what another stage sees.
//
// The zero value is the empty array (it encodes as []) and is ready to use. Array is
// safe for concurrent use.
type Array struct {
	elems []any
}

// NewArray builds an Array from values, in order. Each value is normalized as
// [Args.With] normalizes it (Go slices, maps and structs are copied through JSON); it
// returns an error for a value that does not encode as JSON.
func NewArray(values ...any) (arr Array, err error) {
	defer func() {
		if r := recover(); r != nil {
			arr, err = Array{}, fmt.Errorf("warden.NewArray: %v", r)
		}
	}()
	elems := make([]any, len(values))
	for i, v := range values {
		elems[i] = normalize(v)
	}
	return Array{elems: elems}, nil
}

// Len returns the number of elements.
func (a Array) Len() int { return len(a.elems) }

// At returns the i-th element (0 <= i < Len()).
func (a Array) At(i int) any { return a.elems[i] }

// All returns the indices and elements in order.
func (a Array) All() iter.Seq2[int, any] {
	return func(yield func(int, any) bool) {
		for i, v := range a.elems {
			if !yield(i, v) {
				return
			}
		}
	}
}

// Slice returns the elements as a new slice; the caller may modify it (the elements are
// themselves immutable). Use [NewArray] to build an Array from a modified slice.
func (a Array) Slice() []any { return slices.Clone(a.elems) }

// Equal reports whether a and b hold equal elements in the same order (see
// [Args.Equal]).
func (a Array) Equal(b Array) bool {
	if len(a.elems) != len(b.elems) {
		return false
	}
	for i := range a.elems {
		if !valueEqual(a.elems[i], b.elems[i]) {
			return false
		}
	}
	return true
}

// AppendJSON appends the compact JSON encoding of a to dst (see [AppendJSONValue]).
func (a Array) AppendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i := range a.elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONValue(dst, a.elems[i])
	}
	return append(dst, ']')
}

// MarshalJSON encodes a as a compact JSON array, without HTML escaping.
func (a Array) MarshalJSON() ([]byte, error) { return a.AppendJSON(nil), nil }

// UnmarshalJSON decodes a JSON array with the rules of [ParseArgs] (no duplicate or
// case-folded keys in nested objects, no trailing data).
func (a *Array) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, "")
	if err != nil {
		return err
	}
	arr, ok := v.(Array)
	if !ok {
		return errors.New("warden.Array: not a JSON array")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("warden.Array: unexpected data after the JSON array")
	}
	*a = arr
	return nil
}

// isJSONNumber reports whether s is a number in the JSON grammar (RFC 8259 section 6):
// what a [json.Number] must hold for its text to be written into an encoding as is.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}
