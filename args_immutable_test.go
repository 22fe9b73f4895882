package warden_test

// Arguments are immutable all the way down (issue 12, deliverable 3): whatever a stage
// of the pipeline does with the arguments it received, through every accessor Args
// offers, it cannot change what another stage sees, what executes, what Outcome.Args
// says, or what the journal records. The tamperer below uses only what every version of
// Args offers (Get, At, Fields, Map and type assertions on the values), so these tests
// compile, and fail, on the commit before arrays became immutable.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/schema"
)

// tamper tries to rewrite, in place, every string it can reach inside v to "prod". It
// reports how many writes it made (a write into a copy counts too: the point is that no
// write reaches anyone else).
func tamper(v any) int {
	n := 0
	switch t := v.(type) {
	case []any:
		for i := range t {
			if _, ok := t[i].(string); ok {
				t[i] = "prod"
				n++
				continue
			}
			n += tamper(t[i])
		}
	case map[string]any:
		for k, x := range t {
			if _, ok := x.(string); ok {
				t[k] = "prod"
				n++
				continue
			}
			n += tamper(x)
		}
	case warden.Args:
		n += tamperArgs(t)
	}
	return n
}

// tamperArgs reaches the values of a through every accessor.
func tamperArgs(a warden.Args) int {
	n := 0
	for _, v := range a.Fields() {
		n += tamper(v)
	}
	for i := range a.Len() {
		_, v := a.At(i)
		n += tamper(v)
	}
	for _, k := range a.Keys() {
		v, _ := a.Get(k)
		n += tamper(v)
	}
	n += tamper(a.Map())
	return n
}

const immutableArgs = `{"cmd":"deploy","targets":["staging","dev"],"opts":{"paths":["./tmp",{"deep":["x"]}],"note":"n"}}`

const immutableSchema = `{
  "type": "object",
  "properties": {
    "cmd": {"const": "deploy"},
    "targets": {"type": "array", "items": {"enum": ["staging", "dev"]}},
    "opts": {"type": "object"}
  },
  "required": ["cmd", "targets"],
  "additionalProperties": false
}`

// seenLog records, per stage, the arguments that stage saw, as JSON taken at the moment
// it saw them.
type seenLog struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (l *seenLog) add(stage string, a warden.Args) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string][]string{}
	}
	l.seen[stage] = append(l.seen[stage], js(a))
}

func (l *seenLog) get() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen
}

// recordingSchemas is the real schema compiler; its validators also log what they see.
type recordingSchemas struct{ log *seenLog }

func (r recordingSchemas) CompileSchema(tool string, s json.RawMessage) (warden.ArgsValidator, error) {
	v, err := schema.Compiler{}.CompileSchema(tool, s)
	if err != nil {
		return nil, err
	}
	return recordingValidator{v, r.log}, nil
}

type recordingValidator struct {
	v   warden.ArgsValidator
	log *seenLog
}

func (r recordingValidator) ValidateArgs(a warden.Args) []warden.ArgProblem {
	r.log.add("schema", a)
	return r.v.ValidateArgs(a)
}

// snapshotJournal records the arguments of every journal call as JSON at the moment of
// the call, as a durable journal does.
type snapshotJournal struct{ log *seenLog }

func (j snapshotJournal) Begin(_ context.Context, _ warden.Call, o warden.Outcome) (warden.JournalRef, error) {
	j.log.add("journal.begin", o.Args)
	return 1, nil
}

func (j snapshotJournal) End(_ context.Context, _ warden.JournalRef, _ warden.Call, o warden.Outcome) error {
	j.log.add("journal.end", o.Args)
	return nil
}

func (j snapshotJournal) Record(_ context.Context, _ warden.Call, o warden.Outcome) error {
	j.log.add("journal.record", o.Args)
	return nil
}

