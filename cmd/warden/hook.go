package main

// This file implements `warden hook claude-code`: Warden as Claude Code's PreToolUse
// hook, and `warden hook claude-code install`, which adds that hook to a settings file.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/postgres" // the postgres:// and postgresql:// DSN schemes
	"github.com/wardenhq/warden/store/sqlite"     // the sqlite:// DSN scheme
)

// newHookCommand is `warden hook`, the parent of the agent-CLI hook adapters.
func newHookCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Decide an agent CLI's tool calls from its own hook (claude-code)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newHookClaudeCodeCommand(stdout, stderr))
	return cmd
}

// hookOptions are the flags of `warden hook claude-code`.
type hookOptions struct {
	policy string
	role   string
	store  string
	event  string
	// policyInProject accepts a policy file inside the project directory, where the
	// agent's own tools could reach it (install's --policy-in-project).
	policyInProject bool
}

func newHookClaudeCodeCommand(stdout, stderr io.Writer) *cobra.Command {
	var o hookOptions
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
can run this hook, to the store's files or to the warden binary is denied, and so is a
Bash command that names one of them or a directory holding one. A policy inside the
session's working directory or $CLAUDE_PROJECT_DIR is refused unless
--policy-in-project is given (install writes it when you ask for it).

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
			return runHookClaudeCode(cmd.Context(), cmd.InOrStdin(), stdout, stderr, o)
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
	cmd.AddCommand(newHookInstallCommand(stdout, stderr))
	return cmd
}

// runHookClaudeCode runs one hook invocation. Whatever happens, a PreToolUse
// invocation ends with a decision on stdout: a verdict (exit 0) or a refusal (exit 2).
func runHookClaudeCode(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, o hookOptions) (err error) {
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
func runHookPre(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, o hookOptions) error {
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
	if e := r.decision.Effect; e == warden.Allow || e == warden.Ask {
		if d, ok := selfProtection(prot, call, resolved, in.Cwd); ok {
			r = report{tool: call.Tool, decision: d, revision: pol.Revision(), decided: -1}
		}
	}
	out := hook.ClaudeVerdict(in.ToolName, r.decision)
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
		return silentExit(exitUsage)
	}
	return nil
}

// judgeResolved decides call the way `warden check --tool <call.Tool> --args
// <call.Args>` does, and, when a path argument names another file on the real
// filesystem than its written form (a symbolic link on the way, a ".." after one),
// decides resolved (the same call, paths resolved, from [hook.ResolveClaudeTool]) too:
// the more restrictive answer wins (halt > deny > ask > allow), the written form's on a
// tie.
func judgeResolved(ctx context.Context, pol *policy.Policy, call, resolved hook.Call, role string) report {
	r := evaluateCall(ctx, pol, callSpec{tool: call.Tool, args: call.Args, role: role})
	if resolved.Args.Equal(call.Args) {
		return r
	}
	rr := evaluateCall(ctx, pol, callSpec{tool: resolved.Tool, args: resolved.Args, role: role})
	if !rr.decision.Effect.Outranks(r.decision.Effect) {
		return r
	}
	var moved []string
	written, real := call.Paths(), resolved.Paths()
	for i := range written {
		if i < len(real) && written[i] != real[i] {
			moved = append(moved, written[i]+" is "+real[i])
		}
	}
	rr.decision.Rationale = orDefault(rr.decision.Rationale, "policy") + " (judged where the path leads: " + strings.Join(moved, ", ") + ")"
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
// the warden executable itself.
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
		files, err := storeFiles(dsn)
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
	prot.Add(exe, "the warden executable")
	return &prot, nil
}

// storeFiles are the files of a sqlite:// store (the database and SQLite's journal
// files beside it), absolute; none for another scheme.
func storeFiles(dsn string) ([]string, error) {
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
	return silentExit(exitUsage)
}

// hookInstallOptions are the flags of `warden hook claude-code install`.
type hookInstallOptions struct {
	settings        string
	policy          string
	store           string
	warden          string
	write           bool
	policyInProject bool
}

