// Package display renders untrusted text for a person who decides on it, so that what
// the person reads tells exactly which characters will run.
//
// Tool arguments, questions, tool names and principals are written by agents, MCP
// clients and upstream servers. Shown as they are, some characters lie: a right-to-left
// override (U+202E) makes "rm -rf / #..." read as something harmless, an ANSI escape
// sequence recolours or clears a terminal, a zero-width space or a no-break space makes
// two different names look the same, a carriage return hides the start of a line. This
// package never shows such a character as itself: it writes an escape instead, and
// marks each escape as one (a [Span] with Esc set) so that a web page can highlight it.
//
// # The escaped set
//
// [Unsafe] reports whether a character is escaped. It is escaped when it is
//
//   - a C0 control (U+0000-U+001F, including tab, line feed and carriage return), DEL
//     (U+007F) or a C1 control (U+0080-U+009F);
//   - any other character that is not graphic in Unicode's sense ([unicode.IsGraphic]):
//     every format character (category Cf: the bidi controls U+061C, U+200E, U+200F,
//     U+202A-U+202E, U+2066-U+2069, the zero-width characters U+200B-U+200D,
//     U+2060-U+2064, U+FEFF, the soft hyphen U+00AD, the tag characters
//     U+E0000-U+E007F, ...), the line and paragraph separators U+2028 and U+2029,
//     private-use code points, surrogates and code points unassigned in the Unicode
//     version Go was built with;
//   - a space other than the ASCII space (category Zs: U+00A0, U+2000-U+200A, U+202F,
//     U+205F, U+3000, U+1680);
//   - a graphic character that renders as nothing: the variation selectors
//     U+FE00-U+FE0F and U+E0100-U+E01EF, the combining grapheme joiner U+034F, the
//     Mongolian variation selectors U+180B-U+180D and U+180F, the Hangul fillers
//     U+115F, U+1160, U+3164, U+FFA0, the Khmer inherent vowels U+17B4 and U+17B5, and
//     the blank Braille pattern U+2800;
//   - the replacement character U+FFFD, which is what a decoder makes of bytes that
//     are not valid UTF-8: shown as an escape, it cannot pass for a real character.
//
// Everything else, printable ASCII and the letters, digits, marks, punctuation and
// symbols of every script, is shown as itself. Look-alike letters of other scripts
// (homoglyphs) are shown as themselves: this package makes invisible and reordering
// characters visible, it does not judge which visible ones are confusable. An emoji
// built with a zero-width joiner or a variation selector shows those as escapes.
//
// # Escape forms
//
// In plain text ([Line], [Block]) a character in the set is written \u followed by
// four lower-case hex digits (\u202e), or \U and eight digits above U+FFFF
// (\U000e0041); a byte that is not valid UTF-8 is written \x and two digits (\xff); a
// backslash is written \\ so that text that already reads "\u202e" cannot be taken for
// an escape. In JSON ([JSON], [EscapeJSON]) the escapes are JSON's own: \n, \r, \t,
// \b, \f, and \uXXXX (a surrogate pair above U+FFFF), so the text stays valid JSON
// with the same value; a byte that is not valid UTF-8 inside a JSON string is shown as
// \ufffd, which is what encoding/json decodes it to.
package display

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Span is one piece of displayed text. Text is what is shown. Esc is set when Text is
// an escape standing for one character (or one invalid byte) that is not shown as
// itself; What then names it, such as "U+202E RIGHT-TO-LEFT OVERRIDE".
type Span struct {
	Text string
	Esc  bool
	What string
}

// Shown is text ready to show: plain spans and escapes, in order. The zero value is
// empty text.
type Shown []Span

// String returns the text as shown, escapes included: the form for a terminal or a
// plain-text message.
func (s Shown) String() string {
	var b strings.Builder
	for _, sp := range s {
		b.WriteString(sp.Text)
	}
	return b.String()
}

