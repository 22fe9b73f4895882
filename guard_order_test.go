package warden_test

// Pipeline order (REFERENCE 1): what a refusal at one stage keeps from happening at the
// later ones, result ceilings and the guard-wide cap, credentials, and the session gate
// (ADR D6, REFERENCE 8).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/spectext"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/schema"
)

// countingCompiler wraps schema.Compiler and counts validations.
type countingCompiler struct{ validations atomic.Int64 }

func (c *countingCompiler) CompileSchema(tool string, raw json.RawMessage) (warden.ArgsValidator, error) {
	v, err := schema.Compiler{}.CompileSchema(tool, raw)
	if err != nil {
		return nil, err
	}
	return countingValidator{v, &c.validations}, nil
}

type countingValidator struct {
	v warden.ArgsValidator
	n *atomic.Int64
}

func (c countingValidator) ValidateArgs(a warden.Args) []warden.ArgProblem {
	c.n.Add(1)
	return c.v.ValidateArgs(a)
}

// provider is a counting credential provider.
type provider struct {
	n     atomic.Int64
	token string
	err   error
}

func (p *provider) Credential(_ context.Context, req warden.CredentialRequest) (warden.Credential, error) {
	p.n.Add(1)
	if p.err != nil {
		return warden.Credential{}, p.err
	}
	return warden.Credential{Service: req.Service, Scopes: req.Scopes, Token: p.token}, nil
}

const strictSchema = `{"type":"object","properties":{"n":{"type":"integer"},"path":{"type":"string"}},"required":["n","path"],"additionalProperties":false}`

func strictTool(p *probe, name string) warden.Executable {
	x := p.tool(name)
	x.InputSchema = json.RawMessage(strictSchema)
	return x
}

// ---------------------------------------------------------------------------------
// Order
// ---------------------------------------------------------------------------------

func TestOrder_RefusedCallsAreNeverValidatedNorAsked(t *testing.T) {
	denyMW := &warden.Middleware{Name: "deny", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.DenyCall("no") }}
	s2deny := newSync("s2", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		if _, ok := r.Args.Get("touched"); ok {
			return warden.Decision{Effect: warden.Deny, Rationale: "touched"}, nil
		}
		return warden.Decision{Effect: warden.Allow}, nil
	})
	touch := transform("touch", "mark", func(a warden.Args) warden.Args { return a.With("touched", true) })
	tests := []struct {
		name  string
		cfg   warden.Config
		stage warden.Stage
	}{
		{"S1 deny", warden.Config{Checkers: []warden.Checker{always("no", warden.Decision{Effect: warden.Deny})}}, warden.StagePermission},
		{"S1 halt", warden.Config{Checkers: []warden.Checker{always("no", warden.Decision{Effect: warden.Halt})}}, warden.StagePermission},
		{"S1 ask then deny", warden.Config{Checkers: []warden.Checker{always("ask", warden.Decision{Effect: warden.Ask}), always("no", warden.Decision{Effect: warden.Deny})}}, warden.StagePermission},
		{"middleware deny", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{denyMW}}, warden.StageMiddleware},
		{"S2 deny", warden.Config{Checkers: []warden.Checker{s2deny}, Middleware: []*warden.Middleware{touch}}, warden.StageFinalCheck},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := &countingCompiler{}
			rec := &warden.Recorder{}
			prov := &provider{token: "tok"}
			var p probe
			tool := strictTool(&p, "t")
			tool.CheckIn = &warden.CheckIn{Question: "Really?"}
			tool.Needs = &warden.Needs{Service: "svc"}
			cfg := tt.cfg
			cfg.Schemas, cfg.Sinks, cfg.CanPause, cfg.Credentials = cc, []warden.Sink{rec}, true, prov
			g := mustBind(t, cfg, tool)
			out, _ := g.Call(context.Background(), warden.Call{Tool: "t", Args: A(`{"n":1,"path":"x"}`)})
			if out.Stage != tt.stage || out.Executed || out.Pending != nil {
				t.Errorf("got %+v pending %v; want refused at %s", viewOf(out), out.Pending, tt.stage)
			}
			if cc.validations.Load() != 0 {
				t.Errorf("validated %d times, want 0", cc.validations.Load())
			}
			if n := len(rec.Named(warden.EventDecisionPending)); n != 0 {
				t.Errorf("%d decision.pending events, want 0", n)
			}
			if prov.n.Load() != 0 || p.runs() != 0 {
				t.Errorf("credentials %d, runs %d; want 0, 0", prov.n.Load(), p.runs())
			}
		})
	}
}

func TestOrder_InvalidArgsNeverGetCredentialsNorRun(t *testing.T) {
	rec := &warden.Recorder{}
	prov := &provider{token: "tok"}
	var p probe
	tool := strictTool(&p, "t")
	tool.Needs = &warden.Needs{Service: "svc"}
	g := mustBind(t, warden.Config{Ungoverned: true, Schemas: schema.Compiler{}, Credentials: prov, Sinks: []warden.Sink{rec}}, tool)

	out := call(t, g, "t", `{"n":"x","extra":1}`)
	want := "Invalid arguments for tool 't' — the call was not executed.\n" +
		"- '$': additional properties 'extra' not allowed\n" +
		"- '$': missing property 'path'\n" +
		"- '$.n': got string, want integer\n" +
		"Fix the arguments to match the tool's input schema and call it again."
	checkView(t, out, refusedAt(warden.StageValidation, want))
	if prov.n.Load() != 0 || p.runs() != 0 {
		t.Errorf("credentials %d, runs %d; want 0, 0", prov.n.Load(), p.runs())
	}
	if got := len(rec.Named(warden.EventArgsInvalid)); got != 1 {
		t.Errorf("args_invalid events %d, want 1", got)
	}
	if got := len(rec.Named(warden.EventCredentialRequest)); got != 0 {
		t.Errorf("credential.requested events %d, want 0", got)
	}
	// A valid sibling call on the same guard still runs.
	if out := call(t, g, "t", `{"n":1,"path":"a"}`); out.Status != warden.StatusRan || prov.n.Load() != 1 || p.runs() != 1 {
		t.Errorf("valid sibling: %+v credentials %d runs %d", viewOf(out), prov.n.Load(), p.runs())
	}
}

func TestOrder_ValidationJudgesTheFinalArgs(t *testing.T) {
	var p probe
	breaks := transform("breaks", "stringify", func(a warden.Args) warden.Args { return a.With("n", "1") })
	fixes := transform("fixes", "coerce", func(a warden.Args) warden.Args { return a.With("n", 1) })
	g1 := mustBind(t, warden.Config{Ungoverned: true, Schemas: schema.Compiler{}, Middleware: []*warden.Middleware{breaks}}, strictTool(&p, "t"))
	if out := call(t, g1, "t", `{"n":1,"path":"a"}`); out.Stage != warden.StageValidation || out.Executed {
		t.Errorf("a transform that breaks the args: %+v, want refused at validation", viewOf(out))
	}
	g2 := mustBind(t, warden.Config{Ungoverned: true, Schemas: schema.Compiler{}, Middleware: []*warden.Middleware{fixes}}, strictTool(&p, "t"))
	if out := call(t, g2, "t", `{"n":"1","path":"a"}`); out.Status != warden.StatusRan {
		t.Errorf("a transform that fixes the args: %+v, want ran", viewOf(out))
	}
}

func TestOrder_CheckInAsksBeforeCredentials(t *testing.T) {
	prov := &provider{token: "tok-123"}
	var p probe
	tool := p.tool("send")
	tool.CheckIn = &warden.CheckIn{Question: "Send this email?"}
	tool.Needs = &warden.Needs{Service: "mail", Scopes: []string{"send"}}
	g := mustBind(t, warden.Config{Ungoverned: true, Credentials: prov, CanPause: true}, tool)
	out := call(t, g, "send", `{"to":"a@b.c"}`)
	if out.Status != warden.StatusPending || out.Pending == nil || out.Pending.Kind != warden.KindCheckIn {
		t.Fatalf("got %+v, want a pending check-in", viewOf(out))
	}
	if prov.n.Load() != 0 || p.runs() != 0 {
		t.Fatalf("before the decision: credentials %d runs %d; want 0, 0", prov.n.Load(), p.runs())
	}
	out, err := g.Resume(context.Background(), *out.Pending, warden.Approved{By: "alice", Digest: out.Pending.ApprovalDigest()}, owner(*out.Pending))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != warden.StatusRan || prov.n.Load() != 1 || p.runs() != 1 {
		t.Errorf("after approval: %+v credentials %d runs %d; want ran, 1, 1", viewOf(out), prov.n.Load(), p.runs())
	}
	if c := p.creds[0]; c == nil || c.Token != "tok-123" || c.Service != "mail" {
		t.Errorf("tool got credential %+v", c)
	}
}

// ---------------------------------------------------------------------------------
// Result ceilings and the guard-wide cap
// ---------------------------------------------------------------------------------

func TestCeiling_PerToolResultCeiling(t *testing.T) {
	payload := strings.Repeat("x", 120)
	tests := []struct {
		name   string
		result string
		want   view
	}{
		{"over", payload, view{Status: warden.StatusRan, Stage: warden.StageCeiling, Executed: true, IsError: true,
			ModelText: "Result too large: big returned 120 chars, over its declared 100-char ceiling. Narrow the request and call again. No data was returned."}},
		{"exactly at the ceiling", payload[:100], view{Status: warden.StatusRan, Stage: warden.StageExecute, Executed: true, ModelText: payload[:100]}},
		{"multi-byte counts characters", strings.Repeat("é", 100), view{Status: warden.StatusRan, Stage: warden.StageExecute, Executed: true, ModelText: strings.Repeat("é", 100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &warden.Recorder{}
			var seen []any
			watch := &warden.Middleware{Name: "watch", OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
				seen = append(seen, r.Result)
				return warden.KeepResult()
			}}
			var postSaw []any
			tool := warden.Executable{Tool: warden.Tool{Name: "big"}, ResultCeiling: 100,
				Run: func(context.Context, warden.Args, *warden.Credential) (any, error) { return tt.result, nil },
				Post: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
					postSaw = append(postSaw, r.Result)
					return warden.KeepResult()
				},
			}
			g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{watch}, Sinks: []warden.Sink{rec}}, tool)
			out := call(t, g, "big", `{}`)
			checkView(t, out, tt.want)
			refused := tt.want.Stage == warden.StageCeiling
			for _, s := range append(seen, postSaw...) {
				if refused && s != nil {
					t.Errorf("a result link saw the refused payload %v", s)
				}
			}
			if refused && out.Result != nil {
				t.Errorf("Outcome.Result %v, want nil: the payload reaches no channel", out.Result)
			}
			if got := len(rec.Named(warden.EventResultRefused)); (got == 1) != refused {
				t.Errorf("result_refused events %d", got)
			}
		})
	}
}

func TestCeiling_MaxResultChars(t *testing.T) {
	const capN = 100
	mk := func(n int) warden.Executable {
		return warden.Executable{Tool: warden.Tool{Name: "dump"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
			return strings.Repeat("a", n), nil
		}}
	}
	for _, n := range []int{capN - 1, capN, capN + 1, 10 * capN} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			g := mustBind(t, warden.Config{Ungoverned: true, MaxResultChars: capN}, mk(n))
			out := call(t, g, "dump", `{}`)
			if n <= capN {
				if out.ModelText != strings.Repeat("a", n) || out.Stage != warden.StageExecute {
					t.Errorf("a result of %d chars under a %d cap was changed: %q", n, capN, out.ModelText)
				}
				return
			}
			checkMarker(t, out.ModelText, "dump", strings.Repeat("a", n), n, capN)
			if out.Stage != warden.StageCeiling || out.Status != warden.StatusRan {
				t.Errorf("got %+v, want ran, stage ceiling", viewOf(out))
			}
			if s, ok := out.Result.(string); !ok || len(s) != n {
				t.Errorf("Outcome.Result must keep the real result for audit")
			}
		})
	}
}

// checkMarker checks a truncation marker: valid JSON, within the cap, truncated true,
// the exact reason when present, a head that is a prefix of text, and no head without
// the reason.
func checkMarker(t *testing.T, marker, tool, text string, n, capN int) {
	t.Helper()
	if got := utf8.RuneCountInString(marker); got > capN {
		t.Errorf("cap %d: marker has %d chars: %s", capN, got, marker)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(marker), &m); err != nil {
		t.Fatalf("cap %d: marker is not JSON (%v): %s", capN, err, marker)
	}
	if m["truncated"] != true {
		t.Errorf("cap %d: truncated = %v", capN, m["truncated"])
	}
	reason, hasReason := m["reason"]
	if want := fmt.Sprintf("%s returned %d chars, over the %d-char cap. Narrow the request and call again.", tool, n, capN); hasReason && reason != want {
		t.Errorf("cap %d: reason %q, want %q", capN, reason, want)
	}
	if head, ok := m["head"].(string); ok {
		if !hasReason {
			t.Errorf("cap %d: head kept while the reason was dropped: %s", capN, marker)
		}
		if !strings.HasPrefix(text, head) {
			t.Errorf("cap %d: head %q is not a prefix of the text", capN, head)
		}
	}
	if !strings.HasPrefix(marker, `{"truncated":true`) {
		t.Errorf("cap %d: marker %s does not start with {\"truncated\":true", capN, marker)
	}
}

func TestCeiling_TruncationMarkerFitsEveryCap(t *testing.T) {
	text := strings.Repeat(`line "one" \ two`+"\n\tünï©ødé <&> ", 30)
	n := utf8.RuneCountInString(text)
	sawReasonOnly, sawHead, sawBare := false, false, false
	for capN := 18; capN < n; capN++ {
		marker := spectext.TruncationMarker("dump", text, n, capN)
		checkMarker(t, marker, "dump", text, n, capN)
		var m map[string]any
		_ = json.Unmarshal([]byte(marker), &m)
		_, r := m["reason"]
		_, h := m["head"]
		switch {
		case h:
			sawHead = true
		case r:
			sawReasonOnly = true
		default:
			sawBare = true
		}
	}
	if !sawHead || !sawReasonOnly || !sawBare {
		t.Errorf("marker shapes seen: head %v, reason only %v, bare %v; want all three over the range of caps", sawHead, sawReasonOnly, sawBare)
	}
	// Through a Guard, for a small cap that drops the head first.
	tool := warden.Executable{Tool: warden.Tool{Name: "dump"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) { return text, nil }}
	reasonLen := utf8.RuneCountInString(spectext.TruncationMarker("dump", text, n, 100))
	g := mustBind(t, warden.Config{Ungoverned: true, MaxResultChars: 100}, tool)
	out := call(t, g, "dump", `{}`)
	if out.ModelText != spectext.TruncationMarker("dump", text, n, 100) || reasonLen > 100 {
		t.Errorf("guard marker %q", out.ModelText)
	}
}

// ---------------------------------------------------------------------------------
// Credentials
// ---------------------------------------------------------------------------------

func TestCredentials_NoProvider(t *testing.T) {
	rec := &warden.Recorder{}
	var p probe
	tool := p.tool("gh")
	tool.Needs = &warden.Needs{Service: "github", Scopes: []string{"repo"}}
	g := mustBind(t, warden.Config{Ungoverned: true, Sinks: []warden.Sink{rec}}, tool)
	out := call(t, g, "gh", `{}`)
	checkView(t, out, refusedAt(warden.StageCredentials, "credential error for 'github': no credential provider configured"))
	if p.runs() != 0 {
		t.Errorf("tool ran %d times", p.runs())
	}
	if got := len(rec.Named(warden.EventCredentialFailed)); got != 1 {
		t.Errorf("credential.failed events %d, want 1", got)
	}
}

func TestCredentials_ProviderFailures(t *testing.T) {
	tests := []struct {
		name string
		prov warden.CredentialProvider
		want string
	}{
		{"error", &provider{err: errors.New("vault sealed")}, "credential error for 'github': vault sealed"},
		{"panic", panicProvider{}, "credential error for 'github': "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			tool := p.tool("gh")
			tool.Needs = &warden.Needs{Service: "github"}
			g := mustBind(t, warden.Config{Ungoverned: true, Credentials: tt.prov}, tool)
			out := call(t, g, "gh", `{}`)
			if out.Status != warden.StatusRefused || out.Stage != warden.StageCredentials || !strings.HasPrefix(out.ModelText, tt.want) || p.runs() != 0 {
				t.Errorf("got %+v runs %d, want refused at credentials with %q", viewOf(out), p.runs(), tt.want)
			}
		})
	}
}

type panicProvider struct{}

func (panicProvider) Credential(context.Context, warden.CredentialRequest) (warden.Credential, error) {
	panic("provider bug")
}

func TestCredentials_TokenNeverLeaks(t *testing.T) {
	const token = "ghp_SECRETTOKEN0123456789"
	tests := []struct {
		name   string
		run    func(cred *warden.Credential) (any, error)
		result *warden.Middleware
		status warden.Status
	}{
		{"token in result", func(c *warden.Credential) (any, error) { return "used " + c.Token + " ok", nil }, nil, warden.StatusRan},
		{"token in structured result", func(c *warden.Credential) (any, error) { return map[string]string{"auth": c.Token}, nil }, nil, warden.StatusRan},
		{"token in error", func(c *warden.Credential) (any, error) { return nil, errors.New("401 for token " + c.Token) }, nil, warden.StatusFailed},
		{"token in panic", func(c *warden.Credential) (any, error) { panic("bad token " + c.Token) }, nil, warden.StatusFailed},
		{"token in result-side replacement", func(c *warden.Credential) (any, error) { return "fine", nil },
			&warden.Middleware{Name: "echo", OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome {
				return warden.ReplaceModelResult("leak "+token, "debug")
			}}, warden.StatusRan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &warden.Recorder{}
			var gotCred *warden.Credential
			tool := warden.Executable{Tool: warden.Tool{Name: "gh"}, Needs: &warden.Needs{Service: "github"},
				Run: func(_ context.Context, _ warden.Args, c *warden.Credential) (any, error) {
					gotCred = c
					return tt.run(c)
				}}
			cfg := warden.Config{Ungoverned: true, Credentials: &provider{token: token}, Sinks: []warden.Sink{rec}}
			if tt.result != nil {
				cfg.Middleware = []*warden.Middleware{tt.result}
			}
			g := mustBind(t, cfg, tool)
			out, err := g.Call(context.Background(), warden.Call{Tool: "gh", Args: A(`{}`)})
			if gotCred == nil || gotCred.Token != token {
				t.Fatalf("tool got credential %v, want the token", gotCred)
			}
			if out.Status != tt.status {
				t.Errorf("status %s, want %s", out.Status, tt.status)
			}
			if strings.Contains(out.ModelText, token) || !strings.Contains(out.ModelText, "[redacted]") {
				t.Errorf("model text %q: want the token replaced by [redacted]", out.ModelText)
			}
			if err != nil && strings.Contains(err.Error(), token) {
				t.Errorf("returned error leaks the token: %v", err)
			}
			if out.Err != nil && strings.Contains(out.Err.Error(), token) {
				t.Errorf("Outcome.Err leaks the token: %v", out.Err)
			}
			for _, e := range out.SecondaryErrors {
				if strings.Contains(e.Error(), token) {
					t.Errorf("secondary error leaks the token: %v", e)
				}
			}
			for _, e := range rec.Events() {
				if s := fmt.Sprintf("%+v", e); strings.Contains(s, token) {
					t.Errorf("event %s leaks the token: %s", e.Name, s)
				}
			}
			if b, _ := json.Marshal(out); strings.Contains(string(b), token) {
				t.Errorf("the Outcome's JSON leaks the token")
			}
		})
	}
}

func TestCredentials_RedactedForms(t *testing.T) {
	c := warden.Credential{Service: "github", Scopes: []string{"repo"}, Token: "sekrit"}
	if s := fmt.Sprint(c) + fmt.Sprintf("%v %s", c, c); strings.Contains(s, "sekrit") {
		t.Errorf("String leaks the token: %s", s)
	}
	b, err := json.Marshal(c)
	if err != nil || strings.Contains(string(b), "sekrit") {
		t.Errorf("JSON leaks the token: %s %v", b, err)
	}
}

func TestCredentials_NeverForCallsThatWillNotRun(t *testing.T) {
	tests := []struct {
		name string
		cfg  warden.Config
		args string
	}{
		{"gate", warden.Config{Ungoverned: true, Gate: warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { return false, nil })}, `{"n":1,"path":"a"}`},
		{"checker", warden.Config{Checkers: []warden.Checker{always("no", warden.Decision{Effect: warden.Deny})}}, `{"n":1,"path":"a"}`},
		{"middleware", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{{Name: "d", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.DenyCall("no") }}}}, `{"n":1,"path":"a"}`},
		{"validation", warden.Config{Ungoverned: true}, `{"n":1}`},
		{"pending ask", warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("a", "ok?")}}, `{"n":1,"path":"a"}`},
		{"escalation without pause", warden.Config{Checkers: []warden.Checker{always("esc", warden.Decision{Effect: warden.Ask, Rationale: "escalate by rule: *"})}}, `{"n":1,"path":"a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prov := &provider{token: "t"}
			rec := &warden.Recorder{}
			var p probe
			tool := strictTool(&p, "t")
			tool.Needs = &warden.Needs{Service: "svc"}
			cfg := tt.cfg
			cfg.Credentials, cfg.Schemas, cfg.Sinks = prov, schema.Compiler{}, []warden.Sink{rec}
			g := mustBind(t, cfg, tool)
			out := call(t, g, "t", tt.args)
			if out.Executed || prov.n.Load() != 0 || len(rec.Named(warden.EventCredentialRequest)) != 0 {
				t.Errorf("got %+v, credentials requested %d times; want none", viewOf(out), prov.n.Load())
			}
		})
	}
}

// ---------------------------------------------------------------------------------
// Session gate (ADR D6)
// ---------------------------------------------------------------------------------

func TestGate_NoGateAllows(t *testing.T) {
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true}, p.tool("ls"))
	if out := call(t, g, "ls", `{}`); out.Status != warden.StatusRan {
		t.Errorf("got %+v, want ran", viewOf(out))
	}
}

func TestGate_ByFunctionName(t *testing.T) {
	rec := &warden.Recorder{}
	var invs []warden.Invocation
	gate := warden.GateFunc(func(_ context.Context, inv warden.Invocation) (bool, error) {
		invs = append(invs, inv)
		return inv.Function != "rm", nil
	})
	var rm, ls probe
	g := mustBind(t, warden.Config{Ungoverned: true, Gate: gate, Sinks: []warden.Sink{rec}}, rm.tool("rm"), ls.tool("ls"))
	out, err := g.Call(context.Background(), warden.Call{Tool: "rm", Args: A(`{"path":"/"}`), Session: "sess-1"})
	if err != nil {
		t.Fatalf("a gate refusal is data, not an error: %v", err)
	}
	checkView(t, out, refusedAt(warden.StageGate, `{"error":"denied by governance gate","function":"rm"}`))
	if out := call(t, g, "ls", `{}`); out.Status != warden.StatusRan {
		t.Errorf("ls: %+v", viewOf(out))
	}
	if rm.runs() != 0 || ls.runs() != 1 {
		t.Errorf("rm ran %d, ls ran %d; want 0, 1", rm.runs(), ls.runs())
	}
	denied := rec.Named(warden.EventGateDenied)
	if len(denied) != 1 || denied[0].Tool != "rm" || denied[0].Session != "sess-1" {
		t.Errorf("gate.denied events %+v, want exactly one for rm", denied)
	}
	if invs[0].Function != "rm" || invs[0].SessionID != "sess-1" || js(invs[0].Args) != `{"path":"/"}` {
		t.Errorf("gate saw %+v", invs[0])
	}
}

func TestGate_FailuresRefuse(t *testing.T) {
	tests := map[string]warden.Gate{
		"false":        warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { return false, nil }),
		"error":        warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { return true, errors.New("gate down") }),
		"panic":        warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { panic("gate bug") }),
		"nil error ok": nil,
	}
	for name, gate := range tests {
		t.Run(name, func(t *testing.T) {
			var p probe
			var add = p.tool("add")
			cfg := warden.Config{Ungoverned: true}
			if gate != nil {
				cfg.Gate = gate
			}
			g := mustBind(t, cfg, add)
			out := call(t, g, "add", `{"a":1,"b":2}`)
			if gate == nil {
				if out.Status != warden.StatusRan {
					t.Errorf("got %+v", viewOf(out))
				}
				return
			}
			checkView(t, out, refusedAt(warden.StageGate, `{"error":"denied by governance gate","function":"add"}`))
			if p.runs() != 0 {
				t.Errorf("the tool body ran %d times", p.runs())
			}
			if name != "false" && !out.Decision.Fault {
				t.Errorf("a failing gate is a fault: %+v", out.Decision)
			}
		})
	}
}

func TestGate_OnArguments(t *testing.T) {
	gate := warden.GateFunc(func(_ context.Context, inv warden.Invocation) (bool, error) {
		v, ok := inv.Args.Get("a")
		n, isNum := v.(json.Number)
		if !ok || !isNum {
			return false, nil
		}
		f, err := n.Float64()
		return err == nil && f >= 0, nil
	})
	var runs atomic.Int64
	add := warden.Executable{Tool: warden.Tool{Name: "add"}, Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
		runs.Add(1)
		x, _ := a.Get("a")
		y, _ := a.Get("b")
		xi, _ := x.(json.Number).Int64()
		yi, _ := y.(json.Number).Int64()
		return xi + yi, nil
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, Gate: gate}, add)
	if out := call(t, g, "add", `{"a":1,"b":2}`); out.ModelText != "3" || out.Status != warden.StatusRan {
		t.Errorf("add(1,2): %+v, want 3", viewOf(out))
	}
	out := call(t, g, "add", `{"a":-1,"b":2}`)
	checkView(t, out, refusedAt(warden.StageGate, `{"error":"denied by governance gate","function":"add"}`))
	if runs.Load() != 1 {
		t.Errorf("tool ran %d times, want only the permitted call", runs.Load())
	}
}

func TestGate_AllowDoesNotSkipCheckers(t *testing.T) {
	gate := warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { return true, nil })
	var p probe
	g := mustBind(t, warden.Config{Gate: gate, Checkers: []warden.Checker{always("no", warden.Decision{Effect: warden.Deny, Rationale: "role"})}}, p.tool("t"))
	out := call(t, g, "t", `{}`)
	checkView(t, out, refusedAt(warden.StagePermission, "[permission denied: role]"))
}

func TestGate_RunsBeforeCheckers(t *testing.T) {
	c := allowChecker("c")
	gate := warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { return false, nil })
	var p probe
	g := mustBind(t, warden.Config{Gate: gate, Checkers: []warden.Checker{c}}, p.tool("t"))
	call(t, g, "t", `{}`)
	if c.count() != 0 {
		t.Errorf("checker asked %d times after a gate refusal", c.count())
	}
}

func TestGateDeniedText(t *testing.T) {
	got := spectext.GateDeniedText("add")
	if d := cmp.Diff(`{"error":"denied by governance gate","function":"add"}`, got); d != "" {
		t.Error(d)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(spectext.GateDeniedText(`we"ird`)), &m); err != nil || m["function"] != `we"ird` {
		t.Errorf("GateDeniedText with a quote: %v %v", m, err)
	}
}

func TestCredentials_TokenNeverLeaksOnCancellation(t *testing.T) {
	const token = "ghp_CANCELTOKEN42"
	started := make(chan struct{})
	tool := warden.Executable{Tool: warden.Tool{Name: "gh"}, Needs: &warden.Needs{Service: "github"},
		Run: func(ctx context.Context, _ warden.Args, c *warden.Credential) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, fmt.Errorf("request with %s aborted: %w", c.Token, ctx.Err())
		}}
	g := mustBind(t, warden.Config{Ungoverned: true, Credentials: &provider{token: token}}, tool)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	out, err := g.Call(ctx, warden.Call{Tool: "gh", Args: A(`{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	for what, s := range map[string]string{"model text": out.ModelText, "returned error": fmt.Sprint(err), "Outcome.Err": fmt.Sprint(out.Err)} {
		if strings.Contains(s, token) {
			t.Errorf("%s leaks the token: %s", what, s)
		}
	}
}

// ---------------------------------------------------------------------------------
// Journal: written ahead of execution
// ---------------------------------------------------------------------------------

type journal struct {
	mu       sync.Mutex
	log      []string
	beginErr error
	endErr   error
	outcomes []warden.Outcome
}

func (j *journal) add(s string, o warden.Outcome) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log = append(j.log, s)
	j.outcomes = append(j.outcomes, o)
}

