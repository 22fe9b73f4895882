package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wordProblem reports anything in w that makes its value depend on more
// than its literal text: expansions, substitutions, special quoting and
// brace expansion.
func wordProblem(w *syntax.Word) string {
	for _, part := range w.Parts {
		if problem := partProblem(part); problem != "" {
			return problem
		}
	}
	if hasBraceExpansion(w) {
		return "brace expansion"
	}
	return ""
}

func partProblem(part syntax.WordPart) string {
	switch p := part.(type) {
	case *syntax.Lit:
		return ""
	case *syntax.SglQuoted:
		if p.Dollar {
			return "ANSI-C quoting $'...'"
		}
		return ""
	case *syntax.DblQuoted:
		if p.Dollar {
			return "locale quoting $\"...\""
		}
		for _, inner := range p.Parts {
			if _, ok := inner.(*syntax.Lit); !ok {
				return partProblem(inner)
			}
		}
		return ""
	case *syntax.ParamExp:
		return "parameter expansion"
	case *syntax.CmdSubst:
		return "command substitution"
	case *syntax.ArithmExp:
		return "arithmetic expansion"
	case *syntax.ProcSubst:
		return "process substitution"
	case *syntax.ExtGlob:
		return "extended glob"
	case *syntax.BraceExp:
		return "brace expansion"
	}
	return "unsupported word part"
}

// wordValue returns the value bash gives the literal word w: quotes are
// removed and backslash escapes resolved. w must have passed wordProblem.
func wordValue(w *syntax.Word) string {
	if len(w.Parts) == 1 {
		if lit, ok := w.Parts[0].(*syntax.Lit); ok && strings.IndexByte(lit.Value, '\\') < 0 {
			return lit.Value
		}
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			writeUnquoted(&b, p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, inner := range p.Parts {
				if lit, ok := inner.(*syntax.Lit); ok {
					writeDoubleQuoted(&b, lit.Value)
				}
			}
		}
	}
	return b.String()
}

// writeUnquoted writes unquoted text with its backslash escapes resolved:
// a backslash quotes the next character, and a backslash-newline vanishes.
// A trailing lone backslash stays literal, as in bash.
func writeUnquoted(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(c)
	}
}

// writeDoubleQuoted writes text from inside double quotes with its escapes
// resolved: there a backslash only quotes $, `, ", \ and newline, and is
// literal before any other character.
func writeDoubleQuoted(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '"', '\\':
				i++
				b.WriteByte(v[i])
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
}

// unquotedGlob reports whether w contains an unquoted pathname-expansion
// metacharacter: '*', '?', or '[' followed somewhere by ']'.
func unquotedGlob(w *syntax.Word) bool {
	bracket := false
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			for i := 0; i < len(v); i++ {
				switch v[i] {
				case '\\':
					i++
					if bracket && i < len(v) && v[i] == ']' {
						return true
					}
				case '*', '?':
					return true
				case '[':
					bracket = true
				case ']':
					if bracket {
						return true
					}
				}
			}
		case *syntax.SglQuoted:
			if bracket && strings.IndexByte(p.Value, ']') >= 0 {
				return true
			}
		case *syntax.DblQuoted:
			if !bracket {
				continue
			}
			for _, inner := range p.Parts {
				if lit, ok := inner.(*syntax.Lit); ok && strings.IndexByte(lit.Value, ']') >= 0 {
					return true
				}
			}
		}
	}
	return false
}

// globChars reports whether s, taken as text that may still undergo
// pathname expansion, holds a glob metacharacter.
func globChars(s string) bool {
	if strings.ContainsAny(s, "*?") {
		return true
	}
	i := strings.IndexByte(s, '[')
	return i >= 0 && strings.IndexByte(s[i+1:], ']') >= 0
}

// hasBraceExpansion reports whether bash would brace-expand w. It errs on
// the side of yes: a word is refused when either a conservative scan of its
// unquoted text or syntax.SplitBraces finds an expansion.
func hasBraceExpansion(w *syntax.Word) bool {
	hasBrace := false
	for _, part := range w.Parts {
		if lit, ok := part.(*syntax.Lit); ok && strings.IndexByte(lit.Value, '{') >= 0 {
			hasBrace = true
			break
		}
	}
	if !hasBrace {
		return false
	}
	if braceScan(w) {
		return true
	}
	cp := *w // SplitBraces rewrites the word it is given, so use a copy.
	if !syntax.SplitBraces(&cp) {
		return false
	}
	return containsBraceExp(cp.Parts)
}

// braceScan looks for an unquoted '{' that is closed by an unquoted '}'
// with an unquoted ',' or ".." somewhere between them.
func braceScan(w *syntax.Word) bool {
	open := 0
	sep := false
	for _, part := range w.Parts {
		lit, ok := part.(*syntax.Lit)
		if !ok {
			continue
		}
		v := lit.Value
		for i := 0; i < len(v); i++ {
			switch v[i] {
			case '\\':
				i++
			case '{':
				open++
			case ',':
				if open > 0 {
					sep = true
				}
			case '.':
				if open > 0 && i+1 < len(v) && v[i+1] == '.' {
					sep = true
				}
			case '}':
				if open == 0 {
					continue
				}
				if sep {
					return true
				}
				open--
				if open == 0 {
					sep = false
				}
			}
		}
	}
	return false
}

func containsBraceExp(parts []syntax.WordPart) bool {
	for _, part := range parts {
		if _, ok := part.(*syntax.BraceExp); ok {
			return true
		}
	}
	return false
}

// leadingGlob reports whether the first character of w's value comes from
// an unquoted pathname-expansion character (*, ?, [), so that a match could
// begin with any character. Empty quoted parts before it are skipped.
func leadingGlob(w *syntax.Word) bool {
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if p.Value == "" {
				continue
			}
			switch p.Value[0] {
			case '*', '?', '[':
				return true
			}
			return false
		case *syntax.SglQuoted:
			if p.Value != "" {
				return false
			}
		case *syntax.DblQuoted:
			for _, inner := range p.Parts {
				if lit, ok := inner.(*syntax.Lit); !ok || lit.Value != "" {
					return false
				}
			}
		default:
			return false
		}
	}
	return false
}
