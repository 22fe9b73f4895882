package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/mcptest"
)

// mrtrExtra lets writer-agent's user approve its own asks (by multi-round trip on
// protocol 2026-07-28).
const mrtrExtra = "approvals:\n  elicitation: allow\n"

// connect2026 opens a protocol 2026-07-28 client (no sessions: every request is
// stateless) to url with token. A nil opts gives a client that fulfils input
// requests itself with an elicitation handler answering action.
func connect2026(t *testing.T, url, token string, tr http.RoundTripper, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test-2026", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token, Next: tr}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect at 2026-07-28: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// manualMRTR is a 2026-07-28 client that returns input_required results to the test
// instead of fulfilling them, and declares elicitation.
func manualMRTR() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, fmt.Errorf("the test answers input requests itself")
		},
	}
}

func call2026(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("call %s: %v", params.Name, err)
	}
	return res
}

// ask2026 calls delete_note for name and returns the input_required answer.
func ask2026(t *testing.T, cs *mcp.ClientSession, name string) *mcp.CallToolResult {
	t.Helper()
	res := call2026(t, cs, &mcp.CallToolParams{Name: "mcp__notes__delete_note", Arguments: map[string]any{"name": name}})
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("delete_note(%s) at 2026-07-28: want input_required with a requestState, got %+v (%s)", name, res, mcptest.ResultText(res))
	}
	req, ok := res.InputRequests["warden_approval"].(*mcp.ElicitParams)
	if !ok || len(res.InputRequests) != 1 {
		t.Fatalf("input requests = %#v, want one elicitation warden_approval", res.InputRequests)
	}
	if !strings.Contains(req.Message, `"name": "`+name+`"`) || !strings.Contains(req.Message, "Accept to run exactly this call") {
		t.Errorf("the approval question does not show the call:\n%s", req.Message)
	}
	return res
}

// retry2026 answers an input_required result with action and the given state.
func retry2026(t *testing.T, cs *mcp.ClientSession, name, state, action string) *mcp.CallToolResult {
	t.Helper()
	return call2026(t, cs, &mcp.CallToolParams{
		Name: "mcp__notes__delete_note", Arguments: map[string]any{"name": name},
		RequestState:   state,
		InputResponses: mcp.InputResponseMap{"warden_approval": &mcp.ElicitResult{Action: action}},
	})
}

func (e *gwEnv) writeNotes(t *testing.T, names ...string) {
	t.Helper()
	w := e.connect(t, gwWriterToken, nil)
	for _, n := range names {
		gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": n, "text": "x"}), false, fmt.Sprintf("Wrote note %q (1 bytes).", n))
	}
}

// A 2026-07-28 client is served without a session: it lists its role's tools, and an
// ask for its own user comes as a multi-round trip that the go-sdk client fulfils
// with its elicitation handler; the approved retry runs exactly once.
func TestMRTRApproveRunsOnce(t *testing.T) {
	e := gwStart(t, gwSetup{identities: gwSelfApproveIdentities, extra: mrtrExtra})
	e.writeNotes(t, "drop")
	accepter := &gwElicitor{action: "accept"}
	cs := connect2026(t, e.url, gwWriterToken, e.tr, accepter.options())
	if got := gwTools(t, cs); strings.Join(got, ",") != strings.Join(gwWriterTools, ",") {
		t.Errorf("tools/list at 2026-07-28 = %v, want %v", got, gwWriterTools)
	}
	rd := connect2026(t, e.url, gwReaderToken, e.tr, nil)
	if got := gwTools(t, rd); strings.Join(got, ",") != strings.Join(gwReaderTools, ",") {
		t.Errorf("reader's tools/list at 2026-07-28 = %v, want %v", got, gwReaderTools)
	}
	res := call2026(t, cs, &mcp.CallToolParams{Name: "mcp__notes__delete_note", Arguments: map[string]any{"name": "drop"}})
	gwWant(t, res, false, `Deleted note "drop".`)
	if msgs := accepter.messages(); len(msgs) != 1 || !strings.Contains(msgs[0], "deleting a note needs a person's approval") {
		t.Errorf("elicitations = %q, want the one approval question", msgs)
	}
	recs := e.calls(t, "mcp__notes__delete_note", "writer-agent")
	ran := 0
	for _, r := range recs {
		if r.Executed {
			ran++
			if r.Status != warden.StatusRan || r.ApprovedBy != "writer-agent" {
				t.Errorf("audit of the approved call: %+v", r)
			}
		}
	}
	if ran != 1 {
		t.Errorf("%d executed delete_note calls in the audit log, want exactly 1: %+v", ran, recs)
	}
	if ps := e.pending(t, "mcp__notes__delete_note", `{"name":"drop"}`); len(ps) != 0 {
		t.Errorf("a multi-round-trip ask left operator decisions: %+v", ps)
	}
}

