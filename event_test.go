package warden_test

// Events (REFERENCE 12): one warden.tool.end per call, one warden.permission.check per
// check, sinks that cannot change a decision or slow the call path, and a JSON log sink
// that never writes argument values.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/schema"
)

func TestEvents_ExactlyOneToolEndPerCall(t *testing.T) {
	deny := always("no", warden.Decision{Effect: warden.Deny})
	halt := always("stop", warden.Decision{Effect: warden.Halt})
	touchDeny := newSync("s2", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		if _, ok := r.Args.Get("touched"); ok {
			return warden.Decision{Effect: warden.Deny}, nil
		}
		return warden.Decision{Effect: warden.Allow}, nil
	})
	touch := transform("touch", "mark", func(a warden.Args) warden.Args { return a.With("touched", true) })
	denyMW := &warden.Middleware{Name: "d", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.DenyCall("no") }}
	resDeny := &warden.Middleware{Name: "rd", OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome { return warden.DenyResult("withheld") }}
	no := warden.GateFunc(func(context.Context, warden.Invocation) (bool, error) { return false, nil })
	tests := []struct {
		name     string
		cfg      warden.Config
		tool     string
		args     string
		mod      func(*warden.Executable)
		status   warden.Status
		stage    warden.Stage
		executed bool
	}{
		{"ran", warden.Config{Ungoverned: true}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusRan, warden.StageExecute, true},
		{"unknown tool", warden.Config{Ungoverned: true}, "ghost", `{}`, nil, warden.StatusRefused, warden.StageLookup, false},
		{"gate", warden.Config{Ungoverned: true, Gate: no}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusRefused, warden.StageGate, false},
		{"permission", warden.Config{Checkers: []warden.Checker{deny}}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusRefused, warden.StagePermission, false},
		{"halt", warden.Config{Checkers: []warden.Checker{halt}}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusHalted, warden.StagePermission, false},
		{"middleware", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{denyMW}}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusRefused, warden.StageMiddleware, false},
		{"final check", warden.Config{Checkers: []warden.Checker{touchDeny}, Middleware: []*warden.Middleware{touch}}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusRefused, warden.StageFinalCheck, false},
		{"validation", warden.Config{Ungoverned: true}, "t", `{"n":"x"}`, nil, warden.StatusRefused, warden.StageValidation, false},
		{"human", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{askMW("a", "q?")}}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusRefused, warden.StageMiddleware, false},
		{"pending", warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("a", "q?")}}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusPending, warden.StageMiddleware, false},
		{"credentials", warden.Config{Ungoverned: true}, "t", `{"n":1,"path":"a"}`, func(e *warden.Executable) { e.Needs = &warden.Needs{Service: "s"} }, warden.StatusRefused, warden.StageCredentials, false},
		{"failed", warden.Config{Ungoverned: true}, "t", `{"n":1,"path":"a"}`, func(e *warden.Executable) {
			e.Run = func(context.Context, warden.Args, *warden.Credential) (any, error) { return nil, errors.New("x") }
		}, warden.StatusFailed, warden.StageExecute, true},
		{"result deny", warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{resDeny}}, "t", `{"n":1,"path":"a"}`, nil, warden.StatusRan, warden.StageResult, true},
		{"ceiling", warden.Config{Ungoverned: true}, "t", `{"n":1,"path":"a"}`, func(e *warden.Executable) { e.ResultCeiling = 3 }, warden.StatusRan, warden.StageCeiling, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &warden.Recorder{}
			cfg := tt.cfg
			cfg.Sinks, cfg.Schemas, cfg.Revision = []warden.Sink{rec}, schema.Compiler{}, "rev-7"
			var p probe
			tool := strictTool(&p, "t")
			if tt.mod != nil {
				tt.mod(&tool)
			}
			g := mustBind(t, cfg, tool)
			out, _ := g.Call(context.Background(), warden.Call{ID: "id-1", Tool: tt.tool, Args: A(tt.args), Session: "sess", Identity: warden.Identity{Tenant: "acme"}})
			ends := rec.Named(warden.EventToolEnd)
			if len(ends) != 1 {
				t.Fatalf("got %d tool.end events, want exactly 1", len(ends))
			}
			e := ends[0]
			got := []any{e.Executed, e.Status, e.Stage}
			if d := cmp.Diff([]any{tt.executed, tt.status, tt.stage}, got); d != "" {
				t.Errorf("tool.end executed/status/stage (-want +got):\n%s", d)
			}
			if out.Status != e.Status || out.Stage != e.Stage || out.Executed != e.Executed {
				t.Errorf("outcome %+v disagrees with its tool.end event", viewOf(out))
			}
			if n := len(rec.Named(warden.EventToolStart)); (n == 1) != tt.executed || n > 1 {
				t.Errorf("tool.start events %d for executed=%v", n, tt.executed)
			}
			for _, ev := range rec.Events() {
				if ev.Revision != "rev-7" || ev.CallID != "id-1" || ev.Session != "sess" || ev.Tool != tt.tool || ev.Identity.Tenant != "acme" || ev.Time.IsZero() {
					t.Errorf("event %s misses its envelope: %+v", ev.Name, ev)
				}
			}
			if names := eventNames(rec.Events()); names[len(names)-1] != warden.EventToolEnd {
				t.Errorf("tool.end is not the last event: %v", names)
			}
		})
	}
}

