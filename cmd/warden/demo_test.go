package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
