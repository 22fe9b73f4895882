// Package fnmatch implements case-insensitive shell-style glob matching with
// the semantics of Python's fnmatch module (fnmatch.translate, Python 3.11),
// i.e. the behaviour of
//
//	fnmatch.fnmatchcase(subject.lower(), pattern.lower())
//
// Policies match these globs against strings on every tool call, so matching
// is allocation-free and patterns are compiled once.
//
// # Syntax
//
// A pattern is matched against the whole subject (it is anchored at both
// ends). Every string is a valid pattern; [Compile] never fails.
//
//   - '*' matches any run of characters, including the empty run, '/' and
//     newline. Consecutive stars are equivalent to one.
//   - '?' matches exactly one character, including '/' and newline.
//   - '[seq]' matches one character that is in seq; '[!seq]' matches one
//     character that is not in seq.
//   - Every other character, including '\', matches itself. There is no
//     escape character: to match a literal '*', '?' or '[' use '[*]', '[?]'
//     or '[[]'.
//
// A "character" is one Unicode code point of the UTF-8 subject. A byte that
// is not part of a valid UTF-8 encoding counts as one character of its own:
// it is matched by '?', '*' and negated classes, and by a literal only when
// the pattern contains the same invalid byte. For range comparisons such a
// byte b orders after every code point (as if it were code point
// 0x110000+b); Python cannot express these, so this is an extension.
//
// # Bracket expressions
//
// Bracket expressions are parsed exactly as Python 3.11 parses them:
//
//   - After '[' comes an optional '!'. A ']' immediately after the '[' (or
//     after the '!') is a literal member. The expression ends at the next
//     ']'. If there is no such ']', the '[' is an ordinary literal character
//     and matching continues with the character after it (so "a[b" matches
//     only "a[b", "[" matches only "[", "[]" matches only "[]" and "[!]"
//     matches only "[!]").
//   - Inside, "x-y" is the inclusive range of code points from x to y. A '-'
//     that is the first member (also directly after '!') or the last member
//     is literal. After a range, a following '-' is literal: "[a-c-e]" is
//     {a, b, c, '-', e}.
//   - A range whose end is below its start is empty and removed, together
//     with its two end points: "[z-a]" has no members, "[z-ab]" is {b}.
//   - '\' is a literal member; '^' and '[' are literal members anywhere
//     (there is no '^' negation and no POSIX "[:alpha:]" classes).
//   - A non-negated expression with no members ("[z-a]", "[a--]") never
//     matches. A negated expression with no members ("[!z-a]") matches any
//     single character, as in Python.
//   - Python applies the '!' test after removing empty ranges, and this
//     package reproduces that quirk: if removing an empty range leaves a '!'
//     at the very front, the expression becomes negated. "[z-a!]" matches
//     any character, "[z-a!b]" matches any character except 'b', and
//     "[z-a!-c]" matches any character except '-' and 'c'. Such patterns are
//     almost certainly mistakes; they are kept Python-compatible so that
//     policies behave identically in both implementations.
//
// # Case
//
// Matching is case-insensitive by simple per-code-point lower-casing
// ([unicode.ToLower]) of both the pattern (once, at compile time, before
// parsing) and the subject (at match time, without allocating). This is
// simple folding, not full Unicode case folding: "ß" does not match "ss" and
// "ſ" (long s) does not match "s". U+212A KELVIN SIGN lower-cases to "k" and
// so matches "k" and "K". Because the pattern is lower-cased before ranges
// are built, "[A-Z]" is "[a-z]" and "[Z-a]" becomes the empty range "[z-a]";
// ranges are tested against the lower-cased subject character, so "[@-[]"
// (which spans 'A'..'Z' in code point order) matches neither 'A' nor 'a'.
//
// Python's str.lower differs from per-code-point lower-casing for a few
// characters, and there this package follows unicode.ToLower, not Python:
// "İ" (U+0130) lower-cases to "i" (Python: "i" plus U+0307 COMBINING DOT
// ABOVE), and "Σ" always lower-cases to "σ" (Python picks the final form "ς"
// at the end of a word).
//
// # Why not path.Match or filepath.Match
//
// The standard library matchers implement a different dialect: their '*' and
// '?' never match '/' (or the OS separator), they treat '\' as an escape
// character (except filepath.Match on Windows), they negate classes with '^'
// and do not understand '[!a]' (it is read as a class containing '!' and
// 'a'), and they report malformed patterns as errors instead of matching
// them literally. Policies are written against Python fnmatch semantics,
// where "rm *" must match "rm -rf /tmp/x", so neither is usable here.
package fnmatch

