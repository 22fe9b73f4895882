package warden_test

// A property test of the whole pipeline: random chains of checkers, middleware (call
// side and result side), a tool that returns a result, an error, an ErrorResult or
// panics, and error handlers; an oracle computed from REFERENCE 1 and 2 and the Guard
// doc's "The result side" alone, and three properties:
//
//  1. a refused, halted or pending call never executed;
//  2. a call executed only when every stage consulted before execution allowed it (the
//     oracle says exactly when, and what the model reads, result side included);
//  3. the outcome is deterministic: the same pipeline gives the same status, stage and
//     model text twice.
//
// Pending calls are then approved, and the resumed outcome is checked against the oracle
// too (after approval the chain continues from the next link; a second ask is refused).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/spectext"
)

type checkerAnswer int

const (
	cAllow checkerAnswer = iota
	cDeny
	cAsk
	cHalt
	cError
	cPanic
	cTimeout
)

func (a checkerAnswer) String() string {
	return [...]string{"allow", "deny", "ask", "halt", "error", "panic", "timeout"}[a]
}

type mwAnswer int

const (
	mAllow mwAnswer = iota
	mTransform
	mDeny
	mAsk
	mPanic
)

func (a mwAnswer) String() string {
	return [...]string{"allow", "transform", "deny", "ask", "panic"}[a]
}

// resAnswer is a result-side link's answer; rNone means the link has no result hook.
type resAnswer int

const (
	rNone resAnswer = iota
	rKeep
	rReplace
	rDeny
	rPanic
	rInvalid
)

func (a resAnswer) String() string {
	return [...]string{"none", "keep", "replace", "deny", "panic", "invalid"}[a]
}

type toolAnswer int

const (
	tResult toolAnswer = iota
	tError
	tErrorResult
	tPanic
)

func (a toolAnswer) String() string {
	return [...]string{"result", "error", "ErrorResult", "panic"}[a]
}

type handlerAnswer int

const (
	hNil handlerAnswer = iota
	hReraise
	hReplace
	hFail
)

func (a handlerAnswer) String() string {
	return [...]string{"nil", "Reraise", "ReplaceResult", "fails"}[a]
}

type pipelineSpec struct {
	checkers []checkerAnswer
	mws      []mwAnswer
	results  []resAnswer // results[j] is middleware j's result hook
	post     resAnswer   // the tool's postprocessor
	tool     toolAnswer
	handlers []handlerAnswer
	canPause bool
}

func (s pipelineSpec) String() string {
	return fmt.Sprintf("checkers=%v middleware=%v results=%v post=%v tool=%v handlers=%v canPause=%v", s.checkers, s.mws, s.results, s.post, s.tool, s.handlers, s.canPause)
}

const propTool = "t"

var propBase = A(`{"x":1}`)

func randomSpec(r *rand.Rand) pipelineSpec {
	var s pipelineSpec
	for range r.IntN(4) {
		a := checkerAnswer(r.IntN(6)) // allow .. panic
		if r.IntN(100) < 2 {
			a = cTimeout // rare: each costs the 5ms deadline
		}
		s.checkers = append(s.checkers, a)
	}
	for range r.IntN(4) {
		s.mws = append(s.mws, mwAnswer(r.IntN(5)))
		s.results = append(s.results, resAnswer(r.IntN(6)))
	}
	s.post = resAnswer(r.IntN(6))
	s.tool = toolAnswer(r.IntN(4))
	for range r.IntN(3) {
		s.handlers = append(s.handlers, handlerAnswer(r.IntN(4)))
	}
	s.canPause = r.IntN(2) == 0
	return s
}

// resultHook answers a for the result link named name.
func resultHook(name string, a resAnswer) func(context.Context, warden.ToolResult) warden.ResultOutcome {
	if a == rNone {
		return nil
	}
	return func(context.Context, warden.ToolResult) warden.ResultOutcome {
		switch a {
		case rReplace:
			return warden.ReplaceModelResult(name+" replaced", "scrub "+name)
		case rDeny:
			return warden.DenyResult(name + " withholds")
		case rPanic:
			panic(name + " result panics")
		case rInvalid:
			return warden.ReplaceModelResult("x", "")
		}
		return warden.KeepResult()
	}
}

