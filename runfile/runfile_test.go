package runfile

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
)

// The shipped example decodes, with its paths relative to its own directory.
func TestLoadExample(t *testing.T) {
	file := filepath.Join("..", "examples", "agent", "agent.yaml")
	f, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != file || f.Provider.Name != "anthropic" || f.Provider.Model == "" || f.Workspace != "" || f.CheckpointDir != "." {
		t.Errorf("file %+v", f)
	}
	if want := filepath.Join("..", "examples", "agent", "policy.yaml"); f.Policy != want {
		t.Errorf("policy %q, want %q", f.Policy, want)
	}
}

func TestParse(t *testing.T) {
	f, err := Parse(filepath.Join("conf", "agent.yaml"), []byte(`provider:
  name: scripted
  replies:
    - calls: [{name: reader, id: c1, args: {path: notes.txt, n: 2, deep: {list: [1, true, null]}}}]
    - text: done
policy: p.yaml
role: support
directives: {pack: /abs/pack.yaml, role: helper}
max_iterations: 3
workspace: ws
checkpoint_dir: /tmp/ck
store: sqlite:///tmp/x.db
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Policy != filepath.Join("conf", "p.yaml") || f.Workspace != filepath.Join("conf", "ws") || f.CheckpointDir != "/tmp/ck" ||
		f.DirectivesPack != "/abs/pack.yaml" || f.DirectivesRole != "helper" || f.Role != "support" || f.MaxIterations != 3 ||
		f.Store != "sqlite:///tmp/x.db" || f.MCP != nil {
		t.Errorf("file %+v", f)
	}
	r := f.Provider.Replies
	if len(r) != 2 || r[0].StopReason != "tool_use" || r[1].StopReason != "end_turn" || r[1].Text != "done" {
		t.Fatalf("replies %+v", r)
	}
	if c := r[0].ToolCalls[0]; c.Name != "reader" || c.ID != "c1" || string(c.Args) != `{"path":"notes.txt","n":2,"deep":{"list":[1,true,null]}}` {
		t.Errorf("call %+v (args %s)", c, c.Args)
	}
	if e := f.ErrorAt(SectionWorkspace, "m", "h"); e.Line != 10 || e.Column != 12 || e.File != f.Path {
		t.Errorf("ErrorAt(workspace) = %+v", e)
	}
	if e := f.ErrorAt(SectionDirectives, "m", "h"); e.Line != 8 { // the role, when given
		t.Errorf("ErrorAt(directives) = %+v", e)
	}
	if e := f.ErrorAt(SectionMCP, "m", "h"); e.Line != 0 || e.Column != 0 {
		t.Errorf("ErrorAt(mcp) without an mcp section = %+v", e)
	}
}

// Every problem is reported, each located: unknown keys of a mapping first, then its
// values in order.
func TestParseErrors(t *testing.T) {
	_, err := Parse("a.yaml", []byte("provider: {name: scripted, modle: x}\nrole: \"\"\nmax_iterations: 0\nextra: 1\n"))
	var ces []*warden.ConfigError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *warden.ConfigError
		if !errors.As(e, &ce) {
			t.Fatalf("%T %v is not located", e, e)
		}
		ces = append(ces, ce)
	}
	want := []string{
		`a.yaml:4:1: unknown key "extra" in the agent configuration (known keys: description, provider, policy, role, directives, instructions, max_iterations, workspace, checkpoint_dir, store, mcp)`,
		`a.yaml:1:28: unknown key "modle" in provider (known keys: name, model, base_url, max_tokens, replies)`,
		"a.yaml:1:11: the scripted provider needs replies (list the model's turns under replies, e.g. `- text: Done.`)",
		"a.yaml:2:7: role is empty (give it a value or leave the key out)",
		"a.yaml:3:17: max_iterations: 0 is out of range (write a whole number of at least 1)",
		"a.yaml:1:1: policy is required (add `policy: <file>`: warden run never runs tools without a policy)",
	}
	if len(ces) != len(want) {
		t.Fatalf("%d errors:\n%v", len(ces), err)
	}
	for i, ce := range ces {
		if ce.Error() != want[i] {
			t.Errorf("error %d:\n got %s\nwant %s", i, ce, want[i])
		}
	}
	for in, msg := range map[string]string{
		"":                    "a.yaml:1:1: agent configuration is empty",
		"a: &x 1\nb: *x\n":    "YAML anchors and aliases are not allowed in the agent configuration",
		"a: 1\n---\nb: 2\n":   "a.yaml:3:1: more than one YAML document",
		"provider: [1\n":      "invalid YAML",
		"provider: {name: x}": `unknown provider "x"`,
	} {
		if _, err := Parse("a.yaml", []byte(in)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, msg)
		}
	}
}

// The scripted provider answers by the number of model turns so far, so a resumed run
// goes on where it stopped, and says when it has no reply left.
func TestScriptedProvider(t *testing.T) {
	p := Provider{Name: "scripted", Replies: []agent.ModelResponse{{Text: "one"}, {Text: "two"}}}
	prov, err := p.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var msgs []agent.Message
	for _, want := range []string{"one", "two"} {
		res, err := prov.Complete(ctx, agent.ModelRequest{Messages: msgs})
		if err != nil || res.Text != want {
			t.Fatalf("turn %d: %q, %v; want %q", len(msgs), res.Text, err, want)
		}
		msgs = append(msgs, agent.Message{Role: agent.RoleAssistant})
	}
	if _, err := prov.Complete(ctx, agent.ModelRequest{Messages: msgs}); err == nil || !strings.Contains(err.Error(), "(2 scripted in the agent configuration, turn 3)") {
		t.Errorf("after the last reply: %v", err)
	}
	if _, err := (Provider{Name: "other"}).New(); err == nil || err.Error() != `unknown provider "other"` {
		t.Errorf("unknown provider: %v", err)
	}
}