// HTML returns the text as HTML: every plain span escaped the way html/template
// escapes text, every escape wrapped in <span class="esc" title="U+…">, so that a page
// can mark it.
func (s Shown) HTML() template.HTML {
	var b strings.Builder
	for _, sp := range s {
		if sp.Esc {
			b.WriteString(`<span class="esc" title="`)
			b.WriteString(htmlEscaper.Replace(sp.What))
			b.WriteString(`">`)
			b.WriteString(htmlEscaper.Replace(sp.Text))
			b.WriteString(`</span>`)
			continue
		}
		b.WriteString(htmlEscaper.Replace(sp.Text))
	}
	return template.HTML(b.String())
}

// htmlEscaper escapes text for an HTML text node or a quoted attribute, with the same
// entities as html/template. A NUL never reaches it (it is always an escape).
var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;",
	`"`, "&#34;", `'`, "&#39;", `+`, "&#43;", "\x00", "\uFFFD")

// Len returns the number of characters of String.
func (s Shown) Len() int {
	n := 0
	for _, sp := range s {
		n += utf8.RuneCountInString(sp.Text)
	}
	return n
}

// Escapes returns the number of escapes in s.
func (s Shown) Escapes() int {
	n := 0
	for _, sp := range s {
		if sp.Esc {
			n++
		}
	}
	return n
}

// Clip is Shown text cut for a short view: Head and Tail with Omitted characters
// between them left out. Omitted is zero when nothing was cut (then Tail is empty).
type Clip struct {
	Head, Tail Shown
	Omitted    int
}

// Cut keeps the first head and the last tail characters of s when s is longer than
// head+tail, and says how many it left out. An escape is never split: it is kept whole
// on the side where it starts (head) or ends (tail). Negative sizes count as zero.
func (s Shown) Cut(head, tail int) Clip {
	head, tail = max(head, 0), max(tail, 0)
	total := s.Len()
	if total <= head+tail {
		return Clip{Head: s}
	}
	var c Clip
	hEnd, tStart := head, total-tail // the head keeps [0, hEnd), the tail [tStart, total)
	pos := 0
	for _, sp := range s {
		l := utf8.RuneCountInString(sp.Text)
		end := pos + l
		switch {
		case sp.Esc && pos < hEnd:
			c.Head = append(c.Head, sp)
			hEnd = max(hEnd, end)
		case sp.Esc && end > tStart:
			c.Tail = append(c.Tail, sp)
			tStart = min(tStart, pos)
		case !sp.Esc:
			if pos < hEnd {
				c.Head = append(c.Head, Span{Text: runeSlice(sp.Text, 0, min(end, hEnd)-pos)})
			}
			if from := max(pos, tStart, hEnd); from < end {
				c.Tail = append(c.Tail, Span{Text: runeSlice(sp.Text, from-pos, l)})
			}
		}
		pos = end
	}
	c.Omitted = total - c.Head.Len() - c.Tail.Len()
	if c.Omitted <= 0 {
		return Clip{Head: s}
	}
	return c
}

// runeSlice returns the characters [from, to) of s.
func runeSlice(s string, from, to int) string {
	start, n := len(s), 0
	for i := range s {
		if n == from {
			start = i
		}
		if n == to {
			return s[start:i]
		}
		n++
	}
	if from >= n {
		return ""
	}
	return s[start:]
}

// Unsafe reports whether r is never shown as itself (see the package documentation for
// the set and the reasons).
func Unsafe(r rune) bool {
	if r < utf8.RuneSelf {
		return r < 0x20 || r == 0x7f
	}
	if r <= 0x9f || unicode.Is(unicode.Zs, r) || !unicode.IsGraphic(r) {
		return true
	}
	switch {
	case r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5,
		r >= 0x180b && r <= 0x180d, r == 0x180f, r == 0x2800, r == 0x3164, r == 0xffa0,
		r == 0xfffd, r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef:
		return true
	}
	return false
}