func (s pipelineSpec) build(t *testing.T, p *probe) *warden.Guard {
	t.Helper()
	cfg := warden.Config{Ungoverned: len(s.checkers) == 0, CanPause: s.canPause, CheckTimeout: 5 * time.Millisecond}
	for i, a := range s.checkers {
		name := fmt.Sprintf("c%d", i)
		switch a {
		case cAllow:
			cfg.Checkers = append(cfg.Checkers, always(name, warden.Decision{Effect: warden.Allow, RuleID: name}))
		case cDeny:
			cfg.Checkers = append(cfg.Checkers, always(name, warden.Decision{Effect: warden.Deny, RuleID: name, Rationale: name + " denies"}))
		case cAsk:
			cfg.Checkers = append(cfg.Checkers, always(name, warden.Decision{Effect: warden.Ask, RuleID: name, Rationale: name + " escalates"}))
		case cHalt:
			cfg.Checkers = append(cfg.Checkers, always(name, warden.Decision{Effect: warden.Halt, RuleID: name, Reason: "test:halt"}))
		case cError:
			cfg.Checkers = append(cfg.Checkers, newSync(name, func(context.Context, warden.Request) (warden.Decision, error) {
				return warden.Decision{Effect: warden.Allow}, errors.New(name + " failed")
			}))
		case cPanic:
			cfg.Checkers = append(cfg.Checkers, newSync(name, func(context.Context, warden.Request) (warden.Decision, error) { panic(name + " panics") }))
		case cTimeout:
			cfg.Checkers = append(cfg.Checkers, newAsync(name, func(ctx context.Context, _ warden.Request) (warden.Decision, error) {
				<-ctx.Done()
				return warden.Decision{Effect: warden.Allow}, nil // too late: must not count
			}))
		}
	}
	for j, a := range s.mws {
		name := fmt.Sprintf("m%d", j)
		key := fmt.Sprintf("t%d", j)
		var f func(context.Context, warden.ToolCall) warden.CallOutcome
		switch a {
		case mAllow:
			f = func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.AllowCall() }
		case mTransform:
			f = func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
				return warden.TransformCall(c.Args.With(key, true), "mark "+key)
			}
		case mDeny:
			f = func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.DenyCall(name + " denies") }
		case mAsk:
			f = func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.AskPerson(name+" asks", "") }
		case mPanic:
			f = func(context.Context, warden.ToolCall) warden.CallOutcome { panic(name + " panics") }
		}
		cfg.Middleware = append(cfg.Middleware, &warden.Middleware{Name: name, OnToolCall: f, OnToolResult: resultHook(name, s.results[j])})
	}
	for k, a := range s.handlers {
		name := fmt.Sprintf("h%d", k)
		cfg.ErrorHandlers = append(cfg.ErrorHandlers, &warden.ErrorHandler{Name: name, Handle: func(context.Context, warden.ToolError) (warden.ErrorDisposition, error) {
			switch a {
			case hReraise:
				return warden.Reraise{}, nil
			case hReplace:
				return warden.ReplaceResult{Value: name + " fallback"}, nil
			case hFail:
				return nil, errors.New(name + " broke")
			}
			return nil, nil
		}})
	}
	answer := s.tool
	tool := warden.Executable{Tool: warden.Tool{Name: propTool}, Post: resultHook(propTool+".postprocessor", s.post),
		Run: p.fn(func(_ context.Context, a warden.Args) (any, error) {
			switch answer {
			case tError:
				return nil, errors.New("t failed")
			case tErrorResult:
				return warden.ErrorResult{Text: "t says no to " + js(a)}, nil
			case tPanic:
				panic("t panics")
			}
			return js(a), nil
		})}
	return mustBind(t, cfg, tool)
}

// ran is the oracle for a call that executed with args: the tool's answer, then the
// result links innermost first (the postprocessor, then middleware in reverse), then
// the error handlers (the Guard doc, "The result side").
func (s pipelineSpec) ran(args warden.Args) expected {
	status, stage := warden.StatusRan, warden.StageExecute
	var text, toolErr string
	switch s.tool {
	case tResult:
		text = js(args)
	case tError:
		toolErr = "t failed"
	case tErrorResult:
		text, status = "t says no to "+js(args), warden.StatusFailed
	case tPanic:
		toolErr = "tool panicked: t panics"
	}
	type link struct {
		name string
		a    resAnswer
	}
	chain := []link{{propTool + ".postprocessor", s.post}}
	for j := len(s.results) - 1; j >= 0; j-- {
		chain = append(chain, link{fmt.Sprintf("m%d", j), s.results[j]})
	}
	decided, linkFailure := false, ""
walk:
	for _, l := range chain {
		switch l.a {
		case rReplace:
			text, decided, stage = l.name+" replaced", true, warden.StageResult
		case rDeny:
			text, decided, stage = l.name+" withholds", true, warden.StageResult
			break walk
		case rPanic:
			linkFailure, decided, stage = spectext.ThrewText(l.name, "panic: "+l.name+" result panics"), false, warden.StageResult
			break walk
		case rInvalid:
			linkFailure, decided, stage = spectext.ThrewText(l.name, "transform without a why"), false, warden.StageResult
			break walk
		}
	}
	if toolErr == "" && linkFailure == "" {
		return expected{status, stage, text, true}
	}
	for k, h := range s.handlers {
		if h == hReplace && !decided {
			if s.tool == tErrorResult {
				status = warden.StatusFailed
			}
			return expected{status, stage, fmt.Sprintf("h%d fallback", k), true}
		}
	}
	if decided {
		return expected{warden.StatusFailed, stage, text, true}
	}
	if linkFailure != "" {
		return expected{warden.StatusFailed, stage, "Tool '" + propTool + "' failed: " + linkFailure, true}
	}
	return expected{warden.StatusFailed, stage, "Tool '" + propTool + "' failed: " + toolErr, true}
}

