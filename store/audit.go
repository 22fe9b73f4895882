// This file holds the audit chain shared by every implementation: the entry format, how
// an entry is hashed, how the chain is verified, and how entries fold into the call
// records QueryCalls returns. An implementation stores the fields of [Entry] as columns
// and never anything it cannot give back bit for bit, because verification recomputes
// each hash from what was read.

package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wardenhq/warden"
)

// EntryKind is the kind of an audit entry.
type EntryKind string

// The entry kinds.
const (
	EntryIntent   EntryKind = "intent"   // a call about to run (write-ahead)
	EntryComplete EntryKind = "complete" // how an intent ended; Ref names the intent
	EntryRecord   EntryKind = "record"   // a call that never reached execution
)

// Entry is one row of the audit chain. It is exported for implementations of [Store]
// and for tools that verify an exported log; callers of a Store see [CallRecord]s.
//
// Hash is hex(SHA-256(PrevHash || content)) where content is the canonical JSON of
// every other field (see [Entry.CanonicalContent]); PrevHash is the Hash of entry Seq-1,
// or "" for entry 1. Seqs start at 1 and have no gaps.
//
// String fields hold valid UTF-8 without NUL characters (the constructors replace
// anything else with U+FFFD), Time is UTC with microsecond precision, and Args is nil
// or non-empty, so every database stores them exactly.
type Entry struct {
	Seq  int64
	Kind EntryKind
	Ref  int64 // EntryComplete: the Seq of the intent it completes; else 0
	Time time.Time

	CallID       string
	Session      string
	Tool         string
	Tenant       string
	Principal    string
	Conversation string
	ArgsDigest   string
	Args         []byte // nil when redacted (and for a completion)
	Stage        string
	Effect       string
	RuleID       string
	Rationale    string
	Reason       string
	Revision     string
	Executed     bool
	Status       string
	Duration     time.Duration
	ResultSize   int64
	ApprovedBy   string
	// Shadow is the JSON array of the call's [ShadowVerdict]s, "" for none (and for
	// every entry written before shadow policies existed, whose hash it leaves as it
	// was: an empty Shadow is not part of the hashed content).
	Shadow string

	PrevHash string
	Hash     string

	prefix []byte // see Prepare
}

// IntentEntry returns the (unsealed) intent entry for a call about to run. A zero
// r.Time becomes now (the store's clock).
func IntentEntry(r CallRecord, now time.Time) Entry { return callEntry(EntryIntent, r, now) }

// RecordEntry returns the (unsealed) entry for a call that never reached execution. A
// zero r.Time becomes now (the store's clock).
func RecordEntry(r CallRecord, now time.Time) Entry { return callEntry(EntryRecord, r, now) }

func callEntry(kind EntryKind, r CallRecord, now time.Time) Entry {
	if r.Time.IsZero() {
		r.Time = now
	}
	e := Entry{
		Kind:         kind,
		Time:         r.Time,
		CallID:       r.CallID,
		Session:      r.Session,
		Tool:         r.Tool,
		Tenant:       r.Identity.Tenant,
		Principal:    r.Identity.Principal,
		Conversation: r.Identity.Conversation,
		ArgsDigest:   r.ArgsDigest,
		Stage:        string(r.Stage),
		Effect:       r.Effect,
		RuleID:       r.RuleID,
		Rationale:    r.Rationale,
		Reason:       r.Reason,
		Revision:     r.Revision,
		Executed:     r.Executed,
		Status:       string(r.Status),
		Duration:     r.Duration,
		ResultSize:   int64(r.ResultSize),
		ApprovedBy:   r.ApprovedBy,
	}
	if len(r.Args) > 0 {
		e.Args = append([]byte(nil), r.Args...)
	}
	if len(r.Shadow) > 0 {
		b, err := json.Marshal(r.Shadow)
		if err != nil {
			panic("store: encoding shadow verdicts: " + err.Error()) // only strings: cannot fail
		}
		e.Shadow = string(b)
	}
	e.normalize()
	e.Prepare()
	return e
}

// CompletionEntry returns the (unsealed) completion entry of the intent numbered ref,
// timed now (the store's clock).
func CompletionEntry(ref int64, c Completion, now time.Time) Entry {
	e := Entry{
		Time:       now,
		Kind:       EntryComplete,
		Ref:        ref,
		Status:     string(c.Status),
		Stage:      string(c.Stage),
		Effect:     c.Effect,
		RuleID:     c.RuleID,
		Rationale:  c.Rationale,
		Reason:     c.Reason,
		Duration:   c.Duration,
		ResultSize: int64(c.ResultSize),
		ApprovedBy: c.ApprovedBy,
	}
	e.normalize()
	e.Prepare()
	return e
}

