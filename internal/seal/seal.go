// Package seal protects a JSON document with an HMAC-SHA256 under a key its writer
// keeps, so a reader holding the same key can tell that nothing in it changed.
//
// A sealed document is a JSON object:
//
//	{"format": F, "key_id": K, "mac": "hmac-sha256:<64 hex digits>", "body": {...}}
//
// format names what the body is (the reader must expect that format); key_id names
// the key ([KeyID]: not secret, it only lets a reader say "sealed under another key"
// instead of "altered"); mac is HMAC-SHA256(key, "warden-seal\x00" F "\x00" compact
// body). The MAC covers the body in its compact form ([json.Compact]), so re-indenting
// the document (a checkpoint inside another, printed with [json.MarshalIndent]) keeps it
// valid, while any change to a value, a key or the format breaks it. The body stays
// readable JSON: sealing protects integrity, not confidentiality.
package seal

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MinKeyLen is the shortest key Seal and Open accept: 32 bytes, the size of the MAC.
const MinKeyLen = 32

// macPrefix names the MAC's algorithm in the document.
const macPrefix = "hmac-sha256:"

// Errors Open returns; each is wrapped with detail.
var (
	// ErrMalformed: the data is not a sealed document (not a JSON object, unknown
	// fields, no body).
	ErrMalformed = errors.New("not a sealed document")
	// ErrUnsealed: a JSON object without a seal, or with another format: see
	// [FormatError] for the format it names.
	ErrUnsealed = errors.New("not sealed")
	// ErrOtherKey: sealed under a key whose id is not the reader's.
	ErrOtherKey = errors.New("sealed under another key")
	// ErrMismatch: the MAC does not match the content: it was changed after sealing.
	ErrMismatch = errors.New("the seal does not match the content")
)

// FormatError is returned by Open for a JSON object whose format is not the one
// expected (an older, unsealed document, or a document of another kind). It wraps
// [ErrUnsealed].
type FormatError struct {
	Got, Want string
}

func (e *FormatError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("no format (want %q)", e.Want)
	}
	return fmt.Sprintf("format %q, want %q", e.Got, e.Want)
}

func (e *FormatError) Unwrap() error { return ErrUnsealed }

// KeyError is returned by Open for a document sealed under another key. It wraps
// [ErrOtherKey].
type KeyError struct {
	Got, Want string // key ids: the document's, the reader's
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("sealed under key id %s, this key's id is %s", e.Got, e.Want)
}

func (e *KeyError) Unwrap() error { return ErrOtherKey }

type envelope struct {
	Format string          `json:"format"`
	KeyID  string          `json:"key_id,omitempty"`
	MAC    string          `json:"mac,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
}

// CheckKey reports what is wrong with a key: too short, or all one byte value (a
// buffer that was never filled from a random source).
func CheckKey(key []byte) error {
	if len(key) < MinKeyLen {
		return fmt.Errorf("the key is %d bytes, want at least %d", len(key), MinKeyLen)
	}
	if bytes.Count(key, key[:1]) == len(key) {
		return fmt.Errorf("the key is %d copies of the byte %#02x; fill it from a random source (crypto/rand)", len(key), key[0])
	}
	return nil
}

// KeyID names a key without revealing it: the first 8 bytes of an HMAC of a constant,
// in hex.
func KeyID(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("warden-seal key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

func mac(key []byte, format string, compact []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("warden-seal\x00"))
	m.Write([]byte(format))
	m.Write([]byte{0})
	m.Write(compact)
	return macPrefix + hex.EncodeToString(m.Sum(nil))
}

// Seal returns body, a JSON object, sealed under key as format.
func Seal(key []byte, format string, body []byte) ([]byte, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	var c bytes.Buffer
	if err := json.Compact(&c, body); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	if !bytes.HasPrefix(c.Bytes(), []byte("{")) {
		return nil, errors.New("the body is not a JSON object")
	}
	return json.Marshal(envelope{Format: format, KeyID: KeyID(key), MAC: mac(key, format, c.Bytes()), Body: c.Bytes()})
}

// Open checks a sealed document and returns its body in compact form. Nothing in the
// body is read before the MAC matches. The errors wrap [ErrMalformed], [ErrUnsealed]
// (a [*FormatError]), [ErrOtherKey] (a [*KeyError]) or [ErrMismatch].
func Open(key []byte, format string, data []byte) ([]byte, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: unexpected data after the object", ErrMalformed)
	}
	// The format first, leniently (any other fields), so that an unsealed document
	// of an older format is named as such rather than as "unknown field".
	if env.Format != format {
		return nil, &FormatError{Got: env.Format, Want: format}
	}
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if env.MAC == "" || len(env.Body) == 0 {
		return nil, fmt.Errorf("%w: it has no mac or no body", ErrMalformed)
	}
	if id := KeyID(key); env.KeyID != id {
		return nil, &KeyError{Got: env.KeyID, Want: id}
	}
	var c bytes.Buffer
	if err := json.Compact(&c, env.Body); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !strings.HasPrefix(env.MAC, macPrefix) || !hmac.Equal([]byte(env.MAC), []byte(mac(key, format, c.Bytes()))) {
		return nil, ErrMismatch
	}
	return c.Bytes(), nil
}
