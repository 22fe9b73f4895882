package fnmatch

import (
	"strings"
	"unicode/utf8"
)

// segment is a star-free, non-empty run of tokens between two stars. Match
// finds each segment at its leftmost position, so the search for a segment's
// possible start positions is the inner loop of matching.
type segment struct {
	toks   []token
	minLen int // minimum subject bytes the segment can match

	// Anchored search: every match has, at byte offset off from its
	// start, one of the bytes anchor[:nAnchor]. The bytes are found with
	// strings.IndexByte and each hit is verified with matchAt. When
	// needASCII is set the anchor is only valid for an ASCII subject
	// (because some earlier position, or the anchor position itself, could
	// otherwise match a multi-byte character).
	nAnchor   int
	anchor    [maxAnchor]byte
	off       int
	needASCII bool

	// Filtered scan, used without a usable anchor: a match can start at an
	// ASCII byte b only if first has bit b, and at a non-ASCII character
	// only if firstNonASCII.
	first         [2]uint64
	firstNonASCII bool
}

// maxAnchor bounds the bytes searched for as an anchor; each costs one
// strings.IndexByte call per candidate.
const maxAnchor = 4

// maxAnchorOffset bounds how far into a segment an anchor is looked for,
// which keeps compiling long segments cheap.
const maxAnchorOffset = 32

// position describes which subject characters can occupy one character
// position of a segment.
type position struct {
	ascii    [2]uint64 // ASCII subject bytes that can match here
	nonASCII bool      // some non-ASCII subject character can match here
}

func (ps *position) set(b byte) { ps.ascii[b>>6] |= 1 << (b & 63) }

func newSegment(toks []token) segment {
	seg := segment{toks: toks, minLen: minLen(toks)}

	// Walk the leading character positions while their byte offset from
	// the start of a match is known. Offsets are fixed while every
	// position can only match a single ASCII byte; under the assumption
	// of an ASCII subject they stay fixed through any position (every
	// character is then one byte), except a non-ASCII literal, which
	// cannot match an ASCII subject at all.
	bestCost := -1
	off := 0
	needASCII := false
	visit := func(ps position) {
		if off == 0 {
			seg.first = ps.ascii
			seg.firstNonASCII = ps.nonASCII
		}
		need := needASCII || ps.nonASCII
		n, freq := 0, 0
		for b := 0; b < utf8.RuneSelf; b++ {
			if ps.ascii[b>>6]&(1<<(b&63)) != 0 {
				n++
				freq += byteFreq[b]
			}
		}
		cost := anchorCost(n, freq)
		if need {
			cost += 30 // the isASCII pass over the subject
		}
		if n > 0 && n <= maxAnchor && (bestCost < 0 || cost < bestCost) {
			bestCost = cost
			seg.nAnchor = 0
			for b := 0; b < utf8.RuneSelf; b++ {
				if ps.ascii[b>>6]&(1<<(b&63)) != 0 {
					seg.anchor[seg.nAnchor] = byte(b)
					seg.nAnchor++
				}
			}
			seg.off = off
			seg.needASCII = need
		}
		needASCII = need
		off++
	}
walk:
	for _, t := range toks {
		if off >= maxAnchorOffset {
			break
		}
		switch t.kind {
		case tLit:
			for _, r := range t.lit {
				var ps position
				if r >= utf8.RuneSelf || off >= maxAnchorOffset {
					if off == 0 {
						seg.firstNonASCII = true
					}
					break walk
				}
				b := byte(r)
				ps.set(b)
				if 'a' <= b && b <= 'z' {
					ps.set(b - ('a' - 'A'))
				}
				ps.nonASCII = foldsFromNonASCII(b)
				visit(ps)
			}
		case tAny:
			visit(position{ascii: [2]uint64{^uint64(0), ^uint64(0)}, nonASCII: true})
		case tClass:
			var ps position
			for b := 0; b < utf8.RuneSelf; b++ {
				if t.cls.has(int32(lowerASCII[b])) {
					ps.set(byte(b))
				}
			}
			c := t.cls
			ps.nonASCII = c.negate || len(c.ranges) > 0 || c.has('i') || c.has('k')
			visit(ps)
		}
	}
	return seg
}

// byteFreq is a rough guess at how often each ASCII byte occurs in a
// 40-byte command line or path, in tenths of an occurrence. It is used to
// pick an anchor that yields few false candidates.
var byteFreq = func() (t [utf8.RuneSelf]int) {
	for b := range t {
		t[b] = 1 // A-Z, most punctuation, control characters
	}
	for _, f := range []struct {
		freq  int
		bytes string
	}{
		{40, " /"},
		{25, "e"},
		{20, "-ts"},
		{17, "aoinr"},
		{15, "."},
		{10, "ldc"},
		{8, "hump"},
		{5, "gfb"},
		{4, "w"},
		{3, "_yvkx=\"'0123456789"},
		{2, ":"},
		{1, "jqz,"},
	} {
		for _, b := range f.bytes {
			t[b] = f.freq
		}
	}
	return t
}()

// anchorCost estimates the cost of searching with an anchor of n bytes
// whose frequencies sum to freq (in tenths): n strings.IndexByte calls
// (~3.5ns each) plus, per false candidate, a failed verification (~6ns)
// and another round of calls. The unit is 0.1ns.
func anchorCost(n, freq int) int {
	return 35*n + freq*(60+35*n)/10
}

// find returns the end of the leftmost match of seg in s starting at or
// after byte offset i (a character boundary). ascii reports whether s is
// all ASCII; it is only computed when some segment needs it.
func (seg *segment) find(s string, i int, ascii bool) (int, bool) {
	if seg.nAnchor > 0 && (ascii || !seg.needASCII) {
		// A candidate start need not be a character boundary when it
		// is not ASCII, but then the positions before the anchor only
		// match single ASCII bytes, so matchAt rejects it.
		anchors := seg.anchor[:seg.nAnchor]
		for len(s)-i >= seg.minLen {
			k := indexAnyByte(s[i+seg.off:], anchors)
			if k < 0 {
				return 0, false
			}
			i += k
			if len(s)-i < seg.minLen {
				return 0, false
			}
			if end, ok := matchAt(seg.toks, s, i); ok {
				return end, true
			}
			i++
		}
		return 0, false
	}
	for len(s)-i >= seg.minLen {
		if b := s[i]; b < utf8.RuneSelf {
			if seg.first[b>>6]&(1<<(b&63)) != 0 {
				if end, ok := matchAt(seg.toks, s, i); ok {
					return end, true
				}
			}
			i++
			continue
		}
		if seg.firstNonASCII {
			if end, ok := matchAt(seg.toks, s, i); ok {
				return end, true
			}
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	return 0, false
}

// indexAnyByte returns the index of the first byte of s that is in set, or
// -1.
func indexAnyByte(s string, set []byte) int {
	best := -1
	for _, b := range set {
		if k := strings.IndexByte(s, b); k >= 0 {
			best = k
			s = s[:k]
		}
	}
	return best
}

// isASCII reports whether s contains only ASCII bytes.
func isASCII(s string) bool {
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
