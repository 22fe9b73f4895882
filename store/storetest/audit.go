package storetest

// The audit-log cases of the conformance suite, and Soak.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

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

// testShadow: shadow verdicts survive the round trip on records and intents, the Shadow
// filter keeps only calls that have one, and the chain verifies.
func testShadow(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	t0 := time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)
	deny := []store.ShadowVerdict{{Source: "policy", Effect: "would deny", Enforced: "allow", RuleID: "rm *", Rationale: "denied by rule: rm *", Revision: "sha256:5"}}
	two := []store.ShadowVerdict{
		{Source: "policy", Effect: "fault", Enforced: "allow", RuleID: "cost", Rationale: "permission-checker threw: condition 'cost' exceeded its cost limit of 1", Revision: "sha256:5"},
		{Source: "shadow_policy", Effect: "would ask", Enforced: "allow", RuleID: "git *", Rationale: "escalate by rule: git *", Reason: "r", Revision: "sha256:6"},
	}
	check(t, s.RecordCall(ctx, store.CallRecord{Time: t0, CallID: "plain", Tool: "ls", Status: warden.StatusRan}))
	check(t, s.RecordCall(ctx, store.CallRecord{Time: t0.Add(time.Second), CallID: "rec", Tool: "bash", Status: warden.StatusRefused, Shadow: deny}))
	ref, err := s.BeginCall(ctx, store.CallRecord{Time: t0.Add(2 * time.Second), CallID: "intent", Tool: "git", Executed: true, Shadow: two})
	check(t, err)
	check(t, s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan}))

	all := query(t, s, store.CallFilter{})
	if len(all) != 3 || all[0].Shadow != nil {
		t.Fatalf("records: %+v", all)
	}
	got := query(t, s, store.CallFilter{Shadow: true})
	if len(got) != 2 || got[0].CallID != "rec" || got[1].CallID != "intent" {
		t.Fatalf("Shadow filter kept %+v", got)
	}
	if diff := cmp.Diff(deny, got[0].Shadow); diff != "" {
		t.Errorf("record's verdicts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(two, got[1].Shadow); diff != "" {
		t.Errorf("intent's verdicts (-want +got):\n%s", diff)
	}
	if got[1].Status != warden.StatusRan {
		t.Errorf("intent status %q", got[1].Status)
	}
	mustVerifyOK(t, s, 4)
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

// tampered returns a test that writes five entries, tampers with entry seq (op) and
// wants VerifyAudit to report seq as the first bad entry.
func tampered(seq int64, op string) func(t *testing.T, s *subject, tamper tamperFunc) {
	return func(t *testing.T, s *subject, tamper tamperFunc) {
		fiveEntries(t, s)
		tamper(t, seq, op)
		wantBad(t, s, seq)
	}
}

func testVerifyDeleteLast(t *testing.T, s *subject, tamper tamperFunc) {
	tampered(5, "delete")(t, s, tamper)
	// Appending goes on from the recorded head, so the hole stays visible.
	check(t, s.RecordCall(ctxFor(t), store.CallRecord{Tool: "later", Status: warden.StatusRefused}))
	wantBad(t, s, 5)
}

// testVerifyDroppedHead deletes the newest entry and the chain-head record: that is
// tampering, reported after the last entry left, not a failure to read the log.
func testVerifyDroppedHead(t *testing.T, s *subject, tamper tamperFunc) {
	fiveEntries(t, s)
	tamper(t, 5, "drop-head")
	rep := verify(t, s)
	if rep.OK || rep.FirstBad != 5 || !strings.Contains(rep.Problem, "chain head record is missing") {
		t.Fatalf("VerifyAudit without the head record = %+v, want not OK at entry 5 naming the missing head record", rep)
	}
	if _, err := s.AuditHead(ctxFor(t)); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("AuditHead without the head record = %v, want an error saying it is missing", err)
	}
}

// testVerifyKept checks VerifyAuditTo against heads kept outside: the current head, an
// older one (the chain goes on past it), by hash alone, and ones the chain does not
// hold.
func testVerifyKept(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	fiveEntries(t, s)
	head, err := s.AuditHead(ctx)
	check(t, err)
	full := verify(t, s)
	if head.Seq != 5 || head.Hash != full.Head || full.HeadSeq != 5 {
		t.Fatalf("AuditHead = %+v, VerifyAudit = %+v; want entry 5 with the verified head hash", head, full)
	}
	check(t, s.RecordCall(ctx, store.CallRecord{Tool: "later", Status: warden.StatusRefused}))
	for _, kept := range []store.Head{head, {Hash: head.Hash}} {
		rep, err := s.VerifyAuditTo(ctx, kept)
		check(t, err)
		if !rep.OK || rep.Kept != 5 || rep.HeadSeq != 6 {
			t.Errorf("VerifyAuditTo(%+v) = %+v, want OK, Kept 5, HeadSeq 6", kept, rep)
		}
	}
	other := strings.Repeat("ab", 32)
	for _, c := range []struct {
		kept     store.Head
		firstBad int64
		problem  string
	}{
		{store.Head{Seq: 9, Hash: other}, 7, "the kept head is entry 9, but the log ends at entry 6"},
		{store.Head{Hash: other}, 7, "no entry has the kept head's hash"},
		{store.Head{Seq: 4, Hash: other}, 4, "the chain was rewritten"},
		{store.Head{Seq: 6, Hash: head.Hash}, 5, "entry 5 has the kept head's hash, but the kept head is entry 6"},
	} {
		rep, err := s.VerifyAuditTo(ctx, c.kept)
		check(t, err)
		if rep.OK || rep.FirstBad != c.firstBad || !strings.Contains(rep.Problem, c.problem) || rep.Kept != 0 {
			t.Errorf("VerifyAuditTo(%+v) = %+v, want not OK at entry %d with %q", c.kept, rep, c.firstBad, c.problem)
		}
	}
}

// testVerifyKeptRewound deletes the tail and rewinds the recorded head, which the log
// alone cannot show, and then rewrites the history from there by appending anew: only
// the kept head shows either.
func testVerifyKeptRewound(t *testing.T, s *subject, tamper tamperFunc) {
	ctx := ctxFor(t)
	fiveEntries(t, s)
	kept, err := s.AuditHead(ctx)
	check(t, err)
	tamper(t, 4, "truncate")
	if rep := verify(t, s); !rep.OK || rep.Entries != 3 {
		t.Fatalf("VerifyAudit after a truncation with the head rewound = %+v; want it to verify (3 entries): only a kept head can tell", rep)
	}
	rep, err := s.VerifyAuditTo(ctx, kept)
	check(t, err)
	if rep.OK || rep.FirstBad != 4 || !strings.Contains(rep.Problem, "the kept head is entry 5, but the log ends at entry 3") {
		t.Errorf("VerifyAuditTo(old head) after the truncation = %+v, want not OK at entry 4", rep)
	}
	for range 2 {
		check(t, s.RecordCall(ctx, store.CallRecord{Tool: "forged", Status: warden.StatusRefused}))
	}
	if rep := verify(t, s); !rep.OK || rep.Entries != 5 {
		t.Fatalf("VerifyAudit of the rewritten log = %+v; want it to verify (5 entries)", rep)
	}
	rep, err = s.VerifyAuditTo(ctx, kept)
	check(t, err)
	if rep.OK || rep.FirstBad != 5 || !strings.Contains(rep.Problem, "the chain was rewritten") {
		t.Errorf("VerifyAuditTo(old head) of the rewritten log = %+v, want not OK at entry 5", rep)
	}
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
