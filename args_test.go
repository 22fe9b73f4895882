package warden_test

// Args: an ordered JSON object. Order is behaviour (match strings), duplicates are
// refused at every depth, and the digest that binds approvals ignores key order.

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
)

func TestParseArgs_KeepsOrder(t *testing.T) {
	a, err := warden.ParseArgs([]byte(`{"b":1,"a":"x","c":{"z":true,"y":null},"d":[3,{"q":1,"p":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"b", "a", "c", "d"}, a.Keys()); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
	c, _ := a.Get("c")
	if d := cmp.Diff([]string{"z", "y"}, c.(warden.Args).Keys()); d != "" {
		t.Errorf("nested keys (-want +got):\n%s", d)
	}
	arr, _ := a.Get("d")
	if got := arr.(warden.Array).At(1).(warden.Args).Keys(); !cmp.Equal(got, []string{"q", "p"}) {
		t.Errorf("keys of an object in an array: %v", got)
	}
	if n, _ := a.Get("b"); n != json.Number("1") {
		t.Errorf("numbers decode as json.Number: %#v", n)
	}
	var keys []string
	for k := range a.Fields() {
		keys = append(keys, k)
		if k == "a" {
			break
		}
	}
	if !cmp.Equal(keys, []string{"b", "a"}) {
		t.Errorf("Fields with early stop: %v", keys)
	}
}

func TestParseArgs_Refusals(t *testing.T) {
	tests := []struct {
		in        string
		notObject bool
		contains  string
	}{
		{`{"a":1,"a":2}`, false, "duplicate key"},
		{`{"a":{"b":1,"b":2}}`, false, "duplicate key"},
		{`{"a":[{"b":1,"b":2}]}`, false, "duplicate key"},
		{`{"a":1,"b":{"c":[1,{"d":{"e":1,"e":1}}]}}`, false, "duplicate key"},
		{`[]`, true, ""},
		{`[{"a":1}]`, true, ""},
		{`"x"`, true, ""},
		{`1`, true, ""},
		{`null`, true, ""},
		{`true`, true, ""},
		{``, true, ""},
		{`   `, true, ""},
		{`{} {}`, false, "after"},
		{`{}x`, false, ""},
		{`{}]`, false, ""},
		{`{"a":1}{"b":2}`, false, "after"},
		{`{`, false, ""},
		{`{"a":}`, false, ""},
		{`{"a" 1}`, false, ""},
		{`{'a':1}`, false, ""},
		{`{"a":1,}`, false, ""},
		{`{"a":NaN}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := warden.ParseArgs([]byte(tt.in))
			if err == nil {
				t.Fatalf("ParseArgs(%q) succeeded", tt.in)
			}
			if tt.notObject && !errors.Is(err, warden.ErrNotObject) {
				t.Errorf("error %v, want ErrNotObject", err)
			}
			if tt.contains != "" && !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not mention %q", err, tt.contains)
			}
		})
	}
	for _, ok := range []string{`{}`, ` {"a":1} `, "{\n}\n", `{"a":{"a":{"a":1}}}`} {
		if _, err := warden.ParseArgs([]byte(ok)); err != nil {
			t.Errorf("ParseArgs(%q): %v", ok, err)
		}
	}
}