func TestArgsImmutable_NoStageChangesWhatOthersSee(t *testing.T) {
	stages := []string{"checker", "middleware", "validator", "tool", "result-middleware", "postprocessor"}
	for _, who := range stages {
		t.Run(who+" tampers", func(t *testing.T) {
			log := &seenLog{}
			writes := 0
			attack := func(stage string, a warden.Args) {
				if stage != who {
					return
				}
				writes += tamperArgs(a)
				// What the tamperer holds must still read as it did.
				if got := js(a); got != immutableArgs {
					t.Errorf("%s: its own arguments changed under it: %s", stage, got)
				}
			}
			// The tampering checker runs first; the judging checker after it, in each pass.
			tamperer := newSync("tamperer", func(_ context.Context, r warden.Request) (warden.Decision, error) {
				attack("checker", r.Args)
				return warden.Decision{Effect: warden.Allow, RuleID: "tamperer"}, nil
			})
			judge := newSync("judge", func(_ context.Context, r warden.Request) (warden.Decision, error) {
				log.add("judge", r.Args)
				if strings.Contains(js(r.Args), "prod") {
					return warden.Decision{Effect: warden.Deny, RuleID: "no-prod", Rationale: "prod is not allowed"}, nil
				}
				return warden.Decision{Effect: warden.Allow, RuleID: "staging-ok"}, nil
			})
			mw := &warden.Middleware{Name: "mw",
				OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
					attack("middleware", c.Args)
					log.add("middleware", c.Args)
					return warden.AllowCall()
				},
				OnToolResult: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
					attack("result-middleware", r.Args)
					log.add("result-middleware", r.Args)
					return warden.KeepResult()
				},
			}
			validatorTamper := &tamperingSchemas{inner: recordingSchemas{log}, attack: attack}
			tool := warden.Executable{
				Tool: warden.Tool{Name: "deploy", InputSchema: json.RawMessage(immutableSchema)},
				Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
					log.add("tool", a)
					attack("tool", a)
					return "deployed " + js(a), nil
				},
				Post: func(_ context.Context, r warden.ToolResult) warden.ResultOutcome {
					attack("postprocessor", r.Args)
					return warden.KeepResult()
				},
			}
			g := mustBind(t, warden.Config{
				Checkers:   []warden.Checker{tamperer, judge},
				Middleware: []*warden.Middleware{mw},
				Schemas:    validatorTamper,
				Journal:    snapshotJournal{log},
			}, tool)
			in := A(immutableArgs)
			out, err := g.Call(context.Background(), warden.Call{ID: "c1", Tool: "deploy", Args: in})
			if err != nil {
				t.Fatal(err)
			}
			if writes == 0 {
				t.Fatalf("the %s never got to try a write", who)
			}
			if out.Status != warden.StatusRan || !out.Executed {
				t.Fatalf("got %+v, want the call to run with the judged arguments", viewOf(out))
			}
			want := map[string][]string{
				"judge":             {immutableArgs, immutableArgs}, // S1 and S2
				"middleware":        {immutableArgs},
				"schema":            {immutableArgs},
				"journal.begin":     {immutableArgs},
				"tool":              {immutableArgs},
				"result-middleware": {immutableArgs},
				"journal.end":       {immutableArgs},
			}
			if d := cmp.Diff(want, log.get()); d != "" {
				t.Errorf("what the stages saw (-want +got):\n%s", d)
			}
			if got := js(out.Args); got != immutableArgs {
				t.Errorf("Outcome.Args = %s, want %s", got, immutableArgs)
			}
			if got, want := out.ModelText, "deployed "+immutableArgs; got != want {
				t.Errorf("model read %q, want %q", got, want)
			}
			if got := js(in); got != immutableArgs {
				t.Errorf("the caller's Call.Args changed: %s", got)
			}
		})
	}
}

// tamperingSchemas wraps a compiler so that its validators can tamper too.
type tamperingSchemas struct {
	inner  warden.SchemaCompiler
	attack func(string, warden.Args)
}

func (s *tamperingSchemas) CompileSchema(tool string, sch json.RawMessage) (warden.ArgsValidator, error) {
	v, err := s.inner.CompileSchema(tool, sch)
	if err != nil {
		return nil, err
	}
	return tamperingValidator{v, s.attack}, nil
}

type tamperingValidator struct {
	v      warden.ArgsValidator
	attack func(string, warden.Args)
}

func (t tamperingValidator) ValidateArgs(a warden.Args) []warden.ArgProblem {
	p := t.v.ValidateArgs(a)
	t.attack("validator", a)
	return p
}

// A person approves a pending call; whoever holds the pending decision (an inbox, a
// store) and tampers with its arguments cannot change the call that runs on resume,
// nor the Outcome the caller already holds.
func TestArgsImmutable_PendingDecision(t *testing.T) {
	var p probe
	ask := askMW("ask", "deploy?")
	g := mustBind(t, warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{ask}, CanPause: true}, p.tool("deploy"))
	out, err := g.Call(context.Background(), warden.Call{Tool: "deploy", Args: A(immutableArgs)})
	if err != nil || out.Pending == nil {
		t.Fatalf("want a pending decision, got %+v %v", viewOf(out), err)
	}
	pending := *out.Pending
	if tamperArgs(pending.Args)+tamperArgs(pending.Original) == 0 {
		t.Fatal("nothing to tamper with")
	}
	if got := js(out.Args); got != immutableArgs {
		t.Errorf("Outcome.Args changed with the pending decision's: %s", got)
	}
	if pending.Args.Digest() != pending.Digest {
		t.Fatalf("the pending decision's arguments no longer match its digest: they were changed in place")
	}
	res, err := g.Resume(context.Background(), pending, warden.Approved{By: "alice", Digest: pending.ApprovalDigest()}, owner(pending))
	if err != nil || res.Status != warden.StatusRan {
		t.Fatalf("resume: %+v %v", viewOf(res), err)
	}
	if got := js(p.last()); got != immutableArgs {
		t.Errorf("the tool ran with %s, want %s", got, immutableArgs)
	}
}