func newHookInstallCommand(stdout, stderr io.Writer) *cobra.Command {
	var o hookInstallOptions
	cmd := &cobra.Command{
		Use:   "install [--settings PATH] [--policy FILE] [--store DSN] [--warden PATH] [--policy-in-project] [--write]",
		Short: "Print, or add to .claude/settings.json, the hook that runs Warden",
		Long: `Install prints the Claude Code settings block that runs Warden as a PreToolUse hook
for every tool, with the policy's absolute path. With --write it merges the block into
the settings file instead (default .claude/settings.json in the current directory):
every key and hook already there is kept, running it twice adds nothing, and a file
that is not valid JSON is refused and left untouched. The file is replaced atomically
and keeps its permissions.

The policy must load: a hook whose policy does not load denies every call. With --write,
a policy inside the project (the directory holding the settings' .claude) is refused
unless --policy-in-project is given: programs the agent runs could rewrite it.

The warden executable must last: one inside the Go build cache, a go-build directory
(go run, go test) or a temporary directory is refused; go install it first. The
PreToolUse command ends in '|| { ...; exit 2; }', so a hook whose binary is missing or
fails blocks the call (Claude Code blocks only on exit 2) and says why on stderr.

With --store, the hook records every decision in that audit log, and a PostToolUse
hook is added that records the calls that ran.`,
		Example: `  warden hook claude-code install --policy warden.yaml
  warden hook claude-code install --policy warden.yaml --write
  warden hook claude-code install --policy warden.yaml --store sqlite:///home/me/warden.db --write`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHookInstall(stdout, stderr, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.settings, "settings", filepath.Join(".claude", "settings.json"), "Claude Code settings file to merge into")
	f.StringVar(&o.policy, "policy", "warden.yaml", "policy file the hook uses")
	f.StringVar(&o.store, "store", "", "also record decisions in this store's audit log")
	f.StringVar(&o.warden, "warden", "", "warden executable the hook runs (default: warden on PATH, else this executable)")
	f.BoolVar(&o.write, "write", false, "merge into the settings file instead of printing")
	f.BoolVar(&o.policyInProject, policyInProjectFlag, false, "accept a policy file inside the project directory, where programs the agent runs could rewrite it")
	return cmd
}

// runHookInstall prints or writes the hooks block.
func runHookInstall(stdout, stderr io.Writer, o hookInstallOptions) error {
	policyPath, err := filepath.Abs(o.policy)
	if err != nil {
		return usageErrorf("--policy: %v", err)
	}
	if _, err := policy.LoadFile(policyPath, nil); err != nil {
		return configError(fmt.Errorf("not installing a hook whose policy does not load (it would deny every call):\n%w", err))
	}
	if !o.policyInProject {
		dirs := installProjectDirs(o.settings)
		if !o.write {
			// Printed, the block may go anywhere: warn about the usual place.
			if wd, err := os.Getwd(); err == nil && hook.Inside(policyPath, wd) {
				fmt.Fprintf(stderr, "warning: if this block goes into this directory's settings, the hook will refuse every call: %s\n", policyInProjectProblem(policyPath, wd))
			}
			dirs = nil
		}
		for _, dir := range dirs {
			if hook.Inside(policyPath, dir) {
				return usageErrorf("%s", policyInProjectProblem(policyPath, dir))
			}
		}
	}
	exe := o.warden
	if exe == "" {
		if exe, err = wardenExecutable(); err != nil {
			return internalError(err)
		}
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return usageErrorf("--warden: %v", err)
	}
	if err := checkHookExecutable(exe); err != nil {
		return usageErrorf("%v", err)
	}
	hooks := claudeHooks(exe, policyPath, o.store, o.policyInProject)
	if !o.write {
		_, err := stdout.Write(hook.ClaudeHooksBlock(hooks...))
		return err
	}
	changed, err := hook.InstallClaudeSettings(o.settings, hooks...)
	switch {
	case errors.Is(err, hook.ErrInvalidSettings):
		return configError(fmt.Errorf("%w (nothing was written; fix or move the file and run again)", err))
	case err != nil:
		return internalError(fmt.Errorf("%s: %w", o.settings, err))
	case changed:
		fmt.Fprintf(stdout, "added the Warden hook to %s\n", o.settings)
	default:
		fmt.Fprintf(stdout, "%s already runs the Warden hook; nothing changed\n", o.settings)
	}
	return nil
}

// claudeHooks are the hooks install adds: PreToolUse always, PostToolUse with a store.
func claudeHooks(exe, policyPath, dsn string, policyInProject bool) []hook.ClaudeHook {
	pre := []string{exe, "hook", "claude-code", "--policy", policyPath}
	if policyInProject {
		pre = append(pre, "--"+policyInProjectFlag)
	}
	if dsn == "" {
		return []hook.ClaudeHook{{Event: hook.EventPreToolUse, Command: blockingCommand(pre)}}
	}
	pre = append(pre, "--store", dsn)
	post := []string{exe, "hook", "claude-code", "--event", "post", "--store", dsn}
	return []hook.ClaudeHook{
		{Event: hook.EventPreToolUse, Command: blockingCommand(pre)},
		{Event: hook.EventPostToolUse, Command: shellJoin(post)},
	}
}

// blockingCommand is the PreToolUse hook command line for argv: Claude Code runs it
// through a shell and blocks the call only on exit 2, so any other failure (the binary
// removed or not executable, 126 and 127; killed by a signal; a crash, 1) is turned into
// exit 2 with a message on stderr, which Claude Code shows. Warden's own exit 2 passes
// through with its own message.
func blockingCommand(argv []string) string {
	return shellJoin(argv) + ` || { s=$?; [ "$s" -eq 2 ] || echo "Warden's PreToolUse hook failed (exit $s), so this tool call is blocked. Check that the warden binary named in the hook exists and runs, or reinstall the hook (go install github.com/wardenhq/warden/cmd/warden@latest, then warden hook claude-code install --write)." >&2; exit 2; }`
}

// wardenExecutable is the program the hook runs: warden as found on PATH (a path that
// survives upgrades), else the running executable. An absolute path, because a hook
// command that is not found is a non-blocking error for Claude Code: the tool would run
// ungoverned.
func wardenExecutable() (string, error) {
	if p, err := exec.LookPath("warden"); err == nil {
		return filepath.Abs(p)
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the warden executable (use --warden PATH): %w", err)
	}
	return p, nil
}

// installProjectDirs are the directories install treats as the project: the one whose
// .claude directory holds the settings file, unless that is the home directory (the
// user's own settings, for every project; the hook checks each project when it runs).
func installProjectDirs(settings string) []string {
	abs, err := filepath.Abs(settings)
	if err != nil {
		return nil
	}
	d := filepath.Dir(abs)
	if filepath.Base(d) != ".claude" {
		return nil
	}
	project := filepath.Dir(d)
	if home, err := os.UserHomeDir(); err == nil && hook.Inside(home, project) {
		return nil
	}
	return []string{project}
}

// checkHookExecutable refuses a warden executable that will not be there when the hook
// runs: one inside the Go build cache, a go-build work directory (where `go run` and `go
// test` put their binaries) or a temporary directory, all of which are cleaned. exe is
// absolute.
func checkHookExecutable(exe string) error {
	type place struct{ dir, what string }
	var places []place
	if out, err := exec.Command("go", "env", "GOCACHE", "GOTMPDIR").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 0 && filepath.IsAbs(lines[0]) {
			places = append(places, place{lines[0], "the Go build cache"})
		}
		if len(lines) > 1 && filepath.IsAbs(lines[1]) {
			places = append(places, place{lines[1], "Go's temporary directory (GOTMPDIR)"})
		}
	}
	for _, env := range []string{"GOCACHE", "GOTMPDIR"} {
		if d := os.Getenv(env); filepath.IsAbs(d) {
			places = append(places, place{d, "$" + env})
		}
	}
	if d, err := os.UserCacheDir(); err == nil {
		places = append(places, place{filepath.Join(d, "go-build"), "the Go build cache"})
	}
	places = append(places, place{os.TempDir(), "the temporary directory " + os.TempDir()})
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		places = append(places, place{d, "the temporary directory " + d})
	}
	fix := "Build warden to a lasting place and install with it: `go install github.com/wardenhq/warden/cmd/warden@latest` (then run `warden hook claude-code install` from PATH), or `go build -o ~/bin/warden ./cmd/warden` and pass --warden ~/bin/warden"
	for _, seg := range strings.Split(filepath.ToSlash(exe), "/") {
		if strings.HasPrefix(seg, "go-build") {
			return fmt.Errorf("not installing a hook that runs %s: it is a binary `go run` or `go test` built in a go-build work directory, which is deleted, and a hook whose binary is gone blocks every call.\n%s", exe, fix)
		}
	}
	for _, p := range places {
		if hook.Inside(exe, p.dir) {
			return fmt.Errorf("not installing a hook that runs %s: it is inside %s, which is cleaned, and a hook whose binary is gone blocks every call.\n%s", exe, p.what, fix)
		}
	}
	return nil
}

