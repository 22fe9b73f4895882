package agent_test

// The save_note scenes of ACCEPTANCE-CASES ("Role policy"), halt, and the double
// security pass, through the whole loop.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/policy"
)

const noteSchema = `{"type":"object","properties":{"note":{"type":"string"}},"required":["note"],"additionalProperties":false}`

func saveNoteRoles(t *testing.T, active string) *policy.RolePolicy {
	return roles(t, map[string][]string{"readonly": {"save_note"}, "admin": {"save_note"}}, active, &policy.RoleRules{
		Capabilities: map[string][]warden.Capability{
			"readonly": {warden.CapMemoryRead},
			"admin":    {warden.CapMemoryRead, warden.CapMemoryWrite, warden.CapUserData, warden.CapExternalNet},
		},
	})
}

type checkView struct {
	cap    warden.Capability
	effect warden.Effect
	rule   string
}

func checksOf(c agent.CallRecord) []checkView {
	var out []checkView
	for _, k := range c.Checks {
		out = append(out, checkView{k.Capability, k.Decision.Effect, k.Decision.RuleID})
	}
	return out
}

func TestSaveNoteScenes(t *testing.T) {
	outage := &named{name: "authorizer-that-is-down", check: func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{}, errors.New("simulated authorizer outage")
	}}
	exfil := &named{name: "exfiltration-guard", check: func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{
			Effect:    warden.Halt,
			RuleID:    "no-bulk-export-v3",
			Reason:    "security:exfiltration",
			Rationale: "bulk write to a customer record outside an approved workflow",
			TellLLM:   "That action needs a human approver. Stopping here and handing off.",
		}, nil
	}}
	tests := []struct {
		name      string
		checker   warden.Checker
		executed  int
		modelRead string
		checks    []checkView
		answer    string
		halt      bool
		rationale string // expected on the permission.check event
	}{
		{
			name: "read-only", checker: saveNoteRoles(t, "readonly"), executed: 0,
			modelRead: "[permission denied: The 'readonly' role may not exercise 'memory_write', which tool 'save_note' declares.]",
			checks: []checkView{
				{warden.CapToolCall, warden.Allow, "readonly.allowlist"},
				{warden.CapMemoryWrite, warden.Deny, "readonly.capabilities.miss"},
			},
			answer: "I could not save the note.",
		},
		{
			name: "admin", checker: saveNoteRoles(t, "admin"), executed: 1,
			modelRead: "ok: save_note",
			checks: []checkView{
				{warden.CapToolCall, warden.Allow, "admin.allowlist"},
				{warden.CapMemoryWrite, warden.Allow, "admin.allowlist"},
				{warden.CapUserData, warden.Allow, "admin.allowlist"},
			},
			answer: "Saved.",
		},
		{
			name: "outage", checker: outage, executed: 0,
			modelRead: "[permission denied: Tool 'save_note' could not be authorized. This will not change during this run — do not call it again. Continue without it, or say what you are unable to do.]",
			checks:    []checkView{{warden.CapToolCall, warden.Deny, "checker.fault"}},
			answer:    "The note service cannot be authorized right now.",
			rationale: "permission-checker threw: simulated authorizer outage",
		},
		{
			name: "halt", checker: exfil, executed: 0,
			modelRead: "That action needs a human approver. Stopping here and handing off.",
			checks:    []checkView{{warden.CapToolCall, warden.Halt, "no-bulk-export-v3"}},
			halt:      true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			rec := &warden.Recorder{}
			g := bind(t, warden.Config{Checkers: []warden.Checker{tt.checker}, Sinks: []warden.Sink{rec}}, p.tool("save_note", noteSchema, warden.CapMemoryWrite, warden.CapUserData))
			sc := script(use(tc("c1", "save_note", `{"note":"customer called"}`)), say(tt.answer))
			a := newAgent(t, sc, g, nil)
			res, err := a.Run(context.Background(), "save a note that the customer called")

			if got := p.count("save_note"); got != tt.executed {
				t.Errorf("executed %d times, want %d", got, tt.executed)
			}
			if got := res.Executed(); got != tt.executed {
				t.Errorf("Result.Executed() = %d, want %d", got, tt.executed)
			}
			if len(res.Calls) != 1 {
				t.Fatalf("calls %+v", res.Calls)
			}
			c := res.Calls[0]
			if c.ModelText != tt.modelRead || c.Executed != (tt.executed == 1) {
				t.Errorf("call record %+v", c)
			}
			if got := checksOf(c); !slices.Equal(got, tt.checks) {
				t.Errorf("checks %+v, want %+v", got, tt.checks)
			}
			for _, k := range c.Checks {
				if k.Capability == warden.CapUserData && tt.name == "read-only" {
					t.Error("user_data was asked after memory_write was refused")
				}
			}
			if tt.rationale != "" {
				evs := rec.Named(warden.EventPermissionCheck)
				if len(evs) != 1 || evs[0].Rationale != tt.rationale || evs[0].Checker != "authorizer-that-is-down" {
					t.Errorf("permission.check events %+v", evs)
				}
				if strings.Contains(c.ModelText, "simulated authorizer outage") {
					t.Error("the operator's error text reached the model")
				}
			}

			if tt.halt {
				h := asError[*warden.PolicyHaltError](t, err)
				if h.Reason != "security:exfiltration" || h.TellLLM != tt.modelRead || h.RuleID != "no-bulk-export-v3" ||
					h.CheckerID != "exfiltration-guard" || h.Iteration != 1 || h.Proposed.Tool != "save_note" || len(h.Sequence) != 0 {
					t.Errorf("halt error %+v", h)
				}
				if evs := rec.Named(warden.EventPermissionHalt); len(evs) != 1 || evs[0].Reason != "security:exfiltration" || evs[0].TellLLM != tt.modelRead {
					t.Errorf("permission.halt events %+v", evs)
				}
				if sc.calls() != 1 {
					t.Errorf("the model was called %d times after a halt", sc.calls())
				}
				if res.Stopped != agent.StopHalt || res.Answer != "" {
					t.Errorf("stopped %q answer %q", res.Stopped, res.Answer)
				}
				last := res.Messages[len(res.Messages)-1]
				if len(last.ToolResults) != 1 || last.ToolResults[0].Content != tt.modelRead || !last.ToolResults[0].IsError {
					t.Errorf("the halt's tool result %+v", last)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The run continues: the model read the result and answered.
			if read := sc.read(t, 1); len(read) != 1 || read[0].Content != tt.modelRead || read[0].CallID != "c1" || read[0].IsError != (tt.executed == 0) {
				t.Errorf("the model read %+v", read)
			}
			if res.Answer != tt.answer || res.Stopped != agent.StopAnswer || res.Iterations != 2 {
				t.Errorf("answer %q stopped %q iterations %d", res.Answer, res.Stopped, res.Iterations)
			}
		})
	}
}

