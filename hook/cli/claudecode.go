// Package cli is the command `warden hook claude-code` (and its install
// subcommand), shared by the warden binary and the slim warden-hook binary that
// Claude Code runs on every tool call, so that both behave byte for byte alike: the
// same flags, the same answers on stdout, the same messages on stderr and the same
// exit codes.
//
// It is a package of its own, not part of package hook, because it wires the hook
// adapter to the policy, the explain evaluation and the audit store, which package
// hook (imported by warden run's workspace and checkpoint) must not depend on. It
// links nothing the hook does not use: warden-hook's start-up cost is the package
// initialisation of this package's dependencies (see the README).
package cli

// This file implements `warden hook claude-code`: Warden as Claude Code's PreToolUse
// hook.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/policy/explain"
	_ "github.com/wardenhq/warden/store/postgres" // the postgres:// and postgresql:// DSN schemes
	"github.com/wardenhq/warden/store/sqlite"     // the sqlite:// DSN scheme
)

// options are the flags of `warden hook claude-code`.
type options struct {
	policy string
	role   string
	store  string
	event  string
	// policyInProject accepts a policy file inside the project directory, where the
	// agent's own tools could reach it (install's --policy-in-project).
	policyInProject bool
}

// NewClaudeCodeCommand is `claude-code` with its `install` subcommand, to be added
// under a parent (`warden hook`, or warden-hook's root). Output goes to stdout,
// diagnostics to stderr; stdin is the command's (cmd.SetIn, else os.Stdin). The error
// a run returns carries the exit code ([ExitCode]) and is printed with [Report]; a
// PreToolUse refusal has already been written to stdout and stderr and prints nothing
// more.
func NewClaudeCodeCommand(stdout, stderr io.Writer) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "claude-code --policy FILE [--role R] [--store DSN] [--event pre|post]",
		Short: "Decide a Claude Code tool call (PreToolUse hook)",
		Long: `Claude-code reads one PreToolUse hook input from stdin, decides the tool call with the
policy file the way 'warden check' does, and writes Claude Code's answer on stdout:

  {"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow|deny|ask","permissionDecisionReason":"..."}}

allow => allow; deny and halt => deny (the reason is what the model reads); ask
(escalate) => ask (the reason is the question put to you).

Claude Code's tools are judged as Warden's canonical tools, so one policy file works
everywhere: Bash => bash {command}; Read => reader {path}; Write, Edit, MultiEdit,
NotebookEdit => editor {file_path, action}; Grep, Glob => search {pattern, path};
WebFetch => web_fetch {url}; WebSearch => web_search {query}; mcp__<server>__<tool>
keeps its name; any other tool is judged under its lower-cased name. Relative paths
are resolved against the session's working directory. A path is judged as written
(cleaned) and where it leads on the filesystem (symbolic links resolved); the more
restrictive answer wins.

Whatever the policy says, a write to the policy, to a Claude Code settings file that
can run this hook, to the store's files or to the running binary (warden-hook or
warden) is denied, and so is a Bash command that names one of them or a directory
holding one. A policy inside the session's working directory or $CLAUDE_PROJECT_DIR
is refused unless --policy-in-project is given (install writes it when you ask for
it).

It fails closed: bad input, a policy that does not load, or any internal error writes
a deny with the reason, prints the same reason on stderr and exits 2, which Claude
Code treats as a block.

With --store, every decision is recorded in the audit log (tool_use_id as the call
id, session_id as the session); run it again with --event post as a PostToolUse hook
to record that an allowed call ran.`,
		Example: `  echo '{"tool_name":"Bash","tool_input":{"command":"git status"},"cwd":"/work"}' |
    warden hook claude-code --policy examples/policies/coding-agent.yaml
  warden hook claude-code install --policy warden.yaml --write`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return refuseHook(stdout, stderr, fmt.Sprintf("unexpected argument %q (did you mean 'install'?)", args[0]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return newProgram(o, cmd.InOrStdin(), stdout, stderr).Run(cmd.Context())
		},
	}
	// A hook that cannot even parse its flags still answers: deny, exit 2.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return refuseHook(stdout, stderr, err.Error())
	})
	f := cmd.Flags()
	f.StringVar(&o.policy, "policy", "", "policy file (YAML); required for --event pre")
	f.StringVar(&o.role, "role", "", "active role (default: the policy's active_role)")
	f.StringVar(&o.store, "store", "", "record decisions in this store's audit log (sqlite://PATH or postgres://...)")
	f.StringVar(&o.event, "event", "pre", "the hook event: pre (PreToolUse) or post (PostToolUse, with --store)")
	f.BoolVar(&o.policyInProject, policyInProjectFlag, false, "accept a policy file inside the project directory (the agent's tools still cannot write it, but programs it runs can)")
	cmd.AddCommand(newInstallCommand(stdout, stderr))
	return cmd
}

