package policy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// quadraticPolicy allows every lookup, unless a condition that compares every item of
// args.items with every other one finds two that differ. With n equal items it does n*n
// comparisons and matches nothing: the worst case an attacker can send.
const quadraticPolicy = `version: 1
mode: allow_all
conditions:
  - id: distinct-items
    when: 'args.items.exists(x, args.items.exists(y, x != y))'
    effect: deny
`

// itemsArgs is {"items": ["aaaa", ...]} with n items: about 7*n bytes of JSON.
func itemsArgs(t testing.TB, n int) warden.Args {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"aaaa"`)
	}
	b.WriteString(`]}`)
	return warden.MustParseArgs(b.String())
}

// guardFor binds p as the only checker of a registry holding one tool, "lookup", that
// counts its runs.
func guardFor(t testing.TB, p warden.Checker, timeout time.Duration, runs *int) *warden.Guard {
	t.Helper()
	var reg warden.Registry
	err := reg.Register(warden.Executable{
		Tool: warden.Tool{Name: "lookup"},
		Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
			*runs++
			return "ok", nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := reg.Bind(warden.Config{Checkers: []warden.Checker{p}, CheckTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A condition that would run for seconds over a 35 kB argument (3.6 s on the base
// commit, where the tool then ran) is refused within the checker deadline, as a fault
// naming the condition, and the tool does not run.
func TestQuadraticConditionRefusedWithinDeadline(t *testing.T) {
	p := parse(t, quadraticPolicy)
	runs := 0
	const deadline = 50 * time.Millisecond
	g := guardFor(t, p, deadline, &runs)
	args := itemsArgs(t, 5000) // 2.5e7 comparisons unbounded
	start := time.Now()
	out, err := g.Call(context.Background(), warden.Call{ID: "q", Tool: "lookup", Args: args})
	elapsed := time.Since(start)
	t.Logf("quadratic condition over 5000 items, %s deadline: answered in %s: %s", deadline, elapsed, out.Decision.Rationale)
	if err != nil {
		t.Fatal(err)
	}
	if out.Executed || runs != 0 || out.Status != warden.StatusRefused {
		t.Fatalf("status %s executed %v runs %d, want refused and not executed", out.Status, out.Executed, runs)
	}
	if got, want := out.ModelText, warden.UnauthorizedText("lookup"); got != want {
		t.Errorf("model reads %q, want %q", got, want)
	}
	d := out.Decision
	if d.RuleID != "distinct-items" || !d.Fault || d.Effect != warden.Deny {
		t.Errorf("decision %+v, want a fault deny by distinct-items", d)
	}
	// The deadline or the cost limit, whichever comes first, stops it; both name it.
	if !strings.HasPrefix(d.Rationale, "permission-checker threw: condition 'distinct-items' ") {
		t.Errorf("rationale %q does not name the condition", d.Rationale)
	}
	// Generous for a loaded machine; unbounded it takes seconds.
	if elapsed > 20*deadline {
		t.Errorf("answered after %s, deadline %s", elapsed, deadline)
	}
}

// Without a deadline (warden check, the hook), the cost limit stops the same condition.
func TestConditionCostLimit(t *testing.T) {
	p := parse(t, quadraticPolicy)
	if got := p.Conditions().CostLimit(); got != policy.DefaultConditionCostLimit {
		t.Fatalf("cost limit %d, want the default %d", got, policy.DefaultConditionCostLimit)
	}
	d, err := p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "lookup", Args: itemsArgs(t, 2000)})
	if err != nil {
		t.Fatal(err)
	}
	want := warden.Decision{
		Effect:    warden.Deny,
		RuleID:    "distinct-items",
		Rationale: "permission-checker threw: condition 'distinct-items' exceeded its cost limit of 1000000",
		TellLLM:   warden.UnauthorizedText("lookup"),
		Fault:     true,
	}
	if d != want {
		t.Errorf("got %+v\nwant %+v", d, want)
	}
	// A small argument is judged normally: the condition runs and does not match.
	d, _ = p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "lookup", Args: itemsArgs(t, 10)})
	if d.Effect != warden.Allow {
		t.Errorf("10 items: %+v, want allow", d)
	}
}

// The limit can be set in the policy file; it is part of the revision only when it is
// not the default.
func TestConditionCostLimitInFile(t *testing.T) {
	linear := `version: 1
mode: allow_all
conditions:
  - id: has-b
    when: 'args.items.exists(x, x == "b")'
    effect: deny