func TestEvents_OneToolEndPerResume(t *testing.T) {
	rec := &warden.Recorder{}
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, CanPause: true, Middleware: []*warden.Middleware{askMW("a", "q?")}, Sinks: []warden.Sink{rec}}, p.tool("t"))
	out := call(t, g, "t", `{}`)
	if _, err := g.Resume(context.Background(), *out.Pending, warden.Approved{By: "x", Digest: out.Pending.ApprovalDigest()}, owner(*out.Pending)); err != nil {
		t.Fatal(err)
	}
	ends := rec.Named(warden.EventToolEnd)
	if len(ends) != 2 || ends[0].Status != warden.StatusPending || ends[1].Status != warden.StatusRan || !ends[1].Executed {
		t.Errorf("tool.end events %+v, want pending then ran", ends)
	}
}

func TestEvents_Sequence(t *testing.T) {
	rec := &warden.Recorder{}
	tool := warden.Executable{Tool: warden.Tool{Name: "t"}, Needs: &warden.Needs{Service: "svc"},
		Run: func(context.Context, warden.Args, *warden.Credential) (any, error) { return "ok", nil }}
	mw := &warden.Middleware{Name: "m",
		OnToolCall:   func(context.Context, warden.ToolCall) warden.CallOutcome { return warden.AllowCall() },
		OnToolResult: func(context.Context, warden.ToolResult) warden.ResultOutcome { return warden.KeepResult() },
	}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{allowChecker("c")}, Middleware: []*warden.Middleware{mw},
		Credentials: &provider{token: "x"}, Sinks: []warden.Sink{rec}}, tool)
	call(t, g, "t", `{}`)
	want := []string{
		warden.EventPermissionCheck, warden.EventMiddlewareDecision, warden.EventPermissionCheck,
		warden.EventCredentialRequest, warden.EventCredentialAcquired, warden.EventToolStart,
		warden.EventMiddlewareDecision, warden.EventToolEnd,
	}
	if d := cmp.Diff(want, eventNames(rec.Events())); d != "" {
		t.Errorf("event sequence (-want +got):\n%s", d)
	}
	checks := rec.Named(warden.EventPermissionCheck)
	if checks[0].Pass != "s1" || checks[1].Pass != "s2" {
		t.Errorf("passes %q, %q", checks[0].Pass, checks[1].Pass)
	}
}

