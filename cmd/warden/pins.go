package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/store"
)

type pinsOptions struct {
	store string
	json  bool
	by    string
	hash  string
}

func newPinsCommand(stdout io.Writer) *cobra.Command {
	var o pinsOptions
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "Review MCP tool definitions that changed since they were approved",
		Long: `The gateway pins every upstream tool's definition (name, description, schemas,
annotations) the first time it admits it. A tool whose definition changes later is
quarantined: hidden from clients and refused until an operator approves the new
definition here or in the web inbox.

Exit codes: 0 success; 2 bad usage, a store that cannot be opened, an unknown tool,
nothing to approve, or a definition that changed again since it was shown; 1 an
internal error.`,
		Example: `  warden pins list
  warden pins diff mcp__notes__write_note
  warden pins approve mcp__notes__write_note --hash sha256:...`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usageErrorf("missing subcommand: list, diff or approve")
		},
	}
	cmd.PersistentFlags().StringVar(&o.store, "store", "", storeUsage)
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "List pinned tools; quarantined ones first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := newPinsProgram(o, pinsList, "", stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	list.Flags().BoolVar(&o.json, "json", false, "print one JSON object per line")
	diff := &cobra.Command{
		Use:   "diff NAME",
		Short: "Show how a quarantined tool's definition changed",
		Args:  exactlyOneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newPinsProgram(o, pinsDiff, args[0], stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	approve := &cobra.Command{
		Use:   "approve NAME [--hash H] [--by NAME]",
		Short: "Accept a quarantined tool's new definition",
		Long: `Approve accepts the pending definition of one tool. Pass --hash with the pending
hash that 'warden pins diff' printed to approve exactly the definition you reviewed:
if the server changed it again in between, the approval is refused.`,
		Args: exactlyOneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newPinsProgram(o, pinsApprove, args[0], stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	approve.Flags().StringVar(&o.by, "by", "", "who approves (default $USER)")
	approve.Flags().StringVar(&o.hash, "hash", "", "the pending definition hash you reviewed (default: the current one)")
	cmd.AddCommand(list, diff, approve)
	return cmd
}

func exactlyOneName(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("want exactly one tool name, got %d arguments", len(args))
	}
	return nil
}

// pinsVerb is what a pins program does.
type pinsVerb int

const (
	pinsList pinsVerb = iota
	pinsDiff
	pinsApprove
)

// pinsProgram is one `warden pins` subcommand on the store.
type pinsProgram struct {
	storeConn
	o    pinsOptions
	verb pinsVerb
	name string // the tool diffed or approved
	by   string // who approves
	w    io.Writer
}

// newPinsProgram checks the flags of verb; the store is opened by Run.
func newPinsProgram(o pinsOptions, verb pinsVerb, name string, w io.Writer) (*pinsProgram, error) {
	p := &pinsProgram{storeConn: storeConn{flag: o.store}, o: o, verb: verb, name: name, w: w}
	if verb == pinsApprove {
		if p.by = strings.TrimSpace(o.by); p.by == "" {
			if p.by = strings.TrimSpace(os.Getenv("USER")); p.by == "" {
				return nil, usageErrorf("say who approves with --by NAME ($USER is not set)")
			}
		}
	}
	return p, nil
}

// Run opens the store and lists, diffs or approves; the caller closes p.
func (p *pinsProgram) Run(ctx context.Context) error {
	s, err := p.open(ctx)
	if err != nil {
		return err
	}
	switch p.verb {
	case pinsList:
		return runPinsList(ctx, s, p.w, p.o)
	case pinsDiff:
		return runPinsDiff(ctx, s, p.w, p.name)
	}
	return runPinsApprove(ctx, s, p.w, p.o, p.name, p.by)
}

func runPinsList(ctx context.Context, s store.Store, w io.Writer, o pinsOptions) error {
	pins, err := s.ListPins(ctx)
	if err != nil {
		return cmdError(exitInternal, "listing pins: %w", err)
	}
	// Quarantined first, then by name (ListPins orders by name).
	ordered := make([]store.Pin, 0, len(pins))
	for _, p := range pins {
		if p.PendingHash != "" {
			ordered = append(ordered, p)
		}
	}
	for _, p := range pins {
		if p.PendingHash == "" {
			ordered = append(ordered, p)
		}
	}
	if o.json {
		return writeJSONLines(w, len(ordered), func(i int) any {
			p := ordered[i]
			return map[string]any{
				"name": p.Name, "hash": p.Hash, "approved_by": p.ApprovedBy, "updated": p.Updated,
				"quarantined": p.PendingHash != "", "pending_hash": p.PendingHash,
			}
		})
	}
	if len(ordered) == 0 {
		_, err := fmt.Fprintln(w, "No tools are pinned yet: the gateway pins each tool when it first admits it.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSTATE\tAPPROVED BY\tHASH")
	for _, p := range ordered {
		state, hash := "pinned", shortHash(p.Hash)
		if p.PendingHash != "" {
			state, hash = "QUARANTINED", shortHash(p.PendingHash)+" (pending)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", shown(p.Name), state, dash(p.ApprovedBy), shown(hash))
	}
	return tw.Flush()
}

// shortHash keeps the first 16 hex digits of a "sha256:" hash, enough to tell
// definitions apart in a table (diff prints the full hash).
func shortHash(h string) string {
	if rest, ok := strings.CutPrefix(h, "sha256:"); ok && len(rest) > 16 {
		return "sha256:" + rest[:16]
	}
	return h
}

func runPinsDiff(ctx context.Context, s store.Store, w io.Writer, name string) error {
	p, err := s.GetPin(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return cmdError(exitUsage, "no pinned tool named %q (warden pins list shows them)", name)
	} else if err != nil {
		return cmdError(exitInternal, "reading the pin: %w", err)
	}
	if p.PendingHash == "" {
		_, err := fmt.Fprintf(w, "%s is not quarantined: its definition matches the approved one (%s).\n", shown(name), shown(p.Hash))
		return err
	}
	// Every value is escaped (display): the definitions come from the upstream, and
	// a bidi or invisible character in a description must not reorder or hide what
	// the operator approves.
	fmt.Fprintf(w, "%s changed its definition.\napproved: %s (by %s)\npending:  %s\n\n", shown(name), shown(p.Hash), dash(p.ApprovedBy), shown(p.PendingHash))
	for _, l := range strings.SplitAfter(pin.Diff(p), "\n") {
		if l != "" {
			fmt.Fprintln(w, shown(strings.TrimSuffix(l, "\n")))
		}
	}
	_, err = fmt.Fprintf(w, "\nTo accept it: warden pins approve %s --hash %s\n", shown(name), shown(p.PendingHash))
	return err
}

// runPinsApprove accepts the pending definition of name, as by.
func runPinsApprove(ctx context.Context, s store.Store, w io.Writer, o pinsOptions, name, by string) error {
	hash := o.hash
	if hash == "" {
		p, err := s.GetPin(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return cmdError(exitUsage, "no pinned tool named %q (warden pins list shows them)", name)
		} else if err != nil {
			return cmdError(exitInternal, "reading the pin: %w", err)
		}
		hash = p.PendingHash
	}
	p, err := pin.Approve(ctx, s, name, hash, by)
	if err != nil {
		return cmdError(exitUsage, "%v", err)
	}
	if _, err := fmt.Fprintf(w, "Approved the new definition of %s (%s) by %s. Running gateways serve it again within a few seconds.\n", shown(p.Name), shown(p.Hash), shown(by)); err != nil {
		return err
	}
	return nil
}
