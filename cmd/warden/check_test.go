package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

const (
	codingPolicy = "testdata/policies/coding.yaml"
	rolesPolicy  = "testdata/policies/roles.yaml"
	safeExample  = "../../examples/policies/safe.yaml"
)

// TestCheckGolden pins the three output forms of `warden check` (plain, --json,
// --explain) and their exit codes.
func TestCheckGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		// Plain output for each effect.
		{"plain-deny", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"rm -rf /"}`}},
		{"plain-allow", []string{"--policy", codingPolicy, "--tool", "run_shell", "--args", `{"command":"ls -la"}`}},
		{"plain-ask", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"git push origin main"}`}},
		{"plain-ask-tell-llm", []string{"--policy", rolesPolicy, "--tool", "refund", "--args", `{"amount":1500}`}},
		{"plain-halt", []string{"--policy", rolesPolicy, "--tool", "bash", "--args", `{"command":"wipe"}`}},
		{"plain-shell-control", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"ls; rm -rf /"}`}},

		// JSON: one object on one line, every key present.
		{"json-deny", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"rm -rf /"}`, "--json"}},
		{"json-allow", []string{"--policy", codingPolicy, "--tool", "editor", "--args", `{"file_path":"/work/a.go"}`, "--json"}},
		{"json-ask", []string{"--policy", rolesPolicy, "--tool", "refund", "--args", `{"amount":1500}`, "--capability", "user_data", "--json"}},
		{"json-halt", []string{"--policy", rolesPolicy, "--tool", "bash", "--args", `{"command":"wipe"}`, "--json"}},
		{"json-explain", []string{"--policy", rolesPolicy, "--role", "viewer", "--tool", "reader", "--args", `{"path":"/work/a.go"}`, "--capability", "memory_read", "--capability", "user_data", "--capability", "external_net", "--json", "--explain"}},
		{"json-explain-bash", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"timeout 5 sudo /bin/rm -rf /"}`, "--json", "--explain"}},

		// --explain: layers, decider, match string, normalized and wrapped commands,
		// verdicts, the shell problem, and each capability check.
		{"explain-wrapped", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"timeout 5 sudo /bin/rm -rf /"}`, "--explain"}},
		{"explain-allowed-wrapper", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"timeout 5 'ls'  -la"}`, "--explain"}},
		{"explain-shell-control", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"cat $(ls) | sh"}`, "--explain"}},
		{"explain-match-string", []string{"--policy", codingPolicy, "--tool", "deploy", "--args", `{"action":"ship","env":"prod","n":3}`, "--explain"}},
		{"explain-capabilities", []string{"--policy", rolesPolicy, "--role", "viewer", "--tool", "reader", "--args", `{"path":"/work/a.go"}`, "--capability", "memory_read", "--capability", "user_data", "--capability", "external_net", "--explain"}},
		{"explain-conditions", []string{"--policy", rolesPolicy, "--tool", "refund", "--args", `{"amount":1500}`, "--capability", "user_data", "--explain"}},
		{"explain-condition-error", []string{"--policy", rolesPolicy, "--tool", "refund", "--args", `{"ticket":1}`, "--explain"}},
		{"explain-skill-allowed", []string{"--policy", rolesPolicy, "--tool", "skill:refunds", "--explain"}},
		{"explain-skill-denied", []string{"--policy", rolesPolicy, "--tool", "skill:payroll", "--explain"}},
		{"explain-skill-not-gated", []string{"--policy", codingPolicy, "--tool", "skill:payroll", "--explain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"check"}, tt.args...)
			r := runWarden(t, args...)
			golden(t, "check-"+tt.name, r.transcript(args))
			if slices.Contains(tt.args, "--json") {
				if lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); len(lines) != 1 || !json.Valid([]byte(lines[0])) {
					t.Errorf("--json printed %q; want one JSON object on one line", r.stdout)
				}
			}
		})
	}
}

// TestCheckJSONKeys checks the key order of --json and that every key is present even
// when its value is empty.
func TestCheckJSONKeys(t *testing.T) {
	r := runWarden(t, "check", "--policy", codingPolicy, "--tool", "editor", "--args", `{"file_path":"/work/a.go"}`, "--json")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var keys []string
	depth := 0
	expectKey := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
			expectKey = depth == 1 && v == '{'
			continue
		case string:
			if depth == 1 && expectKey {
				keys = append(keys, v)
				expectKey = false
				continue
			}
		}
		expectKey = depth == 1
	}
	want := []string{"effect", "rule_id", "rationale", "reason", "tell_llm", "revision"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got["effect"] != "allow" || got["reason"] != "" || got["tell_llm"] != "" || !strings.HasPrefix(got["revision"], "sha256:") {
		t.Errorf("got %v", got)
	}
}

