package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
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
		Args: func(_ *cobra.Command, files []string) error {
			if len(files) == 0 {
				return usageErrorf("name at least one test file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, files []string) error {
			return runTests(cmd.Context(), stdout, stderr, files)
		},
	}
}

// runTests runs every test file in order. A passing file prints "ok <file>: N cases",
// a failing case prints a FAIL line and its explanation, a test file that cannot be used
// prints its errors to stderr; the last line is "N passed, N failed". The error carries
// the exit code: 2 when any file could not be used, else 1 when any case failed.
func runTests(ctx context.Context, stdout, stderr io.Writer, files []string) error {
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
				return errors.Join(located(tf.path, tf.policyNode, "policy "+tf.policy+" does not load", "fix the errors below"), err)
			}
			return errors.Join(located(tf.path, tc.roleNode, fmt.Sprintf("case %q: policy %s does not load with role %q", tc.name, tf.policy, role), "use a role the policy defines, or fix the errors below"), err)
		}
		tf.policies[role] = pol
	}
	return nil
}

// located returns a *warden.ConfigError at n's position (none when n is nil).
func located(file string, n *yaml.Node, msg, hint string) *warden.ConfigError {
	return yamlstrict.Located(file, n, msg, hint)
}

// testDecoder decodes a test file from its YAML node tree, collecting every problem as
// a located *warden.ConfigError. The schema lives here; the strict YAML reading is
// yamlstrict's, which its methods wrap.
type testDecoder struct {
	file string
	errs []error
}

// strict runs f with a yamlstrict decoder for d's file that records into d.errs.
func (d *testDecoder) strict(f func(y *yamlstrict.Decoder)) {
	y := yamlstrict.Decoder{File: d.file, Errs: d.errs}
	f(&y)
	d.errs = y.Errs
}

func (d *testDecoder) fail(n *yaml.Node, hint, format string, args ...any) {
	d.errs = append(d.errs, located(d.file, n, fmt.Sprintf(format, args...), hint))
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
	d := &testDecoder{file: name}
	root := d.document(data)
	if root == nil {
		return nil, errors.Join(d.errs...)
	}
	tf := d.decodeFile(root)
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
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

// document parses exactly one YAML document without anchors or aliases.
func (d *testDecoder) document(data []byte) (root *yaml.Node) {
	d.strict(func(y *yamlstrict.Decoder) { root = y.Document(data, testDoc) })
	return root
}

// yamlErrorPosition locates a YAML syntax error (see [yamlstrict.ErrorPosition]).
func yamlErrorPosition(data []byte, err error) (line, column int) {
	return yamlstrict.ErrorPosition(data, err)
}

// entry is one key of a mapping, with its nodes.
type entry struct {
	key     string
	keyNode *yaml.Node
	value   *yaml.Node
}

// mapping returns the entries of a mapping node in order, reporting a non-mapping and
// duplicate keys.
func (d *testDecoder) mapping(n *yaml.Node, where string) []entry {
	var kvs []yamlstrict.KV
	d.strict(func(y *yamlstrict.Decoder) { kvs, _ = y.Mapping(n, where) })
	out := make([]entry, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, entry{key: kv.Key, keyNode: kv.KeyNode, value: kv.Value})
	}
	return out
}

// kindName names what a node is for messages (see [yamlstrict.KindName]).
func kindName(n *yaml.Node) string { return yamlstrict.KindName(n) }

func (d *testDecoder) str(n *yaml.Node, where string) (s string, ok bool) {
	d.strict(func(y *yamlstrict.Decoder) { s, ok = y.Str(n, where) })
	return s, ok
}

var (
	fileKeys = []string{"policy", "description", "cases"}
	caseKeys = []string{"name", "description", "tool", "args", "role", "capabilities", "expect", "rule_id"}
)

