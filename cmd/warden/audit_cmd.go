package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// exitTampered is the exit code of `warden audit verify` when the chain is broken.
const exitTampered = 3

// auditOptions are the flags of `warden audit` and `warden audit verify`.
type auditOptions struct {
	store     string
	since     string
	tool      string
	principal string
	status    string
	limit     int
	json      bool
	// shadow lists only the calls with a shadow verdict, one row per verdict.
	shadow bool
	// head and headFile are `warden audit verify --head` and --head-file.
	head     string
	headFile string
	// now is the clock --since counts back from.
	now func() time.Time
}

// defaultAuditLimit is how many calls `warden audit` shows unless told otherwise.
const defaultAuditLimit = 100

func newAuditCommand(stdout io.Writer, proc *process) *cobra.Command {
	o := auditOptions{now: proc.clock()}
	cmd := &cobra.Command{
		Use:   "audit [--since DUR] [--tool GLOB] [--principal P] [--status S] [--shadow] [--limit N] [--json]",
		Short: "Show the audit log of tool calls, newest last",
		Long: `Audit shows what ran, what was refused, by which rule, for whom and under which
policy revision: one row per call, newest last (times in UTC).

A call is recorded before its tool runs. A row with status "started" is a call whose
tool was about to run when the process stopped recording (it crashed, or was killed):
its outcome is unknown, so find out from the tool's side what happened.

Status is one of ran, refused, halted, pending, failed, or started (outcome unknown).
--tool takes a glob in the dialect of a policy's rules: * matches any run of characters,
? one character, [abc] and [!abc] one character in (or not in) the set, case-insensitive;
there are no backslash escapes (write [*] for a literal *).
--since takes a duration such as 90m, 24h or 7d.

--shadow lists only the calls a shadow policy judged more strictly than the enforcing
one (or could not judge): a policy's rules and conditions marked enforce: false, and a
gateway's shadow_policy. It shows one row per verdict: the enforcing decision, what the
shadow would have done (would halt, would deny, would ask, or fault), the shadow's rule,
where it comes from (policy or shadow_policy) and its revision. Shadow verdicts never
changed a call. With --json each call's object also holds its "shadow" verdicts.

Exit codes: 0 success, 2 bad usage or a store that cannot be opened, 1 an internal
error.`,
		Example: `  warden audit --since 24h
  warden audit --tool 'github.*' --status refused
  warden audit --principal ann --json | jq .
  warden audit --shadow --since 7d
  warden audit verify
  warden audit verify --head-file /var/lib/warden-anchor/head.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := newAuditProgram(o, false, stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	cmd.PersistentFlags().StringVar(&o.store, "store", "", storeUsage)
	f := cmd.Flags()
	f.StringVar(&o.since, "since", "", "only calls recorded in this last duration (90m, 24h, 7d)")
	f.StringVar(&o.tool, "tool", "", "only tools whose name matches this glob")
	f.StringVar(&o.principal, "principal", "", "only calls made for this principal")
	f.StringVar(&o.status, "status", "", "only calls with this status: ran, refused, halted, pending, failed or started")
	f.BoolVar(&o.shadow, "shadow", false, "only calls with a shadow verdict: what a shadow policy would have refused")
	f.IntVar(&o.limit, "limit", defaultAuditLimit, "show the newest N matching calls; 0 shows all")
	f.BoolVar(&o.json, "json", false, "print one JSON object per call and line")

	var vjson bool
	var vhead, vheadFile string
	verify := &cobra.Command{
		Use:   "verify [--head HASH | --head-file PATH] [--json]",
		Short: "Check that no audit entry was edited or deleted",
		Long: `Verify walks the whole audit log and checks its hash chain: every entry stores the
hash of the entry before it, so an entry that was edited, or deleted from the middle or
the head of the log, breaks the chain.

The log is tamper-EVIDENT, not tamper-proof: someone who can write to the database
can rewrite the chain from an edited entry onwards, and deleting the newest entries
cannot be seen from the log alone. To close both gaps, keep the printed head hash
somewhere the database's writers cannot change (the gateway can publish it: see
audit.head_file and audit.head_webhook in docs/gateway.md), and check against it later:

  --head HASH       the chain must hold an entry with this hash, and verify up to it
  --head-file PATH  the same with the head in PATH, a JSON object {"seq":N,"hash":"..."}
                    as the gateway writes it (the entry must also be entry N)

A kept head that is not in the chain is tampering: the newest entries were deleted
and the chain head rewound, or the chain was rewritten.

Exit codes: 0 the chain is intact; 3 tampering detected (the first bad entry is
printed); 2 bad usage, an unreadable head file or a store that cannot be opened; 1 an
internal error (the log could not be read).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := o
			o.json, o.head, o.headFile = vjson, vhead, vheadFile
			p, err := newAuditProgram(o, true, stdout)
			return execute(cmd.Context(), p, err)
		},
	}
	verify.Flags().BoolVar(&vjson, "json", false, "print the report as one JSON object")
	verify.Flags().StringVar(&vhead, "head", "", "check the chain against this head hash, kept outside the database")
	verify.Flags().StringVar(&vheadFile, "head-file", "", "check the chain against the head in this file (as the gateway's audit.head_file writes it)")
	cmd.AddCommand(verify)
	return cmd
}

