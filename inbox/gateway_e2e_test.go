package inbox_test

// End-to-end browser tests with the real gateway: an gateway.Gateway in front of the
// example notes server (a real child process) and the inbox share one HTTP mux, as
// `warden serve` wires them. An MCP client (the official SDK, without elicitation)
// makes a call the policy escalates; the call waits while an operator decides it in
// a real browser, and the test checks what the client receives, what the notes
// server did and what the audit pages show.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
)

const (
	// e2eAgent is the principal the gateway config gives clientToken.
	e2eAgent = "writer-agent"
	// e2eDelete is the tool examples/gateway/policy.yaml escalates to a person.
	e2eDelete = "mcp__notes__delete_note"
)

// e2eConfig is the gateway config: the example policy, the notes server started by
// bare name (the transport policy refuses paths), one writer client and one operator.
const e2eConfig = `policy: policy.yaml
store: sqlite://warden.db
transport:
  allow_commands: true
  commands: [notes-server]
servers:
  notes:
    command: notes-server
    args: [-dir, %q]
listen: 127.0.0.1:0
clients:
  - principal: %s
    role: writer
    token_sha256: %s
operators:
  - name: %s
    token_sha256: %s
approvals:
  wait: 60s
`

// e2eEnv is a gateway and its inbox behind one test server.
type e2eEnv struct {
	st     store.Store
	gw     *gateway.Gateway
	base   string // the inbox's absolute URL, ending in "/"
	mcpURL string
	notes  string             // the notes server's directory
	log    *mcptest.LogBuffer // the gateway writes it from many goroutines
}

func startE2E(t *testing.T) *e2eEnv {
	t.Helper()
	mcptest.PeersOnPATH(t, "./examples/gateway/notes-server")
	dir := t.TempDir()
	mcptest.CopyExamplePolicy(t, dir)
	e := &e2eEnv{notes: filepath.Join(dir, "notes"), log: &mcptest.LogBuffer{}}
	data := fmt.Appendf(nil, e2eConfig, e.notes, e2eAgent, inbox.HashToken(clientToken), operatorName, inbox.HashToken(operatorToken))
	file := mcptest.WriteFile(t, dir, "gateway.yaml", data)
	cfg, err := gateway.ParseFile(file, data, func(string) string { return "" })
	if err != nil {
		t.Fatalf("gateway config:\n%s\n%v", data, err)
	}
	if e.st, err = store.Open(context.Background(), cfg.Store); err != nil {
		t.Fatalf("store.Open(%s): %v", cfg.Store, err)
	}
	t.Cleanup(func() { e.st.Close() })
	e.log.LogOnFailure(t, "gateway log")
	logger := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if e.gw, err = gateway.New(cfg, &gateway.Options{Store: e.st, Logger: logger, Version: "test"}); err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.gw.Close(ctx); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
	if err := e.gw.Start(ctx); err != nil {
		t.Fatalf("gateway Start: %v\nlog:\n%s", err, e.log.String())
	}
	if err := e.gw.Ready(); err != nil {
		t.Fatalf("gateway not ready: %v\nlog:\n%s", err, e.log.String())
	}

	// The mux of `warden serve`: the MCP endpoint and the inbox side by side.
	ops := make([]inbox.Operator, len(cfg.Operators))
	for i, op := range cfg.Operators {
		ops[i] = inbox.Operator{Name: op.Name, TokenHash: op.TokenHash}
	}
	ib, err := inbox.New(e.st, ops, &inbox.Options{Path: cfg.UIPath, Events: e.gw.Events().ForCall, Logger: logger})
	if err != nil {
		t.Fatalf("inbox.New: %v", err)
	}
	inbox.SetFailDelay(ib, time.Millisecond)
	mux := http.NewServeMux()
	mux.Handle(cfg.Path, e.gw.MCPHandler())
	mux.Handle(cfg.UIPath, ib)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections() // MCP sessions' streams never end by themselves
		srv.Close()
	})
	t.Cleanup(func() { ib.Close() }) // runs first: ends the inbox's event streams
	e.base = srv.URL + cfg.UIPath
	e.mcpURL = srv.URL + cfg.Path
	return e
}

