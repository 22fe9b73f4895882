package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/yamlargs"
	"github.com/wardenhq/warden/internal/yamlstrict"
	"github.com/wardenhq/warden/policy"
)

func newTestCommand(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "test FILE...",
		Short: "Run policy test files",
		Long: `Test runs policy test files: YAML files that name a policy and list calls with the
verdict each must get. Each case is decided exactly like 'warden check' decides it.

  policy: safe.yaml            # relative to the test file's directory
  cases:
    - name: rm is denied
      tool: bash
      args: {command: "rm -rf /"}
      expect: deny             # allow, deny, ask (or escalate), halt
      rule_id: "rm *"          # optional: the rule that must decide
    - name: viewers may not read customer data
      tool: read_ticket
      role: viewer             # optional: the active role
      capabilities: [user_data]
      expect: deny
    - name: payroll skill is hidden from support
      tool: skill:payroll      # a skill activation, checked as skill_read
      role: support
      expect: deny

Test files are decoded strictly: unknown keys, duplicate keys, anchors and aliases
are errors. The exit code is 0 when every case passes, 1 when one fails, and 2 when a
test file or the policy it names cannot be used.`,
		RunE: func(cmd *cobra.Command, files []string) error {
			p, err := newTestProgram(files, stdout, stderr)
			return execute(cmd.Context(), p, err)
		},
	}
}

// testProgram is one `warden test`: policy test files run in order.
type testProgram struct {
	noResources
	files          []string
	stdout, stderr io.Writer
}

// newTestProgram checks that there are files to run.
func newTestProgram(files []string, stdout, stderr io.Writer) (*testProgram, error) {
	if len(files) == 0 {
		return nil, usageErrorf("name at least one test file")
	}
	return &testProgram{files: files, stdout: stdout, stderr: stderr}, nil
}

// Run runs every test file in order. A passing file prints "ok <file>: N cases",
// a failing case prints a FAIL line and its explanation, a test file that cannot be used
// prints its errors to stderr; the last line is "N passed, N failed". The error carries
// the exit code: 2 when any file could not be used, else 1 when any case failed.
func (p *testProgram) Run(ctx context.Context) error {
	files, stdout, stderr := p.files, p.stdout, p.stderr
	var passed, failed int
	invalid := false
	for _, file := range files {
		tf, err := loadTestFile(file)
		if err == nil {
			err = tf.loadPolicies()
		}
		if err != nil {
			invalid = true
			writeErrors(stderr, err)
			continue
		}
		var out bytes.Buffer // one file's report, written at once
		for _, tc := range tf.cases {
			if err := ctx.Err(); err != nil {
				return internalError(fmt.Errorf("interrupted: %w", err))
			}
			r := evaluateCall(ctx, tf.policies[tc.call.role], tc.call)
			if tc.passes(r) {
				passed++
				continue
			}
			failed++
			fmt.Fprintf(&out, "FAIL %s: %s: expected %s, got %s rule %s\n", file, tc.name, tc.expectation(), r.decision.Effect, orDash(r.decision.RuleID))
			_ = writePlain(&out, "    ", r)   // a bytes.Buffer does not fail
			_ = writeExplain(&out, "    ", r) // a bytes.Buffer does not fail
		}
		if out.Len() == 0 {
			fmt.Fprintf(&out, "ok %s: %d cases\n", file, len(tf.cases))
		}
		if _, err := stdout.Write(out.Bytes()); err != nil {
			return internalError(err)
		}
	}
	if _, err := fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed); err != nil {
		return internalError(err)
	}
	switch {
	case invalid:
		return silentExit(exitUsage)
	case failed > 0:
		return silentExit(exitInternal)
	}
	return nil
}

// writeErrors prints err, one line per joined error; a multi-line message (a CEL error
// with its caret) has its continuation lines indented.
func writeErrors(w io.Writer, err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if _, ok := e.(interface{ Unwrap() []error }); ok {
			writeErrors(w, e)
			continue
		}
		msg := strings.TrimRight(e.Error(), "\n")
		fmt.Fprintln(w, strings.ReplaceAll(msg, "\n", "\n    "))
	}
}

// testFile is a decoded policy test file.
type testFile struct {
	path       string
	policy     string     // the policy path, resolved against the test file's directory
	policyNode *yaml.Node // for errors
	cases      []testCase
	policies   map[string]*policy.Policy // by role ("" = the policy's active_role)
}

// testCase is one case of a test file.
type testCase struct {
	name      string
	call      callSpec
	expect    warden.Effect
	ruleID    string
	hasRuleID bool
	roleNode  *yaml.Node // for errors about the role
}

