package main

// This file builds the run from agent.yaml: the policy, the directives, the
// workspace and its tools, the MCP servers, the Guard and the agent; and opens what
// keeps its checkpoints.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/checkpoint"
	"github.com/wardenhq/warden/directives"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/runfile"
	"github.com/wardenhq/warden/schema"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
	"github.com/wardenhq/warden/workspace"
)

// runtime is one agent built from agent.yaml.
type runtime struct {
	cfg       *runfile.File
	w         io.Writer
	stderr    io.Writer // warnings and the MCP servers' log
	pol       *policy.Policy
	ws        *workspace.Workspace
	wsCreated bool
	agent     *agent.Agent
	guard     *warden.Guard
	mcp       *upstream.Tools // the MCP servers of agent.yaml's mcp: section; nil without one
	mcpNotes  []string        // what the header says about them
	st        store.Store     // where a pause keeps its checkpoint; nil: a file
	dsn       string          // st's DSN, for the resume command
	key       []byte          // seals checkpoints
}

func newRuntime(cfg *runfile.File, saved *checkpoint.Checkpoint, key []byte, w, stderr io.Writer) (*runtime, error) {
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
	rt := &runtime{cfg: cfg, w: w, stderr: stderr, pol: pol, key: key}
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
		return evaluateCall(context.Background(), pol, callSpec{tool: "search", args: args, role: role}).Decision.Effect == warden.Allow
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
	rt.agent, err = agent.New(prov, g, &agent.Options{
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
		if err := rt.mcp.Close(context.Background()); err != nil {
			fmt.Fprintf(rt.stderr, "warning: stopping the MCP servers: %v\n", err)
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
	tools, err := upstream.RegisterTools(ctx, reg, tc, &upstream.ToolsOptions{
		Logger:      slog.New(slog.NewTextHandler(rt.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		CallTimeout: upstream.DefaultCallTimeout,
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
