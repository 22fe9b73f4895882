package warden_test

// Decisions and what the model reads (REFERENCE 2, 5): effects and their precedence,
// model texts, faults, and CheckCall, the one walk of a checker over a call.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/spectext"
)

func TestEffect(t *testing.T) {
	if (warden.Decision{}).Effect != warden.Deny || (warden.Decision{}).Allowed() {
		t.Error("the zero Decision must be a denial")
	}
	names := map[warden.Effect]string{warden.Deny: "deny", warden.Allow: "allow", warden.Ask: "ask", warden.Halt: "halt", warden.Effect(9): "invalid(9)"}
	for e, want := range names {
		if e.String() != want {
			t.Errorf("%d.String() = %q, want %q", e, e.String(), want)
		}
	}
	// Precedence: halt > deny > ask > allow; an invalid effect ranks like deny.
	order := []warden.Effect{warden.Allow, warden.Ask, warden.Deny, warden.Halt}
	for i, hi := range order {
		for j, lo := range order {
			if got := hi.Outranks(lo); got != (i > j) {
				t.Errorf("%s.Outranks(%s) = %v", hi, lo, got)
			}
		}
	}
	bad := warden.Effect(9)
	if bad.Valid() || !bad.Outranks(warden.Ask) || bad.Outranks(warden.Deny) || !warden.Halt.Outranks(bad) {
		t.Error("an invalid effect must rank like deny")
	}
	for s, want := range map[string]warden.Effect{"allow": warden.Allow, "deny": warden.Deny, "ask": warden.Ask, "escalate": warden.Ask, "halt": warden.Halt} {
		if got, err := warden.ParseEffect(s); err != nil || got != want {
			t.Errorf("ParseEffect(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Allow", "permit", "yes"} {
		if got, err := warden.ParseEffect(s); err == nil || got != warden.Deny {
			t.Errorf("ParseEffect(%q) = %v, %v; want deny and an error", s, got, err)
		}
	}
	b, err := json.Marshal(warden.Decision{Effect: warden.Ask, RuleID: "r"})
	if err != nil || !strings.Contains(string(b), `"effect":"ask"`) {
		t.Errorf("Decision JSON %s %v", b, err)
	}
	var back warden.Decision
	if err := json.Unmarshal(b, &back); err != nil || back.Effect != warden.Ask {
		t.Errorf("Decision JSON round trip: %+v %v", back, err)
	}
	if _, err := json.Marshal(warden.Decision{Effect: warden.Effect(7)}); err == nil {
		t.Error("marshaling an invalid effect succeeded")
	}
	if err := json.Unmarshal([]byte(`{"effect":"maybe"}`), &back); err == nil {
		t.Error("unmarshaling an unknown effect succeeded")
	}
}

func TestDecision_ModelText(t *testing.T) {
	tests := []struct {
		name string
		d    warden.Decision
		tool string
		want string
	}{
		{"deny rationale", warden.Decision{Effect: warden.Deny, Rationale: "r"}, "t", "[permission denied: r]"},
		{"deny nothing", warden.Decision{Effect: warden.Deny, Reason: "security:x"}, "t", "[permission denied: policy]"},
		{"deny tell", warden.Decision{Effect: warden.Deny, Rationale: "r", TellLLM: "tell"}, "t", "tell"},
		{"halt", warden.Decision{Effect: warden.Halt, Reason: "security:x", Rationale: "r"}, "t", "Tool 't' is not available in this context."},
		{"halt skill", warden.Decision{Effect: warden.Halt}, "skill:payroll", "Skill 'payroll' is not available in this context."},
		{"halt tell", warden.Decision{Effect: warden.Halt, TellLLM: "stop"}, "t", "stop"},
		{"allow", warden.Decision{Effect: warden.Allow, TellLLM: "x"}, "t", ""},
		{"ask", warden.Decision{Effect: warden.Ask, Rationale: "x"}, "t", ""},
		{"invalid effect reads as deny", warden.Decision{Effect: warden.Effect(9), Rationale: "r"}, "t", "[permission denied: r]"},
	}
	for _, tt := range tests {
		if got := tt.d.ModelText(tt.tool); got != tt.want {
			t.Errorf("%s: ModelText = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDecision_Texts(t *testing.T) {
	tests := []struct{ got, want string }{
		{warden.UnauthorizedText("crm"), "[permission denied: Tool 'crm' could not be authorized. This will not change during this run — do not call it again. Continue without it, or say what you are unable to do.]"},
		{warden.DeclinedText(""), "declined by human"},
		{warden.DeclinedText("not this one"), "declined by human: not this one"},
		{spectext.NoPauseText("legal", "Approve?"), "middleware 'legal' asked a person to decide, and there is no pause here to carry that ask: Approve?"},
		{spectext.ThrewText("broken", "boom"), "middleware 'broken' threw: boom"},
		{spectext.CeilingText("big", 120, 100), "Result too large: big returned 120 chars, over its declared 100-char ceiling. Narrow the request and call again. No data was returned."},
		{warden.InvalidArgsText("t", []warden.ArgProblem{{Path: "$.n", Message: "got string, want integer"}}),
			"Invalid arguments for tool 't' — the call was not executed.\n- '$.n': got string, want integer\nFix the arguments to match the tool's input schema and call it again."},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestDecision_Faults(t *testing.T) {
	f := warden.CheckerFault("crm", errors.New("ECONNREFUSED"))
	want := warden.Decision{Effect: warden.Deny, RuleID: "checker.fault", Rationale: "permission-checker threw: ECONNREFUSED", TellLLM: warden.UnauthorizedText("crm"), Fault: true}
	if d := cmp.Diff(want, f); d != "" {
		t.Errorf("CheckerFault (-want +got):\n%s", d)
	}
	if strings.Contains(f.ModelText("crm"), "ECONNREFUSED") {
		t.Error("the operator's error reaches the model")
	}
	if got := warden.CheckerFault("t", nil).Rationale; got != "permission-checker threw: unknown error" {
		t.Errorf("CheckerFault(nil) rationale %q", got)
	}
	e := warden.EscalationFault("bash", "", warden.Decision{Effect: warden.Ask, RuleID: "*", Rationale: "escalate by rule: *"})
	if e.Effect != warden.Deny || !e.Fault || e.RuleID != "*" ||
		e.Rationale != "Permission escalation required for bash.: escalate by rule: *. No escalation handler configured." {
		t.Errorf("EscalationFault = %+v", e)
	}
}

func TestPolicyHaltError(t *testing.T) {
	e := &warden.PolicyHaltError{Reason: "security:exfiltration", RuleID: "no-bulk-export-v3", Proposed: warden.Step{Tool: "save_note"}}
	want := `warden: run halted by policy rule no-bulk-export-v3 (security:exfiltration): tool "save_note" was not executed`
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	var dre error = &warden.DecisionRequiredError{Got: "string"}
	if !strings.Contains(dre.Error(), "Approved or Declined") {
		t.Errorf("DecisionRequiredError = %q", dre)
	}
}

func TestCheckerGoverns(t *testing.T) {
	if warden.CheckerGoverns(nil, warden.CapToolCall) {
		t.Error("a nil checker governs nothing")
	}
	fn := warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) { return warden.Decision{}, nil })
	if !warden.CheckerGoverns(fn, warden.CapToolCall) || warden.CheckerGoverns(fn, warden.CapMemoryRead) {
		t.Error("a CheckerFunc is asked only about tool_call")
	}
	c := &checker{caps: []warden.Capability{warden.CapUserData}}
	if !warden.CheckerGoverns(c, warden.CapUserData) || warden.CheckerGoverns(c, warden.CapMemoryRead) || !warden.CheckerGoverns(c, warden.CapToolCall) {
		t.Error("CheckerGoverns must follow the checker's declaration, tool_call always")
	}
}

func TestCheckCall(t *testing.T) {
	all := []warden.Capability{warden.CapMemoryRead, warden.CapMemoryWrite, warden.CapExternalNet, warden.CapUserData}
	type step struct {
		Capability warden.Capability
		Effect     warden.Effect
	}
	tests := []struct {
		name     string
		governs  []warden.Capability
		declared []warden.Capability
		answers  map[warden.Capability]warden.Effect // default allow
		want     []step
		effect   warden.Effect
	}{
		{"tool declares nothing", all, nil, nil, []step{{warden.CapToolCall, warden.Allow}}, warden.Allow},
		{"checker governs nothing", nil, all, nil, []step{{warden.CapToolCall, warden.Allow}}, warden.Allow},
		{"both declare, in the tool's order", all, []warden.Capability{warden.CapUserData, warden.CapMemoryRead},
			nil, []step{{warden.CapToolCall, warden.Allow}, {warden.CapUserData, warden.Allow}, {warden.CapMemoryRead, warden.Allow}}, warden.Allow},
		{"only governed ones", []warden.Capability{warden.CapMemoryRead}, []warden.Capability{warden.CapUserData, warden.CapMemoryRead},
			nil, []step{{warden.CapToolCall, warden.Allow}, {warden.CapMemoryRead, warden.Allow}}, warden.Allow},
		{"stops at the first deny", all, []warden.Capability{warden.CapMemoryWrite, warden.CapUserData},
			map[warden.Capability]warden.Effect{warden.CapMemoryWrite: warden.Deny},
			[]step{{warden.CapToolCall, warden.Allow}, {warden.CapMemoryWrite, warden.Deny}}, warden.Deny},
		{"tool_call deny asks nothing else", all, all, map[warden.Capability]warden.Effect{warden.CapToolCall: warden.Deny},
			[]step{{warden.CapToolCall, warden.Deny}}, warden.Deny},
		{"stops at halt", all, []warden.Capability{warden.CapMemoryWrite, warden.CapUserData},
			map[warden.Capability]warden.Effect{warden.CapMemoryWrite: warden.Halt},
			[]step{{warden.CapToolCall, warden.Allow}, {warden.CapMemoryWrite, warden.Halt}}, warden.Halt},
		{"ask does not stop; deny outranks it", all, []warden.Capability{warden.CapMemoryWrite, warden.CapUserData},
			map[warden.Capability]warden.Effect{warden.CapToolCall: warden.Ask, warden.CapUserData: warden.Deny},
			[]step{{warden.CapToolCall, warden.Ask}, {warden.CapMemoryWrite, warden.Allow}, {warden.CapUserData, warden.Deny}}, warden.Deny},
		{"ask outranks allow", all, []warden.Capability{warden.CapMemoryWrite},
			map[warden.Capability]warden.Effect{warden.CapMemoryWrite: warden.Ask},
			[]step{{warden.CapToolCall, warden.Allow}, {warden.CapMemoryWrite, warden.Ask}}, warden.Ask},
		{"declared tool_call is not asked twice", all, []warden.Capability{warden.CapToolCall}, nil,
			[]step{{warden.CapToolCall, warden.Allow}}, warden.Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &checker{caps: tt.governs, fn: func(_ context.Context, r warden.Request) (warden.Decision, error) {
				e, ok := tt.answers[r.Capability]
				if !ok {
					e = warden.Allow
				}
				return warden.Decision{Effect: e, RuleID: string(r.Capability)}, nil
			}}
			var got []step
			d := warden.CheckCall(context.Background(), c, warden.Request{Capability: warden.CapUserData, Target: "tool"}, tt.declared, func(r warden.Request, d warden.Decision) {
				got = append(got, step{r.Capability, d.Effect})
				if r.Target != "tool" {
					t.Errorf("target %q", r.Target)
				}
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("visits (-want +got):\n%s", diff)
			}
			if d.Effect != tt.effect {
				t.Errorf("effect %s, want %s", d.Effect, tt.effect)
			}
		})
	}
}

func TestCheckCall_Faults(t *testing.T) {
	tests := map[string]func(context.Context, warden.Request) (warden.Decision, error){
		"error": func(context.Context, warden.Request) (warden.Decision, error) {
			return warden.Decision{Effect: warden.Allow}, errors.New("x")
		},
		"panic": func(context.Context, warden.Request) (warden.Decision, error) { panic("p") },
		"invalid": func(context.Context, warden.Request) (warden.Decision, error) {
			return warden.Decision{Effect: warden.Effect(4)}, nil
		},
	}
	for name, fn := range tests {
		d := warden.CheckCall(context.Background(), &checker{fn: fn}, warden.Request{Target: "t"}, nil, nil)
		if d.Effect != warden.Deny || !d.Fault || d.TellLLM != warden.UnauthorizedText("t") {
			t.Errorf("%s: %+v, want a fault denial", name, d)
		}
	}
}

func TestCheckCall_Replacement(t *testing.T) {
	var seen []string
	c := &checker{caps: []warden.Capability{warden.CapMemoryWrite}, fn: func(_ context.Context, r warden.Request) (warden.Decision, error) {
		a, _ := r.Args.String("action")
		seen = append(seen, string(r.Capability)+":"+a)
		if r.Capability == warden.CapToolCall {
			x := r.Args.With("action", "write")
			return warden.Decision{Effect: warden.Allow, Args: &x}, nil
		}
		return warden.Decision{Effect: warden.Allow}, nil
	}}
	d := warden.CheckCall(context.Background(), c, warden.Request{Target: "t", Args: A(`{"action":"read"}`)}, []warden.Capability{warden.CapMemoryWrite}, nil)
	if d.Args == nil || js(*d.Args) != `{"action":"write"}` {
		t.Errorf("replacement not returned: %+v", d)
	}
	if cmp.Diff([]string{"tool_call:read", "memory_write:write"}, seen) != "" {
		t.Errorf("later checks saw %v, want the replacement", seen)
	}
	// A replacement on anything but an allow is ignored.
	deny := &checker{fn: func(_ context.Context, r warden.Request) (warden.Decision, error) {
		x := A(`{"x":1}`)
		return warden.Decision{Effect: warden.Deny, Args: &x}, nil
	}}
	if d := warden.CheckCall(context.Background(), deny, warden.Request{Target: "t"}, nil, nil); d.Args != nil {
		t.Errorf("a deny carried replacement args: %+v", d)
	}
}

func TestCapabilities(t *testing.T) {
	caps := warden.ToolCapabilities()
	caps[0] = "x"
	if warden.ToolCapabilities()[0] != warden.CapMemoryRead {
		t.Error("ToolCapabilities returned shared storage")
	}
	if warden.CapToolCall.IsToolCapability() || warden.CapSkillRead.IsToolCapability() || !warden.CapUserData.IsToolCapability() {
		t.Error("IsToolCapability")
	}
	if !warden.CapSkillRead.Valid() || warden.Capability("memory").Valid() {
		t.Error("Valid")
	}
	if id, ok := warden.SkillIDFromTarget(warden.SkillTarget("refunds")); !ok || id != "refunds" {
		t.Error("skill target round trip")
	}
	if _, ok := warden.SkillIDFromTarget("refunds"); ok {
		t.Error("a tool name is not a skill target")
	}
}
