// Package audit connects the call pipeline to the durable audit log: [NewJournal] turns a
// [store.Store] into the [warden.Journal] a Guard writes ahead to.
package audit

import (
	"context"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// Options configure a journal. The zero value records arguments in full, whatever
// their size.
type Options struct {
	// RedactArgs leaves the arguments out of the log; their digest is always kept, so
	// a record can still be matched against a known call.
	RedactArgs bool
	// MaxArgs, when positive, bounds the arguments kept: a call whose arguments' JSON
	// form is longer than MaxArgs bytes keeps only their digest. Zero keeps them all.
	MaxArgs int
}

// Journal records calls in a store. Safe for concurrent use (as the store is).
type Journal struct {
	s    store.Store
	opts Options
}

var _ warden.Journal = (*Journal)(nil)

// NewJournal returns a journal writing to s. opts may be nil.
func NewJournal(s store.Store, opts *Options) *Journal {
	j := &Journal{s: s}
	if opts != nil {
		j.opts = *opts
	}
	return j
}

// Begin commits the intent to run c before the tool runs.
func (j *Journal) Begin(ctx context.Context, c warden.Call, o warden.Outcome) (warden.JournalRef, error) {
	ref, err := j.s.BeginCall(ctx, j.record(c, o))
	if err != nil {
		return 0, err
	}
	return warden.JournalRef(ref.Seq), nil
}

// End appends how the call ended.
func (j *Journal) End(ctx context.Context, ref warden.JournalRef, _ warden.Call, o warden.Outcome) error {
	d := o.Decision
	return j.s.EndCall(ctx, store.CallRef{Seq: int64(ref)}, store.Completion{
		Status:     o.Status,
		Stage:      o.Stage,
		Effect:     effect(o),
		RuleID:     o.RuleID,
		Rationale:  d.Rationale,
		Reason:     d.Reason,
		Duration:   o.Duration,
		ResultSize: len([]rune(o.ModelText)),
		ApprovedBy: o.ApprovedBy,
	})
}

// Record appends a call that never executed.
func (j *Journal) Record(ctx context.Context, c warden.Call, o warden.Outcome) error {
	return j.s.RecordCall(ctx, j.record(c, o))
}

func (j *Journal) record(c warden.Call, o warden.Outcome) store.CallRecord {
	// Time stays zero: the store times the record with its own (injectable) clock.
	r := store.CallRecord{
		CallID:     c.ID,
		Session:    c.Session,
		Tool:       o.Tool,
		Identity:   c.Identity,
		ArgsDigest: o.Args.Digest(),
		Stage:      o.Stage,
		Effect:     effect(o),
		RuleID:     o.RuleID,
		Rationale:  o.Decision.Rationale,
		Reason:     o.Decision.Reason,
		Revision:   o.Revision,
		Executed:   o.Executed,
		Status:     o.Status,
		Duration:   o.Duration,
		ResultSize: len([]rune(o.ModelText)),
		ApprovedBy: o.ApprovedBy,
	}
	if p := o.Pending; p != nil {
		// A pending call is decided by the question it waits on.
		r.Effect = "ask"
		switch {
		case p.Escalation != nil:
			r.RuleID, r.Rationale, r.Reason = p.Escalation.RuleID, p.Escalation.Rationale, p.Escalation.Reason
		case p.Middleware != "":
			r.RuleID, r.Rationale = p.Middleware, p.Question
		default:
			r.RuleID, r.Rationale = "checkin", p.Question
		}
	}
	if !j.opts.RedactArgs {
		if a := o.Args.AppendJSON(nil); j.opts.MaxArgs <= 0 || len(a) <= j.opts.MaxArgs {
			r.Args = a
		}
	}
	return r
}

// effect names the deciding checker effect, or "" when no checker decided.
func effect(o warden.Outcome) string {
	if o.RuleID == "" && o.Decision.Rationale == "" {
		return ""
	}
	switch o.Status {
	case warden.StatusRan, warden.StatusFailed:
		return ""
	case warden.StatusHalted:
		return "halt"
	case warden.StatusPending:
		return "ask"
	}
	return o.Decision.Effect.String()
}