// The retry's requestState is the gateway's signed word: a changed, replayed,
// other-principal, other-call or stale-policy state is refused with a text saying
// why, and nothing runs.
func TestMRTRStateRefusals(t *testing.T) {
	ids := strings.Replace(gwSelfApproveIdentities, "    token_env: GW_BOB_TOKEN\n", "    token_env: GW_BOB_TOKEN\n    self_approve: true\n", 1)
	e := gwStart(t, gwSetup{identities: ids, extra: mrtrExtra})
	e.writeNotes(t, "a", "b", "c")
	cs := connect2026(t, e.url, gwWriterToken, e.tr, manualMRTR())

	first := ask2026(t, cs, "a")
	payload, sig, _ := strings.Cut(first.RequestState, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[len(b)/2] == 'A' {
			b[len(b)/2] = 'B'
		} else {
			b[len(b)/2] = 'A'
		}
		return string(b)
	}
	for _, tampered := range []string{flip(payload) + "." + sig, payload + "." + flip(sig), payload, "", "x.y"} {
		if tampered == "" {
			continue
		}
		gwWant(t, retry2026(t, cs, "a", tampered, "accept"), true, "The requestState of this retry is not valid: it was changed, or it was not issued by this gateway. Nothing ran; call again without it to be asked again.")
	}
	// Another principal (with the same role, also allowed to approve its own asks).
	bob := connect2026(t, e.url, gwBobToken, e.tr, manualMRTR())
	gwWant(t, retry2026(t, bob, "a", first.RequestState, "accept"), true, "The requestState of this retry was issued to another principal. Nothing ran.")
	// Another call: the same state for other arguments.
	gwWant(t, retry2026(t, cs, "b", first.RequestState, "accept"), true,
		"The requestState of this retry was issued for another call (mcp__notes__delete_note, not this call of mcp__notes__delete_note with these arguments). Nothing ran; call again to be asked about this one.")
	// No answer to the question.
	res := call2026(t, cs, &mcp.CallToolParams{Name: "mcp__notes__delete_note", Arguments: map[string]any{"name": "a"}, RequestState: first.RequestState})
	gwWant(t, res, true, "The retry does not answer the approval question (inputResponses has no warden_approval elicitation result). Nothing ran; call again to be asked again.")
	// The right answer runs the call once; the same state again is a replay.
	gwWant(t, retry2026(t, cs, "a", first.RequestState, "accept"), false, `Deleted note "a".`)
	gwWant(t, retry2026(t, cs, "a", first.RequestState, "accept"), true, "This approval was already used. Nothing ran; call again to be asked again.")
	// Declined: refused, and the state is used up too.
	second := ask2026(t, cs, "b")
	gwWant(t, retry2026(t, cs, "b", second.RequestState, "decline"), true, warden.DeclinedText("the client's user chose decline"))
	gwWant(t, retry2026(t, cs, "b", second.RequestState, "accept"), true, "This approval was already used. Nothing ran; call again to be asked again.")

	// A policy change between the ask and the retry: the retry is judged under the new
	// revision, and a state issued under the old one does not carry over.
	third := ask2026(t, cs, "c")
	old := e.gw.Revision()
	policy := strings.Replace(gwPolicy, "deleting a note needs a person's approval", "deleting a note needs a person (reworded)", 1)
	if policy == gwPolicy {
		t.Fatal("the test policy has no rationale to reword")
	}
	mcptest.WriteFile(t, e.dir, "policy.yaml", []byte(policy))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.gw.Reload(ctx, e.cfg); err != nil {
		t.Fatal(err)
	}
	if e.gw.Revision() == old {
		t.Fatal("the reworded policy has the same revision")
	}
	gwWant(t, retry2026(t, cs, "c", third.RequestState, "accept"), true,
		fmt.Sprintf("The policy changed since this approval was asked (revision %s, now %s). Nothing ran; call again to be asked under the current policy.", old, e.gw.Revision()))
	for _, r := range e.calls(t, "mcp__notes__delete_note", "writer-agent") {
		if r.Executed && !strings.Contains(string(r.Args), `"a"`) {
			t.Errorf("a refused retry ran: %+v", r)
		}
	}
	for _, r := range e.calls(t, "mcp__notes__delete_note", "bob") {
		if r.Executed {
			t.Errorf("bob's retry ran: %+v", r)
		}
	}
}

