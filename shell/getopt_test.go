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

func TestOptSpecStrict(t *testing.T) {
	spec := optSpec{short: "+ab:", strict: true, long: []longOpt{{"alpha", argNone}, {"bravo", argRequired}}}
	for _, args := range [][]string{{"-z", "cmd"}, {"-az"}, {"--unknown", "cmd"}, {"-+"}, {"-:"}, {"--al=x"}} {
		if _, _, problem := spec.scan(args, nil); problem == "" {
			t.Errorf("strict scan(%q) found no problem", args)
		}
	}
	for _, args := range [][]string{{"-a", "cmd"}, {"-ab", "v"}, {"--al", "cmd"}, {"--bravo=v"}, {"--", "-z"}} {
		if _, _, problem := spec.scan(args, nil); problem != "" {
			t.Errorf("strict scan(%q) = %q", args, problem)
		}
	}
}

func TestOptSpecScanPermuted(t *testing.T) {
	spec := optSpec{short: "ab:", strict: true}
	tests := []struct {
		args, operands, seen []string
	}{
		{nil, nil, nil},
		{[]string{"x", "-a", "y"}, []string{"x", "y"}, []string{"a"}},
		{[]string{"x", "-b", "v", "y"}, []string{"x", "y"}, []string{"b=v"}},
		{[]string{"-a", "--", "-b", "v"}, []string{"-b", "v"}, []string{"a"}},
		{[]string{"x", "-", "-ab", "v", "--", "-a"}, []string{"x", "-", "-a"}, []string{"a", "b=v"}},
	}
	for _, tt := range tests {
		var seen []string
		operands, problem := spec.scanPermuted(tt.args, func(o opt) string {
			if o.hasVal {
				seen = append(seen, o.name+"="+o.value)
			} else {
				seen = append(seen, o.name)
			}
			return ""
		})
		if problem != "" || !slices.Equal(operands, tt.operands) || !slices.Equal(seen, tt.seen) {
			t.Errorf("scanPermuted(%q) = %q, seen %q, problem %q; want %q, seen %q", tt.args, operands, seen, problem, tt.operands, tt.seen)
		}
	}
	if _, problem := spec.scanPermuted([]string{"x", "-z"}, nil); problem == "" {
		t.Errorf("scanPermuted with an unknown option found no problem")
	}
}
