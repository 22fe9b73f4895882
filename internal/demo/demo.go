// Package demo is `warden demo`: short scenes played through the real governed agent
// loop (agent.Agent, the Guard, the policy package) with a scripted model, so they run
// offline, need no API key and print the same thing every time. Every tool is a
// harmless in-memory fake that only records that it ran.
//
// It is its own package because it is a self-contained program (the scenes, their fake
// tools and scripted worlds, the text and JSON renderings) that the CLI only wires to
// its flags. It is internal: the scenes and their output are for people watching the
// demo, not an API for embedders, who have the examples directory instead.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/scripted"
	"github.com/wardenhq/warden/schema"
)

// Options says how Run prints. The zero value prints the plain text.
type Options struct {
	// JSON prints one JSON object {"scenes":[...]} instead of the text.
	JSON bool
}

// SceneError is what Run returns when one or more scenes did not end as designed; the
// output already shows which. Scenes holds one error per failed scene, each
// "scene NAME: what went wrong", in the order the scenes ran.
type SceneError struct {
	Scenes []error
}

func (e *SceneError) Error() string { return errors.Join(e.Scenes...).Error() }

// Check reports whether every name is a scene; its error names the first unknown one
// and lists the scenes.
func Check(names []string) error {
	_, err := choose(names)
	return err
}

// Run plays the scenes named (all of them, in their usual order, when names is empty;
// otherwise each once, in the order first named) and writes them to w, as JSON when
// opts says so (nil opts prints the text). The text is coloured only when w is a
// terminal and neither NO_COLOR is set nor TERM is dumb. An unknown name is Check's
// error and nothing runs; a scene that did not end as designed is a *SceneError after
// the whole output is written; any other error is from writing to w.
func Run(ctx context.Context, names []string, w io.Writer, opts *Options) error {
	if opts == nil {
		opts = &Options{}
	}
	specs, err := choose(names)
	if err != nil {
		return err
	}
	scenes := make([]*demoScene, 0, len(specs))
	var failed []error
	for _, s := range specs {
		sc := playScene(ctx, s)
		if sc.err != nil {
			failed = append(failed, fmt.Errorf("scene %s: %w", sc.Name, sc.err))
		}
		scenes = append(scenes, sc)
	}
	if opts.JSON {
		err = writeDemoJSON(w, scenes)
	} else {
		err = writeDemoPlain(w, newStyle(w), scenes)
	}
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return &SceneError{Scenes: failed}
	}
	return nil
}

// choose returns the scenes named (all of them when none is), each once, in the order
// given.
func choose(names []string) ([]demoSpec, error) {
	specs := demoScenes()
	if len(names) == 0 {
		return specs, nil
	}
	var chosen []demoSpec
	for _, n := range names {
		i := slices.IndexFunc(specs, func(s demoSpec) bool { return s.name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown scene %q (scenes: %s)", n, strings.Join(Names(), ", "))
		}
		if !slices.ContainsFunc(chosen, func(s demoSpec) bool { return s.name == n }) {
			chosen = append(chosen, specs[i])
		}
	}
	return chosen, nil
}

// demoScene is the result of one scene. The exported fields are the JSON form.
type demoScene struct {
	Name      string         `json:"name"`
	Executed  int            `json:"executed"`
	Decisions []demoDecision `json:"decisions"`
	ModelRead []string       `json:"model_read"`
	Halt      *demoHalt      `json:"halt"`
	Paused    bool           `json:"paused"`

	// For the plain output and the self-check.
	title  string
	task   string
	lines  []demoLine
	answer string
	ran    int // executions counted by the fake tools themselves
	// proposed holds the arguments the model wrote, by call id (a call record holds
	// the final ones).
	proposed map[string]string
	err      error
}

type demoDecision struct {
	Capability warden.Capability `json:"capability"`
	Target     string            `json:"target"`
	Effect     warden.Effect     `json:"effect"`
	RuleID     string            `json:"rule_id"`

	pass, checker string
}

type demoHalt struct {
	Reason  string `json:"reason"`
	TellLLM string `json:"tell_llm"`

	rule, checker string
}

// demoLine is one line group of a scene's story: a settled call, or a note.
type demoLine struct {
	call *agent.CallRecord
	note string
}

type demoSpec struct {
	name  string
	title string
	run   func(ctx context.Context, sc *demoScene) error
	// expect checks the outcome the scene exists to show; a mismatch fails the demo.
	expect func(sc *demoScene) error
}

func demoScenes() []demoSpec {
	return []demoSpec{
		{"read-only", "a role without memory_write calls save_note", sceneReadOnly, expectReadOnly},
		{"admin", "a role with every capability calls save_note", sceneAdmin, expectAdmin},
		{"outage", "the authorizer is down: fail closed, and the run goes on", sceneOutage, expectOutage},
		{"halt", "an exfiltration guard halts the run", sceneHalt, expectHalt},
		{"double-check", "a transform turns `echo ok` into `rm /tmp/important`", sceneDoubleCheck, expectDoubleCheck},
		{"ask", "a refund over 1000 waits for a person", sceneAsk, expectAsk},
		{"skills", "the support role sees refunds and lookup, not payroll", sceneSkills, expectSkills},
	}
}

// Names returns the scenes' names in the order Run plays them all.
func Names() []string {
	var out []string
	for _, s := range demoScenes() {
		out = append(out, s.name)
	}
	return out
}

// playScene runs one scene and checks its outcome. A scene never panics the command.
func playScene(ctx context.Context, s demoSpec) (sc *demoScene) {
	sc = &demoScene{Name: s.name, title: s.title}
	defer func() {
		if r := recover(); r != nil {
			sc.err = fmt.Errorf("panic: %v", r)
		}
		if sc.Decisions == nil {
			sc.Decisions = []demoDecision{}
		}
		if sc.ModelRead == nil {
			sc.ModelRead = []string{}
		}
	}()
	if err := s.run(ctx, sc); err != nil {
		sc.err = err
		return sc
	}
	if sc.ran != sc.Executed {
		sc.err = fmt.Errorf("the run reports %d executions, the tools counted %d", sc.Executed, sc.ran)
		return sc
	}
	sc.err = s.expect(sc)
	return sc
}

// ---------------------------------------------------------------------------------------
// The fake tools and the world a scene runs in.

// demoCounter counts the executions of the fake tools.
type demoCounter struct {
	mu   sync.Mutex
	runs []string
}

func (c *demoCounter) add(tool string) {
	c.mu.Lock()
	c.runs = append(c.runs, tool)
	c.mu.Unlock()
}

func (c *demoCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.runs)
}

