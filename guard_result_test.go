package warden_test

// Result-side decisions hold on every path (issue 12, deliverable 4): what the model
// reads for every combination of what the tool did (a result, an error, an ErrorResult,
// a result over its ceiling), what a result-side link answered (nothing, keep, replace,
// deny, panic, an invalid answer) and what the error handlers answered (none
// configured, nil, Reraise, ReplaceResult, a failing handler), as the Guard doc's "The
// result side" states it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/spectext"
)

type toolDid int

const (
	didResult toolDid = iota
	didError
	didErrorResult
	didOverCeiling
)

func (d toolDid) String() string {
	return [...]string{"result", "error", "ErrorResult", "over-ceiling"}[d]
}

type linkSaid int

const (
	linkNone linkSaid = iota
	linkKeep
	linkReplace
	linkDeny
	linkPanic
	linkInvalid
)

func (l linkSaid) String() string {
	return [...]string{"no-link", "keep", "replace", "deny", "panic", "invalid"}[l]
}

type handlerSaid int

const (
	handlerNone handlerSaid = iota // no error handler configured
	handlerNil
	handlerReraise
	handlerReplace
	handlerFails
)

func (h handlerSaid) String() string {
	return [...]string{"no-handler", "nil", "Reraise", "ReplaceResult", "handler-fails"}[h]
}

const (
	resTool      = "t"
	resSecret    = "SECRET-42"
	resCeiling   = 12
	resScrubbed  = "[scrubbed by rs]"
	resWithheld  = "The result was withheld by rs."
	resFallback  = "fallback from h"
	resPanicText = "middleware 'rs' threw: panic: rs panics"
	resInvalid   = "middleware 'rs' threw: deny without a reason"
)

var errResTool = errors.New("backend said " + resSecret)

// resultPipeline builds the guard for one combination.
func resultPipeline(t *testing.T, did toolDid, said linkSaid, h handlerSaid, cap int, handled *atomic.Int64, sawErr *error) (*warden.Guard, *warden.Recorder) {
	t.Helper()
	tool := warden.Executable{Tool: warden.Tool{Name: resTool}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		switch did {
		case didError:
			return nil, errResTool
		case didErrorResult:
			return warden.ErrorResult{Text: "tool says " + resSecret}, nil
		case didOverCeiling:
			return "a long result with " + resSecret, nil
		}
		return "ok " + resSecret, nil
	}}
	if did == didOverCeiling {
		tool.ResultCeiling = resCeiling
	}
	rec := &warden.Recorder{}
	cfg := warden.Config{Ungoverned: true, Sinks: []warden.Sink{rec}, MaxResultChars: cap}
	if said != linkNone {
		cfg.Middleware = []*warden.Middleware{{Name: "rs", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
			switch said {
			case linkReplace:
				return warden.ReplaceModelResult(resScrubbed, "scrub")
			case linkDeny:
				return warden.DenyResult(resWithheld)
			case linkPanic:
				panic("rs panics")
			case linkInvalid:
				return warden.DenyResult("")
			}
			return warden.KeepResult()
		}}}
	}
	if h != handlerNone {
		cfg.ErrorHandlers = []*warden.ErrorHandler{{Name: "h", Handle: func(_ context.Context, e warden.ToolError) (warden.ErrorDisposition, error) {
			handled.Add(1)
			*sawErr = e.Err
			switch h {
			case handlerReraise:
				return warden.Reraise{}, nil
			case handlerReplace:
				return warden.ReplaceResult{Value: resFallback}, nil
			case handlerFails:
				return nil, errors.New("handler broke")
			}
			return nil, nil
		}}}
	}
	return mustBind(t, cfg, tool), rec
}

// resultWant is what one combination must give.
type resultWant struct {
	view
	err     string // "", "tool", "link" or "both": what Outcome.Err is
	handled bool   // the error handlers were called
}

