// Package store is Warden's durable state: the audit log of tool calls, pending human
// decisions and their verdicts, agent-run checkpoints and tool-definition pins.
//
// One interface, [Store], has two implementations that pass the same conformance suite
// (package store/storetest):
//
//   - store/sqlite: an embedded SQLite file (pure Go, no cgo). The default: nothing to
//     install. DSN "sqlite:///abs/path/warden.db" or "sqlite://./warden.db".
//   - store/postgres: PostgreSQL, for several Warden replicas sharing one state.
//     DSN "postgres://..." or "postgresql://...".
//
// [Open] picks the implementation from the DSN's scheme. Implementations register
// themselves from their package's init, database/sql style, so this package imports
// neither driver; a program imports the ones it wants for their side effect:
//
//	import _ "github.com/wardenhq/warden/store/sqlite"
//
// # Audit log
//
// The audit log is append-only. A call that is about to run is recorded write-ahead:
// [Store.BeginCall] commits an "intent" entry before the tool runs and [Store.EndCall]
// appends a "completion" entry afterwards. If the process dies in between, the call is
// still visible: [Store.QueryCalls] reports it with Status [StatusStarted] and
// Unknown=true ("started, outcome unknown"), never nothing. A call that never reached
// execution (refused, halted, pending) is appended in one entry by [Store.RecordCall].
//
// Only the intent must be durable before the tool runs. [Store.EndCallLater] and
// [Store.RecordCallLater] queue a completion (or a call that never ran) without waiting
// for its commit: it is committed together with the next write somebody waits for
// (typically the next call's BeginCall), or on its own after the store's commit delay
// (a few milliseconds), so a caller making one call after another pays one synchronous
// commit (one fsync) per call instead of two. The price is a window: when the process
// or the machine dies after the call's answer was given and before its completion was
// committed, the log shows that call as started with an unknown outcome, exactly as if
// the process had died while the tool ran; a call that never ran recorded with
// RecordCallLater may then be missing. Nothing queued is dropped otherwise: a full
// queue makes the caller wait, [Store.Close] commits what is queued, and
// [Store.QueryCalls] and [Store.VerifyAudit] first commit what this Store queued (a
// process reads its own writes). [Store.Flush] waits for the queue.
//
// Every write has a deadline (the implementations' Options.WriteTimeout, 5s by
// default): a database that accepts connections but never answers fails the write
// with [ErrWriteTimeout] instead of hanging the call. [Store.CheckWrite] tells whether
// the store can write now.
//
// # Tamper evidence, not tamper proofing
//
// Every entry stores the hash of the entry before it (see [Entry]), so the log is a hash
// chain and [Store.VerifyAudit] detects an entry that was edited and an entry that was
// deleted from the middle or the head of the log. It is tamper-EVIDENT, not
// tamper-proof:
//
//   - someone with write access to the database can rewrite the whole chain from the
//     edited entry onwards, and the result verifies;
//   - deleting the newest entries (the tail) is noticed only because the store also
//     records the chain head (seq and hash of the newest entry) apart from the entries;
//     whoever can delete entries can rewind that record too, and then nothing shows.
//
// Both gaps close only with an external anchor: record [VerifyReport.Head] (the hash of
// the newest entry) somewhere the database's writers cannot change, and check the chain
// against it later with [Store.VerifyAuditTo].
//
// # Human decisions
//
// A [Pending] decision is created when a person must approve a call. It is decided
// exactly once ([Store.Decide]); a decision is bound to the digest of the arguments the
// person saw ([warden.Args.Digest]), so an approval authorizes exactly that call
// ([Store.ConsumeApproval]): once (consumed atomically on use) or for one session for a
// bounded time. An expired, declined or consumed approval authorizes nothing.
//
// # Implementing a Store
//
// An implementation stores [Entry] values (built with [IntentEntry], [RecordEntry] and
// [CompletionEntry], numbered and hashed with [Entry.Seal] by one appender at a time),
// verifies them with a [Verifier], filters with [CallFilter.Matcher], registers itself with
// [Register], and runs package storetest from its tests.
//
// # Clock
//
// Times are stored with microsecond precision (PostgreSQL's), in UTC. Every timestamp a
// store writes and every expiry it judges comes from one clock, its Options.Now
// (time.Now unless a test injects another); the database's clock is never asked. Expiry
// is therefore judged with the clock of the process that asks, so replicas should keep
// their clocks in sync. A clock that returns the zero time does not know the time: every
// decision that can expire is then judged expired, and no session approval is used.
package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wardenhq/warden"
)