// parseSince parses a --since duration: Go durations (90m, 1h30m) and whole days (7d).
func parseSince(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n > 0 && n <= 100000 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want a positive duration such as 90m, 24h or 7d")
	}
	return d, nil
}

var auditStatuses = []warden.Status{warden.StatusRan, warden.StatusRefused, warden.StatusHalted,
	warden.StatusPending, warden.StatusFailed, store.StatusStarted}

// auditFilter turns the flags into a store filter.
func (o auditOptions) filter(at time.Time) (store.CallFilter, error) {
	f := store.CallFilter{ToolGlob: o.tool, Principal: o.principal, Limit: o.limit, Shadow: o.shadow}
	if err := store.CheckToolGlob(o.tool); err != nil {
		return f, usageErrorf("invalid --tool: %v", err)
	}
	if o.since != "" {
		d, err := parseSince(o.since)
		if err != nil {
			return f, usageErrorf("invalid --since %q: %v", o.since, err)
		}
		f.Since = at.Add(-d)
	}
	if o.status != "" {
		st := warden.Status(strings.ToLower(o.status))
		ok := false
		for _, s := range auditStatuses {
			ok = ok || s == st
		}
		if !ok {
			return f, usageErrorf("invalid --status %q: want ran, refused, halted, pending, failed or started", o.status)
		}
		f.Status = st
	}
	if o.limit < 0 {
		return f, usageErrorf("invalid --limit %d: want 0 (all) or more", o.limit)
	}
	return f, nil
}

// auditProgram is one `warden audit` (the calls that match the flags) or `warden
// audit verify` (the hash chain).
type auditProgram struct {
	storeConn
	o      auditOptions
	verify bool
	kept   store.Head       // what `warden audit verify` checks against; zero for none
	f      store.CallFilter // what `warden audit` shows
	w      io.Writer
}

// newAuditProgram checks the flags (for the listing, --since counts back from the
// time o.now gives now); the store is opened by Run.
func newAuditProgram(o auditOptions, verify bool, w io.Writer) (*auditProgram, error) {
	p := &auditProgram{storeConn: storeConn{flag: o.store}, o: o, verify: verify, w: w}
	if !verify {
		f, err := o.filter(o.now())
		if err != nil {
			return nil, err
		}
		p.f = f
		return p, nil
	}
	kept, err := o.keptHead()
	if err != nil {
		return nil, err
	}
	p.kept = kept
	return p, nil
}

// keptHead reads --head or --head-file.
func (o auditOptions) keptHead() (store.Head, error) {
	switch {
	case o.head != "" && o.headFile != "":
		return store.Head{}, usageErrorf("--head and --head-file are exclusive: give one")
	case o.head != "":
		h := strings.ToLower(strings.TrimSpace(o.head))
		if !isHeadHash(h) {
			return store.Head{}, usageErrorf("invalid --head %q: want the 64 hex digits of an entry's hash, as 'warden audit verify' prints after Head:", o.head)
		}
		return store.Head{Hash: h}, nil
	case o.headFile != "":
		h, err := readHeadFile(o.headFile)
		if err != nil {
			return store.Head{}, usageErrorf("%v", err)
		}
		return h, nil
	}
	return store.Head{}, nil
}

// maxHeadFile bounds what readHeadFile reads: a head is well under 200 bytes.
const maxHeadFile = 4096