// fakeTool returns a tool that records its execution and answers with reply(args).
func (c *demoCounter) fakeTool(t warden.Tool, reply func(warden.Args) string) warden.Executable {
	return warden.Executable{
		Tool: t,
		Run: func(_ context.Context, args warden.Args, _ *warden.Credential) (any, error) {
			c.add(t.Name)
			return reply(args), nil
		},
	}
}

// namedChecker gives a checker a name for the decisions the demo prints, keeping what
// it governs and whether it is synchronous and interruptible.
type namedChecker struct {
	warden.Checker
	name string
}

func (n namedChecker) Name() string { return n.name }

// IsAllowed forwards the wrapped checker's visibility answer, so the agent offers what
// the policy offers (a checker without one hides nothing).
func (n namedChecker) IsAllowed(tool string) bool {
	v, ok := n.Checker.(warden.VisibilityChecker)
	return !ok || v.IsAllowed(tool)
}

// MayExercise forwards the wrapped checker's capability answer (see IsAllowed).
func (n namedChecker) MayExercise(c warden.Capability) bool {
	v, ok := n.Checker.(warden.CapabilityVisibilityChecker)
	return !ok || v.MayExercise(c)
}

func (n namedChecker) Synchronous() bool {
	s, ok := n.Checker.(warden.Synchronous)
	return ok && s.Synchronous()
}

func (n namedChecker) Interruptible() bool {
	s, ok := n.Checker.(warden.Interruptible)
	return ok && s.Interruptible()
}

// funcChecker is a named checker made of a function; it governs only tool_call.
type funcChecker struct {
	name string
	fn   func(ctx context.Context, req warden.Request) (warden.Decision, error)
}

func (f funcChecker) Name() string { return f.name }
func (f funcChecker) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	return f.fn(ctx, req)
}
func (funcChecker) Governs(warden.Capability) bool { return false }

// demoWorld is one agent ready to run: the tools, the Guard configuration and the agent
// options (the Provider and the Guard are given to agent.New by build).
type demoWorld struct {
	counter *demoCounter
	tools   []warden.Executable
	guard   warden.Config
	agent   agent.Options
}

// build binds the tools and returns an agent that talks to p and reports every settled
// call to sc.
func (w demoWorld) build(sc *demoScene, p agent.Provider) (*agent.Agent, error) {
	var r warden.Registry
	for _, t := range w.tools {
		if err := r.Register(t); err != nil {
			return nil, err
		}
	}
	cfg := w.guard
	cfg.Schemas = schema.Compiler{}
	g, err := r.Bind(cfg)
	if err != nil {
		return nil, err
	}
	if probs := g.Problems(); len(probs) > 0 {
		return nil, errors.Join(probs...)
	}
	ac := w.agent
	ac.OnCall = func(_ context.Context, rec agent.CallRecord) {
		sc.lines = append(sc.lines, demoLine{call: &rec})
		for _, k := range rec.Checks {
			sc.Decisions = append(sc.Decisions, demoDecision{
				Capability: k.Capability, Target: k.Target, Effect: k.Decision.Effect, RuleID: k.Decision.RuleID,
				pass: k.Pass, checker: k.Checker,
			})
		}
	}
	return agent.New(p, g, &ac)
}

func (sc *demoScene) note(format string, args ...any) {
	sc.lines = append(sc.lines, demoLine{note: fmt.Sprintf(format, args...)})
}

// finish records what a run did: executions, what the model read, the answer, a halt.
func (sc *demoScene) finish(res agent.Result, err error, counter *demoCounter) error {
	sc.Executed = res.Executed()
	sc.ran = counter.count()
	sc.answer = res.Answer
	sc.ModelRead = nil
	sc.proposed = map[string]string{}
	for _, m := range res.Messages {
		for _, r := range m.ToolResults {
			sc.ModelRead = append(sc.ModelRead, r.Content)
		}
		for _, c := range m.ToolCalls {
			if a, err := warden.ParseArgs(c.Args); err == nil {
				sc.proposed[c.ID] = string(a.AppendJSON(nil))
			}
		}
	}
	var halt *warden.PolicyHaltError
	switch {
	case errors.As(err, &halt):
		sc.Halt = &demoHalt{Reason: halt.Reason, TellLLM: halt.TellLLM, rule: halt.RuleID, checker: halt.CheckerID}
		return nil
	case err != nil:
		return err
	}
	return nil
}

// play runs a world to its end (no pause expected).
func (w demoWorld) play(ctx context.Context, sc *demoScene, task string, replies ...agent.ModelResponse) error {
	sc.task = task
	a, err := w.build(sc, scripted.New(replies...))
	if err != nil {
		return err
	}
	res, err := a.Run(ctx, task)
	if res.Paused != nil {
		return errors.New("the run paused unexpectedly")
	}
	return sc.finish(res, err, w.counter)
}
