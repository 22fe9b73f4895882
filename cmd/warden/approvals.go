package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/postgres" // registers postgres:// and postgresql://
	"github.com/wardenhq/warden/store/sqlite"     // registers sqlite://
)

// storeUsage is the help text of every --store flag.
const storeUsage = "the store: sqlite://PATH or postgres://... (default $WARDEN_STORE, else " + store.DefaultDSN + ")"

// storeDSN returns the DSN a command uses: the flag, else $WARDEN_STORE, else the
// default.
func storeDSN(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("WARDEN_STORE"); env != "" {
		return env
	}
	return store.DefaultDSN
}

// openStore opens the store named by the --store flag (or its defaults). A store that
// cannot be opened is exit 2: the DSN is wrong or the database unreachable. These
// commands only read or decide what exists, so a SQLite file that does not exist is
// an error rather than a new empty store: an audit of the wrong file must not look
// like an empty, intact log.
func openStore(ctx context.Context, flag string) (store.Store, error) {
	dsn := storeDSN(flag)
	if strings.HasPrefix(strings.ToLower(dsn), "sqlite://") {
		path, _, err := sqlite.ParseDSN(dsn)
		if err != nil {
			return nil, cmdError(exitUsage, "%v", err)
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, cmdError(exitUsage, "no store at %s: the file does not exist (choose one with --store or $WARDEN_STORE)", path)
		}
	}
	s, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, cmdError(exitUsage, "opening the store: %w", err)
	}
	return s, nil
}

// approvalsOptions are the flags shared by the approvals subcommands.
type approvalsOptions struct {
	store string
	all   bool
	json  bool
	by    string
	note  string
	scope string
	ttl   time.Duration
	// ttlSet is true when --ttl was given.
	ttlSet bool
	// now is the clock ages and expiry are judged by.
	now func() time.Time
}

