package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/scripted"
	"github.com/wardenhq/warden/schema"
)

// `warden demo` runs a handful of scenes through the real agent loop (agent.Agent, the
// Guard, the policy package) with a scripted model: deterministic, offline, no API key.
// Every tool is a harmless in-memory fake that only records that it ran.

type demoOptions struct {
	json bool
}

func newDemoCommand(stdout io.Writer) *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [SCENE]...",
		Short: "Watch Warden govern an agent, offline and without an API key",
		Long: `Demo runs short scenes through the real governed agent loop (the Guard, the
policy package, agent.Agent) with a scripted model, so it needs no API key and prints
the same thing every time. The tools are in-memory fakes that only record that they
ran; nothing touches your files, your shell or the network.

For each scene it prints the calls the model made, every permission decision
(capability, target, effect, rule id), what the model read back, and how many times a
tool actually executed.

Scenes: ` + strings.Join(demoSceneNames(), ", ") + `. With no SCENE, all of them run.

The exit code is 0 when every scene ended as designed, 1 otherwise.`,
		Example: `  warden demo
  warden demo halt ask
  warden demo --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newDemoProgram(o, args, stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, `print one JSON object {"scenes":[...]}`)
	return cmd
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

func demoSceneNames() []string {
	var out []string
	for _, s := range demoScenes() {
		out = append(out, s.name)
	}
	return out
}

// newDemoProgram chooses the scenes named (all of them when none is), each once, in
// the order given; an unknown name is a usage error.
func newDemoProgram(o demoOptions, names []string, w io.Writer) (*demoProgram, error) {
	specs := demoScenes()
	if len(names) > 0 {
		var chosen []demoSpec
		for _, n := range names {
			i := slices.IndexFunc(specs, func(s demoSpec) bool { return s.name == n })
			if i < 0 {
				return nil, usageErrorf("unknown scene %q (scenes: %s)", n, strings.Join(demoSceneNames(), ", "))
			}
			if !slices.ContainsFunc(chosen, func(s demoSpec) bool { return s.name == n }) {
				chosen = append(chosen, specs[i])
			}
		}
		specs = chosen
	}
	return &demoProgram{o: o, specs: specs, w: w}, nil
}

// demoProgram is one `warden demo`: the chosen scenes, played in order.
type demoProgram struct {
	noResources
	o     demoOptions
	specs []demoSpec
	w     io.Writer
}

// Run plays the scenes and prints them; it fails (exit 1) when a scene did not end as
// designed.
func (p *demoProgram) Run(ctx context.Context) error {
	o, w, specs := p.o, p.w, p.specs
	scenes := make([]*demoScene, 0, len(specs))
	failed := 0
	for _, s := range specs {
		sc := playScene(ctx, s)
		if sc.err != nil {
			failed++
		}
		scenes = append(scenes, sc)
	}
	var err error
	if o.json {
		err = writeDemoJSON(w, scenes)
	} else {
		err = writeDemoPlain(w, newStyle(w), scenes)
	}
	if err != nil {
		return internalError(fmt.Errorf("writing the demo: %w", err))
	}
	if failed > 0 {
		if o.json {
			var msgs []error
			for _, sc := range scenes {
				if sc.err != nil {
					msgs = append(msgs, fmt.Errorf("scene %s: %w", sc.Name, sc.err))
				}
			}
			return internalError(errors.Join(msgs...))
		}
		return silentExit(exitInternal)
	}
	return nil
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
