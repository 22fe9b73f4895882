package seal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

var key = []byte("0123456789abcdef0123456789abcdef")

func TestSealOpenRoundTrip(t *testing.T) {
	sealed, err := Seal(key, "f/v1", []byte("{ \"a\" : [1, 2] }"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := Open(key, "f/v1", sealed)
	if err != nil || string(body) != `{"a":[1,2]}` {
		t.Fatalf("Open = %s, %v", body, err)
	}
	// Another format, the same body: the format is part of what is sealed.
	other := bytes.Replace(sealed, []byte(`"format":"f/v1"`), []byte(`"format":"g/v1"`), 1)
	if _, err := Open(key, "g/v1", other); !errors.Is(err, ErrMismatch) {
		t.Errorf("a document moved to another format: %v, want ErrMismatch", err)
	}
}

func TestSealRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
		want string
	}{
		{"not JSON", "{", "the body is not JSON"},
		{"not an object", "[1]", "the body is not a JSON object"},
	} {
		if _, err := Seal(key, "f", []byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := Seal(key[:31], "f", []byte("{}")); err == nil || err.Error() != "the key is 31 bytes, want at least 32" {
		t.Errorf("short key: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	sealed, _ := Seal(key, "f/v1", []byte(`{"a":1}`))
	other := bytes.Repeat([]byte{7, 9}, 16)
	for _, tt := range []struct {
		name string
		key  []byte
		data string
		is   error
	}{
		{"not JSON", key, "{", ErrMalformed},
		{"trailing data", key, string(sealed) + "{}", ErrMalformed},
		{"unsealed", key, `{"format":"f/v0","a":1}`, ErrUnsealed},
		{"no format", key, `{"a":1}`, ErrUnsealed},
		{"unknown field", key, strings.Replace(string(sealed), `"format"`, `"x":1,"format"`, 1), ErrMalformed},
		{"other key", other, string(sealed), ErrOtherKey},
		{"edited body", key, strings.Replace(string(sealed), `"a":1`, `"a":2`, 1), ErrMismatch},
	} {
		if _, err := Open(tt.key, "f/v1", []byte(tt.data)); !errors.Is(err, tt.is) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.is)
		}
	}
}
