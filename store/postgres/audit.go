package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/wardenhq/warden/store"
)

// BeginCall commits the intent entry of a call about to run.
func (s *Store) BeginCall(ctx context.Context, r store.CallRecord) (store.CallRef, error) {
	e := store.IntentEntry(r, s.now())
	if err := s.app.append(ctx, &e); err != nil {
		return store.CallRef{}, err
	}
	return store.CallRef{Seq: e.Seq}, nil
}

// EndCall appends the completion of the call started by ref.
func (s *Store) EndCall(ctx context.Context, ref store.CallRef, c store.Completion) error {
	e := store.CompletionEntry(ref.Seq, c, s.now())
	return s.app.append(ctx, &e)
}

// RecordCall appends a call that never reached execution.
func (s *Store) RecordCall(ctx context.Context, r store.CallRecord) error {
	e := store.RecordEntry(r, s.now())
	return s.app.append(ctx, &e)
}

const auditCols = `seq, kind, ref, at, call_id, session, tool, tenant, principal,
	conversation, args_digest, args, stage, effect, rule_id, rationale, reason, revision,
	executed, status, duration_ns, result_size, approved_by, prev_hash, hash`

// entryDest returns scan destinations for auditCols into e; finish completes e after
// the scan.
func entryDest(e *store.Entry) (dest []any, finish func()) {
	var kind string
	var dur int64
	dest = []any{&e.Seq, &kind, &e.Ref, &e.Time, &e.CallID, &e.Session, &e.Tool,
		&e.Tenant, &e.Principal, &e.Conversation, &e.ArgsDigest, &e.Args, &e.Stage, &e.Effect,
		&e.RuleID, &e.Rationale, &e.Reason, &e.Revision, &e.Executed, &e.Status, &dur,
		&e.ResultSize, &e.ApprovedBy, &e.PrevHash, &e.Hash}
	return dest, func() {
		e.Kind = store.EntryKind(kind)
		e.Time = e.Time.UTC()
		e.Duration = time.Duration(dur)
		if len(e.Args) == 0 {
			e.Args = nil
		}
	}
}

// The completion side of an outer join: only what a call record takes from it.
type completionCols struct {
	seq                                              *int64
	stage, effect, ruleID, rationale, reason, status *string
	duration, size                                   *int64
	approvedBy                                       *string
}

const completionSelect = `c.seq, c.stage, c.effect, c.rule_id, c.rationale, c.reason, c.status,
	c.duration_ns, c.result_size, c.approved_by`

func (c *completionCols) dest() []any {
	return []any{&c.seq, &c.stage, &c.effect, &c.ruleID, &c.rationale, &c.reason, &c.status,
		&c.duration, &c.size, &c.approvedBy}
}

func (c *completionCols) entry() store.Entry {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	n := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return store.Entry{Seq: n(c.seq), Kind: store.EntryComplete, Stage: s(c.stage), Effect: s(c.effect),
		RuleID: s(c.ruleID), Rationale: s(c.rationale), Reason: s(c.reason), Status: s(c.status),
		Duration: time.Duration(n(c.duration)), ResultSize: n(c.size), ApprovedBy: s(c.approvedBy)}
}

func prefixed(alias, cols string) string {
	list := strings.Split(cols, ",")
	for i, c := range list {
		list[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(list, ", ")
}

// QueryCalls returns the calls that match f, oldest first.
func (s *Store) QueryCalls(ctx context.Context, f store.CallFilter) ([]store.CallRecord, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var q strings.Builder
	q.WriteString(`SELECT ` + prefixed("e", auditCols) + `, ` + completionSelect + `
		FROM warden_audit e LEFT JOIN warden_audit c ON c.kind = 'complete' AND c.ref = e.seq
		WHERE e.kind <> 'complete'`)
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if !f.Since.IsZero() {
		q.WriteString(` AND e.at >= ` + arg(store.NormalizeTime(f.Since)))
	}
	if f.Principal != "" {
		q.WriteString(` AND e.principal = ` + arg(f.Principal))
	}
	if f.Status != "" {
		q.WriteString(` AND (CASE WHEN e.kind = 'intent' THEN coalesce(c.status, 'started') ELSE e.status END) = ` + arg(string(f.Status)))
	}
	q.WriteString(` ORDER BY e.seq DESC`) // newest first, so Limit can stop early
	rows, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: querying calls: %w", err)
	}
	defer rows.Close()
	match := f.Matcher()
	var out []store.CallRecord
	for rows.Next() {
		var e store.Entry
		var c completionCols
		dest, finish := entryDest(&e)
		if err := rows.Scan(append(dest, c.dest()...)...); err != nil {
			return nil, fmt.Errorf("postgres: reading calls: %w", err)
		}
		finish()
		r := e.CallRecord()
		if c.seq != nil {
			ce := c.entry()
			r.Complete(&ce)
		}
		if !match.Match(r) {
			continue
		}
		out = append(out, r)
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: reading calls: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// VerifyAudit walks the chain in seq order in one REPEATABLE READ snapshot, so appends
// made meanwhile are not seen (and cannot look like a problem).
func (s *Store) VerifyAudit(ctx context.Context) (store.VerifyReport, error) {
	if err := s.check(); err != nil {
		return store.VerifyReport{}, err
	}
	var rep store.VerifyReport
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var headSeq int64
		var headHash string
		if err := tx.QueryRow(ctx, `SELECT seq, hash FROM warden_audit_head WHERE id = 1`).Scan(&headSeq, &headHash); err != nil {
			return fmt.Errorf("reading the audit head: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT `+auditCols+` FROM warden_audit ORDER BY seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		var v store.Verifier
		for rows.Next() {
			var e store.Entry
			dest, finish := entryDest(&e)
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			finish()
			v.Add(&e)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		v.CheckHead(headSeq, headHash)
		rep = v.Report()
		return nil
	})
	if err != nil {
		return store.VerifyReport{}, fmt.Errorf("postgres: reading the audit log: %w", err)
	}
	return rep, nil
}