// Store is Warden's durable state.
//
// A Store is safe for concurrent use by many goroutines and, for the implementations in
// this module, by several processes sharing one database. Every method honours ctx: it
// returns ctx.Err() (possibly wrapped) when ctx ends first. A write whose caller gave up
// may still have been committed; the audit log then shows what happened (for a
// [Store.BeginCall], a call that started with an unknown outcome, never a call that was
// not recorded).
//
// Values passed in are not retained after a method returns; values returned belong to
// the caller.
//
// Every write has a deadline (the store's write timeout): a write the database does
// not answer in time fails with an error matching [ErrWriteTimeout].
//
// Methods report a missing item with [ErrNotFound] and use of a closed store with
// [ErrClosed]; other errors are failures of the underlying database, and a caller
// governing a tool call must treat them as "not authorized" (fail closed).
type Store interface {
	// BeginCall records, write-ahead, that a call is about to run: the intent entry is
	// committed before BeginCall returns. The caller must not run the tool unless
	// BeginCall succeeded. Seq and Time are assigned when zero (Seq always).
	BeginCall(ctx context.Context, r CallRecord) (CallRef, error)
	// EndCall appends the completion of the call started by ref. It returns
	// [ErrNotFound] when ref names no intent entry and [ErrAlreadyCompleted] when the call
	// already has a completion (a retry after an ambiguous failure can treat that as
	// success). Pass a context that survives the call's own cancellation
	// ([context.WithoutCancel]) so the completion is not lost.
	EndCall(ctx context.Context, ref CallRef, c Completion) error
	// RecordCall appends, in one entry, a call that never reached execution (refused,
	// halted, pending).
	RecordCall(ctx context.Context, r CallRecord) error
	// EndCallLater queues the completion of the call started by ref and returns as
	// soon as it is queued, without waiting for its commit. It blocks only while the
	// write queue is full (nothing is dropped), and then returns ctx.Err() if ctx ends
	// first; after Close it returns [ErrClosed]. Once queued, the completion does not
	// depend on ctx: it is committed with the next audit write somebody waits for
	// (BeginCall, EndCall, RecordCall; also CheckWrite and Flush, and in store/sqlite
	// every write) or, at the latest, after the store's commit delay; Close commits it
	// too. Its place in the hash chain and its
	// seq are assigned then, as for EndCall.
	//
	// When EndCallLater returns nil and done is not nil, done is called exactly once,
	// from the store's own goroutine, with what EndCall would have returned for this
	// completion: nil once it is committed, [ErrNotFound], [ErrAlreadyCompleted], or
	// the database's error. done must not block, nor call the Store (the store's
	// writes wait while it runs): hand the result to a buffered channel or a logger
	// and return. When EndCallLater returns an error
	// (ctx.Err(), [ErrClosed], [ErrUndated] for an entry the store's clock cannot
	// date), nothing was queued and done is never called.
	EndCallLater(ctx context.Context, ref CallRef, c Completion, done func(error)) error
	// RecordCallLater is [Store.RecordCall] queued like [Store.EndCallLater], with the
	// same guarantees; done receives what RecordCall would have returned.
	RecordCallLater(ctx context.Context, r CallRecord, done func(error)) error
	// Flush returns once every write this Store queued before the call has been
	// committed or has failed. It returns nil when the deferred writes among them
	// (EndCallLater, RecordCallLater) were all committed; otherwise an error that wraps
	// the first one's failure and counts them. Each failure of a deferred write is
	// reported by one Flush only (the first to return after it), or by Close; it was
	// given to that write's done too. Writes of other Stores (other processes) are not
	// waited for. When nothing is queued Flush returns at once and does not touch the
	// database. It returns ctx.Err() when ctx ends first, [ErrClosed] after Close.
	Flush(ctx context.Context) error
	// CheckWrite reports whether the store can write now: it commits a small probe
	// write (outside the audit log) through the path audit writes take, under the
	// write deadline, and returns its error. It also fails, with that write's error,
	// when the most recent audit write of this Store failed for a reason other than
	// a verdict about its entry (ErrNotFound, ErrAlreadyCompleted, ErrUndated) and no
	// audit write has succeeded since, even if the probe succeeds: a full disk can
	// refuse a growing audit log and still take a one-row update.
	CheckWrite(ctx context.Context) error
	// QueryCalls returns the calls that match f, oldest first. An intent with its
	// completion is one record; an intent without completion has Status [StatusStarted]
	// and Unknown=true. It first waits for the writes this Store queued (as Flush does,
	// without reporting their failures), so it sees them.
	QueryCalls(ctx context.Context, f CallFilter) ([]CallRecord, error)
	// VerifyAudit walks the whole chain in order and reports the first problem. A
	// report with OK=false is not an error: err is for failures to read the log. Like
	// QueryCalls, it first waits for the writes this Store queued.
	VerifyAudit(ctx context.Context) (VerifyReport, error)
	// VerifyAuditTo is VerifyAudit checked also against kept, a head recorded outside
	// the database (see [Head]): the chain must hold an entry with kept's hash (and
	// seq, when kept.Seq is not 0), or the report is not OK. A zero kept checks
	// nothing more than VerifyAudit.
	VerifyAuditTo(ctx context.Context, kept Head) (VerifyReport, error)
	// AuditHead returns the chain head the store records: the seq and hash of the
	// newest committed entry ({0, ""} for an empty log). It reads one row and does not
	// verify anything; a missing head record is an error.
	AuditHead(ctx context.Context) (Head, error)

	// CreatePending stores a new pending decision and returns it as stored. It assigns
	// ID (see [NewPendingID]) and Created when empty, sets State "pending" and Scope
	// "once" when empty. An ID that exists already is an error.
	CreatePending(ctx context.Context, p Pending) (Pending, error)
	// GetPending returns the decision with this ID, or [ErrNotFound]. A pending
	// decision past its Expires time reports State "expired".
	GetPending(ctx context.Context, id string) (Pending, error)
	// ListPending returns decisions oldest first: by default those still undecided and
	// unexpired; with f.All every decision.
	ListPending(ctx context.Context, f PendingFilter) ([]Pending, error)
	// Decide records a person's verdict, exactly once, and returns the decided Pending.
	// Errors: [ErrNotFound], [ErrAlreadyDecided] (a second decision, even an identical
	// one), [ErrExpired] (after Expires), [ErrInvalidVerdict] (unknown scope, or scope
	// "session" for a decision that names no session).
	Decide(ctx context.Context, id string, d Verdict) (Pending, error)
	// WaitDecision blocks until the decision is approved or declined and returns it.
	// It returns [ErrExpired] when Expires passes first, [ErrNotFound] for an unknown
	// ID, and ctx.Err() when ctx ends. A decision made by another process sharing the
	// database is seen too (within about a second).
	WaitDecision(ctx context.Context, id string) (Pending, error)
	// ConsumeApproval looks for an approval that authorizes exactly this args digest:
	//
	//   - scope "session": approved for this (non-empty) session, now within DecidedAt +
	//     SessionTTL; it is not consumed and authorizes every such call in its window;
	//   - scope "once": approved, not consumed, not past Expires; it is marked consumed
	//     atomically, so of two concurrent callers (in any processes) exactly one gets it.
	//
	// A session approval is preferred (it has no side effect), then the oldest once
	// approval. ok is false when nothing authorizes the call; an empty digest never
	// matches.
	ConsumeApproval(ctx context.Context, digest, session string) (p Pending, ok bool, err error)

	// PutCheckpoint stores data under id, replacing what was there. A checkpoint that
	// was claimed ([Store.ClaimCheckpoint]) stays claimed: its data is replaced (with
	// the claim's final record, typically), and it cannot be claimed again.
	PutCheckpoint(ctx context.Context, id string, data []byte) error
	// GetCheckpoint returns the data stored under id, or [ErrNotFound].
	GetCheckpoint(ctx context.Context, id string) ([]byte, error)
	// ClaimCheckpoint claims the checkpoint stored under id, atomically: it replaces
	// the data with claim, marks the checkpoint claimed (at the store's clock) and
	// returns the data it replaced. A checkpoint is claimed once: of any number of
	// concurrent callers, in any processes sharing the database, exactly one gets the
	// data; every other caller, then and later, gets a [*ClaimedError] (wrapping
	// [ErrAlreadyClaimed]) holding what is stored now and when it was claimed, and
	// changes nothing. An unknown id is [ErrNotFound]. Claim before acting on a
	// checkpoint that must be used once (resuming a paused run with an approval).
	ClaimCheckpoint(ctx context.Context, id string, claim []byte) ([]byte, error)
	// CreateCheckpoint stores data under id unless a checkpoint is stored there
	// already, and returns what id holds afterwards: data, or what was there. Of any
	// number of concurrent callers, in any processes sharing the database, all get
	// the same bytes (a key that replicas make on first use is made once).
	CreateCheckpoint(ctx context.Context, id string, data []byte) ([]byte, error)
	// DeleteCheckpoints deletes every checkpoint whose id starts with prefix and that
	// was last written (stored, or claimed) before the given time, by the store's
	// clock, and returns how many it deleted. The prefix is matched as plain text and
	// must not be empty: a sweep names the kind of checkpoint it owns. It is for state
	// that is useless once old (ended sign-ins, expired single-use tokens); a claimed
	// checkpoint that is deleted can be stored again, so delete claims only once
	// whatever they guard has expired.
	DeleteCheckpoints(ctx context.Context, prefix string, before time.Time) (int, error)

	// GetPin returns the pin of a tool definition by tool name, or [ErrNotFound].
	GetPin(ctx context.Context, name string) (Pin, error)
	// PutPin inserts or replaces the pin named p.Name. Updated is set when zero.
	PutPin(ctx context.Context, p Pin) error
	// ListPins returns every pin, ordered by name.
	ListPins(ctx context.Context) ([]Pin, error)

	// Close commits the queued writes (deferred ones included, whose done is called),
	// and releases the database. Its error reports, as Flush does, the deferred writes
	// that failed and that no Flush reported. Methods called after Close return
	// [ErrClosed].
	Close() error
}

