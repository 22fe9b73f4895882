package warden_test

// Black-box tests of the governed call pipeline (REFERENCE.md sections 1, 2, 5, 6, 9):
// the double security pass, role policies at pipeline level, middleware, the
// interceptor plan, cancellation and concurrent use. The helpers at the top are shared
// by every *_test.go file of package warden_test.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/schema"
)

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

// A parses an Args literal.
func A(s string) warden.Args { return warden.MustParseArgs(s) }

// js renders Args as compact JSON in key order.
func js(a warden.Args) string { return string(a.AppendJSON(nil)) }

// checker is a named, recording test checker. It is NOT [warden.Synchronous]: the
// Guard runs it under Config.CheckTimeout. Use syncChecker for one the Guard calls
// directly.
type checker struct {
	name string
	caps []warden.Capability
	fn   func(ctx context.Context, req warden.Request) (warden.Decision, error)

	mu   sync.Mutex
	seen []warden.Request
}

func (c *checker) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	c.mu.Lock()
	c.seen = append(c.seen, req)
	c.mu.Unlock()
	return c.fn(ctx, req)
}

func (c *checker) Governs(cp warden.Capability) bool { return slices.Contains(c.caps, cp) }
func (c *checker) Name() string                      { return c.name }

func (c *checker) requests() []warden.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

func (c *checker) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// syncChecker is a checker the Guard calls directly, without a deadline.
type syncChecker struct{ checker }

func (*syncChecker) Synchronous() bool { return true }

var (
	_ warden.Checker     = (*checker)(nil)
	_ warden.Namer       = (*checker)(nil)
	_ warden.Synchronous = (*syncChecker)(nil)
)

func newAsync(name string, fn func(context.Context, warden.Request) (warden.Decision, error)) *checker {
	return &checker{name: name, fn: fn}
}

func newSync(name string, fn func(context.Context, warden.Request) (warden.Decision, error)) *syncChecker {
	return &syncChecker{checker{name: name, fn: fn}}
}

// always answers d to every request.
func always(name string, d warden.Decision) *syncChecker {
	return newSync(name, func(context.Context, warden.Request) (warden.Decision, error) { return d, nil })
}

func allowChecker(name string) *syncChecker {
	return always(name, warden.Decision{Effect: warden.Allow, RuleID: name + ".allow"})
}

// probe is a tool body that records every execution.
type probe struct {
	mu    sync.Mutex
	args  []warden.Args
	creds []*warden.Credential
}

// fn returns a ToolFunc that records the call and then answers with result (nil result
// function: "ran <args json>").
func (p *probe) fn(result func(ctx context.Context, a warden.Args) (any, error)) warden.ToolFunc {
	return func(ctx context.Context, a warden.Args, cred *warden.Credential) (any, error) {
		p.mu.Lock()
		p.args = append(p.args, a)
		p.creds = append(p.creds, cred)
		p.mu.Unlock()
		if result == nil {
			return "ran " + js(a), nil
		}
		return result(ctx, a)
	}
}

// tool returns a plain tool named name whose body is p.
func (p *probe) tool(name string) warden.Executable {
	return warden.Executable{Tool: warden.Tool{Name: name, Source: "local"}, Run: p.fn(nil)}
}

func (p *probe) runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.args)
}

func (p *probe) last() warden.Args {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.args) == 0 {
		return warden.Args{}
	}
	return p.args[len(p.args)-1]
}

// mustBind registers tools in a fresh registry and binds cfg.
func mustBind(tb testing.TB, cfg warden.Config, tools ...warden.Executable) *warden.Guard {
	tb.Helper()
	r := &warden.Registry{}
	for _, x := range tools {
		if err := r.Register(x); err != nil {
			tb.Fatalf("Register(%q): %v", x.Name, err)
		}
	}
	g, err := r.Bind(cfg)
	if err != nil {
		tb.Fatalf("Bind: %v", err)
	}
	return g
}

// call runs one call with a background context and fails the test on an error.
func call(tb testing.TB, g *warden.Guard, tool, args string) warden.Outcome {
	tb.Helper()
	out, err := g.Call(context.Background(), warden.Call{ID: "call-1", Tool: tool, Args: A(args)})
	if err != nil {
		tb.Fatalf("Call(%s %s): unexpected error %v", tool, args, err)
	}
	return out
}

func mustRules(tb testing.TB, cfg policy.RuleConfig) *policy.RulePolicy {
	tb.Helper()
	p, err := policy.NewRules(cfg)
	if err != nil {
		tb.Fatalf("policy.NewRules: %v", err)
	}
	return p
}

// transform returns call-side middleware that rewrites the arguments with f.
func transform(name, why string, f func(warden.Args) warden.Args) *warden.Middleware {
	return &warden.Middleware{Name: name, OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
		return warden.TransformCall(f(c.Args), why)
	}}
}

// passThrough returns call-side middleware that allows unchanged and counts its calls.
func passThrough(name string, n *atomic.Int64) *warden.Middleware {
	return &warden.Middleware{Name: name, OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
		if n != nil {
			n.Add(1)
		}
		return warden.AllowCall()
	}}
}

// view is the part of an Outcome most tests compare.
type view struct {
	Status    warden.Status
	Stage     warden.Stage
	Executed  bool
	IsError   bool
	ModelText string
}

func viewOf(o warden.Outcome) view {
	return view{Status: o.Status, Stage: o.Stage, Executed: o.Executed, IsError: o.IsError, ModelText: o.ModelText}
}

func refusedAt(stage warden.Stage, text string) view {
	return view{Status: warden.StatusRefused, Stage: stage, IsError: true, ModelText: text}
}

func checkView(tb testing.TB, got warden.Outcome, want view) {
	tb.Helper()
	if d := cmp.Diff(want, viewOf(got)); d != "" {
		tb.Errorf("outcome mismatch (-want +got):\n%s", d)
	}
}

// checkRow is the part of a CheckRecord the role-policy tests compare.
type checkRow struct {
	Pass       string
	Capability warden.Capability
	Target     string
	Effect     warden.Effect
	RuleID     string
}

func checkRows(cs []warden.CheckRecord) []checkRow {
	out := make([]checkRow, 0, len(cs))
	for _, c := range cs {
		out = append(out, checkRow{c.Pass, c.Capability, c.Target, c.Decision.Effect, c.Decision.RuleID})
	}
	return out
}

// errHandler returns an error handler that counts its calls and answers disp.
func errHandler(name string, n *atomic.Int64, disp warden.ErrorDisposition, herr error) *warden.ErrorHandler {
	return &warden.ErrorHandler{Name: name, Handle: func(context.Context, warden.ToolError) (warden.ErrorDisposition, error) {
		n.Add(1)
		return disp, herr
	}}
}

// ---------------------------------------------------------------------------------
// 1. Double security pass (ADR D4, REFERENCE 1.4)
// ---------------------------------------------------------------------------------

func TestDoubleSecurityPass_TransformCannotTurnAllowedIntoDenied(t *testing.T) {
	for _, name := range []string{"bash", "bash_tool"} {
		t.Run(name, func(t *testing.T) {
			rules := mustRules(t, policy.RuleConfig{
				Allow: map[string][]string{"bash": {"echo *"}},
				Deny:  map[string][]string{"bash": {"rm *"}},
			})
			var p probe
			rewrite := transform("rewrite", "retarget the command", func(a warden.Args) warden.Args {
				return a.With("command", "rm /tmp/important")
			})
			g := mustBind(t, warden.Config{Checkers: []warden.Checker{rules}, Middleware: []*warden.Middleware{rewrite}}, p.tool(name))

			out := call(t, g, name, `{"command":"echo ok"}`)
			checkView(t, out, refusedAt(warden.StageFinalCheck, "[permission denied: denied by rule: rm *]"))
			if got, want := out.Decision.Rationale, "denied by rule: rm *"; got != want {
				t.Errorf("rationale: got %q, want %q", got, want)
			}
			if got, want := out.RuleID, "rm *"; got != want {
				t.Errorf("rule id: got %q, want %q", got, want)
			}
			if p.runs() != 0 {
				t.Errorf("tool ran %d times, want 0", p.runs())
			}
			// S1 allowed the original command; S2 judged the rewritten one.
			want := []checkRow{
				{"s1", warden.CapToolCall, name, warden.Allow, "echo *"},
				{"s2", warden.CapToolCall, name, warden.Deny, "rm *"},
			}
			if d := cmp.Diff(want, checkRows(out.Checks)); d != "" {
				t.Errorf("checks (-want +got):\n%s", d)
			}
		})
	}
}

func TestDoubleSecurityPass_AllowedCommandRunsWithoutTransform(t *testing.T) {
	rules := mustRules(t, policy.RuleConfig{
		Allow: map[string][]string{"bash": {"echo *"}},
		Deny:  map[string][]string{"bash": {"rm *"}},
	})
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{rules}}, p.tool("bash"))
	out := call(t, g, "bash", `{"command":"echo ok"}`)
	if out.Status != warden.StatusRan || p.runs() != 1 {
		t.Fatalf("got status %s, runs %d; want ran, 1 (%q)", out.Status, p.runs(), out.ModelText)
	}
}

func TestDoubleSecurityPass_CheckCount(t *testing.T) {
	var mwCalls atomic.Int64
	noop := passThrough("noop", &mwCalls)
	resultOnly := &warden.Middleware{Name: "result-only", OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome { return warden.KeepResult() }}
	tests := []struct {
		name       string
		middleware []*warden.Middleware
		pre        bool
		want       int
	}{
		{"no transform", nil, false, 1},
		{"one no-op transform", []*warden.Middleware{noop}, false, 2},
		{"result-side middleware only", []*warden.Middleware{resultOnly}, false, 1},
		{"tool preprocessor", nil, true, 2},
		{"three no-op transforms", []*warden.Middleware{passThrough("a", nil), passThrough("b", nil), passThrough("c", nil)}, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counter := allowChecker("counter")
			var p probe
			tool := p.tool("t")
			if tt.pre {
				tool.Pre = func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.AllowCall() }
			}
			g := mustBind(t, warden.Config{Checkers: []warden.Checker{counter}, Middleware: tt.middleware}, tool)
			out := call(t, g, "t", `{"x":1}`)
			if out.Status != warden.StatusRan {
				t.Fatalf("status %s, want ran (%q)", out.Status, out.ModelText)
			}
			if got := counter.count(); got != tt.want {
				t.Errorf("checker ran %d times, want %d", got, tt.want)
			}
		})
	}
}

