package shell_test

import (
	"reflect"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/wardenhq/warden/shell"
)

var fuzzSeeds = []string{
	"git log --oneline -n 5",
	"/bin/rm -rf /",
	"rm   -rf\t/",
	"echo 'a|b' \"x;y\" a\\;b",
	"echo hi; rm -rf /",
	"a && b || c | d |& e &",
	"echo hi\nrm -rf /",
	"ls \\\n -l",
	"echo $(id) `id` $((1)) ${x} $x",
	"diff <(a) >(b)",
	"echo $'\\x41' $\"x\"",
	"cat <<EOF\nhi\nEOF",
	"cat <<< x > y 2>&1 < z",
	"FOO=1 cmd",
	"(a) { b; } [[ c ]] ((d))",
	"if a; then b; fi",
	"{rm,-rf,/}",
	"touch f{1..3} {a..c} x{,y}",
	"/???/r? -rf /",
	"echo hi # comment",
	"",
	"   ",
	"sudo -u root -E env FOO=1 timeout -s KILL 5 nice -n 5 rm -rf /tmp/x",
	"sudo -s 'rm x'",
	"env -S 'a b'",
	"find . -name '*.go' -exec rm {} \\; -execdir sh -c 'echo {}' +",
	"xargs -0 -I{} -n1 rm {}",
	"bash -lc 'git status && rm -rf /'",
	"sh -c \"sudo bash -c 'rm -rf /'\"",
	"eval rm -rf /",
	"eval 'a;b'",
	"time -p -- rm x",
	"command -v time",
	"exec -a x setsid -w nohup builtin command rm",
	"r\\m \"-r\"'f' /",
	"echo '\n' \"\\\n\"",
	"echo a\x00b",
	"! rm x",
	"coproc x",
	"a=(1 2)",
	"echo @(a|b) !(c)",
	"'' x",
	"busybox sh -c 'rm x'",
	"ls ~ *.go [ab]?",
	"echo \"a\\\"b\\\\c\\$d\"",
	"time rm x | sh",
	"x\rx -rf /",
	"echo '\n'a\\",
	"printf '%s\\0' \\\n{x,y}",
	"cat \"$\\\n(touch x)\" $\\\n{x} $\\\n'a' '$\\\n(y)'",
	"printf -v 'a[$(x)]' y; test -v 'a[1]'",
	"timeout * ls -rf d; find . -exe[c] rm {} +",
	"env LD_PRELOAD=x git -c alias.x='!y' x",
	"ssh -o ProxyCommand=x host 'a;b'; watch 'a;b'; su -c 'a;b' root",
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := shell.Analyze(in)
		if again := shell.Analyze(in); !reflect.DeepEqual(got, again) {
			t.Fatalf("Analyze(%q) not deterministic: %+v then %+v", in, got, again)
		}
		if !got.Simple {
			if got.Problem == "" || got.Commands != nil {
				t.Fatalf("Analyze(%q) = %+v: not simple needs a problem and no commands", in, got)
			}
			if got.Problem == "internal error" {
				t.Fatalf("Analyze(%q) hit an internal error", in)
			}
			return
		}
		if got.Problem != "" || len(got.Commands) == 0 {
			t.Fatalf("Analyze(%q) = %+v: simple needs commands and no problem", in, got)
		}
		for _, c := range got.Commands {
			if c == "" || strings.Contains(c, "  ") || strings.HasPrefix(c, " ") || strings.HasSuffix(c, " ") {
				t.Fatalf("Analyze(%q): badly spaced command %q", in, c)
			}
		}
		if norm, ok := shell.Normalize(in); !ok || norm != got.Commands[0] {
			t.Fatalf("Normalize(%q) = %q, %v; want %q", in, norm, ok, got.Commands[0])
		}
		checkOneCall(t, in)
	})
}

// checkOneCall re-parses a command that Analyze called simple and checks,
// independently of the package, that it is one plain call: one statement,
// not negated or backgrounded, no redirections, no assignments. The bash
// keyword "time" may wrap such a call.
func checkOneCall(t *testing.T, in string) {
	t.Helper()
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(in), "")
	if err != nil {
		t.Fatalf("Analyze(%q) simple, but it does not parse: %v", in, err)
	}
	if len(file.Stmts) != 1 {
		t.Fatalf("Analyze(%q) simple, but it has %d statements", in, len(file.Stmts))
	}
	st := file.Stmts[0]
	if tc, ok := st.Cmd.(*syntax.TimeClause); ok {
		if st.Negated || st.Background || st.Coprocess || st.Semicolon.IsValid() || len(st.Redirs) > 0 {
			t.Fatalf("Analyze(%q) simple, but the time statement is not plain", in)
		}
		if tc.Stmt == nil {
			return
		}
		st = tc.Stmt
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		t.Fatalf("Analyze(%q) simple, but its command is a %T", in, st.Cmd)
	}
	if st.Negated || st.Background || st.Coprocess || st.Semicolon.IsValid() {
		t.Fatalf("Analyze(%q) simple, but the statement is not plain", in)
	}
	if len(st.Redirs) > 0 || len(call.Assigns) > 0 || len(call.Args) == 0 {
		t.Fatalf("Analyze(%q) simple, but has %d redirections, %d assignments, %d words",
			in, len(st.Redirs), len(call.Assigns), len(call.Args))
	}
	for _, w := range call.Args {
		for _, part := range w.Parts {
			switch p := part.(type) {
			case *syntax.Lit:
			case *syntax.SglQuoted:
				if p.Dollar {
					t.Fatalf("Analyze(%q) simple, but has $'...'", in)
				}
			case *syntax.DblQuoted:
				for _, inner := range p.Parts {
					if _, ok := inner.(*syntax.Lit); !ok || p.Dollar {
						t.Fatalf("Analyze(%q) simple, but has a %T in double quotes", in, inner)
					}
				}
			default:
				t.Fatalf("Analyze(%q) simple, but has a %T", in, part)
			}
		}
	}
}

func TestFuzzSeeds(t *testing.T) {
	if len(fuzzSeeds) < 30 {
		t.Errorf("only %d fuzz seeds", len(fuzzSeeds))
	}
}
