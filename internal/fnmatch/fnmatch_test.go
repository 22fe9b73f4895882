package fnmatch

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

type matchCase struct {
	pattern, subject string
	want             bool
}

var matchCases = []matchCase{
	// Empty pattern and lone star.
	{"", "", true},
	{"", "a", false},
	{"*", "", true},
	{"*", "anything at all", true},
	{"**", "", true},
	{"***", "a/b", true},
	{"*", "a/b\nc", true},

	// '*' crosses '/' and newline; stars at start, middle, end; several.
	{"a*b", "a/x\ny/b", true},
	{"a*b", "ab", true},
	{"a*b", "a/b/c", false},
	{"*b", "a/b", true},
	{"*b", "b/a", false},
	{"a*", "a\n", true},
	{"a*", "ba", false},
	{"a**b", "axxb", true},
	{"a*b*c", "aXbYc", true},
	{"a*b*c", "abc", true},
	{"a*b*c", "acb", false},
	{"*a*b*", "xxaxxbxx", true},
	{"*a*b*", "xxbxxaxx", false},
	{"*x*y*z*", "/x/y/z/", true},
	{"ab*ba", "aba", false}, // prefix and suffix must not overlap
	{"ab*ba", "abba", true},
	{"ab*ba", "abxba", true},
	{"a*?", "a", false},
	{"a*?", "ab", true},
	{"*?*", "", false},
	{"*?*", "é", true},

	// Case-insensitivity.
	{"rm *", "RM -rf x", true},
	{"RM *", "rm -rf /", true},
	{"rm *", "rm", false},
	{"rm *", "rm ", true},
	{"rm *", "xrm -rf", false},
	{"git push*--force*", "GIT push origin --FORCE", true},
	{"*.env", ".ENV", true},
	{"*.env", "x.env.bak", false},
	{"é", "É", true},
	{"*É*", "xéy", true},
	{"ȺB", "ⱥb", true},    // lower-casing grows 2 bytes to 3
	{"*ⱥ", "xȺ", true},    // and in the suffix
	{"*ⱥ*", "xȺy", true},  // and in a middle segment
	{"k", "\u212a", true}, // KELVIN SIGN lower-cases to 'k'
	{"\u212a", "K", true},
	{"*k*", "a\u212ab", true},
	{"*K", "a\u212a", true},
	{"i", "\u0130", true}, // simple lower-casing: U+0130 -> 'i'
	{"ß", "ss", false},    // not full case folding
	{"s", "ſ", false},
	{"σ", "Σ", true},

	// '?'.
	{"?", "", false},
	{"?", "a", true},
	{"?", "/", true},
	{"?", "\n", true},
	{"?", "é", true},
	{"??", "é", false},
	{"?", "日", true},
	{"?", "😀", true},
	{"a?c", "a😀c", true},
	{"*?", "😀", true},
	{"?*?", "😀", false},
	{"?", "\xff", true},         // an invalid byte is one character
	{"??", "\xff\xfe", true},    // each invalid byte is one character
	{"?", "\xe2\x82", false},    // a truncated sequence is two characters
	{"??", "\xe2\x82", true},    // ...
	{"*?", "x\xe2\x82", true},   // backwards too
	{"a\xffb", "A\xffB", true},  // an invalid pattern byte matches itself
	{"a\xffb", "a\xfeb", false}, // ...and nothing else
	{"a\xffb", "a?b", false},
	{"*\xff", "x\xff", true},
	{"*x*", "\xffx\xff", true},

	// Brackets: plain, negated, ranges.
	{"[abc]", "b", true},
	{"[abc]", "B", true},
	{"[abc]", "d", false},
	{"[abc]", "", false},
	{"[abc]", "ab", false},
	{"[!a]x", "bx", true},
	{"[!a]x", "ax", false},
	{"[!a]x", "Ax", false},
	{"[!a]", "/", true},
	{"[!a]", "\n", true},
	{"[!a]", "é", true},
	{"[!a]", "", false},
	{"[a-c]", "b", true},
	{"[a-c]", "B", true},
	{"[a-c]", "d", false},
	{"[A-Z]", "q", true},
	{"[A-Z]", "Q", true},
	{"[0-9]*", "7z", true},
	{"[0-9]*", "z7", false},
	{"[a-cx-z]", "y", true},
	{"[a-cx-z]", "m", false},
	{"[é-ë]", "Ê", true},
	{"[!/]*", "/etc", false},
	{"*[!/]", "a/", false},
	{"*[!/]", "a/b", true},

	// Unclosed '[' is literal.
	{"a[b", "a[b", true},
	{"a[b", "ab", false},
	{"a[b", "a[B", true},
	{"[", "[", true},
	{"[", "", false},
	{"[!", "[!", true},
	{"[]", "[]", true},
	{"[!]", "[!]", true},
	{"[!]", "a", false},
	{"[a", "[A", true},
	{"*[", "x[", true},
	{"[*", "[anything", true},
	{"[?", "[x", true},
	{"[[]", "[", true},
	{"[*]", "*", true},
	{"[*]", "x", false},
	{"[?]", "?", true},
	{"[?]", "x", false},

	// ']' first is literal.
	{"[]]", "]", true},
	{"[]]", "a", false},
	{"[]a]", "a", true},
	{"[]a]", "]", true},
	{"[!]]", "a", true},
	{"[!]]", "]", false},
	{"[]]]", "]]", true},
	{"[]-a]", "_", true}, // range ']'..'a'
	{"[]-a]", "b", false},

	// '-' first or last is literal; '-' after a range is literal.
	{"[a-]", "a", true},
	{"[a-]", "-", true},
	{"[a-]", "b", false},
	{"[-a]", "-", true},
	{"[-a]", "a", true},
	{"[-a]", "b", false},
	{"[!-a]", "-", false},
	{"[!-a]", "b", true},
	{"[-]", "-", true},
	{"[!-]", "-", false},
	{"[!-]", "x", true},
	{"[a-c-e]", "b", true},
	{"[a-c-e]", "-", true},
	{"[a-c-e]", "d", false},
	{"[a-c-e]", "e", true},
	{"[--a]", "0", true}, // range '-'..'a'
	{"[--a]", "b", false},
	{"[+--]", ",", true},

	// Empty (reversed) ranges.
	{"[z-a]", "z", false},
	{"[z-a]", "a", false},
	{"[z-a]", "m", false},
	{"[z-a]", "-", false},
	{"[z-a]*", "anything", false},
	{"*[z-a]*", "anything", false},
	{"[a--]", "a", false},
	{"[a--]", "-", false},
	{"[z-ab]", "b", true},
	{"[z-ab]", "z", false},
	{"[z-ab]", "a", false},
	{"[Z-a]", "_", false}, // lower-cased to the empty "[z-a]"
	{"[!z-a]", "q", true}, // negated empty set: any one character
	{"[!z-a]", "z", true},
	{"[!z-a]", "", false},
	{"[!z-a]", "ab", false},
	{"[@-[]", "@", true}, // '@'..'[' spans A-Z, but subjects are lower-cased
	{"[@-[]", "A", false},
	{"[@-[]", "a", false},

	// Python's leading-'!' quirk after empty-range removal.
	{"[z-a!]", "q", true},
	{"[z-a!]", "!", true},
	{"[z-a!b]", "b", false},
	{"[z-a!b]", "c", true},
	{"[z-a!-c]", "-", false},
	{"[z-a!-c]", "c", false},
	{"[z-a!-c]", "b", true},

	// Backslash is an ordinary character, also inside brackets.
	{`a\b`, `a\b`, true},
	{`a\b`, `ab`, false},
	{`a\*`, `a\xyz`, true},
	{`a\*`, `a*`, false},
	{`\?`, `\x`, true},
	{`[\]`, `\`, true},
	{`[\]`, `]`, false},
	{`[\]]`, `\]`, true},
	{`[\-a]`, `]`, true}, // range '\'..'a'
	{`[!\]`, `\`, false},
	{`[a\-_]`, `^`, true}, // 'a', range '\'..'_'
	{`[a\-_]`, `m`, false},
	{`[a\-_]`, `a`, true},

	// '^', '[', set-operation characters inside brackets are literal.
	{"[^a]", "^", true},
	{"[^a]", "a", true},
	{"[^a]", "b", false},
	{"[!^]", "^", false},
	{"[a[]", "[", true},
	{"[[:alpha:]]", "a]", true}, // "[[:alpha:]" then "]"
	{"[[:alpha:]]", "b", false},
	{"[&&]", "&", true},
	{"[a&&b]", "&", true},
	{"[~|]", "|", true},
	{"[a--b]", "-", false}, // 'a'..'-' is empty; "b" remains
	{"[a--b]", "b", true},
}

func TestMatch(t *testing.T) {
	for _, tc := range matchCases {
		p := Compile(tc.pattern)
		if got := p.Match(tc.subject); got != tc.want {
			t.Errorf("Compile(%q).Match(%q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
		}
		if got := refMatch(t, tc.pattern, tc.subject); got != tc.want {
			t.Errorf("reference(%q, %q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
		}
	}
}

func TestPathological(t *testing.T) {
	long := strings.Repeat("a", 10000)
	cases := []matchCase{
		{"a*a*a*a*a*a*b", long, false},
		{"*a*a*a*a*a*a*a*b*", long, false},
		{"*a*a*a*a*a*a*a*?b", long, false},
		{"*a?a?a?a?a?a?a?b*", long, false},
		{"*[a]*[a]*[a]*[a]*[a]*[!a]*", long, false},
		{"*?*?*?*?*?*?*?*?*?b", long, false},
		{"*a*a*a*a*a*a*a*a", long, true},
		{strings.Repeat("*a", 50) + "*b", long, false},
	}
	start := time.Now()
	for _, tc := range cases {
		p := Compile(tc.pattern)
		if got := p.Match(tc.subject); got != tc.want {
			t.Errorf("Compile(%q).Match(a*10000) = %v, want %v", tc.pattern, got, tc.want)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("pathological patterns took %v", d)
	}
}

func TestZeroPattern(t *testing.T) {
	var p Pattern
	if !p.Match("") {
		t.Error("zero Pattern does not match the empty string")
	}
	for _, s := range []string{"a", "*", " "} {
		if p.Match(s) {
			t.Errorf("zero Pattern matches %q", s)
		}
	}
	if p.String() != "" {
		t.Errorf("zero Pattern String() = %q", p.String())
	}
}

func TestString(t *testing.T) {
	for _, s := range []string{"", "*", "RM -rf *", "[!A-Z]?\xff", "a[b"} {
		p := Compile(s)
		if p.String() != s {
			t.Errorf("Compile(%q).String() = %q", s, p.String())
		}
	}
}

func TestConcurrent(t *testing.T) {
	p := Compile("*x[a-c]?y*")
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func() {
			ok := true
			for i := 0; i < 1000; i++ {
				ok = ok && p.Match("..xBzy..") && !p.Match("..xdzy..")
			}
			done <- ok
		}()
	}
	for g := 0; g < 8; g++ {
		if !<-done {
			t.Error("wrong result under concurrent use")
		}
	}
}

// TestFoldsFromNonASCII checks the hard-coded list of ASCII characters that
// some non-ASCII code point lower-cases to, which the segment search relies
// on, against the unicode tables of the Go release in use.
func TestFoldsFromNonASCII(t *testing.T) {
	var want [utf8.RuneSelf]bool
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < utf8.RuneSelf {
			want[l] = true
		}
	}
	for b := range want {
		if got := foldsFromNonASCII(byte(b)); got != want[b] {
			t.Errorf("foldsFromNonASCII(%q) = %v, want %v", rune(b), got, want[b])
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	pats := []string{
		"*", "", "git *", "*rm -rf*", "*.env", "a*b*c", "[!a-z]*?", "*k*",
		"*ⱥ*", "é*É", "[z-a!]*", "*\xff*", "?*?", "*[é-ë]*x",
	}
	subjects := []string{
		"", "git status", "RM -RF /", "x.ENV", "a\u212ab\xffc",
		"ȺÉxé", strings.Repeat("ab", 40),
	}
	compiled := make([]Pattern, len(pats))
	for i, s := range pats {
		compiled[i] = Compile(s)
	}
	n := testing.AllocsPerRun(100, func() {
		for i := range compiled {
			for _, s := range subjects {
				compiled[i].Match(s)
			}
		}
	})
	if n != 0 {
		t.Errorf("Match allocated %v times per run, want 0", n)
	}
}

// policyPatterns is a policy-sized mix of prefix, suffix, infix and bracket
// patterns, none of which matches benchSubject.
var policyPatterns = []string{
	"git push*--force*", "git reset --hard*", "rm -rf *", "rm -r *", "sudo *",
	"curl *|*sh", "wget *", "*--force*", "*/etc/passwd*", "*/etc/shadow*",
	"*.env", "*.pem", "*id_rsa*", "chmod 777 *", "dd if=*",
	"mkfs*", "npm publish*", "pip install *", "docker run *--privileged*", "kubectl delete *",
	"terraform destroy*", "*secret*", "*token*", "*password*", "*aws_secret_access_key*",
	"ssh *", "scp *", "nc -l*", "python -c *", "bash -c *",
	"*eval *", "*base64 -d*", "*> /dev/sd?*", "shutdown*", "reboot*",
	"*/.ssh/*", "*/.aws/*", "*.key", "[!a-z]*", "*[;&|]*rm *",
	"find * -delete*", "*xargs rm*", "truncate *", "iptables *", "*crontab*",
	"systemctl stop *", "history -c*", "?:\\windows\\*", "*.tf[sv]*", "*dump*",
}

const benchSubject = "ls -la /home/user/projects/warden/cmd/xy" // 40 bytes

func compilePolicy(tb testing.TB) []Pattern {
	if len(benchSubject) != 40 || len(policyPatterns) != 50 {
		tb.Fatalf("benchmark setup: %d-byte subject, %d patterns", len(benchSubject), len(policyPatterns))
	}
	ps := make([]Pattern, len(policyPatterns))
	for i, s := range policyPatterns {
		ps[i] = Compile(s)
		if ps[i].Match(benchSubject) {
			tb.Fatalf("%q matches the benchmark subject", s)
		}
	}
	return ps
}

func TestPolicyPatterns(t *testing.T) { compilePolicy(t) }

func BenchmarkPolicyNoMatch(b *testing.B) {
	ps := compilePolicy(b)
	b.ReportAllocs()
	for b.Loop() {
		for i := range ps {
			if ps[i].Match(benchSubject) {
				b.Fatal("unexpected match")
			}
		}
	}
}

func BenchmarkGitMatch(b *testing.B) {
	p := Compile("git *")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Match("git status --short") {
			b.Fatal("no match")
		}
	}
}

func BenchmarkPathological(b *testing.B) {
	p := Compile("*a*a*a*a*a*a*b*")
	s := strings.Repeat("a", 1000)
	b.ReportAllocs()
	for b.Loop() {
		if p.Match(s) {
			b.Fatal("unexpected match")
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range policyPatterns {
			Compile(s)
		}
	}
}

// TestCompileLinear guards against quadratic compilation: a pattern full of
// unclosed '[' and a bracket expression full of empty ranges.
func TestCompileLinear(t *testing.T) {
	start := time.Now()
	p := Compile(strings.Repeat("[", 200000))
	if !p.Match(strings.Repeat("[", 200000)) {
		t.Error("unclosed brackets are not literal")
	}
	q := Compile("[" + strings.Repeat("z-a", 100000) + "!]")
	if !q.Match("x") { // Python's leading-'!' quirk: any character
		t.Error("[z-az-a...!] does not match any character")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("compiling took %v", d)
	}
}

func TestHasLiteralBracket(t *testing.T) {
	for _, tt := range []struct {
		p    string
		want bool
	}{
		{"rm [*", true},
		{"[", true},
		{"a[b", true},
		{"[]", true},
		{"[!]", true},
		{"[abc]*", false},
		{"[[]", false},
		{"[]]", false},
		{"[!]]x", false},
		{"rm *", false},
		{"[a]x[", true},
		{"[a[]", false},
	} {
		if got := HasLiteralBracket(tt.p); got != tt.want {
			t.Errorf("HasLiteralBracket(%q) = %v, want %v", tt.p, got, tt.want)
		}
		// Agreement with the matcher: a pattern whose '[' are all literal matches
		// its own text.
		if p := Compile(tt.p); tt.want && !strings.ContainsAny(tt.p, "*?]") && !p.Match(tt.p) {
			t.Errorf("%q does not match itself", tt.p)
		}
	}
}
