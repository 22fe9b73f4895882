// Package storetest is the conformance suite every [store.Store] implementation passes,
// in the manner of testing/slogtest: an implementation's test calls [Run] with a
// function that names a new, empty database and an [Opener] that opens a store on it
// with the clock the suite gives.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, newDSN, func(t *testing.T, dsn string, now func() time.Time) store.Store {
//			path, _, _ := sqlite.ParseDSN(dsn)
//			s, err := sqlite.Open(t.Context(), path, &sqlite.Options{Now: now})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		}, &storetest.Options{Tamper: sqlitetest.TamperAudit})
//	}
//
// The suite never waits on the wall clock for a decision to expire: it moves the clock
// it gave the store. The tamper cases run only when [Options.Tamper] is set. With
// -short the concurrency case runs fewer calls.
//
// Beyond one store in one process:
//
//   - [RunReplicas]: two stores sharing one database (a linear chain with concurrent
//     appenders, a decision waking a waiter on the other store, consume-once across
//     stores);
//   - [RunProcesses]: real OS processes (SIGKILL between a call's intent and its
//     completion, SIGKILL with pending decisions, a decision in one process waking a
//     waiter in another); the test binary must call [HelperProcess] from TestMain;
//   - [Soak]: many goroutines, many audited calls, nothing lost or duplicated;
//   - [BenchmarkAuditedCalls]: audited calls per second and their latency.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// Opener opens a store on the database named by dsn, with now as its clock (every
// timestamp and expiry decision of the store must come from it), and closes the store
// when t ends (t.Cleanup); the suite may close it earlier.
type Opener func(t *testing.T, dsn string, now func() time.Time) store.Store

// Tamper damages the audit log in the database named by dsn without fixing the hash
// chain: op "edit" changes a field of the entry numbered seq, op "delete" removes that
// entry. It is how the suite proves that [store.Store.VerifyAudit] notices;
// implementations supply it from test-only code that uses a database connection of its
// own, so no production type carries the hook (sqlitetest.TamperAudit and
// postgrestest.TamperAudit are this module's).
type Tamper func(ctx context.Context, dsn string, seq int64, op string) error

// Options configures [Run]. A nil *Options runs the suite without the cases that need
// an option.
type Options struct {
	// Tamper, when set, runs the cases that damage the log and expect VerifyAudit to
	// say where; when nil they are skipped.
	Tamper Tamper
}

// Run runs the conformance suite. newDSN must return the DSN of a new, empty database
// each time it is called; every case opens its own store on one with open. opts may be
// nil.
func Run(t *testing.T, newDSN func(t *testing.T) string, open Opener, opts *Options) {
	var o Options
	if opts != nil {
		o = *opts
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, s *subject)
	}{
		{"Audit/RoundTrip", testAuditRoundTrip},
		{"Audit/WriteAhead", testWriteAhead},
		{"Audit/EndCallErrors", testEndCallErrors},
		{"Audit/Filters", testFilters},
		{"Audit/Limit", testLimit},
		{"Audit/VerifyEmpty", testVerifyEmpty},
		{"Audit/VerifyDetectsEdit", o.tampering(testVerifyEdit)},
		{"Audit/VerifyDetectsDelete", o.tampering(testVerifyDelete)},
		{"Audit/VerifyDetectsDeletedHead", o.tampering(testVerifyDeleteFirst)},
		{"Audit/VerifyDetectsDeletedTail", o.tampering(testVerifyDeleteLast)},
		{"Audit/Concurrent", testConcurrentAudit},
		{"Audit/CanceledContext", testCanceled},
		{"Pending/CreateGet", testPendingCreateGet},
		{"Pending/CreateRejects", testPendingCreateRejects},
		{"Pending/EmptyOptionalFields", testPendingEmptyFields},
		{"Audit/RedactedArgs", testRedactedArgs},
		{"Pending/List", testPendingList},
		{"Pending/DecideOnce", testDecideOnce},
		{"Pending/DecideConcurrent", testDecideConcurrent},
		{"Pending/DecideExpired", testDecideExpired},
		{"Pending/DecideInvalid", testDecideInvalid},
		{"Pending/WaitWakes", testWaitWakes},
		{"Pending/WaitDecided", testWaitDecided},
		{"Pending/WaitExpires", testWaitExpires},
		{"Pending/WaitContext", testWaitContext},
		{"Approval/ConsumeOnce", testConsumeOnce},
		{"Approval/ConsumeConcurrent", testConsumeConcurrent},
		{"Approval/OnceExpires", testOnceExpires},
		{"Approval/NeverAuthorizes", testNeverAuthorizes},
		{"Approval/SessionScope", testSessionScope},
		{"Checkpoints", testCheckpoints},
		{"Checkpoints/ClaimOnce", testClaimCheckpoint},
		{"Checkpoints/ClaimConcurrent", testClaimConcurrent},
		{"Pins", testPins},
		{"Closed", testClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := newDSN(t)
			clk := &clock{}
			c.fn(t, &subject{Store: open(t, dsn, clk.Now), clock: clk, dsn: dsn})
		})
	}
}

// subject is the store a case tests, with the clock it was given and its database.
type subject struct {
	store.Store
	clock *clock
	dsn   string
}

// ---- helpers ----

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func query(t *testing.T, s store.Store, f store.CallFilter) []store.CallRecord {
	t.Helper()
	recs, err := s.QueryCalls(ctxFor(t), f)
	check(t, err)
	return recs
}

func tools(recs []store.CallRecord) string {
	var names []string
	for _, r := range recs {
		names = append(names, r.Tool)
	}
	return strings.Join(names, ",")
}

func verify(t *testing.T, s store.Store) store.VerifyReport {
	t.Helper()
	rep, err := s.VerifyAudit(ctxFor(t))
	check(t, err)
	return rep
}

func mustVerifyOK(t *testing.T, s store.Store, entries int64) {
	t.Helper()
	rep := verify(t, s)
	if !rep.OK || rep.Entries != entries || rep.FirstBad != 0 {
		t.Fatalf("VerifyAudit = %+v, want OK with %d entries", rep, entries)
	}
}

// ---- audit ----

