package fnmatch

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The reference matcher is a literal port of Python 3.11's
// fnmatch.translate (string manipulation and all) producing a Go regular
// expression, which Go's regexp package then matches against the
// lower-cased subject. It shares no code with the matcher under test.
//
// Go's regexp works on valid UTF-8 only, so both strings are first
// rewritten character by character: valid code points are lower-cased
// with unicode.ToLower, and an invalid byte b becomes the code point
// refInvalidBase+b (from the last private-use block, so it orders after
// every other code point, as in the package). Inputs that contain genuine
// code points at or above refInvalidBase are not comparable and are
// skipped.
const refInvalidBase = 0x10FF00

func refLower(s string) ([]rune, bool) {
	var out []rune
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, refInvalidBase+rune(s[i]))
		case r >= refInvalidBase:
			return nil, false
		default:
			out = append(out, unicode.ToLower(r))
		}
		i += n
	}
	return out, true
}

// refTranslate is fnmatch.translate for a lower-cased pattern, emitting Go
// regexp syntax. Differences from the Python text are only spelling: the
// never-matching "(?!)" becomes an empty negated class, and '[' inside a
// set is escaped because Go, unlike Python, reads "[:alpha:]" inside a set
// as a POSIX class.
func refTranslate(pat []rune) string {
	const star = "\x00*"
	var res []string
	add := func(s string) { res = append(res, s) }
	i, n := 0, len(pat)
	for i < n {
		c := pat[i]
		i++
		switch c {
		case '*':
			if len(res) == 0 || res[len(res)-1] != star {
				add(star)
			}
		case '?':
			add(".")
		case '[':
			j := i
			if j < n && pat[j] == '!' {
				j++
			}
			if j < n && pat[j] == ']' {
				j++
			}
			for j < n && pat[j] != ']' {
				j++
			}
			if j >= n {
				add(`\[`)
				continue
			}
			stuff := string(pat[i:j])
			if !strings.Contains(stuff, "-") {
				stuff = strings.ReplaceAll(stuff, `\`, `\\`)
			} else {
				var chunks []string
				k := i + 1
				if pat[i] == '!' {
					k = i + 2
				}
				for {
					k = refFind(pat, '-', k, j)
					if k < 0 {
						break
					}
					chunks = append(chunks, string(pat[i:k]))
					i = k + 1
					k = k + 3
				}
				if chunk := string(pat[i:j]); chunk != "" {
					chunks = append(chunks, chunk)
				} else {
					chunks[len(chunks)-1] += "-"
				}
				// Remove empty ranges -- invalid in RE.
				for k := len(chunks) - 1; k > 0; k-- {
					a, b := []rune(chunks[k-1]), []rune(chunks[k])
					if a[len(a)-1] > b[0] {
						chunks[k-1] = string(a[:len(a)-1]) + string(b[1:])
						chunks = append(chunks[:k], chunks[k+1:]...)
					}
				}
				for k, s := range chunks {
					s = strings.ReplaceAll(s, `\`, `\\`)
					chunks[k] = strings.ReplaceAll(s, "-", `\-`)
				}
				stuff = strings.Join(chunks, "-")
			}
			stuff = refSetOps.ReplaceAllString(stuff, `\$1`)
			i = j + 1
			switch {
			case stuff == "":
				add(`[^\x00-\x{10FFFF}]`)
			case stuff == "!":
				add(".")
			default:
				if stuff[0] == '!' {
					stuff = "^" + stuff[1:]
				} else if stuff[0] == '^' {
					stuff = `\` + stuff
				}
				add("[" + stuff + "]")
			}
		default:
			add(regexp.QuoteMeta(string(c)))
		}
	}
	var b strings.Builder
	for _, s := range res {
		if s == star {
			s = ".*"
		}
		b.WriteString(s)
	}
	return `(?s)\A(?:` + b.String() + `)\z`
}

// refSetOps finds the characters translate escapes inside a set: Python's
// set operations '&', '~', '|', plus '[' for Go (see refTranslate).
var refSetOps = regexp.MustCompile(`([&~|\[])`)

func refFind(s []rune, c rune, from, to int) int {
	for k := from; k < to; k++ {
		if s[k] == c {
			return k
		}
	}
	return -1
}

// refMatch reports the reference result for (pattern, subject), skipping
// the test if the inputs are outside what the reference can represent.
func refMatch(t *testing.T, pattern, subject string) bool {
	t.Helper()
	p, ok1 := refLower(pattern)
	s, ok2 := refLower(subject)
	if !ok1 || !ok2 {
		t.Skip("input contains code points the reference reserves")
	}
	expr := refTranslate(p)
	re, err := regexp.Compile(expr)
	if err != nil {
		t.Fatalf("reference translation of %q is %q: %v", pattern, expr, err)
	}
	return re.MatchString(string(s))
}

func FuzzMatch(f *testing.F) {
	for _, tc := range matchCases {
		f.Add(tc.pattern, tc.subject)
	}
	for _, s := range policyPatterns {
		f.Add(s, benchSubject)
	}
	f.Add("*[!a-c]?[]-]*\\*", "xYz]\\Q")
	f.Add("[z-a!-c]*k?", "-\u212aȺ")
	f.Add("*\xe2\x82*", "\xe2\x82\xac\xe2\x82")
	f.Add("*[k]*", "x\u212ay")
	f.Add("*[!i]?[ik]*", "\u0130\u212aK\u0130")
	f.Fuzz(func(t *testing.T, pattern, subject string) {
		p := Compile(pattern)
		if p.String() != pattern {
			t.Fatalf("String() = %q, want %q", p.String(), pattern)
		}
		got := p.Match(subject)
		if want := refMatch(t, pattern, subject); got != want {
			t.Fatalf("Compile(%q).Match(%q) = %v, reference says %v (regexp %s)",
				pattern, subject, got, want, refTranslateString(pattern))
		}
	})
}

func refTranslateString(pattern string) string {
	p, _ := refLower(pattern)
	return refTranslate(p)
}

// TestRandomAgainstReference is a deterministic, CI-sized complement to
// FuzzMatch. Patterns are built from elements (stars, '?', literals,
// bracket expressions, stray brackets) over characters chosen to reach the
// tricky paths: bracket syntax, case pairs, characters whose lower case has
// a different UTF-8 length (Ⱥ, KELVIN SIGN, U+0130), other non-ASCII, and
// invalid bytes. Subjects are random or instantiated from the pattern so
// that about half of them match.
func TestRandomAgainstReference(t *testing.T) {
	chars := []string{"a", "A", "b", "i", "I", "k", "K", "z", "Z", "-", "/", "\n", "!", "]", "^", `\`, "[", " ",
		"é", "É", "Ⱥ", "ⱥ", "\u212a", "\u0130", "日", "\xff", "\xe2\x82", "\x80"}
	classChars := []string{"a", "c", "i", "k", "K", "z", "-", "-", "!", "]", "^", `\`, "[", "é", "Ⱥ", "\u212a", "\xff"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(alpha []string) string { return alpha[rng.IntN(len(alpha))] }
	randStr := func(alpha []string, max int) string {
		var b strings.Builder
		for n := rng.IntN(max + 1); n > 0; n-- {
			b.WriteString(pick(alpha))
		}
		return b.String()
	}
	upper := func(s string) string {
		if rng.IntN(2) == 0 {
			return strings.ToUpper(s)
		}
		return s
	}
	type element struct{ pat, sub string }
	newElement := func() element {
		switch rng.IntN(8) {
		case 0, 1:
			return element{"*", randStr(chars, 3)}
		case 2:
			return element{"?", pick(chars)}
		case 3:
			body := randStr(classChars, 4)
			if rng.IntN(3) == 0 {
				body = "!" + body
			}
			sub := pick(chars)
			if len(body) > 0 && rng.IntN(2) == 0 {
				sub = upper(string([]rune(body)[rng.IntN(len([]rune(body)))]))
			}
			return element{"[" + body + "]", sub}
		case 4:
			return element{pick([]string{"[", "]", "[!", "[]"}), ""}
		default:
			c := pick(chars)
			return element{c, upper(c)}
		}
	}
	matches, total := 0, 0
	for range 6000 {
		var pb, sb strings.Builder
		for n := rng.IntN(7); n > 0; n-- {
			e := newElement()
			pb.WriteString(e.pat)
			sb.WriteString(e.sub)
		}
		pattern := pb.String()
		p := Compile(pattern)
		for _, subject := range []string{sb.String(), randStr(chars, 8), pattern, upper(pattern)} {
			got := p.Match(subject)
			want := refMatch(t, pattern, subject)
			if got != want {
				t.Fatalf("Compile(%q).Match(%q) = %v, reference says %v", pattern, subject, got, want)
			}
			total++
			if got {
				matches++
			}
		}
	}
	t.Logf("%d cases, %d matching", total, matches)
}
