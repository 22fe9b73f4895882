package yamlargs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/yamlstrict"
)

// TestArgs: a YAML mapping becomes warden.Args in the order written, with
// strings as strings and numbers as numbers.
func TestArgs(t *testing.T) {
	src := `
b: 1
a: "x"
c: 1.50
d: true
e: null
f: [1, two, {k: v}]
g: {z: 1, y: 2}
h: 0x1F
i: 1e3
j: "007"
k: 2024-01-02
l: -0
`
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := &yamlstrict.Decoder{File: "x.yaml"}
	got := Args(d, doc.Content[0], "args")
	if len(d.Errs) > 0 {
		t.Fatal(d.Errs)
	}
	want := `{"b":1,"a":"x","c":1.50,"d":true,"e":null,"f":[1,"two",{"k":"v"}],"g":{"z":1,"y":2},"h":31,"i":1e3,"j":"007","k":"2024-01-02","l":-0}`
	if diff := cmp.Diff(want, string(got.AppendJSON(nil))); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if !got.Equal(warden.MustParseArgs(want)) {
		t.Errorf("args are not what ParseArgs makes of %s", want)
	}
}

func TestArgsRefused(t *testing.T) {
	for _, src := range []string{"n: .inf", "n: .nan", "n: !!binary aGVsbG8=", "{a: 1, a: 2}", "{[1]: x}"} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatal(err)
		}
		d := &yamlstrict.Decoder{File: "x.yaml"}
		Args(d, doc.Content[0], "args")
		if len(d.Errs) == 0 {
			t.Errorf("%q: no error", src)
		}
	}
}
