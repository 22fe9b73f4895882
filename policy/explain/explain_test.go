package explain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/policy/explain"
)

func load(t *testing.T) *policy.Policy {
	t.Helper()
	pol, err := policy.LoadFile("../../examples/policies/safe.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func args(t *testing.T, s string) warden.Args {
	t.Helper()
	a, err := warden.ParseArgs(json.RawMessage(s))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Evaluate answers what the pipeline's checker pass answers (warden.CheckCall), names
// the check that decided, and renders it as warden check prints it.
func TestEvaluateAgreesWithCheckCall(t *testing.T) {
	pol := load(t)
	ctx := context.Background()
	for _, tt := range []struct {
		tool, args string
		effect     warden.Effect
		rule       string
	}{
		{"bash", `{"command":"rm -rf /"}`, warden.Deny, "rm *"},
		{"bash", `{"command":"ls; rm -rf /"}`, warden.Deny, ""},
		{"reader", `{"path":"README.md"}`, warden.Allow, ""},
	} {
		a := args(t, tt.args)
		r := explain.Evaluate(ctx, pol, explain.Call{Tool: tt.tool, Args: a})
		want := warden.CheckCall(ctx, pol, warden.Request{Target: tt.tool, Args: a, Actor: pol.ActiveRole()}, nil, nil)
		if r.Decision.Effect != want.Effect || r.Decision.RuleID != want.RuleID || r.Decision.Rationale != want.Rationale {
			t.Errorf("%s %s: Evaluate %+v, CheckCall %+v", tt.tool, tt.args, r.Decision, want)
		}
		if r.Decision.Effect != tt.effect || (tt.rule != "" && r.Decision.RuleID != tt.rule) {
			t.Errorf("%s %s: decision %s %q, want %s %q", tt.tool, tt.args, r.Decision.Effect, r.Decision.RuleID, tt.effect, tt.rule)
		}
		if r.Decided < 0 || r.Decided >= len(r.Checks) || r.Checks[r.Decided].Decision.RuleID != r.Decision.RuleID {
			t.Errorf("%s %s: Decided %d of %d checks does not hold the answer", tt.tool, tt.args, r.Decided, len(r.Checks))
		}
		if r.Revision != pol.Revision() || r.Tool != tt.tool {
			t.Errorf("report names tool %q revision %q", r.Tool, r.Revision)
		}
	}
}

func TestRender(t *testing.T) {
	pol := load(t)
	r := explain.Evaluate(context.Background(), pol, explain.Call{Tool: "bash", Args: args(t, `{"command":"rm -rf /"}`)})

	var plain bytes.Buffer
	if err := explain.WritePlain(&plain, "  ", r); err != nil {
		t.Fatal(err)
	}
	want := "  deny  rm *  denied by rule: rm *\n" +
		"  model reads: [permission denied: denied by rule: rm *]\n" +
		"  revision: " + pol.Revision() + "\n"
	if plain.String() != want {
		t.Errorf("WritePlain:\n%s\nwant:\n%s", plain.String(), want)
	}

	var ex bytes.Buffer
	if err := explain.WriteExplain(&ex, "", r); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`decided by: rules layer, rule "rm *", in the tool_call check`,
		"tool_call check: deny",
		`    match string: "rm -rf /"`,
	} {
		if !strings.Contains(ex.String(), line+"\n") {
			t.Errorf("WriteExplain lacks %q:\n%s", line, ex.String())
		}
	}

	var js bytes.Buffer
	if err := explain.WriteJSON(&js, r, true); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Effect  string `json:"effect"`
		Explain *struct {
			Check   string `json:"check"`
			Decider string `json:"decider"`
		} `json:"explain"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || !strings.HasSuffix(js.String(), "}\n") || strings.Count(js.String(), "\n") != 1 {
		t.Fatalf("WriteJSON: %q is not one JSON line (%v)", js.String(), err)
	}
	if got.Effect != "deny" || got.Explain == nil || got.Explain.Check != "tool_call" || got.Explain.Decider != "rules" {
		t.Errorf("WriteJSON: %s", js.String())
	}
}
