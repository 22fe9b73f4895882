package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/postgres/postgrestest"
	"github.com/wardenhq/warden/store/sqlite/sqlitetest"
)

// The CLI tests run against a store populated through a real Guard writing to
// audit.NewJournal: SQLite always, PostgreSQL too when WARDEN_TEST_POSTGRES_DSN is set.
// Both must print the same thing, so they share the golden files.

// testStore is one store kind the CLI tests run against.
type testStore struct {
	name string
	dsn  func(t *testing.T) string // a fresh, empty store
}

func testStores() []testStore {
	return []testStore{
		{"sqlite", func(t *testing.T) string {
			return "sqlite://" + filepath.Join(t.TempDir(), "warden.db")
		}},
		{"postgres", postgresDSN},
	}
}

// postgresDSN returns a DSN for an empty PostgreSQL store of this test only: a new
// schema named in search_path, dropped when the test ends. It skips the test when
// WARDEN_TEST_POSTGRES_DSN is unset.
func postgresDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("WARDEN_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("WARDEN_TEST_POSTGRES_DSN is not set: skipping the PostgreSQL run (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "warden_cli_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to WARDEN_TEST_POSTGRES_DSN: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("WARDEN_TEST_POSTGRES_DSN: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// fixtureRevision is the policy revision the fixture guard is bound with.
const fixtureRevision = "sha256:3f2a9c1be0d47e6a5b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"

// run runs the command line in-process with the clock at the fixture's base time.
func (f fixture) run(t *testing.T, args ...string) result {
	t.Helper()
	return runWardenAt(t, f.base, args...)
}

// fixture is what populate put in a store.
type fixture struct {
	dsn  string
	base time.Time // "now" for the CLI: pending decisions were created 5m before it
	// pending decisions by role: live ones, and one that has expired.
	deploy, email, expired, staging, dev string
}

// dropEnd is a journal that loses completions, as a process killed while its tool ran
// would: the call is left "started, outcome unknown".
type dropEnd struct{ warden.Journal }

func (dropEnd) End(context.Context, warden.JournalRef, warden.Call, warden.Outcome) error {
	return nil
}

// fixtureGuard binds the fixture's tools to a journal.
func fixtureGuard(t *testing.T, j warden.Journal) *warden.Guard {
	t.Helper()
	checker := warden.CheckerFunc(func(_ context.Context, req warden.Request) (warden.Decision, error) {
		switch req.Target {
		case "bash":
			if cmd, _ := req.Args.String("command"); strings.Contains(cmd, "rm ") {
				return warden.Decision{Effect: warden.Deny, RuleID: "no-rm", Reason: "security:destructive", Rationale: "rm is not allowed"}, nil
			}
		case "wipe":
			return warden.Decision{Effect: warden.Halt, RuleID: "no-wipe", Reason: "security:wipe", Rationale: "wiping ends the run"}, nil
		}
		return warden.Decision{Effect: warden.Allow}, nil
	})
	ok := func(v any) warden.ToolFunc {
		return func(context.Context, warden.Args, *warden.Credential) (any, error) { return v, nil }
	}
	tools := []warden.Executable{
		{Tool: warden.Tool{Name: "read_file", Description: "Reads a file."}, Run: ok("# Warden\n")},
		{Tool: warden.Tool{Name: "bash", Description: "Runs a command."}, Run: ok("")},
		{Tool: warden.Tool{Name: "wipe", Description: "Wipes a database."}, Run: ok("")},
		{Tool: warden.Tool{Name: "flaky", Description: "Fails."}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
			return nil, errors.New("connection reset by peer")
		}},
		{Tool: warden.Tool{Name: "slow", Description: "Takes its time."}, Run: ok("done")},
		{Tool: warden.Tool{Name: "deploy", Description: "Deploys the service."}, Run: ok("deployed"),
			CheckIn: &warden.CheckIn{Question: "Deploy this version?"}},
		{Tool: warden.Tool{Name: "send_email", Description: "Sends an email."}, Run: ok("sent"),
			CheckIn: &warden.CheckIn{}},
	}
	r := &warden.Registry{}
	for _, x := range tools {
		if err := r.Register(x); err != nil {
			t.Fatal(err)
		}
	}
	clock := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC) // durations are 0 with a fixed clock
	g, err := r.Bind(warden.Config{
		Checkers: []warden.Checker{checker},
		Journal:  j,
		Revision: fixtureRevision,
		CanPause: true,
		Now:      func() time.Time { return clock },
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// pendingFromOutcome is what a front end stores when a call must wait for a person.
func pendingFromOutcome(t *testing.T, o warden.Outcome, id string, created, expires time.Time) store.Pending {
	t.Helper()
	p := o.Pending
	if p == nil {
		t.Fatalf("call to %s did not pend: %s %s", o.Tool, o.Status, o.ModelText)
	}
	resume, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	sp := store.Pending{
		ID: id, Kind: p.Kind, Question: p.Question, Detail: p.Detail, Tool: p.Tool,
		Args: p.Args.AppendJSON(nil), Digest: p.Digest, Identity: p.Identity,
		Session: p.Session, Revision: p.Revision, Created: created, Expires: expires,
		Decision: resume,
	}
	if p.Evidence != nil {
		if sp.Evidence, err = json.Marshal(p.Evidence); err != nil {
			t.Fatal(err)
		}
	}
	return sp
}

// populate fills a new store through the fixture guard: calls that ran, were refused,
// halted, failed, are pending (with their decisions stored) and one that started and
// never completed. Run the CLI on it with f.run, whose clock is the fixture's base time.
func populate(t *testing.T, dsn string) fixture {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	defer s.Close()
	g := fixtureGuard(t, audit.NewJournal(s, nil))
	crashed := fixtureGuard(t, dropEnd{audit.NewJournal(s, nil)})

	f := fixture{dsn: dsn, base: time.Now().UTC().Truncate(time.Second),
		deploy: "apv_aaaaaaaaaaaaaaaa", email: "apv_bbbbbbbbbbbbbbbb", expired: "apv_cccccccccccccccc",
		staging: "apv_dddddddddddddddd", dev: "apv_eeeeeeeeeeeeeeee"}
	ann := warden.Identity{Tenant: "acme", Principal: "ann", Conversation: "c-17"}
	bob := warden.Identity{Tenant: "acme", Principal: "bob"}
	carol := warden.Identity{Principal: "carol"}

	call := func(g *warden.Guard, c warden.Call, want warden.Status) warden.Outcome {
		t.Helper()
		o, err := g.Call(ctx, c)
		var halt *warden.PolicyHaltError
		if err != nil && !errors.As(err, &halt) {
			t.Fatalf("call %s: %v", c.ID, err)
		}
		if o.Status != want {
			t.Fatalf("call %s: status %s, want %s (%s)", c.ID, o.Status, want, o.ModelText)
		}
		return o
	}
	pend := func(o warden.Outcome, id string, created, expires time.Time) {
		t.Helper()
		if _, err := s.CreatePending(ctx, pendingFromOutcome(t, o, id, created, expires)); err != nil {
			t.Fatalf("CreatePending %s: %v", id, err)
		}
	}
	A := warden.MustParseArgs
	created, expires := f.base.Add(-5*time.Minute), f.base.Add(time.Hour)

	call(g, warden.Call{ID: "call-01", Tool: "read_file", Args: A(`{"path":"README.md"}`), Identity: ann, Session: "s-1"}, warden.StatusRan)
	call(g, warden.Call{ID: "call-02", Tool: "bash", Args: A(`{"command":"rm -rf /"}`), Identity: bob, Session: "s-2"}, warden.StatusRefused)
	o := call(g, warden.Call{ID: "call-03", Tool: "deploy", Args: A(`{"env":"prod","version":"1.4.2"}`), Identity: ann, Session: "s-1",
		Context: []string{"user: ship 1.4.2 to prod", "assistant: running the deploy"}}, warden.StatusPending)
	pend(o, f.deploy, created, expires)
	call(g, warden.Call{ID: "call-04", Tool: "wipe", Args: A(`{"target":"db"}`), Identity: bob, Session: "s-2"}, warden.StatusHalted)
	call(g, warden.Call{ID: "call-05", Tool: "flaky", Args: A(`{}`), Identity: ann}, warden.StatusFailed)
	o = call(g, warden.Call{ID: "call-06", Tool: "send_email", Args: A(`{"to":"ops@example.com","subject":"Deploy done"}`), Identity: bob, Session: "s-2"}, warden.StatusPending)
	pend(o, f.email, created.Add(time.Second), expires)
	o = call(g, warden.Call{ID: "call-07", Tool: "deploy", Args: A(`{"env":"qa"}`), Identity: ann, Session: "s-1"}, warden.StatusPending)
	pend(o, f.expired, f.base.Add(-10*time.Minute), f.base.Add(-time.Minute))
	call(crashed, warden.Call{ID: "call-08", Tool: "slow", Args: A(`{"n":1}`), Identity: ann, Session: "s-1"}, warden.StatusRan)
	o = call(g, warden.Call{ID: "call-09", Tool: "deploy", Args: A(`{"env":"staging"}`), Identity: carol}, warden.StatusPending)
	pend(o, f.staging, created.Add(2*time.Second), time.Time{})
	o = call(g, warden.Call{ID: "call-10", Tool: "deploy", Args: A(`{"env":"dev"}`), Identity: carol}, warden.StatusPending)
	pend(o, f.dev, created.Add(3*time.Second), expires)
	call(g, warden.Call{ID: "call-11", Tool: "bash", Args: A(`{"command":"go test ./..."}`), Identity: bob, Session: "s-2"}, warden.StatusRan)

	t.Setenv("WARDEN_STORE", dsn)
	return f
}

var (
	humanTimeRE = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`)
	jsonTimeRE  = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"`)
	hashRE      = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
)

// normalize replaces what differs from run to run (wall-clock times, hashes over them)
// with placeholders of the same width, so tables stay aligned.
func normalize(s string) string {
	s = humanTimeRE.ReplaceAllString(s, "YYYY-MM-DD hh:mm:ssZ")
	s = jsonTimeRE.ReplaceAllString(s, `"<time>"`)
	return hashRE.ReplaceAllStringFunc(s, func(h string) string {
		if strings.Contains(fixtureRevision, h) {
			return h
		}
		return "<hash>"
	})
}

// session runs commands in order and returns their transcripts, normalized.
func session(t *testing.T, f fixture, cmds [][]string) string {
	t.Helper()
	var b strings.Builder
	for i, args := range cmds {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(f.run(t, args...).transcript(args))
	}
	return normalize(b.String())
}

// TestAuditGolden pins the audit table, its filters, the JSON lines and verify, on
// every store.
func TestAuditGolden(t *testing.T) {
	for _, ts := range testStores() {
		t.Run(ts.name, func(t *testing.T) {
			f := populate(t, ts.dsn(t))
			got := session(t, f, [][]string{
				{"audit"},
				{"audit", "--json"},
				{"audit", "--status", "refused"},
				{"audit", "--status", "started"},
				{"audit", "--tool", "READ_*"},
				{"audit", "--tool", "?ash", "--principal", "bob"},
				{"audit", "--principal", "nobody"},
				{"audit", "--limit", "2"},
				{"audit", "--since", "1h", "--status", "halted", "--json"},
				{"audit", "--since", "7d", "--limit", "0", "--status", "pending"},
				{"audit", "--status", "exploded"},
				{"audit", "--since", "-5m"},
				{"audit", "--limit", "-1"},
				{"audit", "verify"},
				{"audit", "verify", "--json"},
			})
			golden(t, "audit-session", got)
		})
	}
}

// TestAuditJSONLines checks that --json prints one valid object per call, with every
// key, in the store's order.
func TestAuditJSONLines(t *testing.T) {
	f := populate(t, testStores()[0].dsn(t))
	r := f.run(t, "audit", "--json", "--limit", "0")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 11 {
		t.Fatalf("got %d lines, want 11 (one per call):\n%s", len(lines), r.stdout)
	}
	var prev int64
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not a JSON object: %v\n%s", i+1, err, l)
		}
		if len(m) != 22 {
			t.Errorf("line %d has %d keys, want 22: %s", i+1, len(m), l)
		}
		seq := int64(m["seq"].(float64))
		if seq <= prev {
			t.Errorf("line %d: seq %d after %d; want oldest first", i+1, seq, prev)
		}
		prev = seq
		if want := fmt.Sprintf("call-%02d", i+1); m["call_id"] != want {
			t.Errorf("line %d: call_id %v, want %s", i+1, m["call_id"], want)
		}
	}
}