func (tc testCase) passes(r report) bool {
	return r.decision.Effect == tc.expect && (!tc.hasRuleID || r.decision.RuleID == tc.ruleID)
}

func (tc testCase) expectation() string {
	if tc.hasRuleID {
		return tc.expect.String() + " rule " + orDash(tc.ruleID)
	}
	return tc.expect.String()
}

// loadPolicies loads the policy once per role the cases use, the way `warden check
// --role` loads it. The first failure is returned: a located error in the test file,
// followed by the policy's own located errors.
func (tf *testFile) loadPolicies() error {
	tf.policies = map[string]*policy.Policy{}
	for _, tc := range tf.cases {
		role := tc.call.role
		if _, ok := tf.policies[role]; ok {
			continue
		}
		pol, err := policy.LoadFile(tf.policy, &policy.LoadOptions{Role: role})
		if err != nil {
			if role == "" {
				return errors.Join(yamlstrict.Located(tf.path, tf.policyNode, "policy "+tf.policy+" does not load", "fix the errors below"), err)
			}
			return errors.Join(yamlstrict.Located(tf.path, tc.roleNode, fmt.Sprintf("case %q: policy %s does not load with role %q", tc.name, tf.policy, role), "use a role the policy defines, or fix the errors below"), err)
		}
		tf.policies[role] = pol
	}
	return nil
}

// testDecoder decodes a test file from its YAML node tree, collecting every problem as
// a located *warden.ConfigError: the schema is here, the strict reading yamlstrict's.
type testDecoder struct {
	yamlstrict.Decoder
}

// loadTestFile reads and strictly decodes a test file. Errors are located
// *warden.ConfigError values, joined with errors.Join.
func loadTestFile(path string) (*testFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		hint := "check the path and its permissions"
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			hint = "pass test files, not directories; a shell glob such as dir/*_test.yaml names them"
		}
		return nil, &warden.ConfigError{File: path, Msg: "cannot read test file: " + errText(err), Hint: hint}
	}
	return parseTestFile(path, data)
}