// wantResult states the Guard doc's rules for one combination, case by case.
func wantResult(did toolDid, said linkSaid, h handlerSaid) resultWant {
	converts := h == handlerReplace
	ran := func(stage warden.Stage, text string, isErr bool) view {
		return view{Status: warden.StatusRan, Stage: stage, Executed: true, IsError: isErr, ModelText: text}
	}
	failed := func(stage warden.Stage, text string, isErr bool) view {
		return view{Status: warden.StatusFailed, Stage: stage, Executed: true, IsError: isErr, ModelText: text}
	}
	threw := resPanicText
	if said == linkInvalid {
		threw = resInvalid
	}
	// Rows that do not depend on what the tool did: a link's deny or replace of a
	// result, and a failing link.
	switch did {
	case didResult, didOverCeiling:
		overCeiling := did == didOverCeiling
		switch said {
		case linkNone, linkKeep:
			if overCeiling {
				return resultWant{view: ran(warden.StageCeiling, spectext.CeilingText(resTool, len("a long result with "+resSecret), resCeiling), true)}
			}
			return resultWant{view: ran(warden.StageExecute, "ok "+resSecret, false)}
		case linkReplace:
			// The replacement keeps IsError: a ceiling refusal stays an error.
			return resultWant{view: ran(warden.StageResult, resScrubbed, overCeiling)}
		case linkDeny:
			return resultWant{view: ran(warden.StageResult, resWithheld, true)}
		default: // panic, invalid: a result-side failure
			if converts {
				return resultWant{view: ran(warden.StageResult, resFallback, false), handled: true}
			}
			return resultWant{view: failed(warden.StageResult, "Tool '"+resTool+"' failed: "+threw, true), err: "link", handled: h != handlerNone}
		}
	case didErrorResult:
		switch said {
		case linkNone, linkKeep:
			return resultWant{view: failed(warden.StageExecute, "tool says "+resSecret, true)}
		case linkReplace:
			return resultWant{view: failed(warden.StageResult, resScrubbed, true)}
		case linkDeny:
			return resultWant{view: failed(warden.StageResult, resWithheld, true)}
		default:
			if converts {
				// The link's failure is converted; the tool's own failure stands.
				return resultWant{view: failed(warden.StageResult, resFallback, true), handled: true}
			}
			return resultWant{view: failed(warden.StageResult, "Tool '"+resTool+"' failed: "+threw, true), err: "link", handled: h != handlerNone}
		}
	case didError:
		handled := h != handlerNone
		switch said {
		case linkNone, linkKeep:
			if converts {
				return resultWant{view: ran(warden.StageExecute, resFallback, false), handled: true}
			}
			return resultWant{view: failed(warden.StageExecute, "Tool '"+resTool+"' failed: "+errResTool.Error(), true), err: "tool", handled: handled}
		case linkReplace:
			// The link decided what the model reads of the failure; handlers observe.
			return resultWant{view: failed(warden.StageResult, resScrubbed, true), err: "tool", handled: handled}
		case linkDeny:
			return resultWant{view: failed(warden.StageResult, resWithheld, true), err: "tool", handled: handled}
		default:
			if converts {
				return resultWant{view: ran(warden.StageResult, resFallback, false), handled: true}
			}
			return resultWant{view: failed(warden.StageResult, "Tool '"+resTool+"' failed: "+threw, true), err: "both", handled: handled}
		}
	}
	panic("unreachable")
}

func wantLedger(said linkSaid) []warden.LedgerRow {
	switch said {
	case linkKeep:
		return []warden.LedgerRow{{Middleware: "rs", Moment: "result", Outcome: "allow"}}
	case linkReplace:
		return []warden.LedgerRow{{Middleware: "rs", Moment: "result", Outcome: "allow", Changed: true, Why: "scrub"}}
	case linkDeny:
		return []warden.LedgerRow{{Middleware: "rs", Moment: "result", Outcome: "deny", Why: resWithheld}}
	case linkPanic:
		return []warden.LedgerRow{{Middleware: "rs", Moment: "result", Outcome: "deny", Why: resPanicText}}
	case linkInvalid:
		return []warden.LedgerRow{{Middleware: "rs", Moment: "result", Outcome: "deny", Why: resInvalid}}
	}
	return nil
}