func (j *journal) entries() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.log...)
}

func (j *journal) Begin(_ context.Context, c warden.Call, o warden.Outcome) (warden.JournalRef, error) {
	j.add("begin "+c.Tool, o)
	return 7, j.beginErr
}

func (j *journal) End(_ context.Context, ref warden.JournalRef, c warden.Call, o warden.Outcome) error {
	j.add(fmt.Sprintf("end %s ref=%d %s executed=%v", c.Tool, ref, o.Status, o.Executed), o)
	return j.endErr
}

func (j *journal) Record(_ context.Context, c warden.Call, o warden.Outcome) error {
	j.add(fmt.Sprintf("record %s %s executed=%v", c.Tool, o.Status, o.Executed), o)
	return nil
}

func TestJournal_WritesAheadOfExecution(t *testing.T) {
	j := &journal{}
	var beganBeforeRun bool
	tool := warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		beganBeforeRun = slices.Contains(j.entries(), "begin t")
		return "ok", nil
	}}
	var denied probe
	g := mustBind(t, warden.Config{Journal: j, Checkers: []warden.Checker{newSync("c", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		if r.Target == "t" {
			return warden.Decision{Effect: warden.Allow}, nil
		}
		return warden.Decision{Effect: warden.Deny}, nil
	})}}, tool, denied.tool("no"))
	call(t, g, "t", `{}`)
	call(t, g, "no", `{}`)
	if !beganBeforeRun {
		t.Error("the tool ran before the journal's Begin")
	}
	want := []string{"begin t", "end t ref=7 ran executed=true", "record no refused executed=false"}
	if d := cmp.Diff(want, j.entries()); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
}