func TestArgs_MarshalRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"b":1,"a":2}`,
		`{"html":"<a href='x'>&</a>","n":1.50,"e":1e3,"neg":-0,"big":123456789012345678901234567890}`,
		`{"nested":{"z":[1,"two",null,true,{"k":[]}],"a":{}},"s":"line\nbreak\ttab \"q\" \\ é 😀"}`,
		`{"ctl":"\u0001\u001f"}`,
	} {
		a := A(in)
		b, err := a.MarshalJSON() // json.Marshal would HTML-escape a Marshaler's output
		if err != nil {
			t.Fatal(err)
		}
		back, err := warden.ParseArgs(b)
		if err != nil {
			t.Fatalf("%s: re-parse of %s: %v", in, b, err)
		}
		if !back.Equal(a) || back.Digest() != a.Digest() {
			t.Errorf("round trip changed %s into %s", in, b)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(in)); err != nil {
			t.Fatal(err)
		}
		if string(b) != compact.String() {
			t.Errorf("MarshalJSON = %s, want the compact input %s (order and numbers as written)", b, compact.String())
		}
	}
	// MarshalJSON keeps key order and does not HTML-escape; through json.Marshal the
	// escaping is encoding/json's and the value is unchanged.
	if got, _ := A(`{"z":"<&>","a":1.50}`).MarshalJSON(); string(got) != `{"z":"<&>","a":1.50}` {
		t.Errorf("MarshalJSON = %s", got)
	}
	if got, _ := json.Marshal(A(`{"z":"<&>","a":1.50}`)); !A(string(got)).Equal(A(`{"z":"<&>","a":1.50}`)) {
		t.Errorf("json.Marshal = %s", got)
	}
	var zero warden.Args
	if got, _ := json.Marshal(zero); string(got) != `{}` {
		t.Errorf("zero Args marshals to %s", got)
	}
	// Inside a struct, UnmarshalJSON applies ParseArgs' rules.
	var s struct{ Args warden.Args }
	if err := json.Unmarshal([]byte(`{"Args":{"a":1,"a":2}}`), &s); err == nil {
		t.Error("UnmarshalJSON accepted a duplicate key")
	}
	if err := json.Unmarshal([]byte(`{"Args":[1]}`), &s); err == nil {
		t.Error("UnmarshalJSON accepted an array")
	}
}

func TestArgs_Digest(t *testing.T) {
	a := A(`{"b":1,"a":{"y":[1,{"q":2,"p":3}],"x":"s"}}`)
	b := A(`{"a":{"x":"s","y":[1,{"p":3,"q":2}]},"b":1}`)
	if a.Digest() != b.Digest() {
		t.Error("Digest depends on key order")
	}
	if a.Equal(b) {
		t.Error("Equal ignores key order; it must not (order changes match strings)")
	}
	if !strings.HasPrefix(a.Digest(), "sha256:") || len(a.Digest()) != len("sha256:")+64 {
		t.Errorf("digest format %q", a.Digest())
	}
	for _, other := range []string{
		`{"b":2,"a":{"x":"s","y":[1,{"p":3,"q":2}]}}`,
		`{"b":1,"a":{"x":"S","y":[1,{"p":3,"q":2}]}}`,
		`{"b":1,"a":{"x":"s","y":[{"p":3,"q":2},1]}}`,
		`{"b":1,"a":{"x":"s","y":[1,{"p":3,"q":2}]},"c":null}`,
		`{"b":"1","a":{"x":"s","y":[1,{"p":3,"q":2}]}}`,
	} {
		if A(other).Digest() == a.Digest() {
			t.Errorf("Digest of %s equals the digest of a different object", other)
		}
	}
	// Keys and values cannot be shifted across the boundary.
	if A(`{"a":"b,c"}`).Digest() == A(`{"a":"b","c":null}`).Digest() {
		t.Error("digest collision across a string boundary")
	}
}

func TestArgs_Equal(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{}`, `{}`, true},
		{`{"a":1}`, `{"a":1}`, true},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, false},
		{`{"a":1}`, `{"a":1.0}`, false}, // numbers compare by their JSON text
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"a":null}`, `{}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":{"x":1,"y":2}}`, `{"a":{"y":2,"x":1}}`, false},
		{`{"a":{"x":[true,null]}}`, `{"a":{"x":[true,null]}}`, true},
		{`{"a":true}`, `{"a":false}`, false},
	}
	for _, tt := range tests {
		if got := A(tt.a).Equal(A(tt.b)); got != tt.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestArgs_WithWithoutCopy(t *testing.T) {
	orig := A(`{"a":1,"b":{"c":2}}`)
	w := orig.With("a", "one")
	if js(orig) != `{"a":1,"b":{"c":2}}` {
		t.Errorf("With changed the receiver: %s", js(orig))
	}
	if js(w) != `{"a":"one","b":{"c":2}}` {
		t.Errorf("With replaces in place: %s", js(w))
	}
	if got := js(orig.With("z", []int{1, 2})); got != `{"a":1,"b":{"c":2},"z":[1,2]}` {
		t.Errorf("With appends a new key: %s", got)
	}
	if got := js(orig.With("m", map[string]any{"k": 1.5})); got != `{"a":1,"b":{"c":2},"m":{"k":1.5}}` {
		t.Errorf("With normalizes Go values: %s", got)
	}
	v, _ := orig.With("n", 7).Get("n")
	if v != json.Number("7") {
		t.Errorf("With normalizes numbers to json.Number: %#v", v)
	}
	wo := orig.Without("a")
	if js(orig) != `{"a":1,"b":{"c":2}}` || js(wo) != `{"b":{"c":2}}` {
		t.Errorf("Without: orig %s, result %s", js(orig), js(wo))
	}
	if js(orig.Without("missing")) != js(orig) {
		t.Error("Without a missing key changed the object")
	}
	// Chained With calls on a shared prefix do not alias each other.
	base := A(`{"a":1}`).With("b", 2)
	x, y := base.With("c", "x"), base.With("c", "y")
	if js(x) != `{"a":1,"b":2,"c":"x"}` || js(y) != `{"a":1,"b":2,"c":"y"}` {
		t.Errorf("aliasing: %s %s", js(x), js(y))
	}
	keys := orig.Keys()
	keys[0] = "mutated"
	if orig.Keys()[0] != "a" {
		t.Error("Keys returned the receiver's storage")
	}
	defer func() {
		if recover() == nil {
			t.Error("With a value that does not encode as JSON must panic")
		}
	}()
	orig.With("bad", math.Inf(1))
}

func TestNewArgs(t *testing.T) {
	a, err := warden.NewArgs("command", "ls", "n", 3, "opts", map[string]bool{"all": true}, "list", []string{"x"}, "nil", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := js(a); got != `{"command":"ls","n":3,"opts":{"all":true},"list":["x"],"nil":null}` {
		t.Errorf("NewArgs = %s", got)
	}
	if s, ok := a.String("command"); !ok || s != "ls" {
		t.Errorf("String(command) = %q %v", s, ok)
	}
	if _, ok := a.String("n"); ok {
		t.Error("String on a number reported ok")
	}
	if a.Len() != 5 {
		t.Errorf("Len = %d", a.Len())
	}
	m := a.Map()
	if _, ok := m["opts"].(map[string]any); !ok {
		t.Errorf("Map turns nested objects into maps: %#v", m["opts"])
	}
	for name, kv := range map[string][]any{
		"odd":        {"a"},
		"non-string": {1, "a"},
		"duplicate":  {"a", 1, "a", 2},
		"bad value":  {"c", make(chan int)},
	} {
		if _, err := warden.NewArgs(kv...); err == nil {
			t.Errorf("%s: NewArgs(%v) succeeded", name, kv)
		}
	}
	if a, err := warden.NewArgs(); err != nil || a.Len() != 0 {
		t.Errorf("NewArgs() = %v, %v", a, err)
	}
}

func TestArgs_ConcurrentReads(t *testing.T) {
	a := A(`{"a":[1,2,{"b":"c"}],"d":{"e":"f"}}`)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				_ = a.Digest()
				_ = js(a)
				_ = a.Map()
				_ = a.With("x", 1)
				_, _ = a.Get("d")
			}
		}()
	}
	wg.Wait()
}