// expected is the oracle's answer.
type expected struct {
	status   warden.Status
	stage    warden.Stage
	text     string // "" for pending: the waiting text is not specified
	executed bool
}

// oracle computes what the pipeline must do. approved says a person approved the
// pending decision of a first run. REFERENCE section 7: "A middleware ask does not stop
// the chain where it is raised: the link's question is recorded, the remaining links
// run (a later deny still denies, and then nobody is asked), then pass S2 and argument
// validation; only then, at step 7, is the person asked, about the final args".
func (s pipelineSpec) oracle(approved bool) expected {
	firstAsk := -1
	for i, a := range s.checkers {
		switch a {
		case cDeny:
			return expected{warden.StatusRefused, warden.StagePermission, fmt.Sprintf("[permission denied: c%d denies]", i), false}
		case cHalt:
			return expected{warden.StatusHalted, warden.StagePermission, "Tool '" + propTool + "' is not available in this context.", false}
		case cError, cPanic, cTimeout:
			return expected{warden.StatusRefused, warden.StagePermission, warden.UnauthorizedText(propTool), false}
		case cAsk:
			if firstAsk < 0 {
				firstAsk = i
			}
		}
	}
	args := propBase
	firstMwAsk := -1
	for j, a := range s.mws {
		name := fmt.Sprintf("m%d", j)
		switch a {
		case mTransform:
			args = args.With(fmt.Sprintf("t%d", j), true)
		case mDeny:
			return expected{warden.StatusRefused, warden.StageMiddleware, name + " denies", false}
		case mPanic:
			return expected{warden.StatusRefused, warden.StageMiddleware, spectext.ThrewText(name, "panic: "+name+" panics"), false}
		case mAsk:
			if firstMwAsk < 0 {
				firstMwAsk = j
			}
		}
	}
	// S2 answers as S1 did (the checkers' answers do not depend on the args).
	if firstAsk < 0 && firstMwAsk < 0 {
		return s.ran(args)
	}
	stage := warden.StageHuman // an escalation: the pending kind is escalate
	if firstAsk < 0 {
		stage = warden.StageMiddleware // only middleware asked: kind ask
	}
	switch {
	case approved:
		// The approval answers the one question, asked about the final arguments.
		return s.ran(args)
	case s.canPause:
		return expected{warden.StatusPending, stage, "", false}
	case firstMwAsk >= 0:
		name := fmt.Sprintf("m%d", firstMwAsk)
		return expected{warden.StatusRefused, warden.StageMiddleware, spectext.NoPauseText(name, name+" asks"), false}
	}
	return expected{warden.StatusRefused, warden.StageHuman,
		fmt.Sprintf("[permission denied: Permission escalation required for %s.: c%d escalates. No escalation handler configured.]", propTool, firstAsk), false}
}

func checkAgainstOracle(t *testing.T, i int, s pipelineSpec, phase string, out warden.Outcome, err error, runsBefore, runsAfter int, want expected) (ok bool) {
	t.Helper()
	failed := t.Failed()
	defer func() { ok = t.Failed() == failed }()
	executed := runsAfter - runsBefore
	if out.Status != warden.StatusRan && out.Status != warden.StatusFailed && executed != 0 {
		t.Errorf("#%d %s %s: status %s but the tool executed %d times", i, s, phase, out.Status, executed)
	}
	if out.Executed != (executed == 1) || executed > 1 {
		t.Errorf("#%d %s %s: Outcome.Executed %v, tool ran %d times", i, s, phase, out.Executed, executed)
	}
	if out.Status != want.status || out.Stage != want.stage || out.Executed != want.executed {
		t.Errorf("#%d %s %s: got %s at %s executed=%v (%q), want %s at %s executed=%v (%q)",
			i, s, phase, out.Status, out.Stage, out.Executed, out.ModelText, want.status, want.stage, want.executed, want.text)
		return
	}
	if want.text != "" && out.ModelText != want.text {
		t.Errorf("#%d %s %s: model text %q, want %q", i, s, phase, out.ModelText, want.text)
	}
	var halt *warden.PolicyHaltError
	if (want.status == warden.StatusHalted) != errors.As(err, &halt) {
		t.Errorf("#%d %s %s: error %v for status %s", i, s, phase, err, out.Status)
	}
	if want.status != warden.StatusHalted && err != nil {
		t.Errorf("#%d %s %s: unexpected error %v", i, s, phase, err)
	}
	if (want.status == warden.StatusPending) != (out.Pending != nil) {
		t.Errorf("#%d %s %s: status %s with pending %v", i, s, phase, out.Status, out.Pending)
	}
	return
}