// shellJoin quotes words for the shell that runs a hook command.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,%") == "" {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// The audit log (--store). The PreToolUse hook records every decision. An allowed call
// is recorded write-ahead as an intent (executed: Claude Code runs it as soon as the hook
// answers), which the PostToolUse hook (--event post) completes as ran. A refused or
// halted call is one entry. An asked call is one pending entry: Warden does not see the
// person's answer, only, through the PostToolUse hook, that the call ran; then that hook
// records the run (intent and completion, approved in Claude Code). A call the person
// declined stays pending, which is all Warden knows about it.

// storeTimeout bounds the audit log work of one hook invocation.
const storeTimeout = 10 * time.Second

// maxAuditArgs bounds the arguments kept in an audit entry; larger ones (a Write of a
// big file) are kept only as their digest.
const maxAuditArgs = 64 << 10

// auditLookback is how far back the PostToolUse hook looks for the call's intent.
const auditLookback = 24 * time.Hour

// openHookStore opens the audit log, creating it on first use; the caller closes it.
func openHookStore(ctx context.Context, dsn string) (store.Store, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	return st, nil
}

// recordPre records a PreToolUse decision in the audit log.
func recordPre(ctx context.Context, dsn string, in hook.ClaudeInput, call hook.Call, r report) (err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	st, err := openHookStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	d := r.decision
	rec := store.CallRecord{
		CallID:     in.ToolUseID,
		Session:    in.SessionID,
		Tool:       call.Tool,
		ArgsDigest: call.Args.Digest(),
		Stage:      warden.StagePermission,
		Effect:     d.Effect.String(),
		RuleID:     d.RuleID,
		Rationale:  d.Rationale,
		Reason:     d.Reason,
		Revision:   r.revision,
	}
	if a := call.Args.AppendJSON(nil); len(a) <= maxAuditArgs {
		rec.Args = a
	}
	switch d.Effect {
	case warden.Allow:
		// Write-ahead: Claude Code runs the call as soon as this hook answers.
		rec.Executed = true
		_, err = st.BeginCall(ctx, rec)
	case warden.Ask:
		rec.Stage = warden.StageHuman
		rec.Status = warden.StatusPending
		err = st.RecordCall(ctx, rec)
	case warden.Halt:
		rec.Status = warden.StatusHalted
		err = st.RecordCall(ctx, rec)
	default:
		rec.Status = warden.StatusRefused
		err = st.RecordCall(ctx, rec)
	}
	return err
}