func TestResultSide_EveryCombination(t *testing.T) {
	for _, did := range []toolDid{didResult, didError, didErrorResult, didOverCeiling} {
		for _, said := range []linkSaid{linkNone, linkKeep, linkReplace, linkDeny, linkPanic, linkInvalid} {
			for _, h := range []handlerSaid{handlerNone, handlerNil, handlerReraise, handlerReplace, handlerFails} {
				t.Run(fmt.Sprintf("%s/%s/%s", did, said, h), func(t *testing.T) {
					checkResultCombination(t, did, said, h)
				})
			}
		}
	}
}

func checkResultCombination(t *testing.T, did toolDid, said linkSaid, h handlerSaid) {
	var handled atomic.Int64
	var sawErr error
	g, rec := resultPipeline(t, did, said, h, 0, &handled, &sawErr)
	out := call(t, g, resTool, `{"q":1}`)
	want := wantResult(did, said, h)
	checkView(t, out, want.view)
	if said >= linkReplace && strings.Contains(out.ModelText, resSecret) {
		t.Errorf("the model read the secret after the link said %s: %q", said, out.ModelText)
	}
	if d := cmp.Diff(wantLedger(said), out.Ledger); d != "" {
		t.Errorf("ledger (-want +got):\n%s", d)
	}
	// Error handlers: called once for every failure, never otherwise.
	if got := handled.Load() == 1; got != want.handled || handled.Load() > 1 {
		t.Errorf("error handler called %d times, want called=%v", handled.Load(), want.handled)
	}
	if want.handled {
		if did == didError && !errors.Is(sawErr, errResTool) {
			t.Errorf("the handler saw %v, want the tool's own error", sawErr)
		}
		if (said == linkPanic || said == linkInvalid) && (sawErr == nil || !strings.Contains(sawErr.Error(), "middleware 'rs' threw")) {
			t.Errorf("the handler saw %v, want the link's failure", sawErr)
		}
	}
	switch want.err {
	case "":
		if out.Err != nil {
			t.Errorf("Outcome.Err = %v, want nil", out.Err)
		}
	case "tool":
		if !errors.Is(out.Err, errResTool) {
			t.Errorf("Outcome.Err = %v, want the tool's error", out.Err)
		}
	case "link":
		if out.Err == nil || !strings.Contains(out.Err.Error(), "middleware 'rs' threw") {
			t.Errorf("Outcome.Err = %v, want the link's failure", out.Err)
		}
	case "both":
		if !errors.Is(out.Err, errResTool) || !strings.Contains(out.Err.Error(), "middleware 'rs' threw") {
			t.Errorf("Outcome.Err = %v, want the tool's error and the link's failure", out.Err)
		}
	}
	if h == handlerFails && want.handled && len(out.SecondaryErrors) != 1 {
		t.Errorf("secondary errors %v, want the handler's failure", out.SecondaryErrors)
	}
	// Events: from the tool's start, in order, and what warden.tool.end says.
	var names []string
	started := false
	for _, e := range rec.Events() {
		started = started || e.Name == warden.EventToolStart
		if started {
			names = append(names, e.Name)
		}
	}
	wantNames := []string{warden.EventToolStart}
	if did == didOverCeiling {
		wantNames = append(wantNames, warden.EventResultRefused)
	}
	if said != linkNone {
		wantNames = append(wantNames, warden.EventMiddlewareDecision)
	}
	wantNames = append(wantNames, warden.EventToolEnd)
	if d := cmp.Diff(wantNames, names); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if ends := rec.Named(warden.EventToolEnd); len(ends) == 1 {
		e := ends[0]
		if e.Status != want.Status || e.Stage != want.Stage || !e.Executed {
			t.Errorf("warden.tool.end says %s at %s executed=%v, want %s at %s executed", e.Status, e.Stage, e.Executed, want.Status, want.Stage)
		}
	}
	for _, e := range rec.Events() {
		if strings.Contains(fmt.Sprintf("%+v", e), resSecret) && e.Name != warden.EventToolEnd {
			t.Errorf("event %s carries the secret: %+v", e.Name, e)
		}
	}
}

