package fnmatch

// class is a compiled bracket expression: a set of characters (lower-cased
// code points, or invalidBase+b for an invalid byte b), possibly negated.
type class struct {
	ascii  [2]uint64 // members below 0x80, one bit each
	ranges []crange  // members at or above 0x80, inclusive ranges
	negate bool
}

type crange struct{ lo, hi int32 }

func (c *class) add(lo, hi int32) {
	for ; lo <= hi && lo < 0x80; lo++ {
		c.ascii[lo>>6] |= 1 << (lo & 63)
	}
	if lo <= hi {
		c.ranges = append(c.ranges, crange{lo, hi})
	}
}

// has reports whether the lower-cased character ch matches the class.
func (c *class) has(ch int32) bool {
	in := false
	if ch < 0x80 {
		in = c.ascii[ch>>6]&(1<<(ch&63)) != 0
	} else {
		for _, r := range c.ranges {
			if r.lo <= ch && ch <= r.hi {
				in = true
				break
			}
		}
	}
	return in != c.negate
}

// singleton returns the class containing only ch.
func singleton(ch int32) *class {
	c := new(class)
	c.add(ch, ch)
	return c
}

// atom is one character of the character-set body that Python's
// fnmatch.translate builds. join marks the hyphens translate inserts
// between the two ends of a range; every other hyphen in the body is
// escaped by translate and so literal.
//
// translate also backslash-escapes '\', '&', '~', '|' and a leading '^' or
// '[' so that re reads them literally; the set parser below gives no
// character a special meaning except a leading '!' and a joining '-', so
// those escapes need no representation.
type atom struct {
	c    int32
	join bool
}

// parseClass compiles the body of a bracket expression (the characters
// between '[' and the closing ']', already lower-cased), reproducing
// Python 3.11's fnmatch.translate followed by the re module's parsing of the
// resulting character set, step by step.
func parseClass(stuff []int32) *class {
	atoms := classAtoms(stuff)

	cls := new(class)
	// translate: an empty body never matches ("(?!)"); a lone '!' matches
	// any character ("."), the same as a negated empty set; otherwise a
	// leading '!' becomes '^', negation. This test looks at the body
	// after empty ranges were removed, which is where Python's quirk
	// ("[z-a!b]" is negated) comes from.
	if len(atoms) > 0 && !atoms[0].join && atoms[0].c == '!' {
		cls.negate = true
		atoms = atoms[1:]
	}

	// re's set parser: "x-y" with a joining hyphen is a range, anything
	// else a literal. A ']' can only be the first member (translate ends
	// the body at the first ']' after that position), where re reads it
	// as a literal, so it needs no special case either. After a stripped
	// '!', a joining hyphen may come first; re then reads it as a literal
	// ("[z-a!-c]" becomes "[^-c]").
	for k := 0; k < len(atoms); {
		lo := atoms[k].c
		k++
		if k < len(atoms) && atoms[k].join {
			if k+1 == len(atoms) {
				// "x-]": literal x and literal '-'. Unreachable, as
				// translate never ends a body with a joining hyphen,
				// but this is what re would do.
				cls.add(lo, lo)
				cls.add('-', '-')
				break
			}
			hi := atoms[k+1].c
			k += 2
			// translate has removed every reversed range, so re would
			// not reject this; an empty range adds nothing either way.
			cls.add(lo, hi)
			continue
		}
		cls.add(lo, lo)
	}
	return cls
}

// classAtoms reproduces the body construction of fnmatch.translate: split
// at the hyphens that form ranges, drop empty (reversed) ranges, and join
// the pieces back with joining hyphens.
func classAtoms(stuff []int32) []atom {
	hasDash := false
	for _, c := range stuff {
		if c == '-' {
			hasDash = true
			break
		}
	}
	if !hasDash {
		atoms := make([]atom, len(stuff))
		for i, c := range stuff {
			atoms[i] = atom{c: c}
		}
		return atoms
	}

	// Split into chunks at hyphens. The first hyphen considered is the
	// second character of the body (the third after '!'), and after each
	// split point the search resumes three characters later, so a range
	// end is never itself a range start: "a-c-e" is "a", "c-e".
	var chunks [][]int32
	i := 0
	k := 1
	if stuff[0] == '!' {
		k = 2
	}
	for {
		k = indexChar(stuff, '-', k)
		if k < 0 {
			break
		}
		chunks = append(chunks, stuff[i:k:k])
		i = k + 1
		k += 3
	}
	if i < len(stuff) {
		chunks = append(chunks, stuff[i:])
	} else {
		// The body ends with a hyphen: it is literal.
		last := len(chunks) - 1
		chunks[last] = append(chunks[last][:len(chunks[last]):len(chunks[last])], '-')
	}

	// Remove empty ranges. translate walks the chunks from the right:
	// when chunk k-1 ends above where chunk k starts, it drops both end
	// points and merges the two chunks into chunk k-1, which is then
	// compared with chunk k-2. Doing that with slice copies is quadratic
	// in the number of ranges, so keep the chunk being compared (right)
	// reversed, as a stack whose top is its first character, and emit
	// finished chunks into out back to front.
	out := make([]atom, 0, len(stuff)+1)
	right := make([]int32, 0, len(stuff)+1)
	pushReversed := func(a []int32) {
		for x := len(a) - 1; x >= 0; x-- {
			right = append(right, a[x])
		}
	}
	pushReversed(chunks[len(chunks)-1])
	for k := len(chunks) - 1; k > 0; k-- {
		a := chunks[k-1]
		// right is never empty here: only chunk 0 and the last chunk
		// can be one character long.
		if len(right) > 0 && a[len(a)-1] > right[len(right)-1] {
			right = right[:len(right)-1]
			pushReversed(a[:len(a)-1])
			continue
		}
		for _, c := range right {
			out = append(out, atom{c: c})
		}
		out = append(out, atom{c: '-', join: true})
		right = right[:0]
		pushReversed(a)
	}
	for _, c := range right {
		out = append(out, atom{c: c})
	}
	for x, y := 0, len(out)-1; x < y; x, y = x+1, y-1 {
		out[x], out[y] = out[y], out[x]
	}
	return out
}

func indexChar(s []int32, c int32, from int) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