// program is one invocation of `warden hook claude-code`: one hook event read from
// stdin and answered on stdout. It opens the store (--store) only for the time it
// records the event, so it holds nothing between runs.
type program struct {
	o              options
	stdin          io.Reader
	stdout, stderr io.Writer
}

// newProgram builds the invocation. It checks no flag: a hook answers every
// problem on stdout, the way Claude Code reads it, so Run reports bad flags.
func newProgram(o options, stdin io.Reader, stdout, stderr io.Writer) *program {
	return &program{o: o, stdin: stdin, stdout: stdout, stderr: stderr}
}

// Run handles the event. Whatever happens, a PreToolUse invocation ends with a
// decision on stdout: a verdict (exit 0) or a refusal (exit 2).
func (p *program) Run(ctx context.Context) (err error) {
	o, stdin, stdout, stderr := p.o, p.stdin, p.stdout, p.stderr
	defer func() {
		// Fail closed: a panic anywhere below is a refusal, never a crash that Claude
		// Code would read as a non-blocking error.
		if r := recover(); r != nil {
			err = refuseHook(stdout, stderr, fmt.Sprintf("internal error: %v", r))
		}
	}()
	switch o.event {
	case "pre":
		return runHookPre(ctx, stdin, stdout, stderr, o)
	case "post":
		return runHookPost(ctx, stdin, stderr, o)
	}
	return refuseHook(stdout, stderr, fmt.Sprintf("--event is %q; use pre or post", o.event))
}

// runHookPre decides one PreToolUse call.
func runHookPre(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, o options) error {
	if o.policy == "" {
		return refuseHook(stdout, stderr, "no policy: run warden hook claude-code --policy FILE")
	}
	pol, err := policy.LoadFile(o.policy, &policy.LoadOptions{Role: o.role})
	if err != nil {
		return refuseHook(stdout, stderr, "the policy does not load: "+err.Error())
	}
	in, err := hook.ReadClaudeInput(stdin, hook.EventPreToolUse)
	if err != nil {
		return refuseHook(stdout, stderr, err.Error())
	}
	call, err := hook.MapClaudeTool(in.ToolName, in.ToolInput, in.Cwd)
	if err != nil {
		return refuseHook(stdout, stderr, err.Error())
	}
	policyPath, err := filepath.Abs(o.policy)
	if err != nil {
		return refuseHook(stdout, stderr, "the policy path: "+err.Error())
	}
	projects := hookProjectDirs(in.Cwd)
	if !o.policyInProject {
		for _, dir := range projects {
			if hook.Inside(policyPath, dir) {
				return refuseHook(stdout, stderr, policyInProjectProblem(policyPath, dir))
			}
		}
	}
	prot, err := hookProtected(policyPath, o.store, projects)
	if err != nil {
		return refuseHook(stdout, stderr, err.Error())
	}
	resolved, err := hook.ResolveClaudeTool(in.ToolName, in.ToolInput, in.Cwd)
	if err != nil {
		return refuseHook(stdout, stderr, err.Error())
	}
	r := judgeResolved(ctx, pol, call, resolved, o.role)
	// Self-protection, whatever the policy says: an allow or an ask that would let the
	// call touch a file Warden reads becomes a deny (a policy deny keeps its own reason).
	if e := r.Decision.Effect; e == warden.Allow || e == warden.Ask {
		if d, ok := selfProtection(prot, call, resolved, in.Cwd); ok {
			r = explain.Report{Tool: call.Tool, Decision: d, Revision: pol.Revision(), Decided: -1}
		}
	}
	out := hook.ClaudeVerdict(in.ToolName, r.Decision)
	if o.store != "" {
		if err := recordPre(ctx, o.store, in, call, r); err != nil {
			// Fail closed: a decision that cannot be audited is not carried out.
			return refuseHook(stdout, stderr, "the audit log could not record the call: "+err.Error())
		}
	}
	if err := out.Encode(stdout); err != nil {
		// Exit 2 blocks the call in Claude Code; exit 1 would let it fall back to its own
		// prompt without a decision from Warden.
		fmt.Fprintf(stderr, "warden: writing the hook output: %v\n", err)
		return silentExit(ExitUsage)
	}
	return nil
}