// connect opens an MCP session with token, over streamable HTTP. The client declares
// no elicitation, so a call that needs a person waits for an operator.
func (e *e2eEnv) connect(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "inbox-e2e", Version: "1"}, nil)
	return mcptest.ConnectHTTP(t, c, e.mcpURL, token, nil, 30*time.Second)
}

func (e *e2eEnv) agent(t *testing.T) *mcp.ClientSession {
	t.Helper()
	cs, err := e.connect(t, clientToken)
	if err != nil {
		t.Fatalf("MCP connect with the client token: %v", err)
	}
	return cs
}

// callTool makes one call and returns its result, failing t on a protocol error.
func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	return mcptest.CallTool(t, cs, 30*time.Second, tool, args)
}

type callResult struct {
	res     *mcp.CallToolResult
	err     error
	elapsed time.Duration
}

// callAsync starts a call on its own goroutine; the channel delivers its result.
func callAsync(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) <-chan callResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel) // a call still waiting when the test ends is abandoned
	ch := make(chan callResult, 1)
	go func() {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		ch <- callResult{res, err, time.Since(start)}
	}()
	return ch
}

// awaitCall waits for an asynchronous call to return.
func awaitCall(t *testing.T, ch <-chan callResult, within time.Duration) callResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("the waiting MCP call failed after %v: %v", r.elapsed, r.err)
		}
		return r
	case <-time.After(within):
		t.Fatalf("the waiting MCP call did not return within %v of the decision", within)
		return callResult{}
	}
}

// writeNote writes a note through the gateway (the policy allows it without a person).
func writeNote(t *testing.T, cs *mcp.ClientSession, name, text string) {
	t.Helper()
	res := callTool(t, cs, "mcp__notes__write_note", map[string]any{"name": name, "text": text})
	if want := fmt.Sprintf("Wrote note %q (%d bytes).", name, len(text)); res.IsError || mcptest.ResultText(res) != want {
		t.Fatalf("write_note: isError=%t %q, want %q", res.IsError, mcptest.ResultText(res), want)
	}
}