func TestDoubleSecurityPass_PathGuard(t *testing.T) {
	// Only relative paths inside the workspace are allowed.
	guard := newSync("workspace-guard", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		p, _ := r.Args.String("path")
		if strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
			return warden.Decision{Effect: warden.Deny, RuleID: "outside-workspace", Rationale: "path outside the workspace: " + p}, nil
		}
		return warden.Decision{Effect: warden.Allow, RuleID: "inside-workspace"}, nil
	})
	var p probe
	evil := transform("evil", "read the password file", func(a warden.Args) warden.Args { return a.With("path", "/etc/passwd") })
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{guard}, Middleware: []*warden.Middleware{evil}}, p.tool("reader"))
	out := call(t, g, "reader", `{"path":"src/foo.py"}`)
	checkView(t, out, refusedAt(warden.StageFinalCheck, "[permission denied: path outside the workspace: /etc/passwd]"))
	if p.runs() != 0 {
		t.Errorf("tool ran %d times, want 0", p.runs())
	}
	if got := js(out.Args); got != `{"path":"/etc/passwd"}` {
		t.Errorf("outcome args: got %s, want the transformed args", got)
	}
}

func TestDoubleSecurityPass_S2ReplacementFailsClosed(t *testing.T) {
	var n atomic.Int64
	unstable := newSync("unstable", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		k := n.Add(1)
		a := r.Args.With("path", fmt.Sprintf("normalized-%d", k))
		return warden.Decision{Effect: warden.Allow, Args: &a}, nil
	})
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{unstable}}, p.tool("reader"))
	out := call(t, g, "reader", `{"path":"a"}`)
	const text = "security hook changed arguments during final validation"
	checkView(t, out, refusedAt(warden.StageFinalCheck, "[permission denied: "+text+"]"))
	if out.Decision.Rationale != text {
		t.Errorf("rationale: got %q, want %q", out.Decision.Rationale, text)
	}
	if p.runs() != 0 {
		t.Errorf("tool ran %d times, want 0", p.runs())
	}
	if n.Load() != 2 {
		t.Errorf("checker asked %d times, want 2 (an S1 replacement forces S2)", n.Load())
	}
}

func TestDoubleSecurityPass_S2MayAffirmAStableReplacement(t *testing.T) {
	stable := newSync("lowercase", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		p, _ := r.Args.String("path")
		a := r.Args.With("path", strings.ToLower(p))
		return warden.Decision{Effect: warden.Allow, Args: &a}, nil
	})
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{stable}}, p.tool("reader"))
	out := call(t, g, "reader", `{"path":"SRC/Main.go"}`)
	if out.Status != warden.StatusRan {
		t.Fatalf("status %s, want ran (%q)", out.Status, out.ModelText)
	}
	if got := js(p.last()); got != `{"path":"src/main.go"}` {
		t.Errorf("tool saw %s, want the normalized args", got)
	}
	if got := stable.count(); got != 2 {
		t.Errorf("checker asked %d times, want 2", got)
	}
}

func TestDoubleSecurityPass_ReplacementSeenByLaterChecker(t *testing.T) {
	rewriter := newSync("rewriter", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		a := r.Args.With("action", "write")
		return warden.Decision{Effect: warden.Allow, Args: &a}, nil
	})
	observer := allowChecker("observer")
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{rewriter, observer}}, p.tool("notes"))
	out := call(t, g, "notes", `{"action":"read","id":"7"}`)
	if out.Status != warden.StatusRan {
		t.Fatalf("status %s, want ran (%q)", out.Status, out.ModelText)
	}
	var actions []string
	for _, r := range observer.requests() {
		a, _ := r.Args.String("action")
		actions = append(actions, string(r.Capability)+":"+a)
	}
	// S1 and S2 (forced by the replacement) both see the replacement.
	if d := cmp.Diff([]string{"tool_call:write", "tool_call:write"}, actions); d != "" {
		t.Errorf("observer saw (-want +got):\n%s", d)
	}
	if got := js(p.last()); got != `{"action":"write","id":"7"}` {
		t.Errorf("tool saw %s", got)
	}
}

func TestDoubleSecurityPass_ErroringCheckerDeniesAndSkipsErrorHandlers(t *testing.T) {
	rec := &warden.Recorder{}
	failing := newSync("failing", func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{Effect: warden.Allow}, errors.New("policy store unreachable")
	})
	var handled atomic.Int64
	var p probe
	g := mustBind(t, warden.Config{
		Checkers:      []warden.Checker{failing},
		ErrorHandlers: []*warden.ErrorHandler{errHandler("rescue", &handled, warden.ReplaceResult{Value: "rescued"}, nil)},
		Sinks:         []warden.Sink{rec},
	}, p.tool("t"))
	out := call(t, g, "t", `{}`)
	checkView(t, out, refusedAt(warden.StagePermission, warden.UnauthorizedText("t")))
	if got, want := out.Decision.Rationale, "permission-checker threw: policy store unreachable"; got != want {
		t.Errorf("rationale: got %q, want %q", got, want)
	}
	if !out.Decision.Fault {
		t.Error("Decision.Fault is false, want true (a checker error is a fault)")
	}
	if p.runs() != 0 || handled.Load() != 0 {
		t.Errorf("tool ran %d times, error handlers %d times; want 0, 0", p.runs(), handled.Load())
	}
	checks := rec.Named(warden.EventPermissionCheck)
	if len(checks) != 1 || checks[0].Rationale != "permission-checker threw: policy store unreachable" || checks[0].Effect != warden.Deny {
		t.Errorf("permission.check events: got %+v", checks)
	}
}

// ---------------------------------------------------------------------------------
// 2. Role policy at pipeline level (governance page, REFERENCE 4)
// ---------------------------------------------------------------------------------

func saveNoteFixture(t *testing.T, role string) (*policy.RolePolicy, *probe, warden.Executable) {
	t.Helper()
	roles := map[string][]string{"readonly": {"save_note"}, "admin": {"save_note"}}
	rules := &policy.RoleRules{Capabilities: map[string][]warden.Capability{
		"readonly": {warden.CapMemoryRead},
		"admin":    {warden.CapMemoryRead, warden.CapMemoryWrite, warden.CapUserData, warden.CapExternalNet},
	}}
	rp, err := policy.FromRoles(roles, role, rules)
	if err != nil {
		t.Fatalf("FromRoles: %v", err)
	}
	p := &probe{}
	tool := warden.Executable{
		Tool: warden.Tool{
			Name:         "save_note",
			Description:  "Save a note about the user.",
			Capabilities: []warden.Capability{warden.CapMemoryWrite, warden.CapUserData},
		},
		Run: p.fn(nil),
	}
	return rp, p, tool
}

func TestRolePolicy_ReadonlyMayNotWriteMemory(t *testing.T) {
	rp, p, tool := saveNoteFixture(t, "readonly")
	rec := &warden.Recorder{}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{rp}, Sinks: []warden.Sink{rec}}, tool)
	out := call(t, g, "save_note", `{"note":"likes tea"}`)
	checkView(t, out, refusedAt(warden.StagePermission,
		"[permission denied: The 'readonly' role may not exercise 'memory_write', which tool 'save_note' declares.]"))
	if p.runs() != 0 {
		t.Errorf("executed %d times, want 0", p.runs())
	}
	want := []checkRow{
		{"s1", warden.CapToolCall, "save_note", warden.Allow, "readonly.allowlist"},
		{"s1", warden.CapMemoryWrite, "save_note", warden.Deny, "readonly.capabilities.miss"},
	}
	if d := cmp.Diff(want, checkRows(out.Checks)); d != "" {
		t.Errorf("checks (-want +got):\n%s", d)
	}
	var denials []checkRow
	for _, e := range rec.Named(warden.EventPermissionCheck) {
		if e.Capability == warden.CapUserData {
			t.Errorf("user_data was asked after the memory_write refusal: %+v", e)
		}
		if e.Effect != warden.Allow {
			denials = append(denials, checkRow{e.Pass, e.Capability, e.Target, e.Effect, e.RuleID})
		}
	}
	if d := cmp.Diff([]checkRow{{"s1", warden.CapMemoryWrite, "save_note", warden.Deny, "readonly.capabilities.miss"}}, denials); d != "" {
		t.Errorf("denial events (-want +got):\n%s", d)
	}
}

func TestRolePolicy_AdminRuns(t *testing.T) {
	rp, p, tool := saveNoteFixture(t, "admin")
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{rp}}, tool)
	out := call(t, g, "save_note", `{"note":"likes tea"}`)
	if out.Status != warden.StatusRan || !out.Executed || p.runs() != 1 {
		t.Fatalf("got status %s executed %v runs %d; want ran, true, 1 (%q)", out.Status, out.Executed, p.runs(), out.ModelText)
	}
	want := []checkRow{
		{"s1", warden.CapToolCall, "save_note", warden.Allow, "admin.allowlist"},
		{"s1", warden.CapMemoryWrite, "save_note", warden.Allow, "admin.allowlist"},
		{"s1", warden.CapUserData, "save_note", warden.Allow, "admin.allowlist"},
	}
	if d := cmp.Diff(want, checkRows(out.Checks)); d != "" {
		t.Errorf("checks (-want +got):\n%s", d)
	}
}

func TestRolePolicy_AuthorizerOutage(t *testing.T) {
	_, p, tool := saveNoteFixture(t, "admin")
	down := newSync("authorizer-that-is-down", func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{}, errors.New("simulated authorizer outage")
	})
	rec := &warden.Recorder{}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{down}, Sinks: []warden.Sink{rec}}, tool)
	out, err := g.Call(context.Background(), warden.Call{Tool: "save_note", Args: A(`{"note":"x"}`)})
	if err != nil {
		t.Fatalf("Call returned %v; the run must continue (refusal is data)", err)
	}
	checkView(t, out, refusedAt(warden.StagePermission, warden.UnauthorizedText("save_note")))
	if p.runs() != 0 {
		t.Errorf("executed %d times, want 0", p.runs())
	}
	ev := rec.Named(warden.EventPermissionCheck)
	if len(ev) != 1 {
		t.Fatalf("got %d permission.check events, want 1", len(ev))
	}
	if got, want := ev[0].Rationale, "permission-checker threw: simulated authorizer outage"; got != want {
		t.Errorf("event rationale: got %q, want %q", got, want)
	}
	if got := ev[0].Checker; got != "authorizer-that-is-down" {
		t.Errorf("event checker: got %q, want the Namer's name", got)
	}
}

