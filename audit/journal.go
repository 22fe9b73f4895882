// Package audit connects the call pipeline to the durable audit log: [NewJournal] turns a
// [store.Store] into the [warden.Journal] a Guard writes ahead to.
package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// Options configure a journal. The zero value records arguments in full, whatever
// their size, and waits for every entry's commit.
type Options struct {
	// RedactArgs leaves the arguments out of the log; their digest is always kept, so
	// a record can still be matched against a known call.
	RedactArgs bool
	// MaxArgs, when positive, bounds the arguments kept: a call whose arguments' JSON
	// form is longer than MaxArgs bytes keeps only their digest. Zero keeps them all.
	MaxArgs int
	// Deferred makes End and Record queue their entry and return without waiting for
	// its commit; the store commits it with its next write or within its commit delay
	// ([store.Store.EndCallLater]). Begin always waits: the intent is durable before
	// the tool runs. A deferred entry whose commit fails is retried, with a growing
	// pause up to [MaxRetryPause], until it is durable; [Journal.Flush] waits for
	// them; at most [Options.MaxPending] entries are not yet durable at once. If
	// the process dies first, the call shows as started with an unknown outcome,
	// which is what the intent entry is for.
	Deferred bool
	// MaxPending bounds the deferred entries that are not yet durable (queued, or
	// failed and waiting to be retried): while that many are, End and Record wait
	// for one to settle (nothing is dropped), and return ctx.Err() if ctx ends first.
	// Zero means [DefaultMaxPending]. A journal made by [Journal.With] shares the
	// bound of the journal it was made from.
	MaxPending int
	// Logger receives the failures of deferred entries (each retry, and an entry
	// given up because the store was closed). nil discards them.
	Logger *slog.Logger
	// Observe, when set, is told of every write of the journal to the store: op is
	// "begin" (an intent), "end" (a completion) or "record" (a call that never ran),
	// d how long the write took and err its error (nil once it is durable). A
	// deferred entry is observed once per attempt, when the store answers it (d runs
	// from handing the entry to the store to its commit), and also when the store
	// would not take it at all. Observe runs on the call's goroutine or, for a
	// deferred commit, on the store's: it must not block nor call the store.
	Observe func(op string, d time.Duration, err error)
}

// DefaultMaxPending is the bound of [Options.MaxPending] when it is zero.
const DefaultMaxPending = 4096

// The pauses between attempts to commit a deferred entry: the first, doubled after
// each failure up to MaxRetryPause.
const (
	FirstRetryPause = 10 * time.Millisecond
	MaxRetryPause   = time.Second
)

// Journal records calls in a store. Safe for concurrent use (as the store is).
type Journal struct {
	s    store.Store
	opts Options
	log  *slog.Logger
	d    *deferred // shared with the journals made by With
}

var _ warden.Journal = (*Journal)(nil)

// NewJournal returns a journal writing to s. opts may be nil.
func NewJournal(s store.Store, opts *Options) *Journal {
	j := &Journal{s: s}
	if opts != nil {
		j.opts = *opts
	}
	n := j.opts.MaxPending
	if n <= 0 {
		n = DefaultMaxPending
	}
	j.d = &deferred{slots: make(chan struct{}, n)}
	j.log = j.opts.Logger
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	return j
}

// With returns a journal on the same store with other options, whose deferred
// entries [Journal.Flush] of either journal waits for. opts may be nil.
func (j *Journal) With(opts *Options) *Journal {
	n := NewJournal(j.s, opts)
	n.d = j.d
	return n
}

type shadowKey struct{}

// WithShadow returns a context under which [Journal.Begin] and [Journal.Record] keep
// the verdicts in the call's record ([store.CallRecord.Shadow]): what shadow policies
// would have decided about the call (the gateway evaluates them).
func WithShadow(ctx context.Context, verdicts []store.ShadowVerdict) context.Context {
	if len(verdicts) == 0 {
		return ctx
	}
	return context.WithValue(ctx, shadowKey{}, verdicts)
}

func shadowOf(ctx context.Context) []store.ShadowVerdict {
	v, _ := ctx.Value(shadowKey{}).([]store.ShadowVerdict)
	return v
}

// Begin commits the intent to run c before the tool runs.
func (j *Journal) Begin(ctx context.Context, c warden.Call, o warden.Outcome) (warden.JournalRef, error) {
	r := j.record(c, o)
	r.Shadow = shadowOf(ctx)
	t0 := time.Now()
	ref, err := j.s.BeginCall(ctx, r)
	j.observe("begin", t0, err)
	if err != nil {
		return 0, err
	}
	return warden.JournalRef(ref.Seq), nil
}

// End appends how the call ended; with Options.Deferred it returns once the entry is
// queued (see Options.Deferred).
func (j *Journal) End(ctx context.Context, ref warden.JournalRef, _ warden.Call, o warden.Outcome) error {
	d := o.Decision
	sref := store.CallRef{Seq: int64(ref)}
	c := store.Completion{
		Status:     o.Status,
		Stage:      o.Stage,
		Effect:     effect(o),
		RuleID:     o.RuleID,
		Rationale:  d.Rationale,
		Reason:     d.Reason,
		Duration:   o.Duration,
		ResultSize: len([]rune(o.ModelText)),
		ApprovedBy: o.ApprovedBy,
	}
	if !j.opts.Deferred {
		t0 := time.Now()
		err := j.s.EndCall(ctx, sref, c)
		j.observe("end", t0, err)
		return err
	}
	w := &write{j: j, op: "end", what: fmt.Sprintf("the completion of audit entry %d", sref.Seq), pause: FirstRetryPause}
	w.queue = func(ctx context.Context) error { return j.s.EndCallLater(ctx, sref, c, w.settle) }
	return j.d.start(ctx, w)
}

