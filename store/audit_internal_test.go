package store

import (
	"regexp"
	"strings"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything", true},
		{"?", "", false},
		{"?", "é", true}, // one character, not one byte
		{"read_*", "read_file", true},
		{"read_*", "READ_FILE", true},
		{"READ_*", "read_dir", true},
		{"read_*", "xread_file", false},
		{"*_file", "write_file", true},
		{"*_file", "write_files", false},
		{"r*d*e", "read_file", true},
		{"r*d*e", "read_files", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"?hell", "shell", true},
		{"?hell", "hell", false},
		{"s??ll", "shell", true},
		{"[a]*", "a", false}, // brackets are literal
		{"[a]*", "[a]x", true},
		{"a\\*", "a\\x", true}, // no escapes: a backslash is literal
		{"ÉCRIRE*", "écrire_fichier", true},
		{"**", "x", true},
		{"*a", "aaaa", true},
		{"*aab", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", true},
	}
	for _, c := range cases {
		if got := matchGlob(c.pattern, c.name); got != c.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// globRegexp is the reference: the same language as a regular expression.
func globRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?is)\A`)
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}

func FuzzMatchGlob(f *testing.F) {
	f.Add("read_*", "READ_file")
	f.Add("a*b?c", "aXXbYc")
	f.Add("*?*", "")
	f.Add("ß*", "SS")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !utf8Valid(pattern) || !utf8Valid(name) || len(pattern) > 64 || len(name) > 256 {
			t.Skip()
		}
		want := globRegexp(pattern).MatchString(name)
		if got := matchGlob(pattern, name); got != want {
			t.Errorf("matchGlob(%q, %q) = %v, reference says %v", pattern, name, got, want)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }
