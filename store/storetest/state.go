package storetest

// The cases about checkpoints, pins and a closed store.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden/store"
)

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

// A checkpoint created once: the first creator's data is what every creator gets,
// concurrent ones included, and a stored checkpoint is never replaced by a create.
func testCreateCheckpoint(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	got, err := s.CreateCheckpoint(ctx, "key", []byte("first"))
	check(t, err)
	if string(got) != "first" {
		t.Fatalf("CreateCheckpoint of a new id = %q, want first", got)
	}
	got, err = s.CreateCheckpoint(ctx, "key", []byte("second"))
	check(t, err)
	if string(got) != "first" {
		t.Errorf("CreateCheckpoint of a stored id = %q, want the stored first", got)
	}
	if got, err := s.GetCheckpoint(ctx, "key"); err != nil || string(got) != "first" {
		t.Errorf("GetCheckpoint after two creates = %q, %v", got, err)
	}
	if _, err := s.CreateCheckpoint(ctx, "", []byte("x")); err == nil {
		t.Error("CreateCheckpoint with an empty id succeeded")
	}
	other := s.open(t, s.dsn, s.clock.Now) // another process on the same database
	const n = 16
	results := make(chan string, n)
	for i := range n {
		st := store.Store(s)
		if i%2 == 1 {
			st = other
		}
		go func() {
			got, err := st.CreateCheckpoint(ctx, "race", []byte(fmt.Sprintf("creator-%d", i)))
			if err != nil {
				results <- "error: " + err.Error()
				return
			}
			results <- string(got)
		}()
	}
	first := <-results
	if !strings.HasPrefix(first, "creator-") {
		t.Fatalf("a concurrent create: %s", first)
	}
	for range n - 1 {
		if got := <-results; got != first {
			t.Errorf("concurrent creators got %q and %q; all must get the same", first, got)
		}
	}
}

// Sweeps delete old checkpoints of one kind: by prefix, as plain text, by the time each
// was last written, claimed ones too; nothing else.
func testDeleteCheckpoints(t *testing.T, s *subject) {
	ctx := ctxFor(t)
	_, err := s.DeleteCheckpoints(ctx, "", s.clock.Now())
	if err == nil || !strings.Contains(err.Error(), "the prefix is empty: name the kind of checkpoint to delete") {
		t.Fatalf("DeleteCheckpoints with an empty prefix: %v", err)
	}
	for _, id := range []string{"sweep:old-1", "sweep:old-2", "sweep:claimed", "sweepx", "other:old", "sw%:old", "sw_ep:old"} {
		check(t, s.PutCheckpoint(ctx, id, []byte(id)))
	}
	if _, err := s.ClaimCheckpoint(ctx, "sweep:claimed", []byte("claim")); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Hour)
	cut := s.clock.Now()
	s.clock.Advance(time.Minute)
	check(t, s.PutCheckpoint(ctx, "sweep:new", []byte("new")))
	check(t, s.PutCheckpoint(ctx, "sweep:old-2", []byte("rewritten"))) // written again: new

	n, err := s.DeleteCheckpoints(ctx, "sweep:", cut)
	check(t, err)
	if n != 2 {
		t.Errorf("DeleteCheckpoints(sweep:) = %d, want 2 (old-1 and claimed)", n)
	}
	for id, want := range map[string]bool{"sweep:old-1": false, "sweep:claimed": false, "sweep:old-2": true, "sweep:new": true, "sweepx": true, "other:old": true, "sw%:old": true, "sw_ep:old": true} {
		_, err := s.GetCheckpoint(ctx, id)
		if got := err == nil; got != want {
			t.Errorf("after the sweep, %s kept = %v (err %v), want %v", id, got, err, want)
		}
	}
	// Pattern characters in a prefix are plain text.
	n, err = s.DeleteCheckpoints(ctx, "sw%", cut)
	check(t, err)
	if n != 1 {
		t.Errorf("DeleteCheckpoints(sw%%) = %d, want 1", n)
	}
	n, err = s.DeleteCheckpoints(ctx, "sw_", cut)
	check(t, err)
	if n != 1 {
		t.Errorf("DeleteCheckpoints(sw_) = %d, want 1", n)
	}
	if _, err := s.GetCheckpoint(ctx, "sweepx"); err != nil {
		t.Errorf("sweepx after the pattern sweeps: %v", err)
	}
	// A deleted claim can be stored again: it is no longer claimed.
	check(t, s.PutCheckpoint(ctx, "sweep:claimed", []byte("again")))
	if _, err := s.ClaimCheckpoint(ctx, "sweep:claimed", []byte("claim")); err != nil {
		t.Errorf("claiming a checkpoint stored again after its deletion: %v", err)
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
		var refused atomic.Int32
		wins := race(claimers, func(c int) bool {
			prev, err := s.ClaimCheckpoint(ctx, id, fmt.Appendf(nil, "claimed by %d", c))
			switch {
			case err == nil:
				if string(prev) != "checkpoint "+id {
					t.Errorf("%s: the winner got %q", id, prev)
				}
				return true
			case errors.Is(err, store.ErrAlreadyClaimed):
				refused.Add(1)
			default:
				t.Error(err)
			}
			return false
		})
		if wins != 1 || refused.Load() != int32(claimers-1) {
			t.Fatalf("round %d: %d of %d concurrent claims won, %d were refused; want exactly 1 and %d", round, wins, claimers, refused.Load(), claimers-1)
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
	_, err = s.DeleteCheckpoints(ctx, "run-", s.clock.Now())
	wantErr(t, "DeleteCheckpoints after Close", err, store.ErrClosed)
	_, err = s.CreateCheckpoint(ctx, "run-1", nil)
	wantErr(t, "CreateCheckpoint after Close", err, store.ErrClosed)
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