func exfiltrationGuard() *syncChecker {
	return always("exfiltration-guard", warden.Decision{
		Effect:    warden.Halt,
		RuleID:    "no-bulk-export-v3",
		Reason:    "security:exfiltration",
		Rationale: "bulk write to a customer record outside an approved workflow",
		TellLLM:   "That action needs a human approver. Stopping here and handing off.",
	})
}

func TestRolePolicy_HaltEndsTheRun(t *testing.T) {
	_, p, tool := saveNoteFixture(t, "admin")
	rec := &warden.Recorder{}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{exfiltrationGuard()}, Sinks: []warden.Sink{rec}}, tool)
	seq := []warden.Step{{Tool: "lookup", Args: A(`{"id":1}`)}, {Tool: "lookup", Args: A(`{"id":2}`)}}
	out, err := g.Call(context.Background(), warden.Call{ID: "c9", Tool: "save_note", Args: A(`{"note":"all customers"}`), Iteration: 3, Sequence: seq})
	var halt *warden.PolicyHaltError
	if !errors.As(err, &halt) {
		t.Fatalf("Call error: got %v (%T), want *PolicyHaltError", err, err)
	}
	const tell = "That action needs a human approver. Stopping here and handing off."
	wantErr := &warden.PolicyHaltError{
		Reason: "security:exfiltration", TellLLM: tell, RuleID: "no-bulk-export-v3", CheckerID: "exfiltration-guard",
		Iteration: 3, Proposed: warden.Step{Tool: "save_note", Args: A(`{"note":"all customers"}`)}, Sequence: seq,
	}
	if d := cmp.Diff(wantErr, halt, cmp.Comparer(warden.Args.Equal)); d != "" {
		t.Errorf("halt error (-want +got):\n%s", d)
	}
	checkView(t, out, view{Status: warden.StatusHalted, Stage: warden.StagePermission, IsError: true, ModelText: tell})
	if p.runs() != 0 {
		t.Errorf("executed %d times, want 0", p.runs())
	}
	halts := rec.Named(warden.EventPermissionHalt)
	if len(halts) != 1 {
		t.Fatalf("got %d halt events, want exactly 1", len(halts))
	}
	h := halts[0]
	got := []any{h.Reason, h.TellLLM, h.Checker, h.Target, h.RuleID, h.Iteration, h.SequenceN, h.CallID}
	want := []any{"security:exfiltration", tell, "exfiltration-guard", "save_note", "no-bulk-export-v3", 3, 2, "c9"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("halt event (-want +got):\n%s", d)
	}
	// The halt event comes before the end of the call.
	names := eventNames(rec.Events())
	if hi, ei := slices.Index(names, warden.EventPermissionHalt), slices.Index(names, warden.EventToolEnd); hi < 0 || ei < hi {
		t.Errorf("event order %v: want halt before tool.end", names)
	}
}

func eventNames(es []warden.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
	}
	return out
}

func TestRolePolicy_OperatorErrorTextNeverReachesTheModel(t *testing.T) {
	const secret = "ECONNREFUSED 10.0.3.14 policy-svc.internal"
	failing := newSync("remote-pdp", func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{}, errors.New("dial tcp: " + secret)
	})
	rec := &warden.Recorder{}
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{failing}, Sinks: []warden.Sink{rec}}, p.tool("save_note"))
	out := call(t, g, "save_note", `{"note":"x"}`)
	if strings.Contains(out.ModelText, "ECONNREFUSED") || strings.Contains(out.ModelText, "10.0.3.14") {
		t.Errorf("model text leaks operator detail: %q", out.ModelText)
	}
	ev := rec.Named(warden.EventPermissionCheck)
	if len(ev) != 1 || !strings.Contains(ev[0].Rationale, secret) {
		t.Errorf("event rationale does not carry the operator's error: %+v", ev)
	}
}

func TestRolePolicy_WhatTheModelReads(t *testing.T) {
	tests := []struct {
		name      string
		d         warden.Decision
		wantText  string
		wantState warden.Status
		notText   string
	}{
		{"deny with rationale", warden.Decision{Effect: warden.Deny, Rationale: "notes are read-only today"},
			"[permission denied: notes are read-only today]", warden.StatusRefused, ""},
		{"deny without rationale", warden.Decision{Effect: warden.Deny, Reason: "security:policy"},
			"[permission denied: policy]", warden.StatusRefused, "security:policy"},
		{"deny with tellLLM", warden.Decision{Effect: warden.Deny, Rationale: "operator text", TellLLM: "Ask the user first."},
			"Ask the user first.", warden.StatusRefused, "operator text"},
		{"halt without tellLLM", warden.Decision{Effect: warden.Halt, Reason: "security:exfiltration", Rationale: "bulk export"},
			"Tool 'save_note' is not available in this context.", warden.StatusHalted, "security:exfiltration"},
		{"halt with tellLLM", warden.Decision{Effect: warden.Halt, Reason: "security:exfiltration", TellLLM: "Handing off."},
			"Handing off.", warden.StatusHalted, "security:exfiltration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			g := mustBind(t, warden.Config{Checkers: []warden.Checker{always("c", tt.d)}}, p.tool("save_note"))
			out, err := g.Call(context.Background(), warden.Call{Tool: "save_note", Args: A(`{"note":"x"}`)})
			if tt.wantState == warden.StatusHalted {
				var h *warden.PolicyHaltError
				if !errors.As(err, &h) {
					t.Fatalf("error: got %v, want *PolicyHaltError", err)
				}
				if h.TellLLM != tt.wantText || h.Reason != tt.d.Reason {
					t.Errorf("halt error: got TellLLM %q Reason %q, want %q, %q", h.TellLLM, h.Reason, tt.wantText, tt.d.Reason)
				}
			} else if err != nil {
				t.Fatalf("error: %v", err)
			}
			if out.Status != tt.wantState || out.ModelText != tt.wantText {
				t.Errorf("got %s %q, want %s %q", out.Status, out.ModelText, tt.wantState, tt.wantText)
			}
			if tt.notText != "" && strings.Contains(out.ModelText, tt.notText) {
				t.Errorf("model text %q contains %q", out.ModelText, tt.notText)
			}
			if p.runs() != 0 {
				t.Errorf("executed %d times", p.runs())
			}
		})
	}
}

// A checker that errors, panics, answers an invalid effect or does not answer within
// CheckTimeout is a fault: the call is refused as unauthorized. The timeouts run in a
// synctest bubble, so a checker that never answers is abandoned at exactly CheckTimeout.
func TestRolePolicy_CheckerFaultsDeny(t *testing.T) {
	type faultCase struct {
		name          string
		c             warden.Checker
		timeout       time.Duration
		wantRationale string // prefix
	}
	// cases builds the table; release unblocks the checker that ignores its context.
	cases := func(release <-chan struct{}) []faultCase {
		return []faultCase{
			{"error", newSync("c", func(context.Context, warden.Request) (warden.Decision, error) {
				return warden.Decision{Effect: warden.Allow}, errors.New("boom")
			}), 0, "permission-checker threw: boom"},
			{"panic sync", newSync("c", func(context.Context, warden.Request) (warden.Decision, error) { panic("kaboom") }), 0,
				"permission-checker threw: "},
			{"panic async", newAsync("c", func(context.Context, warden.Request) (warden.Decision, error) { panic("kaboom") }), 0,
				"permission-checker threw: "},
			{"invalid effect", always("c", warden.Decision{Effect: warden.Effect(9), RuleID: "weird"}), 0, "permission-checker threw: "},
			{"timeout, honours ctx", newAsync("c", func(ctx context.Context, _ warden.Request) (warden.Decision, error) {
				<-ctx.Done()
				return warden.Decision{Effect: warden.Allow}, ctx.Err()
			}), 20 * time.Millisecond, "permission-checker threw: "},
			{"timeout, ignores ctx", newAsync("c", func(context.Context, warden.Request) (warden.Decision, error) {
				<-release
				return warden.Decision{Effect: warden.Allow}, nil
			}), 20 * time.Millisecond, "permission-checker threw: "},
		}
	}
	for i, named := range cases(nil) {
		t.Run(named.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release) // lets the abandoned checker's goroutine end
				tt := cases(release)[i]
				var p probe
				g := mustBind(t, warden.Config{Checkers: []warden.Checker{tt.c}, CheckTimeout: tt.timeout}, p.tool("t"))
				start := time.Now()
				out := call(t, g, "t", `{}`)
				if tt.timeout > 0 {
					if d := time.Since(start); d != tt.timeout {
						t.Errorf("call returned after %v; a checker that does not answer is abandoned at CheckTimeout (%v)", d, tt.timeout)
					}
				}
				checkView(t, out, refusedAt(warden.StagePermission, warden.UnauthorizedText("t")))
				if !strings.HasPrefix(out.Decision.Rationale, tt.wantRationale) {
					t.Errorf("rationale %q, want prefix %q", out.Decision.Rationale, tt.wantRationale)
				}
				if !out.Decision.Fault {
					t.Error("Decision.Fault false, want true")
				}
				if p.runs() != 0 {
					t.Errorf("executed %d times, want 0", p.runs())
				}
			})
		})
	}
}

// ---------------------------------------------------------------------------------
// 3. Middleware (governance page "Middleware", REFERENCE 6)
// ---------------------------------------------------------------------------------

func TestMiddleware_DenyReasonVerbatim(t *testing.T) {
	deny := &warden.Middleware{Name: "friday", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
		return warden.DenyCall("No deploys on Fridays. Try again on Monday.")
	}}
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{deny}}, p.tool("deploy"))
	out, err := g.Call(context.Background(), warden.Call{Tool: "deploy", Args: A(`{}`)})
	if err != nil {
		t.Fatalf("Call: %v (a middleware deny lets the run continue)", err)
	}
	checkView(t, out, refusedAt(warden.StageMiddleware, "No deploys on Fridays. Try again on Monday."))
	want := []warden.LedgerRow{{Middleware: "friday", Moment: "call", Outcome: "deny", Why: "No deploys on Fridays. Try again on Monday."}}
	if d := cmp.Diff(want, out.Ledger); d != "" {
		t.Errorf("ledger (-want +got):\n%s", d)
	}
}