// runHookPost completes, as ran, the audit intent the PreToolUse hook recorded for the
// call. It prints nothing on success. The tool has already run, so a failure cannot
// block anything: it is reported on stderr with exit 1, which Claude Code shows the
// user as a non-blocking hook error.
func runHookPost(ctx context.Context, stdin io.Reader, stderr io.Writer, o hookOptions) error {
	fail := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "warden: the audit log did not record that the call ran: "+format+"\n", args...)
		return silentExit(exitInternal)
	}
	if o.store == "" {
		return fail("--event post needs --store DSN")
	}
	in, err := hook.ReadClaudeInput(stdin, hook.EventPostToolUse)
	if err != nil {
		return fail("%v", err)
	}
	if in.ToolUseID == "" {
		return fail("tool_use_id is missing, so the call cannot be found")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	st, err := openHookStore(ctx, o.store)
	if err != nil {
		return fail("%v", err)
	}
	err = completeCall(ctx, st, in, hook.ClaudeToolName(in.ToolName))
	if cerr := st.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fail("%v", err)
	}
	return nil
}

// completeCall records that the call ran: it completes the call's open intent, or, for
// a call Warden asked about, records the approved run.
func completeCall(ctx context.Context, st store.Store, in hook.ClaudeInput, tool string) error {
	recs, err := st.QueryCalls(ctx, store.CallFilter{Since: time.Now().Add(-auditLookback), CallID: in.ToolUseID})
	if err != nil {
		return err
	}
	size := 0
	if in.ToolResponse != nil {
		size = len(warden.AppendJSONValue(nil, in.ToolResponse))
	}
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		rec := recs[i]
		if rec.CallID != in.ToolUseID || rec.Session != in.SessionID {
			continue
		}
		done := store.Completion{Status: warden.StatusRan, Stage: warden.StageExecute, ResultSize: size}
		switch rec.Status {
		case store.StatusStarted:
			done.Duration = time.Since(rec.Time)
			err := st.EndCall(ctx, store.CallRef{Seq: rec.Seq}, done)
			if errors.Is(err, store.ErrAlreadyCompleted) {
				return nil // a retry, or a second post hook: the completion is there
			}
			return err
		case warden.StatusPending:
			// The person approved it in Claude Code's prompt, and it ran.
			run := rec
			run.Seq, run.Time, run.Unknown = 0, time.Time{}, false
			run.Status, run.Executed, run.ApprovedBy = "", true, approvedInClaudeCode
			ref, err := st.BeginCall(ctx, run)
			if err != nil {
				return err
			}
			done.ApprovedBy = approvedInClaudeCode
			return st.EndCall(ctx, ref, done)
		case warden.StatusRan:
			return nil // already recorded
		}
		return fmt.Errorf("call %q ran although Warden recorded it as %s", in.ToolUseID, rec.Status)
	}
	return fmt.Errorf("no call %q of session %q in the audit log (was the PreToolUse hook run with the same --store?)", in.ToolUseID, in.SessionID)
}

// approvedInClaudeCode is the approver of an asked call that ran: the person at Claude
// Code's permission prompt, whose name Warden does not learn.
const approvedInClaudeCode = "claude-code prompt"