// openPending signs the operator in at the pending page and waits until the page is
// empty and its live updates are connected.
func (e *e2eEnv) openPending(t *testing.T, ctx context.Context) {
	t.Helper()
	run(t, ctx, "open pending", chromedp.Navigate(e.base+"pending"), chromedp.WaitVisible(chromedp.CSS(`#token`)))
	if loc, want := get(t, ctx, "location", chromedp.Location()), e.base+"login?next=%2Fui%2Fpending"; loc != want {
		t.Errorf("unauthenticated, the pending page led to %s, want %s", loc, want)
	}
	signIn(t, ctx, operatorToken)
	run(t, ctx, "pending page", chromedp.WaitVisible(chromedp.CSS(`#pending-list .empty`)))
	within(t, ctx, 10*time.Second, "live updates connect", chromedp.WaitVisible(chromedp.CSS(`#live.live-on`)))
	run(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.wardenMarker = 42`))
}

// waitArrival waits for the one decision the waiting call created to appear on the
// open pending page without a reload, checks the card against the store and returns
// the decision.
func (e *e2eEnv) waitArrival(t *testing.T, ctx context.Context, note string, call <-chan callResult) store.Pending {
	t.Helper()
	start := time.Now()
	within(t, ctx, 15*time.Second, "the waiting call appears on the open page", chromedp.WaitVisible(chromedp.CSS(`article.decision`)))
	t.Logf("the decision appeared on the open page %v after the call started waiting", time.Since(start).Round(time.Millisecond))
	if marker := get(t, ctx, "marker", chromedp.Evaluate[int](`window.wardenMarker`)); marker != 42 {
		t.Error("the page reloaded instead of updating in place")
	}
	select {
	case r := <-call:
		t.Fatalf("the call returned before anyone decided: %+v %v", r.res, r.err)
	default:
	}
	list, err := e.st.ListPending(context.Background(), store.PendingFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("pending decisions in the store: %+v, %v; want the one waiting call", list, err)
	}
	p := list[0]
	if p.Tool != e2eDelete || p.Identity.Principal != e2eAgent || p.Kind != warden.KindEscalate || p.Session == "" {
		t.Errorf("the stored decision: %+v", p)
	}
	card := css(`article.decision[data-id="%s"]`, p.ID)
	if n := get(t, ctx, "cards", chromedp.Evaluate[int](`document.querySelectorAll("article.decision").length`)); n != 1 {
		t.Errorf("%d cards on the page, want 1", n)
	}
	facts := get(t, ctx, "facts", chromedp.Evaluate[map[string]string](fmt.Sprintf(
		`Object.fromEntries([...document.querySelectorAll('article.decision[data-id="%s"] dl.facts > div')].map(d => [d.querySelector("dt").textContent, d.querySelector("dd").textContent]))`, p.ID)))
	args := get(t, ctx, "arguments", chromedp.Text(card+` > pre.code`))
	question := get(t, ctx, "question", chromedp.Text(card+` .question`))
	wantArgs, _ := json.MarshalIndent(map[string]string{"name": note}, "", "  ")
	if facts["Tool"] != e2eDelete || facts["Principal"] != e2eAgent || facts["Session"] != p.Session {
		t.Errorf("the card shows tool %q, principal %q, session %q; want %s, %s, %s", facts["Tool"], facts["Principal"], facts["Session"], e2eDelete, e2eAgent, p.Session)
	}
	if args != string(wantArgs) {
		t.Errorf("the card shows the arguments\n%s\nwant\n%s", args, wantArgs)
	}
	if question != p.Question || !strings.Contains(question, "deleting a note needs a person's approval") {
		t.Errorf("the card asks %q; the gateway asked %q", question, p.Question)
	}
	// The digest on the card is the one of the arguments shown, as the audit log
	// records it (the store row holds the gateway's approval binding instead).
	parsed, err := warden.ParseArgs(wantArgs)
	if err != nil {
		t.Fatal(err)
	}
	digest := get(t, ctx, "digest", chromedp.AttributeValue(card+` .digest`, "title"))
	if want := "Arguments digest " + parsed.Digest(); digest.Value != want {
		t.Errorf("the card's digest: %q, want %q", digest.Value, want)
	}
	if count := get(t, ctx, "count", chromedp.Text(chromedp.CSS(`#pending-count`))); count != "1" {
		t.Errorf("nav count %q, want 1", count)
	}
	return p
}

// auditRow returns the newest audit record of the delete call and what its row on
// the audit page shows.
func (e *e2eEnv) auditRow(t *testing.T, ctx context.Context) (store.CallRecord, map[string]string) {
	t.Helper()
	recs, err := e.st.QueryCalls(context.Background(), store.CallFilter{ToolGlob: e2eDelete})
	if err != nil || len(recs) == 0 {
		t.Fatalf("audit records of %s: %v, %v", e2eDelete, recs, err)
	}
	rec := recs[len(recs)-1]
	run(t, ctx, "open audit", chromedp.Navigate(e.base+"audit"), chromedp.WaitVisible(css(`tr[data-seq="%d"]`, rec.Seq)))
	cells := get(t, ctx, "row", chromedp.Evaluate[map[string]string](fmt.Sprintf(
		`Object.fromEntries([...document.querySelectorAll('tr[data-seq="%d"] td')].map(c => [c.dataset.label, c.textContent.trim()]))`, rec.Seq)))
	return rec, cells
}