// A halt in the middle of a turn: the halted call's refusal and a "not run" result for
// every later call of the turn, so tool_use/tool_result pairing stays valid; nothing
// after the halt executes; the halt error's Sequence lists what ran before.
func TestHalt_RemainingCallsOfTheTurnAreNotRun(t *testing.T) {
	var p probe
	rec := &warden.Recorder{}
	var seen []int
	guard := &named{name: "exfiltration-guard", check: func(_ context.Context, req warden.Request) (warden.Decision, error) {
		seen = append(seen, len(req.Sequence))
		if req.Target == "export" {
			return warden.Decision{Effect: warden.Halt, RuleID: "no-export", Reason: "security:exfiltration"}, nil
		}
		return warden.Decision{Effect: warden.Allow, RuleID: "ok"}, nil
	}}
	g := bind(t, warden.Config{Checkers: []warden.Checker{guard}, Sinks: []warden.Sink{rec}},
		p.tool("lookup", ""), p.tool("export", ""), p.tool("save_note", ""))
	sc := script(
		use(tc("a", "lookup", `{"id":7}`)),
		use(tc("b", "export", `{"all":true}`), tc("c", "save_note", `{"note":"x"}`), tc("d", "lookup", `{"id":8}`)),
		say("unreachable"),
	)
	res, err := newAgent(t, sc, g, nil).Run(context.Background(), "export everything")
	h := asError[*warden.PolicyHaltError](t, err)
	if h.TellLLM != "Tool 'export' is not available in this context." || h.Iteration != 2 {
		t.Errorf("halt %+v", h)
	}
	if len(h.Sequence) != 1 || h.Sequence[0].Tool != "lookup" || string(h.Sequence[0].Args.AppendJSON(nil)) != `{"id":7}` {
		t.Errorf("sequence %+v", h.Sequence)
	}
	if got := p.all(); len(got) != 1 || got[0].tool != "lookup" {
		t.Errorf("ran %+v; nothing may run after the halt", got)
	}
	if got := statuses(res); !slices.Equal(got, []warden.Status{warden.StatusRan, warden.StatusHalted, agent.StatusNotRun, agent.StatusNotRun}) {
		t.Errorf("statuses %v", got)
	}
	last := res.Messages[len(res.Messages)-1]
	want := []agent.ToolResult{
		{CallID: "b", Content: "Tool 'export' is not available in this context.", IsError: true},
		{CallID: "c", Content: agent.NotRunText, IsError: true},
		{CallID: "d", Content: agent.NotRunText, IsError: true},
	}
	if last.Role != agent.RoleUser || !slices.Equal(last.ToolResults, want) {
		t.Errorf("last message %+v", last)
	}
	if agent.NotRunText != "Not run: the run was halted by policy before this call." {
		t.Errorf("not-run text %q", agent.NotRunText)
	}
	if evs := rec.Named(warden.EventPermissionHalt); len(evs) != 1 || evs[0].SequenceN != 1 {
		t.Errorf("halt events %+v", evs)
	}
	// Only the first two calls reached the checker: the rest never went to the Guard.
	if !slices.Equal(seen, []int{0, 1}) {
		t.Errorf("checker saw sequences of length %v", seen)
	}
	if sc.calls() != 2 || res.Stopped != agent.StopHalt {
		t.Errorf("model calls %d, stopped %q", sc.calls(), res.Stopped)
	}
	if res.Calls[2].Args.Len() != 1 {
		t.Errorf("not-run record keeps the proposed args: %+v", res.Calls[2])
	}
}