func testAuditRoundTrip(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	args := warden.MustParseArgs(`{"path":"/etc/hosts","n":1}`)
	refused := store.CallRecord{
		Time: t0, CallID: "c1", Session: "s1", Tool: "read_file",
		Identity:   warden.Identity{Tenant: "acme", Principal: "alice", Conversation: "cv1"},
		ArgsDigest: args.Digest(), Args: json.RawMessage(`{"path":"/etc/hosts","n":1}`),
		Stage: warden.StagePermission, Effect: "deny", RuleID: "fs.deny", Rationale: "no secrets",
		Reason: "security:exfiltration", Revision: "rev-7", Status: warden.StatusRefused,
	}
	check(t, s.RecordCall(ctx, refused))

	started := store.CallRecord{
		Time: t0.Add(time.Second), CallID: "c2", Session: "s1", Tool: "shell",
		Identity:   warden.Identity{Principal: "bob"},
		ArgsDigest: "sha256:abc", // args redacted
		Stage:      warden.StageExecute, Effect: "allow", RuleID: "sh.allow", Revision: "rev-7",
		Executed: true,
	}
	ref, err := s.BeginCall(ctx, started)
	check(t, err)
	if ref.Seq <= 0 {
		t.Fatalf("BeginCall seq = %d, want > 0", ref.Seq)
	}
	check(t, s.EndCall(ctx, ref, store.Completion{
		Status: warden.StatusRan, Stage: warden.StageExecute, Duration: 1500 * time.Millisecond,
		ResultSize: 42, ApprovedBy: "carol",
	}))
	unicode := store.CallRecord{Tool: "écrire_fichier", Rationale: "línea\nnueva \"quoted\" <tag> & \\", Status: warden.StatusHalted}
	before := time.Now().Add(-time.Second)
	check(t, s.RecordCall(ctx, unicode))

	got := query(t, s, store.CallFilter{})
	if len(got) != 3 {
		t.Fatalf("QueryCalls returned %d records, want 3", len(got))
	}
	if !(got[0].Seq > 0 && got[0].Seq < got[1].Seq && got[1].Seq < got[2].Seq) {
		t.Fatalf("seqs %d, %d, %d: want increasing from 1", got[0].Seq, got[1].Seq, got[2].Seq)
	}
	if got[1].Seq != ref.Seq {
		t.Errorf("the started call has seq %d, want its CallRef's %d", got[1].Seq, ref.Seq)
	}
	if got[2].Time.Before(before) || got[2].Time.After(time.Now().Add(time.Second)) {
		t.Errorf("assigned time %v is not now", got[2].Time)
	}

	wantRefused := refused
	wantRefused.Seq = got[0].Seq
	wantRefused.Time = t0.UTC().Truncate(time.Microsecond)
	wantRan := started
	wantRan.Seq = got[1].Seq
	wantRan.Time = t0.Add(time.Second).UTC().Truncate(time.Microsecond)
	wantRan.Status, wantRan.Duration, wantRan.ResultSize, wantRan.ApprovedBy = warden.StatusRan, 1500*time.Millisecond, 42, "carol"
	wantUni := unicode
	wantUni.Seq, wantUni.Time = got[2].Seq, got[2].Time
	if diff := cmp.Diff([]store.CallRecord{wantRefused, wantRan, wantUni}, got); diff != "" {
		t.Errorf("QueryCalls mismatch (-want +got):\n%s", diff)
	}
	mustVerifyOK(t, s, 4)
}

func testWriteAhead(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "deploy", Executed: true, Stage: warden.StageExecute})
	check(t, err)
	got := query(t, s, store.CallFilter{})
	if len(got) != 1 {
		t.Fatalf("got %d records, want the started call", len(got))
	}
	if r := got[0]; r.Status != store.StatusStarted || !r.Unknown || !r.Executed || r.Seq != ref.Seq {
		t.Errorf("started call reads %+v, want Status started, Unknown, Executed, Seq %d", r, ref.Seq)
	}
	if n := len(query(t, s, store.CallFilter{Status: store.StatusStarted})); n != 1 {
		t.Errorf("filter by status started: %d records, want 1", n)
	}
	check(t, s.EndCall(ctx, ref, store.Completion{Status: warden.StatusFailed, Reason: "boom"}))
	got = query(t, s, store.CallFilter{})
	if r := got[0]; r.Status != warden.StatusFailed || r.Unknown || r.Reason != "boom" || r.Stage != warden.StageExecute {
		t.Errorf("completed call reads %+v, want failed, known, reason boom, stage kept", r)
	}
	if n := len(query(t, s, store.CallFilter{Status: store.StatusStarted})); n != 0 {
		t.Errorf("filter by status started after completion: %d records, want 0", n)
	}
	mustVerifyOK(t, s, 2)
}

func testEndCallErrors(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	wantErr(t, "EndCall of an unknown ref", s.EndCall(ctx, store.CallRef{Seq: 999}, store.Completion{Status: warden.StatusRan}), store.ErrNotFound)
	check(t, s.RecordCall(ctx, store.CallRecord{Tool: "t", Status: warden.StatusRefused}))
	rec := query(t, s, store.CallFilter{})[0]
	wantErr(t, "EndCall of a record entry", s.EndCall(ctx, store.CallRef{Seq: rec.Seq}, store.Completion{Status: warden.StatusRan}), store.ErrNotFound)
	ref, err := s.BeginCall(ctx, store.CallRecord{Tool: "t", Executed: true})
	check(t, err)
	check(t, s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan}))
	wantErr(t, "second EndCall", s.EndCall(ctx, ref, store.Completion{Status: warden.StatusFailed}), store.ErrAlreadyCompleted)
	// Failed appends must not leave holes in the chain.
	check(t, s.RecordCall(ctx, store.CallRecord{Tool: "after", Status: warden.StatusRefused}))
	mustVerifyOK(t, s, 4)
	if got := query(t, s, store.CallFilter{}); len(got) != 3 || got[1].Status != warden.StatusRan {
		t.Errorf("records after failed EndCalls: %+v", got)
	}
}