// TestE2EGatewayApprove: an operator approves, in the browser, a real MCP call that
// waits in the gateway; the call runs and the audit pages say who approved it.
func TestE2EGatewayApprove(t *testing.T) {
	e := startE2E(t)
	ctx := newTab(t)
	e.openPending(t, ctx)
	screenshot(t, ctx, "e2e-pending-empty")

	const note = "meeting-2025-06-03_quarterly-planning.draft"
	cs := e.agent(t)
	writeNote(t, cs, note, "Agenda: budget, hiring, the Q3 roadmap.")
	call := callAsync(t, cs, e2eDelete, map[string]any{"name": note})
	p := e.waitArrival(t, ctx, note, call)
	screenshot(t, ctx, "e2e-pending-live")

	start := time.Now()
	msg := submitForFlash(t, ctx, css(`article[data-id="%s"] button[value="approve-once"]`, p.ID))
	if want := "Approved (once): " + e2eDelete; !strings.HasPrefix(msg, want) {
		t.Errorf("flash after approving: %q, want it to start with %q", msg, want)
	}
	r := awaitCall(t, call, 15*time.Second)
	t.Logf("the call returned %v after the click (it waited %v in all)", time.Since(start).Round(time.Millisecond), r.elapsed.Round(time.Millisecond))
	if want := fmt.Sprintf("Deleted note %q.", note); r.res.IsError || mcptest.ResultText(r.res) != want {
		t.Errorf("the approved call returned isError=%t %q, want %q", r.res.IsError, mcptest.ResultText(r.res), want)
	}
	if res := callTool(t, cs, "mcp__notes__read_note", map[string]any{"name": note}); !res.IsError || !strings.Contains(mcptest.ResultText(res), "does not exist") {
		t.Errorf("reading the deleted note: isError=%t %q", res.IsError, mcptest.ResultText(res))
	}
	if _, err := os.Stat(filepath.Join(e.notes, note)); !os.IsNotExist(err) {
		t.Errorf("the note's file is still there: %v", err)
	}
	if got := getPending(t, e.st, p.ID); got.State != store.StateApproved || got.DecidedBy != operatorName || got.Scope != store.ScopeOnce || !got.Consumed {
		t.Errorf("the decision after the call: state %s by %q scope %s consumed %t", got.State, got.DecidedBy, got.Scope, got.Consumed)
	}

	var asked warden.PendingDecision
	if err := json.Unmarshal(p.Decision, &asked); err != nil || asked.CallID == "" {
		t.Fatalf("the gateway's pending decision: %s, %v", p.Decision, err)
	}
	rec, cells := e.auditRow(t, ctx)
	if rec.Status != warden.StatusRan || !rec.Executed || rec.ApprovedBy != operatorName || rec.Identity.Principal != e2eAgent ||
		rec.CallID != asked.CallID || rec.ArgsDigest != asked.Digest || string(rec.Args) != fmt.Sprintf(`{"name":%q}`, note) {
		t.Errorf("audit record of the approved call: %+v", rec)
	}
	if cells["Tool"] != e2eDelete || cells["Principal"] != e2eAgent || cells["Status"] != "ran" || cells["Executed"] != "yes" || cells["Approved by"] != operatorName {
		t.Errorf("the audit row shows %v; want %s by %s, ran, executed, approved by %s", cells, e2eDelete, e2eAgent, operatorName)
	}
	screenshot(t, ctx, "e2e-audit-approved")

	run(t, ctx, "open the call",
		chromedp.Click(css(`tr[data-seq="%d"] td[data-label="Tool"] a`, rec.Seq)),
		chromedp.WaitVisible(css(`section.record[data-seq="%d"]`, rec.Seq)),
		chromedp.WaitVisible(chromedp.CSS(`#events`)),
	)
	type event struct {
		Name   string
		Fields map[string]string
	}
	events := get(t, ctx, "events", chromedp.Evaluate[[]event](`[...document.querySelectorAll("#events ol.events > li")].map(li => ({
		name: li.querySelector(".event-head code").textContent,
		fields: Object.fromEntries([...li.querySelectorAll("dl.kv > div")].map(d => [d.querySelector("dt").textContent, d.querySelector("dd").textContent])),
	}))`))
	approvedBy := get(t, ctx, "approved by", chromedp.Evaluate[string](fmt.Sprintf(
		`[...document.querySelectorAll('section.record[data-seq="%d"] dl.facts > div')].find(d => d.querySelector("dt").textContent === "Approved by").querySelector("dd").textContent`, rec.Seq)))
	var decided, ended bool
	for _, ev := range events {
		switch ev.Name {
		case warden.EventDecisionMade:
			decided = decided || ev.Fields["approved"] == "yes" && ev.Fields["by"] == operatorName
		case warden.EventToolEnd:
			ended = ended || ev.Fields["status"] == "ran" && ev.Fields["executed"] == "yes"
		}
	}
	if !decided || !ended {
		t.Errorf("the call's events show no %s approved by %s (%t) or no %s that ran (%t): %+v",
			warden.EventDecisionMade, operatorName, decided, warden.EventToolEnd, ended, events)
	}
	if approvedBy != operatorName {
		t.Errorf("the detail page says approved by %q, want %q", approvedBy, operatorName)
	}
	screenshot(t, ctx, "e2e-audit-detail")
}

