package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/wardenhq/warden"
)

// Condition is a rule written as a CEL expression. When evaluates over these variables:
//
//	tool       string               the tool name as called
//	args       map(string, dyn)     the call's arguments (integers as int, other numbers as double)
//	role       string               the active role ("" without a role layer)
//	identity   map(string, string)  tenant, principal, conversation ("" when unnamed)
//	capability string               what is asked: "tool_call", a tool capability, "skill_read"
//
// A condition whose expression is true contributes its Effect. An expression that
// cannot be evaluated (a missing argument, a type error) contributes a DENY with
// rationale "condition '<id>' could not be evaluated: <err>": an error never allows.
//
// # Bounds
//
// Every evaluation is bounded twice. Its cost (CEL's runtime cost: roughly one unit per
// operation, plus one per ten characters a string function reads) may not exceed the
// cost limit ([DefaultConditionCostLimit] unless the policy says otherwise), and a
// comprehension (all, exists, exists_one, map, filter) stops at its next check once the
// evaluation's context is done (checked every 64 iterations). A
// condition stopped either way contributes a fault DENY: the model reads
// [warden.UnauthorizedText], and the rationale, "permission-checker threw: condition
// '<id>' exceeded its cost limit of <n>" or "... did not finish before its deadline:
// <cause>", names the condition. A condition that runs out of budget never allows and
// never stays silent.
type Condition struct {
	ID        string
	When      string
	Effect    warden.Effect
	Reason    string
	Rationale string
	TellLLM   string
}

// Conditions is a compiled, type-checked list of [Condition]s. Safe for concurrent use.
type Conditions struct {
	list      []compiledCondition
	defs      []Condition
	costLimit uint64
	// loops is true when some condition holds a comprehension: the only construct whose
	// cost can grow faster than the size of the arguments, and the only one that can
	// be interrupted.
	loops bool
}

type compiledCondition struct {
	Condition
	prg       cel.Program
	matched   warden.Decision
	errPrefix string
	// loops is true when the expression holds a comprehension; only then is it
	// evaluated under its context (ContextEval costs an allocation, and nothing else
	// in CEL checks for an interrupt).
	loops    bool
	estimate cost.Estimate
	// toolNames are the string constants the expression compares tool with (==, !=,
	// in a list), for the alias lint of policy files.
	toolNames []string
}

// DefaultConditionCostLimit is the runtime cost one condition may spend on one
// evaluation when the policy sets no limit of its own. Spending it takes about 50 ms on
// a busy 2-core machine (a nested comprehension comparing strings, the worst case per
// unit), and lets a string function read tens of megabytes; ordinary conditions cost
// under 20 and run untracked (see [CompileConditionsWith]).
const DefaultConditionCostLimit uint64 = 1_000_000

// conditionInterruptEvery is how many comprehension iterations pass between two looks
// at the context. One look is a non-blocking channel receive.
const conditionInterruptEvery = 64

// EstimateArgBytes is the size the worst-case cost estimate assumes for every string,
// list and map a condition reads from its variables: arguments have no declared sizes,
// so each is taken to be as large as the gateway's request body limit (4 MiB). The
// estimate is an upper bound under that assumption, not a prediction.
const EstimateArgBytes = 4 << 20

// ConditionOptions adjust how conditions are compiled. The zero value is ready to use.
type ConditionOptions struct {
	// CostLimit is the runtime cost one condition may spend on one evaluation; 0 means
	// [DefaultConditionCostLimit].
	CostLimit uint64
}

var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("role", cel.StringType),
		cel.Variable("identity", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("capability", cel.StringType),
	)
})

// ConditionError is a condition that failed to compile; Index is its position in the
// list given to [CompileConditions].
type ConditionError struct {
	Index int
	ID    string
	Err   error
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("condition '%s': %v", e.ID, e.Err)
}

func (e *ConditionError) Unwrap() error { return e.Err }

// CompileConditions compiles and type-checks every condition: each needs a unique
// non-empty ID, an expression of type bool, and a valid effect. The first problem is
// returned as a *[ConditionError]. Each condition runs under
// [DefaultConditionCostLimit]; see [CompileConditionsWith] for another limit.
func CompileConditions(conds []Condition) (*Conditions, error) {
	return CompileConditionsWith(conds, nil)
}