func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"b":[1,{"c":null}],"a":"x"}`, `{"a":1,"a":2}`, `[]`, `{"u":"\u00e9\ud83d\ude00"}`, `{"n":-1.5e-10}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := warden.ParseArgs(data)
		if err != nil {
			return
		}
		// Whatever parses must re-parse from its own encoding to an equal object with
		// the same digest, and the encoding must be valid JSON.
		b := a.AppendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("encoding of %q is not valid JSON: %s", data, b)
		}
		back, err := warden.ParseArgs(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !back.Equal(a) || back.Digest() != a.Digest() {
			t.Fatalf("round trip changed %q into %s", data, b)
		}
		// Map builds a tree that encodes to the same object (digest), and that the
		// caller may change without changing a.
		m := a.Map()
		mb, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Map of %s does not encode: %v", b, err)
		}
		viaMap, err := warden.ParseArgs(mb)
		if err != nil || viaMap.Digest() != a.Digest() {
			t.Fatalf("Map of %s encodes as %s (%v)", b, mb, err)
		}
		tamper(m)
		if string(a.AppendJSON(nil)) != string(b) {
			t.Fatalf("changing Map's tree changed %s into %s", b, a.AppendJSON(nil))
		}
	})
}

// FuzzWithNumber checks that With accepts exactly the json.Number texts encoding/json
// accepts (but the empty one), and that an accepted one encodes as valid JSON holding the same number.
func FuzzWithNumber(f *testing.F) {
	for _, s := range []string{`0`, `-1.5e+10`, `01`, `1,"x":2`, ``, `1e`, `.5`, `1.0E-3`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, stdErr := json.Marshal(json.Number(s))
		var a warden.Args
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			a = warden.Args{}.With("n", json.Number(s))
			return false
		}()
		// encoding/json writes an empty json.Number as 0; Args refuses it, since its
		// text is what is written.
		if panicked != (stdErr != nil || s == "") {
			t.Fatalf("With(json.Number(%q)) panicked=%v, encoding/json error %v", s, panicked, stdErr)
		}
		if panicked {
			return
		}
		back, err := warden.ParseArgs(a.AppendJSON(nil))
		if err != nil {
			t.Fatalf("With(json.Number(%q)) encodes as %s: %v", s, a.AppendJSON(nil), err)
		}
		if v, _ := back.Get("n"); v != json.Number(s) || back.Len() != 1 {
			t.Fatalf("With(json.Number(%q)) encodes as %s", s, a.AppendJSON(nil))
		}
	})
}