// TestE2EGatewayDecline: an operator declines with a note; the waiting call is
// refused with that note and nothing runs.
func TestE2EGatewayDecline(t *testing.T) {
	e := startE2E(t)
	ctx := newTab(t)
	e.openPending(t, ctx)

	const note, text = "shopping-list", "milk, eggs"
	cs := e.agent(t)
	writeNote(t, cs, note, text)
	call := callAsync(t, cs, e2eDelete, map[string]any{"name": note})
	p := e.waitArrival(t, ctx, note, call)

	run(t, ctx, "note", chromedp.SendKeys(css(`#note-%s`, p.ID), "not today"))
	start := time.Now()
	msg := submitForFlash(t, ctx, css(`article[data-id="%s"] button[value="decline"]`, p.ID))
	if want := "Declined: " + e2eDelete; !strings.HasPrefix(msg, want) {
		t.Errorf("flash after declining: %q, want it to start with %q", msg, want)
	}
	r := awaitCall(t, call, 15*time.Second)
	t.Logf("the call returned %v after the click (it waited %v in all)", time.Since(start).Round(time.Millisecond), r.elapsed.Round(time.Millisecond))
	if got, want := mcptest.ResultText(r.res), warden.DeclinedText("not today"); !r.res.IsError || got != want {
		t.Errorf("the declined call returned isError=%t %q, want isError=true %q", r.res.IsError, got, want)
	}
	if res := callTool(t, cs, "mcp__notes__read_note", map[string]any{"name": note}); res.IsError || mcptest.ResultText(res) != text {
		t.Errorf("the note after the decline: isError=%t %q, want %q", res.IsError, mcptest.ResultText(res), text)
	}
	if got := getPending(t, e.st, p.ID); got.State != store.StateDeclined || got.DecidedBy != operatorName || got.Note != "not today" {
		t.Errorf("the decision: state %s by %q note %q", got.State, got.DecidedBy, got.Note)
	}
	run(t, ctx, "empty again", chromedp.WaitVisible(chromedp.CSS(`#pending-list .empty`)))

	rec, cells := e.auditRow(t, ctx)
	if rec.Status != warden.StatusRefused || rec.Executed || rec.Stage != warden.StageHuman || rec.ApprovedBy != "" {
		t.Errorf("audit record of the declined call: %+v", rec)
	}
	if cells["Status"] != "refused" || cells["Executed"] != "no" || cells["Approved by"] != "—" {
		t.Errorf("the audit row shows %v; want refused, not executed, approved by nobody", cells)
	}
	screenshot(t, ctx, "e2e-audit-declined")
}