func TestMiddleware_TransformIsRecorded(t *testing.T) {
	mask := transform("mask", "mask the card number", func(a warden.Args) warden.Args { return a.With("card", "****4242") })
	same := transform("same", "idempotent normalization", func(a warden.Args) warden.Args { return a })
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{mask, same}}, p.tool("pay"))
	out := call(t, g, "pay", `{"card":"4242424242424242","amount":5}`)
	if out.Status != warden.StatusRan {
		t.Fatalf("status %s (%q)", out.Status, out.ModelText)
	}
	if got := js(p.last()); got != `{"card":"****4242","amount":5}` {
		t.Errorf("tool saw %s, want the transformed args", got)
	}
	want := []warden.LedgerRow{
		{Middleware: "mask", Moment: "call", Outcome: "allow", Changed: true, Why: "mask the card number"},
		{Middleware: "same", Moment: "call", Outcome: "allow", Changed: false, Why: "idempotent normalization"},
	}
	if d := cmp.Diff(want, out.Ledger); d != "" {
		t.Errorf("ledger (-want +got):\n%s", d)
	}
	if got := js(out.Args); got != `{"card":"****4242","amount":5}` {
		t.Errorf("Outcome.Args %s, want final args", got)
	}
}

func TestMiddleware_FirstDenyStopsLaterLinks(t *testing.T) {
	var later atomic.Int64
	deny := &warden.Middleware{Name: "deny", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.DenyCall("no") }}
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{deny, passThrough("later", &later)}}, p.tool("t"))
	out := call(t, g, "t", `{}`)
	checkView(t, out, refusedAt(warden.StageMiddleware, "no"))
	if later.Load() != 0 || len(out.Ledger) != 1 {
		t.Errorf("later link ran %d times, ledger %d rows; want 0, 1", later.Load(), len(out.Ledger))
	}
}

func TestMiddleware_BrokenLinksDeny(t *testing.T) {
	tests := []struct {
		name     string
		outcome  func() warden.CallOutcome
		contains string
	}{
		{"panic", func() warden.CallOutcome { panic("nil map write") }, "nil map write"},
		{"panic with error", func() warden.CallOutcome { panic(errors.New("index out of range")) }, "index out of range"},
		{"transform without why", func() warden.CallOutcome { return warden.TransformCall(A(`{"x":2}`), "  ") }, "why"},
		{"deny without reason", func() warden.CallOutcome { return warden.DenyCall("") }, "reason"},
		{"ask without question", func() warden.CallOutcome { return warden.AskPerson("", "detail") }, "question"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var later atomic.Int64
			broken := &warden.Middleware{Name: "broken", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return tt.outcome() }}
			var p probe
			g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{broken, passThrough("later", &later)}, CanPause: true}, p.tool("t"))
			out := call(t, g, "t", `{"x":1}`)
			if out.Status != warden.StatusRefused || out.Stage != warden.StageMiddleware || out.Executed {
				t.Fatalf("got %+v, want refused at middleware", viewOf(out))
			}
			if !strings.HasPrefix(out.ModelText, "middleware 'broken' threw: ") || !strings.Contains(out.ModelText, tt.contains) {
				t.Errorf("model text %q, want \"middleware 'broken' threw: ...%s...\"", out.ModelText, tt.contains)
			}
			if p.runs() != 0 || later.Load() != 0 {
				t.Errorf("tool ran %d, later link %d; want 0, 0", p.runs(), later.Load())
			}
		})
	}
}

func TestMiddleware_TransformsComposeInOrder(t *testing.T) {
	appendTo := func(name, s string) *warden.Middleware {
		return transform(name, "append "+s, func(a warden.Args) warden.Args {
			v, _ := a.String("s")
			return a.With("s", v+s)
		})
	}
	var p probe
	tool := p.tool("t")
	tool.Pre = func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
		v, _ := c.Args.String("s")
		return warden.TransformCall(c.Args.With("s", v+"P"), "preprocessor first")
	}
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{appendTo("a", "A"), appendTo("b", "B"), appendTo("c", "C")}}, tool)
	out := call(t, g, "t", `{"s":">"}`)
	if got := js(p.last()); got != `{"s":">PABC"}` {
		t.Errorf("tool saw %s, want {\"s\":\">PABC\"}", got)
	}
	var names []string
	for _, r := range out.Ledger {
		names = append(names, r.Middleware)
	}
	if d := cmp.Diff([]string{"t.preprocessor", "a", "b", "c"}, names); d != "" {
		t.Errorf("ledger order (-want +got):\n%s", d)
	}
}

func TestMiddleware_DenyingCheckerRunsFirst(t *testing.T) {
	var mw atomic.Int64
	var p probe
	tool := p.tool("t")
	var pre atomic.Int64
	tool.Pre = func(context.Context, warden.ToolCall) warden.CallOutcome { pre.Add(1); return warden.AllowCall() }
	g := mustBind(t, warden.Config{
		Checkers:   []warden.Checker{always("no", warden.Decision{Effect: warden.Deny, Rationale: "nope"})},
		Middleware: []*warden.Middleware{passThrough("mw", &mw)},
	}, tool)
	out := call(t, g, "t", `{}`)
	checkView(t, out, refusedAt(warden.StagePermission, "[permission denied: nope]"))
	if mw.Load() != 0 || pre.Load() != 0 || len(out.Ledger) != 0 {
		t.Errorf("middleware calls %d, preprocessor calls %d, ledger %v; want none", mw.Load(), pre.Load(), out.Ledger)
	}
}

func TestMiddleware_OnionOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	layer := func(name string) *warden.Middleware {
		return &warden.Middleware{
			Name: name,
			OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
				note("before:" + name)
				return warden.AllowCall()
			},
			OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome {
				note("after:" + name)
				return warden.KeepResult()
			},
		}
	}
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{layer("outer"), layer("middle"), layer("inner")}}, p.tool("t"))
	call(t, g, "t", `{}`)
	want := []string{"before:outer", "before:middle", "before:inner", "after:inner", "after:middle", "after:outer"}
	if d := cmp.Diff(want, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

func TestMiddleware_ResultSideDeny(t *testing.T) {
	var sideEffects atomic.Int64
	tool := warden.Executable{Tool: warden.Tool{Name: "export"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		sideEffects.Add(1)
		return map[string]any{"rows": 3, "ssn": "078-05-1120"}, nil
	}}
	var outerSaw atomic.Int64
	outer := &warden.Middleware{Name: "outer", OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome {
		outerSaw.Add(1)
		return warden.KeepResult()
	}}
	dlp := &warden.Middleware{Name: "dlp", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
		if strings.Contains(warden.RenderResult(r.Result), "ssn") {
			return warden.DenyResult("The result contained personal data and was withheld.")
		}
		return warden.KeepResult()
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{outer, dlp}}, tool)
	out := call(t, g, "export", `{}`)
	checkView(t, out, view{Status: warden.StatusRan, Stage: warden.StageResult, Executed: true, IsError: true, ModelText: "The result contained personal data and was withheld."})
	if sideEffects.Load() != 1 {
		t.Errorf("side effect happened %d times, want 1", sideEffects.Load())
	}
	if d := cmp.Diff(map[string]any{"rows": 3, "ssn": "078-05-1120"}, out.Result); d != "" {
		t.Errorf("Outcome.Result must keep the real result for audit (-want +got):\n%s", d)
	}
	if outerSaw.Load() != 0 {
		t.Errorf("outer result link ran after the inner deny (%d times)", outerSaw.Load())
	}
}

func TestMiddleware_ResultSideOnlyForExecutedCalls(t *testing.T) {
	schemaTool := func(p *probe) warden.Executable {
		x := p.tool("strict")
		x.InputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
		return x
	}
	tests := []struct {
		name     string
		mw       []*warden.Middleware
		checkers []warden.Checker
		tool     string
		args     string
		approve  bool
		want     int64
	}{
		{"refused by checker", nil, []warden.Checker{always("no", warden.Decision{Effect: warden.Deny})}, "strict", `{"n":1}`, false, 0},
		{"pending ask", []*warden.Middleware{askMW("ask", "ok?")}, nil, "strict", `{"n":1}`, false, 0},
		{"invalid args", nil, nil, "strict", `{"n":"one"}`, false, 0},
		{"unknown tool", nil, nil, "nope", `{}`, false, 0},
		{"after approval", []*warden.Middleware{askMW("ask", "ok?")}, nil, "strict", `{"n":1}`, true, 1},
		{"plain run", nil, nil, "strict", `{"n":1}`, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen atomic.Int64
			counter := &warden.Middleware{Name: "counter", OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome {
				seen.Add(1)
				return warden.KeepResult()
			}}
			var post atomic.Int64
			var p probe
			tool := schemaTool(&p)
			tool.Post = func(context.Context, warden.ToolResult) warden.ResultOutcome { post.Add(1); return warden.KeepResult() }
			g := mustBind(t, warden.Config{
				Checkers: tt.checkers, Ungoverned: len(tt.checkers) == 0, Middleware: append(slices.Clone(tt.mw), counter),
				Schemas: schema.Compiler{}, CanPause: true,
			}, tool)
			out, err := g.Call(context.Background(), warden.Call{Tool: tt.tool, Args: A(tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.approve {
				if out.Pending == nil {
					t.Fatalf("want a pending decision, got %+v", viewOf(out))
				}
				out, err = g.Resume(context.Background(), *out.Pending, warden.Approved{By: "alice", Digest: out.Pending.ApprovalDigest()}, owner(*out.Pending))
				if err != nil {
					t.Fatal(err)
				}
			}
			if seen.Load() != tt.want || post.Load() != tt.want {
				t.Errorf("result middleware ran %d, postprocessor %d; want %d (%+v)", seen.Load(), post.Load(), tt.want, viewOf(out))
			}
		})
	}
}

func askMW(name, question string) *warden.Middleware {
	return &warden.Middleware{Name: name, OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
		return warden.AskPerson(question, "detail of "+name)
	}}
}

func TestMiddleware_ToolErrorReachesResultSide(t *testing.T) {
	var got warden.ToolResult
	watch := &warden.Middleware{Name: "watch", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
		got = r
		return warden.KeepResult()
	}}
	tool := warden.Executable{Tool: warden.Tool{Name: "flaky"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		return nil, errors.New("upstream 503")
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{watch}}, tool)
	out := call(t, g, "flaky", `{"q":1}`)
	if !got.IsError || got.Error != "upstream 503" || got.Tool != "flaky" || js(got.Args) != `{"q":1}` {
		t.Errorf("result link saw %+v, want IsError with the message", got)
	}
	if out.Status != warden.StatusFailed || !out.Executed || !out.IsError {
		t.Errorf("got %+v, want failed, executed", viewOf(out))
	}
	if got, want := out.ModelText, "Tool 'flaky' failed: upstream 503"; got != want {
		t.Errorf("model text %q, want %q", got, want)
	}
}