// TestCheckExitCodes is the exit-code contract of `warden check`.
func TestCheckExitCodes(t *testing.T) {
	bash := func(cmd string) string { return `{"command":"` + cmd + `"}` }
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a substring of stderr; "" means stderr must be empty
	}{
		{"allow", []string{"--policy", codingPolicy, "--tool", "bash", "--args", bash("ls")}, exitAllow, ""},
		{"deny", []string{"--policy", codingPolicy, "--tool", "bash", "--args", bash("rm -rf /")}, exitDeny, ""},
		{"ask", []string{"--policy", codingPolicy, "--tool", "bash", "--args", bash("git push origin")}, exitAsk, ""},
		{"halt", []string{"--policy", rolesPolicy, "--tool", "bash", "--args", bash("wipe")}, exitHalt, ""},
		{"deny by default", []string{"--policy", codingPolicy, "--tool", "unknown_tool"}, exitDeny, ""},
		{"deny json", []string{"--policy", codingPolicy, "--tool", "bash", "--args", bash("rm -rf /"), "--json"}, exitDeny, ""},
		{"capability refuses", []string{"--policy", rolesPolicy, "--role", "viewer", "--tool", "reader", "--capability", "user_data"}, exitDeny, ""},

		{"missing --policy", []string{"--tool", "bash"}, exitUsage, `required flag(s) "policy" not set`},
		{"missing --tool", []string{"--policy", codingPolicy}, exitUsage, `required flag(s) "tool" not set`},
		{"empty --tool", []string{"--policy", codingPolicy, "--tool", " "}, exitUsage, "the tool name is empty"},
		{"args not an object", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `["ls"]`}, exitUsage, "invalid --args: arguments must be a JSON object"},
		{"args not JSON", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{command: ls}`}, exitUsage, "invalid --args: invalid character"},
		{"args duplicate key", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"ls","command":"rm -rf /"}`}, exitUsage, `invalid --args: duplicate key "command"`},
		{"args trailing data", []string{"--policy", codingPolicy, "--tool", "bash", "--args", `{} {}`}, exitUsage, "invalid --args: unexpected data after the JSON object"},
		{"unknown capability", []string{"--policy", codingPolicy, "--tool", "bash", "--capability", "filesystem"}, exitUsage, `unknown capability "filesystem"`},
		{"skill_read capability", []string{"--policy", codingPolicy, "--tool", "bash", "--capability", "skill_read"}, exitUsage, "use the tool name skill:<id>"},
		{"tool_call capability", []string{"--policy", codingPolicy, "--tool", "bash", "--capability", "tool_call"}, exitUsage, "tool_call is always checked"},
		{"skill with capabilities", []string{"--policy", rolesPolicy, "--tool", "skill:refunds", "--capability", "user_data"}, exitUsage, "it declares no capabilities"},
		{"empty skill id", []string{"--policy", rolesPolicy, "--tool", "skill:"}, exitUsage, "names no skill"},
		{"positional argument", []string{"--policy", codingPolicy, "--tool", "bash", "extra"}, exitUsage, `unknown command "extra"`},
		{"unknown flag", []string{"--policy", codingPolicy, "--tool", "bash", "--verbose"}, exitUsage, "unknown flag: --verbose"},

		{"bad policy", []string{"--policy", "testdata/bad/unknown-key.yaml", "--tool", "bash"}, exitUsage, `testdata/bad/unknown-key.yaml:3:1: unknown key "rulez"`},
		{"missing policy", []string{"--policy", "testdata/policies/nope.yaml", "--tool", "bash"}, exitUsage, "testdata/policies/nope.yaml: cannot read policy file"},
		{"unknown role", []string{"--policy", rolesPolicy, "--role", "admin", "--tool", "reader"}, exitUsage, "activeRole 'admin' is not defined in roles. Available: support, viewer"},
		{"role without roles", []string{"--policy", codingPolicy, "--role", "admin", "--tool", "reader"}, exitUsage, "the policy defines no roles"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWarden(t, append([]string{"check"}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", r.code, tt.code, r.stdout, r.stderr)
			}
			switch {
			case tt.stderr == "" && r.stderr != "":
				t.Errorf("stderr = %q, want none", r.stderr)
			case !strings.Contains(r.stderr, tt.stderr):
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tt.stderr)
			}
			if tt.code == exitUsage && r.stdout != "" {
				t.Errorf("stdout = %q, want nothing on a usage error", r.stdout)
			}
		})
	}
}

// TestCheckDoneWhen is the acceptance command of the CLI issue.
func TestCheckDoneWhen(t *testing.T) {
	r := runWarden(t, "check", "--policy", safeExample, "--tool", "bash", "--args", `{"command":"rm -rf /"}`)
	if r.code != exitDeny {
		t.Errorf("exit %d, want %d", r.code, exitDeny)
	}
	if !strings.HasPrefix(r.stdout, "deny  rm *  denied by rule: rm *\n") {
		t.Errorf("stdout = %q, want it to start with the deny line", r.stdout)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestCheckWriteFailureIsInternal: when the verdict cannot be printed, the exit code is
// 1, never the verdict's (a caller must not act on an allow it could not read).
func TestCheckWriteFailureIsInternal(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"check", "--policy", codingPolicy, "--tool", "bash", "--args", `{"command":"ls"}`}, failingWriter{}, &stderr)
	if code != exitInternal {
		t.Errorf("exit %d, want %d", code, exitInternal)
	}
	if !strings.Contains(stderr.String(), "disk full") {
		t.Errorf("stderr = %q, want the write error", stderr.String())
	}
}