// TestE2EClientTokenCannotSignIn: the token the gateway accepts from an MCP client
// does not open the inbox, and the operator's token does not open the MCP endpoint.
func TestE2EClientTokenCannotSignIn(t *testing.T) {
	e := startE2E(t)
	// The client token is live on this very server.
	cs := e.agent(t)
	if res := callTool(t, cs, "mcp__notes__list_notes", nil); res.IsError {
		t.Fatalf("list_notes with the client token: %q", mcptest.ResultText(res))
	}

	ctx := newTab(t)
	run(t, ctx, "open login", chromedp.Navigate(e.base+"login"))
	signIn(t, ctx, clientToken)
	run(t, ctx, "error shown", chromedp.WaitVisible(chromedp.CSS(`#login-error`)))
	if msg := get(t, ctx, "error", chromedp.Text(chromedp.CSS(`#login-error`))); !strings.Contains(msg, "not an operator token") {
		t.Errorf("login error %q", msg)
	}
	run(t, ctx, "still signed out", chromedp.Navigate(e.base+"pending"), chromedp.WaitVisible(chromedp.CSS(`#token`)))
	if loc := get(t, ctx, "location", chromedp.Location()); !strings.HasPrefix(loc, e.base+"login?next=") {
		t.Errorf("after the refused sign-in the pending page led to %s", loc)
	}

	if _, err := e.connect(t, operatorToken); err == nil {
		t.Error("the operator's token opened an MCP session")
	}
}

// TestE2EGatewayCrossSitePostRefused: while a real call waits, a page on another
// origin that knows the operator's CSRF token posts an approval with the operator's
// cookie; the inbox refuses it, the call keeps waiting, and the operator's own
// decision still goes through.
func TestE2EGatewayCrossSitePostRefused(t *testing.T) {
	e := startE2E(t)
	ctx := newTab(t)
	e.openPending(t, ctx)

	const note = "budget"
	cs := e.agent(t)
	writeNote(t, cs, note, "draft")
	call := callAsync(t, cs, e2eDelete, map[string]any{"name": note})
	p := e.waitArrival(t, ctx, note, call)
	csrf := get(t, ctx, "CSRF token", chromedp.AttributeValue(css(`article[data-id="%s"] input[name="csrf"]`, p.ID), "value"))
	if !csrf.Exists || csrf.Value == "" {
		t.Fatal("no CSRF token in the form")
	}
	action := e.base + "pending/" + p.ID + "/decide"
	for _, origin := range attackerPages(t, action, csrf.Value) {
		run(t, ctx, "attacker page "+origin, chromedp.Navigate(origin), chromedp.WaitVisible(chromedp.CSS(`.error-card h1`)))
		heading := get(t, ctx, "heading", chromedp.Text(chromedp.CSS(`.error-card h1`)))
		if loc := get(t, ctx, "location", chromedp.Location()); heading != "Request refused" || loc != action {
			t.Errorf("from %s: %q at %s, want the refusal at the inbox", origin, heading, loc)
		}
		if got := getPending(t, e.st, p.ID); got.State != store.StatePending {
			t.Fatalf("from %s: the decision was made (%s by %s)", origin, got.State, got.DecidedBy)
		}
	}
	select {
	case r := <-call:
		t.Fatalf("the call returned after the refused cross-site posts: %+v %v", r.res, r.err)
	default:
	}

	run(t, ctx, "back to pending", chromedp.Navigate(e.base+"pending"), chromedp.WaitVisible(css(`article[data-id="%s"]`, p.ID)))
	submitForFlash(t, ctx, css(`article[data-id="%s"] button[value="decline"]`, p.ID))
	if r := awaitCall(t, call, 15*time.Second); !r.res.IsError || mcptest.ResultText(r.res) != warden.DeclinedText("") {
		t.Errorf("the call after the operator declined: isError=%t %q", r.res.IsError, mcptest.ResultText(r.res))
	}
}
