package policytest

// This file is the test-file format: its strict decoding and the policies it names.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fileerr"
	"github.com/wardenhq/warden/internal/yamlargs"
	"github.com/wardenhq/warden/internal/yamlstrict"
	"github.com/wardenhq/warden/policy"
)

// File is a decoded policy test file: the policy it names and its cases, in file order,
// each with a distinct name.
type File struct {
	// Path is the test file's name as given to Load or Parse.
	Path string
	// Policy is the policy file, resolved against the test file's directory.
	Policy string
	Cases  []Case

	policyNode *yaml.Node                // for errors
	policies   map[string]*policy.Policy // by role ("" = the policy's active_role)
}

// Case is one case of a test file: a call and the verdict it must get.
type Case struct {
	Name string
	Call Call
	// Expect is the effect the call must get.
	Expect warden.Effect
	// RuleID is the rule that must decide, when HasRuleID is set (it may be "").
	RuleID    string
	HasRuleID bool

	roleNode *yaml.Node // for errors about the role
}

// loadPolicies loads the policy once per role the cases use, the way `warden check
// --role` loads it. The first failure is returned: a located error in the test file,
// followed by the policy's own located errors.
func (tf *File) loadPolicies() error {
	tf.policies = map[string]*policy.Policy{}
	for _, tc := range tf.Cases {
		role := tc.Call.Role
		if _, ok := tf.policies[role]; ok {
			continue
		}
		pol, err := policy.LoadFile(tf.Policy, &policy.LoadOptions{Role: role})
		if err != nil {
			if role == "" {
				return errors.Join(yamlstrict.Located(tf.Path, tf.policyNode, "policy "+tf.Policy+" does not load", "fix the errors below"), err)
			}
			return errors.Join(yamlstrict.Located(tf.Path, tc.roleNode, fmt.Sprintf("case %q: policy %s does not load with role %q", tc.Name, tf.Policy, role), "use a role the policy defines, or fix the errors below"), err)
		}
		tf.policies[role] = pol
	}
	return nil
}

// decoder decodes a test file from its YAML node tree, collecting every problem as
// a located *warden.ConfigError: the schema is here, the strict reading yamlstrict's.
type decoder struct {
	yamlstrict.Decoder
}

// Load reads and strictly decodes a test file. Errors are located
// *warden.ConfigError values, joined with errors.Join.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		hint := "check the path and its permissions"
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			hint = "pass test files, not directories; a shell glob such as dir/*_test.yaml names them"
		}
		return nil, &warden.ConfigError{File: path, Msg: "cannot read test file: " + fileerr.Text(err), Hint: hint}
	}
	return Parse(path, data)
}

// Parse strictly decodes a test file's contents; name is used in errors and to
// resolve the policy path.
func Parse(name string, data []byte) (*File, error) {
	d := &decoder{Decoder: yamlstrict.Decoder{File: name}}
	root := d.Document(data, fileDoc)
	if root == nil {
		return nil, d.Err()
	}
	tf := d.decodeFile(root)
	if len(d.Errs) > 0 {
		return nil, d.Err()
	}
	return tf, nil
}

// fileDoc words the document-level errors for test files.
var fileDoc = yamlstrict.Doc{
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

func (d *decoder) decodeFile(root *yaml.Node) *File {
	tf := &File{Path: d.File}
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
				tf.Policy = s
				if !filepath.IsAbs(s) {
					tf.Policy = filepath.Join(filepath.Dir(d.File), s)
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
			if prev, dup := names[tc.Name]; dup {
				d.Fail(nameNode, fmt.Sprintf("give every case its own name; the first is at line %d", prev.Line), "duplicate case name %q", tc.Name)
				continue
			}
			names[tc.Name] = nameNode
			tf.Cases = append(tf.Cases, tc)
		}
	}
	return tf
}

func (d *decoder) decodeCase(item *yaml.Node, i int) (Case, *yaml.Node, bool) {
	where := fmt.Sprintf("cases[%d]", i)
	before := len(d.Errs)
	entries, _ := d.Mapping(item, where)
	if item.Kind != yaml.MappingNode {
		return Case{}, nil, false
	}
	var tc Case
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
				tc.Name = s
			}
		case "description":
			d.Str(e.Value, at)
		case "tool":
			tc.Call.Tool, _ = d.Str(e.Value, at)
			toolNode = e.Value
		case "args":
			if e.Value.Kind != yaml.MappingNode {
				d.Fail(e.Value, "write the arguments as a mapping, such as {command: \"ls\"}", "%s must be a mapping, got %s", at, yamlstrict.KindName(e.Value))
				continue
			}
			tc.Call.Args = yamlargs.Args(&d.Decoder, e.Value, at)
		case "role":
			tc.Call.Role, _ = d.Str(e.Value, at)
			tc.roleNode = e.Value
			if tc.Call.Role == "" {
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
				if msg, hint := CapabilityProblem(s); msg != "" {
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
			tc.Expect = eff
		case "rule_id":
			tc.RuleID, _ = d.Str(e.Value, at)
			tc.HasRuleID = true
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
	tc.Call.Capabilities, _ = ParseCapabilities(capNames)
	if toolNode != nil && toolNode.Kind == yaml.ScalarNode && toolNode.ShortTag() == "!!str" {
		if err := tc.Call.Validate(); err != nil {
			n := toolNode
			if capsNode != nil && len(tc.Call.Capabilities) > 0 {
				n = capsNode
			}
			d.Fail(n, "a skill activation is written `tool: skill:<id>` with no capabilities", "%s: %v", where, err)
		}
	}
	return tc, nameNode, len(d.Errs) == before
}
