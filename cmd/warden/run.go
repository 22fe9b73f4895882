package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/checkpoint"
	"github.com/wardenhq/warden/directives"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/mcp"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/runfile"
	"github.com/wardenhq/warden/schema"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/workspace"
)

// `warden run` runs a real agent: a model provider, the policy file, and four built-in
// demo tools confined to a workspace directory. Every tool call goes through the Guard.

type runOptions struct {
	config  string
	resume  string
	approve bool
	decline bool
	by      string
	note    string
	digest  string // --digest: the approval digest the person was shown
	store   string
	key     string // --checkpoint-key
}

const runLong = `Run runs an agent on a task: the model named in agent.yaml proposes tool calls, and
every call goes through Warden's Guard under the policy file before it runs. Progress
is streamed: each call (→ tool args), its decision (allowed by <rule> / refused:
<what the model read>), the size of its result, and the final answer.

The agent has four built-in tools, confined to the workspace directory and without
network access:

  reader {path}                               read a file
  editor {file_path, action: write|append, content}   write or append to a file
  search {pattern, path}                      find lines containing pattern
  bash   {command}                            a tiny in-process shell: ls, cat FILE,
                                              echo ..., pwd, wc -l FILE (nothing else
                                              runs; there is no real shell)

A path that leaves the workspace (../etc/passwd, a symlink out of it) is refused. A
path is judged as written and in the form the tool opens (cleaned, symlinks resolved:
x.env/ and a link to x.env are judged as x.env), and the tool opens exactly that form
without following links. The editor never writes the policy, agent.yaml, the
directives pack, the MCP project file, checkpoint files or the store's files,
whatever the policy says.

With an mcp: section, the agent also has the tools of MCP servers, named
mcp__<server>__<tool>. Before the run, each server is admitted by the transport
policy (the default denies every command and URL: say which to allow), started or
connected to, and its tools listed; they are registered with the built-in tools and
governed by the same policy (a deny_all policy denies them too; a rule names them by
that name). A server that is denied or cannot be started gives no tool, and the run
says so (mcp: not loaded: ...) and goes on without it. An upstream tool's error
result is what the model reads as the tool's result. A project file (.mcp.json, the
format Claude Code reads) is read only with trust_project_settings: true, and its
servers still need the transport policy. Tool definitions are pinned for the run
only. The servers are stopped when the run ends, and a resumed run starts them again.

When a call needs a person (a policy escalate rule, an ask), the run pauses: it writes
the checkpoint to <checkpoint_dir>/warden-checkpoint-<id>.json, prints the command
that resumes it, and exits 4. Resume it, in any process, with --resume FILE and
--approve or --decline, --by NAME and optionally --note TEXT. The pause prints the
whole call and its approval digest (the tool, the question and the arguments); pass
that digest with --approve --digest DIGEST and the resume is refused unless the
pending call is exactly the one shown. The checkpoint holds the whole conversation;
it is written readable by its owner only.

A checkpoint is sealed (HMAC-SHA256) with the checkpoint key, and a checkpoint whose
seal does not match (anything in it edited: the call, its arguments, the workspace)
is refused and nothing runs. The key is a file of 32 random bytes (64 hex digits),
created readable by its owner only on first use: --checkpoint-key FILE, else
$WARDEN_CHECKPOINT_KEY_FILE, else <user config dir>/warden/checkpoint.key
(on Linux $XDG_CONFIG_HOME, else ~/.config). A resume needs the key the run paused
with: on another machine, pass a copy of it. Keep it as private as the right to
approve.

A checkpoint resumes once, and only from where the pause kept it: the seal records
the file's path (or the store id), so a copy, a link elsewhere or a stored
checkpoint written to a file is refused. A resume whose tool's definition changed
since the pause is refused before the claim. The resume first claims it atomically,
before anything runs: the claim is warden-checkpoint-<id>.claim.json, created next
to the file (for a store, the stored checkpoint is swapped for the claim). Of several resumes
started together exactly one proceeds; the others are refused. When the run ends the
checkpoint file is removed and the claim records who resumed it; resuming it again is
refused. A resume that was killed after its claim leaves the claim: resuming again is
refused with "outcome unknown" (the approved call may have run), naming who claimed
it and when. A checkpoint refused as malformed or altered stays as it is.

With a store (--store DSN, else $WARDEN_STORE, else store: in agent.yaml; DSN is
sqlite://PATH or postgres://...), the checkpoint is kept in the store instead, under an
id (ckpt_<id>), and no file is written: --resume ckpt_<id> resumes it in any process
on any machine that shares the store (and the checkpoint key). --resume with a store
still takes a checkpoint file when the name is an existing file. Anyone who can read
the store can read the checkpoint.

agent.yaml (strict: unknown keys, wrong types and bad values are errors with
file:line:column):

  provider:
    name: anthropic          # anthropic | openai | scripted
    model: claude-sonnet-4-5
    base_url: ...            # optional: a gateway, a proxy, an OpenAI-compatible server
    max_tokens: 1024         # optional
    replies: [...]           # scripted only: the model's turns, in order; each is
                             # {text: ...} and/or {calls: [{name, args, id}]}
  policy: policy.yaml        # required; relative paths are relative to agent.yaml
  role: support              # optional: the policy's active role
  directives:                # optional: prompt directives (guidance, not enforcement)
    pack: pack.yaml
    role: support            # default: role
  instructions: ...          # optional: the system prompt's first part
  max_iterations: 10         # optional
  workspace: dir             # optional; default: a new temporary directory
  checkpoint_dir: dir        # optional; default: the current directory
  store: DSN                 # optional: keep checkpoints in this store (see above)
  mcp:                       # optional: MCP servers whose tools the agent has too
    servers:                 # as in gateway.yaml: a name maps to {command, args,
      notes:                 # env, dir, prefix} or {url, headers, prefix}
        command: notes-server
        args: [-dir, notes]
    transport:               # as in gateway.yaml: allow_commands, commands, allow_urls,
                             # hosts, allow_insecure_loopback, keep_secret_env,
                             # env_deny, max_connections_per_server
      allow_commands: true   # the default denies every command and every URL
      commands: [notes-server]
    project_file: .mcp.json  # default: the workspace's .mcp.json
    trust_project_settings: false  # read the project file only when true

API keys come from ANTHROPIC_API_KEY or OPENAI_API_KEY.

Exit codes: 0 the model answered; 1 an error during the run, or the iteration limit
was reached without an answer; 2 bad usage, a bad agent.yaml, policy or checkpoint,
a missing API key, a store that cannot be opened, a missing or unreadable checkpoint
key, or a checkpoint that is unknown, altered, claimed or already resumed; 3 message
middleware refused the model's input or output; 4 the run paused for a person (the
checkpoint is written); 5 a policy halted the run.`