func TestJournal_FailingBeginRefuses(t *testing.T) {
	log, logs := testLogger()
	rec := &warden.Recorder{}
	j := &journal{beginErr: errors.New("disk full")}
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, Logger: log, Journal: j, Sinks: []warden.Sink{rec}}, p.tool("t"))
	out := call(t, g, "t", `{}`)
	checkView(t, out, refusedAt(warden.StageExecute, warden.JournalUnavailableText("t")))
	if p.runs() != 0 {
		t.Errorf("an unrecordable call ran %d times", p.runs())
	}
	if strings.Contains(out.ModelText, "disk full") {
		t.Errorf("operator detail reaches the model: %q", out.ModelText)
	}
	if n := len(rec.Named(warden.EventJournalFailed)); n != 1 {
		t.Errorf("journal.failed events %d, want 1", n)
	}
	if !strings.Contains(logs.String(), "disk full") {
		t.Errorf("the failure is not reported to Config.Logger: %q", logs.String())
	}
}

func TestJournal_FailingEndChangesNothing(t *testing.T) {
	log, logs := testLogger()
	rec := &warden.Recorder{}
	j := &journal{endErr: errors.New("replica lag")}
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, Logger: log, Journal: j, Sinks: []warden.Sink{rec}}, p.tool("t"))
	out := call(t, g, "t", `{}`)
	if out.Status != warden.StatusRan || p.runs() != 1 {
		t.Errorf("got %+v; a failing End must not change an outcome that happened", viewOf(out))
	}
	if n := len(rec.Named(warden.EventJournalFailed)); n != 1 {
		t.Errorf("journal.failed events %d, want 1", n)
	}
	if !strings.Contains(logs.String(), "replica lag") {
		t.Errorf("the failure is not reported to Config.Logger: %q", logs.String())
	}
}

func TestJournal_EndOutlivesCancellation(t *testing.T) {
	j := &journal{}
	started := make(chan struct{})
	tool := warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(ctx context.Context, _ warden.Args, _ *warden.Credential) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	g := mustBind(t, warden.Config{Ungoverned: true, Journal: j}, tool)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := g.Call(ctx, warden.Call{Tool: "t", Args: A(`{}`)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	want := []string{"begin t", "end t ref=7 failed executed=true"}
	if d := cmp.Diff(want, j.entries()); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
}

// ---------------------------------------------------------------------------------
// Skill gate (REFERENCE 1.6, 4)
// ---------------------------------------------------------------------------------

func skillTool(p *probe) warden.Executable {
	x := p.tool(warden.ReadSkillTool)
	x.Run = p.fn(func(_ context.Context, a warden.Args) (any, error) {
		id, _ := a.String("id")
		return "skill body of " + id, nil
	})
	return x
}

// skillChecker allows tool_call and answers d for skill_read.
func skillChecker(name string, d func(ctx context.Context) (warden.Decision, error)) *checker {
	c := newAsync(name, func(ctx context.Context, r warden.Request) (warden.Decision, error) {
		if r.Capability == warden.CapSkillRead {
			return d(ctx)
		}
		return warden.Decision{Effect: warden.Allow}, nil
	})
	c.caps = []warden.Capability{warden.CapSkillRead}
	return c
}

func TestSkillGate_RolePolicy(t *testing.T) {
	rp, err := policy.FromRoles(map[string][]string{"support": {warden.ReadSkillTool, "refunds"}}, "support",
		&policy.RoleRules{Skills: map[string][]string{"support": {"lookup"}}})
	if err != nil {
		t.Fatal(err)
	}
	var p, refunds probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{rp}}, skillTool(&p), refunds.tool("refunds"))
	out := call(t, g, warden.ReadSkillTool, `{"id":"payroll"}`)
	checkView(t, out, refusedAt(warden.StageSkill, "[permission denied: Skill 'payroll' is not available to the 'support' role.]"))
	// A tool named like a skill never grants the skill.
	out = call(t, g, warden.ReadSkillTool, `{"id":"refunds"}`)
	checkView(t, out, refusedAt(warden.StageSkill, "[permission denied: Skill 'refunds' is not available to the 'support' role.]"))
	if p.runs() != 0 {
		t.Errorf("the skill body was computed %d times for refused skills", p.runs())
	}
	if out := call(t, g, warden.ReadSkillTool, `{"id":"lookup"}`); out.Status != warden.StatusRan || out.ModelText != "skill body of lookup" {
		t.Errorf("allowed skill: %+v", viewOf(out))
	}
	var skillChecks []string
	for _, c := range out.Checks {
		if c.Pass == "skill" {
			skillChecks = append(skillChecks, c.Target)
		}
	}
	if d := cmp.Diff([]string{"skill:refunds"}, skillChecks); d != "" {
		t.Errorf("skill checks (-want +got):\n%s", d)
	}
}