// CompileConditionsWith is [CompileConditions] with options; nil means defaults. A
// condition whose worst-case cost CEL bounds within the limit whatever the arguments'
// sizes runs without cost tracking (it cannot reach the limit, and tracking costs about
// 250 ns per evaluation); every other condition is tracked and stops at the limit.
func CompileConditionsWith(conds []Condition, opts *ConditionOptions) (*Conditions, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	limit := DefaultConditionCostLimit
	if opts != nil && opts.CostLimit > 0 {
		limit = opts.CostLimit
	}
	out := &Conditions{defs: append([]Condition(nil), conds...), costLimit: limit}
	seen := map[string]bool{}
	for i, c := range conds {
		fail := func(err error) (*Conditions, error) { return nil, &ConditionError{Index: i, ID: c.ID, Err: err} }
		if strings.TrimSpace(c.ID) == "" {
			return fail(errors.New("id is required"))
		}
		if seen[c.ID] {
			return fail(errors.New("duplicate id"))
		}
		seen[c.ID] = true
		if !c.Effect.Valid() {
			return fail(fmt.Errorf("invalid effect %d", c.Effect))
		}
		if strings.TrimSpace(c.When) == "" {
			return fail(errors.New("when is required"))
		}
		ast, iss := env.Compile(c.When)
		if iss != nil && iss.Err() != nil {
			return fail(fmt.Errorf("when does not compile: %s", strings.TrimSpace(iss.Err().Error())))
		}
		if ast.OutputType() != cel.BoolType {
			return fail(fmt.Errorf("when must be a boolean expression, got %s", ast.OutputType()))
		}
		// Cost tracking costs about 250 ns per evaluation, so a condition whose worst
		// case CEL bounds within the limit whatever the arguments' sizes (tool ==
		// "refund" && double(args.amount) > 1000.0 costs at most 6) runs untracked: it
		// cannot reach the limit. Every other condition is tracked. An estimate that
		// fails counts as unbounded (fail closed: tracked).
		opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
		if any, err := env.EstimateCost(ast, anySizeArgs{}); err != nil || any.Max > limit {
			opts = append(opts, cel.CostLimit(limit), cel.InterruptCheckFrequency(conditionInterruptEvery))
		}
		prg, err := env.Program(ast, opts...)
		if err != nil {
			return fail(fmt.Errorf("when: %w", err))
		}
		est, err := env.EstimateCost(ast, bodySizedArgs{})
		if err != nil {
			// The estimate is advice for `warden validate`; a condition CEL cannot
			// estimate is still bounded at run time by its cost limit.
			est = cost.Estimate{Min: 0, Max: ^uint64(0)}
		}
		loops := hasComprehension(ast.NativeRep().Expr())
		out.loops = out.loops || loops
		rationale := c.Rationale
		if rationale == "" {
			rationale = "condition '" + c.ID + "' matched"
		}
		out.list = append(out.list, compiledCondition{
			Condition: c,
			prg:       prg,
			matched: warden.Decision{
				Effect:    c.Effect,
				RuleID:    c.ID,
				Reason:    c.Reason,
				Rationale: rationale,
				TellLLM:   c.TellLLM,
			},
			errPrefix: "condition '" + c.ID + "' could not be evaluated: ",
			loops:     loops,
			estimate:  est,
			toolNames: toolLiterals(ast.NativeRep().Expr()),
		})
	}
	return out, nil
}

// Len returns the number of conditions.
func (c *Conditions) Len() int { return len(c.list) }

// CostLimit returns the runtime cost each condition may spend on one evaluation.
func (c *Conditions) CostLimit() uint64 { return c.costLimit }

// HasLoops reports whether some condition holds a comprehension (all, exists,
// exists_one, map, filter): the construct whose cost can grow with the square of the
// arguments' size, and that a deadline interrupts.
func (c *Conditions) HasLoops() bool { return c.loops }