func TestMiddleware_PassThroughChains(t *testing.T) {
	for n := 0; n <= 12; n++ {
		t.Run(fmt.Sprintf("links=%d", n), func(t *testing.T) {
			var runs atomic.Int64
			chain := make([]*warden.Middleware, n)
			for i := range chain {
				chain[i] = passThrough(fmt.Sprintf("m%d", i), &runs)
			}
			var p probe
			g := mustBind(t, warden.Config{Ungoverned: true, Middleware: chain}, p.tool("t"))
			in := A(`{"b":[1,{"c":null}],"a":"x"}`)
			out := call(t, g, "t", js(in))
			if !p.last().Equal(in) || !out.Args.Equal(in) {
				t.Errorf("args changed: tool %s, outcome %s, want %s", js(p.last()), js(out.Args), js(in))
			}
			if runs.Load() != int64(n) || len(out.Ledger) != n {
				t.Errorf("links ran %d, ledger %d; want %d", runs.Load(), len(out.Ledger), n)
			}
			for k := 0; k < n; k++ {
				var ran atomic.Int64
				chain := make([]*warden.Middleware, n)
				for i := range chain {
					if i == k {
						chain[i] = &warden.Middleware{Name: fmt.Sprintf("m%d", i), OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
							ran.Add(1)
							return warden.DenyCall("stop")
						}}
						continue
					}
					chain[i] = passThrough(fmt.Sprintf("m%d", i), &ran)
				}
				var p probe
				g := mustBind(t, warden.Config{Ungoverned: true, Middleware: chain}, p.tool("t"))
				out := call(t, g, "t", `{}`)
				if ran.Load() != int64(k+1) || out.Status != warden.StatusRefused || p.runs() != 0 {
					t.Errorf("deny at link %d: %d links ran, status %s, tool runs %d; want %d, refused, 0", k, ran.Load(), out.Status, p.runs(), k+1)
				}
			}
		})
	}
}

func TestMiddleware_EventsNeverCarryValues(t *testing.T) {
	const marker = "SECRET-MARKER-91f2"
	rec := &warden.Recorder{}
	tool := warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
		return "result " + marker, nil
	}}
	mws := []*warden.Middleware{
		transform("rewrite", "normalize", func(a warden.Args) warden.Args { return a.With("copy", marker+"-copy") }),
		passThrough("pass", nil),
		{Name: "res", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
			return warden.ReplaceModelResult(warden.RenderResult(r.Result)+" (checked)", "annotate")
		}},
	}
	g := mustBind(t, warden.Config{Middleware: mws, Checkers: []warden.Checker{allowChecker("c")}, Sinks: []warden.Sink{rec}}, tool)
	out := call(t, g, "t", `{"token":"`+marker+`"}`)
	if !strings.Contains(out.ModelText, marker) {
		t.Fatalf("precondition: the model should read the marker, got %q", out.ModelText)
	}
	md := rec.Named(warden.EventMiddlewareDecision)
	if len(md) != 3 {
		t.Errorf("got %d middleware.decision events, want 3 (two call links, one result link)", len(md))
	}
	for _, e := range rec.Events() {
		if s := fmt.Sprintf("%+v", e); strings.Contains(s, marker) {
			t.Errorf("event %s carries a value: %s", e.Name, s)
		}
	}
}

// ---------------------------------------------------------------------------------
// 6. Interceptor plan (ADR D3)
// ---------------------------------------------------------------------------------

func TestPlan_DenyAllCoversMCPTools(t *testing.T) {
	var pre atomic.Int64
	var p probe
	tool := warden.Executable{Tool: warden.Tool{Name: "create_issue", Source: "mcp:github"}, Run: p.fn(nil),
		Pre: func(context.Context, warden.ToolCall) warden.CallOutcome { pre.Add(1); return warden.AllowCall() }}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{policy.DenyAll()}}, tool)
	out := call(t, g, "create_issue", `{"title":"x"}`)
	if out.Status != warden.StatusRefused || out.Stage != warden.StagePermission || p.runs() != 0 {
		t.Errorf("got %+v runs %d; want refused at permission, 0 runs", viewOf(out), p.runs())
	}
	if pre.Load() != 0 {
		t.Errorf("preprocessor ran %d times before a refusing S1", pre.Load())
	}
}

func TestPlan_PreprocessorSeesOriginalArgsAndIsJudgedByS2(t *testing.T) {
	rules := mustRules(t, policy.RuleConfig{Allow: map[string][]string{"create_issue": {"open *"}}})
	var mu sync.Mutex
	var seen []string
	var p probe
	tool := warden.Executable{Tool: warden.Tool{Name: "create_issue", Source: "mcp:github"}, Run: p.fn(nil),
		Pre: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
			mu.Lock()
			seen = append(seen, "pre:"+js(c.Args))
			mu.Unlock()
			return warden.TransformCall(c.Args.With("action", "delete"), "the upstream needs delete")
		}}
	spy := &warden.Middleware{Name: "spy", OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
		mu.Lock()
		seen = append(seen, "spy:"+js(c.Args))
		mu.Unlock()
		return warden.AllowCall()
	}}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{rules}, Middleware: []*warden.Middleware{spy}}, tool)
	out := call(t, g, "create_issue", `{"action":"open","title":"bug"}`)
	want := []string{`pre:{"action":"open","title":"bug"}`, `spy:{"action":"delete","title":"bug"}`}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	checkView(t, out, refusedAt(warden.StageFinalCheck, "[permission denied: no matching rule, default deny]"))
	if p.runs() != 0 {
		t.Errorf("tool ran %d times", p.runs())
	}
}

func TestPlan_BindIsIdempotentAndConflictsAreErrors(t *testing.T) {
	c1 := allowChecker("c1")
	mw := passThrough("mw", nil)
	rec := &warden.Recorder{}
	var p probe
	r := &warden.Registry{}
	if err := r.Register(p.tool("t")); err != nil {
		t.Fatal(err)
	}
	cfg := warden.Config{Checkers: []warden.Checker{c1}, Middleware: []*warden.Middleware{mw}, Sinks: []warden.Sink{rec}, Revision: "r1"}
	g1, err := r.Bind(cfg)
	if err != nil {
		t.Fatal(err)
	}
	same := warden.Config{Checkers: []warden.Checker{c1}, Middleware: []*warden.Middleware{mw}, Sinks: []warden.Sink{rec}, Revision: "r1"}
	g2, err := r.Bind(same)
	if err != nil || g2 != g1 {
		t.Errorf("second Bind with the same inputs: got %p, %v; want the same guard %p", g2, err, g1)
	}
	for name, other := range map[string]warden.Config{
		"other checker":  {Checkers: []warden.Checker{allowChecker("c1")}, Middleware: []*warden.Middleware{mw}, Sinks: []warden.Sink{rec}, Revision: "r1"},
		"other revision": {Checkers: []warden.Checker{c1}, Middleware: []*warden.Middleware{mw}, Sinks: []warden.Sink{rec}, Revision: "r2"},
		"no middleware":  {Checkers: []warden.Checker{c1}, Sinks: []warden.Sink{rec}, Revision: "r1"},
		"can pause":      {Checkers: []warden.Checker{c1}, Middleware: []*warden.Middleware{mw}, Sinks: []warden.Sink{rec}, Revision: "r1", CanPause: true},
	} {
		if g, err := r.Bind(other); !errors.Is(err, warden.ErrPlanConflict) || g != nil {
			t.Errorf("%s: Bind got %v, %v; want nil, ErrPlanConflict", name, g, err)
		}
	}
	err = r.Register(p.tool("late"))
	if !errors.Is(err, warden.ErrRegistryBound) {
		t.Errorf("Register after Bind: got %v, want ErrRegistryBound", err)
	}
	if _, ok := g1.Tool("late"); ok {
		t.Error("a tool registered after Bind became callable")
	}
}

// A caller that edits its Config's slices after Bind and binds again asks for a
// different plan: that must be a conflict, never the old plan returned silently (the
// old plan does not contain the checker the caller just added).
func TestPlan_RebindAfterMutatingConfigSlicesIsAConflict(t *testing.T) {
	var p probe
	r := &warden.Registry{}
	if err := r.Register(p.tool("t")); err != nil {
		t.Fatal(err)
	}
	cfg := warden.Config{Checkers: []warden.Checker{allowChecker("permissive")}}
	g1, err := r.Bind(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Checkers[0] = always("strict", warden.Decision{Effect: warden.Deny, Rationale: "locked down"})
	g2, err := r.Bind(cfg)
	if err == nil {
		out := call(t, g2, "t", `{}`)
		t.Errorf("Bind with a different checker returned guard %p (same as first: %v) and no error; the call then %s (%q). want ErrPlanConflict",
			g2, g2 == g1, out.Status, out.ModelText)
	} else if !errors.Is(err, warden.ErrPlanConflict) {
		t.Errorf("got %v, want ErrPlanConflict", err)
	}
}

func TestPlan_CallerSlicesMutatedAfterBindChangeNothing(t *testing.T) {
	var p probe
	checkers := []warden.Checker{allowChecker("ok")}
	mws := []*warden.Middleware{passThrough("pass", nil)}
	var handled atomic.Int64
	handlers := []*warden.ErrorHandler{errHandler("h", &handled, nil, nil)}
	rec := &warden.Recorder{}
	sinks := []warden.Sink{rec}
	g := mustBind(t, warden.Config{Checkers: checkers, Middleware: mws, ErrorHandlers: handlers, Sinks: sinks}, p.tool("t"))
	checkers[0] = always("no", warden.Decision{Effect: warden.Deny})
	mws[0] = &warden.Middleware{Name: "deny", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.DenyCall("no") }}
	sinks[0] = warden.SinkFunc(func(context.Context, warden.Event) {})
	out := call(t, g, "t", `{}`)
	if out.Status != warden.StatusRan {
		t.Errorf("status %s (%q), want ran: Bind must snapshot the caller's slices", out.Status, out.ModelText)
	}
	if len(rec.Events()) == 0 {
		t.Error("the snapshotted sink received no events")
	}
}