// seed records calls with distinct tools, principals, statuses and times.
func seed(t *testing.T, s store.Store, t0 time.Time) {
	ctx := ctxFor(t)
	rows := []struct {
		tool, principal string
		status          warden.Status
		start           bool
	}{
		{"read_file", "alice", warden.StatusRan, true},
		{"Read_Dir", "bob", warden.StatusRefused, false},
		{"shell", "alice", warden.StatusHalted, false},
		{"write_file", "bob", warden.StatusRan, true},
		{"READ_FILE", "carol", warden.StatusPending, false},
		{"rm", "alice", "", true}, // started, never completed
	}
	for i, r := range rows {
		rec := store.CallRecord{Time: t0.Add(time.Duration(i) * time.Minute), Tool: r.tool, CallID: fmt.Sprintf("seed-%d", i),
			Identity: warden.Identity{Principal: r.principal}, Status: r.status}
		if !r.start {
			check(t, s.RecordCall(ctx, rec))
			continue
		}
		rec.Executed = true
		ref, err := s.BeginCall(ctx, rec)
		check(t, err)
		if r.status != "" {
			check(t, s.EndCall(ctx, ref, store.Completion{Status: r.status}))
		}
	}
}

func testFilters(t *testing.T, s *subject) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	seed(t, s, t0)
	cases := []struct {
		name string
		f    store.CallFilter
		want string
	}{
		{"all", store.CallFilter{}, "read_file,Read_Dir,shell,write_file,READ_FILE,rm"},
		{"since", store.CallFilter{Since: t0.Add(3 * time.Minute)}, "write_file,READ_FILE,rm"},
		{"since exact boundary", store.CallFilter{Since: t0.Add(5 * time.Minute)}, "rm"},
		{"since future", store.CallFilter{Since: t0.Add(time.Hour)}, ""},
		{"glob prefix", store.CallFilter{ToolGlob: "read_*"}, "read_file,Read_Dir,READ_FILE"},
		{"glob case-insensitive", store.CallFilter{ToolGlob: "*FILE"}, "read_file,write_file,READ_FILE"},
		{"glob question mark", store.CallFilter{ToolGlob: "?hell"}, "shell"},
		{"glob exact", store.CallFilter{ToolGlob: "rm"}, "rm"},
		{"glob no partial match", store.CallFilter{ToolGlob: "read"}, ""},
		{"glob star only", store.CallFilter{ToolGlob: "*"}, "read_file,Read_Dir,shell,write_file,READ_FILE,rm"},
		{"glob inner", store.CallFilter{ToolGlob: "r*_?i?"}, "Read_Dir"},
		{"glob bracket class", store.CallFilter{ToolGlob: "[rs]*"}, "read_file,Read_Dir,shell,READ_FILE,rm"},
		{"glob negated class", store.CallFilter{ToolGlob: "[!r]*"}, "shell,write_file"},
		{"glob class inside", store.CallFilter{ToolGlob: "read_[f]ile"}, "read_file,READ_FILE"},
		{"glob bracketed star is literal", store.CallFilter{ToolGlob: "read[*]"}, ""},
		{"principal", store.CallFilter{Principal: "alice"}, "read_file,shell,rm"},
		{"principal exact", store.CallFilter{Principal: "ALICE"}, ""},
		{"status ran", store.CallFilter{Status: warden.StatusRan}, "read_file,write_file"},
		{"status refused", store.CallFilter{Status: warden.StatusRefused}, "Read_Dir"},
		{"status started", store.CallFilter{Status: store.StatusStarted}, "rm"},
		{"combined", store.CallFilter{ToolGlob: "*file", Principal: "bob", Since: t0}, "write_file"},
		{"call id", store.CallFilter{CallID: "seed-3"}, "write_file"},
		{"call id started", store.CallFilter{CallID: "seed-5"}, "rm"},
		{"call id exact", store.CallFilter{CallID: "seed"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := tools(query(t, s, c.f)); got != c.want {
				t.Errorf("QueryCalls(%+v) = %q, want %q", c.f, got, c.want)
			}
		})
	}
}

func testLimit(t *testing.T, s *subject) {
	seed(t, s, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	cases := []struct {
		f    store.CallFilter
		want string
	}{
		{store.CallFilter{Limit: 2}, "READ_FILE,rm"},
		{store.CallFilter{Limit: 1}, "rm"},
		{store.CallFilter{Limit: 100}, "read_file,Read_Dir,shell,write_file,READ_FILE,rm"},
		{store.CallFilter{Limit: 2, ToolGlob: "*file"}, "write_file,READ_FILE"},
		{store.CallFilter{Limit: 2, Status: warden.StatusRan}, "read_file,write_file"},
	}
	for _, c := range cases {
		if got := tools(query(t, s, c.f)); got != c.want {
			t.Errorf("QueryCalls(%+v) = %q, want %q (the newest, oldest first)", c.f, got, c.want)
		}
	}
}

func testVerifyEmpty(t *testing.T, s *subject) {
	rep := verify(t, s)
	if diff := cmp.Diff(store.VerifyReport{OK: true}, rep); diff != "" {
		t.Errorf("VerifyAudit of an empty log (-want +got):\n%s", diff)
	}
}

// fiveEntries appends entries 1..5 and checks that they verify.
func fiveEntries(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	for i := range 2 {
		ref, err := s.BeginCall(ctx, store.CallRecord{Tool: fmt.Sprint("tool", i), Rationale: "ok", Executed: true})
		check(t, err)
		check(t, s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan}))
	}
	check(t, s.RecordCall(ctx, store.CallRecord{Tool: "tool9", Rationale: "no", Status: warden.StatusRefused}))
	rep := verify(t, s)
	if !rep.OK || rep.Entries != 5 || len(rep.Head) != 64 {
		t.Fatalf("VerifyAudit before tampering = %+v, want OK, 5 entries and a head hash", rep)
	}
}

// tampering adapts a case that damages the log with tamper: it is skipped when the
// implementation supplied no [Options.Tamper].
func (o Options) tampering(fn func(t *testing.T, s *subject, tamper tamperFunc)) func(t *testing.T, s *subject) {
	return func(t *testing.T, s *subject) {
		if o.Tamper == nil {
			t.Skip("no storetest.Options.Tamper: the tamper cases need one")
		}
		fn(t, s, func(t *testing.T, seq int64, op string) {
			t.Helper()
			check(t, o.Tamper(ctxFor(t), s.dsn, seq, op))
		})
	}
}