func TestSkillGate_Halt(t *testing.T) {
	c := skillChecker("skills", func(context.Context) (warden.Decision, error) {
		return warden.Decision{Effect: warden.Halt, Reason: "security:skill"}, nil
	})
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{c}}, skillTool(&p))
	out, err := g.Call(context.Background(), warden.Call{Tool: warden.ReadSkillTool, Args: A(`{"id":"payroll"}`)})
	var h *warden.PolicyHaltError
	if !errors.As(err, &h) {
		t.Fatalf("error %v, want *PolicyHaltError", err)
	}
	if out.ModelText != "Skill 'payroll' is not available in this context." || out.Tool != warden.ReadSkillTool || out.Status != warden.StatusHalted || p.runs() != 0 {
		t.Errorf("got %+v tool %q", viewOf(out), out.Tool)
	}
}

// An ask is not an allow: a checker that escalates a skill activation must get a
// person (or a refusal when nobody can be asked), never a silent pass.
func TestSkillGate_AskIsNotAnAllow(t *testing.T) {
	for _, canPause := range []bool{false, true} {
		t.Run(fmt.Sprint("canPause=", canPause), func(t *testing.T) {
			c := skillChecker("skills", func(context.Context) (warden.Decision, error) {
				return warden.Decision{Effect: warden.Ask, Rationale: "payroll needs a manager"}, nil
			})
			var p probe
			g := mustBind(t, warden.Config{Checkers: []warden.Checker{c}, CanPause: canPause}, skillTool(&p))
			out := call(t, g, warden.ReadSkillTool, `{"id":"payroll"}`)
			if out.Executed || p.runs() != 0 {
				t.Errorf("a skill_read escalation was treated as an allow: %+v", viewOf(out))
			}
			if want := map[bool]warden.Status{false: warden.StatusRefused, true: warden.StatusPending}[canPause]; out.Status != want {
				t.Errorf("status %s, want %s", out.Status, want)
			}
		})
	}
}

// The skill gate asks checkers too, so the checker deadline applies there as well: a
// checker that does not answer is a denial, not a hung call.
func TestSkillGate_CheckerDeadline(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c := skillChecker("slow-skills", func(ctx context.Context) (warden.Decision, error) {
		select {
		case <-ctx.Done():
			return warden.Decision{}, ctx.Err()
		case <-release:
			return warden.Decision{Effect: warden.Allow}, nil
		}
	})
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{c}, CheckTimeout: 20 * time.Millisecond}, skillTool(&p))
	done := make(chan warden.Outcome, 1)
	go func() {
		out, _ := g.Call(context.Background(), warden.Call{Tool: warden.ReadSkillTool, Args: A(`{"id":"payroll"}`)})
		done <- out
	}()
	select {
	case out := <-done:
		if out.Executed || out.Status != warden.StatusRefused || out.ModelText != warden.UnauthorizedText(warden.SkillTarget("payroll")) && out.ModelText != warden.UnauthorizedText(warden.ReadSkillTool) {
			t.Errorf("got %+v, want a fault denial", viewOf(out))
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Call still blocked after 2s on a skill_read checker with CheckTimeout 20ms")
	}
}

func TestSkillGate_NotGoverned(t *testing.T) {
	var p probe
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{allowChecker("c")}}, skillTool(&p))
	out := call(t, g, warden.ReadSkillTool, `{"id":"anything"}`)
	if out.Status != warden.StatusRan {
		t.Errorf("no checker governs skill_read: %+v", viewOf(out))
	}
}