// StatusStarted is the status of a call whose intent was recorded and whose completion
// was not: it was about to run, and its outcome is unknown.
const StatusStarted warden.Status = "started"

// CallRecord is one call in the audit log. The zero value is a valid (empty) record.
type CallRecord struct {
	Seq        int64     // assigned by the store: the seq of the call's first entry
	Time       time.Time // when the call was recorded; assigned when zero
	CallID     string
	Session    string
	Tool       string
	Identity   warden.Identity
	ArgsDigest string
	Args       json.RawMessage // nil when redacted
	Stage      warden.Stage
	Effect     string // allow|deny|ask|halt ("" when not decided by a checker)
	RuleID     string
	Rationale  string
	Reason     string
	Revision   string
	Executed   bool
	// Status is how the call ended. For an intent without completion QueryCalls
	// reports [StatusStarted] and sets Unknown.
	Status     warden.Status
	Unknown    bool
	Duration   time.Duration
	ResultSize int
	ApprovedBy string
	// Shadow holds what shadow policies would have decided about the call where they
	// are stricter than the enforcing decision, and their faults (see
	// [ShadowVerdict]); nil for none, and for every record written before shadow
	// policies existed. It is part of the call's first entry (its intent or record).
	Shadow []ShadowVerdict
}

// ShadowVerdict is a shadow policy's verdict on a call: a policy evaluated beside the
// enforcing one, whose answer is recorded and never changes the call. A verdict is
// kept only where the shadow is stricter than the enforcing decision (halt > deny >
// ask > allow), or where it failed.
type ShadowVerdict struct {
	// Source names the shadow: "policy" for the enforcing file's own items marked
	// `enforce: false`, "shadow_policy" for the gateway's candidate file.
	Source string `json:"source"`
	// Effect is "would halt", "would deny", "would ask", or "fault" when the shadow
	// could not decide (an error, a panic, a condition over its cost limit or its
	// deadline); Rationale then says why.
	Effect string `json:"effect"`
	// Enforced is the enforcing decision's effect on the same check (allow, ask,
	// deny, halt).
	Enforced  string `json:"enforced"`
	RuleID    string `json:"rule_id"`
	Rationale string `json:"rationale,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Revision is the shadow policy's revision.
	Revision string `json:"revision"`
}

// CallRef names a call started by [Store.BeginCall].
type CallRef struct{ Seq int64 }

// Completion is how a started call ended. In the record QueryCalls returns, Status,
// Duration and ResultSize come from the completion, and each other non-empty field of
// the completion replaces the intent's.
type Completion struct {
	Status     warden.Status
	Stage      warden.Stage
	Effect     string
	RuleID     string
	Rationale  string
	Reason     string
	Duration   time.Duration
	ResultSize int
	ApprovedBy string
}

// CallFilter selects calls for [Store.QueryCalls]. The zero value selects every call.
type CallFilter struct {
	// Since keeps calls recorded at or after this time.
	Since time.Time
	// ToolGlob keeps calls whose tool name matches this glob, in the dialect of a
	// policy's globs (package policy): Python fnmatch, case-insensitive and anchored;
	// '*' matches any run of characters, '?' one, "[seq]" and "[!seq]" one character in
	// (or not in) seq; there are no backslash escapes ('[*]' is a literal star) and
	// every string is a pattern. Front ends check what a person typed with
	// [CheckToolGlob] first.
	ToolGlob string
	// Principal keeps calls made for this principal (exact match).
	Principal string
	// CallID keeps calls with this call id (exact match).
	CallID string
	// Status keeps calls with this status ([StatusStarted] for unknown outcomes).
	Status warden.Status
	// Shadow keeps only calls with a shadow verdict ([CallRecord.Shadow]).
	Shadow bool
	// Limit, when positive, keeps only the newest Limit matching calls (still returned
	// oldest first).
	Limit int
}

// VerifyReport is the result of [Store.VerifyAudit].
type VerifyReport struct {
	Entries  int64  // entries read
	OK       bool   // no problem found
	FirstBad int64  // seq of the first bad (or first missing) entry; 0 when OK
	Problem  string // what is wrong with it, for people
	// Head is the hash of the newest entry ("" for an empty log). Keep it somewhere the
	// database's writers cannot change: it is the only way to detect a deleted tail or a
	// rewritten chain later.
	Head string
	// HeadSeq is the seq of the newest entry (0 for an empty log).
	HeadSeq int64
	// Kept is the seq of the entry that matched the head passed to
	// [Store.VerifyAuditTo]; 0 when none was passed or it did not match.
	Kept int64
}

// Head names the newest entry of a chain: what a gateway publishes and what
// [Store.VerifyAuditTo] checks a chain against. Its JSON form, one object on one line,
// is the head file's and the head webhook's body: {"seq":N,"hash":"<64 hex>"} (other
// keys, such as "time", are ignored by readers).
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// Pending decision states.
const (
	StatePending  = "pending"
	StateApproved = "approved"
	StateDeclined = "declined"
	StateExpired  = "expired" // reported, never stored: a pending decision past Expires
)

// Approval scopes.
const (
	ScopeOnce    = "once"    // authorizes one call, then is consumed
	ScopeSession = "session" // authorizes the same call in one session for SessionTTL
)

// DefaultSessionTTL bounds a session approval when neither the verdict nor the pending
// decision names a TTL.
const DefaultSessionTTL = time.Hour

// Pending is a decision a person must make about one call. The zero value is not
// useful; fill in what the person must see.
type Pending struct {
	ID       string
	Kind     warden.DecisionKind
	Question string
	Detail   string
	Tool     string
	Args     json.RawMessage
	Digest   string // the args digest an approval authorizes
	Evidence json.RawMessage
	Identity warden.Identity
	Session  string
	Revision string
	Created  time.Time
	Expires  time.Time // zero: never; after it the decision can no longer be made or used
	State    string    // StatePending, StateApproved, StateDeclined or StateExpired
	// Scope is ScopeOnce (the default) or ScopeSession. SessionTTL bounds a session
	// approval (from DecidedAt); the verdict's TTL wins, then this one, then
	// DefaultSessionTTL.
	Scope      string
	SessionTTL time.Duration
	DecidedBy  string
	Note       string
	DecidedAt  time.Time
	Consumed   bool
	// Decision is opaque resume state the caller stores with the decision (for example
	// the warden.PendingDecision JSON).
	Decision json.RawMessage
}

// PendingFilter selects decisions for [Store.ListPending]. The zero value selects the
// decisions still waiting for a person.
type PendingFilter struct {
	All     bool   // include decided and expired decisions
	Session string // only decisions of this session, when set
	Limit   int    // when positive, at most this many (the oldest)
}

// Verdict is a person's decision.
type Verdict struct {
	Approve    bool
	By         string
	Note       string
	Scope      string        // "" keeps the pending decision's scope
	SessionTTL time.Duration // 0 keeps the pending decision's TTL
}

// Pin records the approved definition of a tool, so a changed definition (an MCP server
// that swapped a tool's description or schema) is noticed and reviewed.
type Pin struct {
	Name        string
	Hash        string
	Definition  json.RawMessage
	Approved    bool
	ApprovedBy  string
	Updated     time.Time
	Pending     json.RawMessage // a new definition awaiting review
	PendingHash string
}

// ClaimedError is the error [Store.ClaimCheckpoint] returns for a checkpoint claimed
// already. It wraps [ErrAlreadyClaimed].
type ClaimedError struct {
	ID string
	// At is when the checkpoint was claimed (the store's clock, microseconds, UTC).
	At time.Time
	// Data is what is stored under ID now: the first claim, or what replaced it.
	Data []byte
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("store: checkpoint %q was claimed at %s", e.ID, e.At.UTC().Format(time.RFC3339Nano))
}

func (e *ClaimedError) Unwrap() error { return ErrAlreadyClaimed }
