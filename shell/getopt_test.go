package shell

import (
	"slices"
	"testing"
)

func TestOptSpecScan(t *testing.T) {
	spec := optSpec{short: "+ab:c::", long: []longOpt{
		{"alpha", argNone}, {"bravo", argRequired}, {"charlie", argOptional},
		{"charm", argNone},
	}}
	tests := []struct {
		args     []string
		next     int
		dashdash bool
		seen     []string // name=value, or name alone
	}{
		{nil, 0, false, nil},
		{[]string{"cmd", "-a"}, 0, false, nil},
		{[]string{"-a", "cmd"}, 1, false, []string{"a"}},
		{[]string{"-ab", "v", "cmd"}, 2, false, []string{"a", "b=v"}},
		{[]string{"-abv", "cmd"}, 1, false, []string{"a", "b=v"}},
		{[]string{"-c", "cmd"}, 1, false, []string{"c"}},
		{[]string{"-cv", "cmd"}, 1, false, []string{"c=v"}},
		{[]string{"-z", "cmd"}, 1, false, []string{"z"}},
		{[]string{"-", "cmd"}, 0, false, nil},
		{[]string{"--", "-a"}, 1, true, nil},
		{[]string{"-b"}, 1, false, []string{"b"}},
		{[]string{"--bravo", "v", "cmd"}, 2, false, []string{"bravo=v"}},
		{[]string{"--bravo=v", "cmd"}, 1, false, []string{"bravo=v"}},
		{[]string{"--br", "v", "cmd"}, 2, false, []string{"bravo=v"}},
		{[]string{"--charlie", "cmd"}, 1, false, []string{"charlie"}},
		{[]string{"--charlie=x", "cmd"}, 1, false, []string{"charlie=x"}},
		{[]string{"--char", "cmd"}, 1, false, []string{"char"}}, // ambiguous
		{[]string{"--charm", "cmd"}, 1, false, []string{"charm"}},
		{[]string{"--", "cmd"}, 1, true, nil},
		{[]string{"--unknown", "cmd"}, 1, false, []string{"unknown"}},
	}
	for _, tt := range tests {
		var seen []string
		next, dashdash, problem := spec.scan(tt.args, func(o opt) string {
			if o.hasVal {
				seen = append(seen, o.name+"="+o.value)
			} else {
				seen = append(seen, o.name)
			}
			return ""
		})
		if next != tt.next || dashdash != tt.dashdash || problem != "" || !slices.Equal(seen, tt.seen) {
			t.Errorf("scan(%q) = %d, %v, %q, seen %q; want %d, %v, seen %q",
				tt.args, next, dashdash, problem, seen, tt.next, tt.dashdash, tt.seen)
		}
	}
}

func TestShellScript(t *testing.T) {
	tests := []struct {
		args   []string
		script string
		ok     bool
	}{
		{[]string{"-c", "x"}, "x", true},
		{[]string{"-lc", "x", "a0"}, "x", true},
		{[]string{"-o", "pipefail", "-c", "x"}, "x", true},
		{[]string{"-co", "pipefail", "x"}, "x", true},
		{[]string{"+e", "-c", "x"}, "x", true},
		{[]string{"+c", "x"}, "", false},
		{[]string{"-c", "--", "x"}, "x", true},
		{[]string{"--", "-c", "x"}, "", false},
		{[]string{"script.sh", "-c", "x"}, "", false},
		{[]string{"--rcfile", "f", "-c", "x"}, "x", true},
		{[]string{"-c"}, "", false},
		{[]string{"-o"}, "", false},
	}
	for _, tt := range tests {
		script, ok := shellScript(tt.args)
		if script != tt.script || ok != tt.ok {
			t.Errorf("shellScript(%q) = %q, %v; want %q, %v", tt.args, script, ok, tt.script, tt.ok)
		}
	}
}
