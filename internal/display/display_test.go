package display

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds one value of every kind of lying character the package must expose.
var hostile = []struct {
	name, in, line string
}{
	{"rtl override", "rm -rf \u202e/ #yrotcerid-pmt/.", `rm -rf \u202e/ #yrotcerid-pmt/.`},
	{"isolates", "a\u2066b\u2067c\u2068d\u2069e", `a\u2066b\u2067c\u2068d\u2069e`},
	{"embeddings", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
	{"marks", "\u061c\u200e\u200f", `\u061c\u200e\u200f`},
	{"zero width", "r\u200bm\u200c\u200d\u2060\u2061\u2064\ufeff", `r\u200bm\u200c\u200d\u2060\u2061\u2064\ufeff`},
	{"newline and cr", "echo ok\r\nrm -rf /", `echo ok\u000d\u000arm -rf /`},
	{"ansi", "\x1b[2J\x1b[31mred\x1b[0m", `\u001b[2J\u001b[31mred\u001b[0m`},
	{"nul del c1", "a\x00b\x7fc\u0085d\u009b", `a\u0000b\u007fc\u0085d\u009b`},
	{"tab", "a\tb", `a\u0009b`},
	{"tags", "x\U000e0041\U000e007f", `x\U000e0041\U000e007f`},
	{"variation selectors", "\u2764\ufe0f \U000e0100", `❤\ufe0f \U000e0100`},
	{"spaces", "rm\u00a0-rf\u3000/\u2009", `rm\u00a0-rf\u3000/\u2009`},
	{"separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
	{"fillers", "\u3164\u115f\u2800\u034f", `\u3164\u115f\u2800\u034f`},
	{"private use", "\ue000", `\ue000`},
	{"invalid utf8", "a\xffb\xc3", `a\xffb\xc3`},
	{"replacement char", "a\ufffdb", `a\ufffdb`},
	{"backslash", `C:\u202e\x`, `C:\\u202e\\x`},
}

func TestLineEscapesHostileText(t *testing.T) {
	for _, c := range hostile {
		t.Run(c.name, func(t *testing.T) {
			got := Line(c.in)
			if got.String() != c.line {
				t.Errorf("Line(%q) = %q, want %q", c.in, got.String(), c.line)
			}
			assertVisible(t, got.String())
		})
	}
}

// assertVisible fails when s holds any character a person could not see as itself.
func assertVisible(t *testing.T, s string) {
	t.Helper()
	assertVisibleLines(t, s, false)
}

// assertVisibleLines is assertVisible allowing line feeds when lines is set.
func assertVisibleLines(t *testing.T, s string, lines bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("shown text %q is not valid UTF-8", s)
	}
	for _, r := range s {
		if Unsafe(r) && !(lines && r == '\n') {
			t.Errorf("shown text %q still holds %U", s, r)
		}
	}
}

func TestPlainTextUnchanged(t *testing.T) {
	for _, s := range []string{
		"rm -rf ./tmp-directory # cleanup",
		"!\"#$%&'()*+,-./0123456789:;<=>?@ABCXYZ[]^_`abcxyz{|}~",
		"grüße, 日本語, русский, ελληνικά, עברית, العربية, 👍",
	} {
		got := Line(s)
		if got.String() != s || got.Escapes() != 0 {
			t.Errorf("Line(%q) = %q (%d escapes), want it unchanged", s, got.String(), got.Escapes())
		}
		if h := string(got.HTML()); strings.Contains(h, `class="esc"`) {
			t.Errorf("HTML of %q marks an escape: %s", s, h)
		}
	}
}

func TestBlockKeepsLineFeeds(t *testing.T) {
	got := Block("one\ntwo\r\nthree\u202e")
	if want := "one\ntwo\\u000d\nthree\\u202e"; got.String() != want {
		t.Errorf("Block = %q, want %q", got.String(), want)
	}
}

func TestEveryControlAndFormatCharacterEscaped(t *testing.T) {
	must := []rune{0x061c, 0x200e, 0x200f, 0x00ad, 0x180e, 0xfff9, 0xfffb, 0xe0001, 0xe0000, 0x10ffff}
	for r := rune(0); r < 0x20; r++ {
		must = append(must, r)
	}
	for r := rune(0x7f); r <= 0x9f; r++ {
		must = append(must, r)
	}
	for _, rg := range [][2]rune{{0x200b, 0x200f}, {0x202a, 0x202e}, {0x2060, 0x2064}, {0x2066, 0x206f},
		{0xe0020, 0xe007f}, {0xfe00, 0xfe0f}, {0xe0100, 0xe01ef}, {0x2000, 0x200a}} {
		for r := rg[0]; r <= rg[1]; r++ {
			must = append(must, r)
		}
	}
	for _, r := range must {
		if !Unsafe(r) {
			t.Errorf("Unsafe(%U) = false, want true", r)
		}
		if got := Line(string(r)); got.Escapes() != 1 || len(got) != 1 {
			t.Errorf("Line(%U) = %q, want one escape", r, got.String())
		}
	}
	for _, r := range []rune{' ', 'a', '~', 'é', 'ß', '日', 'ж', '👍', '→', '€'} {
		if Unsafe(r) {
			t.Errorf("Unsafe(%q) = true, want false", r)
		}
	}
}

func TestHTMLMarksEscapes(t *testing.T) {
	got := string(Line("<b>\u202e&").HTML())
	want := `&lt;b&gt;<span class="esc" title="U&#43;202E RIGHT-TO-LEFT OVERRIDE">\u202e</span>&amp;`
	if got != want {
		t.Errorf("HTML = %s, want %s", got, want)
	}
}

func TestJSONPretty(t *testing.T) {
	raw := []byte(`{"command":"rm -rf \u202e/ #x","z":[1,2.50,{"k":null}],"e":{},"a":[],"b":true,` +
		`"nl":"a\nb\u0000\u001b[31m","q":"\"\\\u003c","tag":"\udb40\udc41","d":1,"d":2}`)
	got, ok := JSON(raw)
	if !ok {
		t.Fatal("JSON: not ok")
	}
	want := `{
  "command": "rm -rf \u202e/ #x",
  "z": [
    1,
    2.50,
    {
      "k": null
    }
  ],
  "e": {},
  "a": [],
  "b": true,
  "nl": "a\nb\u0000\u001b[31m",
  "q": "\"\\<",
  "tag": "\udb40\udc41",
  "d": 1,
  "d": 2
}`
	if got.String() != want {
		t.Errorf("JSON =\n%s\nwant\n%s", got.String(), want)
	}
	if n := got.Escapes(); n != 5 {
		t.Errorf("escapes = %d, want 5 (\\u202e, \\n, \\u0000, \\u001b, the tag pair)", n)
	}
	// Same value as the input (duplicate keys aside, which a map cannot hold).
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got.String()), &b); err != nil {
		t.Fatalf("shown JSON is not JSON: %v", err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("value changed: %v vs %v", a, b)
	}
}

func TestJSONRawHostileCharacters(t *testing.T) {
	// The characters as raw UTF-8 inside the JSON text, as a client may send them.
	raw := []byte("{\"cmd\":\"rm -rf \u202e/\u2066 #\u200d\ufeff\xff\"}")
	got, ok := JSON(raw)
	if !ok {
		t.Fatal("JSON: not ok")
	}
	want := "{\n  \"cmd\": \"rm -rf \\u202e/\\u2066 #\\u200d\\ufeff\\ufffd\"\n}"
	if got.String() != want {
		t.Errorf("JSON = %q, want %q", got.String(), want)
	}
	assertVisibleLines(t, got.String(), true)
}

func TestJSONNotJSON(t *testing.T) {
	for _, raw := range []string{"", "{", `{"a" 1}`, `{"a":1} {"b":2}`, `[1,]`, "nope\u202e"} {
		got, ok := JSON([]byte(raw))
		if ok {
			t.Errorf("JSON(%q) ok, want not ok", raw)
		}
		if got.String() != Block(raw).String() {
			t.Errorf("JSON(%q) = %q, want the Block form", raw, got.String())
		}
	}
}

func TestEscapeJSON(t *testing.T) {
	got, err := EscapeJSON([]byte("{\"a\": [1, \"x\u202ey\"], \"b\": {}}"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[1,"x\u202ey"],"b":{}}`; string(got) != want {
		t.Errorf("EscapeJSON = %s, want %s", got, want)
	}
	if _, err := EscapeJSON([]byte(`{"a":`)); err == nil {
		t.Error("EscapeJSON of broken JSON: no error")
	}
}

func TestCut(t *testing.T) {
	long := strings.Repeat("a", 1000) + "\u202e" + strings.Repeat("b", 1000) + "; rm -rf /"
	s := Line(long)
	c := s.Cut(100, 20)
	if c.Omitted == 0 {
		t.Fatal("nothing cut")
	}
	if got := c.Head.Len() + c.Tail.Len() + c.Omitted; got != s.Len() {
		t.Errorf("head+tail+omitted = %d, want %d", got, s.Len())
	}
	if !strings.HasSuffix(c.Tail.String(), "; rm -rf /") || c.Tail.Len() != 20 {
		t.Errorf("tail = %q, want the last 20 characters", c.Tail.String())
	}
	if c.Head.String() != strings.Repeat("a", 100) {
		t.Errorf("head = %q", c.Head.String())
	}
	// An escape on the boundary is kept whole.
	e := Line("ab\u202ecd").Cut(3, 0)
	if e.Head.String() != `ab\u202e` || e.Omitted != 2 {
		t.Errorf("cut through an escape: head %q omitted %d", e.Head.String(), e.Omitted)
	}
	// Short text is not cut.
	if c := Line("short").Cut(3, 2); c.Omitted != 0 || c.Head.String() != "short" {
		t.Errorf("short text cut: %+v", c)
	}
	// Escapes larger than the budget never make head and tail overlap.
	for h := 0; h < 12; h++ {
		for tl := 0; tl < 12; tl++ {
			s := Line("\u202e\u202e\u202ex")
			c := s.Cut(h, tl)
			if c.Omitted == 0 {
				if c.Head.String() != s.String() || len(c.Tail) != 0 {
					t.Errorf("Cut(%d,%d) uncut but changed: %+v", h, tl, c)
				}
				continue
			}
			if c.Head.String()+strings.Repeat("?", c.Omitted)+c.Tail.String() == "" || c.Head.Len()+c.Omitted+c.Tail.Len() != s.Len() {
				t.Errorf("Cut(%d,%d) = %+v: lengths do not add up to %d", h, tl, c, s.Len())
			}
		}
	}
}

// decodeNumbers decodes one JSON value, numbers kept as written.
func decodeNumbers(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func FuzzLine(f *testing.F) {
	for _, c := range hostile {
		f.Add(c.in)
	}
	f.Add(`{"a":[1,"x\u202e",{"b":null}],"c":"\ud800"}`)
	f.Add("[\"\u2066\xff\"]")
	f.Fuzz(func(t *testing.T, s string) {
		got := Line(s).String()
		assertVisible(t, got)
		if strings.ContainsRune(got, '\n') {
			t.Errorf("Line(%q) has a line break", s)
		}
		if got2, ok := JSON([]byte(s)); ok {
			assertVisibleLines(t, got2.String(), true)
			// What is shown decodes to exactly the value that runs.
			want, err := decodeNumbers(s)
			if err != nil {
				t.Fatalf("JSON accepted %q, which encoding/json refuses: %v", s, err)
			}
			back, err := decodeNumbers(got2.String())
			if err != nil {
				t.Fatalf("shown JSON %q is not JSON: %v", got2.String(), err)
			}
			if !reflect.DeepEqual(want, back) {
				t.Fatalf("shown JSON %q decodes to %v, want %v", got2.String(), back, want)
			}
		}
		sh := Line(s)
		for _, sz := range [][2]int{{0, 0}, {1, 1}, {3, 2}, {5, 0}, {0, 5}, {7, 7}} {
			c := sh.Cut(sz[0], sz[1])
			if c.Head.Len()+c.Omitted+c.Tail.Len() != sh.Len() {
				t.Fatalf("Cut(%v) of %q: %d+%d+%d != %d", sz, s, c.Head.Len(), c.Omitted, c.Tail.Len(), sh.Len())
			}
			if !strings.HasPrefix(sh.String(), c.Head.String()) || !strings.HasSuffix(sh.String(), c.Tail.String()) {
				t.Fatalf("Cut(%v) of %q: head %q / tail %q not a prefix / suffix", sz, s, c.Head.String(), c.Tail.String())
			}
		}
	})
}

func BenchmarkJSON100k(b *testing.B) {
	raw, _ := json.Marshal(map[string]string{"cmd": strings.Repeat("harmless-", 100_000/9) + "\u202e; rm -rf /"})
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		s, _ := JSON(raw)
		_ = s.HTML()
	}
}

func BenchmarkLine(b *testing.B) {
	s := "Allow reading the deploy key at /srv/deploy/id_ed25519?"
	for b.Loop() {
		_ = Line(s).String()
	}
}