func newApprovalsCommand(stdout io.Writer, proc *process) *cobra.Command {
	o := approvalsOptions{now: proc.clock()}
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, inspect and decide calls waiting for a person",
		Long: `Approvals are tool calls that wait for a person: a check-in, an escalation or a
middleware's question. Each is decided exactly once. An approval authorizes exactly
the call whose arguments the person saw (by digest): once (the default; consumed on
use) or, with --scope session, every identical call in the same session for a TTL.
An expired approval can no longer be decided or used.

Exit codes: 0 success; 2 bad usage, a store that cannot be opened, an unknown ID, a
decision already made or expired; 1 an internal error.`,
		Example: `  warden approvals list
  warden approvals show apv_k2x3m4n5p6q7r8s9
  warden approvals approve apv_k2x3m4n5p6q7r8s9 --note "checked with ops"
  warden approvals approve apv_k2x3m4n5p6q7r8s9 --scope session --ttl 30m
  warden approvals decline apv_k2x3m4n5p6q7r8s9 --by ann --note "wrong account"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("missing subcommand: list, show, approve or decline")
		},
	}
	cmd.PersistentFlags().StringVar(&o.store, "store", "", storeUsage)

	list := &cobra.Command{
		Use:   "list [--all] [--json]",
		Short: "List the calls waiting for a decision, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := newApprovalsProgram(o, approvalsList, "", stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	list.Flags().BoolVar(&o.all, "all", false, "include decided and expired approvals")
	list.Flags().BoolVar(&o.json, "json", false, "print one JSON object per line")

	show := &cobra.Command{
		Use:   "show ID [--json]",
		Short: "Show everything about one approval: the call, its arguments and evidence",
		Args:  exactlyOneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newApprovalsProgram(o, approvalsShow, args[0], stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	show.Flags().BoolVar(&o.json, "json", false, "print one JSON object")

	approve := &cobra.Command{
		Use:   "approve ID [--by NAME] [--note TEXT] [--scope once|session] [--ttl DUR]",
		Short: "Approve a call (exactly once)",
		Long: `Approve authorizes exactly the call the approval describes (same tool, same
arguments). With --scope once (the default unless the call asked for another) the
approval is consumed by the first call it authorizes. With --scope session it
authorizes every identical call in the same session until --ttl has passed (default:
the call's own TTL, else 1h).

A decision is made once: approving or declining a decided approval is refused.`,
		Args: exactlyOneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := o
			o.ttlSet = cmd.Flags().Changed("ttl")
			p, err := newApprovalsProgram(o, approvalsApprove, args[0], stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	approve.Flags().StringVar(&o.by, "by", "", "who decides (default $USER)")
	approve.Flags().StringVar(&o.note, "note", "", "a note kept with the decision")
	approve.Flags().StringVar(&o.scope, "scope", "", "once or session (default: the scope the call asked for, usually once)")
	approve.Flags().DurationVar(&o.ttl, "ttl", 0, "how long a session approval lasts (only with scope session)")

	decline := &cobra.Command{
		Use:   "decline ID [--by NAME] [--note TEXT]",
		Short: "Decline a call (exactly once); the note is what the model reads",
		Args:  exactlyOneID,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newApprovalsProgram(o, approvalsDecline, args[0], stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	decline.Flags().StringVar(&o.by, "by", "", "who decides (default $USER)")
	decline.Flags().StringVar(&o.note, "note", "", "why; the model reads it")

	cmd.AddCommand(list, show, approve, decline)
	return cmd
}

func exactlyOneID(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("want exactly one approval ID, got %d arguments", len(args))
	}
	return nil
}

// approvalsVerb is what an approvals program does.
type approvalsVerb int

const (
	approvalsList approvalsVerb = iota
	approvalsShow
	approvalsApprove
	approvalsDecline
)

// approvalsProgram is one `warden approvals` subcommand on the store.
type approvalsProgram struct {
	storeConn
	o    approvalsOptions
	verb approvalsVerb
	id   string // the approval shown or decided
	by   string // who decides (approve, decline)
	w    io.Writer
}

// newApprovalsProgram checks the flags of verb; the store is opened by Run.
func newApprovalsProgram(o approvalsOptions, verb approvalsVerb, id string, w io.Writer) (*approvalsProgram, error) {
	p := &approvalsProgram{storeConn: storeConn{flag: o.store}, o: o, verb: verb, id: id, w: w}
	if verb != approvalsApprove && verb != approvalsDecline {
		return p, nil
	}
	by := strings.TrimSpace(o.by)
	switch {
	case o.by != "" && by == "":
		return nil, usageErrorf("invalid --by: the name is blank")
	case by == "":
		if by = strings.TrimSpace(os.Getenv("USER")); by == "" {
			return nil, usageErrorf("say who decides with --by NAME ($USER is not set)")
		}
	}
	p.by = by
	if verb == approvalsApprove {
		switch o.scope {
		case "", store.ScopeOnce, store.ScopeSession:
		default:
			return nil, usageErrorf("invalid --scope %q: want once or session", o.scope)
		}
		if o.ttlSet && o.ttl <= 0 {
			return nil, usageErrorf("invalid --ttl %v: want a positive duration such as 30m", o.ttl)
		}
	}
	return p, nil
}

// Run opens the store and lists, shows or decides; the caller closes p.
func (p *approvalsProgram) Run(ctx context.Context) error {
	s, err := p.open(ctx)
	if err != nil {
		return err
	}
	switch p.verb {
	case approvalsList:
		return runApprovalsList(ctx, s, p.w, p.o)
	case approvalsShow:
		return runApprovalsShow(ctx, s, p.w, p.o, p.id)
	}
	return runDecide(ctx, s, p.w, p.o, p.id, p.by, p.verb == approvalsApprove)
}

// runApprovalsList prints the approvals waiting for a person (all with --all).
func runApprovalsList(ctx context.Context, s store.Store, w io.Writer, o approvalsOptions) error {
	ps, err := s.ListPending(ctx, store.PendingFilter{All: o.all})
	if err != nil {
		return cmdError(exitInternal, "listing approvals: %w", err)
	}
	if o.json {
		err = writeJSONLines(w, len(ps), func(i int) any { return pendingToJSON(ps[i]) })
	} else {
		err = writePendingTable(w, ps, o.all, o.now())
	}
	if err != nil {
		return cmdError(exitInternal, "writing the list: %w", err)
	}
	return nil
}

// writePendingTable prints one row per approval. With all, a STATE column says which
// are decided or expired.
func writePendingTable(w io.Writer, ps []store.Pending, all bool, at time.Time) error {
	if len(ps) == 0 {
		msg := "No approvals are waiting."
		if all {
			msg = "No approvals."
		}
		_, err := fmt.Fprintln(w, msg)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"ID"}
	if all {
		head = append(head, "STATE")
	}
	head = append(head, "KIND", "TOOL", "PRINCIPAL", "SESSION", "AGE", "EXPIRES", "QUESTION")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, p := range ps {
		row := []string{p.ID}
		if all {
			row = append(row, p.State)
		}
		row = append(row, dash(string(p.Kind)), dash(p.Tool), dash(p.Identity.Principal), dash(p.Session),
			age(at.Sub(p.Created)), expiresIn(p.Expires, at), oneLine(p.Question, 60))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// runApprovalsShow prints every field of one approval.
func runApprovalsShow(ctx context.Context, s store.Store, w io.Writer, o approvalsOptions, id string) error {
	p, err := s.GetPending(ctx, id)
	if err != nil {
		return decisionError(id, err)
	}
	if o.json {
		err = writeJSONLines(w, 1, func(int) any { return pendingToJSON(p) })
	} else {
		err = writePendingDetail(w, p, o.now())
	}
	if err != nil {
		return cmdError(exitInternal, "writing the approval: %w", err)
	}
	return nil
}

func writePendingDetail(w io.Writer, p store.Pending, at time.Time) error {
	var b strings.Builder
	// Every value is escaped (display): a stored string can neither recolour the
	// terminal nor hide or reorder what it says.
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(&b, "%-13s %s\n", name+":", value)
		}
	}
	var pd warden.PendingDecision
	hasDecision := len(p.Decision) > 0 && json.Unmarshal(p.Decision, &pd) == nil
	field("ID", shown(p.ID))
	field("State", shown(p.State))
	field("Kind", shown(string(p.Kind)))
	field("Tool", shown(p.Tool))
	field("Question", shownLines(p.Question, strings.Repeat(" ", 14)))
	field("Detail", shownLines(p.Detail, strings.Repeat(" ", 14)))
	if hasDecision {
		var askers []string
		for _, a := range pd.Asks {
			askers = append(askers, a.Middleware)
		}
		if len(askers) == 0 && pd.Middleware != "" {
			askers = []string{pd.Middleware}
		}
		field("Asked by", shown(strings.Join(askers, ", ")))
	}
	field("Tenant", shown(p.Identity.Tenant))
	field("Principal", shown(p.Identity.Principal))
	field("Conversation", shown(p.Identity.Conversation))
	field("Session", shown(p.Session))
	field("Revision", shown(p.Revision))
	field("Digest", shown(p.Digest))
	if hasDecision && pd.Digest != "" && pd.Digest != p.Digest {
		field("Args digest", shown(pd.Digest))
	}
	field("Created", formatTime(p.Created)+" ("+age(at.Sub(p.Created))+" ago)")
	if p.Expires.IsZero() {
		field("Expires", "never")
	} else {
		field("Expires", formatTime(p.Expires)+" ("+expiresIn(p.Expires, at)+")")
	}
	scope := p.Scope
	if p.Scope == store.ScopeSession {
		ttl := p.SessionTTL
		if ttl <= 0 {
			ttl = store.DefaultSessionTTL
		}
		scope += " (for " + ttl.String() + " after the decision)"
	}
	field("Scope", scope)
	if p.State == store.StateApproved || p.State == store.StateDeclined {
		field("Decided by", dash(p.DecidedBy))
		field("Decided at", formatTime(p.DecidedAt))
		field("Note", shownLines(p.Note, strings.Repeat(" ", 14)))
		if p.State == store.StateApproved && p.Scope == store.ScopeOnce {
			field("Consumed", yesNo(p.Consumed))
		}
	}
	if len(p.Decision) > 0 {
		field("Resume state", "stored (see --json)")
	}
	b.WriteString("Arguments:\n")
	b.WriteString(indent(prettyJSON(p.Args, "(not stored)"), "  "))
	if len(p.Evidence) > 0 {
		b.WriteString("Evidence:\n")
		b.WriteString(indent(renderEvidence(p.Evidence), "  "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderEvidence renders what the person was shown: a check-in's evidence field by
// field, anything else as indented JSON.
func renderEvidence(raw json.RawMessage) string {
	var ev warden.Evidence
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return prettyJSON(raw, "")
	}
	var b strings.Builder
	if ev.Does != "" {
		b.WriteString("Does: " + shownLines(ev.Does, "      ") + "\n")
	}
	if ev.Args != "" {
		b.WriteString("Arguments as shown:\n")
		b.WriteString(indent(display.Block(strings.TrimSuffix(ev.Args, "\n")).String()+"\n", "  "))
	}
	if len(ev.Context) > 0 {
		b.WriteString("Context:\n")
		for _, c := range ev.Context {
			b.WriteString("  - " + shownLines(c, "    ") + "\n")
		}
	}
	return b.String()
}

// runDecide approves or declines one approval, as by (the flags are checked).
func runDecide(ctx context.Context, s store.Store, w io.Writer, o approvalsOptions, id, by string, approve bool) error {
	p, err := s.GetPending(ctx, id)
	if err != nil {
		return decisionError(id, err)
	}
	if p.State != store.StatePending {
		return decidedError(p)
	}
	v := store.Verdict{Approve: approve, By: by, Note: o.note}
	if approve {
		v.Scope, v.SessionTTL = o.scope, o.ttl
		scope := v.Scope
		if scope == "" {
			scope = p.Scope
		}
		if o.ttlSet && scope != store.ScopeSession {
			return usageErrorf("--ttl applies only to a session approval: add --scope session")
		}
		if scope == store.ScopeSession && p.Session == "" {
			return usageErrorf("approval %s names no session, so it cannot be approved for a session: use --scope once", id)
		}
	}
	d, err := s.Decide(ctx, id, v)
	if errors.Is(err, store.ErrAlreadyDecided) {
		// Someone decided between our read and our write: say who.
		if q, gerr := s.GetPending(ctx, id); gerr == nil && q.State != store.StatePending {
			return decidedError(q)
		}
	}
	if err != nil {
		return decisionError(id, err)
	}
	var msg string
	switch {
	case !approve:
		msg = fmt.Sprintf("declined %s (%s) by %s", d.ID, d.Tool, d.DecidedBy)
	case d.Scope == store.ScopeSession:
		ttl := d.SessionTTL
		if ttl <= 0 {
			ttl = store.DefaultSessionTTL
		}
		msg = fmt.Sprintf("approved %s (%s) by %s for session %s until %s", d.ID, d.Tool, d.DecidedBy, d.Session, formatTime(d.DecidedAt.Add(ttl)))
	default:
		msg = fmt.Sprintf("approved %s (%s) by %s, once: it authorizes this exact call one time", d.ID, d.Tool, d.DecidedBy)
	}
	if _, err := fmt.Fprintln(w, msg); err != nil {
		return cmdError(exitInternal, "%v", err)
	}
	return nil
}

// decidedError is the refusal of a second decision: exit 2, saying who decided.
func decidedError(p store.Pending) error {
	if p.State == store.StateExpired {
		return cmdError(exitUsage, "approval %s expired at %s; it can no longer be decided", p.ID, formatTime(p.Expires))
	}
	by := ""
	if p.DecidedBy != "" {
		by = " by " + p.DecidedBy
	}
	return cmdError(exitUsage, "approval %s was already %s%s at %s", p.ID, p.State, by, formatTime(p.DecidedAt))
}

// decisionError maps a store error about one approval to an exit code: 2 for what the
// person can fix (unknown ID, expired, invalid verdict), 1 for store failures.
func decisionError(id string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return cmdError(exitUsage, "no approval with ID %s in this store", id)
	case errors.Is(err, store.ErrExpired):
		return cmdError(exitUsage, "approval %s expired; it can no longer be decided", id)
	case errors.Is(err, store.ErrAlreadyDecided):
		return cmdError(exitUsage, "approval %s was already decided", id)
	case errors.Is(err, store.ErrInvalidVerdict):
		return cmdError(exitUsage, "cannot decide %s: %w", id, err)
	}
	return cmdError(exitInternal, "approval %s: %w", id, err)
}
