package policytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden"
)

// FuzzParseTestFile: the test-file decoder never panics, and the arguments of every case
// it accepts are a JSON object that ParseArgs reads back unchanged.
func FuzzParseTestFile(f *testing.F) {
	files, _ := filepath.Glob("../../cmd/warden/testdata/tests/*/*.yaml")
	more, _ := filepath.Glob("../../examples/policies/*_test.yaml")
	for _, file := range append(files, more...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("policy: p.yaml\ncases:\n  - {name: a, tool: t, expect: allow, args: {n: 0x10, f: 1.5e3, s: [1, {k: null}]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, tc := range tf.Cases {
			js := tc.Call.Args.AppendJSON(nil)
			back, err := warden.ParseArgs(js)
			if err != nil {
				t.Fatalf("case %q: args %s do not parse: %v", tc.Name, js, err)
			}
			if !back.Equal(tc.Call.Args) {
				t.Fatalf("case %q: args %s do not round-trip", tc.Name, js)
			}
		}
	})
}