func TestProperty_RandomPipelines(t *testing.T) {
	const n = 2000
	r := rand.New(rand.NewPCG(0x5eed, 2026))
	stats := map[warden.Status]int{}
	resumed, timeouts := 0, 0
	for i := range n {
		s := randomSpec(r)
		for _, a := range s.checkers {
			if a == cTimeout {
				timeouts++
			}
		}
		var p probe
		g := s.build(t, &p)
		want := s.oracle(false)

		out1, err1 := g.Call(context.Background(), warden.Call{Tool: propTool, Args: propBase})
		ok := checkAgainstOracle(t, i, s, "first run", out1, err1, 0, p.runs(), want)
		before := p.runs()
		out2, err2 := g.Call(context.Background(), warden.Call{Tool: propTool, Args: propBase})
		checkAgainstOracle(t, i, s, "second run", out2, err2, before, p.runs(), want)
		if out1.Status != out2.Status || out1.Stage != out2.Stage || out1.ModelText != out2.ModelText {
			t.Errorf("#%d %s: not deterministic: %s/%s/%q then %s/%s/%q", i, s, out1.Status, out1.Stage, out1.ModelText, out2.Status, out2.Stage, out2.ModelText)
		}
		stats[out1.Status]++
		if out1.Pending == nil || !ok {
			continue
		}
		// Approve the pending decision and check the rest of the pipeline.
		resumed++
		before = p.runs()
		pd := *out1.Pending
		out3, err3 := g.Resume(context.Background(), pd, warden.Approved{By: "prop", Digest: pd.ApprovalDigest()}, owner(pd))
		wantResumed := s.oracle(true)
		checkAgainstOracle(t, i, s, "after approval", out3, err3, before, p.runs(), wantResumed)
	}
	t.Logf("outcomes over %d pipelines: %v; %d approvals resumed; %d timeout answers", n, stats, resumed, timeouts)
	if timeouts == 0 {
		t.Error("the generator never produced a timeout answer")
	}
	for _, st := range []warden.Status{warden.StatusRan, warden.StatusRefused, warden.StatusHalted, warden.StatusPending, warden.StatusFailed} {
		if stats[st] == 0 {
			t.Errorf("the generator never produced a %s outcome", st)
		}
	}
}

// TestProperty_RandomResultSides is the same oracle over pipelines that always execute
// (checkers allow, call-side middleware allows or transforms), so that every one
// exercises the result side: the tool's answer, random result links and the
// postprocessor, and random error handlers.
func TestProperty_RandomResultSides(t *testing.T) {
	const n = 2000
	r := rand.New(rand.NewPCG(0x7e5, 2026))
	paths := map[string]int{}
	for i := range n {
		s := randomSpec(r)
		for k := range s.checkers {
			s.checkers[k] = cAllow
		}
		for k := range s.mws {
			s.mws[k] = []mwAnswer{mAllow, mTransform}[r.IntN(2)]
		}
		var p probe
		g := s.build(t, &p)
		want := s.oracle(false)
		out, err := g.Call(context.Background(), warden.Call{Tool: propTool, Args: propBase})
		checkAgainstOracle(t, i, s, "result side", out, err, 0, p.runs(), want)
		paths[fmt.Sprintf("%s/%s/%v", s.tool, out.Status, out.Stage)]++
		if strings.Contains(out.ModelText, "t failed") && (s.post >= rReplace || slices.ContainsFunc(s.results, func(a resAnswer) bool { return a >= rReplace })) {
			// A result link that replaced, denied or failed saw the error: whatever the
			// model reads then, it is never the raw tool error.
			t.Errorf("#%d %s: the model read the raw tool error %q past a deciding or failing link", i, s, out.ModelText)
		}
	}
	t.Logf("result-side paths over %d pipelines: %v", n, paths)
	for _, k := range []string{"result/ran/execute", "result/ran/result", "result/failed/result", "error/failed/execute", "error/failed/result", "error/ran/execute", "error/ran/result", "ErrorResult/failed/execute", "ErrorResult/failed/result", "panic/failed/result"} {
		if paths[k] == 0 {
			t.Errorf("the generator never produced the path %s", k)
		}
	}
}
