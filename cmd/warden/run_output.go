package main

// This file is what warden run prints: the header, each call as it settles, how the
// run ended, and the pause with the commands that resume it.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/checkpoint"
	"github.com/wardenhq/warden/internal/display"
)

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

// countOf returns "1 scene", "2 scenes".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