// The guard-wide cap applies last, over whatever the result side decided.
func TestResultSide_CapAppliesLast(t *testing.T) {
	const cap = 24
	for _, did := range []toolDid{didResult, didError, didErrorResult} {
		for _, said := range []linkSaid{linkNone, linkReplace, linkDeny, linkPanic} {
			for _, h := range []handlerSaid{handlerNone, handlerReplace} {
				t.Run(fmt.Sprintf("%s/%s/%s", did, said, h), func(t *testing.T) {
					var handled atomic.Int64
					var sawErr error
					g, _ := resultPipeline(t, did, said, h, cap, &handled, &sawErr)
					out := call(t, g, resTool, `{}`)
					want := wantResult(did, said, h)
					text, stage := want.ModelText, want.Stage
					if n := len([]rune(text)); n > cap {
						text, stage = spectext.TruncationMarker(resTool, text, n, cap), warden.StageCeiling
					}
					want.ModelText, want.Stage = text, stage
					checkView(t, out, want.view)
				})
			}
		}
	}
}

// Several links: the onion holds, a deny stops outer links, and a failure outside an
// inner replacement fails closed: the model reads neither the replacement nor the raw
// output.
func TestResultSide_Chains(t *testing.T) {
	link := func(name string, said linkSaid, saw *[]string) *warden.Middleware {
		return &warden.Middleware{Name: name, OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
			*saw = append(*saw, fmt.Sprintf("%s:%s:%v", name, warden.RenderResult(r.Result), r.IsError))
			switch said {
			case linkReplace:
				return warden.ReplaceModelResult("from "+name, "scrub")
			case linkDeny:
				return warden.DenyResult(name + " withholds")
			case linkPanic:
				panic(name + " panics")
			}
			return warden.KeepResult()
		}}
	}
	tests := []struct {
		name      string
		toolErr   bool
		outer     linkSaid
		inner     linkSaid
		want      view
		wantSaw   []string
		wantCalls int64
	}{
		{"inner replaces, outer sees the replacement", false, linkKeep, linkReplace,
			view{warden.StatusRan, warden.StageResult, true, false, "from inner"}, []string{"inner:ok " + resSecret + ":false", "outer:from inner:false"}, 0},
		{"inner denies, outer never runs", true, linkReplace, linkDeny,
			view{warden.StatusFailed, warden.StageResult, true, true, "inner withholds"}, []string{"inner::true"}, 1},
		{"inner replaces the error, outer panics", true, linkPanic, linkReplace,
			view{warden.StatusFailed, warden.StageResult, true, true, "Tool 't' failed: middleware 'outer' threw: panic: outer panics"}, []string{"inner::true", "outer:from inner:true"}, 1},
		{"outer replaces what inner kept of an error", true, linkReplace, linkKeep,
			view{warden.StatusFailed, warden.StageResult, true, true, "from outer"}, []string{"inner::true", "outer::true"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var saw []string
			var calls atomic.Int64
			tool := warden.Executable{Tool: warden.Tool{Name: resTool}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
				if tt.toolErr {
					return nil, errResTool
				}
				return "ok " + resSecret, nil
			}}
			g := mustBind(t, warden.Config{
				Ungoverned:    true,
				Middleware:    []*warden.Middleware{link("outer", tt.outer, &saw), link("inner", tt.inner, &saw)},
				ErrorHandlers: []*warden.ErrorHandler{errHandler("h", &calls, warden.Reraise{}, nil)},
			}, tool)
			out := call(t, g, resTool, `{}`)
			checkView(t, out, tt.want)
			if d := cmp.Diff(tt.wantSaw, saw); d != "" {
				t.Errorf("what the links saw (-want +got):\n%s", d)
			}
			if calls.Load() != tt.wantCalls {
				t.Errorf("error handler called %d times, want %d", calls.Load(), tt.wantCalls)
			}
		})
	}
}

