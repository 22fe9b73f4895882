package yamlstrict

import (
	"errors"
	"strconv"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
)

var testDoc = Doc{Name: "x file", Plural: "x files", EmptyHint: "start", MultiHint: "one", TabHint: "spaces"}

func TestDocumentErrors(t *testing.T) {
	for _, tc := range []struct {
		src, msg, hint string
		line, col      int
	}{
		{"", "x file is empty", "start", 1, 1},
		{"a: 1\n---\nb: 2\n", "more than one YAML document", "one", 3, 1},
		{"a: &x 1\nb: *x\n", "YAML anchors and aliases are not allowed in x files", "write the value out in full", 1, 4},
		{"a:\n\tb: 1\n", "invalid YAML: line 2: found character that cannot start any token", "spaces", 2, 1},
	} {
		d := &Decoder{File: "f.yaml"}
		if root := d.Document([]byte(tc.src), testDoc); root != nil {
			t.Errorf("%q: got a root", tc.src)
			continue
		}
		var ce *warden.ConfigError
		if len(d.Errs) != 1 || !errors.As(d.Errs[0], &ce) {
			t.Fatalf("%q: errors %v", tc.src, d.Errs)
		}
		if ce.File != "f.yaml" || ce.Msg != tc.msg || ce.Hint != tc.hint || ce.Line != tc.line || ce.Column != tc.col {
			t.Errorf("%q: got %+v", tc.src, *ce)
		}
	}
}

func TestReaders(t *testing.T) {
	var doc yaml.Node
	src := "m: {a: x, a: y, 1: z}\nl: [a, 2, ' ']\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := &Decoder{File: "f.yaml", StringKeys: true, NonBlankItems: true}
	entries, ok := d.Mapping(doc.Content[0], "the top level")
	if !ok || len(entries) != 2 {
		t.Fatalf("entries %v", entries)
	}
	if m := d.StrMap(entries[0].Value, "m"); len(m) != 1 || m["a"] != "x" {
		t.Errorf("StrMap: %v", m)
	}
	if l, ok := d.StrList(entries[1].Value, "l"); ok || len(l) != 3 {
		t.Errorf("StrList: %v %v", l, ok)
	}
	want := []string{
		`f.yaml:1:11: duplicate key "a" in m`,
		"f.yaml:1:17: m: keys must be strings, got a number",
		"f.yaml:2:8: l[1] must be a string, got a number",
		"f.yaml:2:11: l[2] is empty",
	}
	if len(d.Errs) != len(want) {
		t.Fatalf("errors: %v", d.Errs)
	}
	for i, err := range d.Errs {
		ce := err.(*warden.ConfigError)
		if got := ce.File + ":" + strconv.Itoa(ce.Line) + ":" + strconv.Itoa(ce.Column) + ": " + ce.Msg; got != want[i] {
			t.Errorf("error %d: got %q, want %q", i, got, want[i])
		}
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"version", "rules", "roles"}
	if got := Suggest("verison", known); got != `; did you mean "version"?` {
		t.Errorf("got %q", got)
	}
	if got := Suggest("zzzzzz", known); got != "" {
		t.Errorf("got %q", got)
	}
}

func TestScalarReaders(t *testing.T) {
	var doc yaml.Node
	src := "b: true\nyes: yes\nn: 7\nzero: 0\ns: ' '\nk: {good: 1, goood: 2}\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := &Decoder{File: "f.yaml"}
	kvs, _ := d.Mapping(doc.Content[0], "the top level")
	v := map[string]*yaml.Node{}
	for _, kv := range kvs {
		v[kv.Key] = kv.Value
	}
	if b, ok := d.Bool(v["b"], "b"); !ok || !b {
		t.Errorf("Bool(true) = %v %v", b, ok)
	}
	if _, ok := d.Bool(v["yes"], "yes"); ok {
		t.Error(`Bool("yes") accepted`)
	}
	if n, ok := d.Int(v["n"], "n", 1); !ok || n != 7 {
		t.Errorf("Int(7) = %v %v", n, ok)
	}
	if _, ok := d.Int(v["zero"], "zero", 1); ok {
		t.Error("Int below min accepted")
	}
	if _, ok := d.Int(v["b"], "b", 0); ok {
		t.Error("Int(true) accepted")
	}
	if _, ok := d.NonEmpty(v["s"], "s"); ok {
		t.Error("NonEmpty(' ') accepted")
	}
	if got := d.Known(v["k"], "k", []string{"good"}); len(got) != 1 || got[0].Key != "good" {
		t.Errorf("Known kept %v", got)
	}
	want := []string{
		"f.yaml:2:6: yes must be true or false, got a string",
		"f.yaml:4:7: zero: 0 is out of range",
		"f.yaml:1:4: b must be a whole number, got a boolean",
		"f.yaml:5:4: s is empty",
		`f.yaml:6:14: unknown key "goood" in k`,
	}
	if len(d.Errs) != len(want) {
		t.Fatalf("errors: %v", d.Errs)
	}
	for i, err := range d.Errs {
		ce := err.(*warden.ConfigError)
		if got := ce.File + ":" + strconv.Itoa(ce.Line) + ":" + strconv.Itoa(ce.Column) + ": " + ce.Msg; got != want[i] {
			t.Errorf("error %d: got %q, want %q", i, got, want[i])
		}
	}
	if ce := d.Errs[4].(*warden.ConfigError); ce.Hint != `known keys in k: good; did you mean "good"?` {
		t.Errorf("unknown-key hint %q", ce.Hint)
	}
}