`
	args := itemsArgs(t, 2000) // about 8000 cost units
	def := parse(t, linear)
	if d, _ := def.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "lookup", Args: args}); d.Effect != warden.Allow {
		t.Fatalf("default limit: %+v, want allow", d)
	}
	same := parse(t, linear+"condition_cost_limit: 1000000\n")
	if same.Revision() != def.Revision() {
		t.Errorf("writing the default limit changed the revision")
	}
	low := parse(t, linear+"condition_cost_limit: 1000\n")
	if low.Revision() == def.Revision() {
		t.Errorf("a different limit kept the revision")
	}
	d, _ := low.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "lookup", Args: args})
	if d.Effect != warden.Deny || !d.Fault || d.Rationale != "permission-checker threw: condition 'has-b' exceeded its cost limit of 1000" {
		t.Errorf("limit 1000: %+v, want the cost-limit fault", d)
	}
	for _, bad := range []string{"condition_cost_limit: 0\n", "condition_cost_limit: -5\n", "condition_cost_limit: lots\n"} {
		if _, err := policy.Parse("bad.yaml", []byte(linear+bad), nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := policy.Parse("bad.yaml", []byte("version: 1\nmode: allow_all\ncondition_cost_limit: 10\n"), nil); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("a limit without conditions: %v", err)
	}
}

// A context that is done gets no answer from any condition, looping or not: each is a
// fault denial, never an allow and never silence.
func TestConditionsHonourContext(t *testing.T) {
	p := parse(t, `version: 1
mode: allow_all
conditions:
  - id: never
    when: 'tool == "nothing"'
    effect: deny
  - id: loop
    when: 'args.items.exists(x, x == "b")'
    effect: deny
`)
	if !p.Interruptible() || !p.Synchronous() {
		t.Fatalf("a policy with conditions must be Synchronous and Interruptible")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, _ := p.Check(ctx, warden.Request{Capability: warden.CapToolCall, Target: "lookup", Args: itemsArgs(t, 3)})
	if d.Effect != warden.Deny || !d.Fault || d.RuleID != "never" || d.Rationale != "permission-checker threw: condition 'never' did not finish before its deadline: context canceled" {
		t.Errorf("cancelled: %+v", d)
	}
	if d.TellLLM != warden.UnauthorizedText("lookup") {
		t.Errorf("model reads %q", d.TellLLM)
	}
	// A policy without conditions has nothing to interrupt.
	if parse(t, "version: 1\nmode: allow_all\n").Interruptible() {
		t.Errorf("a policy without conditions reports Interruptible")
	}
}

// warden validate reports these estimates; they assume 4 MiB arguments.
func TestCostEstimates(t *testing.T) {
	p := parse(t, `version: 1
mode: allow_all
conditions:
  - id: small
    when: 'tool == "refund" && double(args.amount) > 1000.0'
    effect: escalate
  - id: quadratic
    when: 'args.items.exists(x, args.items.exists(y, x != y))'
    effect: deny
`)
	est := p.Conditions().CostEstimates()
	if len(est) != 2 || est[0].ID != "small" || est[1].ID != "quadratic" {
		t.Fatalf("estimates %+v", est)
	}
	if est[0].Max != 6 || est[0].Exceeds() {
		t.Errorf("small: %+v, want 6 and within the limit", est[0])
	}
	if !est[1].Exceeds() || est[1].Limit != policy.DefaultConditionCostLimit {
		t.Errorf("quadratic: %+v, want over the limit", est[1])
	}
}

// pathAs makes a policy take one of the Guard's three paths, to compare them for the
// same policy: inline without a deadline (what a policy with conditions took on the
// base commit), inline under the deadline (what it takes now), or on a goroutine under
// the deadline (what making it non-Synchronous would cost).
type pathAs struct {
	*policy.Policy
	sync, interrupt bool
}

func (s pathAs) Synchronous() bool   { return s.sync }
func (s pathAs) Interruptible() bool { return s.interrupt }

func BenchmarkGuardCondition(b *testing.B) {
	p := parse(b, `version: 1
rules:
  allow: {lookup: ["*"]}
conditions:
  - id: big-refunds
    when: 'tool == "refund" && double(args.amount) > 1000.0'
    effect: escalate
`)
	args := warden.MustParseArgs(`{"amount":1500,"currency":"EUR"}`)
	for _, c := range []struct {
		name string
		c    warden.Checker
	}{
		{"inline-no-deadline", pathAs{p, true, false}},
		{"inline-deadline", p},
		{"goroutine", pathAs{p, false, false}},
	} {
		b.Run(c.name, func(b *testing.B) {
			runs := 0
			g := guardFor(b, c.c, 5*time.Second, &runs)
			ctx := context.Background()
			call := warden.Call{ID: "b", Tool: "lookup", Args: args}
			b.ReportAllocs()
			for b.Loop() {
				out, err := g.Call(ctx, call)
				if err != nil || !out.Executed {
					b.Fatal("not executed")
				}
			}
		})
	}
}
