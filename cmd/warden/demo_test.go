package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
)

// demoJSON is the documented shape of `warden demo --json`, decoded strictly.
type demoJSON struct {
	Scenes []struct {
		Name      string `json:"name"`
		Executed  int    `json:"executed"`
		Decisions []struct {
			Capability string `json:"capability"`
			Target     string `json:"target"`
			Effect     string `json:"effect"`
			RuleID     string `json:"rule_id"`
		} `json:"decisions"`
		ModelRead []string `json:"model_read"`
		Halt      *struct {
			Reason  string `json:"reason"`
			TellLLM string `json:"tell_llm"`
		} `json:"halt"`
		Paused bool `json:"paused"`
	} `json:"scenes"`
}

func decodeDemoJSON(t *testing.T, stdout string) demoJSON {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var d demoJSON
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("demo --json output is not the documented object: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatal("demo --json printed more than one JSON value")
	}
	return d
}

func TestDemoJSONGolden(t *testing.T) {
	r := runWarden(t, "demo", "--json")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	goldenFile(t, filepath.Join("testdata", "demo", "demo-json.golden"), r.stdout)
	// Every key is always present: halt is null rather than missing, lists are [].
	for _, key := range []string{`"halt": null`, `"paused": false`, `"paused": true`} {
		if !strings.Contains(r.stdout, key) {
			t.Errorf("output lacks %s", key)
		}
	}
	var raw struct {
		Scenes []map[string]json.RawMessage `json:"scenes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	for _, sc := range raw.Scenes {
		var keys []string
		for k := range sc {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"decisions", "executed", "halt", "model_read", "name", "paused"}; !slices.Equal(keys, want) {
			t.Errorf("scene keys %v, want %v", keys, want)
		}
		if string(sc["decisions"]) == "null" || string(sc["model_read"]) == "null" {
			t.Errorf("scene %s has a null list", sc["name"])
		}
	}
}

func TestDemoPlainGolden(t *testing.T) {
	r := runWarden(t, "demo")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Error("colours in output that is not a terminal")
	}
	goldenFile(t, filepath.Join("testdata", "demo", "demo-plain.golden"), r.stdout)
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// With colours on, the text is the plain text plus escape sequences only.
func TestDemoColours(t *testing.T) {
	var scenes []*demoScene
	for _, s := range demoScenes() {
		scenes = append(scenes, playScene(context.Background(), s))
	}
	var plain, coloured strings.Builder
	if err := writeDemoPlain(&plain, style{}, scenes); err != nil {
		t.Fatal(err)
	}
	if err := writeDemoPlain(&coloured, style{on: true}, scenes); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(coloured.String(), "\x1b[32mallow") || !strings.Contains(coloured.String(), "\x1b[1;35mhalt") {
		t.Error("no colours with colours on")
	}
	if got := ansi.ReplaceAllString(coloured.String(), ""); got != plain.String() {
		t.Error("the coloured output differs from the plain one by more than escape sequences")
	}

	// newStyle: colours only for a terminal.
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newStyle(f).on || newStyle(&plain).on {
		t.Error("colours on for a regular file or a buffer")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		t.Setenv("NO_COLOR", "")
		t.Setenv("TERM", "xterm")
		if !newStyle(tty).on {
			t.Error("colours off for a terminal")
		}
		t.Setenv("NO_COLOR", "1")
		if newStyle(tty).on {
			t.Error("colours on despite NO_COLOR")
		}
	}
}

// The whole demo, as a user runs it (a fresh process), takes well under 2 seconds.
func TestDemoUnderTwoSeconds(t *testing.T) {
	start := time.Now()
	r := runWarden(t, "demo")
	if d := time.Since(start); r.code != 0 || d >= 2*time.Second {
		t.Errorf("in-process demo: exit %d in %s, want 0 in under 2s", r.code, d)
	}
	bin := wardenBinary(t) // built before the clock starts
	start = time.Now()
	r = execWarden(t, t.TempDir(), nil, "demo")
	if d := time.Since(start); r.code != 0 || d >= 2*time.Second {
		t.Errorf("%s demo: exit %d in %s, want 0 in under 2s\n%s", bin, r.code, d, r.stderr)
	}
	if !strings.Contains(r.stdout, "7 scenes, every outcome as designed.") {
		t.Errorf("binary output:\n%s", r.stdout)
	}
}

// Each scene's outcome, asserted here independently of the golden files and of the
// demo's own self-check.
func TestDemoSceneOutcomes(t *testing.T) {
	r := runWarden(t, "demo", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decodeDemoJSON(t, r.stdout)
	var names []string
	for _, sc := range d.Scenes {
		names = append(names, sc.Name)
	}
	if want := []string{"read-only", "admin", "outage", "halt", "double-check", "ask", "skills"}; !slices.Equal(names, want) {
		t.Fatalf("scenes %v, want %v", names, want)
	}
	type dec = [4]string
	decisions := func(i int) []dec {
		var out []dec
		for _, x := range d.Scenes[i].Decisions {
			out = append(out, dec{x.Capability, x.Target, x.Effect, x.RuleID})
		}
		return out
	}
	tests := []struct {
		executed  int
		decisions []dec
		modelRead []string
		halt      bool
		paused    bool
	}{
		{ // read-only: one denial, user_data never asked
			executed:  0,
			decisions: []dec{{"tool_call", "save_note", "allow", "readonly.allowlist"}, {"memory_write", "save_note", "deny", "readonly.capabilities.miss"}},
			modelRead: []string{"[permission denied: The 'readonly' role may not exercise 'memory_write', which tool 'save_note' declares.]"},
		},
		{ // admin: runs once
			executed: 1,
			decisions: []dec{{"tool_call", "save_note", "allow", "admin.allowlist"}, {"memory_write", "save_note", "allow", "admin.allowlist"},
				{"user_data", "save_note", "allow", "admin.allowlist"}},
			modelRead: []string{"saved note: customer called about order 1042"},
		},
		{ // outage: fail closed, the model reads the terminal text
			executed: 0,
			decisions: []dec{{"tool_call", "save_note", "allow", "admin.allowlist"}, {"memory_write", "save_note", "allow", "admin.allowlist"},
				{"user_data", "save_note", "allow", "admin.allowlist"}, {"tool_call", "save_note", "deny", "checker.fault"}},
			modelRead: []string{"[permission denied: Tool 'save_note' could not be authorized. This will not change during this run — do not call it again. Continue without it, or say what you are unable to do.]"},
		},
		{ // halt
			executed: 0,
			decisions: []dec{{"tool_call", "save_note", "allow", "admin.allowlist"}, {"memory_write", "save_note", "allow", "admin.allowlist"},
				{"user_data", "save_note", "allow", "admin.allowlist"}, {"tool_call", "save_note", "halt", "no-bulk-export-v3"}},
			modelRead: []string{"That action needs a human approver. Stopping here and handing off."},
			halt:      true,
		},
		{ // double-check: S1 allows echo, S2 denies rm
			executed:  0,
			decisions: []dec{{"tool_call", "bash", "allow", "echo *"}, {"tool_call", "bash", "deny", "rm *"}},
			modelRead: []string{"[permission denied: denied by rule: rm *]"},
		},
		{ // ask: paused, approved, ran once
			executed: 1,
			// S1 and S2 before the pause (the ask is decided after S2), S1 and S2 again on the resume.
			decisions: []dec{{"tool_call", "refund", "allow", "support.allowlist"}, {"tool_call", "refund", "allow", "support.allowlist"}, {"tool_call", "refund", "allow", "support.allowlist"}, {"tool_call", "refund", "allow", "support.allowlist"}},
			modelRead: []string{"refunded 1500"},
			paused:    true,
		},
		{ // skills: payroll refused by the skill gate, refunds read
			executed: 1,
			decisions: []dec{{"tool_call", "read_skill", "allow", "support.allowlist"}, {"skill_read", "skill:payroll", "deny", "support.skills.miss"},
				{"tool_call", "read_skill", "allow", "support.allowlist"}, {"skill_read", "skill:refunds", "allow", "support.skills"}},
			modelRead: []string{"[permission denied: Skill 'payroll' is not available to the 'support' role.]", "Refunds: check the order, refund at most the amount paid, confirm to the customer."},
		},
	}
	for i, tt := range tests {
		sc := d.Scenes[i]
		t.Run(sc.Name, func(t *testing.T) {
			if sc.Executed != tt.executed {
				t.Errorf("executed %d, want %d", sc.Executed, tt.executed)
			}
			if got := decisions(i); !slices.Equal(got, tt.decisions) {
				t.Errorf("decisions\n got %q\nwant %q", got, tt.decisions)
			}
			if !slices.Equal(sc.ModelRead, tt.modelRead) {
				t.Errorf("model read\n got %q\nwant %q", sc.ModelRead, tt.modelRead)
			}
			if (sc.Halt != nil) != tt.halt {
				t.Errorf("halt %+v, want halt %v", sc.Halt, tt.halt)
			}
			if tt.halt && (sc.Halt.Reason != "security:exfiltration" || sc.Halt.TellLLM != "That action needs a human approver. Stopping here and handing off.") {
				t.Errorf("halt %+v", sc.Halt)
			}
			if sc.Paused != tt.paused {
				t.Errorf("paused %v, want %v", sc.Paused, tt.paused)
			}
		})
	}
}

// What the JSON cannot show: the run goes on after the outage, the operator's error
// text stays out of what the model reads, the tools' own counters agree with the runs,
// the resumed refund was approved by the demo operator, and the skill menu.
func TestDemoSceneDetails(t *testing.T) {
	scenes := map[string]*demoScene{}
	for _, s := range demoScenes() {
		sc := playScene(context.Background(), s)
		if sc.err != nil {
			t.Errorf("scene %s: %v", s.name, sc.err)
		}
		if sc.ran != sc.Executed {
			t.Errorf("scene %s: the tools counted %d executions, the run %d", s.name, sc.ran, sc.Executed)
		}
		scenes[s.name] = sc
	}
	out := scenes["outage"]
	if out.answer == "" || out.Halt != nil {
		t.Errorf("outage: the run did not continue to an answer (answer %q, halt %+v)", out.answer, out.Halt)
	}
	for _, m := range out.ModelRead {
		if strings.Contains(m, "simulated authorizer outage") {
			t.Error("outage: the checker's error text reached the model")
		}
	}
	var rationale string
	for _, l := range out.lines {
		if l.call != nil {
			for _, k := range l.call.Checks {
				if k.Checker == "authorizer-that-is-down" {
					rationale = k.Decision.Rationale
				}
			}
		}
	}
	if rationale != "permission-checker threw: simulated authorizer outage" {
		t.Errorf("outage: operator rationale %q", rationale)
	}

	if h := scenes["halt"]; h.answer != "" || h.Halt == nil || h.Halt.rule != "no-bulk-export-v3" || h.Halt.checker != "exfiltration-guard" {
		t.Errorf("halt: answer %q, halt %+v", h.answer, h.Halt)
	}

	dc := scenes["double-check"]
	var calls []*warden.Args
	for _, l := range dc.lines {
		if l.call != nil {
			calls = append(calls, &l.call.Args)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("double-check: %d calls", len(calls))
	}
	if got := string(calls[0].AppendJSON(nil)); got != `{"command":"rm /tmp/important"}` {
		t.Errorf("double-check: final args %s", got)
	}
	if got := dc.proposed["call_1"]; got != `{"command":"echo ok"}` {
		t.Errorf("double-check: the model proposed %s", got)
	}

	ask := scenes["ask"]
	var statuses []warden.Status
	approvedBy := ""
	for _, l := range ask.lines {
		if l.call != nil {
			statuses = append(statuses, l.call.Status)
			if l.call.Executed {
				approvedBy = l.call.ApprovedBy
			}
		}
	}
	if !slices.Equal(statuses, []warden.Status{warden.StatusPending, warden.StatusRan}) || approvedBy != "demo-operator" {
		t.Errorf("ask: statuses %v, approved by %q", statuses, approvedBy)
	}

	sk := scenes["skills"]
	menu := sk.lines[0].note
	if !strings.Contains(menu, "- refunds: How to issue a refund.") || !strings.Contains(menu, "- lookup: How to look up a customer.") || strings.Contains(menu, "payroll") {
		t.Errorf("skills: menu %q", menu)
	}
}

func TestDemoSubset(t *testing.T) {
	r := runWarden(t, "demo", "--json", "halt", "ask", "halt")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decodeDemoJSON(t, r.stdout)
	if len(d.Scenes) != 2 || d.Scenes[0].Name != "halt" || d.Scenes[1].Name != "ask" {
		t.Errorf("scenes %+v, want halt then ask", d.Scenes)
	}

	r = runWarden(t, "demo", "read-only")
	if r.code != 0 || !strings.Contains(r.stdout, "[1/1] read-only") || strings.Contains(r.stdout, "admin —") {
		t.Errorf("demo read-only: exit %d\n%s", r.code, r.stdout)
	}

	r = runWarden(t, "demo", "nope")
	if r.code != exitUsage || !strings.Contains(r.stderr, `unknown scene "nope"`) || !strings.Contains(r.stderr, "read-only, admin, outage, halt, double-check, ask, skills") {
		t.Errorf("unknown scene: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A scene that does not end as designed fails the demo, visibly.
func TestDemoReportsUnexpectedOutcome(t *testing.T) {
	spec := demoScenes()[1] // admin
	spec.expect = expectReadOnly
	sc := playScene(context.Background(), spec)
	if sc.err == nil {
		t.Fatal("the admin scene passed the read-only expectations")
	}
	var b strings.Builder
	if err := writeDemoPlain(&b, style{}, []*demoScene{sc}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "UNEXPECTED:") || !strings.Contains(b.String(), "FAILED: 1 of 1 scenes") {
		t.Errorf("output:\n%s", b.String())
	}
}