func (d *testDecoder) decodeFile(root *yaml.Node) *testFile {
	tf := &testFile{path: d.file}
	entries := d.mapping(root, "the top level")
	if root.Kind != yaml.MappingNode {
		return tf
	}
	var casesNode *yaml.Node
	for _, e := range entries {
		switch e.key {
		case "policy":
			tf.policyNode = e.value
			if s, ok := d.str(e.value, "policy"); ok {
				if strings.TrimSpace(s) == "" {
					d.fail(e.value, "name the policy file, relative to this test file", "policy is empty")
				}
				tf.policy = s
				if !filepath.IsAbs(s) {
					tf.policy = filepath.Join(filepath.Dir(d.file), s)
				}
			}
		case "description":
			d.str(e.value, "description")
		case "cases":
			casesNode = e.value
		default:
			d.fail(e.keyNode, "allowed keys: "+strings.Join(fileKeys, ", "), "unknown key %q", e.key)
		}
	}
	if tf.policyNode == nil {
		d.fail(root, "add `policy: <file>`, relative to this test file", "missing policy")
	}
	switch {
	case casesNode == nil:
		d.fail(root, "add `cases:` with at least one case", "missing cases")
	case casesNode.Kind != yaml.SequenceNode:
		d.fail(casesNode, "write cases as a list of `- name: ...` entries", "cases must be a list, got %s", kindName(casesNode))
	case len(casesNode.Content) == 0:
		d.fail(casesNode, "add at least one case; a test file that tests nothing passes for the wrong reason", "cases is empty")
	default:
		names := map[string]*yaml.Node{}
		for i, item := range casesNode.Content {
			tc, nameNode, ok := d.decodeCase(item, i)
			if !ok {
				continue
			}
			if prev, dup := names[tc.name]; dup {
				d.fail(nameNode, fmt.Sprintf("give every case its own name; the first is at line %d", prev.Line), "duplicate case name %q", tc.name)
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
	before := len(d.errs)
	entries := d.mapping(item, where)
	if item.Kind != yaml.MappingNode {
		return testCase{}, nil, false
	}
	var tc testCase
	var nameNode, toolNode, expectNode, capsNode *yaml.Node
	var capNames []string
	for _, e := range entries {
		at := where + "." + e.key
		switch e.key {
		case "name":
			nameNode = e.value
			if s, ok := d.str(e.value, at); ok && strings.TrimSpace(s) == "" {
				d.fail(e.value, "give every case a name; failures are reported by it", "%s is empty", at)
			} else {
				tc.name = s
			}
		case "description":
			d.str(e.value, at)
		case "tool":
			tc.call.tool, _ = d.str(e.value, at)
			toolNode = e.value
		case "args":
			if e.value.Kind != yaml.MappingNode {
				d.fail(e.value, "write the arguments as a mapping, such as {command: \"ls\"}", "%s must be a mapping, got %s", at, kindName(e.value))
				continue
			}
			tc.call.args = d.args(e.value, at)
		case "role":
			tc.call.role, _ = d.str(e.value, at)
			tc.roleNode = e.value
			if tc.call.role == "" {
				d.fail(e.value, "name a role the policy defines, or leave role out to use its active_role", "%s is empty", at)
			}
		case "capabilities":
			capsNode = e.value
			if e.value.Kind != yaml.SequenceNode {
				d.fail(e.value, "write a list such as [user_data]", "%s must be a list, got %s", at, kindName(e.value))
				continue
			}
			for j, c := range e.value.Content {
				s, ok := d.str(c, fmt.Sprintf("%s[%d]", at, j))
				if !ok {
					continue
				}
				if msg, hint := capabilityProblem(s); msg != "" {
					d.fail(c, hint, "%s[%d]: %s", at, j, msg)
					continue
				}
				capNames = append(capNames, s)
			}
		case "expect":
			expectNode = e.value
			s, ok := d.str(e.value, at)
			if !ok {
				continue
			}
			eff, err := warden.ParseEffect(s)
			if err != nil {
				d.fail(e.value, "use allow, deny, ask, escalate or halt", "%s: unknown effect %q", at, s)
				continue
			}
			tc.expect = eff
		case "rule_id":
			tc.ruleID, _ = d.str(e.value, at)
			tc.hasRuleID = true
		default:
			d.fail(e.keyNode, "a case holds "+strings.Join(caseKeys, ", "), "unknown key %q in %s", e.key, where)
		}
	}
	if nameNode == nil {
		d.fail(item, "give every case a name; failures are reported by it", "%s: missing name", where)
	}
	if toolNode == nil {
		d.fail(item, "add `tool: <name>`, or `tool: skill:<id>` for a skill activation", "%s: missing tool", where)
	}
	if expectNode == nil {
		d.fail(item, "add `expect:` with allow, deny, ask, escalate or halt", "%s: missing expect", where)
	}
	tc.call.capabilities, _ = parseCapabilities(capNames)
	if toolNode != nil && toolNode.Kind == yaml.ScalarNode && toolNode.ShortTag() == "!!str" {
		if err := tc.call.validate(); err != nil {
			n := toolNode
			if capsNode != nil && len(tc.call.capabilities) > 0 {
				n = capsNode
			}
			d.fail(n, "a skill activation is written `tool: skill:<id>` with no capabilities", "%s: %v", where, err)
		}
	}
	return tc, nameNode, len(d.errs) == before
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// args converts a YAML mapping to warden.Args, keeping the key order: strings stay
// strings, numbers stay numbers (as written when the text is a JSON number), booleans
// and null are themselves, nested mappings and lists are objects and arrays.
func (d *testDecoder) args(n *yaml.Node, where string) warden.Args {
	var a warden.Args
	for _, e := range d.mapping(n, where) {
		a = a.With(e.key, d.value(e.value, where+"."+e.key))
	}
	return a
}

func (d *testDecoder) value(n *yaml.Node, where string) any {
	switch n.Kind {
	case yaml.MappingNode:
		return d.args(n, where)
	case yaml.SequenceNode:
		out := []any{}
		for i, c := range n.Content {
			out = append(out, d.value(c, fmt.Sprintf("%s[%d]", where, i)))
		}
		return out
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!timestamp": // a date is text to a tool
			return n.Value
		case "!!null":
			return nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				d.fail(n, "write true or false", "%s: %v", where, err)
			}
			return b
		case "!!int", "!!float":
			if jsonNumber.MatchString(n.Value) {
				return json.Number(n.Value)
			}
			var f any
			if err := n.Decode(&f); err == nil {
				switch v := f.(type) {
				case int:
					return json.Number(strconv.Itoa(v))
				case int64:
					return json.Number(strconv.FormatInt(v, 10))
				case uint64:
					return json.Number(strconv.FormatUint(v, 10))
				case float64:
					if !math.IsInf(v, 0) && !math.IsNaN(v) {
						return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
					}
				}
			}
			d.fail(n, "write a decimal number, or quote it to make it a string", "%s: %q is not a JSON number", where, n.Value)
			return nil
		}
	}
	d.fail(n, "use a string, number, boolean, null, mapping or list", "%s: unsupported value %s", where, n.ShortTag())
	return nil
}