// normalize makes e storable exactly: UTC microsecond time, clean strings, nil for
// empty args.
func (e *Entry) normalize() {
	e.Time = NormalizeTime(e.Time)
	for _, s := range []*string{&e.CallID, &e.Session, &e.Tool, &e.Tenant, &e.Principal,
		&e.Conversation, &e.ArgsDigest, &e.Stage, &e.Effect, &e.RuleID, &e.Rationale,
		&e.Reason, &e.Revision, &e.Status, &e.ApprovedBy, &e.Shadow} {
		*s = CleanString(*s)
	}
	if len(e.Args) == 0 {
		e.Args = nil
	}
}

// NormalizeTime returns t in UTC truncated to microseconds, the precision every store
// keeps. The zero time stays zero.
func NormalizeTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// CleanString returns s with invalid UTF-8 and NUL characters replaced by U+FFFD, so it
// can be stored as text by every database and hashed unambiguously.
func CleanString(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	s = strings.ToValidUTF8(s, string(unicode.ReplacementChar))
	return strings.ReplaceAll(s, "\x00", string(unicode.ReplacementChar))
}

// entryContent is the hashed content of an entry but its seq, which the canonical JSON
// appends as the last key (so the part that does not depend on the chain can be encoded
// before the writer numbers the entry). Field order is the canonical key order; changing
// it or a tag changes every hash, so for version 1 it must never change.
type entryContent struct {
	V            int       `json:"v"`
	Kind         EntryKind `json:"kind"`
	Ref          int64     `json:"ref"`
	TimeMicros   int64     `json:"time_us"`
	CallID       string    `json:"call_id"`
	Session      string    `json:"session"`
	Tool         string    `json:"tool"`
	Tenant       string    `json:"tenant"`
	Principal    string    `json:"principal"`
	Conversation string    `json:"conversation"`
	ArgsDigest   string    `json:"args_digest"`
	Args         []byte    `json:"args"` // base64; null when redacted
	Stage        string    `json:"stage"`
	Effect       string    `json:"effect"`
	RuleID       string    `json:"rule_id"`
	Rationale    string    `json:"rationale"`
	Reason       string    `json:"reason"`
	Revision     string    `json:"revision"`
	Executed     bool      `json:"executed"`
	Status       string    `json:"status"`
	DurationNS   int64     `json:"duration_ns"`
	ResultSize   int64     `json:"result_size"`
	ApprovedBy   string    `json:"approved_by"`
	// Shadow was added after version 1 was fixed: it is left out when empty, so the
	// content (and the hash) of every entry without shadow verdicts is what it was.
	Shadow string `json:"shadow,omitempty"`
}

// contentPrefix is the canonical JSON of everything but Seq, PrevHash and Hash, without
// its closing brace.
func (e *Entry) contentPrefix() []byte {
	c := entryContent{
		V: 1, Kind: e.Kind, Ref: e.Ref, TimeMicros: e.Time.UnixMicro(),
		CallID: e.CallID, Session: e.Session, Tool: e.Tool, Tenant: e.Tenant,
		Principal: e.Principal, Conversation: e.Conversation, ArgsDigest: e.ArgsDigest,
		Args: e.Args, Stage: e.Stage, Effect: e.Effect, RuleID: e.RuleID,
		Rationale: e.Rationale, Reason: e.Reason, Revision: e.Revision,
		Executed: e.Executed, Status: e.Status, DurationNS: int64(e.Duration),
		ResultSize: e.ResultSize, ApprovedBy: e.ApprovedBy, Shadow: e.Shadow,
	}
	if len(c.Args) == 0 {
		c.Args = nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic("store: encoding an audit entry: " + err.Error()) // only plain types: cannot fail
	}
	return b[:len(b)-1]
}

// CanonicalContent returns the canonical JSON of everything in e but PrevHash and Hash:
// a compact JSON object produced by encoding/json, keys in a fixed order, "seq" last.
func (e *Entry) CanonicalContent() []byte {
	return appendSeq(e.contentPrefix(), e.Seq)
}

