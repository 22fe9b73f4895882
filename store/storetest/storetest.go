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
//     appenders, deferred completions of both, a decision waking a waiter on the other store, consume-once across
//     stores);
//   - [RunProcesses]: real OS processes (SIGKILL between a call's intent and its
//     completion, SIGKILL with pending decisions, a decision in one process waking a
//     waiter in another); the test binary must call [HelperProcess] from TestMain;
//   - [Soak]: many goroutines, many audited calls, nothing lost or duplicated;
//   - [BenchmarkAuditedCalls], [BenchmarkAuditedCallsLater]: audited calls per second
//     and their latency, with the completion committed before the call returns or
//     deferred ([store.Store.EndCallLater]).
package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	// RefuseAudit, when set, runs the case in which the database refuses audit writes
	// while other writes succeed (a full disk refusing a growing table): it makes
	// the database named by dsn refuse every new audit entry (refuse=true) or accept
	// them again, from test-only code with a connection of its own
	// (sqlitetest.RefuseAudit and postgrestest.RefuseAudit are this module's).
	RefuseAudit func(ctx context.Context, dsn string, refuse bool) error
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
		{"Audit/Shadow", testShadow},
		{"Audit/Limit", testLimit},
		{"Audit/VerifyEmpty", testVerifyEmpty},
		{"Audit/VerifyDetectsEdit", o.tampering(tampered(3, "edit"))},
		{"Audit/VerifyDetectsDelete", o.tampering(tampered(3, "delete"))},
		{"Audit/VerifyDetectsDeletedHead", o.tampering(tampered(1, "delete"))},
		{"Audit/VerifyDetectsDeletedTail", o.tampering(testVerifyDeleteLast)},
		{"Audit/VerifyDetectsDeletedHeadRecord", o.tampering(testVerifyDroppedHead)},
		{"Audit/VerifyToKeptHead", testVerifyKept},
		{"Audit/VerifyToKeptHeadDetectsRewind", o.tampering(testVerifyKeptRewound)},
		{"Audit/Concurrent", testConcurrentAudit},
		{"Audit/CanceledContext", testCanceled},
		{"Audit/Later/RoundTrip", testLaterRoundTrip},
		{"Audit/Later/ReadYourWrites", testLaterReadYourWrites},
		{"Audit/Later/Errors", testLaterErrors},
		{"Audit/Later/Alone", testLaterAlone},
		{"Audit/Later/CanceledContext", testLaterCanceledContext},
		{"Audit/Later/Close", testLaterClose},
		{"Audit/Later/Concurrent", testLaterConcurrent},
		{"Audit/CheckWrite", testCheckWrite},
		{"Audit/CheckWriteAfterAuditFailure", o.checkWriteAfterAuditFailure},
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
		{"Approval/ZeroClockExpiresAll", testZeroClockExpiresAll},
		{"Approval/NeverAuthorizes", testNeverAuthorizes},
		{"Approval/SessionScope", testSessionScope},
		{"Checkpoints", testCheckpoints},
		{"Checkpoints/ClaimOnce", testClaimCheckpoint},
		{"Checkpoints/ClaimConcurrent", testClaimConcurrent},
		{"Checkpoints/Delete", testDeleteCheckpoints},
		{"Checkpoints/CreateOnce", testCreateCheckpoint},
		{"Pins", testPins},
		{"Closed", testClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := newDSN(t)
			clk := &clock{}
			c.fn(t, &subject{Store: open(t, dsn, clk.Now), clock: clk, dsn: dsn, open: open})
		})
	}
}

// subject is the store a case tests, with the clock it was given, its database and
// how to open another store on it.
type subject struct {
	store.Store
	clock *clock
	dsn   string
	open  Opener
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

// race runs try in n goroutines (given 0..n-1), released together, and returns how many
// of them returned true.
func race(n int, try func(i int) bool) int {
	var wins atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			if try(i) {
				wins.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	return int(wins.Load())
}