func TestPlan_PostHandlersSeeEveryResultType(t *testing.T) {
	type point struct{ X, Y int }
	tests := []struct {
		name   string
		result any
		text   string
	}{
		{"string", "plain text", "plain text"},
		{"int", 42, "42"},
		{"nil", nil, ""},
		{"struct", point{1, 2}, `{"X":1,"Y":2}`},
		{"slice", []string{"a", "b"}, `["a","b"]`},
		{"map", map[string]int{"n": 1}, `{"n":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var postSaw, mwSaw warden.ToolResult
			var postN, mwN int
			tool := warden.Executable{Tool: warden.Tool{Name: "t"},
				Run: func(context.Context, warden.Args, *warden.Credential) (any, error) { return tt.result, nil },
				Post: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
					postSaw = r
					postN++
					return warden.KeepResult()
				},
			}
			mw := &warden.Middleware{Name: "post",
				OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
					return warden.TransformCall(c.Args.With("final", true), "mark")
				},
				OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
					mwSaw = r
					mwN++
					return warden.KeepResult()
				},
			}
			g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{mw}}, tool)
			out := call(t, g, "t", `{"q":1}`)
			if postN != 1 || mwN != 1 {
				t.Fatalf("post ran %d, middleware %d; want 1, 1", postN, mwN)
			}
			for who, r := range map[string]warden.ToolResult{"postprocessor": postSaw, "middleware": mwSaw} {
				if !reflect.DeepEqual(r.Result, tt.result) {
					t.Errorf("%s saw result %#v, want %#v", who, r.Result, tt.result)
				}
				if js(r.Args) != `{"q":1,"final":true}` {
					t.Errorf("%s saw args %s, want the final args", who, js(r.Args))
				}
			}
			if out.ModelText != tt.text || out.Status != warden.StatusRan || !reflect.DeepEqual(out.Result, tt.result) {
				t.Errorf("got %q %s %#v, want %q ran %#v (KeepResult keeps)", out.ModelText, out.Status, out.Result, tt.text, tt.result)
			}
		})
	}
}

func TestPlan_PostHandlerReplacesResult(t *testing.T) {
	tool := warden.Executable{Tool: warden.Tool{Name: "t"},
		Run: func(context.Context, warden.Args, *warden.Credential) (any, error) { return 7, nil },
		Post: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
			return warden.ReplaceModelResult(fmt.Sprintf("seven (%v)", r.Result), "humanize")
		},
	}
	var outerSaw any
	outer := &warden.Middleware{Name: "outer", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
		outerSaw = r.Result
		return warden.KeepResult()
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{outer}}, tool)
	out := call(t, g, "t", `{}`)
	if out.ModelText != "seven (7)" || outerSaw != "seven (7)" || out.Result != 7 {
		t.Errorf("got model %q, outer saw %#v, Result %#v; want \"seven (7)\", the replacement, 7", out.ModelText, outerSaw, out.Result)
	}
	if len(out.Ledger) != 2 || !out.Ledger[0].Changed || out.Ledger[0].Why != "humanize" {
		t.Errorf("ledger %+v", out.Ledger)
	}
}

func TestPlan_ErrorHandlers(t *testing.T) {
	toolErr := errors.New("disk full")
	failing := func() warden.Executable {
		return warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) { return nil, toolErr }}
	}
	t.Run("replace converts a failure into a result", func(t *testing.T) {
		var n atomic.Int64
		var saw warden.ToolError
		h := &warden.ErrorHandler{Name: "h", Handle: func(_ context.Context, e warden.ToolError) (warden.ErrorDisposition, error) {
			n.Add(1)
			saw = e
			return warden.ReplaceResult{Value: map[string]string{"status": "queued"}}, nil
		}}
		mw := transform("mw", "add retry flag", func(a warden.Args) warden.Args { return a.With("retry", true) })
		g := mustBind(t, warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{h}, Middleware: []*warden.Middleware{mw}}, failing())
		out := call(t, g, "t", `{"f":"x"}`)
		checkView(t, out, view{Status: warden.StatusRan, Stage: warden.StageExecute, Executed: true, ModelText: `{"status":"queued"}`})
		if out.Err != nil {
			t.Errorf("Outcome.Err %v, want nil after a replacement", out.Err)
		}
		if saw.Tool != "t" || js(saw.Args) != `{"f":"x","retry":true}` || !errors.Is(saw.Err, toolErr) {
			t.Errorf("handler saw %+v, want tool, final args, original error", saw)
		}
	})
	t.Run("first replacement wins", func(t *testing.T) {
		var n1, n2, n3 atomic.Int64
		g := mustBind(t, warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{
			errHandler("observe", &n1, nil, nil),
			errHandler("first", &n2, warden.ReplaceResult{Value: "first"}, nil),
			errHandler("second", &n3, warden.ReplaceResult{Value: "second"}, nil),
		}}, failing())
		out := call(t, g, "t", `{}`)
		if out.ModelText != "first" || out.Status != warden.StatusRan {
			t.Errorf("got %s %q, want ran \"first\"", out.Status, out.ModelText)
		}
		if n1.Load() != 1 || n2.Load() != 1 || n3.Load() != 1 {
			t.Errorf("handler calls %d %d %d, want each once (later ones observe)", n1.Load(), n2.Load(), n3.Load())
		}
	})
	t.Run("reraise keeps the error", func(t *testing.T) {
		var n atomic.Int64
		g := mustBind(t, warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{errHandler("r", &n, warden.Reraise{}, nil)}}, failing())
		out := call(t, g, "t", `{}`)
		if out.Status != warden.StatusFailed || !errors.Is(out.Err, toolErr) || out.ModelText != "Tool 't' failed: disk full" {
			t.Errorf("got %+v err %v", viewOf(out), out.Err)
		}
	})
	t.Run("handler error is secondary", func(t *testing.T) {
		var n atomic.Int64
		herr := errors.New("handler bug")
		panicky := &warden.ErrorHandler{Name: "panicky", Handle: func(context.Context, warden.ToolError) (warden.ErrorDisposition, error) { panic("oops") }}
		g := mustBind(t, warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{errHandler("bad", &n, nil, herr), panicky}}, failing())
		out := call(t, g, "t", `{}`)
		if out.Status != warden.StatusFailed || !errors.Is(out.Err, toolErr) {
			t.Errorf("got %s err %v; want failed with the original error primary", out.Status, out.Err)
		}
		if len(out.SecondaryErrors) != 2 || !errors.Is(out.SecondaryErrors[0], herr) || !strings.Contains(out.SecondaryErrors[1].Error(), "oops") {
			t.Errorf("secondary errors %v, want [handler bug, panic oops]", out.SecondaryErrors)
		}
	})
	t.Run("result-side failure reaches the handlers", func(t *testing.T) {
		var n atomic.Int64
		ok := warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) { return "fine", nil },
			Post: func(context.Context, warden.ToolResult) warden.ResultOutcome { panic("post broke") }}
		var saw error
		h := &warden.ErrorHandler{Name: "h", Handle: func(_ context.Context, e warden.ToolError) (warden.ErrorDisposition, error) {
			n.Add(1)
			saw = e.Err
			return warden.ReplaceResult{Value: "recovered"}, nil
		}}
		var tool = ok
		g := mustBind(t, warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{h}}, tool)
		out := call(t, g, "t", `{}`)
		if n.Load() != 1 || saw == nil || !strings.Contains(saw.Error(), "post broke") || out.ModelText != "recovered" {
			t.Errorf("handler calls %d saw %v, model %q", n.Load(), saw, out.ModelText)
		}
	})
}

func TestPlan_ErrorHandlersNeverSeeRefusals(t *testing.T) {
	strict := func(p *probe) warden.Executable {
		x := p.tool("t")
		x.InputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
		return x
	}
	tests := []struct {
		name string
		cfg  warden.Config
		args string
		mod  func(*warden.Executable)
	}{
		{"gate", warden.Config{Ungoverned: true, Gate: warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { return false, nil })}, `{"n":1}`, nil},
		{"checker deny", warden.Config{Checkers: []warden.Checker{always("no", warden.Decision{Effect: warden.Deny})}}, `{"n":1}`, nil},
		{"checker error", warden.Config{Checkers: []warden.Checker{newSync("e", func(context.Context, warden.Request) (warden.Decision, error) {
			return warden.Decision{}, errors.New("x")
		})}}, `{"n":1}`, nil},
		{"middleware deny", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{{Name: "d", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.DenyCall("no") }}}}, `{"n":1}`, nil},
		{"invalid args", warden.Config{Ungoverned: true}, `{"n":"x"}`, nil},
		{"ask without pause", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{askMW("a", "q?")}}, `{"n":1}`, nil},
		{"credentials", warden.Config{Ungoverned: true}, `{"n":1}`, func(e *warden.Executable) { e.Needs = &warden.Needs{Service: "svc"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			cfg := tt.cfg
			cfg.Schemas = schema.Compiler{}
			cfg.ErrorHandlers = []*warden.ErrorHandler{errHandler("rescue", &n, warden.ReplaceResult{Value: "rescued"}, nil)}
			var p probe
			tool := strict(&p)
			if tt.mod != nil {
				tt.mod(&tool)
			}
			g := mustBind(t, cfg, tool)
			out := call(t, g, "t", tt.args)
			if out.Status != warden.StatusRefused || n.Load() != 0 || p.runs() != 0 || out.ModelText == "rescued" {
				t.Errorf("got %+v, handler calls %d, runs %d; want refused, 0, 0", viewOf(out), n.Load(), p.runs())
			}
		})
	}
}

func TestPlan_ScopingByToolKeys(t *testing.T) {
	tests := []struct {
		keys []string
		tool string
		want bool
	}{
		{nil, "bash", true},
		{[]string{"*"}, "bash", true},
		{[]string{"bash"}, "bash", true},
		{[]string{"bash_tool"}, "bash", true},
		{[]string{"bash"}, "bash_tool", true},
		{[]string{"BASH"}, "bash", true},
		{[]string{"reader"}, "bash", false},
		{[]string{"reader", "bash_tool"}, "bash", true},
		{[]string{"bas"}, "bash", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%s", tt.keys, tt.tool), func(t *testing.T) {
			var mwN, hN atomic.Int64
			mw := passThrough("scoped", &mwN)
			mw.Tools = tt.keys
			h := errHandler("scoped", &hN, nil, nil)
			h.Tools = tt.keys
			tool := warden.Executable{Tool: warden.Tool{Name: tt.tool}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
				return nil, errors.New("fail")
			}}
			g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{mw}, ErrorHandlers: []*warden.ErrorHandler{h}}, tool)
			call(t, g, tt.tool, `{}`)
			if (mwN.Load() == 1) != tt.want || (hN.Load() == 1) != tt.want {
				t.Errorf("middleware ran %d, handler %d; want applied=%v", mwN.Load(), hN.Load(), tt.want)
			}
		})
	}
}

func TestPlan_UncompilableSchema(t *testing.T) {
	var p probe
	bad := p.tool("bad")
	bad.InputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integr"}}}`)
	good := p.tool("good")
	good.InputSchema = json.RawMessage(`{"type":"object"}`)
	g := mustBind(t, warden.Config{Ungoverned: true, Schemas: schema.Compiler{}}, bad, good)
	probs := g.Problems()
	if len(probs) != 1 || !strings.Contains(probs[0].Error(), "bad") {
		t.Fatalf("Problems(): %v, want one problem naming the tool", probs)
	}
	out := call(t, g, "bad", `{"n":1}`)
	if out.Status != warden.StatusRefused || out.Executed || p.runs() != 0 {
		t.Errorf("got %+v, want refused, not executed", viewOf(out))
	}
	if !strings.Contains(out.ModelText, "bad") {
		t.Errorf("model text %q does not name the tool", out.ModelText)
	}
	if out := call(t, g, "good", `{}`); out.Status != warden.StatusRan {
		t.Errorf("a sibling with a valid schema: %+v", viewOf(out))
	}
	probs[0] = nil
	if g.Problems()[0] == nil {
		t.Error("Problems() returned the guard's own slice")
	}
}

func TestPlan_BindErrors(t *testing.T) {
	var p probe
	withSchema := p.tool("s")
	withSchema.InputSchema = json.RawMessage(`{"type":"object"}`)
	tests := []struct {
		name string
		cfg  warden.Config
		tool warden.Executable
	}{
		{"schema without compiler", warden.Config{Ungoverned: true}, withSchema},
		{"negative cap", warden.Config{Ungoverned: true, MaxResultChars: -1}, p.tool("t")},
		{"cap below the marker", warden.Config{Ungoverned: true, MaxResultChars: 17}, p.tool("t")},
		{"unnamed middleware", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{{OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.AllowCall() }}}}, p.tool("t")},
		{"nil middleware", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{nil}}, p.tool("t")},
		{"nil checker", warden.Config{Checkers: []warden.Checker{nil}}, p.tool("t")},
		{"handler without Handle", warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{{Name: "h"}}}, p.tool("t")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &warden.Registry{}
			if err := r.Register(tt.tool); err != nil {
				t.Fatal(err)
			}
			if g, err := r.Bind(tt.cfg); err == nil || g != nil {
				t.Errorf("Bind: got %v, %v; want an error", g, err)
			}
		})
	}
	for _, ok := range []int{0, 18, 1 << 20} {
		r := &warden.Registry{}
		if _, err := r.Bind(warden.Config{Ungoverned: true, MaxResultChars: ok}); err != nil {
			t.Errorf("MaxResultChars %d: %v", ok, err)
		}
	}
}