func newRunCommand(stdout io.Writer) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --config agent.yaml [--store DSN] [--resume FILE|ID (--approve|--decline) --by NAME [--note TEXT]] [TASK]",
		Short: "Run an agent on a task, every tool call governed by a policy",
		Long:  runLong,
		Example: `  warden run --config examples/agent/agent.yaml "What do the notes say?"
  warden run --config examples/agent/agent.yaml --resume warden-checkpoint-1a2b3c4d5e6f.json --approve --by alice
  warden run --config examples/agent/agent.yaml --store sqlite:///var/lib/warden/warden.db "Tidy the notes"
  warden run --config examples/agent/agent.yaml --store sqlite:///var/lib/warden/warden.db --resume ckpt_1a2b3c4d5e6f --approve --by alice`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgentCommand(cmd.Context(), stdout, o, strings.TrimSpace(strings.Join(args, " ")))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "the agent configuration (YAML)")
	f.StringVar(&o.resume, "resume", "", "resume the paused run saved in this checkpoint file, or (with a store) under this checkpoint id")
	f.BoolVar(&o.approve, "approve", false, "with --resume: approve the pending call")
	f.BoolVar(&o.decline, "decline", false, "with --resume: decline the pending call")
	f.StringVar(&o.by, "by", "", "with --resume: who decides")
	f.StringVar(&o.note, "note", "", "with --resume: a note for the decision (a decline's note is what the model reads)")
	f.StringVar(&o.digest, "digest", "", "with --approve: the approval digest the pause printed; the resume is refused when the pending call is not that one")
	f.StringVar(&o.store, "store", "", "keep checkpoints in this store, by id: sqlite://PATH or postgres://... (default $WARDEN_STORE, else store: in agent.yaml, else checkpoint files)")
	f.StringVar(&o.key, "checkpoint-key", "", "the key file that seals checkpoints (default $WARDEN_CHECKPOINT_KEY_FILE, else <user config dir>/warden/checkpoint.key; created on first use)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// checkFlags refuses flag combinations that make no sense.
func (o runOptions) checkFlags(task string) error {
	if o.resume == "" {
		for _, f := range []struct {
			set  bool
			name string
		}{{o.approve, "--approve"}, {o.decline, "--decline"}, {o.by != "", "--by"}, {o.note != "", "--note"}, {o.digest != "", "--digest"}} {
			if f.set {
				return usageErrorf("%s is only for --resume", f.name)
			}
		}
		if task == "" {
			return usageErrorf("no task: write it after the flags, e.g. warden run --config agent.yaml \"summarize notes.txt\"")
		}
		return nil
	}
	switch {
	case o.approve == o.decline:
		return usageErrorf("--resume needs exactly one of --approve and --decline")
	case o.decline && o.digest != "":
		return usageErrorf("--digest is only for --approve: it names what the person approves")
	case strings.TrimSpace(o.by) == "":
		return usageErrorf("--resume needs --by NAME: a decision names who took it")
	case task != "":
		return usageErrorf("a resumed run continues its own task; remove the task %q", task)
	}
	return nil
}

func runAgentCommand(ctx context.Context, w io.Writer, o runOptions, task string) (err error) {
	if err := o.checkFlags(task); err != nil {
		return err
	}
	cfg, err := runfile.Load(o.config)
	if err != nil {
		return configError(err)
	}
	// The store of checkpoints: the flag, else $WARDEN_STORE, else agent.yaml; none
	// means checkpoint files.
	dsn := o.store
	if dsn == "" {
		dsn = os.Getenv("WARDEN_STORE")
	}
	if dsn == "" {
		dsn = cfg.Store
	}
	// With a store, --resume names a checkpoint id, unless it names an existing file.
	fromStore := false
	if o.resume != "" && dsn != "" {
		_, serr := os.Stat(o.resume)
		fromStore = serr != nil
	}
	var st store.Store
	if dsn != "" {
		if st, err = openRunStore(ctx, dsn, fromStore); err != nil {
			return err
		}
		defer func() {
			if cerr := st.Close(); cerr != nil && err == nil {
				err = internalError(fmt.Errorf("closing the store: %w", cerr))
			}
		}()
	}
	// The key that seals checkpoints. A resume needs the one the run paused with, so it
	// never creates one.
	keyFile, err := checkpoint.KeyFile(o.key)
	if err != nil {
		return checkpointError(err)
	}
	if cfg.Workspace != "" {
		// Before a key is created: never create one where the run's tools work.
		ws, err := filepath.Abs(cfg.Workspace)
		if err == nil {
			if real, rerr := hook.ResolvePath(ws); rerr == nil {
				ws = real
			}
			if err := checkpoint.KeyOutsideWorkspace(keyFile, ws); err != nil {
				return checkpointError(err)
			}
		}
	}
	key, err := checkpoint.LoadKey(keyFile, o.resume == "")
	if err != nil {
		return checkpointError(err)
	}
	var saved *checkpoint.Checkpoint
	switch {
	case fromStore:
		if saved, err = checkpoint.GetStored(ctx, st, o.resume, key, keyFile); err != nil {
			return checkpointError(err)
		}
	case o.resume != "":
		if saved, err = checkpoint.ReadFile(o.resume, key, keyFile); err != nil {
			if _, serr := os.Stat(o.resume); serr != nil && dsn == "" && strings.HasPrefix(o.resume, checkpoint.StoredPrefix) {
				return usageErrorf("%s is not a file; if it is a stored checkpoint's id, name the store with --store DSN or $WARDEN_STORE", o.resume)
			}
			return checkpointError(err)
		}
	}
	rt, err := newRuntime(cfg, saved, key, w)
	if err != nil {
		return err
	}
	defer rt.close()
	if err := checkpoint.KeyOutsideWorkspace(keyFile, rt.ws.Dir()); err != nil {
		return checkpointError(err)
	}
	rt.st, rt.dsn = st, dsn
	if err := protectRunFiles(rt.ws, cfg, dsn); err != nil {
		return internalError(err)
	}
	rt.header(task)

	if saved == nil {
		res, err := rt.agent.Run(ctx, task)
		return rt.finish(o, res, err)
	}
	return rt.resume(ctx, o, saved)
}

// resume shows the pending call, claims the checkpoint and resumes it. The claim comes
// first: of several resumes of one checkpoint exactly one gets past it, and once it is
// taken the checkpoint never resumes again, whatever happens next.
func (rt *runtime) resume(ctx context.Context, o runOptions, saved *checkpoint.Checkpoint) error {
	w := rt.w
	// The agent's own checkpoint, checked as Resume will check it: the question shown
	// here is the one that resumes.
	pd, err := rt.agent.VerifyCheckpoint(saved.Checkpoint)
	if err != nil {
		return configError(fmt.Errorf("%s: %w", o.resume, err))
	}
	if pd.ApprovalDigest() != saved.Pending.ApprovalDigest() || !pd.Args.Equal(saved.Pending.Args) {
		return configError(&warden.ConfigError{File: o.resume, Msg: "the pending call shown in the file is not the one the checkpoint resumes; it was altered", Hint: "pause the run again to get a new checkpoint"})
	}
	if o.approve && o.digest != "" && o.digest != pd.ApprovalDigest() {
		return cmdError(exitUsage, "%s: --digest %s is not this checkpoint's approval digest (%s): the pending call is not the one you were shown, so nothing ran; look at it again and approve that digest", o.resume, o.digest, pd.ApprovalDigest())
	}
	if t, ok := rt.guard.Tool(pd.Tool); !ok || checkpoint.ToolDefinition(t) != saved.PendingTool {
		// Before the claim: the checkpoint stays, and resumes once the tool is back.
		return configError(&warden.ConfigError{File: o.resume, Msg: "the definition of " + pd.Tool + " changed since the pause (its description, input schema, capabilities or source differ, or it is gone): the person was asked about the tool as it was, so nothing ran", Hint: "check what changed the tool; run the task again to ask about the tool as it is now"})
	}
	var answer warden.Answer = warden.Approved{By: o.by, Note: o.note, Digest: pd.ApprovalDigest()}
	verb := "approved"
	if o.decline {
		answer, verb = warden.Declined{By: o.by, Note: o.note}, "declined"
	}
	fmt.Fprintf(w, "resuming %s: %s %s by %s\n", o.resume, pd.Tool, verb, o.by)
	fmt.Fprintf(w, "  call:     %s %s\n", pd.Tool, shownCall(pd.Args))
	fmt.Fprintf(w, "  digest:   %s (the arguments)\n", pd.Digest)
	fmt.Fprintf(w, "  approval: %s (the tool, the question and the arguments)\n", pd.ApprovalDigest())

	claim := checkpoint.NewClaim(o.resume, pd, verb, o.by)
	var c checkpoint.Claimed
	if rt.st != nil && saved.Stored() {
		c, err = checkpoint.ClaimStored(ctx, rt.st, o.resume, saved, claim)
	} else {
		c, err = checkpoint.ClaimFile(strings.TrimPrefix(saved.Kept, "file:"), saved, claim)
	}
	if err != nil {
		return checkpointError(err)
	}
	res, err := rt.agent.Resume(ctx, saved.Checkpoint, answer)
	if res.Resumed == nil && err != nil {
		// Refused before anything ran (the Guard refused the pending decision).
		if ferr := c.Finish(ctx, checkpoint.StateRefused, err.Error()); ferr != nil {
			fmt.Fprintf(w, "warning: could not record the refused resume of %s: %v\n", o.resume, ferr)
		}
		return configError(fmt.Errorf("%s: %w", o.resume, err))
	}
	// The call may have run: from here on the checkpoint is used, and the claim says so.
	if ferr := c.Finish(ctx, checkpoint.StateResumed, ""); ferr != nil {
		fmt.Fprintf(w, "warning: could not record that %s was resumed (its claim stays, so it will not resume again): %v\n", o.resume, ferr)
	}
	if r := res.Resumed; r.RevisionChanged {
		fmt.Fprintf(w, "note: the policy changed since the pause (%s, now %s); the pending call was judged again under the current policy\n", r.CheckpointRevision, r.Revision)
	}
	return rt.finish(o, res, err)
}

// runtime is one agent built from agent.yaml.
type runtime struct {
	cfg       *runfile.File
	w         io.Writer
	pol       *policy.Policy
	ws        *workspace.Workspace
	wsCreated bool
	agent     *agent.Agent
	guard     *warden.Guard
	mcp       *mcp.Tools  // the MCP servers of agent.yaml's mcp: section; nil without one
	mcpNotes  []string    // what the header says about them
	st        store.Store // where a pause keeps its checkpoint; nil: a file
	dsn       string      // st's DSN, for the resume command
	key       []byte      // seals checkpoints
}

func newRuntime(cfg *runfile.File, saved *checkpoint.Checkpoint, key []byte, w io.Writer) (*runtime, error) {
	pol, err := policy.LoadFile(cfg.Policy, &policy.LoadOptions{Role: cfg.Role})
	if err != nil {
		return nil, configError(err)
	}
	var prompt string
	if cfg.DirectivesPack != "" {
		pack, err := directives.LoadPack(cfg.DirectivesPack)
		if err != nil {
			return nil, configError(err)
		}
		role := cfg.DirectivesRole
		if role == "" {
			role = pol.ActiveRole()
		}
		if _, ok := pack.PromptDirectives(role); !ok {
			hint := "roles in the pack: " + strings.Join(pack.Roles(), ", ")
			if role == "" {
				hint = "name the role with directives.role or role"
			}
			return nil, configError(cfg.ErrorAt(runfile.SectionDirectives, fmt.Sprintf("directives pack %s has no role %q", cfg.DirectivesPack, role), hint))
		}
		prompt = pack.Render(role)
	}
	prov, err := cfg.Provider.New()
	if err != nil {
		return nil, configError(err)
	}
	rt := &runtime{cfg: cfg, w: w, pol: pol, key: key}
	dir := cfg.Workspace
	switch {
	case dir == "" && saved != nil:
		dir = saved.Workspace
	case dir == "":
		if dir, err = os.MkdirTemp("", "warden-workspace-"); err != nil {
			return nil, internalError(err)
		}
		rt.wsCreated = true
	}
	// A directory search opens every file below it: each is judged as a search of that
	// file (fail closed: anything but an allow skips it).
	role := cfg.Role
	maySearch := func(pattern, rel string) bool {
		args, err := warden.NewArgs("pattern", pattern, "path", rel)
		if err != nil {
			return false
		}
		return evaluateCall(context.Background(), pol, callSpec{tool: "search", args: args, role: role}).decision.Effect == warden.Allow
	}
	if rt.ws, err = workspace.Open(dir, &workspace.Options{MaySearch: maySearch}); err != nil {
		if saved != nil && cfg.Workspace == "" {
			return nil, configError(fmt.Errorf("the paused run's workspace %s: %w", dir, err))
		}
		return nil, configError(cfg.ErrorAt(runfile.SectionWorkspace, "workspace: "+err.Error(), "create the directory, or leave workspace out to use a new temporary one"))
	}
	var reg warden.Registry
	for _, t := range rt.ws.Tools() {
		if err := reg.Register(t); err != nil {
			rt.close()
			return nil, internalError(err)
		}
	}
	// The MCP servers' tools join the built-in ones before the one Bind (ADR D3).
	if cfg.MCP != nil {
		if err := rt.registerMCP(&reg); err != nil {
			rt.close()
			return nil, err
		}
	}
	g, err := reg.Bind(warden.Config{
		Checkers: []warden.Checker{pol},
		Schemas:  schema.Compiler{},
		Revision: pol.Revision(),
		CanPause: true,
	})
	if err == nil && len(g.Problems()) > 0 {
		err = errors.Join(g.Problems()...)
	}
	if err != nil {
		rt.close()
		return nil, internalError(err)
	}
	instructions := cfg.Instructions
	if instructions == "" {
		instructions = defaultInstructions
	}
	rt.guard = g
	rt.agent, err = agent.New(agent.Config{
		Provider:      prov,
		Guard:         g,
		Instructions:  instructions,
		Directives:    prompt,
		MaxIterations: cfg.MaxIterations,
		Session:       "warden-run",
		OnCall:        func(_ context.Context, rec agent.CallRecord) { rt.progress(rec) },
		CheckpointKey: key,
	})
	if err != nil {
		rt.close()
		return nil, internalError(err)
	}
	return rt, nil
}

const defaultInstructions = "You are an agent working in a workspace directory. Use the tools to complete the task; paths are relative to the workspace. Every tool call is checked by a policy: when one is refused, read why and continue without it, or say what you are unable to do."

func (rt *runtime) close() {
	if rt.mcp != nil {
		if err := rt.mcp.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "warning: stopping the MCP servers: %v\n", err)
		}
		rt.mcp = nil
	}
	if rt.ws != nil {
		rt.ws.Close()
	}
}

