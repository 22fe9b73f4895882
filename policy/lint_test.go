package policy_test

import (
	"strings"
	"testing"
)

// Each rule that can never do what it says is a warning located at its line and
// column; a clean file has none. These checks did not exist on the base commit.
func TestLintWarnings(t *testing.T) {
	src := "version: 1\n" +
		"mode: rules\n" +
		"aliases: {run_shell: bash}\n" +
		"rules:\n" +
		"  deny:\n" +
		"    bash: [\"/bin/rm *\", \"rm [*\", \"*/rm *\", \"rm [!x]*\"]\n" +
		"  allow:\n" +
		"    \"bash\\u200b\": [\"ls *\"]\n" +
		"    lookup: [\"*\"]\n" +
		"conditions:\n" +
		"  - id: alias-name\n" +
		"    when: 'tool == \"run_shell\"'\n" +
		"    effect: deny\n" +
		"  - id: canonical-name\n" +
		"    when: '\"bash\" == tool'\n" +
		"    effect: deny\n" +
		"  - id: other\n" +
		"    when: 'tool == \"lookup\"'\n" +
		"    effect: deny\n"
	p := parse(t, src)
	var got []string
	for _, w := range p.Warnings() {
		got = append(got, w.Error())
	}
	want := []string{
		`test.yaml:6:12: bash pattern "/bin/rm *" can never match`,
		`test.yaml:6:25: pattern "rm [*" has a '[' that no ']' closes`,
		`test.yaml:8:5: tool key "bash\u200b" has the invisible character U+200B at byte 4`,
		`test.yaml:12:11: condition 'alias-name' compares tool with "run_shell", which the rules alias to "bash"`,
		`test.yaml:15:11: condition 'canonical-name' compares tool with "bash", and the rules alias "run_shell" to it`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d warnings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
	// Warnings never change decisions or the revision.
	clean := parse(t, strings.Replace(src, `"bash\u200b"`, `bash`, 1))
	if len(clean.Warnings()) != len(want)-1 {
		t.Errorf("fixing the key left %d warnings", len(clean.Warnings()))
	}
	if n := len(parse(t, "version: 1\nmode: allow_all\n").Warnings()); n != 0 {
		t.Errorf("a clean file has %d warnings", n)
	}
}

// A bash allow rule that lets an interpreter run any code it is given is a warning; a
// fixed invocation, a deny or an escalate is not.
func TestLintCodeRunners(t *testing.T) {
	src := "version: 1\n" +
		"rules:\n" +
		"  allow:\n" +
		"    bash: [\"awk *\", \"python3 scripts/report.py\", \"sed -n 1p *\", \"ls *\", \"make test\"]\n" +
		"  escalate:\n" +
		"    bash: [\"perl *\"]\n"
	var got []string
	for _, w := range parse(t, src).Warnings() {
		got = append(got, w.Error())
	}
	want := []string{
		`test.yaml:4:12: bash pattern "awk *" lets awk run code it is given`,
		`test.yaml:4:50: bash pattern "sed -n 1p *" lets sed run code it is given`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d warnings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
}
