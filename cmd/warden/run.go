package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/checkpoint"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/runfile"
	"github.com/wardenhq/warden/store"
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

func newRunCommand(stdout, stderr io.Writer) *cobra.Command {
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
			p, err := newRunProgram(o, strings.TrimSpace(strings.Join(args, " ")), stdout, stderr)
			return execute(cmd.Context(), p, err)
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

// runProgram is one `warden run`: a new run of a task, or the resume of a paused one.
type runProgram struct {
	o      runOptions
	task   string
	w      io.Writer
	stderr io.Writer   // warnings and the MCP servers' log
	st     store.Store // the store of checkpoints; nil: files
	rt     *runtime
}

// newRunProgram checks the flags; nothing is read or started until Run.
func newRunProgram(o runOptions, task string, w, stderr io.Writer) (*runProgram, error) {
	if err := o.checkFlags(task); err != nil {
		return nil, err
	}
	return &runProgram{o: o, task: task, w: w, stderr: stderr}, nil
}

// Close stops what Run started (the MCP servers, the workspace) and closes the store.
func (p *runProgram) Close() error {
	if p.rt != nil {
		p.rt.close()
		p.rt = nil
	}
	if p.st != nil {
		st := p.st
		p.st = nil
		if err := st.Close(); err != nil {
			return internalError(fmt.Errorf("closing the store: %w", err))
		}
	}
	return nil
}

// Run runs the task, or resumes the paused run, and returns how it ended (an
// *exitError for every exit but 0). The caller closes p.
func (p *runProgram) Run(ctx context.Context) error {
	o, task, w := p.o, p.task, p.w
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
		p.st = st
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
	rt, err := newRuntime(cfg, saved, key, w, p.stderr)
	if err != nil {
		return err
	}
	p.rt = rt
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