// mcpDiscoveryTimeout bounds admitting and discovering the MCP servers of a run.
const mcpDiscoveryTimeout = 2 * time.Minute

// registerMCP admits, starts and lists the MCP servers of the mcp: section and
// registers their tools in reg, noting for the header what each server gave and what
// was left out (a denied server gives no tool; the run goes on without it).
func (rt *runtime) registerMCP(reg *warden.Registry) error {
	tc := *rt.cfg.MCP
	if tc.ProjectFile == "" {
		// The project's own file is the workspace's .mcp.json.
		def := filepath.Join(rt.ws.Dir(), ".mcp.json")
		if _, err := os.Stat(def); err == nil {
			tc.ProjectFile = def
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpDiscoveryTimeout)
	defer cancel()
	tools, err := mcp.RegisterTools(ctx, reg, tc, &mcp.ToolsOptions{
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		CallTimeout: mcp.DefaultCallTimeout,
	})
	if err != nil {
		if errors.Is(err, warden.ErrRegistryBound) {
			return internalError(err)
		}
		return configError(rt.cfg.ErrorAt(runfile.SectionMCP, err.Error(), "fix the mcp section"))
	}
	rt.mcp = tools
	count := map[string]int{}
	var servers []string
	for _, t := range reg.Tools() {
		if server, ok := strings.CutPrefix(t.Source, "mcp:"); ok {
			if count[server] == 0 {
				servers = append(servers, server)
			}
			count[server]++
		}
	}
	for _, s := range servers {
		rt.mcpNotes = append(rt.mcpNotes, fmt.Sprintf("server %s: %s", s, countOf(count[s], "tool", "tools")))
	}
	for _, p := range tools.Problems() {
		rt.mcpNotes = append(rt.mcpNotes, "not loaded: "+p.Error())
	}
	if len(rt.mcpNotes) == 0 {
		rt.mcpNotes = []string{"no server configured"}
	}
	return nil
}

func (rt *runtime) header(task string) {
	p := rt.cfg.Provider
	model := p.Name
	if p.Model != "" {
		model += " " + p.Model
	}
	fmt.Fprintf(rt.w, "model:     %s\n", model)
	rev := strings.TrimPrefix(rt.pol.Revision(), "sha256:")
	if len(rev) > 12 {
		rev = rev[:12]
	}
	pol := rt.pol.Source() + " (revision " + rev + ")"
	if r := rt.pol.ActiveRole(); r != "" {
		pol += ", role " + r
	}
	fmt.Fprintf(rt.w, "policy:    %s\n", pol)
	ws := rt.ws.Dir()
	if rt.wsCreated {
		ws += " (a new temporary directory)"
	}
	fmt.Fprintf(rt.w, "workspace: %s\n", ws)
	for _, n := range rt.mcpNotes {
		fmt.Fprintf(rt.w, "mcp:       %s\n", n)
	}
	if task != "" {
		fmt.Fprintf(rt.w, "task:      %s\n", task)
	}
	fmt.Fprintln(rt.w)
}

// progress prints one settled call: the call, its decision and the size of its result.
func (rt *runtime) progress(rec agent.CallRecord) {
	args := rec.RawArgs
	if args == "" {
		args = string(rec.Args.AppendJSON(nil))
	}
	fmt.Fprintf(rt.w, "→ %s %s\n", rec.Tool, clipLine(args, 200))
	indented := func(label, text string) {
		fmt.Fprintf(rt.w, "  %s%s\n", label, strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n    "))
	}
	switch rec.Status {
	case warden.StatusRan, warden.StatusFailed:
		if rec.Executed {
			fmt.Fprintf(rt.w, "  %s\n", allowedBy(rec))
		}
		if rec.Status == warden.StatusFailed {
			indented("failed: ", rec.ModelText)
			return
		}
		fmt.Fprintf(rt.w, "  ← %d chars\n", utf8.RuneCountInString(rec.ModelText))
	case warden.StatusPending:
		fmt.Fprintf(rt.w, "  paused: a person must decide (below)\n")
	case warden.StatusHalted:
		indented("halted: ", rec.ModelText)
	case agent.StatusNotRun:
		indented("", rec.ModelText)
	default:
		indented("refused: ", rec.ModelText)
	}
}

// allowedBy names what let an executed call run: the person who approved it, or the
// last rule that allowed it.
func allowedBy(rec agent.CallRecord) string {
	if rec.ApprovedBy != "" {
		return "approved by " + rec.ApprovedBy
	}
	for i := len(rec.Checks) - 1; i >= 0; i-- {
		if d := rec.Checks[i].Decision; d.Effect == warden.Allow && d.RuleID != "" {
			return "allowed by " + d.RuleID
		}
	}
	return "allowed"
}

// finish reports how the run ended and returns the exit code.
func (rt *runtime) finish(o runOptions, res agent.Result, err error) error {
	w := rt.w
	var halt *warden.PolicyHaltError
	var denied *warden.MessageDeniedError
	switch {
	case errors.As(err, &halt):
		fmt.Fprintf(w, "\nhalted by policy: rule %s", halt.RuleID)
		if halt.Reason != "" {
			fmt.Fprintf(w, " (%s)", halt.Reason)
		}
		if halt.CheckerID != "" && !strings.HasPrefix(halt.CheckerID, "checker[") {
			fmt.Fprintf(w, ", checker %s", halt.CheckerID)
		}
		fmt.Fprintf(w, "\n%s was not executed; the run ended. The model read: %s\n", halt.Proposed.Tool, halt.TellLLM)
		return silentExit(exitHalt)
	case errors.As(err, &denied):
		fmt.Fprintf(w, "\nstopped: %v\n", denied)
		return silentExit(exitDeny)
	case err != nil:
		return internalError(fmt.Errorf("the run failed: %w", err))
	case res.Paused != nil:
		return rt.pause(o, res.Paused)
	case res.Stopped == agent.StopMaxIterations:
		fmt.Fprintf(w, "\nstopped: the model did not answer within %d iterations (max_iterations)\n", res.Iterations)
		return silentExit(exitInternal)
	}
	fmt.Fprintf(w, "\nanswer (%s, %s executed):\n%s\n", countOf(res.Iterations, "iteration", "iterations"),
		countOf(res.Executed(), "tool call", "tool calls"), res.Answer)
	return nil
}

// pause writes the checkpoint and prints the commands that resume it.
func (rt *runtime) pause(o runOptions, p *agent.Paused) error {
	id := make([]byte, 6)
	if _, err := rand.Read(id); err != nil {
		return internalError(err)
	}
	t, _ := rt.guard.Tool(p.Pending.Tool)
	cp := &checkpoint.Checkpoint{
		PendingTool: checkpoint.ToolDefinition(t),
		ID:          hex.EncodeToString(id),
		Config:      rt.cfg.Path,
		Workspace:   rt.ws.Dir(),
		Pending:     p.Pending,
		Checkpoint:  json.RawMessage(p.Checkpoint),
	}
	var file string
	if rt.st != nil {
		cp.Kept = "store:" + checkpoint.StoredPrefix + cp.ID
	} else {
		// The checkpoint holds the whole conversation: only its owner may read it.
		if err := os.MkdirAll(rt.cfg.CheckpointDir, 0o700); err != nil {
			return internalError(fmt.Errorf("creating the checkpoint directory: %w", err))
		}
		dir, err := filepath.Abs(rt.cfg.CheckpointDir)
		if err != nil {
			return internalError(err)
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		file = filepath.Join(dir, "warden-checkpoint-"+cp.ID+".json")
		cp.Kept = "file:" + file
	}
	data, err := checkpoint.Seal(cp, rt.key)
	if err != nil {
		return internalError(err)
	}
	var where, base string
	if rt.st != nil {
		// The same bytes as the file, kept in the store under an id.
		ckpt := checkpoint.StoredPrefix + hex.EncodeToString(id)
		ctx, cancel := context.WithTimeout(context.Background(), checkpoint.StoreTimeout)
		defer cancel()
		if err := rt.st.PutCheckpoint(ctx, ckpt, data); err != nil {
			return internalError(fmt.Errorf("storing the checkpoint: %w", err))
		}
		shown := redactDSN(rt.dsn)
		where = ckpt + " (in the store " + shown + ")"
		base = "warden run --config " + runQuote(o.config) + " --store " + runQuote(shown) + " --resume " + ckpt
	} else {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return internalError(fmt.Errorf("writing the checkpoint: %w", err))
		}
		where = file
		base = "warden run --config " + runQuote(o.config) + " --resume " + runQuote(file)
	}
	w := rt.w
	fmt.Fprintf(w, "\npaused: %s needs a person.\n", p.Pending.Tool)
	fmt.Fprintf(w, "  question:   %s\n", p.Pending.Question)
	// The whole call, never clipped: this is what the person approves.
	fmt.Fprintf(w, "  call:       %s %s\n", p.Pending.Tool, shownCall(p.Pending.Args))
	fmt.Fprintf(w, "  approval:   %s (the tool, the question and the arguments)\n", p.Pending.ApprovalDigest())
	fmt.Fprintf(w, "  checkpoint: %s\n", where)
	if rt.st != nil && redactDSN(rt.dsn) != rt.dsn {
		fmt.Fprintf(w, "  (the store's password is not shown: put it back in --store, or pass the DSN in $WARDEN_STORE)\n")
	}
	fmt.Fprintf(w, "approve:  %s --approve --digest %s --by NAME\n", base, p.Pending.ApprovalDigest())
	fmt.Fprintf(w, "decline:  %s --decline --by NAME --note 'why'\n", base)
	return silentExit(exitAsk)
}

// shownCall renders a call's arguments in full, as JSON on one line: what a person
// approves is never clipped. Every character that is not shown as itself (display's
// Unsafe set: bidirectional controls, zero-width and invisible characters) is written
// as its JSON \u escape, so the line is the same JSON value and hides nothing.
func shownCall(a warden.Args) string {
	var b strings.Builder
	for _, r := range string(a.AppendJSON(nil)) {
		if !display.Unsafe(r) {
			b.WriteRune(r)
			continue
		}
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

func clipLine(s string, max int) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max-1]) + "…"
}

// runQuote quotes a word for a POSIX shell when it needs it.
func runQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// redactDSN hides a password in a DSN printed in the resume command.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); !ok {
		return dsn
	}
	return u.Redacted()
}

