package jsonargs

import (
	"encoding/json"
	"testing"
)

func TestObject(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":1,"a":2}`:  `{"b":1,"a":2}`,
		" {\"b\": 1} ":   " {\"b\": 1} ",
		``:               `{}`,
		"  \n":           `{}`,
		`{"a":`:          `{"_invalid_arguments":"{\"a\":"}`,
		`[1,2]`:          `{"_invalid_arguments":"[1,2]"}`,
		`"text"`:         `{"_invalid_arguments":"\"text\""}`,
		`null`:           `{"_invalid_arguments":"null"}`,
		`{"a":1}{"b":2}`: `{"_invalid_arguments":"{\"a\":1}{\"b\":2}"}`,
		"path=<a&b>":     `{"_invalid_arguments":"path=\u003ca\u0026b\u003e"}`,
	} {
		got := Object([]byte(in))
		if string(got) != want {
			t.Errorf("Object(%q) = %s, want %s", in, got, want)
		}
		if !json.Valid(got) || !IsObject(got) {
			t.Errorf("Object(%q) = %s is not a JSON object", in, got)
		}
	}
}

func TestObjectCopies(t *testing.T) {
	in := []byte(`{"a":1}`)
	out := Object(in)
	in[2] = 'X'
	if string(out) != `{"a":1}` {
		t.Errorf("Object aliases its input: %s", out)
	}
}