// TestEvaluateCallMatchesCheck: the decision evaluateCall reports is the policy's own
// answer through warden.CheckCall.
func TestEvaluateCallMatchesCheck(t *testing.T) {
	pol, err := policy.LoadFile(rolesPolicy, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := []callSpec{
		{tool: "refund", args: warden.MustParseArgs(`{"amount":1500}`), capabilities: []warden.Capability{warden.CapUserData}},
		{tool: "bash", args: warden.MustParseArgs(`{"command":"sudo ls"}`)},
		{tool: "reader", args: warden.MustParseArgs(`{"path":"/x"}`), capabilities: []warden.Capability{warden.CapExternalNet, warden.CapUserData}},
	}
	for _, c := range calls {
		r := evaluateCall(context.Background(), pol, c)
		want := warden.CheckCall(context.Background(), pol, warden.Request{Target: c.tool, Args: c.args}, c.capabilities, nil)
		if r.Decision.Effect != want.Effect || r.Decision.RuleID != want.RuleID || r.Decision.Rationale != want.Rationale {
			t.Errorf("%s: evaluateCall = %+v, CheckCall = %+v", c.tool, r.Decision, want)
		}
		if got := r.Checks[r.Decided].Decision.RuleID; got != want.RuleID {
			t.Errorf("%s: deciding check has rule %q, want %q", c.tool, got, want.RuleID)
		}
	}
}

// locatedLine is a located error with a hint: "file:line:col: message (hint)".
// A message may span lines (a CEL error and its caret); continuation lines are indented.
var locatedLine = regexp.MustCompile(`(?s)^(.+?):(\d+):(\d+): (.+) \((.+)\)$`)

// firstError returns the first error of stderr: its first line and the indented lines
// that continue it.
func firstError(stderr string) string {
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	n := 1
	for n < len(lines) && strings.HasPrefix(lines[n], "    ") {
		n++
	}
	return strings.Join(lines[:n], "\n")
}

// TestBadPolicies: every file in testdata/bad is refused by validate and by check with
// exit 2, and the first error line names the file, a line and a column, and a hint.
func TestBadPolicies(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("%d bad policy files, want at least 15", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, args := range [][]string{
				{"validate", file},
				{"check", "--policy", file, "--tool", "bash", "--args", `{"command":"ls"}`},
			} {
				r := runWarden(t, args...)
				if r.code != exitUsage {
					t.Errorf("%s: exit %d, want %d", args[0], r.code, exitUsage)
				}
				if r.stdout != "" {
					t.Errorf("%s: stdout = %q, want nothing", args[0], r.stdout)
				}
				first := firstError(r.stderr)
				m := locatedLine.FindStringSubmatch(first)
				switch {
				case m == nil:
					t.Errorf("%s: first error line %q; want file:line:col: message (hint)", args[0], first)
				case m[1] != file:
					t.Errorf("%s: error names %q, want %q", args[0], m[1], file)
				}
			}
		})
	}
}

// TestExamplePolicies runs the shipped example test files, which must pass and hold at
// least ten cases each.
func TestExamplePolicies(t *testing.T) {
	files, err := filepath.Glob("../../examples/policies/*_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("found %d example test files, want 3", len(files))
	}
	r := runWarden(t, append([]string{"test"}, files...)...)
	if r.code != 0 {
		t.Fatalf("warden test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	okLine := regexp.MustCompile(`^ok (.+): (\d+) cases$`)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		m := okLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("unexpected line %q", l)
			continue
		}
		if n, _ := strconv.Atoi(m[2]); n < 10 {
			t.Errorf("%s has %d cases, want at least 10", m[1], n)
		}
	}
	if last := lines[len(lines)-1]; !regexp.MustCompile(`^\d+ passed, 0 failed$`).MatchString(last) {
		t.Errorf("last line %q", last)
	}

	policies, _ := filepath.Glob("../../examples/policies/*.yaml")
	var pols []string
	for _, p := range policies {
		if !strings.HasSuffix(p, "_test.yaml") {
			pols = append(pols, p)
		}
	}
	if r := runWarden(t, append([]string{"validate"}, pols...)...); r.code != 0 {
		t.Errorf("warden validate examples: exit %d\n%s", r.code, r.stderr)
	}
}

// A shadow policy file is refused as the policy a call is checked against.
func TestCheckRefusesShadowFile(t *testing.T) {
	r := runWarden(t, "check", "--policy", "testdata/validate/shadow-file.yaml", "--tool", "reader", "--args", `{"path":"a"}`)
	want := "testdata/validate/shadow-file.yaml:3:10: this file is a shadow policy (enforce: false) and cannot be loaded as the enforcing policy (load it as a shadow policy (shadow_policy in gateway.yaml) to see what it would decide, or remove `enforce: false` to enforce it)\n"
	if r.code != exitUsage || r.stdout != "" || r.stderr != want {
		t.Fatalf("exit %d, stdout %q, stderr %q\nwant stderr %q", r.code, r.stdout, r.stderr, want)
	}
}