// openRunStore opens the store of checkpoints. Resuming from it reads what exists, so
// it uses openStore (a SQLite file that does not exist is an error); a run that may
// pause creates the store if needed, as the hook does. Either failure is exit 2.
func openRunStore(ctx context.Context, dsn string, resume bool) (store.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, checkpoint.StoreTimeout)
	defer cancel()
	if resume {
		return openStore(ctx, dsn)
	}
	st, err := openHookStore(ctx, dsn)
	if err != nil {
		return nil, cmdError(exitUsage, "%w", err)
	}
	return st, nil
}

// checkpointError is the exit for what package checkpoint returned: a refusal is exit
// 2, printed as is when it names a file and as the command's own sentence otherwise;
// anything else is a failure, exit 1.
func checkpointError(err error) error {
	var r *checkpoint.Refusal
	if !errors.As(err, &r) {
		return internalError(err)
	}
	var ce *warden.ConfigError
	if errors.As(r.Err, &ce) {
		return configError(r.Err)
	}
	return cmdError(exitUsage, "%w", r.Err)
}

// protectRunFiles protects, from the editor, every file this run reads or writes
// besides the workspace's own: the policy, agent.yaml, the directives pack, the MCP
// project file, the checkpoint files and, for a sqlite:// store, the database files.
func protectRunFiles(ws *workspace.Workspace, cfg *runfile.File, dsn string) error {
	for _, f := range []struct{ path, what string }{
		{cfg.Policy, "the Warden policy"},
		{cfg.Path, "the agent configuration"},
		{cfg.DirectivesPack, "the directives pack"},
		{mcpProjectFile(cfg, ws.Dir()), "the MCP project file"},
	} {
		if f.path == "" {
			continue
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return err
		}
		ws.Protect(abs, f.what)
	}
	if dsn != "" {
		files, err := storeFiles(dsn)
		if err != nil {
			return err
		}
		for _, f := range files {
			ws.Protect(f, "the Warden store")
		}
	}
	return ws.ProtectCheckpoints(cfg.CheckpointDir)
}

// mcpProjectFile is the project file an mcp: section reads (when trusted): the one
// it names, else the workspace's .mcp.json; "" without an mcp: section.
func mcpProjectFile(cfg *runfile.File, workspace string) string {
	switch {
	case cfg.MCP == nil:
		return ""
	case cfg.MCP.ProjectFile != "":
		return cfg.MCP.ProjectFile
	}
	return filepath.Join(workspace, ".mcp.json")
}