func TestEvents_PermissionCheckPerCheck(t *testing.T) {
	rp, _, tool := saveNoteFixture(t, "admin")
	rec := &warden.Recorder{}
	g := mustBind(t, warden.Config{Checkers: []warden.Checker{rp}, Sinks: []warden.Sink{rec}}, tool)
	call(t, g, "save_note", `{"note":"n"}`)
	type row struct {
		Capability warden.Capability
		Target     string
		Effect     warden.Effect
		RuleID     string
		Pass       string
	}
	var got []row
	for _, e := range rec.Named(warden.EventPermissionCheck) {
		got = append(got, row{e.Capability, e.Target, e.Effect, e.RuleID, e.Pass})
		if e.Rationale == "" || e.Checker == "" {
			t.Errorf("event without rationale or checker: %+v", e)
		}
	}
	want := []row{
		{warden.CapToolCall, "save_note", warden.Allow, "admin.allowlist", "s1"},
		{warden.CapMemoryWrite, "save_note", warden.Allow, "admin.allowlist", "s1"},
		{warden.CapUserData, "save_note", warden.Allow, "admin.allowlist", "s1"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("permission.check events (-want +got):\n%s", d)
	}
}

func TestEvents_IdentityOnlyWhenNamed(t *testing.T) {
	var buf bytes.Buffer
	sink := warden.LogSink{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	var p probe
	g := mustBind(t, warden.Config{Ungoverned: true, Sinks: []warden.Sink{sink}}, p.tool("t"))
	if _, err := g.Call(context.Background(), warden.Call{Tool: "t", Args: A(`{}`), Identity: warden.Identity{Tenant: "acme"}}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		if m["tenant"] != "acme" {
			t.Errorf("line without the named tenant: %s", line)
		}
		if _, ok := m["principal"]; ok {
			t.Errorf("line carries a principal nobody named: %s", line)
		}
	}
}

// testLogger is a logger for Config.Logger (or AsyncSinkOptions.Logger) and the buffer
// its records are written to.
func testLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEvents_PanickingSinkChangesNothing(t *testing.T) {
	log, logs := testLogger()
	bad := warden.SinkFunc(func(context.Context, warden.Event) { panic("sink exploded") })
	rec := &warden.Recorder{}
	var allowed, denied probe
	g := mustBind(t, warden.Config{
		Logger: log,
		Sinks:  []warden.Sink{bad, rec},
		Checkers: []warden.Checker{newSync("role", func(_ context.Context, r warden.Request) (warden.Decision, error) {
			if r.Target == "ok" {
				return warden.Decision{Effect: warden.Allow}, nil
			}
			return warden.Decision{Effect: warden.Deny, Rationale: "not ok"}, nil
		})},
	}, allowed.tool("ok"), denied.tool("nope"))
	if out := call(t, g, "ok", `{}`); out.Status != warden.StatusRan || allowed.runs() != 1 {
		t.Errorf("allowed call under a panicking sink: %+v", viewOf(out))
	}
	if out := call(t, g, "nope", `{}`); out.Status != warden.StatusRefused || denied.runs() != 0 || out.ModelText != "[permission denied: not ok]" {
		t.Errorf("denied call under a panicking sink: %+v", viewOf(out))
	}
	if n := len(rec.Named(warden.EventToolEnd)); n != 2 {
		t.Errorf("the sink after the panicking one got %d tool.end events, want 2", n)
	}
	if !strings.Contains(logs.String(), "sink exploded") {
		t.Errorf("a failing sink must be reported to Config.Logger; it got %q", logs.String())
	}
}

// TestEvents_AsyncSinkDoesNotSlowCalls runs calls while the async sink's destination is
// stuck: they complete anyway (in the synctest bubble a call that waited for the sink
// would be reported as a deadlock), the overflow is dropped and counted, and Close
// delivers what was queued once the destination moves again.
func TestEvents_AsyncSinkDoesNotSlowCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var delivered atomic.Int64
		release := make(chan struct{})
		stuck := warden.SinkFunc(func(context.Context, warden.Event) {
			<-release
			delivered.Add(1)
		})
		async := warden.NewAsyncSink(stuck, &warden.AsyncSinkOptions{Buffer: 4})
		rec := &warden.Recorder{}
		var p probe
		g := mustBind(t, warden.Config{Sinks: []warden.Sink{async, rec}, Checkers: []warden.Checker{allowChecker("c")}}, p.tool("t"))
		for i := range 10 {
			if out := call(t, g, "t", `{}`); out.Status != warden.StatusRan {
				t.Errorf("call %d behind a stuck async sink: %+v", i, viewOf(out))
			}
		}
		synctest.Wait() // the delivery goroutine is blocked in the stuck sink
		if n := delivered.Load(); n != 0 {
			t.Fatalf("%d events delivered through a stuck sink", n)
		}
		if async.Dropped() == 0 {
			t.Errorf("Dropped() = 0 after %d events into a queue of 4 behind a stuck sink", len(rec.Events()))
		}
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := async.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if got, want := delivered.Load()+async.Dropped(), int64(len(rec.Events())); got != want {
			t.Errorf("delivered %d + dropped %d = %d, want every emitted event accounted for (%d)", delivered.Load(), async.Dropped(), got, want)
		}
		// Emitting after Close is harmless.
		async.Emit(context.Background(), warden.Event{Name: "late"})
		if err := async.Close(ctx); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

// A next sink that panics on one event is reported to the options' Logger and still
// receives every later event: the panic does not stop the delivering goroutine.
func TestEvents_AsyncSinkSurvivesAPanickingSink(t *testing.T) {
	log, logs := testLogger()
	var mu sync.Mutex
	var got []string
	next := warden.SinkFunc(func(_ context.Context, e warden.Event) {
		if e.Name == "boom" {
			panic("sink exploded")
		}
		mu.Lock()
		got = append(got, e.Name)
		mu.Unlock()
	})
	async := warden.NewAsyncSink(next, &warden.AsyncSinkOptions{Buffer: 8, Logger: log})
	for _, name := range []string{"a", "boom", "c", "boom", "e"} {
		async.Emit(context.Background(), warden.Event{Name: name})
	}
	if err := async.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []string{"a", "c", "e"}) || async.Dropped() != 0 {
		t.Errorf("delivered %v (dropped %d), want [a c e]", got, async.Dropped())
	}
	if n := strings.Count(logs.String(), "sink exploded"); n != 2 {
		t.Errorf("the Logger got %d panic reports, want 2: %q", n, logs.String())
	}
}

// Every sink of a fan-out gets every event whatever the sinks before it do: two
// panicking sinks in front of a Recorder, and the panics go to Config.Logger.
func TestEvents_FanOutIsolatesEachSink(t *testing.T) {
	log, logs := testLogger()
	bad := warden.SinkFunc(func(context.Context, warden.Event) { panic("first sink exploded") })
	worse := warden.SinkFunc(func(context.Context, warden.Event) { panic("second sink exploded") })
	rec, want := &warden.Recorder{}, &warden.Recorder{}
	var p, q probe
	g := mustBind(t, warden.Config{Ungoverned: true, Logger: log, Sinks: []warden.Sink{bad, worse, rec}}, p.tool("t"))
	ref := mustBind(t, warden.Config{Ungoverned: true, Sinks: []warden.Sink{want}}, q.tool("t"))
	call(t, g, "t", `{}`)
	call(t, ref, "t", `{}`)
	names := func(r *warden.Recorder) []string {
		var out []string
		for _, e := range r.Events() {
			out = append(out, e.Name)
		}
		return out
	}
	if d := cmp.Diff(names(want), names(rec)); d != "" || len(rec.Events()) == 0 {
		t.Errorf("the sink after two panicking ones (-want +got):\n%s", d)
	}
	for _, says := range []string{"first sink exploded", "second sink exploded"} {
		if n := strings.Count(logs.String(), says); n != len(rec.Events()) {
			t.Errorf("%q reported %d times, want once per event (%d)", says, n, len(rec.Events()))
		}
	}
}

func TestEvents_AsyncSinkCloseHonoursContext(t *testing.T) {
	release := make(chan struct{})
	blocked := warden.SinkFunc(func(context.Context, warden.Event) { <-release })
	async := warden.NewAsyncSink(blocked, &warden.AsyncSinkOptions{Buffer: 1})
	async.Emit(context.Background(), warden.Event{Name: "a"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := async.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with a stuck sink: %v, want DeadlineExceeded", err)
	}
	close(release)
	if err := async.Close(context.Background()); err != nil {
		t.Errorf("Close after release: %v", err)
	}
}

// Sinks are shared by every call of a Guard, so Close at shutdown can overlap Emits
// from calls still in flight. That must be safe (and clean under -race): no panic,
// no data race.
func TestEvents_AsyncSinkEmitRacingClose(t *testing.T) {
	for range 20 {
		async := warden.NewAsyncSink(warden.SinkFunc(func(context.Context, warden.Event) {}), &warden.AsyncSinkOptions{Buffer: 8})
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 100 {
					async.Emit(context.Background(), warden.Event{Name: "e"})
				}
			}()
		}
		close(start)
		if err := async.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

func TestEvents_LogSinkWritesJSONLinesWithoutValues(t *testing.T) {
	const marker = "VALUE-MARKER-77d1"
	var buf bytes.Buffer
	sink := warden.LogSink{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	tool := warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		return "result " + marker, nil
	}}
	mw := &warden.Middleware{Name: "m",
		OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
			return warden.TransformCall(c.Args.With("extra", marker), "enrich")
		}}
	g := mustBind(t, warden.Config{Sinks: []warden.Sink{sink}, Middleware: []*warden.Middleware{mw}, Checkers: []warden.Checker{allowChecker("c")}, Revision: "r1"}, tool)
	out := call(t, g, "t", `{"secret":"`+marker+`"}`)
	if !strings.Contains(out.ModelText, marker) {
		t.Fatal("precondition: the model reads the marker")
	}
	var names []string
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, marker) {
			t.Errorf("log line carries a value: %s", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %s", line)
		}
		msg, _ := m["msg"].(string)
		names = append(names, msg)
		if m["revision"] != "r1" || m["tool"] != "t" {
			t.Errorf("line misses revision or tool: %s", line)
		}
		if msg == warden.EventToolEnd {
			if m["executed"] != true || m["status"] != "ran" || m["stage"] != "execute" {
				t.Errorf("tool.end line %s", line)
			}
		}
		if msg == warden.EventPermissionCheck && (m["effect"] != "allow" || m["capability"] != "tool_call") {
			t.Errorf("permission.check line %s", line)
		}
		if msg == warden.EventMiddlewareDecision && (m["changed"] != true || m["why"] != "enrich") {
			t.Errorf("middleware.decision line %s", line)
		}
	}
	want := []string{warden.EventPermissionCheck, warden.EventMiddlewareDecision, warden.EventPermissionCheck, warden.EventToolStart, warden.EventToolEnd}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("log lines (-want +got):\n%s", d)
	}
}