// Line returns s for a one-line field: every character of the [Unsafe] set escaped
// (line breaks included), invalid UTF-8 bytes as \xNN, backslashes doubled.
func Line(s string) Shown { return text(s, false) }

// Block returns s for a multi-line field: like [Line], except that a line feed stays a
// line break (a carriage return is still escaped).
func Block(s string) Shown { return text(s, true) }

func text(s string, keepNewlines bool) Shown {
	var out shownBuilder
	start := 0 // start of the pending plain run
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out.plain(s[start:i])
			out.esc(fmt.Sprintf(`\x%02x`, s[i]), fmt.Sprintf("byte 0x%02X, not UTF-8", s[i]))
			start = i + 1
		case r == '\\':
			out.plain(s[start:i])
			out.plain(`\\`)
			start = i + 1
		case r == '\n' && keepNewlines:
		case Unsafe(r):
			out.plain(s[start:i])
			out.esc(textEscape(r), describe(r))
			start = i + size
		}
		i += size
	}
	out.plain(s[start:])
	return out.s
}

func textEscape(r rune) string {
	if r > 0xffff {
		return fmt.Sprintf(`\U%08x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// shownBuilder appends spans, merging adjacent plain text.
type shownBuilder struct{ s Shown }

func (b *shownBuilder) plain(t string) {
	if t == "" {
		return
	}
	if n := len(b.s); n > 0 && !b.s[n-1].Esc {
		b.s[n-1].Text += t
		return
	}
	b.s = append(b.s, Span{Text: t})
}

func (b *shownBuilder) esc(t, what string) {
	b.s = append(b.s, Span{Text: t, Esc: true, What: what})
}

// names are the characters an attacker reaches for first, named in the escape's
// description; every other one is described by its code point alone.
var names = map[rune]string{
	0x00: "NULL", 0x07: "BELL", 0x08: "BACKSPACE", 0x09: "TAB", 0x0a: "LINE FEED",
	0x0b: "LINE TABULATION", 0x0c: "FORM FEED", 0x0d: "CARRIAGE RETURN", 0x1b: "ESCAPE",
	0x7f: "DELETE", 0x85: "NEXT LINE", 0x9b: "CONTROL SEQUENCE INTRODUCER",
	0xa0: "NO-BREAK SPACE", 0xad: "SOFT HYPHEN", 0x034f: "COMBINING GRAPHEME JOINER",
	0x061c: "ARABIC LETTER MARK", 0x200b: "ZERO WIDTH SPACE", 0x200c: "ZERO WIDTH NON-JOINER",
	0x200d: "ZERO WIDTH JOINER", 0x200e: "LEFT-TO-RIGHT MARK", 0x200f: "RIGHT-TO-LEFT MARK",
	0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR",
	0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING",
	0x202c: "POP DIRECTIONAL FORMATTING", 0x202d: "LEFT-TO-RIGHT OVERRIDE",
	0x202e: "RIGHT-TO-LEFT OVERRIDE", 0x2060: "WORD JOINER", 0x2066: "LEFT-TO-RIGHT ISOLATE",
	0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE",
	0x2069: "POP DIRECTIONAL ISOLATE", 0x3000: "IDEOGRAPHIC SPACE",
	0xfeff: "ZERO WIDTH NO-BREAK SPACE",
}

// describe names r for the marker's tooltip: "U+202E RIGHT-TO-LEFT OVERRIDE".
func describe(r rune) string {
	d := fmt.Sprintf("U+%04X", r)
	if n, ok := names[r]; ok {
		return d + " " + n
	}
	switch {
	case r >= 0xe0000 && r <= 0xe007f:
		return d + " TAG CHARACTER"
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef:
		return d + " VARIATION SELECTOR"
	case r < 0x20, r >= 0x80 && r <= 0x9f:
		return d + " CONTROL CHARACTER"
	}
	return d + " (not shown as itself)"
}

// JSON returns raw, a JSON value, indented by two spaces per level, with every string
// (keys included) written in one canonical form: the characters of the [Unsafe] set as
// JSON escapes (marked), '"' and '\' escaped, everything else as itself. Key order and
// duplicate keys are kept, numbers are kept as written, and the text is valid JSON with
// the same value as raw. When raw is not one valid JSON value, JSON returns it as
// [Block] text and ok false.
func JSON(raw []byte) (s Shown, ok bool) {
	var out shownBuilder
	if err := writeJSON(&out, raw, "  "); err != nil {
		return Block(string(raw)), false
	}
	return out.s, true
}

// EscapeJSON returns raw, a JSON value, compact, with every string in the canonical
// form of [JSON]: valid JSON with the same value, in which no character of the
// [Unsafe] set appears as itself. It is for JSON printed where people read it (a
// terminal). It returns an error, and nil, when raw is not one valid JSON value.
func EscapeJSON(raw []byte) ([]byte, error) {
	var out shownBuilder
	if err := writeJSON(&out, raw, ""); err != nil {
		return nil, err
	}
	return []byte(out.s.String()), nil
}

// writeJSON re-encodes the single JSON value in raw token by token.
func writeJSON(out *shownBuilder, raw []byte, indent string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object bool
		n      int // values (or keys) written at this level
		key    bool
	}
	var stack []frame
	newline := func() {
		if indent != "" {
			out.plain("\n" + strings.Repeat(indent, len(stack)))
		}
	}
	done := false
	for {
		tok, err := dec.Token()
		if err == io.EOF && done {
			break
		}
		if err != nil {
			return err
		}
		if done && len(stack) == 0 {
			return fmt.Errorf("display: more than one JSON value")
		}
		// Separator before this token.
		if d, isDelim := tok.(json.Delim); !isDelim || d == '{' || d == '[' {
			if len(stack) > 0 {
				top := &stack[len(stack)-1]
				switch {
				case top.object && top.key:
					sep := ":"
					if indent != "" {
						sep = ": "
					}
					out.plain(sep)
				default:
					if top.n > 0 {
						out.plain(",")
					}
					newline()
				}
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				out.plain(string(t))
				stack = append(stack, frame{object: t == '{'})
				continue // not yet a finished value
			case '}', ']':
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top.n > 0 {
					newline()
				}
				out.plain(string(t))
			}
		case string:
			writeJSONString(out, t)
		case json.Number:
			out.plain(string(t))
		case bool:
			out.plain(strconv.FormatBool(t))
		case nil:
			out.plain("null")
		}
		// A value (or a key) is complete.
		if len(stack) == 0 {
			done = true
			continue
		}
		top := &stack[len(stack)-1]
		if top.object {
			if top.key {
				top.key = false
				top.n++
			} else {
				top.key = true
			}
		} else {
			top.n++
		}
	}
	return nil
}

// writeJSONString writes s as a JSON string in the canonical display form.
func writeJSONString(out *shownBuilder, s string) {
	out.plain(`"`)
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var esc string
		plainEsc := false
		switch {
		case r == '"':
			esc, plainEsc = `\"`, true
		case r == '\\':
			esc, plainEsc = `\\`, true
		case r == '\n':
			esc = `\n`
		case r == '\r':
			esc = `\r`
		case r == '\t':
			esc = `\t`
		case r == '\b':
			esc = `\b`
		case r == '\f':
			esc = `\f`
		case Unsafe(r):
			if r > 0xffff {
				r1, r2 := utf16Pair(r)
				esc = fmt.Sprintf(`\u%04x\u%04x`, r1, r2)
			} else {
				esc = fmt.Sprintf(`\u%04x`, r)
			}
		default:
			i += size
			continue
		}
		out.plain(s[start:i])
		if plainEsc {
			out.plain(esc)
		} else {
			out.esc(esc, describe(r))
		}
		i += size
		start = i
	}
	out.plain(s[start:])
	out.plain(`"`)
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