type tamperFunc func(t *testing.T, seq int64, op string)

func wantBad(t *testing.T, s store.Store, firstBad int64) {
	t.Helper()
	rep := verify(t, s)
	if rep.OK || rep.FirstBad != firstBad || rep.Problem == "" {
		t.Fatalf("VerifyAudit after tampering = %+v, want not OK with FirstBad %d and a problem", rep, firstBad)
	}
}

func testVerifyEdit(t *testing.T, s *subject, tamper tamperFunc) {
	fiveEntries(t, s)
	tamper(t, 3, "edit")
	wantBad(t, s, 3)
}

func testVerifyDelete(t *testing.T, s *subject, tamper tamperFunc) {
	fiveEntries(t, s)
	tamper(t, 3, "delete")
	wantBad(t, s, 3)
}

func testVerifyDeleteFirst(t *testing.T, s *subject, tamper tamperFunc) {
	fiveEntries(t, s)
	tamper(t, 1, "delete")
	wantBad(t, s, 1)
}

func testVerifyDeleteLast(t *testing.T, s *subject, tamper tamperFunc) {
	fiveEntries(t, s)
	tamper(t, 5, "delete")
	wantBad(t, s, 5)
	// Appending goes on from the recorded head, so the hole stays visible.
	check(t, s.RecordCall(ctxFor(t), store.CallRecord{Tool: "later", Status: warden.StatusRefused}))
	wantBad(t, s, 5)
}

func testConcurrentAudit(t *testing.T, s *subject) {
	perWorker := 500
	if testing.Short() {
		perWorker = 50
	}
	Soak(t, s, 16, perWorker)
}

// Soak runs workers goroutines that each make perWorker audited calls (BeginCall then
// EndCall) on s, an empty store, and then checks that no call was lost or recorded
// twice and that the chain verifies.
func Soak(t *testing.T, s store.Store, workers, perWorker int) {
	ctx := ctxFor(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				ref, err := s.BeginCall(ctx, store.CallRecord{CallID: fmt.Sprintf("w%d-%d", w, i), Tool: "t", Executed: true})
				if err == nil {
					err = s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan, ResultSize: i})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recs := query(t, s, store.CallFilter{})
	if len(recs) != workers*perWorker {
		t.Fatalf("%d records, want %d", len(recs), workers*perWorker)
	}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		if seen[r.CallID] {
			t.Fatalf("call %s recorded twice", r.CallID)
		}
		seen[r.CallID] = true
		if r.Status != warden.StatusRan || r.Unknown {
			t.Fatalf("call %s: status %q unknown=%v, want ran", r.CallID, r.Status, r.Unknown)
		}
	}
	mustVerifyOK(t, s, int64(2*workers*perWorker))
}

func testCanceled(t *testing.T, s *subject) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.BeginCall(ctx, store.CallRecord{Tool: "t"}); !errors.Is(err, context.Canceled) {
		t.Errorf("BeginCall with a canceled context: %v, want context.Canceled", err)
	}
	if err := s.RecordCall(ctx, store.CallRecord{Tool: "t"}); !errors.Is(err, context.Canceled) {
		t.Errorf("RecordCall with a canceled context: %v, want context.Canceled", err)
	}
	if n := len(query(t, s, store.CallFilter{})); n != 0 {
		t.Errorf("%d records after canceled appends, want 0", n)
	}
}

// ---- pending decisions ----

func newPending(t *testing.T, s store.Store, p store.Pending) store.Pending {
	t.Helper()
	got, err := s.CreatePending(ctxFor(t), p)
	check(t, err)
	return got
}

func approve(t *testing.T, s store.Store, id string, v store.Verdict) store.Pending {
	t.Helper()
	v.Approve = true
	p, err := s.Decide(ctxFor(t), id, v)
	check(t, err)
	return p
}

func samplePending() store.Pending {
	args := warden.MustParseArgs(`{"to":"ops@example.com","body":"hi"}`)
	return store.Pending{
		Kind: warden.KindCheckIn, Question: "Send this mail?", Detail: "external recipient",
		Tool: "send_mail", Args: json.RawMessage(`{"to":"ops@example.com","body":"hi"}`),
		Digest: args.Digest(), Evidence: json.RawMessage(`{"does":"sends mail"}`),
		Identity: warden.Identity{Tenant: "acme", Principal: "alice"}, Session: "sess-1",
		Revision: "rev-3", Expires: time.Now().Add(time.Hour),
		Decision: json.RawMessage(`{"resume_stage":"human"}`),
	}
}

func testPendingCreateGet(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	in := samplePending()
	before := time.Now().Add(-time.Second)
	p := newPending(t, s, in)
	if !strings.HasPrefix(p.ID, "apv_") || len(p.ID) != 20 || strings.Trim(p.ID[4:], "abcdefghijklmnopqrstuvwxyz234567") != "" {
		t.Errorf("assigned ID %q, want apv_ and 16 base32 characters", p.ID)
	}
	if p.Created.Before(before) || p.State != store.StatePending || p.Scope != store.ScopeOnce {
		t.Errorf("created %+v, want Created now, State pending, Scope once", p)
	}
	want := in
	want.ID, want.Created, want.State, want.Scope = p.ID, p.Created, store.StatePending, store.ScopeOnce
	want.Expires = in.Expires.UTC().Truncate(time.Microsecond)
	got, err := s.GetPending(ctx, p.ID)
	check(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetPending (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("CreatePending result (-want +got):\n%s", diff)
	}
	_, err = s.GetPending(ctx, "apv_doesnotexist0000")
	wantErr(t, "GetPending of an unknown ID", err, store.ErrNotFound)

	explicit := samplePending()
	explicit.ID = "my-id"
	explicit.Created = time.Date(2025, 5, 5, 5, 5, 5, 5000, time.UTC)
	got = newPending(t, s, explicit)
	if got.ID != "my-id" || !got.Created.Equal(explicit.Created) {
		t.Errorf("explicit ID and Created not kept: %s %v", got.ID, got.Created)
	}
	if _, err := s.CreatePending(ctx, explicit); err == nil {
		t.Error("CreatePending with an existing ID succeeded")
	}
	other := newPending(t, s, samplePending())
	if other.ID == p.ID {
		t.Error("two decisions got the same ID")
	}
}

// A plain ask has no evidence, and a caller may store no args or resume state: such a
// decision must read back, list, and wait like any other.
func testPendingEmptyFields(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, store.Pending{Tool: "t", Digest: "sha256:empty"})
	got, err := s.GetPending(ctx, p.ID)
	check(t, err)
	if got.Args != nil || got.Evidence != nil || got.Decision != nil {
		t.Errorf("empty fields read back as %q %q %q", got.Args, got.Evidence, got.Decision)
	}
	list, err := s.ListPending(ctx, store.PendingFilter{})
	check(t, err)
	if len(list) != 1 || list[0].ID != p.ID {
		t.Errorf("ListPending = %s, want %s", ids(list), p.ID)
	}
	approve(t, s, p.ID, store.Verdict{Approve: true, By: "ann"})
	waited, err := s.WaitDecision(ctx, p.ID)
	check(t, err)
	if waited.State != "approved" {
		t.Errorf("WaitDecision state %q", waited.State)
	}
}