// TestPlan_MiddlewareMustApplyWhereInstalled pins that a middleware which would do
// nothing where it is installed is refused, naming it, instead of silently ignored.
func TestPlan_MiddlewareMustApplyWhereInstalled(t *testing.T) {
	onCall := func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.AllowCall() }
	onResult := func(context.Context, warden.ToolResult) warden.ResultOutcome { return warden.KeepResult() }
	onMessage := func(context.Context, warden.Message) warden.MessageOutcome { return warden.KeepMessage() }
	var p probe
	refused := []struct {
		name string
		m    warden.Middleware
		says string
	}{
		{"only OnMessage", warden.Middleware{Name: "scanner", OnMessage: onMessage}, "neither OnToolCall nor OnToolResult"},
		{"no hook at all", warden.Middleware{Name: "scanner"}, "neither OnToolCall nor OnToolResult"},
		{"OnMessage beside a call hook", warden.Middleware{Name: "scanner", OnToolCall: onCall, OnMessage: onMessage}, "sets OnMessage, which never runs there"},
		{"OnMessage beside a result hook", warden.Middleware{Name: "scanner", OnToolResult: onResult, OnMessage: onMessage}, "sets OnMessage, which never runs there"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			r := &warden.Registry{}
			if err := r.Register(p.tool("t")); err != nil {
				t.Fatal(err)
			}
			m := tt.m
			g, err := r.Bind(warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{&m}})
			if err == nil || g != nil {
				t.Fatalf("Bind: got %v, %v; want a refusal", g, err)
			}
			if !strings.Contains(err.Error(), `"scanner"`) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Bind: %v; want it to name the middleware and say %q", err, tt.says)
			}
		})
	}
	for _, m := range []warden.Middleware{{Name: "c", OnToolCall: onCall}, {Name: "r", OnToolResult: onResult}, {Name: "both", OnToolCall: onCall, OnToolResult: onResult}} {
		r := &warden.Registry{}
		if _, err := r.Bind(warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{&m}}); err != nil {
			t.Errorf("Bind of middleware %q: %v", m.Name, err)
		}
	}

	if err := warden.CheckMessageMiddleware([]*warden.Middleware{{Name: "scanner", OnMessage: onMessage}}); err != nil {
		t.Errorf("a message chain of OnMessage hooks: %v", err)
	}
	for _, tt := range []struct {
		name  string
		chain []*warden.Middleware
		says  string
	}{
		{"nil link", []*warden.Middleware{nil}, "message middleware 0 has no name"},
		{"unnamed link", []*warden.Middleware{{OnMessage: onMessage}}, "message middleware 0 has no name"},
		{"no OnMessage", []*warden.Middleware{{Name: "ok", OnMessage: onMessage}, {Name: "scanner", OnToolCall: onCall}}, `"scanner" (1) has no OnMessage`},
		{"no hook at all", []*warden.Middleware{{Name: "scanner"}}, `"scanner" (0) has no OnMessage`},
		{"a tool hook beside OnMessage", []*warden.Middleware{{Name: "scanner", OnMessage: onMessage, OnToolResult: onResult}}, `"scanner" (0) sets OnToolCall or OnToolResult`},
	} {
		if err := warden.CheckMessageMiddleware(tt.chain); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: CheckMessageMiddleware = %v, want it to say %q", tt.name, err, tt.says)
		}
	}
}

// TestPlan_BindIsGovernedUnlessItSaysNot pins the strict default: a Config with no
// checker binds only when it says Ungoverned, and says it only without checkers.
func TestPlan_BindIsGovernedUnlessItSaysNot(t *testing.T) {
	var p probe
	r := &warden.Registry{}
	if err := r.Register(p.tool("t")); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []warden.Config{{}, {CanPause: true, Middleware: []*warden.Middleware{askMW("a", "ok?")}}} {
		g, err := r.Bind(cfg)
		if !errors.Is(err, warden.ErrUngoverned) || g != nil {
			t.Fatalf("Bind with no checker: got %v, %v; want ErrUngoverned", g, err)
		}
		for _, says := range []string{"Checkers is empty", "no permission check", "Ungoverned: true"} {
			if !strings.Contains(err.Error(), says) {
				t.Errorf("the refusal %q does not say %q", err, says)
			}
		}
	}
	if g, err := r.Bind(warden.Config{Ungoverned: true, Checkers: []warden.Checker{allowChecker("c")}}); err == nil || g != nil || !strings.Contains(err.Error(), "either governed") {
		t.Fatalf("Bind with Ungoverned and a checker: got %v, %v; want a refusal", g, err)
	}
	g, err := r.Bind(warden.Config{Ungoverned: true})
	if err != nil {
		t.Fatal(err)
	}
	if out := call(t, g, "t", `{}`); out.Status != warden.StatusRan || p.runs() != 1 {
		t.Fatalf("an ungoverned guard runs the tool: got %+v", viewOf(out))
	}
}