import (
	"unicode"
	"unicode/utf8"
)

// invalidBase is the pseudo code point of the invalid UTF-8 byte 0x00; an
// invalid byte b is the character invalidBase+b. It is above
// unicode.MaxRune, so it never equals a real code point.
const invalidBase = unicode.MaxRune + 1

// lowerASCII maps every byte below utf8.RuneSelf to its lower-case form.
var lowerASCII = func() (t [utf8.RuneSelf]byte) {
	for i := range t {
		b := byte(i)
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		t[i] = b
	}
	return t
}()

// foldsFromNonASCII reports whether some non-ASCII code point lower-cases
// (with unicode.ToLower) to the ASCII byte b. Only U+0130 ('i') and U+212A
// ('k') do; TestFoldsFromNonASCII checks this against the unicode tables.
func foldsFromNonASCII(b byte) bool { return b == 'i' || b == 'k' }

// Pattern is a compiled glob. It is immutable and safe for concurrent use.
// The zero Pattern matches only the empty string.
type Pattern struct {
	src    string
	any    bool // the pattern is only stars: matches everything
	star   bool // the pattern contains a star
	minLen int  // minimum subject length in bytes

	// Without a star, prefix is the whole pattern. With stars, prefix is
	// the part before the first star, suffix the part after the last star
	// and middle the star-separated parts in between (each non-empty).
	prefix []token
	suffix []token
	middle []segment

	needASCII bool // some segment's search shortcut needs an ASCII subject
}

type tokenKind uint8

const (
	tLit   tokenKind = iota // a run of literal code points
	tAny                    // '?'
	tClass                  // a bracket expression or an invalid UTF-8 byte
)

type token struct {
	kind tokenKind
	lit  string // tLit: lower-cased literal text, valid UTF-8, non-empty
	cls  *class // tClass
}

// Compile compiles a glob pattern. It never fails: every string is a valid
// pattern (see the package documentation for the exact semantics).
func Compile(pattern string) Pattern {
	p := Pattern{src: pattern}
	chars := lowerChars(pattern)

	// Parse into a flat item list, as fnmatch.translate does.
	type item struct {
		star bool
		tok  token
		c    int32 // literal character when tok.kind == tLit
	}
	var items []item
	var closeAt []int // see nextClose
	n := len(chars)
	for i := 0; i < n; {
		c := chars[i]
		i++
		switch c {
		case '*':
			if len(items) == 0 || !items[len(items)-1].star {
				items = append(items, item{star: true})
			}
		case '?':
			items = append(items, item{tok: token{kind: tAny}})
		case '[':
			j := i
			if j < n && chars[j] == '!' {
				j++
			}
			if j < n && chars[j] == ']' {
				j++
			}
			j = nextClose(chars, &closeAt, j)
			if j >= n {
				items = append(items, item{tok: token{kind: tLit}, c: '['})
				continue
			}
			items = append(items, item{tok: token{kind: tClass, cls: parseClass(chars[i:j])}})
			i = j + 1
		default:
			if c >= invalidBase {
				items = append(items, item{tok: token{kind: tClass, cls: singleton(c)}})
			} else {
				items = append(items, item{tok: token{kind: tLit}, c: c})
			}
		}
	}

	if len(items) == 1 && items[0].star {
		p.any = true
		return p
	}

	// Split at stars and merge adjacent literals into runs.
	var parts [][]token
	var cur []token
	var lit []byte
	flushLit := func() {
		if len(lit) > 0 {
			cur = append(cur, token{kind: tLit, lit: string(lit)})
			lit = lit[:0]
		}
	}
	for _, it := range items {
		switch {
		case it.star:
			flushLit()
			parts = append(parts, cur)
			cur = nil
			p.star = true
		case it.tok.kind == tLit:
			lit = utf8.AppendRune(lit, it.c)
		default:
			flushLit()
			cur = append(cur, it.tok)
		}
	}
	flushLit()
	parts = append(parts, cur)

	p.prefix = parts[0]
	p.minLen = minLen(p.prefix)
	if p.star {
		p.suffix = parts[len(parts)-1]
		p.minLen += minLen(p.suffix)
		for _, toks := range parts[1 : len(parts)-1] {
			seg := newSegment(toks)
			p.needASCII = p.needASCII || seg.needASCII
			p.minLen += seg.minLen
			p.middle = append(p.middle, seg)
		}
	}
	return p
}