// TestAuditVerifyTampered checks that verify exits 3 and names the first bad entry,
// for an edited entry and for a deleted one.
func TestAuditVerifyTampered(t *testing.T) {
	for _, ts := range testStores() {
		for _, op := range []string{"edit", "delete"} {
			t.Run(ts.name+"/"+op, func(t *testing.T) { verifyTampered(t, ts, op) })
		}
	}
}

func verifyTampered(t *testing.T, ts testStore, op string) {
	f := populate(t, ts.dsn(t))
	s, err := store.Open(context.Background(), f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	tamper := sqlitetest.TamperAudit
	if ts.name == "postgres" {
		tamper = postgrestest.TamperAudit
	}
	if err := tamper(context.Background(), f.dsn, 4, op); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got := session(t, f, [][]string{{"audit", "verify"}, {"audit", "verify", "--json"}})
	golden(t, "audit-verify-"+op, got)
}

// TestStoreFlag checks where the commands find their store: --store, then
// $WARDEN_STORE, then ./warden.db; a SQLite file that does not exist is an error (exit
// 2), not a new empty log that verifies.
func TestStoreFlag(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.db")
	t.Setenv("WARDEN_STORE", "")
	t.Chdir(dir)
	for _, args := range [][]string{
		{"audit", "verify"},
		{"audit"},
		{"approvals", "list"},
		{"approvals", "show", "apv_x"},
		{"approvals", "approve", "apv_x", "--by", "ann"},
	} {
		r := runWarden(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "no store at ./warden.db") {
			t.Errorf("%v with no store: exit %d, stderr %q; want exit 2 naming ./warden.db", args, r.code, r.stderr)
		}
		r = runWarden(t, append(args, "--store", "sqlite://"+missing)...)
		if r.code != 2 || !strings.Contains(r.stderr, "no store at "+missing) {
			t.Errorf("%v --store missing: exit %d, stderr %q; want exit 2 naming the file", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "warden.db")); err == nil {
		t.Error("a read-only command created ./warden.db")
	}

	r := runWarden(t, "audit", "--store", "mysql://x")
	if r.code != 2 || !strings.Contains(r.stderr, `no store registered for scheme "mysql"`) {
		t.Errorf("unknown scheme: exit %d, stderr %q", r.code, r.stderr)
	}

	// $WARDEN_STORE is used when --store is not given; --store wins over it.
	f := populate(t, testStores()[0].dsn(t))
	if r := f.run(t, "audit", "verify"); r.code != 0 || !strings.Contains(r.stdout, "OK: 14 entries") {
		t.Errorf("verify via $WARDEN_STORE: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, "audit", "verify", "--store", "sqlite://"+missing); r.code != 2 {
		t.Errorf("--store did not win over $WARDEN_STORE: exit %d", r.code)
	}
	t.Setenv("WARDEN_STORE", "")
	if r := f.run(t, "approvals", "list", "--store", f.dsn); r.code != 0 || !strings.Contains(r.stdout, f.deploy) {
		t.Errorf("approvals list --store: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "warden.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runWarden(t, "audit", "verify"); r.code != 0 || !strings.Contains(r.stdout, "OK: 0 entries") {
		t.Errorf("verify of ./warden.db by default: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Duration{"90m": 90 * time.Minute, "1h30m": 90 * time.Minute, "7d": 7 * 24 * time.Hour, "1d": 24 * time.Hour} {
		if got, err := parseSince(in); err != nil || got != want {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1h", "0d", "-2d", "d", "1w", "soon"} {
		if got, err := parseSince(in); err == nil {
			t.Errorf("parseSince(%q) = %v; want an error", in, got)
		}
	}
}

func TestHumanFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 0: "0s", 42 * time.Second: "42s", 5*time.Minute + 59*time.Second: "5m",
		3*time.Hour + 7*time.Minute: "3h07m", 52 * time.Hour: "2d04h",
	} {
		if got := age(d); got != want {
			t.Errorf("age(%v) = %q, want %q", d, got, want)
		}
	}
	at := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for exp, want := range map[time.Time]string{
		{}: "never", at.Add(90 * time.Second): "in 1m", at.Add(-3 * time.Minute): "expired 3m ago", at: "expired 0s ago",
	} {
		if got := expiresIn(exp, at); got != want {
			t.Errorf("expiresIn(%v) = %q, want %q", exp, got, want)
		}
	}
	if got := oneLine("first line\nsecond", 60); got != "first line…" {
		t.Errorf("oneLine = %q", got)
	}
	if got := oneLine(strings.Repeat("é", 70), 60); got != strings.Repeat("é", 59)+"…" {
		t.Errorf("oneLine long = %q", got)
	}
	// A tab or line break is shown as an escape, not a space: a space would hide it.
	if got := dash("a\tb\nc"); got != `a\u0009b\u000ac` {
		t.Errorf("dash = %q", got)
	}
	if got := shortRevision(fixtureRevision); got != "3f2a9c1be0d4" {
		t.Errorf("shortRevision = %q", got)
	}
	if got := shortRevision("v7"); got != "v7" {
		t.Errorf("shortRevision(v7) = %q", got)
	}
}

// TestAuditVerifyKeptHead checks `warden audit verify` against a head kept outside the
// database: the head the log has now verifies (from --head and from a head file in
// the gateway's format); once the newest entries are deleted and the chain head
// rewound, the kept head is tampering (exit 3) though the log alone still verifies.
func TestAuditVerifyKeptHead(t *testing.T) {
	for _, ts := range testStores() {
		t.Run(ts.name, func(t *testing.T) {
			f := populate(t, ts.dsn(t))
			s, err := store.Open(context.Background(), f.dsn)
			if err != nil {
				t.Fatal(err)
			}
			head, err := s.AuditHead(context.Background())
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "head.json")
			if err := os.WriteFile(file, []byte(fmt.Sprintf(`{"seq":%d,"hash":%q,"time":"2026-12-02T10:00:00Z"}`+"\n", head.Seq, head.Hash)), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"--head", head.Hash}, {"--head-file", file}} {
				if r := f.run(t, append([]string{"audit", "verify"}, args...)...); r.code != 0 || !strings.Contains(r.stdout, "OK") {
					t.Errorf("verify %v against the current head: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
				}
			}
			if r := f.run(t, "audit", "verify", "--head", strings.Repeat("ab", 32)); r.code != 3 {
				t.Errorf("verify --head of a hash not in the chain: exit %d, want %d\n%s%s", r.code, 3, r.stdout, r.stderr)
			}
			tamper := sqlitetest.TamperAudit
			if ts.name == "postgres" {
				tamper = postgrestest.TamperAudit
			}
			if err := tamper(context.Background(), f.dsn, head.Seq-2, "truncate"); err != nil {
				t.Fatal(err)
			}
			if r := f.run(t, "audit", "verify"); r.code != 0 {
				t.Errorf("after a truncation with the head rewound the log alone verifies (exit %d, want 0): only a kept head can tell\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, args := range [][]string{{"--head", head.Hash}, {"--head-file", file}} {
				if r := f.run(t, append([]string{"audit", "verify"}, args...)...); r.code != 3 {
					t.Errorf("verify %v after the tail was deleted and the head rewound: exit %d, want 3 (tampering)\n%s%s", args, r.code, r.stdout, r.stderr)
				}
			}
			if r := f.run(t, "audit", "verify", "--head", head.Hash, "--head-file", file); r.code != exitUsage {
				t.Errorf("verify with both --head and --head-file: exit %d, want %d", r.code, exitUsage)
			}
			if err := os.WriteFile(file, []byte("not json\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if r := f.run(t, "audit", "verify", "--head-file", file); r.code != exitUsage || !strings.Contains(r.stderr, file) {
				t.Errorf("verify --head-file of a broken file: exit %d, stderr %q; want %d naming the file", r.code, r.stderr, exitUsage)
			}
		})
	}
}