// A tool's ResultCeiling holds for its own failure text too: an ErrorResult over the
// ceiling is refused like a result, and the call still failed.
func TestResultSide_CeilingHoldsForErrorResult(t *testing.T) {
	long := strings.Repeat("x", 40)
	tool := warden.Executable{Tool: warden.Tool{Name: resTool}, ResultCeiling: 10, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		return warden.ErrorResult{Text: long}, nil
	}}
	rec := &warden.Recorder{}
	g := mustBind(t, warden.Config{Ungoverned: true, Sinks: []warden.Sink{rec}}, tool)
	out := call(t, g, resTool, `{}`)
	checkView(t, out, view{Status: warden.StatusFailed, Stage: warden.StageCeiling, Executed: true, IsError: true, ModelText: spectext.CeilingText(resTool, 40, 10)})
	if out.Result != nil {
		t.Errorf("Outcome.Result = %#v, want nil (no data was returned)", out.Result)
	}
	if n := len(rec.Named(warden.EventResultRefused)); n != 1 {
		t.Errorf("%d result_refused events, want 1", n)
	}
}

// A link that edits a result in place instead of replacing it made a decision the
// ledger does not show: the model would read the text rendered before it ran (the
// secret it meant to remove), and Outcome.Result would no longer be what the tool
// returned. It fails closed.
func TestResultSide_InPlaceEditFailsClosed(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(map[bool]string{false: "edit and keep", true: "edit and replace with the same map"}[replace], func(t *testing.T) {
			tool := warden.Executable{Tool: warden.Tool{Name: resTool}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
				return map[string]any{"rows": 3, "ssn": resSecret}, nil
			}}
			scrub := &warden.Middleware{Name: "scrub", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
				m := r.Result.(map[string]any)
				delete(m, "ssn")
				if replace {
					return warden.ReplaceModelResult(m, "drop ssn")
				}
				return warden.KeepResult()
			}}
			g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{scrub}}, tool)
			out := call(t, g, resTool, `{}`)
			text := "Tool 't' failed: middleware 'scrub' threw: it changed the result in place (a link changes what the model reads with ReplaceModelResult)"
			checkView(t, out, view{Status: warden.StatusFailed, Stage: warden.StageResult, Executed: true, IsError: true, ModelText: text})
			if strings.Contains(out.ModelText, resSecret) {
				t.Errorf("the model read the secret: %q", out.ModelText)
			}
			if len(out.Ledger) != 1 || out.Ledger[0].Outcome != "deny" {
				t.Errorf("ledger %+v, want the link's denial", out.Ledger)
			}
		})
	}
	// Replacing with a new value, leaving the tool's result alone, is the way.
	tool := warden.Executable{Tool: warden.Tool{Name: resTool}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		return map[string]any{"rows": 3, "ssn": resSecret}, nil
	}}
	scrub := &warden.Middleware{Name: "scrub", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
		clean := map[string]any{}
		for k, v := range r.Result.(map[string]any) {
			if k != "ssn" {
				clean[k] = v
			}
		}
		return warden.ReplaceModelResult(clean, "drop ssn")
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{scrub}}, tool)
	out := call(t, g, resTool, `{}`)
	checkView(t, out, view{Status: warden.StatusRan, Stage: warden.StageResult, Executed: true, ModelText: `{"rows":3}`})
	if d := cmp.Diff(map[string]any{"rows": 3, "ssn": resSecret}, out.Result); d != "" {
		t.Errorf("Outcome.Result must keep what the tool returned (-want +got):\n%s", d)
	}
}