// nextClose returns the index of the first ']' in chars at or after j, or
// len(chars). The table *closeAt is built on first use, so that a pattern
// full of unclosed '[' compiles in linear time.
func nextClose(chars []int32, closeAt *[]int, j int) int {
	if *closeAt == nil {
		t := make([]int, len(chars)+1)
		t[len(chars)] = len(chars)
		for k := len(chars) - 1; k >= 0; k-- {
			if chars[k] == ']' {
				t[k] = k
			} else {
				t[k] = t[k+1]
			}
		}
		*closeAt = t
	}
	return (*closeAt)[j]
}

// minLen returns the minimum number of subject bytes that toks can match.
// Every character is at least one byte; a subject character whose lower
// case is a non-ASCII code point is itself non-ASCII (ASCII letters lower to
// ASCII) and so at least two bytes.
func minLen(toks []token) int {
	n := 0
	for _, t := range toks {
		if t.kind != tLit {
			n++
			continue
		}
		for _, r := range t.lit {
			if r < utf8.RuneSelf {
				n++
			} else {
				n += 2
			}
		}
	}
	return n
}

// String returns the pattern text that was compiled.
func (p *Pattern) String() string { return p.src }

// Match reports whether the whole of s matches the pattern, ignoring case.
// It does not allocate.
func (p *Pattern) Match(s string) bool {
	if p.any {
		return true
	}
	if len(s) < p.minLen {
		return false
	}
	rest := s
	if len(p.prefix) > 0 {
		i, ok := matchAt(p.prefix, s, 0)
		if !ok {
			return false
		}
		rest = s[i:]
	}
	if !p.star {
		return len(rest) == 0
	}
	// The suffix is anchored at the end; match it backwards within what
	// the prefix left, so that the two cannot overlap.
	if len(p.suffix) > 0 {
		end, ok := matchBack(p.suffix, rest)
		if !ok {
			return false
		}
		rest = rest[:end]
	}
	// Between the first and last star, find each segment at its leftmost
	// position. This is the classic star-backtracking algorithm: when a
	// segment fails at some position, the only choice to revisit is how
	// much the star before it consumed, and leftmost-first is always safe
	// because the star after it can absorb whatever is left over. The cost
	// is O(len(s)*len(pattern)) with no recursion.
	ascii := p.needASCII && isASCII(rest)
	pos, ok := 0, true
	for k := range p.middle {
		if pos, ok = p.middle[k].find(rest, pos, ascii); !ok {
			return false
		}
	}
	return true
}

