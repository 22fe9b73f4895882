package store_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// chain returns n sealed entries: intents, each completed, and a record.
func chain(t *testing.T) []store.Entry {
	t.Helper()
	t0 := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
	var es []store.Entry
	add := func(e store.Entry) {
		prev := ""
		if len(es) > 0 {
			prev = es[len(es)-1].Hash
		}
		e.Seal(int64(len(es)+1), prev)
		es = append(es, e)
	}
	add(store.IntentEntry(store.CallRecord{Time: t0, Tool: "shell", Args: json.RawMessage(`{"c":"ls"}`), Executed: true}, t0))
	add(store.CompletionEntry(1, store.Completion{Status: warden.StatusRan, Duration: time.Second}, t0))
	add(store.RecordEntry(store.CallRecord{Time: t0, Tool: "rm", Status: warden.StatusRefused, Rationale: "no"}, t0))
	add(store.IntentEntry(store.CallRecord{Time: t0, Tool: "deploy", Executed: true}, t0))
	return es
}

func verifyAll(es []store.Entry, headSeq int64, headHash string) store.VerifyReport {
	var v store.Verifier
	for i := range es {
		v.Add(&es[i])
	}
	v.CheckHead(headSeq, headHash)
	return v.Report()
}

func TestVerifier(t *testing.T) {
	type tc struct {
		name     string
		mutate   func(es []store.Entry) ([]store.Entry, int64, string) // entries, recorded head
		firstBad int64
		problem  string
	}
	head := func(es []store.Entry) (int64, string) {
		if len(es) == 0 {
			return 0, ""
		}
		return es[len(es)-1].Seq, es[len(es)-1].Hash
	}
	cases := []tc{
		{"intact", func(es []store.Entry) ([]store.Entry, int64, string) { s, h := head(es); return es, s, h }, 0, ""},
		{"edited field", func(es []store.Entry) ([]store.Entry, int64, string) {
			s, h := head(es)
			es[2].Rationale = "yes"
			return es, s, h
		}, 3, "edited"},
		{"edited args", func(es []store.Entry) ([]store.Entry, int64, string) {
			s, h := head(es)
			es[0].Args = []byte(`{"c":"rm -rf /"}`)
			return es, s, h
		}, 1, "edited"},
		{"rehashed edit", func(es []store.Entry) ([]store.Entry, int64, string) {
			s, h := head(es)
			es[1].Status = "failed"
			es[1].Hash = es[1].ComputeHash()
			return es, s, h
		}, 3, "does not link"},
		{"deleted middle", func(es []store.Entry) ([]store.Entry, int64, string) {
			s, h := head(es)
			return append(es[:1:1], es[2:]...), s, h
		}, 2, "missing"},
		{"deleted two", func(es []store.Entry) ([]store.Entry, int64, string) {
			s, h := head(es)
			return append(es[:1:1], es[3:]...), s, h
		}, 2, "entries 2 to 3 are missing"},
		{"deleted first", func(es []store.Entry) ([]store.Entry, int64, string) { s, h := head(es); return es[1:], s, h }, 1, "missing"},
		{"deleted tail", func(es []store.Entry) ([]store.Entry, int64, string) { s, h := head(es); return es[:3], s, h }, 4, "newest entries were deleted"},
		{"deleted tail and rewound head", func(es []store.Entry) ([]store.Entry, int64, string) {
			es = es[:3]
			s, h := head(es)
			return es, s, h
		}, 0, ""}, // undetectable without an external anchor: documented
		{"renumbered", func(es []store.Entry) ([]store.Entry, int64, string) {
			s, h := head(es)
			es[3].Seq = 9
			return es, s, h
		}, 4, "missing"},
		{"completion pointing forward", func(es []store.Entry) ([]store.Entry, int64, string) {
			es[1].Ref = 3
			es[1].Hash = es[1].ComputeHash()
			for i := 2; i < len(es); i++ {
				es[i].PrevHash = es[i-1].Hash
				es[i].Hash = es[i].ComputeHash()
			}
			s, h := head(es)
			return es, s, h
		}, 2, "cannot be its intent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es, s, h := c.mutate(chain(t))
			rep := verifyAll(es, s, h)
			if rep.OK != (c.firstBad == 0) || rep.FirstBad != c.firstBad || !strings.Contains(rep.Problem, c.problem) {
				t.Errorf("report %+v, want FirstBad %d and a problem mentioning %q", rep, c.firstBad, c.problem)
			}
		})
	}
}