// The state survives a restart: a second gateway on the same store (a new process,
// or another replica) verifies and claims a state the first one issued, and the
// retry runs there exactly once.
func TestMRTRStateSurvivesRestart(t *testing.T) {
	e := gwStart(t, gwSetup{identities: gwSelfApproveIdentities, extra: mrtrExtra})
	e.writeNotes(t, "drop")
	asked := ask2026(t, connect2026(t, e.url, gwWriterToken, e.tr, manualMRTR()), "drop")

	second, err := gateway.New(e.cfg, &gateway.Options{Store: e.st, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		second.Close(ctx)
	})
	mux := http.NewServeMux()
	mux.Handle(e.cfg.Path, second.MCPHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cs := connect2026(t, srv.URL+e.cfg.Path, gwWriterToken, e.tr, manualMRTR())
	gwWant(t, retry2026(t, cs, "drop", asked.RequestState, "accept"), false, `Deleted note "drop".`)
	// The first gateway sees the state as used.
	first := connect2026(t, e.url, gwWriterToken, e.tr, manualMRTR())
	gwWant(t, retry2026(t, first, "drop", asked.RequestState, "accept"), true, "This approval was already used. Nothing ran; call again to be asked again.")
}

// A 2025 client never has a requestState honoured, and a 2026-07-28 client whose
// identity may not approve its own asks waits for an operator as before.
func TestMRTROnlyForSelfApproveOn2026(t *testing.T) {
	e := gwStart(t, gwSetup{identities: gwSelfApproveIdentities, extra: mrtrExtra + "  wait: 1s\n"})
	e.writeNotes(t, "drop")
	asked := ask2026(t, connect2026(t, e.url, gwWriterToken, e.tr, manualMRTR()), "drop")

	old := e.connect(t, gwWriterToken, nil) // 2025-11-25, no elicitation declared
	res, err := old.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "mcp__notes__delete_note", Arguments: map[string]any{"name": "drop"},
		RequestState:   asked.RequestState,
		InputResponses: mcp.InputResponseMap{"warden_approval": &mcp.ElicitResult{Action: "accept"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(mcptest.ResultText(res), "waiting for an operator") {
		t.Errorf("a 2025 client's requestState was honoured: %+v %s", res, mcptest.ResultText(res))
	}
	bob := connect2026(t, e.url, gwBobToken, e.tr, manualMRTR())
	res = call2026(t, bob, &mcp.CallToolParams{Name: "mcp__notes__delete_note", Arguments: map[string]any{"name": "drop"}})
	if res.NeedsInput() || !res.IsError || !strings.Contains(mcptest.ResultText(res), "waiting for an operator") {
		t.Errorf("bob (no self_approve) at 2026-07-28: %+v %s", res, mcptest.ResultText(res))
	}
	for _, r := range e.calls(t, "mcp__notes__delete_note", "") {
		if r.Executed {
			t.Errorf("a delete ran: %+v", r)
		}
	}
}

// Two replicas on one PostgreSQL store: a state one replica issued is verified and
// claimed by the other, and the retry runs there exactly once; the first then sees
// it used.
func TestMRTRReplicasOnPostgres(t *testing.T) {
	if why := postgresUnavailable(); why != "" {
		t.Skip(why)
	}
	base := os.Getenv(postgresEnv)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "warden_mrtr_" + hex.EncodeToString(b[:])
	pgExec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { pgExec(t, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	notes := t.TempDir() // both replicas serve the same notes
	servers := "servers:\n  notes:\n    command: notes-server\n    args: [-dir, \"" + notes + "\"]\n"
	a := gwStart(t, gwSetup{identities: gwSelfApproveIdentities, extra: mrtrExtra, store: u.String(), servers: servers})
	c := gwStart(t, gwSetup{identities: gwSelfApproveIdentities, extra: mrtrExtra, store: u.String(), servers: servers})
	a.writeNotes(t, "drop", "x", "y")

	// Both replicas make the MAC key at once on first use; the store keeps one, so
	// each verifies the states the other issued.
	var onA, onC *mcp.CallToolResult
	var wg sync.WaitGroup
	wg.Go(func() { onA = ask2026(t, connect2026(t, a.url, gwWriterToken, a.tr, manualMRTR()), "x") })
	wg.Go(func() { onC = ask2026(t, connect2026(t, c.url, gwWriterToken, c.tr, manualMRTR()), "y") })
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	gwWant(t, retry2026(t, connect2026(t, c.url, gwWriterToken, c.tr, manualMRTR()), "x", onA.RequestState, "accept"), false, `Deleted note "x".`)
	gwWant(t, retry2026(t, connect2026(t, a.url, gwWriterToken, a.tr, manualMRTR()), "y", onC.RequestState, "accept"), false, `Deleted note "y".`)

	asked := ask2026(t, connect2026(t, a.url, gwWriterToken, a.tr, manualMRTR()), "drop")
	gwWant(t, retry2026(t, connect2026(t, c.url, gwWriterToken, c.tr, manualMRTR()), "drop", asked.RequestState, "accept"), false, `Deleted note "drop".`)
	gwWant(t, retry2026(t, connect2026(t, a.url, gwWriterToken, a.tr, manualMRTR()), "drop", asked.RequestState, "accept"), true, "This approval was already used. Nothing ran; call again to be asked again.")
	ran := 0
	for _, r := range a.calls(t, "mcp__notes__delete_note", "writer-agent") {
		if r.Executed && strings.Contains(string(r.Args), `"drop"`) {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("%d executed deletes of drop in the shared audit log, want 1", ran)
	}
}

// Without sessions, a halt on the 2026-07-28 front is the principal's: every later
// request of that principal there is refused (a new connection included) and its
// lists are empty, while another principal is served.
func TestStatelessHaltIsThePrincipals(t *testing.T) {
	e := gwStart(t, gwSetup{})
	w := connect2026(t, e.url, gwWriterToken, e.tr, nil)
	gwWant(t, call2026(t, w, &mcp.CallToolParams{Name: "mcp__notes__write_note", Arguments: map[string]any{"name": "n", "text": "my password"}}), true, gwHaltText)
	again := connect2026(t, e.url, gwWriterToken, e.tr, nil)
	gwWant(t, call2026(t, again, &mcp.CallToolParams{Name: "mcp__notes__list_notes", Arguments: map[string]any{}}), true, gwHaltText)
	if got := gwTools(t, again); len(got) != 0 {
		t.Errorf("the halted principal's tools/list = %v, want none", got)
	}
	rec := e.lastCall(t, "mcp__notes__list_notes", "writer-agent")
	if rec.Executed || rec.Stage != warden.StageGate || rec.Session != "principal:/writer-agent" {
		t.Errorf("audit of the call after the halt: %+v", rec)
	}
	bob := connect2026(t, e.url, gwBobToken, e.tr, nil)
	gwWant(t, call2026(t, bob, &mcp.CallToolParams{Name: "mcp__notes__write_note", Arguments: map[string]any{"name": "b", "text": "fine"}}), false, `Wrote note "b" (4 bytes).`)
}

// Issued requestStates do not pile up in the store: a sweep deletes those written more
// than their lifetime plus a margin ago, and nothing younger. A state whose checkpoint
// is gone is refused, never honoured.
func TestMRTRStatesSwept(t *testing.T) {
	e := gwStart(t, gwSetup{identities: gwSelfApproveIdentities, extra: mrtrExtra})
	e.writeNotes(t, "drop", "keep")
	cs := connect2026(t, e.url, gwWriterToken, e.tr, manualMRTR())
	used := ask2026(t, cs, "keep")
	gwWant(t, retry2026(t, cs, "keep", used.RequestState, "accept"), false, `Deleted note "keep".`)
	asked := ask2026(t, cs, "drop")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := e.gw.SweepStates(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("a sweep now deleted %d states (err %v), want 0", n, err)
	}
	if n, err := e.gw.SweepStates(ctx, time.Now().Add(gateway.MRTRStateLife-time.Minute)); err != nil || n != 0 {
		t.Fatalf("a sweep within the states' life deleted %d (err %v), want 0", n, err)
	}
	if n, err := e.gw.SweepStates(ctx, time.Now().Add(gateway.MRTRStateLife+time.Second)); err != nil || n != 2 {
		t.Fatalf("a sweep past the states' life deleted %d (err %v), want 2 (the used one and the open one)", n, err)
	}
	if n, err := e.st.DeleteCheckpoints(ctx, gateway.MRTRStatePrefix, time.Now().Add(time.Hour)); err != nil || n != 0 {
		t.Errorf("states left after the sweep: %d (err %v)", n, err)
	}
	gwWant(t, retry2026(t, cs, "drop", asked.RequestState, "accept"), true, "The requestState of this retry is not valid: it was changed, or it was not issued by this gateway. Nothing ran; call again without it to be asked again.")
	gwWant(t, retry2026(t, cs, "keep", used.RequestState, "accept"), true, "The requestState of this retry is not valid: it was changed, or it was not issued by this gateway. Nothing ran; call again without it to be asked again.")
}
