package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wardenhq/warden"
)

const paymentSchema = `{
	"type": "object",
	"required": ["recipient", "amount"],
	"properties": {
		"recipient": {"type": "string", "minLength": 1},
		"amount": {"type": "integer", "minimum": 1, "maximum": 1000},
		"currency": {"enum": ["EUR", "USD"]},
		"memo": {"type": "string"},
		"urgent": {"type": "boolean"},
		"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
		"meta": {
			"type": "object",
			"properties": {
				"ref": {"type": "string"},
				"lines": {
					"type": "array",
					"items": {
						"type": "object",
						"required": ["name"],
						"properties": {"name": {"type": "string"}, "qty": {"type": "integer"}},
						"additionalProperties": false
					}
				}
			}
		}
	},
	"additionalProperties": false
}`

func mustCompile(t testing.TB, raw string) *Schema {
	t.Helper()
	s, err := Compile("pay", json.RawMessage(raw))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		args   string
		want   []Problem
	}{
		{
			name:   "valid",
			schema: paymentSchema,
			args:   `{"recipient":"bob","amount":12,"currency":"EUR","urgent":false,"tags":["a","b"],"meta":{"ref":"x","lines":[{"name":"n","qty":2}]}}`,
		},
		{
			name:   "valid minimal",
			schema: paymentSchema,
			args:   `{"recipient":"bob","amount":1000}`,
		},
		{
			name:   "missing required",
			schema: paymentSchema,
			args:   `{"recipient":"bob"}`,
			want:   []Problem{{Path: "$", Message: "missing property 'amount'"}},
		},
		{
			name:   "missing two required",
			schema: paymentSchema,
			args:   `{}`,
			want:   []Problem{{Path: "$", Message: "missing properties 'recipient', 'amount'"}},
		},
		{
			name:   "wrong type",
			schema: paymentSchema,
			args:   `{"recipient":42,"amount":"12"}`,
			want: []Problem{
				{Path: "$.amount", Message: "got string, want integer"},
				{Path: "$.recipient", Message: "got number, want string"},
			},
		},
		{
			name:   "integer refuses fraction",
			schema: paymentSchema,
			args:   `{"recipient":"bob","amount":1.5}`,
			want:   []Problem{{Path: "$.amount", Message: "got number, want integer"}},
		},
		{
			name:   "enum",
			schema: paymentSchema,
			args:   `{"recipient":"bob","amount":5,"currency":"GBP"}`,
			want:   []Problem{{Path: "$.currency", Message: "value must be one of 'EUR', 'USD'"}},
		},
		{
			name:   "nested object and array paths",
			schema: paymentSchema,
			args:   `{"recipient":"bob","amount":5,"tags":["a",7],"meta":{"ref":1,"lines":[{"name":"ok"},{"qty":"x"}]}}`,
			want: []Problem{
				{Path: "$.meta.lines[1]", Message: "missing property 'name'"},
				{Path: "$.meta.lines[1].qty", Message: "got string, want integer"},
				{Path: "$.meta.ref", Message: "got number, want string"},
				{Path: "$.tags[1]", Message: "got number, want string"},
			},
		},
		{
			name:   "additionalProperties false",
			schema: paymentSchema,
			args:   `{"recipient":"bob","amount":5,"force":true,"meta":{"lines":[{"name":"a","extra":1}]}}`,
			want: []Problem{
				{Path: "$", Message: "additional properties 'force' not allowed"},
				{Path: "$.meta.lines[0]", Message: "additional properties 'extra' not allowed"},
			},
		},
		{
			name:   "several problems sorted by path then message",
			schema: paymentSchema,
			args:   `{"amount":0,"urgent":"yes","zzz":1,"tags":["a","b","c","d"]}`,
			want: []Problem{
				{Path: "$", Message: "additional properties 'zzz' not allowed"},
				{Path: "$", Message: "missing property 'recipient'"},
				{Path: "$.amount", Message: "minimum: got 0, want 1"},
				{Path: "$.tags", Message: "maxItems: got 4, want 3"},
				{Path: "$.urgent", Message: "got string, want boolean"},
			},
		},
		{
			name: "internal $ref to $defs",
			schema: `{"type":"object","properties":{"to":{"$ref":"#/$defs/addr"},"cc":{"type":"array","items":{"$ref":"#/$defs/addr"}}},
				"$defs":{"addr":{"type":"string","pattern":"^[a-z]+@[a-z.]+$"}}}`,
			args: `{"to":"a@b.c","cc":["x@y.z","nope"]}`,
			want: []Problem{{Path: "$.cc[1]", Message: "'nope' does not match pattern '^[a-z]+@[a-z.]+$'"}},
		},
		{
			name: "internal $ref under $id",
			schema: `{"$id":"https://example.com/tool.json","type":"object","properties":{"n":{"$ref":"#/$defs/n"}},
				"$defs":{"n":{"enum":[1,2]}}}`,
			args: `{"n":3}`,
			want: []Problem{{Path: "$.n", Message: "value must be one of 1, 2"}},
		},
		{
			name: "draft-07 definitions",
			schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
				"properties":{"n":{"$ref":"#/definitions/n"}},"definitions":{"n":{"type":"integer"}}}`,
			args: `{"n":"x"}`,
			want: []Problem{{Path: "$.n", Message: "got string, want integer"}},
		},
		{
			name:   "draft 2019-09",
			schema: `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`,
			args:   `{"a":false}`,
			want:   []Problem{{Path: "$.a", Message: "got boolean, want string"}},
		},
		{
			name:   "keys that are not identifiers are quoted",
			schema: `{"type":"object","properties":{"a b":{"type":"string"},"0":{"type":"string"},"it's":{"type":"string"},"x-y":{"type":"object","properties":{"_ok1":{"type":"string"}}}}}`,
			args:   `{"a b":1,"0":2,"it's":3,"x-y":{"_ok1":4}}`,
			want: []Problem{
				{Path: "$['0']", Message: "got number, want string"},
				{Path: "$['a b']", Message: "got number, want string"},
				{Path: "$['it\\'s']", Message: "got number, want string"},
				{Path: "$['x-y']._ok1", Message: "got number, want string"},
			},
		},
		{
			name:   "additional property names sorted and quoted like the library's",
			schema: `{"type":"object","required":["it's \"q\""],"additionalProperties":false}`,
			args:   `{"zeta":1,"it's \"q\"":2,"alpha":3,"tab\tkey":4}`,
			want: []Problem{
				{Path: "$", Message: `additional properties 'alpha', 'it\'s "q"', 'tab\tkey', 'zeta' not allowed`},
			},
		},
		{
			name:   "missing property quoted by the library",
			schema: `{"type":"object","required":["it's \"q\""]}`,
			args:   `{}`,
			want:   []Problem{{Path: "$", Message: `missing property 'it\'s "q"'`}},
		},
		{
			name:   "anyOf reports every branch",
			schema: `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
			args:   `{"v":3}`,
			want: []Problem{
				{Path: "$.v", Message: "got number, want null"},
				{Path: "$.v", Message: "got number, want string"},
			},
		},
		{
			name:   "format is an annotation in 2020-12",
			schema: `{"type":"object","properties":{"e":{"type":"string","format":"email"}}}`,
			args:   `{"e":"not an email"}`,
		},
		{
			name:   "format is asserted in draft-07 (library default)",
			schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"e":{"type":"string","format":"email"}}}`,
			args:   `{"e":"not an email"}`,
			want:   []Problem{{Path: "$.e", Message: "'not an email' is not valid email: missing @"}},
		},
		{
			name:   "large counts are not digit-grouped",
			schema: `{"type":"object","properties":{"s":{"type":"string","maxLength":1000}}}`,
			args:   `{"s":"` + strings.Repeat("x", 1200) + `"}`,
			want:   []Problem{{Path: "$.s", Message: "maxLength: got 1200, want 1000"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			got := s.Validate(warden.MustParseArgs(tt.args))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate(%s)\n got %q\nwant %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestNumbers(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{
		"amount":{"type":"integer","minimum":10,"maximum":1000},
		"ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
		"step":{"type":"number","multipleOf":0.5},
		"big":{"type":"integer","maximum":9007199254740992}
	}}`)
	tests := []struct {
		args string
		want []Problem
	}{
		{`{"amount":1000,"ratio":0.5,"step":2.5,"big":9007199254740992}`, nil},
		{`{"amount":10}`, nil},
		{`{"amount":1e3}`, nil},
		{`{"amount":1000.0}`, nil},
		{`{"amount":1500}`, []Problem{{Path: "$.amount", Message: "maximum: got 1500, want 1000"}}},
		{`{"amount":9}`, []Problem{{Path: "$.amount", Message: "minimum: got 9, want 10"}}},
		{`{"amount":-5}`, []Problem{{Path: "$.amount", Message: "minimum: got -5, want 10"}}},
		{`{"amount":10.5}`, []Problem{{Path: "$.amount", Message: "got number, want integer"}}},
		{`{"ratio":1}`, []Problem{{Path: "$.ratio", Message: "exclusiveMaximum: got 1, want 1"}}},
		{`{"ratio":0}`, []Problem{{Path: "$.ratio", Message: "exclusiveMinimum: got 0, want 0"}}},
		{`{"ratio":1.25}`, []Problem{{Path: "$.ratio", Message: "exclusiveMaximum: got 1.25, want 1"}}},
		{`{"step":0.3}`, []Problem{{Path: "$.step", Message: "multipleOf: got 0.3, want 0.5"}}},
		// Compared exactly, not through float64 (where both are 2^53).
		{`{"big":9007199254740993}`, []Problem{{Path: "$.big", Message: "maximum: got 9007199254740993, want 9007199254740992"}}},
		{`{"amount":"1500"}`, []Problem{{Path: "$.amount", Message: "got string, want integer"}}},
	}
	for _, tt := range tests {
		args := warden.MustParseArgs(tt.args)
		for k, v := range args.Fields() {
			if _, isNum := v.(json.Number); !isNum && k != "amount" {
				t.Fatalf("%s: %s is %T, not json.Number", tt.args, k, v)
			}
		}
		if got := s.Validate(args); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Validate(%s)\n got %q\nwant %q", tt.args, got, tt.want)
		}
	}

	// Numbers built with NewArgs from Go values are json.Number too.
	args, err := warden.NewArgs("amount", 1500)
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{{Path: "$.amount", Message: "maximum: got 1500, want 1000"}}
	if got := s.Validate(args); !reflect.DeepEqual(got, want) {
		t.Errorf("NewArgs amount 1500: got %q, want %q", got, want)
	}
}