// Arguments may be left out of the log (redaction): the record still reads back.
func testRedactedArgs(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	check(t, s.RecordCall(ctx, store.CallRecord{CallID: "r1", Tool: "t", ArgsDigest: "sha256:x", Status: warden.StatusRefused}))
	ref, err := s.BeginCall(ctx, store.CallRecord{CallID: "r2", Tool: "t", ArgsDigest: "sha256:y", Executed: true})
	check(t, err)
	check(t, s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan}))
	recs := query(t, s, store.CallFilter{})
	if len(recs) != 2 || recs[0].Args != nil || recs[1].Args != nil {
		t.Fatalf("records %+v", recs)
	}
	mustVerifyOK(t, s, 3)
}

func testPendingCreateRejects(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	bad := []store.Pending{
		{State: store.StateApproved, Question: "decided already"},
		{DecidedBy: "mallory", Question: "carries a verdict"},
		{Scope: "forever", Question: "unknown scope"},
		{Consumed: true, Question: "consumed"},
	}
	for _, p := range bad {
		if _, err := s.CreatePending(ctx, p); err == nil {
			t.Errorf("CreatePending(%q) succeeded, want an error", p.Question)
		}
	}
	if l, err := s.ListPending(ctx, store.PendingFilter{All: true}); err != nil || len(l) != 0 {
		t.Errorf("rejected decisions were stored: %v %v", l, err)
	}
}

func ids(ps []store.Pending) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID+"="+p.State)
	}
	return strings.Join(out, ",")
}

func testPendingList(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	t0 := time.Now().Add(-time.Hour)
	mk := func(id, session string, created time.Time, expires time.Time) {
		p := samplePending()
		p.ID, p.Session, p.Created, p.Expires = id, session, created, expires
		newPending(t, s, p)
	}
	mk("p1", "s1", t0, time.Time{})
	mk("p2", "s2", t0.Add(time.Minute), time.Now().Add(time.Hour))
	mk("p3", "s1", t0.Add(2*time.Minute), time.Now().Add(-time.Second)) // expired
	mk("p4", "s1", t0.Add(3*time.Minute), time.Time{})
	approve(t, s, "p4", store.Verdict{By: "bob"})

	cases := []struct {
		f    store.PendingFilter
		want string
	}{
		{store.PendingFilter{}, "p1=pending,p2=pending"},
		{store.PendingFilter{All: true}, "p1=pending,p2=pending,p3=expired,p4=approved"},
		{store.PendingFilter{Session: "s1"}, "p1=pending"},
		{store.PendingFilter{All: true, Session: "s1"}, "p1=pending,p3=expired,p4=approved"},
		{store.PendingFilter{All: true, Limit: 2}, "p1=pending,p2=pending"},
	}
	for _, c := range cases {
		l, err := s.ListPending(ctx, c.f)
		check(t, err)
		if got := ids(l); got != c.want {
			t.Errorf("ListPending(%+v) = %s, want %s", c.f, got, c.want)
		}
	}
	p3, err := s.GetPending(ctx, "p3")
	check(t, err)
	if p3.State != store.StateExpired {
		t.Errorf("GetPending of an expired decision: state %q, want expired", p3.State)
	}
}

func testDecideOnce(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	before := time.Now().Add(-time.Second)
	d, err := s.Decide(ctx, p.ID, store.Verdict{Approve: true, By: "bob", Note: "fine"})
	check(t, err)
	if d.State != store.StateApproved || d.DecidedBy != "bob" || d.Note != "fine" || d.DecidedAt.Before(before) || d.Scope != store.ScopeOnce || d.Consumed {
		t.Errorf("Decide returned %+v", d)
	}
	got, err := s.GetPending(ctx, p.ID)
	check(t, err)
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("GetPending after Decide (-decide +get):\n%s", diff)
	}
	_, err = s.Decide(ctx, p.ID, store.Verdict{Approve: false, By: "mallory"})
	wantErr(t, "second decision", err, store.ErrAlreadyDecided)
	_, err = s.Decide(ctx, p.ID, store.Verdict{Approve: true, By: "bob", Note: "fine"})
	wantErr(t, "identical second decision", err, store.ErrAlreadyDecided)
	got, _ = s.GetPending(ctx, p.ID)
	if got.DecidedBy != "bob" || got.State != store.StateApproved {
		t.Errorf("a refused second decision changed the first: %+v", got)
	}
	_, err = s.Decide(ctx, "apv_unknown", store.Verdict{Approve: true})
	wantErr(t, "Decide of an unknown ID", err, store.ErrNotFound)

	q := newPending(t, s, samplePending())
	d, err = s.Decide(ctx, q.ID, store.Verdict{Approve: false, By: "bob", Note: "no"})
	check(t, err)
	if d.State != store.StateDeclined {
		t.Errorf("declined decision has state %q", d.State)
	}
	_, err = s.Decide(ctx, q.ID, store.Verdict{Approve: true, By: "bob"})
	wantErr(t, "approving a declined decision", err, store.ErrAlreadyDecided)
}