// CostEstimate is a condition's static worst-case cost, assuming every string, list and
// map it reads is [EstimateArgBytes] long.
type CostEstimate struct {
	ID string
	// Max is the worst-case runtime cost; ^uint64(0) when CEL cannot bound it.
	Max uint64
	// Limit is the runtime cost limit the condition runs under.
	Limit uint64
}

// Exceeds reports whether the worst case is over the limit: calls with arguments large
// enough to reach it are refused as faults.
func (e CostEstimate) Exceeds() bool { return e.Max > e.Limit }

// CostEstimates returns each condition's worst-case cost estimate, in list order.
func (c *Conditions) CostEstimates() []CostEstimate {
	out := make([]CostEstimate, len(c.list))
	for i := range c.list {
		out[i] = CostEstimate{ID: c.list[i].ID, Max: c.list[i].estimate.Max, Limit: c.costLimit}
	}
	return out
}

// Definitions returns a copy of the conditions as given.
func (c *Conditions) Definitions() []Condition { return append([]Condition(nil), c.defs...) }

// ConditionInput is what conditions are evaluated over.
type ConditionInput struct {
	Tool       string
	Args       warden.Args
	Role       string
	Identity   warden.Identity
	Capability warden.Capability
}

// Evaluate is [Conditions.EvaluateContext] with a context that is never done: only the
// cost limit bounds it.
func (c *Conditions) Evaluate(in ConditionInput) (warden.Decision, bool) {
	return c.EvaluateContext(context.Background(), in)
}

// EvaluateContext evaluates every condition and returns the strongest contribution
// (halt > deny > ask > allow; the first in list order among equals) and true, or false
// when no condition matched and none failed. Once ctx is done, the condition being
// evaluated stops at its next interrupt check and every later one is not started: each
// contributes a fault DENY (see [Condition]), so a deadline never turns into an allow.
func (c *Conditions) EvaluateContext(ctx context.Context, in ConditionInput) (warden.Decision, bool) {
	act := &activation{in: in}
	var best warden.Decision
	found := false
	for i := range c.list {
		d, ok := c.list[i].eval(ctx, act, c.costLimit)
		if !ok {
			continue
		}
		if !found || d.Effect.Outranks(best.Effect) {
			best, found = d, true
		}
	}
	return best, found
}

func (cc *compiledCondition) eval(ctx context.Context, act *activation, limit uint64) (d warden.Decision, matched bool) {
	defer func() {
		if r := recover(); r != nil {
			d, matched = cc.failure(fmt.Errorf("panic: %v", r)), true
		}
	}()
	// Fail closed: a context that is already done gets no answer from this condition,
	// whether or not its expression could have been interrupted.
	if err := ctx.Err(); err != nil {
		return cc.overrun(act.in.Tool, fmt.Sprintf("did not finish before its deadline: %v", context.Cause(ctx))), true
	}
	var out ref.Val
	var err error
	if cc.loops && ctx.Done() != nil {
		out, _, err = cc.prg.ContextEval(ctx, act)
	} else {
		out, _, err = cc.prg.Eval(act)
	}
	if err == nil && ctx.Err() != nil {
		// Fail closed: an answer given after the context is done does not count.
		return cc.overrun(act.in.Tool, fmt.Sprintf("did not finish before its deadline: %v", context.Cause(ctx))), true
	}
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		switch {
		case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
			return cc.overrun(act.in.Tool, fmt.Sprintf("exceeded its cost limit of %d", limit)), true
		case errors.Is(err, interpreter.InterruptError{}), ctx.Err() != nil:
			return cc.overrun(act.in.Tool, fmt.Sprintf("did not finish before its deadline: %v", context.Cause(ctx))), true
		}
		return cc.failure(err), true
	}
	b, ok := out.Value().(bool)
	if !ok {
		return cc.failure(fmt.Errorf("result is %T, not bool", out.Value())), true
	}
	if !b {
		return warden.Decision{}, false
	}
	return cc.matched, true
}

func (cc *compiledCondition) failure(err error) warden.Decision {
	return warden.Decision{Effect: warden.Deny, RuleID: cc.ID, Rationale: cc.errPrefix + err.Error(), Fault: true}
}