// explosive is a result whose encoding panics.
type explosive struct{}

func (explosive) MarshalJSON() ([]byte, error) { panic("boom") }

// A value that cannot be rendered never unwinds through the Guard: from the tool it is
// the tool's failure, from a link a link failure, from an error handler a replacement
// that converts nothing.
func TestResultSide_UnrenderableValuesFailClosed(t *testing.T) {
	const unrenderable = "the result could not be rendered: boom"
	tests := []struct {
		name string
		run  any
		link *warden.Middleware
		h    *warden.ErrorHandler
		want view
	}{
		{"from the tool", explosive{}, nil, nil,
			view{warden.StatusFailed, warden.StageExecute, true, true, "Tool 't' failed: " + unrenderable}},
		{"from a link", "fine", &warden.Middleware{Name: "rs", OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome {
			return warden.ReplaceModelResult(explosive{}, "why")
		}}, nil, view{warden.StatusFailed, warden.StageResult, true, true, "Tool 't' failed: middleware 'rs' threw: " + unrenderable}},
		{"from an error handler", explosive{}, nil, &warden.ErrorHandler{Name: "h", Handle: func(context.Context, warden.ToolError) (warden.ErrorDisposition, error) {
			return warden.ReplaceResult{Value: explosive{}}, nil
		}}, view{warden.StatusFailed, warden.StageExecute, true, true, "Tool 't' failed: " + unrenderable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := warden.Executable{Tool: warden.Tool{Name: resTool}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) { return tt.run, nil }}
			cfg := warden.Config{Ungoverned: true}
			if tt.link != nil {
				cfg.Middleware = []*warden.Middleware{tt.link}
			}
			if tt.h != nil {
				cfg.ErrorHandlers = []*warden.ErrorHandler{tt.h}
			}
			g := mustBind(t, cfg, tool)
			out := call(t, g, resTool, `{}`)
			checkView(t, out, tt.want)
			if tt.h != nil && len(out.SecondaryErrors) != 1 {
				t.Errorf("secondary errors %v, want the unrenderable replacement", out.SecondaryErrors)
			}
		})
	}
}

// panickyJournal panics in the methods named.
type panickyJournal struct{ begin, end bool }

func (j panickyJournal) Begin(context.Context, warden.Call, warden.Outcome) (warden.JournalRef, error) {
	if j.begin {
		panic("journal begin exploded")
	}
	return 1, nil
}

func (j panickyJournal) End(context.Context, warden.JournalRef, warden.Call, warden.Outcome) error {
	if j.end {
		panic("journal end exploded")
	}
	return nil
}

func (panickyJournal) Record(context.Context, warden.Call, warden.Outcome) error { return nil }

// A journal that panics never unwinds through the Guard: a panicking Begin refuses the
// call (it does not run), a panicking End is reported and the outcome stands.
func TestJournal_PanicsFailClosed(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	var p probe
	rec := &warden.Recorder{}
	g := mustBind(t, warden.Config{Ungoverned: true, Logger: quiet, Journal: panickyJournal{begin: true}, Sinks: []warden.Sink{rec}}, p.tool("t"))
	out := call(t, g, "t", `{}`)
	checkView(t, out, refusedAt(warden.StageExecute, warden.JournalUnavailableText("t")))
	if p.runs() != 0 {
		t.Error("the tool ran although Begin failed")
	}
	g = mustBind(t, warden.Config{Ungoverned: true, Logger: quiet, Journal: panickyJournal{end: true}, Sinks: []warden.Sink{rec}}, p.tool("t"))
	out = call(t, g, "t", `{}`)
	if out.Status != warden.StatusRan || p.runs() != 1 {
		t.Errorf("got %+v after a panicking End, want the call that ran", viewOf(out))
	}
	if n := len(rec.Named(warden.EventJournalFailed)); n != 2 {
		t.Errorf("%d journal.failed events, want 2 (begin, end)", n)
	}
}