// TestCanonicalContentIsStable pins the hashed encoding: changing it would make every
// existing audit log fail verification.
func TestCanonicalContentIsStable(t *testing.T) {
	e := store.IntentEntry(store.CallRecord{
		Time: time.Date(2025, 1, 2, 3, 4, 5, 6789, time.UTC), CallID: "c1", Session: "s",
		Tool: "tool<&>", Identity: warden.Identity{Tenant: "t", Principal: "p", Conversation: "cv"},
		ArgsDigest: "sha256:00", Args: json.RawMessage(`{"a":1}`), Stage: warden.StageExecute,
		Effect: "allow", RuleID: "r", Rationale: "why", Reason: "tag", Revision: "rev",
		Executed: true, Duration: 5, ResultSize: 7, ApprovedBy: "bob",
	}, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // r.Time is set: now is not used
	e.Seal(42, "abc")
	want := `{"v":1,"kind":"intent","ref":0,"time_us":1735787045000006,"call_id":"c1","session":"s","tool":"tool\u003c\u0026\u003e","tenant":"t","principal":"p","conversation":"cv","args_digest":"sha256:00","args":"eyJhIjoxfQ==","stage":"execute","effect":"allow","rule_id":"r","rationale":"why","reason":"tag","revision":"rev","executed":true,"status":"","duration_ns":5,"result_size":7,"approved_by":"bob","seq":42}`
	if diff := cmp.Diff(want, string(e.CanonicalContent())); diff != "" {
		t.Errorf("canonical content changed (-want +got):\n%s", diff)
	}
	if e.Hash != e.ComputeHash() {
		t.Errorf("Seal's hash %s differs from ComputeHash %s", e.Hash, e.ComputeHash())
	}
	const wantHash = "5277c09eb082e8ed5ff07a6eb3f7e1131be832559804bcec079bcc946ab64057"
	if e.Hash != wantHash {
		t.Errorf("hash = %s, want %s", e.Hash, wantHash)
	}
}

// An entry with shadow verdicts holds them, as JSON text, after every field of
// version 1; one without has exactly the version 1 content (TestCanonicalContentIsStable).
func TestCanonicalContentWithShadow(t *testing.T) {
	e := store.RecordEntry(store.CallRecord{
		Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), CallID: "c1", Tool: "bash",
		Effect: "allow", RuleID: "ls *", Revision: "rev", Status: warden.StatusRan,
		Shadow: []store.ShadowVerdict{{Source: "policy", Effect: "would deny", Enforced: "allow", RuleID: "rm *", Rationale: "denied by rule: rm *", Revision: "rev-s"}},
	}, time.Time{})
	e.Seal(1, "")
	want := `{"v":1,"kind":"record","ref":0,"time_us":1735787045000000,"call_id":"c1","session":"","tool":"bash","tenant":"","principal":"","conversation":"","args_digest":"","args":null,"stage":"","effect":"allow","rule_id":"ls *","rationale":"","reason":"","revision":"rev","executed":false,"status":"ran","duration_ns":0,"result_size":0,"approved_by":"","shadow":"[{\"source\":\"policy\",\"effect\":\"would deny\",\"enforced\":\"allow\",\"rule_id\":\"rm *\",\"rationale\":\"denied by rule: rm *\",\"revision\":\"rev-s\"}]","seq":1}`
	if diff := cmp.Diff(want, string(e.CanonicalContent())); diff != "" {
		t.Errorf("canonical content (-want +got):\n%s", diff)
	}
	if r := e.CallRecord(); len(r.Shadow) != 1 || r.Shadow[0].RuleID != "rm *" || r.Shadow[0].Revision != "rev-s" {
		t.Errorf("CallRecord().Shadow = %+v", r.Shadow)
	}
	// Verdicts that cannot be read are shown as such, never dropped.
	e.Shadow = "[{"
	if r := e.CallRecord(); len(r.Shadow) != 1 || r.Shadow[0].Effect != "unreadable" || r.Shadow[0].Rationale != "the entry's shadow verdicts cannot be read: [{" {
		t.Errorf("CallRecord().Shadow = %+v", r.Shadow)
	}
}

func TestEntryNormalizes(t *testing.T) {
	e := store.RecordEntry(store.CallRecord{
		Time: time.Date(2025, 1, 1, 0, 0, 0, 999, time.FixedZone("Z1", 3600)),
		Tool: "bad\xffname\x00", Args: json.RawMessage{},
	}, time.Now())
	if e.Tool != "bad\uFFFDname\uFFFD" {
		t.Errorf("tool %q: invalid UTF-8 and NUL not replaced", e.Tool)
	}
	if e.Args != nil {
		t.Errorf("empty args %q not normalized to nil", e.Args)
	}
	if e.Time.Location() != time.UTC || e.Time.Nanosecond() != 0 {
		t.Errorf("time %v not UTC microseconds", e.Time)
	}
}

func TestCompleteFolds(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 1500, time.FixedZone("Z2", 7200))
	in := store.IntentEntry(store.CallRecord{Tool: "t", Stage: warden.StageExecute, RuleID: "r1", Effect: "allow", Executed: true}, now)
	if want := store.NormalizeTime(now); !in.Time.Equal(want) || in.Time.Location() != time.UTC {
		t.Errorf("intent without a time is timed %v, want the given now %v (UTC, microseconds)", in.Time, want)
	}
	r := in.CallRecord()
	if r.Status != store.StatusStarted || !r.Unknown {
		t.Fatalf("intent reads %+v", r)
	}
	c := store.CompletionEntry(1, store.Completion{Status: warden.StatusFailed, Reason: "boom", Duration: 3, ResultSize: 0}, now.Add(time.Second))
	if want := store.NormalizeTime(now.Add(time.Second)); !c.Time.Equal(want) {
		t.Errorf("completion timed %v, want the given now %v", c.Time, want)
	}
	r.Complete(&c)
	if r.Status != warden.StatusFailed || r.Unknown || r.Reason != "boom" || r.RuleID != "r1" || r.Stage != warden.StageExecute || r.Duration != 3 {
		t.Errorf("completed record %+v", r)
	}
}
