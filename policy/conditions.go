package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
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
	list []compiledCondition
	defs []Condition
}

type compiledCondition struct {
	Condition
	prg       cel.Program
	matched   warden.Decision
	errPrefix string
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
// returned as a *[ConditionError].
func CompileConditions(conds []Condition) (*Conditions, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	out := &Conditions{defs: append([]Condition(nil), conds...)}
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
		prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
		if err != nil {
			return fail(fmt.Errorf("when: %w", err))
		}
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
		})
	}
	return out, nil
}

// Len returns the number of conditions.
func (c *Conditions) Len() int { return len(c.list) }

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

// Evaluate evaluates every condition and returns the strongest contribution (halt >
// deny > ask > allow; the first in list order among equals) and true, or false when no
// condition matched and none failed.
func (c *Conditions) Evaluate(in ConditionInput) (warden.Decision, bool) {
	act := &activation{in: in}
	var best warden.Decision
	found := false
	for i := range c.list {
		d, ok := c.list[i].eval(act)
		if !ok {
			continue
		}
		if !found || d.Effect.Outranks(best.Effect) {
			best, found = d, true
		}
	}
	return best, found
}

func (cc *compiledCondition) eval(act *activation) (d warden.Decision, matched bool) {
	defer func() {
		if r := recover(); r != nil {
			d, matched = cc.failure(fmt.Errorf("panic: %v", r)), true
		}
	}()
	out, _, err := cc.prg.Eval(act)
	if err != nil {
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