// matchAt matches the star-free toks at byte offset i of s and returns the
// offset just after the match.
func matchAt(toks []token, s string, i int) (int, bool) {
	for k := range toks {
		t := &toks[k]
		switch t.kind {
		case tLit:
			lit := t.lit
			for j := 0; j < len(lit); {
				if i >= len(s) {
					return 0, false
				}
				pb, sb := lit[j], s[i]
				if pb|sb < utf8.RuneSelf {
					if lowerASCII[sb] != pb {
						return 0, false
					}
					i++
					j++
					continue
				}
				pc, pn := utf8.DecodeRuneInString(lit[j:])
				sc, sn := decodeLower(s, i)
				if pc != sc {
					return 0, false
				}
				i += sn
				j += pn
			}
		case tAny:
			if i >= len(s) {
				return 0, false
			}
			if s[i] < utf8.RuneSelf {
				i++
			} else {
				_, n := utf8.DecodeRuneInString(s[i:])
				i += n
			}
		case tClass:
			if i >= len(s) {
				return 0, false
			}
			c, n := decodeLower(s, i)
			if !t.cls.has(c) {
				return 0, false
			}
			i += n
		}
	}
	return i, true
}

// matchBack matches the star-free toks against the end of s and returns the
// offset where the match starts.
func matchBack(toks []token, s string) (int, bool) {
	e := len(s)
	for k := len(toks) - 1; k >= 0; k-- {
		t := &toks[k]
		switch t.kind {
		case tLit:
			lit := t.lit
			for j := len(lit); j > 0; {
				if e <= 0 {
					return 0, false
				}
				pb, sb := lit[j-1], s[e-1]
				if pb|sb < utf8.RuneSelf {
					if lowerASCII[sb] != pb {
						return 0, false
					}
					e--
					j--
					continue
				}
				pc, pn := utf8.DecodeLastRuneInString(lit[:j])
				sc, sn := decodeLastLower(s, e)
				if pc != sc {
					return 0, false
				}
				e -= sn
				j -= pn
			}
		case tAny:
			if e <= 0 {
				return 0, false
			}
			if s[e-1] < utf8.RuneSelf {
				e--
			} else {
				_, n := utf8.DecodeLastRuneInString(s[:e])
				e -= n
			}
		case tClass:
			if e <= 0 {
				return 0, false
			}
			c, n := decodeLastLower(s, e)
			if !t.cls.has(c) {
				return 0, false
			}
			e -= n
		}
	}
	return e, true
}

// decodeLower decodes the character at byte offset i < len(s) and returns
// its lower-case form and its length in bytes. An invalid byte b is the
// single character invalidBase+b.
func decodeLower(s string, i int) (int32, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return int32(lowerASCII[b]), 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n == 1 {
		return invalidBase + int32(s[i]), 1
	}
	return unicode.ToLower(r), n
}

// decodeLastLower is decodeLower for the character ending at byte offset
// e > 0. Go's backward decoding splits any string into the same characters
// as forward decoding (a valid encoding starts with a non-continuation byte
// and is found from either side; every other byte stands alone), so the two
// directions agree.
func decodeLastLower(s string, e int) (int32, int) {
	if b := s[e-1]; b < utf8.RuneSelf {
		return int32(lowerASCII[b]), 1
	}
	r, n := utf8.DecodeLastRuneInString(s[:e])
	if r == utf8.RuneError && n == 1 {
		return invalidBase + int32(s[e-1]), 1
	}
	return unicode.ToLower(r), n
}

// lowerChars splits s into lower-cased characters.
func lowerChars(s string) []int32 {
	out := make([]int32, 0, len(s))
	for i := 0; i < len(s); {
		c, n := decodeLower(s, i)
		out = append(out, c)
		i += n
	}
	return out
}

// HasLiteralBracket reports whether [Compile] reads some '[' of pattern as an ordinary
// literal character because no ']' closes it (as in "rm [*", which matches only
// commands that start with "rm [", not "rm" followed by anything). Linters use it to
// warn; the pattern itself is valid.
func HasLiteralBracket(pattern string) bool {
	chars := lowerChars(pattern)
	var closeAt []int
	n := len(chars)
	for i := 0; i < n; {
		c := chars[i]
		i++
		if c != '[' {
			continue
		}
		j := i
		if j < n && chars[j] == '!' {
			j++
		}
		if j < n && chars[j] == ']' {
			j++
		}
		j = nextClose(chars, &closeAt, j)
		if j >= n {
			return true
		}
		i = j + 1
	}
	return false
}