// parseTestFile strictly decodes a test file's contents; name is used in errors and to
// resolve the policy path.
func parseTestFile(name string, data []byte) (*testFile, error) {
	d := &testDecoder{Decoder: yamlstrict.Decoder{File: name}}
	root := d.Document(data, testDoc)
	if root == nil {
		return nil, d.Err()
	}
	tf := d.decodeFile(root)
	if len(d.Errs) > 0 {
		return nil, d.Err()
	}
	return tf, nil
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// testDoc words the document-level errors for test files.
var testDoc = yamlstrict.Doc{
	Name:      "test file",
	Plural:    "test files",
	EmptyHint: "write `policy: <file>` and a list of `cases`",
	MultiHint: "a test file holds one document; remove the '---' and what follows, or split it into files",
	TabHint:   "indent with spaces; YAML does not allow tabs there",
}

var (
	fileKeys = []string{"policy", "description", "cases"}
	caseKeys = []string{"name", "description", "tool", "args", "role", "capabilities", "expect", "rule_id"}
)

func (d *testDecoder) decodeFile(root *yaml.Node) *testFile {
	tf := &testFile{path: d.File}
	entries, _ := d.Mapping(root, "the top level")
	if root.Kind != yaml.MappingNode {
		return tf
	}
	var casesNode *yaml.Node
	for _, e := range entries {
		switch e.Key {
		case "policy":
			tf.policyNode = e.Value
			if s, ok := d.Str(e.Value, "policy"); ok {
				if strings.TrimSpace(s) == "" {
					d.Fail(e.Value, "name the policy file, relative to this test file", "policy is empty")
				}
				tf.policy = s
				if !filepath.IsAbs(s) {
					tf.policy = filepath.Join(filepath.Dir(d.File), s)
				}
			}
		case "description":
			d.Str(e.Value, "description")
		case "cases":
			casesNode = e.Value
		default:
			d.Fail(e.KeyNode, "allowed keys: "+strings.Join(fileKeys, ", "), "unknown key %q", e.Key)
		}
	}
	if tf.policyNode == nil {
		d.Fail(root, "add `policy: <file>`, relative to this test file", "missing policy")
	}
	switch {
	case casesNode == nil:
		d.Fail(root, "add `cases:` with at least one case", "missing cases")
	case casesNode.Kind != yaml.SequenceNode:
		d.Fail(casesNode, "write cases as a list of `- name: ...` entries", "cases must be a list, got %s", yamlstrict.KindName(casesNode))
	case len(casesNode.Content) == 0:
		d.Fail(casesNode, "add at least one case; a test file that tests nothing passes for the wrong reason", "cases is empty")
	default:
		names := map[string]*yaml.Node{}
		for i, item := range casesNode.Content {
			tc, nameNode, ok := d.decodeCase(item, i)
			if !ok {
				continue
			}
			if prev, dup := names[tc.name]; dup {
				d.Fail(nameNode, fmt.Sprintf("give every case its own name; the first is at line %d", prev.Line), "duplicate case name %q", tc.name)
				continue
			}
			names[tc.name] = nameNode
			tf.cases = append(tf.cases, tc)
		}
	}
	return tf
}

func (d *testDecoder) decodeCase(item *yaml.Node, i int) (testCase, *yaml.Node, bool) {
	where := fmt.Sprintf("cases[%d]", i)
	before := len(d.Errs)
	entries, _ := d.Mapping(item, where)
	if item.Kind != yaml.MappingNode {
		return testCase{}, nil, false
	}
	var tc testCase
	var nameNode, toolNode, expectNode, capsNode *yaml.Node
	var capNames []string
	for _, e := range entries {
		at := where + "." + e.Key
		switch e.Key {
		case "name":
			nameNode = e.Value
			if s, ok := d.Str(e.Value, at); ok && strings.TrimSpace(s) == "" {
				d.Fail(e.Value, "give every case a name; failures are reported by it", "%s is empty", at)
			} else {
				tc.name = s
			}
		case "description":
			d.Str(e.Value, at)
		case "tool":
			tc.call.tool, _ = d.Str(e.Value, at)
			toolNode = e.Value
		case "args":
			if e.Value.Kind != yaml.MappingNode {
				d.Fail(e.Value, "write the arguments as a mapping, such as {command: \"ls\"}", "%s must be a mapping, got %s", at, yamlstrict.KindName(e.Value))
				continue
			}
			tc.call.args = yamlargs.Args(&d.Decoder, e.Value, at)
		case "role":
			tc.call.role, _ = d.Str(e.Value, at)
			tc.roleNode = e.Value
			if tc.call.role == "" {
				d.Fail(e.Value, "name a role the policy defines, or leave role out to use its active_role", "%s is empty", at)
			}
		case "capabilities":
			capsNode = e.Value
			if e.Value.Kind != yaml.SequenceNode {
				d.Fail(e.Value, "write a list such as [user_data]", "%s must be a list, got %s", at, yamlstrict.KindName(e.Value))
				continue
			}
			for j, c := range e.Value.Content {
				s, ok := d.Str(c, fmt.Sprintf("%s[%d]", at, j))
				if !ok {
					continue
				}
				if msg, hint := capabilityProblem(s); msg != "" {
					d.Fail(c, hint, "%s[%d]: %s", at, j, msg)
					continue
				}
				capNames = append(capNames, s)
			}
		case "expect":
			expectNode = e.Value
			s, ok := d.Str(e.Value, at)
			if !ok {
				continue
			}
			eff, err := warden.ParseEffect(s)
			if err != nil {
				d.Fail(e.Value, "use allow, deny, ask, escalate or halt", "%s: unknown effect %q", at, s)
				continue
			}
			tc.expect = eff
		case "rule_id":
			tc.ruleID, _ = d.Str(e.Value, at)
			tc.hasRuleID = true
		default:
			d.Fail(e.KeyNode, "a case holds "+strings.Join(caseKeys, ", "), "unknown key %q in %s", e.Key, where)
		}
	}
	if nameNode == nil {
		d.Fail(item, "give every case a name; failures are reported by it", "%s: missing name", where)
	}
	if toolNode == nil {
		d.Fail(item, "add `tool: <name>`, or `tool: skill:<id>` for a skill activation", "%s: missing tool", where)
	}
	if expectNode == nil {
		d.Fail(item, "add `expect:` with allow, deny, ask, escalate or halt", "%s: missing expect", where)
	}
	tc.call.capabilities, _ = parseCapabilities(capNames)
	if toolNode != nil && toolNode.Kind == yaml.ScalarNode && toolNode.ShortTag() == "!!str" {
		if err := tc.call.validate(); err != nil {
			n := toolNode
			if capsNode != nil && len(tc.call.capabilities) > 0 {
				n = capsNode
			}
			d.Fail(n, "a skill activation is written `tool: skill:<id>` with no capabilities", "%s: %v", where, err)
		}
	}
	return tc, nameNode, len(d.Errs) == before
}