func TestRecorder(t *testing.T) {
	var r warden.Recorder
	r.Emit(context.Background(), warden.Event{Name: "a"})
	r.Emit(context.Background(), warden.Event{Name: "b"})
	r.Emit(context.Background(), warden.Event{Name: "a"})
	if got := len(r.Named("a")); got != 2 {
		t.Errorf("Named(a) = %d", got)
	}
	ev := r.Events()
	ev[0].Name = "changed"
	if r.Events()[0].Name != "a" {
		t.Error("Events() returned the recorder's own slice")
	}
	r.Reset()
	if len(r.Events()) != 0 {
		t.Error("Reset kept events")
	}
}

type traceKey struct{}

// Sinks get the caller's context (its values: trace ids, request ids), for every event
// of every call, refusals included; recording may outlive cancellation
// (context.WithoutCancel) but must not lose the values.
func TestEvents_SinksSeeTheCallersContextValues(t *testing.T) {
	var mu sync.Mutex
	var missing []string
	sink := warden.SinkFunc(func(ctx context.Context, e warden.Event) {
		if ctx.Value(traceKey{}) != "trace-123" {
			mu.Lock()
			missing = append(missing, e.Name+"/"+string(e.Status))
			mu.Unlock()
		}
	})
	var ok, no probe
	g := mustBind(t, warden.Config{Sinks: []warden.Sink{sink}, Checkers: []warden.Checker{newSync("c", func(_ context.Context, r warden.Request) (warden.Decision, error) {
		if r.Target == "ok" {
			return warden.Decision{Effect: warden.Allow}, nil
		}
		return warden.Decision{Effect: warden.Deny}, nil
	})}}, ok.tool("ok"), no.tool("no"))
	ctx := context.WithValue(context.Background(), traceKey{}, "trace-123")
	for _, tool := range []string{"ok", "no", "ghost"} {
		if _, err := g.Call(ctx, warden.Call{Tool: tool, Args: A(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(missing) > 0 {
		t.Errorf("events delivered without the caller's context values: %v", missing)
	}
}