func TestParseArgsRefusesCaseOnlyDuplicates(t *testing.T) {
	for _, in := range []string{`{"command":"ls","Command":"rm -rf /"}`, `{"o":{"k":1,"K":2}}`} {
		if _, err := warden.ParseArgs([]byte(in)); err == nil || !strings.Contains(err.Error(), "differ only in case") {
			t.Errorf("ParseArgs(%s) err = %v, want a case-only duplicate error", in, err)
		}
	}
}

func TestArray(t *testing.T) {
	a := A(`{"xs":["a",{"k":[1,2]},null,true]}`)
	v, _ := a.Get("xs")
	arr, ok := v.(warden.Array)
	if !ok {
		t.Fatalf("an array decodes as %T, want warden.Array", v)
	}
	if arr.Len() != 4 || arr.At(0) != "a" || arr.At(2) != nil || arr.At(3) != true {
		t.Errorf("Len/At: %d %#v %#v %#v", arr.Len(), arr.At(0), arr.At(2), arr.At(3))
	}
	var idx []int
	for i := range arr.All() {
		idx = append(idx, i)
		if i == 1 {
			break
		}
	}
	if !cmp.Equal(idx, []int{0, 1}) {
		t.Errorf("All with early stop: %v", idx)
	}
	s := arr.Slice()
	s[0] = "changed"
	if arr.At(0) != "a" {
		t.Error("Slice handed out the array's storage")
	}
	built, err := warden.NewArray(s...)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(built.AppendJSON(nil)); got != `["changed",{"k":[1,2]},null,true]` {
		t.Errorf("NewArray from a modified Slice: %s", got)
	}
	if !arr.Equal(v.(warden.Array)) || arr.Equal(built) {
		t.Error("Equal")
	}
	if got := js(warden.Args{}.With("e", warden.Array{})); got != `{"e":[]}` {
		t.Errorf("the zero Array encodes as %s, want []", got)
	}
	if _, err := warden.NewArray(math.NaN()); err == nil {
		t.Error("NewArray accepted a value that does not encode as JSON")
	}
	var u warden.Array
	if err := json.Unmarshal([]byte(`[1,{"a":1}]`), &u); err != nil || string(u.AppendJSON(nil)) != `[1,{"a":1}]` {
		t.Errorf("UnmarshalJSON: %v %s", err, u.AppendJSON(nil))
	}
	for _, bad := range []string{`[{"a":1,"a":2}]`, `{"a":1}`, `[1] [2]`, `[1`} {
		if err := u.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("UnmarshalJSON(%s) accepted", bad)
		}
	}
	if b, err := json.Marshal(struct{ X warden.Array }{arr}); err != nil || string(b) != `{"X":["a",{"k":[1,2]},null,true]}` {
		t.Errorf("MarshalJSON: %s %v", b, err)
	}
}

// With stores only what its encoding carries: a json.Number that is not a number would
// splice arbitrary text (another key, say) into the JSON a tool or upstream receives,
// and a string that is not UTF-8 is stored in the form JSON carries it.
func TestArgs_WithStoresWhatItsEncodingCarries(t *testing.T) {
	for _, n := range []string{`1,"command":"rm -rf /"`, ``, `01`, `1.`, `.5`, `1e`, `+1`, `NaN`, `0x10`, `1 `} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("With(json.Number(%q)) did not panic", n)
				}
			}()
			warden.Args{}.With("n", json.Number(n))
		}()
	}
	for _, n := range []string{`0`, `-0`, `12`, `-1.5e+10`, `3E-2`, `0.25`} {
		if got := js(warden.Args{}.With("n", json.Number(n))); got != `{"n":`+n+`}` {
			t.Errorf("With(json.Number(%q)) = %s", n, got)
		}
	}
	a := warden.Args{}.With("s", "a\xffb")
	s, _ := a.String("s")
	back, err := warden.ParseArgs(a.AppendJSON(nil))
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := back.String("s")
	if s != s2 || s != "a\ufffdb" {
		t.Errorf("an invalid UTF-8 string is stored as %q and encodes as %q; want both %q", s, s2, "a\ufffdb")
	}
}