func appendSeq(prefix []byte, seq int64) []byte {
	b := append(prefix, `,"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	return append(b, '}')
}

// ComputeHash returns hex(SHA-256(e.PrevHash || e.CanonicalContent())).
func (e *Entry) ComputeHash() string {
	return chainHash(e.PrevHash, e.CanonicalContent())
}

func chainHash(prev string, content []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(content)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// Prepare encodes the part of e's content that does not depend on its place in the
// chain, so that [Entry.Seal] (which writers call while holding the chain) only hashes.
// It is optional; changing e after Prepare and before Seal is a bug.
func (e *Entry) Prepare() {
	e.prefix = e.contentPrefix()
}

// Seal numbers e and links it to the chain: it sets Seq, PrevHash (the hash of entry
// seq-1, "" for the first) and Hash.
func (e *Entry) Seal(seq int64, prevHash string) {
	if e.prefix == nil {
		e.Prepare()
	}
	e.Seq = seq
	e.PrevHash = prevHash
	// Clip so appending the seq never writes into the kept prefix.
	e.Hash = chainHash(prevHash, appendSeq(slices.Clip(e.prefix), seq))
}

// CallRecord returns the call an intent or record entry describes. An intent is
// reported as started with an unknown outcome until [CallRecord.Complete] applies its
// completion.
func (e *Entry) CallRecord() CallRecord {
	r := CallRecord{
		Seq:        e.Seq,
		Time:       e.Time,
		CallID:     e.CallID,
		Session:    e.Session,
		Tool:       e.Tool,
		Identity:   warden.Identity{Tenant: e.Tenant, Principal: e.Principal, Conversation: e.Conversation},
		ArgsDigest: e.ArgsDigest,
		Stage:      warden.Stage(e.Stage),
		Effect:     e.Effect,
		RuleID:     e.RuleID,
		Rationale:  e.Rationale,
		Reason:     e.Reason,
		Revision:   e.Revision,
		Executed:   e.Executed,
		Status:     warden.Status(e.Status),
		Duration:   e.Duration,
		ResultSize: int(e.ResultSize),
		ApprovedBy: e.ApprovedBy,
	}
	if len(e.Args) > 0 {
		r.Args = append(json.RawMessage(nil), e.Args...)
	}
	if e.Shadow != "" {
		if err := json.Unmarshal([]byte(e.Shadow), &r.Shadow); err != nil || len(r.Shadow) == 0 {
			// Shown, not dropped: the chain's verification says whether it was altered.
			r.Shadow = []ShadowVerdict{{Effect: "unreadable", Rationale: "the entry's shadow verdicts cannot be read: " + e.Shadow}}
		}
	}
	if e.Kind == EntryIntent {
		r.Status = StatusStarted
		r.Unknown = true
	}
	return r
}

// Complete applies the completion entry c to the record of its intent: Status,
// Duration and ResultSize come from c, and every other non-empty field of c replaces
// the record's.
func (r *CallRecord) Complete(c *Entry) {
	r.Unknown = false
	r.Status = warden.Status(c.Status)
	r.Duration = c.Duration
	r.ResultSize = int(c.ResultSize)
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	if c.Stage != "" {
		r.Stage = warden.Stage(c.Stage)
	}
	set(&r.Effect, c.Effect)
	set(&r.RuleID, c.RuleID)
	set(&r.Rationale, c.Rationale)
	set(&r.Reason, c.Reason)
	set(&r.ApprovedBy, c.ApprovedBy)
}

// Verifier checks a chain one entry at a time, in seq order; implementations of
// [Store.VerifyAudit] feed it every entry. The zero value is ready to use.
type Verifier struct {
	kept      Head // see Keep
	keptFound bool
	keptSeq   int64
	n         int64
	prevSeq   int64
	prevHash  string
	bad       bool
	firstBad  int64
	problem   string
}

// Add checks the next entry.
func (v *Verifier) Add(e *Entry) {
	v.n++
	if !v.bad {
		switch {
		case e.Seq != v.prevSeq+1:
			if e.Seq <= v.prevSeq {
				v.fail(e.Seq, fmt.Sprintf("entry %d is out of order (after entry %d)", e.Seq, v.prevSeq))
			} else if e.Seq == v.prevSeq+2 {
				v.fail(v.prevSeq+1, fmt.Sprintf("entry %d is missing: it was deleted", v.prevSeq+1))
			} else {
				v.fail(v.prevSeq+1, fmt.Sprintf("entries %d to %d are missing: they were deleted", v.prevSeq+1, e.Seq-1))
			}
		case e.Kind != EntryIntent && e.Kind != EntryComplete && e.Kind != EntryRecord:
			v.fail(e.Seq, fmt.Sprintf("entry %d has an unknown kind %q", e.Seq, e.Kind))
		case e.ComputeHash() != e.Hash:
			v.fail(e.Seq, fmt.Sprintf("entry %d does not match its hash: it was edited", e.Seq))
		case e.PrevHash != v.prevHash:
			v.fail(e.Seq, fmt.Sprintf("entry %d does not link to entry %d (prev_hash differs): an entry before it was deleted or rewritten", e.Seq, e.Seq-1))
		case e.Kind == EntryComplete && (e.Ref <= 0 || e.Ref >= e.Seq):
			v.fail(e.Seq, fmt.Sprintf("completion entry %d refers to entry %d, which cannot be its intent", e.Seq, e.Ref))
		}
	}
	if !v.bad && v.kept.Hash != "" && !v.keptFound {
		switch {
		case e.Hash == v.kept.Hash && v.kept.Seq != 0 && e.Seq != v.kept.Seq:
			v.fail(e.Seq, fmt.Sprintf("entry %d has the kept head's hash, but the kept head is entry %d: the head or the log was altered", e.Seq, v.kept.Seq))
		case e.Hash == v.kept.Hash:
			v.keptFound, v.keptSeq = true, e.Seq
		case e.Seq == v.kept.Seq:
			v.fail(e.Seq, fmt.Sprintf("entry %d has hash %.12s…, but the kept head records %.12s… for it: the chain was rewritten at or before entry %d", e.Seq, e.Hash, v.kept.Hash, e.Seq))
		}
	}
	v.prevSeq, v.prevHash = e.Seq, e.Hash
}

// Keep makes the verifier check the chain against h, a head kept outside the database:
// an entry must have h.Hash (and be entry h.Seq, when h.Seq is not 0). Call it before
// the first Add, and [Verifier.CheckKept] after the last.
func (v *Verifier) Keep(h Head) { v.kept = h }

// CheckKept reports the head passed to Keep as missing when no entry matched it: the
// log's tail was deleted and its recorded head rewound, or the chain was rewritten.
func (v *Verifier) CheckKept() {
	if v.bad || v.kept.Hash == "" || v.keptFound {
		return
	}
	switch {
	case v.kept.Seq > v.prevSeq:
		v.fail(v.prevSeq+1, fmt.Sprintf("the kept head is entry %d, but the log ends at entry %d: the newest entries were deleted and the chain head rewound", v.kept.Seq, v.prevSeq))
	default:
		v.fail(v.prevSeq+1, fmt.Sprintf("no entry has the kept head's hash %.12s… (the log ends at entry %d): the newest entries were deleted and the chain head rewound, the chain was rewritten, or the head is another log's", v.kept.Hash, v.prevSeq))
	}
}

// HeadMissing reports that the store's record of the chain head is gone: it was
// deleted (usually with the newest entries, to hide that they were deleted).
func (v *Verifier) HeadMissing() {
	if !v.bad {
		v.fail(v.prevSeq+1, fmt.Sprintf("the chain head record is missing (the log ends at entry %d): it was deleted, and the newest entries may have been deleted with it", v.prevSeq))
	}
}

// CheckHead compares the chain head the store records (the seq and hash of the newest
// entry, kept apart from the entries) with the last entry added. Call it after the last
// Add, with values read in the same snapshot. It detects a deleted tail, unless whoever
// deleted it also rewound the recorded head.
func (v *Verifier) CheckHead(seq int64, hash string) {
	if v.bad || (seq == v.prevSeq && hash == v.prevHash) {
		return
	}
	switch {
	case seq > v.prevSeq:
		v.fail(v.prevSeq+1, fmt.Sprintf("the chain head records entry %d, but the log ends at entry %d: the newest entries were deleted", seq, v.prevSeq))
	default:
		v.fail(seq, fmt.Sprintf("the chain head records entry %d with hash %.12s…, which does not match the log (it ends at entry %d)", seq, hash, v.prevSeq))
	}
}

func (v *Verifier) fail(seq int64, problem string) {
	v.bad, v.firstBad, v.problem = true, seq, problem
}

// Report returns the verdict on the entries added so far.
func (v *Verifier) Report() VerifyReport {
	r := VerifyReport{Entries: v.n, OK: !v.bad, FirstBad: v.firstBad, Problem: v.problem, Head: v.prevHash, HeadSeq: v.prevSeq}
	if r.OK && v.keptFound {
		r.Kept = v.keptSeq
	}
	return r
}