func testDecideConcurrent(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := s.Decide(ctx, p.ID, store.Verdict{Approve: i%2 == 0, By: fmt.Sprint("p", i)})
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, store.ErrAlreadyDecided):
				t.Errorf("Decide: %v", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d concurrent decisions succeeded, want exactly 1", wins.Load())
	}
}

func testDecideExpired(t *testing.T, s *subject) {
	p := samplePending()
	p.Expires = s.clock.Now().Add(time.Hour)
	p = newPending(t, s, p)
	s.clock.Advance(time.Hour + time.Millisecond)
	_, err := s.Decide(ctxFor(t), p.ID, store.Verdict{Approve: true, By: "bob"})
	wantErr(t, "Decide after expiry", err, store.ErrExpired)
}

func testDecideInvalid(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	_, err := s.Decide(ctx, p.ID, store.Verdict{Approve: true, Scope: "forever"})
	wantErr(t, "unknown scope", err, store.ErrInvalidVerdict)
	noSession := samplePending()
	noSession.Session = ""
	q := newPending(t, s, noSession)
	_, err = s.Decide(ctx, q.ID, store.Verdict{Approve: true, Scope: store.ScopeSession})
	wantErr(t, "session scope without a session", err, store.ErrInvalidVerdict)
	for _, id := range []string{p.ID, q.ID} {
		got, err := s.GetPending(ctx, id)
		check(t, err)
		if got.State != store.StatePending {
			t.Errorf("an invalid verdict changed %s to %q", id, got.State)
		}
	}
}