// overrun is the fault denial for a condition stopped by its cost limit or deadline: the
// model reads what it reads for a checker that did not answer (REFERENCE section 2), and
// the rationale names the condition.
func (cc *compiledCondition) overrun(tool, what string) warden.Decision {
	return warden.Decision{Effect: warden.Deny, RuleID: cc.ID, Rationale: "permission-checker threw: condition '" + cc.ID + "' " + what, TellLLM: warden.UnauthorizedText(tool), Fault: true}
}

// toolLiterals returns the string constants e compares the variable tool with: either
// side of == and !=, and the elements of a list literal tool is looked up `in`.
func toolLiterals(e celast.Expr) []string {
	var out []string
	isTool := func(x celast.Expr) bool { return x.Kind() == celast.IdentKind && x.AsIdent() == "tool" }
	str := func(x celast.Expr) (string, bool) {
		if x.Kind() != celast.LiteralKind {
			return "", false
		}
		s, ok := x.AsLiteral().Value().(string)
		return s, ok
	}
	celast.PostOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		if x.Kind() != celast.CallKind {
			return
		}
		call := x.AsCall()
		args := call.Args()
		if len(args) != 2 {
			return
		}
		switch call.FunctionName() {
		case "_==_", "_!=_":
			for k := range 2 {
				if s, ok := str(args[1-k]); ok && isTool(args[k]) {
					out = append(out, s)
				}
			}
		case "@in":
			if isTool(args[0]) && args[1].Kind() == celast.ListKind {
				for _, el := range args[1].AsList().Elements() {
					if s, ok := str(el); ok {
						out = append(out, s)
					}
				}
			}
		}
	}))
	return out
}

// hasComprehension reports whether e holds a comprehension anywhere.
func hasComprehension(e celast.Expr) bool {
	found := false
	celast.PostOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		if x.Kind() == celast.ComprehensionKind {
			found = true
		}
	}))
	return found
}

// anySizeArgs is the cost estimator that knows nothing about sizes: its estimate holds
// for arguments of any size.
type anySizeArgs struct{}

func (anySizeArgs) EstimateSize(cost.AstNode) *cost.SizeEstimate { return nil }

func (anySizeArgs) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// bodySizedArgs is the cost estimator for `warden validate`: every string, list and map
// reached through a variable is taken to be [EstimateArgBytes] long (its elements and
// keys too), and CEL's own model prices every call.
type bodySizedArgs struct{}

func (bodySizedArgs) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if len(n.Path()) == 0 {
		return nil
	}
	return bodySized()
}

func bodySized() *cost.SizeEstimate {
	leaf := cost.SizeEstimate{Min: 0, Max: EstimateArgBytes}
	elem := leaf
	elem.Key, elem.Elem = &leaf, &leaf
	return &cost.SizeEstimate{Min: 0, Max: EstimateArgBytes, Key: &leaf, Elem: &elem}
}

func (bodySizedArgs) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// activation resolves CEL variables lazily, so a condition over tool alone never pays
// for converting the arguments.
type activation struct {
	in       ConditionInput
	args     map[string]any
	identity map[string]string
}

var _ interpreter.Activation = (*activation)(nil)

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "tool":
		return a.in.Tool, true
	case "role":
		return a.in.Role, true
	case "capability":
		return string(a.in.Capability), true
	case "args":
		if a.args == nil {
			a.args = celArgs(a.in.Args)
		}
		return a.args, true
	case "identity":
		if a.identity == nil {
			a.identity = map[string]string{
				"tenant":       a.in.Identity.Tenant,
				"principal":    a.in.Identity.Principal,
				"conversation": a.in.Identity.Conversation,
			}
		}
		return a.identity, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

func celArgs(args warden.Args) map[string]any {
	m := make(map[string]any, args.Len())
	for k, v := range args.Fields() {
		m[k] = celValue(v)
	}
	return m
}

func celValue(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(t), 64)
		return f
	case warden.Args:
		return celArgs(t)
	case warden.Array:
		out := make([]any, t.Len())
		for i := range out {
			out[i] = celValue(t.At(i))
		}
		return out
	}
	return v
}
