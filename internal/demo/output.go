package demo

// This file writes the scenes for people (coloured when the output is a terminal) and
// as JSON.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
)

func writeDemoJSON(w io.Writer, scenes []*demoScene) error {
	out := struct {
		Scenes []*demoScene `json:"scenes"`
	}{scenes}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// style colours the plain output; every method is the identity when colours are off.
type style struct{ on bool }

// newStyle turns colours on only for a terminal, and never when NO_COLOR is set or
// TERM is dumb.
func newStyle(w io.Writer) style {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return style{}
	}
	fi, err := f.Stat()
	return style{on: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (s style) wrap(code, text string) string {
	if !s.on || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func (s style) bold(t string) string  { return s.wrap("1", t) }
func (s style) dim(t string) string   { return s.wrap("2", t) }
func (s style) cyan(t string) string  { return s.wrap("36", t) }
func (s style) green(t string) string { return s.wrap("32", t) }
func (s style) red(t string) string   { return s.wrap("31", t) }

func (s style) effect(e warden.Effect, padded string) string {
	switch e {
	case warden.Allow:
		return s.wrap("32", padded)
	case warden.Ask:
		return s.wrap("33", padded)
	case warden.Halt:
		return s.wrap("1;35", padded)
	}
	return s.wrap("31", padded)
}

func writeDemoPlain(w io.Writer, s style, scenes []*demoScene) error {
	var b strings.Builder
	b.WriteString(s.bold("Warden demo") + ": each scene runs the real agent loop (Guard + policy) with a scripted model.\n")
	b.WriteString("The tools are in-memory fakes that only record that they ran.\n")
	failed := 0
	for i, sc := range scenes {
		fmt.Fprintf(&b, "\n%s %s\n", s.bold(s.cyan(fmt.Sprintf("[%d/%d] %s", i+1, len(scenes), sc.Name))), s.dim("— "+sc.title))
		if sc.task != "" {
			fmt.Fprintf(&b, "  %s %s\n", s.dim("task    "), sc.task)
		}
		for _, l := range sc.lines {
			if l.call == nil {
				fmt.Fprintf(&b, "  %s %s\n", s.dim("·"), l.note)
				continue
			}
			writeDemoCall(&b, s, l.call, sc.proposed[l.call.ID])
		}
		if sc.Halt != nil {
			fmt.Fprintf(&b, "  %s %s (rule %s, checker %s): the run ended with *warden.PolicyHaltError\n",
				s.effect(warden.Halt, "halted  "), sc.Halt.Reason, sc.Halt.rule, sc.Halt.checker)
		}
		if sc.answer != "" {
			fmt.Fprintf(&b, "  %s %s\n", s.dim("answer  "), sc.answer)
		}
		exec := fmt.Sprintf("%d", sc.Executed)
		if sc.Executed == 0 {
			exec = s.red(exec)
		} else {
			exec = s.green(exec)
		}
		fmt.Fprintf(&b, "  %s %s\n", s.bold("executed"), exec)
		if sc.err != nil {
			failed++
			fmt.Fprintf(&b, "  %s %s\n", s.red("UNEXPECTED:"), strings.ReplaceAll(sc.err.Error(), "\n", "\n    "))
		}
	}
	if failed == 0 {
		fmt.Fprintf(&b, "\n%s, every outcome as designed. Refusals are data: the model read each one and the run went on, except where a halt ended it.\n", countOf(len(scenes), "scene", "scenes"))
	} else {
		fmt.Fprintf(&b, "\n%s %d of %d scenes did not end as designed.\n", s.red("FAILED:"), failed, len(scenes))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeDemoCall(b *strings.Builder, s style, c *agent.CallRecord, proposed string) {
	final := string(c.Args.AppendJSON(nil))
	if proposed == "" {
		proposed = final
	}
	fmt.Fprintf(b, "  %s %s %s\n", s.bold("→"), s.bold(c.Tool), proposed)
	checks := func(pass string) {
		for _, k := range c.Checks {
			if k.Pass != pass {
				continue
			}
			eff := fmt.Sprintf("%-5s", k.Decision.Effect)
			fmt.Fprintf(b, "    %-5s %-12s %-14s %s %s  %s\n", k.Pass, k.Capability, clipDemo(k.Target, 14), s.effect(k.Decision.Effect, eff), k.Decision.RuleID, s.dim("("+k.Checker+")"))
			if k.Decision.Fault && k.Decision.Rationale != "" {
				fmt.Fprintf(b, "          %s %s\n", s.dim("operator's event:"), k.Decision.Rationale)
			}
		}
	}
	ledger := func(moment string) {
		for _, r := range c.Ledger {
			if r.Moment != moment {
				continue
			}
			what := r.Outcome
			if r.Changed {
				what = "transform"
			}
			fmt.Fprintf(b, "    %-5s %s: %s", "mw", r.Middleware, s.bold(what))
			if r.Why != "" {
				fmt.Fprintf(b, " — %s", r.Why)
			}
			b.WriteString("\n")
			if r.Changed && moment == "call" {
				fmt.Fprintf(b, "          %s %s\n", s.dim("args now:"), final)
			}
		}
	}
	checks("s1")
	ledger("call")
	checks("s2")
	checks("skill")
	ledger("result")
	if c.Status == warden.StatusPending {
		return
	}
	ran := s.red("not executed")
	if c.Executed {
		ran = s.green("executed")
	}
	fmt.Fprintf(b, "    %s; the model read: %s\n", ran, strings.ReplaceAll(c.ModelText, "\n", "\n      "))
}

// countOf returns "1 scene", "2 scenes".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func clipDemo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