// readHeadFile reads a head file: one JSON object with seq (1 or more) and hash (64
// lowercase hex digits); other keys are ignored.
func readHeadFile(path string) (store.Head, error) {
	f, err := os.Open(path)
	if err != nil {
		return store.Head{}, fmt.Errorf("reading the head file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHeadFile+1))
	if err != nil {
		return store.Head{}, fmt.Errorf("reading the head file %s: %w", path, err)
	}
	if len(b) > maxHeadFile {
		return store.Head{}, fmt.Errorf("head file %s: over %d bytes, so not a head file", path, maxHeadFile)
	}
	var h struct {
		Seq  *int64  `json:"seq"`
		Hash *string `json:"hash"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return store.Head{}, fmt.Errorf("head file %s: not a JSON object {\"seq\":N,\"hash\":\"...\"}: %v", path, err)
	}
	if h.Seq == nil || h.Hash == nil || *h.Seq < 1 || !isHeadHash(*h.Hash) {
		return store.Head{}, fmt.Errorf("head file %s: want {\"seq\":N,\"hash\":\"<64 hex digits>\"} with N 1 or more", path)
	}
	return store.Head{Seq: *h.Seq, Hash: *h.Hash}, nil
}

func isHeadHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Run opens the store and prints the calls, or verifies the chain; the caller closes p.
func (p *auditProgram) Run(ctx context.Context) error {
	s, err := p.open(ctx)
	if err != nil {
		return err
	}
	if p.verify {
		return runAuditVerify(ctx, s, p.w, p.o.json, p.kept)
	}
	return runAudit(ctx, s, p.w, p.o, p.f)
}

// runAudit prints the calls that match f, oldest first.
func runAudit(ctx context.Context, s store.Store, w io.Writer, o auditOptions, f store.CallFilter) error {
	calls, err := s.QueryCalls(ctx, f)
	if err != nil {
		return cmdError(exitInternal, "reading the audit log: %w", err)
	}
	switch {
	case o.shadow && o.json:
		err = writeJSONLines(w, len(calls), func(i int) any { return shadowCallJSON{callToJSON(calls[i]), calls[i].Shadow} })
	case o.shadow:
		err = writeShadowTable(w, calls, o.limit)
	case o.json:
		err = writeJSONLines(w, len(calls), func(i int) any { return callToJSON(calls[i]) })
	default:
		err = writeCallTable(w, calls, o.limit)
	}
	if err != nil {
		return cmdError(exitInternal, "writing the audit log: %w", err)
	}
	return nil
}

// writeCallTable prints one row per call, newest last, then notes about calls whose
// outcome is unknown and about the limit.
func writeCallTable(w io.Writer, calls []store.CallRecord, limit int) error {
	if len(calls) == 0 {
		_, err := fmt.Fprintln(w, "No calls match.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME (UTC)\tTOOL\tPRINCIPAL\tSTATUS\tSTAGE\tEFFECT\tRULE\tEXECUTED\tREVISION")
	unknown := 0
	for _, c := range calls {
		status, executed := string(c.Status), yesNo(c.Executed)
		if c.Unknown || c.Status == store.StatusStarted {
			unknown++
			status, executed = "STARTED, OUTCOME UNKNOWN", "unknown"
		}
		fmt.Fprintln(tw, strings.Join([]string{
			formatTime(c.Time), dash(c.Tool), dash(c.Identity.Principal), status,
			dash(string(c.Stage)), dash(c.Effect), dash(c.RuleID), executed, shortRevision(c.Revision),
		}, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes []string
	if unknown > 0 {
		calls := "1 call was"
		if unknown > 1 {
			calls = strconv.Itoa(unknown) + " calls were"
		}
		notes = append(notes, calls+" started and never completed: the process stopped while the tool ran, so its outcome is unknown.")
	}
	if limit > 0 && len(calls) == limit {
		notes = append(notes, fmt.Sprintf("Showing the newest %d calls; use --limit 0 for all.", limit))
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// writeShadowTable prints one row per shadow verdict of each call, newest call last,
// then the note about the limit.
func writeShadowTable(w io.Writer, calls []store.CallRecord, limit int) error {
	if len(calls) == 0 {
		_, err := fmt.Fprintln(w, "No calls with a shadow verdict match.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME (UTC)\tPRINCIPAL\tTOOL\tDECISION\tSHADOW\tRULE\tSOURCE\tREVISION")
	for _, c := range calls {
		for _, v := range c.Shadow {
			fmt.Fprintln(tw, strings.Join([]string{
				formatTime(c.Time), dash(c.Identity.Principal), dash(c.Tool), dash(v.Enforced),
				dash(v.Effect), dash(v.RuleID), dash(v.Source), shortRevision(v.Revision),
			}, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if limit > 0 && len(calls) == limit {
		if _, err := fmt.Fprintf(w, "Showing the newest %d calls with a shadow verdict; use --limit 0 for all.\n", limit); err != nil {
			return err
		}
	}
	return nil
}

// shadowCallJSON is the JSON form of an audited call with its shadow verdicts
// (`warden audit --shadow --json`): every key of callJSON, and "shadow".
type shadowCallJSON struct {
	callJSON
	Shadow []store.ShadowVerdict `json:"shadow"`
}

// shortRevision shortens a policy revision ("sha256:<hex>") to 12 characters.
func shortRevision(r string) string {
	r = strings.TrimPrefix(r, "sha256:")
	if rs := []rune(r); len(rs) > 12 {
		r = string(rs[:12])
	}
	return dash(r)
}

// callJSON is the JSON form of one audited call. Every key is always present.
type callJSON struct {
	Seq          int64           `json:"seq"`
	Time         time.Time       `json:"time"`
	CallID       string          `json:"call_id"`
	Session      string          `json:"session"`
	Tool         string          `json:"tool"`
	Tenant       string          `json:"tenant"`
	Principal    string          `json:"principal"`
	Conversation string          `json:"conversation"`
	Status       string          `json:"status"`
	Unknown      bool            `json:"unknown"`
	Executed     bool            `json:"executed"`
	Stage        string          `json:"stage"`
	Effect       string          `json:"effect"`
	RuleID       string          `json:"rule_id"`
	Rationale    string          `json:"rationale"`
	Reason       string          `json:"reason"`
	Revision     string          `json:"revision"`
	ArgsDigest   string          `json:"args_digest"`
	Args         json.RawMessage `json:"args"`
	DurationNS   int64           `json:"duration_ns"`
	ResultSize   int             `json:"result_size"`
	ApprovedBy   string          `json:"approved_by"`
}

func callToJSON(c store.CallRecord) callJSON {
	return callJSON{
		Seq: c.Seq, Time: c.Time.UTC(), CallID: c.CallID, Session: c.Session, Tool: c.Tool,
		Tenant: c.Identity.Tenant, Principal: c.Identity.Principal,
		Conversation: c.Identity.Conversation, Status: string(c.Status), Unknown: c.Unknown,
		Executed: c.Executed, Stage: string(c.Stage), Effect: c.Effect, RuleID: c.RuleID,
		Rationale: c.Rationale, Reason: c.Reason, Revision: c.Revision,
		ArgsDigest: c.ArgsDigest, Args: rawOrNull(c.Args), DurationNS: int64(c.Duration),
		ResultSize: c.ResultSize, ApprovedBy: c.ApprovedBy,
	}
}

// runAuditVerify checks the chain: exit 0 intact, 3 tampered.
// A non-zero kept is a head kept outside the database that the chain must hold.
func runAuditVerify(ctx context.Context, s store.Store, w io.Writer, asJSON bool, kept store.Head) error {
	r, err := s.VerifyAuditTo(ctx, kept)
	if err != nil {
		return cmdError(exitInternal, "reading the audit log: %w", err)
	}
	// Calls whose intent has no completion: still running, or the process stopped
	// before their outcome was recorded.
	started, err := s.QueryCalls(ctx, store.CallFilter{Status: store.StatusStarted})
	if err != nil {
		return cmdError(exitInternal, "reading the audit log: %w", err)
	}
	if asJSON {
		err = writeJSONLines(w, 1, func(int) any {
			return struct {
				Entries  int64  `json:"entries"`
				OK       bool   `json:"ok"`
				FirstBad int64  `json:"first_bad"`
				Problem  string `json:"problem"`
				Head     string `json:"head"`
				HeadSeq  int64  `json:"head_seq"`
				Kept     int64  `json:"kept"`
				Unknown  int    `json:"outcome_unknown"`
			}{r.Entries, r.OK, r.FirstBad, r.Problem, r.Head, r.HeadSeq, r.Kept, len(started)}
		})
	} else {
		err = writeVerify(w, r, started, kept)
	}
	if err != nil {
		return cmdError(exitInternal, "writing the report: %w", err)
	}
	if !r.OK {
		return silentExit(exitTampered)
	}
	return nil
}

func writeVerify(w io.Writer, r store.VerifyReport, started []store.CallRecord, kept store.Head) error {
	var b strings.Builder
	if r.OK {
		fmt.Fprintf(&b, "OK: %d %s checked; the chain is intact.\n", r.Entries, plural(r.Entries, "entry", "entries"))
		if kept.Hash != "" {
			fmt.Fprintf(&b, "Kept head: entry %d (%.12s…) is in the chain, which verifies up to it and on to entry %d.\n", r.Kept, kept.Hash, r.HeadSeq)
		}
		if r.Head != "" {
			fmt.Fprintf(&b, "Head: %s\n", r.Head)
			b.WriteString("Keep the head hash somewhere the database's writers cannot change: only it reveals\na deleted tail or a rewritten chain later.\n")
		}
	} else {
		fmt.Fprintf(&b, "TAMPERED: entry %d: %s\n", r.FirstBad, r.Problem)
		fmt.Fprintf(&b, "%d %s read; the chain is broken at entry %d.\n", r.Entries, plural(r.Entries, "entry", "entries"), r.FirstBad)
	}
	if n := int64(len(started)); n > 0 {
		fmt.Fprintf(&b, "Outcome unknown: %d %s started with no recorded outcome (still running, or the process\nstopped before recording it); 'warden audit --status started' lists %s:",
			n, plural(n, "call", "calls"), plural(n, "it", "them"))
		for i, c := range started {
			if i == 5 {
				b.WriteString(" ...")
				break
			}
			fmt.Fprintf(&b, " entry %d (%s)", c.Seq, c.Tool)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