func TestRegistry_RegisterErrors(t *testing.T) {
	run := func(context.Context, warden.Args, *warden.Credential) (any, error) { return nil, nil }
	r := &warden.Registry{}
	if err := r.Register(warden.Executable{Tool: warden.Tool{Name: "t"}, Run: run}); err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]warden.Executable{
		"empty name":     {Tool: warden.Tool{Name: " "}, Run: run},
		"no run":         {Tool: warden.Tool{Name: "x"}},
		"duplicate":      {Tool: warden.Tool{Name: "t"}, Run: run},
		"bad capability": {Tool: warden.Tool{Name: "y", Capabilities: []warden.Capability{warden.CapToolCall}}, Run: run},
	} {
		if err := r.Register(e); err == nil {
			t.Errorf("%s: Register succeeded", name)
		}
	}
	// The registry copies the tool: editing the caller's value changes nothing.
	caps := []warden.Capability{warden.CapMemoryRead}
	if err := r.Register(warden.Executable{Tool: warden.Tool{Name: "c", Capabilities: caps}, Run: run}); err != nil {
		t.Fatal(err)
	}
	caps[0] = warden.CapExternalNet
	if got := r.Tools()[1].Capabilities; got[0] != warden.CapMemoryRead {
		t.Errorf("registered capabilities changed with the caller's slice: %v", got)
	}
	g, err := r.Bind(warden.Config{Ungoverned: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range g.Tools() {
		names = append(names, x.Name)
	}
	if d := cmp.Diff([]string{"t", "c"}, names); d != "" {
		t.Errorf("Guard.Tools order (-want +got):\n%s", d)
	}
}

func TestPlan_EmptyRegistryAndUnknownTool(t *testing.T) {
	g := mustBind(t, warden.Config{Ungoverned: true})
	out := call(t, g, "ghost", `{}`)
	if out.Status != warden.StatusRefused || out.Stage != warden.StageLookup || out.Executed {
		t.Errorf("unknown tool: %+v", viewOf(out))
	}
}

// ---------------------------------------------------------------------------------
// 9. Cancellation and concurrency
// ---------------------------------------------------------------------------------

func TestCancellation_BeforeTheCall(t *testing.T) {
	var n atomic.Int64
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{errHandler("h", &n, warden.ReplaceResult{Value: "x"}, nil)}}, p.tool("t"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := g.Call(ctx, warden.Call{Tool: "t", Args: A(`{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if out.Executed || p.runs() != 0 || n.Load() != 0 {
		t.Errorf("executed %v, runs %d, handlers %d; want false, 0, 0", out.Executed, p.runs(), n.Load())
	}
}

// A cancellation while a checker is still thinking ends the call at once, refused and
// not executed (in a synctest bubble: the call returns at exactly the cancellation).
func TestCancellation_DuringSlowChecker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := newAsync("slow", func(ctx context.Context, _ warden.Request) (warden.Decision, error) {
			select {
			case <-ctx.Done():
				return warden.Decision{}, ctx.Err()
			case <-time.After(5 * time.Second):
				return warden.Decision{Effect: warden.Allow}, nil
			}
		})
		var p probe
		g := mustBind(t, warden.Config{Checkers: []warden.Checker{slow}}, p.tool("t"))
		ctx, cancel := context.WithCancel(context.Background())
		const after = 20 * time.Millisecond
		time.AfterFunc(after, cancel)
		start := time.Now()
		out, err := g.Call(ctx, warden.Call{Tool: "t", Args: A(`{}`)})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		if d := time.Since(start); d != after {
			t.Errorf("Call returned after %v; want at the cancellation (%v)", d, after)
		}
		if out.Executed || p.runs() != 0 {
			t.Errorf("executed %v runs %d", out.Executed, p.runs())
		}
	})
}

func TestCancellation_ToolObservesCancellation(t *testing.T) {
	var n atomic.Int64
	started := make(chan struct{})
	tool := warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(ctx context.Context, _ warden.Args, _ *warden.Credential) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, fmt.Errorf("download aborted: %w", ctx.Err())
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{errHandler("swallow", &n, warden.ReplaceResult{Value: "all good"}, nil)}}, tool)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	out, err := g.Call(ctx, warden.Call{Tool: "t", Args: A(`{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if n.Load() != 0 || out.ModelText == "all good" {
		t.Errorf("error handler ran %d times (model %q); cancellation must not become a result", n.Load(), out.ModelText)
	}
	if !out.Executed || out.Status != warden.StatusFailed {
		t.Errorf("got %+v, want executed, failed", viewOf(out))
	}
}

func TestConcurrency_ManyGoroutinesOneGuard(t *testing.T) {
	const goroutines, perG = 64, 200
	roles, err := policy.FromRoles(map[string][]string{"agent": {"read", "write"}}, "agent", nil)
	if err != nil {
		t.Fatal(err)
	}
	rules := mustRules(t, policy.RuleConfig{Allow: map[string][]string{"read": {"*"}, "write": {"* ok *"}}})
	rec := &warden.Recorder{}
	var runs atomic.Int64
	mk := func(name string) warden.Executable {
		return warden.Executable{Tool: warden.Tool{Name: name}, Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
			runs.Add(1)
			return a, nil
		}}
	}
	var mw atomic.Int64
	g := mustBind(t, warden.Config{
		Checkers:   []warden.Checker{roles, rules},
		Middleware: []*warden.Middleware{passThrough("p", &mw)},
		Sinks:      []warden.Sink{rec},
	}, mk("read"), mk("write"), mk("admin"))
	var wg sync.WaitGroup
	var ran, refused atomic.Int64
	for i := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perG {
				tool, args := "read", fmt.Sprintf(`{"i":%d,"j":%d}`, i, j)
				switch j % 4 {
				case 1:
					tool, args = "write", `{"action":"x","v":"ok","w":1}`
				case 2:
					tool, args = "write", `{"action":"x","v":"no"}`
				case 3:
					tool = "admin"
				}
				out, err := g.Call(context.Background(), warden.Call{Tool: tool, Args: A(args)})
				if err != nil {
					t.Error(err)
					return
				}
				switch out.Status {
				case warden.StatusRan:
					ran.Add(1)
					if out.ModelText != args {
						t.Errorf("cross-talk: sent %s, model read %s", args, out.ModelText)
					}
				case warden.StatusRefused:
					refused.Add(1)
				default:
					t.Errorf("unexpected status %s", out.Status)
				}
			}
		}()
	}
	wg.Wait()
	const total = goroutines * perG
	if got := ran.Load(); got != total/2 {
		t.Errorf("ran %d, want %d", got, total/2)
	}
	if ran.Load()+refused.Load() != total || runs.Load() != ran.Load() {
		t.Errorf("ran %d + refused %d != %d, or tool runs %d != ran", ran.Load(), refused.Load(), total, runs.Load())
	}
	if got := len(rec.Named(warden.EventToolEnd)); got != total {
		t.Errorf("tool.end events %d, want %d", got, total)
	}
	if got := len(rec.Named(warden.EventToolStart)); int64(got) != ran.Load() {
		t.Errorf("tool.start events %d, want %d", got, ran.Load())
	}
}

func TestDoubleSecurityPass_EscalationHandler(t *testing.T) {
	locked := func(_ context.Context, e policy.Escalation) (policy.EscalationAnswer, error) {
		cmd, _ := e.Args.String("command")
		if !strings.HasSuffix(cmd, " --locked") {
			cmd += " --locked"
		}
		a := e.Args.With("command", cmd)
		return policy.EscalationAnswer{Approve: true, Args: &a}, nil
	}
	appendAlways := func(_ context.Context, e policy.Escalation) (policy.EscalationAnswer, error) {
		cmd, _ := e.Args.String("command")
		a := e.Args.With("command", cmd+" -v")
		return policy.EscalationAnswer{Approve: true, Args: &a}, nil
	}
	tests := []struct {
		name    string
		handler policy.EscalationHandler
		command string
		status  warden.Status
		stage   warden.Stage
		ran     string
		text    string
	}{
		{"true allows unchanged", func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) {
			return policy.EscalationAnswer{Approve: true}, nil
		}, "cargo build", warden.StatusRan, warden.StageExecute, `{"command":"cargo build"}`, ""},
		{"replacement runs after S2 accepts it", locked, "cargo build", warden.StatusRan, warden.StageExecute, `{"command":"cargo build --locked"}`, ""},
		{"unstable replacement fails closed in S2", appendAlways, "cargo build", warden.StatusRefused, warden.StageFinalCheck, "",
			"[permission denied: security hook changed arguments during final validation]"},
		{"replacement into a denied command", func(_ context.Context, e policy.Escalation) (policy.EscalationAnswer, error) {
			a := e.Args.With("command", "rm -rf /")
			return policy.EscalationAnswer{Approve: true, Args: &a}, nil
		}, "cargo build", warden.StatusRefused, warden.StageFinalCheck, "", "[permission denied: denied by rule: rm *]"},
		{"declined", func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) {
			return policy.EscalationAnswer{}, nil
		}, "cargo build", warden.StatusRefused, warden.StagePermission, "",
			"[permission denied: Permission escalation for bash. was declined: escalate by rule: *]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := mustRules(t, policy.RuleConfig{
				Deny:       map[string][]string{"bash": {"rm *"}},
				Escalate:   map[string][]string{"bash": {"*"}},
				OnEscalate: tt.handler,
			})
			var p probe
			g := mustBind(t, warden.Config{Checkers: []warden.Checker{rules}}, p.tool("bash"))
			out := call(t, g, "bash", `{"command":"`+tt.command+`"}`)
			if out.Status != tt.status || out.Stage != tt.stage {
				t.Fatalf("got %+v, want %s at %s", viewOf(out), tt.status, tt.stage)
			}
			if tt.ran != "" && (p.runs() != 1 || js(p.last()) != tt.ran) {
				t.Errorf("tool ran %d times with %s, want once with %s", p.runs(), js(p.last()), tt.ran)
			}
			if tt.ran == "" && p.runs() != 0 {
				t.Errorf("tool ran %d times", p.runs())
			}
			if tt.text != "" && out.ModelText != tt.text {
				t.Errorf("model text %q, want %q", out.ModelText, tt.text)
			}
		})
	}
	t.Run("handler error fails closed", func(t *testing.T) {
		rules := mustRules(t, policy.RuleConfig{Escalate: map[string][]string{"bash": {"*"}},
			OnEscalate: func(context.Context, policy.Escalation) (policy.EscalationAnswer, error) {
				return policy.EscalationAnswer{Approve: true}, errors.New("approver service down")
			}})
		var handled atomic.Int64
		var p probe
		g := mustBind(t, warden.Config{Checkers: []warden.Checker{rules},
			ErrorHandlers: []*warden.ErrorHandler{errHandler("h", &handled, warden.ReplaceResult{Value: "x"}, nil)}}, p.tool("bash"))
		out := call(t, g, "bash", `{"command":"cargo build"}`)
		if out.Status != warden.StatusRefused || p.runs() != 0 || handled.Load() != 0 || !out.Decision.Fault ||
			!strings.Contains(out.Decision.Rationale, "evaluator error") {
			t.Errorf("got %+v %+v handlers %d", viewOf(out), out.Decision, handled.Load())
		}
	})
}

// A checker that answers after its deadline did not answer in time: the late answer
// must never count, even when it arrives at the same moment as the deadline. (Found by
// the property test: a checker that waits for ctx.Done() and then says "allow" was
// sometimes allowed, at random.)
func TestRolePolicy_LateAnswerNeverCounts(t *testing.T) {
	late := newAsync("late", func(ctx context.Context, _ warden.Request) (warden.Decision, error) {
		<-ctx.Done()
		return warden.Decision{Effect: warden.Allow, RuleID: "late-allow"}, nil
	})
	var p probe
	// A 1ns deadline has passed before the checker starts; callers on several goroutines
	// make the checker's late answer and the deadline race inside the Guard.
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{late}, CheckTimeout: time.Nanosecond}, p.tool("t"))
	var allowed atomic.Int64
	const goroutines, perG = 2, 20000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perG {
				out, err := g.Call(context.Background(), warden.Call{Tool: "t", Args: A(`{}`)})
				if err != nil || out.Status != warden.StatusRefused || out.ModelText != warden.UnauthorizedText("t") {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() > 0 || p.runs() > 0 {
		t.Errorf("%d of %d calls took a checker's answer given after its deadline (tool ran %d times)", allowed.Load(), goroutines*perG, p.runs())
	}
}

func TestErrorResult(t *testing.T) {
	var handled atomic.Int64
	var sawIsError atomic.Bool
	h := errHandler("h", &handled, warden.ReplaceResult{Value: "replaced"}, nil)
	post := &warden.Middleware{Name: "post", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
		sawIsError.Store(r.IsError)
		return warden.KeepResult()
	}}
	tool := warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		return warden.ErrorResult{Text: "upstream said: no such note"}, nil
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, ErrorHandlers: []*warden.ErrorHandler{h}, Middleware: []*warden.Middleware{post}}, tool)
	out := call(t, g, "t", `{}`)
	checkView(t, out, view{Status: warden.StatusFailed, Stage: warden.StageExecute, Executed: true, ModelText: "upstream said: no such note", IsError: true})
	if handled.Load() != 0 {
		t.Errorf("error handler called %d times for an ErrorResult, want 0", handled.Load())
	}
	if !sawIsError.Load() {
		t.Error("result-side middleware saw IsError false for an ErrorResult")
	}
	if out.Err != nil {
		t.Errorf("Outcome.Err = %v, want nil (the tool returned a result)", out.Err)
	}
}