// Entry points that take values in keep no alias to the caller's values, and Map
// returns a tree the caller may change freely.
func TestArgsImmutable_EntryPoints(t *testing.T) {
	list := []any{"staging", map[string]any{"k": []any{"a"}}}
	a := warden.Args{}.With("targets", list)
	b, err := warden.NewArgs("targets", list)
	if err != nil {
		t.Fatal(err)
	}
	list[0] = "prod"
	list[1].(map[string]any)["k"].([]any)[0] = "prod"
	for name, x := range map[string]warden.Args{"With": a, "NewArgs": b} {
		if got, want := js(x), `{"targets":["staging",{"k":["a"]}]}`; got != want {
			t.Errorf("%s kept an alias to the caller's slice: %s, want %s", name, got, want)
		}
	}
	m := a.Map()
	m["targets"].([]any)[0] = "prod"
	m["targets"].([]any)[1].(map[string]any)["k"] = "prod"
	m["new"] = true
	if got, want := js(a), `{"targets":["staging",{"k":["a"]}]}`; got != want {
		t.Errorf("changing Map's tree changed the Args: %s", got)
	}
	var u warden.Args
	raw := []byte(`{"targets":["staging"]}`)
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatal(err)
	}
	copy(raw, `{"targets":["prodxxx"]}`)
	if got := js(u); got != `{"targets":["staging"]}` {
		t.Errorf("UnmarshalJSON kept an alias to its input: %s", got)
	}
	if n := tamperArgs(u); n == 0 {
		t.Fatal("nothing to tamper with")
	}
	if got := js(u); got != `{"targets":["staging"]}` {
		t.Errorf("an unmarshalled Args changed in place: %s", got)
	}
	// A checkpoint round trip keeps nested arrays, their order and the digest.
	pd := warden.PendingDecision{Tool: "deploy", Args: A(immutableArgs), Original: A(immutableArgs)}
	pd.Digest = pd.Args.Digest()
	data, err := json.Marshal(pd)
	if err != nil {
		t.Fatal(err)
	}
	var back warden.PendingDecision
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Args.Equal(pd.Args) || back.Args.Digest() != pd.Digest || js(back.Original) != immutableArgs {
		t.Errorf("checkpoint round trip: %s (digest %s), want %s (%s)", js(back.Args), back.Args.Digest(), immutableArgs, pd.Digest)
	}
}

// A checker is shown the run's history (Request.Sequence). Overwriting a step in place
// must not rewrite that history for other checkers, the halt error or the caller: a
// synchronous checker that does is refused, one on its own goroutine changes only its
// own copy.
func TestArgsImmutable_SequenceShownToCheckers(t *testing.T) {
	history := func() []warden.Step {
		return []warden.Step{{Tool: "read_secrets", Args: A(`{"path":"/etc/shadow"}`)}, {Tool: "search", Args: A(`{"q":["a"]}`)}}
	}
	const want = `read_secrets {"path":"/etc/shadow"}; search {"q":["a"]}`
	render := func(seq []warden.Step) string {
		parts := make([]string, len(seq))
		for i, s := range seq {
			parts[i] = s.Tool + " " + js(s.Args)
		}
		return strings.Join(parts, "; ")
	}
	for _, async := range []bool{false, true} {
		t.Run(map[bool]string{false: "synchronous", true: "on its own goroutine"}[async], func(t *testing.T) {
			rewrite := func(_ context.Context, r warden.Request) (warden.Decision, error) {
				if len(r.Sequence) > 0 {
					r.Sequence[0] = warden.Step{Tool: "harmless", Args: A(`{}`)}
				}
				tamperArgs(r.Sequence[1].Args)
				return warden.Decision{Effect: warden.Allow}, nil
			}
			var rewriter warden.Checker = newSync("rewriter", rewrite)
			if async {
				rewriter = newAsync("rewriter", rewrite)
			}
			var later []string
			watcher := newSync("watcher", func(_ context.Context, r warden.Request) (warden.Decision, error) {
				later = append(later, render(r.Sequence))
				return warden.Decision{Effect: warden.Allow}, nil
			})
			var p probe
			g := mustBind(t, warden.Config{Checkers: []warden.Checker{rewriter, watcher}}, p.tool("send_email"))
			seq := history()
			out, err := g.Call(context.Background(), warden.Call{Tool: "send_email", Args: A(`{}`), Sequence: seq})
			if err != nil {
				t.Fatal(err)
			}
			if got := render(seq); got != want {
				t.Errorf("the caller's history was rewritten: %s", got)
			}
			for _, l := range later {
				if l != want {
					t.Errorf("a later checker saw the history %s, want %s", l, want)
				}
			}
			if async {
				if out.Status != warden.StatusRan {
					t.Errorf("got %+v; a change to its own copy changes nothing", viewOf(out))
				}
				return
			}
			checkView(t, out, refusedAt(warden.StagePermission, warden.UnauthorizedText("send_email")))
			if out.RuleID != "sequence.changed" || !out.Decision.Fault {
				t.Errorf("refused by %q (fault %v), want the fault denial sequence.changed", out.RuleID, out.Decision.Fault)
			}
			if p.runs() != 0 {
				t.Error("the tool ran")
			}
		})
	}
}
