package demo

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
)

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

// Check and Run agree on names: known ones pass, an unknown one is refused with the
// list, and Run plays nothing for it.
func TestCheckNames(t *testing.T) {
	if err := Check(nil); err != nil {
		t.Errorf("no names: %v", err)
	}
	if err := Check([]string{"halt", "ask", "halt"}); err != nil {
		t.Errorf("known names: %v", err)
	}
	err := Check([]string{"ask", "nope"})
	if err == nil || err.Error() != `unknown scene "nope" (scenes: read-only, admin, outage, halt, double-check, ask, skills)` {
		t.Errorf("unknown name: %v", err)
	}
	var b strings.Builder
	if err := Run(context.Background(), []string{"nope"}, &b, nil); err == nil || b.Len() != 0 {
		t.Errorf("Run with an unknown name: %v, wrote %q", err, b.String())
	}
}
