package shell

import "strings"

// argKind says whether an option takes a value.
type argKind uint8

const (
	argNone     argKind = iota // a flag
	argRequired                // value attached or in the next word
	argOptional                // value only when attached (-xVAL, --long=VAL)
)

// longOpt is one long option of a command.
type longOpt struct {
	name string
	kind argKind
}

// optSpec describes the options of a command that parses its arguments the
// way getopt_long does with a leading '+' in the short option string: the
// first operand ends the options, as does "--".
type optSpec struct {
	// short is a getopt-style list of short options: a letter followed by
	// ':' takes a required value, by "::" an optional attached value.
	short string
	long  []longOpt

	// strict makes an option the spec does not list a problem: for a
	// tool whose every option is modeled, an unknown one may be a newer
	// option that takes a value, so the command cannot be located.
	strict bool
}

// opt is one option found by scan.
type opt struct {
	name   string // the option letter, or the long option's full name
	long   bool
	value  string
	hasVal bool
}

func (s *optSpec) shortKind(c byte) argKind {
	if c == ':' {
		return argNone
	}
	i := strings.IndexByte(s.short, c)
	if i < 0 {
		return argNone
	}
	switch {
	case strings.HasPrefix(s.short[i+1:], "::"):
		return argOptional
	case strings.HasPrefix(s.short[i+1:], ":"):
		return argRequired
	}
	return argNone
}

// lookupLong finds a long option by its name or, as getopt_long allows, by
// an unambiguous prefix of it.
func (s *optSpec) lookupLong(name string) (longOpt, bool) {
	found := -1
	for i, lo := range s.long {
		if lo.name == name {
			return lo, true
		}
		if strings.HasPrefix(lo.name, name) {
			if found >= 0 {
				return longOpt{}, false // ambiguous: the command refuses it
			}
			found = i
		}
	}
	if found < 0 || name == "" {
		return longOpt{}, false
	}
	return s.long[found], true
}

// scan walks the options at the start of args and calls visit for each; a
// non-empty string from visit stops the scan and is returned as a problem.
// It returns the index of the first word after the options and whether the
// options ended with "--". Unknown options are treated as flags: the real
// command rejects them and runs nothing.
func (s *optSpec) scan(args []string, visit func(opt) string) (next int, dashdash bool, problem string) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return i + 1, true, ""
		}
		if len(a) < 2 || a[0] != '-' {
			return i, false, ""
		}
		i++
		if a[1] == '-' {
			name, value, hasVal := strings.Cut(a[2:], "=")
			o := opt{name: name, long: true, value: value, hasVal: hasVal}
			if lo, ok := s.lookupLong(name); ok {
				o.name = lo.name
				if s.strict && lo.kind == argNone && hasVal {
					return i, false, "option '--" + lo.name + "' takes no value"
				}
				if lo.kind == argRequired && !hasVal && i < len(args) {
					o.value, o.hasVal = args[i], true
					i++
				}
			} else if s.strict {
				return i, false, "unknown option '--" + name + "'"
			}
			if visit != nil {
				if problem := visit(o); problem != "" {
					return i, false, problem
				}
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			o := opt{name: a[j : j+1]}
			if s.strict && (a[j] == ':' || a[j] == '+' || strings.IndexByte(s.short, a[j]) < 0) {
				return i, false, "unknown option '-" + o.name + "'"
			}
			kind := s.shortKind(a[j])
			rest := a[j+1:]
			switch {
			case kind == argRequired && rest != "":
				o.value, o.hasVal = rest, true
			case kind == argRequired && i < len(args):
				o.value, o.hasVal = args[i], true
				i++
			case kind == argOptional && rest != "":
				o.value, o.hasVal = rest, true
			}
			if visit != nil {
				if problem := visit(o); problem != "" {
					return i, false, problem
				}
			}
			if kind != argNone {
				break
			}
		}
	}
	return i, false, ""
}

// scanPermuted reads args the way getopt_long does without a leading '+':
// options may appear anywhere, each word that is not an option is an
// operand, and every word after "--" is an operand. It calls visit for each
// option and returns the operands in order.
func (s *optSpec) scanPermuted(args []string, visit func(opt) string) (operands []string, problem string) {
	for i := 0; i < len(args); {
		a := args[i]
		if a == "--" {
			return append(operands, args[i+1:]...), ""
		}
		if len(a) < 2 || a[0] != '-' {
			operands = append(operands, a)
			i++
			continue
		}
		// One option word, with its value if it takes the next word.
		next, dashdash, problem := s.scan(args[i:], visit)
		if problem != "" {
			return nil, problem
		}
		if dashdash {
			return append(operands, args[i+next:]...), ""
		}
		i += max(next, 1)
	}
	return operands, ""
}