func TestCompileEmptySchema(t *testing.T) {
	for _, raw := range []json.RawMessage{nil, {}, json.RawMessage("  \n\t")} {
		s, err := Compile("t", raw)
		if err != nil {
			t.Fatalf("Compile(%q): %v", raw, err)
		}
		for _, a := range []string{`{}`, `{"anything":[1,{"x":null}],"b":true}`} {
			if got := s.Validate(warden.MustParseArgs(a)); got != nil {
				t.Errorf("Compile(%q).Validate(%s) = %q, want nil", raw, a, got)
			}
		}
	}
	// {} as a schema is an object with no constraints: fine too.
	if s, err := Compile("t", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	} else if got := s.Validate(warden.MustParseArgs(`{"a":1}`)); got != nil {
		t.Errorf("{}: %q", got)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []string // substrings of the error after the prefix
	}{
		{"true", `true`, []string{"must be a JSON object", "boolean schema true"}},
		{"false", `false`, []string{"must be a JSON object", "boolean schema false"}},
		{"array", `[{"type":"object"}]`, []string{"must be a JSON object", "an array"}},
		{"string", `"object"`, []string{"must be a JSON object", "a string"}},
		{"number", `1`, []string{"must be a JSON object", "a number"}},
		{"null", `null`, []string{"must be a JSON object", "null"}},
		{"type string", `{"type":"string"}`, []string{`"type" must be "object"`, `not "string"`}},
		{"type union", `{"type":["object","null"]}`, []string{`"type" must be "object"`, `["object","null"]`}},
		{"type not a string", `{"type":7}`, []string{`"type" must be "object"`, "not 7"}},
		{"invalid JSON", `{"type":"object",}`, []string{"invalid JSON"}},
		{"truncated JSON", `{"type":"object"`, []string{"invalid JSON"}},
		{"trailing data", `{"type":"object"} {}`, []string{"invalid JSON", "after the schema"}},
		{"duplicate key", `{"type":"object","properties":{"a":{"type":"string","type":"integer"}}}`, []string{"invalid JSON", `duplicate key "type"`, `"/properties/a"`}},
		{"external https ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/x.json"}}}`, []string{`"https://example.com/x.json"`, "external references are refused"}},
		{"external root ref", `{"$ref":"https://example.com/x.json#/defs/a"}`, []string{`"https://example.com/x.json"`, "external references are refused"}},
		{"file ref", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, []string{`"file:///etc/passwd"`, "external references are refused"}},
		{"relative ref", `{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`, []string{"other.json", "external references are refused"}},
		{"relative ref under $id", `{"$id":"https://example.com/a/tool.json","type":"object","properties":{"a":{"$ref":"defs.json"}}}`, []string{`"https://example.com/a/defs.json"`, "external references are refused"}},
		{"custom meta-schema", `{"$schema":"https://example.com/meta.json","type":"object"}`, []string{`"https://example.com/meta.json"`, "external references are refused"}},
		{"dangling internal ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, []string{"missing"}},
		{"invalid keyword value", `{"type":"object","properties":{"a":{"type":"strin"}}}`, []string{"not a valid JSON Schema", "/properties/a/type"}},
		{"invalid regexp", `{"type":"object","properties":{"a":{"pattern":"(?=x)"}}}`, []string{"not a valid JSON Schema", "/properties/a/pattern"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile("my_tool", json.RawMessage(tt.schema))
			if err == nil {
				t.Fatalf("Compile(%s) = %v, want an error", tt.schema, s)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "schema for tool 'my_tool': ") {
				t.Errorf("error %q lacks the tool prefix", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is not one line", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}

// TestExternalRefsNeverLoaded points references at things that exist and would make the
// schema compile if they were loaded: a local HTTP server and a file. Both must be
// refused without being touched.
func TestExternalRefsNeverLoaded(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/schema+json")
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()

	file := filepath.Join(t.TempDir(), "defs.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fileURL := "file://" + filepath.ToSlash(file)

	for _, ref := range []string{srv.URL + "/defs.json", fileURL, file} {
		raw := fmt.Sprintf(`{"type":"object","properties":{"a":{"$ref":%q}}}`, ref)
		_, err := Compile("t", json.RawMessage(raw))
		if err == nil {
			t.Errorf("$ref %q compiled; external references must be refused", ref)
			continue
		}
		if !strings.Contains(err.Error(), "external references are refused") {
			t.Errorf("$ref %q: error %q does not say external references are refused", ref, err)
		}
	}
	// A meta-schema is a reference too.
	if _, err := Compile("t", json.RawMessage(fmt.Sprintf(`{"$schema":%q}`, srv.URL+"/meta.json"))); err == nil {
		t.Error("custom $schema compiled; it must be refused")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the HTTP server was asked %d times; want 0", n)
	}
}

func TestLoaderRefusesEverything(t *testing.T) {
	for _, u := range []string{"https://example.com/x.json", "file:///etc/passwd", resourceURL, "http://json-schema.org/draft-07/schema"} {
		doc, err := refusingLoader{}.Load(u)
		if err == nil || doc != nil || !errors.Is(err, errExternalRef) || !strings.Contains(err.Error(), u) {
			t.Errorf("Load(%q) = %v, %v; want a refusal naming the URL", u, doc, err)
		}
	}
}

func TestRefusalTextGolden(t *testing.T) {
	s := mustCompile(t, paymentSchema)
	problems := s.Validate(warden.MustParseArgs(`{"recipient":"bob","amount":1500,"memo":["x"]}`))
	got := RefusalText("pay", problems)
	const want = "Invalid arguments for tool 'pay' \u2014 the call was not executed.\n" +
		"- '$.amount': maximum: got 1500, want 1000\n" +
		"- '$.memo': got array, want string\n" +
		"Fix the arguments to match the tool's input schema and call it again."
	if got != want {
		t.Errorf("RefusalText:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(got, "'pay' — the call") { // the literal em dash, U+2014
		t.Error("first line does not contain an em dash")
	}
}

func TestRefusalTextKeepsOrder(t *testing.T) {
	got := RefusalText("t", []Problem{{Path: "$.z", Message: "b"}, {Path: "$", Message: "a"}})
	want := "Invalid arguments for tool 't' — the call was not executed.\n- '$.z': b\n- '$': a\nFix the arguments to match the tool's input schema and call it again."
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestValidateDoesNotMutateArgs(t *testing.T) {
	s := mustCompile(t, paymentSchema)
	for _, in := range []string{
		`{"recipient":"bob","amount":12,"tags":["a"],"meta":{"lines":[{"name":"n"}]}}`,
		`{"amount":"x","z":{"b":1,"a":[1,2,{"c":null}]}}`,
	} {
		args := warden.MustParseArgs(in)
		before := string(args.AppendJSON(nil))
		clone := warden.MustParseArgs(in)
		s.Validate(args)
		if after := string(args.AppendJSON(nil)); after != before || !args.Equal(clone) {
			t.Errorf("args changed: %s -> %s", before, after)
		}
	}
}

func TestValidateRecoversPanic(t *testing.T) {
	s := &Schema{check: func(any) error { panic("boom") }}
	got := s.Validate(warden.MustParseArgs(`{"a":1}`))
	want := []Problem{{Path: "$", Message: "schema validation failed: boom"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}

	want = []Problem{{Path: "$", Message: "schema validation failed: no compiled schema"}}
	for _, s := range []*Schema{nil, {}} {
		if got := s.Validate(warden.Args{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%#v: got %q, want %q", s, got, want)
		}
	}

	s = &Schema{check: func(any) error { return errors.New("odd failure") }}
	got = s.Validate(warden.Args{})
	want = []Problem{{Path: "$", Message: "schema validation failed: odd failure"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestValidateStableOrder(t *testing.T) {
	s := mustCompile(t, paymentSchema)
	args := warden.MustParseArgs(`{"a":1,"b":2,"c":3,"d":4,"amount":"x","tags":[1,2],"meta":{"lines":[{"q":1},{"r":2}]}}`)
	first := s.Validate(args)
	if len(first) < 8 {
		t.Fatalf("expected many problems, got %q", first)
	}
	for range 50 {
		if got := s.Validate(args); !reflect.DeepEqual(got, first) {
			t.Fatalf("order changed:\n%q\n%q", first, got)
		}
	}
}

func TestValidateConcurrent(t *testing.T) {
	s := mustCompile(t, paymentSchema)
	valid := warden.MustParseArgs(`{"recipient":"bob","amount":12,"currency":"USD","tags":["a"],"meta":{"lines":[{"name":"n"}]}}`)
	invalid := warden.MustParseArgs(`{"recipient":"bob","amount":1500,"currency":"GBP","meta":{"lines":[{"qty":"x"}]}}`)
	wantInvalid := s.Validate(invalid)
	if len(wantInvalid) != 4 {
		t.Fatalf("invalid args: %q", wantInvalid)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if (g+i)%2 == 0 {
					if got := s.Validate(valid); got != nil {
						errs <- fmt.Sprintf("valid: %q", got)
						return
					}
				} else if got := s.Validate(invalid); !reflect.DeepEqual(got, wantInvalid) {
					errs <- fmt.Sprintf("invalid: %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestJSONPath(t *testing.T) {
	inst := map[string]any{
		"list": []any{map[string]any{"a b": "x"}},
		"0":    map[string]any{"1": true},
	}
	tests := []struct {
		toks []string
		want string
	}{
		{nil, "$"},
		{[]string{"list"}, "$.list"},
		{[]string{"list", "0"}, "$.list[0]"},
		{[]string{"list", "0", "a b"}, "$.list[0]['a b']"},
		{[]string{"0", "1"}, "$['0']['1']"},
		{[]string{""}, "$['']"},
		{[]string{`a'b\c`}, `$['a\'b\\c']`},
		{[]string{"new\nline\x01"}, `$['new\nline\u0001']`},
		{[]string{"héllo"}, "$['héllo']"},
		{[]string{"_x9"}, "$._x9"},
		{[]string{"9x"}, "$['9x']"},
		{[]string{"missing", "deeper"}, "$.missing.deeper"},
	}
	for _, tt := range tests {
		if got := jsonPath(inst, tt.toks); got != tt.want {
			t.Errorf("jsonPath(%q) = %s, want %s", tt.toks, got, tt.want)
		}
	}
}

// benchSchema has seven properties: strings, an integer with bounds, an enum, a
// boolean, an array of strings and a nested object.
const benchSchema = `{
	"type": "object",
	"required": ["path", "mode", "count"],
	"properties": {
		"path": {"type": "string", "minLength": 1},
		"content": {"type": "string"},
		"count": {"type": "integer", "minimum": 0, "maximum": 1000},
		"mode": {"enum": ["read", "write", "append"]},
		"force": {"type": "boolean"},
		"tags": {"type": "array", "items": {"type": "string"}},
		"options": {
			"type": "object",
			"properties": {"encoding": {"type": "string"}, "mkdir": {"type": "boolean"}},
			"additionalProperties": false
		}
	},
	"additionalProperties": false
}`

func BenchmarkValidateValid(b *testing.B) {
	s := mustCompile(b, benchSchema)
	args := warden.MustParseArgs(`{"path":"/tmp/out.txt","content":"hello world","count":42,"mode":"write","force":false,"tags":["a","b","c"],"options":{"encoding":"utf-8","mkdir":true}}`)
	if p := s.Validate(args); p != nil {
		b.Fatalf("valid args refused: %q", p)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s.Validate(args) != nil {
			b.Fatal("refused")
		}
	}
}

func BenchmarkValidateInvalid(b *testing.B) {
	s := mustCompile(b, benchSchema)
	args := warden.MustParseArgs(`{"path":"","content":7,"count":1500,"mode":"delete","force":"yes","tags":["a",2],"options":{"encoding":"utf-8","extra":1}}`)
	if p := s.Validate(args); len(p) != 7 {
		b.Fatalf("want 7 problems, got %q", p)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s.Validate(args) == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	raw := json.RawMessage(benchSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("bench", raw); err != nil {
			b.Fatal(err)
		}
	}
}