func testWaitWakes(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	type result struct {
		p   store.Pending
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	read := s.clock.nextRead()
	go func() {
		got, err := s.WaitDecision(ctx, p.ID)
		done <- result{got, err, time.Now()}
	}()
	// The waiter has read the decision (and registered for its wake-up) once it read the
	// clock: the decision below is made while it waits.
	awaitRead(t, read, "WaitDecision")
	select {
	case r := <-done:
		t.Fatalf("WaitDecision returned before the decision: %+v", r)
	default:
	}
	decided := time.Now()
	approve(t, s, p.ID, store.Verdict{By: "bob"})
	select {
	case r := <-done:
		check(t, r.err)
		if r.p.State != store.StateApproved || r.p.DecidedBy != "bob" {
			t.Errorf("WaitDecision returned %+v", r.p)
		}
		if lag := r.at.Sub(decided); lag > time.Second {
			t.Errorf("WaitDecision woke %v after the decision, want well within a second", lag)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitDecision did not return after the decision")
	}
}

func testWaitDecided(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	if _, err := s.Decide(ctx, p.ID, store.Verdict{By: "bob"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.WaitDecision(ctx, p.ID)
	check(t, err)
	if got.State != store.StateDeclined {
		t.Errorf("WaitDecision of a declined decision: state %q", got.State)
	}
	_, err = s.WaitDecision(ctx, "apv_unknown")
	wantErr(t, "WaitDecision of an unknown ID", err, store.ErrNotFound)
}

func testWaitExpires(t *testing.T, s *subject) {
	// Expired before the wait: WaitDecision says so at once.
	p := samplePending()
	p.Expires = s.clock.Now().Add(time.Hour)
	p = newPending(t, s, p)
	s.clock.Advance(time.Hour + time.Second)
	_, err := s.WaitDecision(ctxFor(t), p.ID)
	wantErr(t, "WaitDecision past expiry", err, store.ErrExpired)

	// Expiring during the wait: the waiter notices on its own.
	q := samplePending()
	q.Expires = s.clock.Now().Add(time.Hour)
	q = newPending(t, s, q)
	done := make(chan error, 1)
	read := s.clock.nextRead()
	ctx := ctxFor(t)
	go func() {
		_, err := s.WaitDecision(ctx, q.ID)
		done <- err
	}()
	awaitRead(t, read, "WaitDecision")
	s.clock.Advance(time.Hour + time.Second)
	start := time.Now()
	select {
	case err := <-done:
		wantErr(t, "WaitDecision across expiry", err, store.ErrExpired)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitDecision did not notice that the decision expired while it waited")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("WaitDecision took %v to notice expiry", took)
	}
}

func testWaitContext(t *testing.T, s *subject) {
	p := newPending(t, s, samplePending())
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := s.WaitDecision(ctx, p.ID)
	wantErr(t, "WaitDecision with a deadline", err, context.DeadlineExceeded)
}

// ---- approvals ----

func consume(t *testing.T, s store.Store, digest, session string) (store.Pending, bool) {
	t.Helper()
	p, ok, err := s.ConsumeApproval(ctxFor(t), digest, session)
	check(t, err)
	return p, ok
}

func testConsumeOnce(t *testing.T, s *subject) {
	p := newPending(t, s, samplePending())
	if _, ok := consume(t, s, p.Digest, p.Session); ok {
		t.Fatal("an undecided decision authorized a call")
	}
	approve(t, s, p.ID, store.Verdict{By: "bob"})
	got, ok := consume(t, s, p.Digest, "another-session")
	if !ok || got.ID != p.ID || !got.Consumed || got.State != store.StateApproved {
		t.Fatalf("ConsumeApproval = %+v, %v; want the approval, consumed", got, ok)
	}
	if _, ok := consume(t, s, p.Digest, p.Session); ok {
		t.Error("a once approval authorized a second call")
	}
	stored, err := s.GetPending(ctxFor(t), p.ID)
	check(t, err)
	if !stored.Consumed {
		t.Error("GetPending does not show the approval consumed")
	}
}

func testConsumeConcurrent(t *testing.T, s *subject) {
	p := newPending(t, s, samplePending())
	approve(t, s, p.ID, store.Verdict{By: "bob"})
	ctx := ctxFor(t)
	var wins atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			_, ok, err := s.ConsumeApproval(ctx, p.Digest, "")
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d concurrent consumers got the once approval, want exactly 1", wins.Load())
	}
}

func testOnceExpires(t *testing.T, s *subject) {
	p := samplePending()
	p.Expires = s.clock.Now().Add(time.Hour)
	p = newPending(t, s, p)
	approve(t, s, p.ID, store.Verdict{By: "bob"})
	s.clock.Advance(time.Hour + time.Millisecond)
	if _, ok := consume(t, s, p.Digest, p.Session); ok {
		t.Error("an expired once approval authorized a call")
	}
}

func testNeverAuthorizes(t *testing.T, s *subject) {
	approved := newPending(t, s, samplePending())
	approve(t, s, approved.ID, store.Verdict{By: "bob", Scope: store.ScopeSession})
	otherDigest := warden.MustParseArgs(`{"to":"ops@example.com","body":"hi!"}`).Digest()
	if _, ok := consume(t, s, otherDigest, approved.Session); ok {
		t.Error("an approval authorized a call with different arguments")
	}
	if _, ok := consume(t, s, "", approved.Session); ok {
		t.Error("an empty digest was authorized")
	}

	declinedP := samplePending()
	declinedP.Digest = "sha256:declined"
	declined := newPending(t, s, declinedP)
	if _, err := s.Decide(ctxFor(t), declined.ID, store.Verdict{By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := consume(t, s, declined.Digest, declined.Session); ok {
		t.Error("a declined decision authorized a call")
	}

	emptyP := samplePending()
	emptyP.Digest = ""
	empty := newPending(t, s, emptyP)
	approve(t, s, empty.ID, store.Verdict{By: "bob"})
	if _, ok := consume(t, s, "", empty.Session); ok {
		t.Error("an approval without a digest authorized a call")
	}
}

func testSessionScope(t *testing.T, s *subject) {
	p := newPending(t, s, samplePending())
	const ttl = time.Hour
	d := approve(t, s, p.ID, store.Verdict{By: "bob", Scope: store.ScopeSession, SessionTTL: ttl})
	if d.Scope != store.ScopeSession || d.SessionTTL != ttl {
		t.Fatalf("decided %+v, want scope session with TTL %v", d, ttl)
	}
	for i := range 3 {
		got, ok := consume(t, s, p.Digest, p.Session)
		if !ok || got.ID != p.ID || got.Consumed {
			t.Fatalf("use %d in the session: %+v, %v; want authorized, not consumed", i, got, ok)
		}
	}
	if _, ok := consume(t, s, p.Digest, "another-session"); ok {
		t.Error("a session approval authorized a call in another session")
	}
	if _, ok := consume(t, s, p.Digest, ""); ok {
		t.Error("a session approval authorized a call without a session")
	}
	s.clock.Advance(d.DecidedAt.Add(ttl).Sub(s.clock.Now()) + time.Millisecond)
	if _, ok := consume(t, s, p.Digest, p.Session); ok {
		t.Error("a session approval authorized a call after its TTL")
	}

	qp := samplePending()
	qp.Expires = s.clock.Now().Add(time.Hour) // the clock moved past samplePending's
	q := newPending(t, s, qp)
	d = approve(t, s, q.ID, store.Verdict{By: "bob", Scope: store.ScopeSession})
	if d.SessionTTL != store.DefaultSessionTTL {
		t.Errorf("session approval without a TTL got %v, want the default %v", d.SessionTTL, store.DefaultSessionTTL)
	}
}

// ---- checkpoints and pins ----

func testCheckpoints(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	_, err := s.GetCheckpoint(ctx, "run-1")
	wantErr(t, "GetCheckpoint of an unknown ID", err, store.ErrNotFound)
	data := []byte(`{"iteration":3}`)
	check(t, s.PutCheckpoint(ctx, "run-1", data))
	data[0] = 'X' // the store must have kept its own copy
	got, err := s.GetCheckpoint(ctx, "run-1")
	check(t, err)
	if string(got) != `{"iteration":3}` {
		t.Errorf("GetCheckpoint = %q", got)
	}
	check(t, s.PutCheckpoint(ctx, "run-1", []byte(`{"iteration":4}`)))
	got, err = s.GetCheckpoint(ctx, "run-1")
	check(t, err)
	if string(got) != `{"iteration":4}` {
		t.Errorf("GetCheckpoint after overwrite = %q", got)
	}
	binary := []byte{0, 1, 2, 255, 0}
	check(t, s.PutCheckpoint(ctx, "run-2", binary))
	got, err = s.GetCheckpoint(ctx, "run-2")
	check(t, err)
	if string(got) != string(binary) {
		t.Errorf("binary checkpoint = %v, want %v", got, binary)
	}
	check(t, s.PutCheckpoint(ctx, "run-3", nil))
	got, err = s.GetCheckpoint(ctx, "run-3")
	check(t, err)
	if len(got) != 0 {
		t.Errorf("empty checkpoint = %v", got)
	}
}

// Issue 13: "Resuming claims the checkpoint atomically before anything runs (a store
// compare-and-swap ...): of any number of concurrent resumes exactly one proceeds, the
// others are refused".
func testClaimCheckpoint(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	_, err := s.ClaimCheckpoint(ctx, "run-1", []byte("claim"))
	wantErr(t, "ClaimCheckpoint of an unknown ID", err, store.ErrNotFound)

	check(t, s.PutCheckpoint(ctx, "run-1", []byte(`{"iteration":3}`)))
	before := time.Now().Add(-time.Second)
	claim := []byte(`{"claimed_by":"alice"}`)
	prev, err := s.ClaimCheckpoint(ctx, "run-1", claim)
	check(t, err)
	claim[0] = 'X' // the store must have kept its own copy
	if string(prev) != `{"iteration":3}` {
		t.Errorf("ClaimCheckpoint returned %q, want the checkpoint it replaced", prev)
	}
	got, err := s.GetCheckpoint(ctx, "run-1")
	check(t, err)
	if string(got) != `{"claimed_by":"alice"}` {
		t.Errorf("after the claim GetCheckpoint = %q, want the claim", got)
	}

	// A second claim changes nothing and says when the first one was made.
	_, err = s.ClaimCheckpoint(ctx, "run-1", []byte(`{"claimed_by":"mallory"}`))
	wantErr(t, "a second ClaimCheckpoint", err, store.ErrAlreadyClaimed)
	var ce *store.ClaimedError
	if !errors.As(err, &ce) {
		t.Fatalf("a second claim: %T %v, want a *store.ClaimedError", err, err)
	}
	if ce.ID != "run-1" || string(ce.Data) != `{"claimed_by":"alice"}` || ce.At.Before(before) || ce.At.After(time.Now().Add(time.Second)) || ce.At.Location() != time.UTC {
		t.Errorf("ClaimedError %+v (data %q)", ce, ce.Data)
	}
	if want := `store: checkpoint "run-1" was claimed at ` + ce.At.Format(time.RFC3339Nano); ce.Error() != want {
		t.Errorf("error %q, want %q", ce.Error(), want)
	}
	if got, _ := s.GetCheckpoint(ctx, "run-1"); string(got) != `{"claimed_by":"alice"}` {
		t.Errorf("a refused claim changed the data: %q", got)
	}

	// The claim's final record replaces the data; the checkpoint stays claimed.
	check(t, s.PutCheckpoint(ctx, "run-1", []byte(`{"resumed":true}`)))
	_, err = s.ClaimCheckpoint(ctx, "run-1", []byte("again"))
	wantErr(t, "ClaimCheckpoint after PutCheckpoint of a claimed checkpoint", err, store.ErrAlreadyClaimed)
	if errors.As(err, &ce); string(ce.Data) != `{"resumed":true}` {
		t.Errorf("ClaimedError.Data %q, want the final record", ce.Data)
	}

	// Other checkpoints are not affected; an empty claim is stored as empty.
	check(t, s.PutCheckpoint(ctx, "run-2", []byte("two")))
	prev, err = s.ClaimCheckpoint(ctx, "run-2", nil)
	check(t, err)
	if string(prev) != "two" {
		t.Errorf("run-2: %q", prev)
	}
	if got, err := s.GetCheckpoint(ctx, "run-2"); err != nil || len(got) != 0 {
		t.Errorf("run-2 after an empty claim: %q, %v", got, err)
	}
}

func testClaimConcurrent(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	rounds, claimers := 30, 16
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		id := fmt.Sprintf("ckpt-%d", round)
		check(t, s.PutCheckpoint(ctx, id, []byte("checkpoint "+id)))
		var wins, refused atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for c := range claimers {
			wg.Go(func() {
				<-start
				prev, err := s.ClaimCheckpoint(ctx, id, fmt.Appendf(nil, "claimed by %d", c))
				switch {
				case err == nil:
					if string(prev) != "checkpoint "+id {
						t.Errorf("%s: the winner got %q", id, prev)
					}
					wins.Add(1)
				case errors.Is(err, store.ErrAlreadyClaimed):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || refused.Load() != int32(claimers-1) {
			t.Fatalf("round %d: %d of %d concurrent claims won, %d were refused; want exactly 1 and %d", round, wins.Load(), claimers, refused.Load(), claimers-1)
		}
	}
}

func testPins(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	_, err := s.GetPin(ctx, "search")
	wantErr(t, "GetPin of an unknown name", err, store.ErrNotFound)
	if pins, err := s.ListPins(ctx); err != nil || len(pins) != 0 {
		t.Fatalf("ListPins of an empty store = %v, %v", pins, err)
	}
	when := time.Date(2025, 2, 2, 2, 2, 2, 2000, time.UTC)
	search := store.Pin{Name: "search", Hash: "sha256:1", Definition: json.RawMessage(`{"description":"web"}`), Approved: true, ApprovedBy: "bob", Updated: when}
	check(t, s.PutPin(ctx, search))
	before := time.Now().Add(-time.Second)
	check(t, s.PutPin(ctx, store.Pin{Name: "fetch", Hash: "sha256:2"}))
	got, err := s.GetPin(ctx, "search")
	check(t, err)
	if diff := cmp.Diff(search, got); diff != "" {
		t.Errorf("GetPin (-want +got):\n%s", diff)
	}
	fetch, err := s.GetPin(ctx, "fetch")
	check(t, err)
	if fetch.Updated.Before(before) {
		t.Errorf("PutPin did not set Updated: %v", fetch.Updated)
	}
	changed := search
	changed.Pending, changed.PendingHash, changed.Updated = json.RawMessage(`{"description":"web, and exfiltrate"}`), "sha256:3", when.Add(time.Hour)
	check(t, s.PutPin(ctx, changed))
	got, err = s.GetPin(ctx, "search")
	check(t, err)
	if diff := cmp.Diff(changed, got); diff != "" {
		t.Errorf("GetPin after upsert (-want +got):\n%s", diff)
	}
	pins, err := s.ListPins(ctx)
	check(t, err)
	if len(pins) != 2 || pins[0].Name != "fetch" || pins[1].Name != "search" || pins[1].PendingHash != "sha256:3" {
		t.Errorf("ListPins = %+v, want fetch then search (upserted)", pins)
	}
}

func testClosed(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	p := newPending(t, s, samplePending())
	waited := make(chan error, 1)
	read := s.clock.nextRead()
	go func() {
		_, err := s.WaitDecision(ctx, p.ID)
		waited <- err
	}()
	awaitRead(t, read, "WaitDecision") // it is waiting when the store closes
	check(t, s.Close())
	select {
	case err := <-waited:
		wantErr(t, "WaitDecision across Close", err, store.ErrClosed)
	case <-time.After(3 * time.Second):
		t.Error("WaitDecision did not return after Close")
	}
	_, err := s.BeginCall(ctx, store.CallRecord{Tool: "t"})
	wantErr(t, "BeginCall after Close", err, store.ErrClosed)
	_, err = s.QueryCalls(ctx, store.CallFilter{})
	wantErr(t, "QueryCalls after Close", err, store.ErrClosed)
	_, err = s.CreatePending(ctx, samplePending())
	wantErr(t, "CreatePending after Close", err, store.ErrClosed)
	_, _, err = s.ConsumeApproval(ctx, "sha256:x", "s")
	wantErr(t, "ConsumeApproval after Close", err, store.ErrClosed)
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