// Record appends a call that never executed; with Options.Deferred it returns once the
// entry is queued.
func (j *Journal) Record(ctx context.Context, c warden.Call, o warden.Outcome) error {
	r := j.record(c, o)
	r.Shadow = shadowOf(ctx)
	if !j.opts.Deferred {
		t0 := time.Now()
		err := j.s.RecordCall(ctx, r)
		j.observe("record", t0, err)
		return err
	}
	w := &write{j: j, op: "record", what: fmt.Sprintf("the record of call %q", c.ID), pause: FirstRetryPause}
	w.queue = func(ctx context.Context) error { return j.s.RecordCallLater(ctx, r, w.settle) }
	return j.d.start(ctx, w)
}

// observe tells Options.Observe of one write that began at t0.
func (j *Journal) observe(op string, t0 time.Time, err error) {
	if j.opts.Observe != nil {
		j.opts.Observe(op, time.Since(t0), err)
	}
}

// Flush waits until every deferred entry of this journal (and of those made by With)
// is durable, or was given up (the store refused it, or closed first). It returns an
// error counting the entries given up since the last Flush (each was logged), or
// ctx.Err() when ctx ends first, with how many entries were still waiting.
func (j *Journal) Flush(ctx context.Context) error {
	return j.d.wait(ctx)
}

// deferred counts the deferred entries that are not yet settled.
type deferred struct {
	slots chan struct{} // one value per entry not yet settled: the bound on them

	mu      sync.Mutex
	lost    int // entries given up since the last wait
	pending int
	idle    chan struct{} // closed when pending drops to 0; nil while pending is 0
}

// start queues w's first attempt, once fewer than the bound of entries are not
// settled. An entry the store will not take at all (it is closed, or ctx ended while
// the bound or the queue was full) is not counted: its error is the caller's.
func (d *deferred) start(ctx context.Context, w *write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	d.add()
	if err := w.attempt(ctx); err != nil {
		w.j.observe(w.op, w.sent, err)
		d.done()
		return err
	}
	return nil
}

func (d *deferred) add() {
	d.mu.Lock()
	if d.pending == 0 {
		d.idle = make(chan struct{})
	}
	d.pending++
	d.mu.Unlock()
}

func (d *deferred) done() {
	d.mu.Lock()
	d.pending--
	if d.pending == 0 {
		close(d.idle)
		d.idle = nil
	}
	d.mu.Unlock()
	<-d.slots
}

func (d *deferred) wait(ctx context.Context) error {
	d.mu.Lock()
	idle, n := d.idle, d.pending
	d.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("audit: %d deferred %s not yet durable: %w", n, plural(n, "entry", "entries"), ctx.Err())
		}
	}
	d.mu.Lock()
	lost := d.lost
	d.lost = 0
	d.mu.Unlock()
	if lost > 0 {
		return fmt.Errorf("audit: %d deferred %s could not be recorded (see the log); %s as started, outcome unknown", lost, plural(lost, "entry", "entries"), plural(lost, "its call shows", "their calls show"))
	}
	return nil
}

func (d *deferred) giveUp() {
	d.mu.Lock()
	d.lost++
	d.mu.Unlock()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// write is one deferred entry and its attempts.
type write struct {
	j        *Journal
	op       string // "end" or "record", for Options.Observe
	what     string
	queue    func(ctx context.Context) error // one attempt: hands the entry to the store
	pause    time.Duration                   // before the next attempt
	attempts int
	sent     time.Time // when the current attempt was handed to the store
}

// attempt hands the entry to the store once, noting when.
func (w *write) attempt(ctx context.Context) error {
	w.sent = time.Now()
	return w.queue(ctx)
}

// settle is the store's answer to one attempt (called from the store's goroutine, so it
// must not block: a retry is queued from a timer's goroutine).
func (w *write) settle(err error) {
	w.attempts++
	durable := err == nil || errors.Is(err, store.ErrAlreadyCompleted) && w.attempts > 1
	if durable {
		w.j.observe(w.op, w.sent, nil)
	} else {
		w.j.observe(w.op, w.sent, err)
	}
	switch {
	case durable:
		// Durable (an earlier attempt whose commit looked failed had committed).
		if w.attempts > 1 {
			w.j.log.Info("audit: a deferred entry is durable after retries", "entry", w.what, "attempts", w.attempts)
		}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrAlreadyCompleted), errors.Is(err, store.ErrUndated):
		// The store refused the entry itself: trying again cannot help.
		w.j.log.Error("audit: the store refused a deferred entry; the call shows as started, outcome unknown", "entry", w.what, "err", err)
		w.j.d.giveUp()
	case errors.Is(err, store.ErrClosed):
		w.j.log.Error("audit: the store closed before a deferred entry was durable; the call shows as started, outcome unknown", "entry", w.what, "attempts", w.attempts)
		w.j.d.giveUp()
	default:
		w.j.log.Warn("audit: a deferred entry could not be committed; retrying", "entry", w.what, "attempt", w.attempts, "retry_in", w.pause, "err", err)
		pause := w.pause
		w.pause = min(2*w.pause, MaxRetryPause)
		time.AfterFunc(pause, w.retry)
		return
	}
	w.j.d.done()
}

// retry queues the next attempt; when the store will not take it, that is the answer.
func (w *write) retry() {
	if err := w.attempt(context.Background()); err != nil {
		w.settle(err)
	}
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