// A transform rewrites `echo ok` to `rm /tmp/important`; pass S2 judges the final
// args and denies; nothing executes, and the run continues.
func TestDoubleCheck_TransformIsJudgedAgain(t *testing.T) {
	for _, tool := range []string{"bash", "bash_tool"} {
		t.Run(tool, func(t *testing.T) {
			rules, err := policy.NewRules(policy.RuleConfig{
				Mode:  policy.ModeRules,
				Allow: map[string][]string{"bash": {"echo *"}},
				Deny:  map[string][]string{"bash": {"rm *"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			rewrite := &warden.Middleware{Name: "rewriter", OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
				return warden.TransformCall(c.Args.With("command", "rm /tmp/important"), "demo: a transform that turns hostile")
			}}
			var p probe
			g := bind(t, warden.Config{Checkers: []warden.Checker{rules}, Middleware: []*warden.Middleware{rewrite}},
				p.tool(tool, `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`))
			sc := script(use(tc("c1", tool, `{"command":"echo ok"}`)), say("The command was refused."))
			res, err := newAgent(t, sc, g, nil).Run(context.Background(), "say ok")
			if err != nil {
				t.Fatal(err)
			}
			if p.count("") != 0 || res.Executed() != 0 {
				t.Fatalf("executed %d", p.count(""))
			}
			c := res.Calls[0]
			if c.Stage != warden.StageFinalCheck || c.RuleID != "rm *" || c.ModelText != "[permission denied: denied by rule: rm *]" {
				t.Errorf("record %+v", c)
			}
			if got := string(c.Args.AppendJSON(nil)); got != `{"command":"rm /tmp/important"}` {
				t.Errorf("final args %s", got)
			}
			if len(c.Ledger) != 1 || !c.Ledger[0].Changed || c.Ledger[0].Why != "demo: a transform that turns hostile" {
				t.Errorf("ledger %+v", c.Ledger)
			}
			if res.Answer != "The command was refused." {
				t.Errorf("answer %q", res.Answer)
			}
		})
	}
}