// judgeResolved decides call the way `warden check --tool <call.Tool> --args
// <call.Args>` does, and, when a path argument names another file on the real
// filesystem than its written form (a symbolic link on the way, a ".." after one),
// decides resolved (the same call, paths resolved, from [hook.ResolveClaudeTool]) too:
// the more restrictive answer wins (halt > deny > ask > allow), the written form's on a
// tie.
func judgeResolved(ctx context.Context, pol *policy.Policy, call, resolved hook.Call, role string) explain.Report {
	r := explain.Evaluate(ctx, pol, explain.Call{Tool: call.Tool, Args: call.Args, Role: role})
	if resolved.Args.Equal(call.Args) {
		return r
	}
	rr := explain.Evaluate(ctx, pol, explain.Call{Tool: resolved.Tool, Args: resolved.Args, Role: role})
	if !rr.Decision.Effect.Outranks(r.Decision.Effect) {
		return r
	}
	var moved []string
	written, real := call.Paths(), resolved.Paths()
	for i := range written {
		if i < len(real) && written[i] != real[i] {
			moved = append(moved, written[i]+" is "+real[i])
		}
	}
	rr.Decision.Rationale = orDefault(rr.Decision.Rationale, "policy") + " (judged where the path leads: " + strings.Join(moved, ", ") + ")"
	return rr
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// selfProtectionRule is the rule id of a refusal that keeps Warden's own files out of
// the governed tools' reach.
const selfProtectionRule = "warden:self-protection"

// selfProtection is the deny, whatever the policy says, for a call that would write a
// file Warden reads: a Write, Edit, MultiEdit or NotebookEdit whose file (call, as
// written and cleaned, or resolved) is protected, or a Bash command one of whose words names a protected file
// or a directory holding one ([hook.Protected.CommandReaches]).
func selfProtection(prot *hook.Protected, call, resolved hook.Call, cwd string) (warden.Decision, bool) {
	deny := func(h hook.Hit, tell string) (warden.Decision, bool) {
		return warden.Decision{
			Effect:    warden.Deny,
			RuleID:    selfProtectionRule,
			Reason:    "security:self-protection",
			Rationale: "protected file " + h.Path + " (" + h.What + ")",
			TellLLM:   tell,
		}, true
	}
	switch {
	case call.IsWrite():
		for _, p := range append(call.Paths(), resolved.Paths()...) {
			if h, ok := prot.Names(p); ok {
				return deny(h, fmt.Sprintf("Warden refused this write: %s is %s, which no tool call may change, whatever the policy says. Ask the user to make this change themselves.", h.Path, h.What))
			}
		}
	case call.Tool == "bash":
		command, _ := call.Args.String("command")
		home, _ := os.UserHomeDir()
		if h, ok := prot.CommandReaches(command, cwd, home); ok {
			return deny(h, fmt.Sprintf("Warden refused this command: it names %s (%s) or a directory that holds it, which no command may touch, whatever the policy says. Name the files or subdirectories you need instead, or ask the user to run it.", h.Path, h.What))
		}
	}
	return warden.Decision{}, false
}

// hookProjectDirs are the session's project directories: $CLAUDE_PROJECT_DIR, which
// Claude Code sets for its hooks, and the session's working directory; the absolute
// ones.
func hookProjectDirs(cwd string) []string {
	var dirs []string
	for _, d := range []string{os.Getenv("CLAUDE_PROJECT_DIR"), cwd} {
		if filepath.IsAbs(d) {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	return dirs
}

// hookProtected is what the hook keeps out of the governed tools' reach: the policy,
// every Claude Code settings file that can run the hook, the audit store's files, and
// the running executable itself (warden, or warden-hook) and its sibling (warden-hook,
// or warden, beside it).
func hookProtected(policyPath, dsn string, projects []string) (*hook.Protected, error) {
	var prot hook.Protected
	prot.Add(policyPath, "the Warden policy")
	home, herr := os.UserHomeDir()
	configDir := os.Getenv("CLAUDE_CONFIG_DIR")
	if herr != nil && !filepath.IsAbs(configDir) {
		// Fail closed: the user's settings, which can run this hook, cannot be found.
		return nil, fmt.Errorf("cannot tell where the user's Claude Code settings are, to keep them out of reach: %v", herr)
	}
	prot.AddClaudeSettings(projects, home, configDir)
	if dsn != "" {
		files, err := StoreFiles(dsn)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			prot.Add(f, "the Warden audit store")
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot tell which warden binary runs, to keep it out of reach: %v", err)
	}
	prot.Add(exe, "the "+filepath.Base(exe)+" executable")
	// warden and warden-hook sit side by side (install finds one beside the other): the
	// one that is not running is as much Warden's as the one that is.
	for _, name := range []string{"warden", HookBinary} {
		if sibling := filepath.Join(filepath.Dir(exe), name); sibling != exe {
			prot.Add(sibling, "the "+name+" executable")
		}
	}
	return &prot, nil
}

// StoreFiles are the files of a sqlite:// store (the database and SQLite's journal
// files beside it), absolute; none for another scheme.
func StoreFiles(dsn string) ([]string, error) {
	scheme, _, _ := strings.Cut(dsn, "://")
	if !strings.EqualFold(scheme, "sqlite") {
		return nil, nil
	}
	p, _, err := sqlite.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("the store: %w", err)
	}
	if p, err = filepath.Abs(p); err != nil {
		return nil, fmt.Errorf("the store: %w", err)
	}
	return []string{p, p + "-wal", p + "-shm", p + "-journal"}, nil
}

// policyInProjectFlag is the flag that accepts a policy inside the project directory.
const policyInProjectFlag = "policy-in-project"

// policyInProjectProblem explains why a policy inside the project is refused.
func policyInProjectProblem(policyPath, dir string) string {
	return fmt.Sprintf("the policy %s is inside the project directory %s, where the agent works: a program it runs could rewrite the policy that judges it. Keep the policy outside the project (for example ~/.config/warden/policy.yaml), or, to accept that risk, install the hook with --%s", policyPath, dir, policyInProjectFlag)
}

// refuseHook writes the fail-closed answer: a deny whose reason says what is wrong on
// stdout, the same reason on stderr, and exit 2 (Claude Code blocks the call on exit 2
// even if it cannot read stdout).
func refuseHook(stdout, stderr io.Writer, problem string) error {
	out := hook.ClaudeRefusal(problem)
	_ = out.Encode(stdout)
	fmt.Fprintln(stderr, out.Reason())
	return silentExit(ExitUsage)
}
