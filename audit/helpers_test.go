package audit_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/postgres"
	_ "github.com/wardenhq/warden/store/sqlite"
)

// A storeKind makes fresh, empty stores of one implementation for a test.
type storeKind struct {
	name string
	dsn  func(t testing.TB) string
}

// storeKinds lists the stores every reliability test runs against. PostgreSQL tests
// skip when WARDEN_TEST_POSTGRES_DSN is unset.
var storeKinds = []storeKind{
	{"sqlite", sqliteDSN},
	{"postgres", postgresDSN},
}

// forEachStore runs fn as a subtest per store kind, with a fresh store's DSN.
func forEachStore(t *testing.T, fn func(t *testing.T, dsn string)) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) { fn(t, k.dsn(t)) })
	}
}

// sqliteDSN names a new database file in the test's temporary directory.
func sqliteDSN(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "warden.db")
}

// postgresBase returns WARDEN_TEST_POSTGRES_DSN or skips the test.
func postgresBase(t testing.TB) string {
	t.Helper()
	base := os.Getenv("WARDEN_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("WARDEN_TEST_POSTGRES_DSN is not set: skipping the PostgreSQL run (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return base
}

// postgresDSN isolates a test in its own schema: it creates a schema with a random
// name, returns the server's DSN with search_path set to it, and drops the schema when
// the test ends.
func postgresDSN(t testing.TB) string {
	t.Helper()
	return postgresDSNVia(t, postgresBase(t), "")
}

// postgresDSNVia is postgresDSN with the returned DSN's host:port replaced by hostPort
// (a proxy), when hostPort is set. The schema is created and dropped directly.
func postgresDSNVia(t testing.TB, base, hostPort string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "warden_audit_" + hex.EncodeToString(b[:])
	pgExec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { pgExec(t, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("WARDEN_TEST_POSTGRES_DSN: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	if hostPort != "" {
		u.Host = hostPort
	}
	return u.String()
}

func pgExec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// openStore opens dsn and closes the store when the test ends.
func openStore(t testing.TB, dsn string) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newGuard binds tools to a guard that journals to j (no journal when j is nil). The
// guard has no checkers, so every call to a registered tool is allowed, and cannot
// pause.
func newGuard(t testing.TB, j warden.Journal, tools ...warden.Executable) *warden.Guard {
	t.Helper()
	r := &warden.Registry{}
	for _, x := range tools {
		if err := r.Register(x); err != nil {
			t.Fatal(err)
		}
	}
	cfg := warden.Config{Ungoverned: true, Revision: "rev-test"}
	if j != nil {
		cfg.Journal = j
	}
	g, err := r.Bind(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// journalGuard is newGuard with audit.NewJournal(s, nil).
func journalGuard(t testing.TB, s store.Store, tools ...warden.Executable) *warden.Guard {
	t.Helper()
	return newGuard(t, audit.NewJournal(s, nil), tools...)
}

// countingTool returns a trivial tool that counts its runs.
func countingTool(name string, runs *atomicCounter) warden.Executable {
	return warden.Executable{Tool: warden.Tool{Name: name, Description: "Counts."},
		Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
			runs.add()
			return "ok", nil
		}}
}

type atomicCounter struct {
	mu sync.Mutex
	n  int
}

func (c *atomicCounter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *atomicCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// verifyOK fails the test unless the store's chain verifies.
func verifyOK(t testing.TB, s store.Store) store.VerifyReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	r, err := s.VerifyAudit(ctx)
	if err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	if !r.OK {
		t.Fatalf("VerifyAudit: entry %d: %s (%d entries)", r.FirstBad, r.Problem, r.Entries)
	}
	return r
}

// crashprogDir holds the built crashprog; TestMain removes it.
var crashprogDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if crashprogDir != "" {
		os.RemoveAll(crashprogDir)
	}
	os.Exit(code)
}

// crashprog builds testdata/crashprog once per test binary and returns its path.
var crashprog = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "warden-crashprog-")
	if err != nil {
		return "", err
	}
	crashprogDir = dir
	bin := filepath.Join(dir, "crashprog")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/crashprog")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./testdata/crashprog: %v\n%s", err, out)
	}
	return bin, nil
})

// proc is a running crashprog.
type proc struct {
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line; closed at EOF
	stderr *strings.Builder
	mu     sync.Mutex
}

// startProg starts crashprog with args and kills it (if still running) when the test
// ends.
func startProg(t *testing.T, args ...string) *proc {
	t.Helper()
	bin, err := crashprog()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command(bin, args...), lines: make(chan string, 1024), stderr: &strings.Builder{}}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = lockedWriter{&p.mu, p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-done
		_ = p.cmd.Wait()
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// next returns the next line the program prints, failing the test after timeout.
func (p *proc) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("crashprog exited before printing what was expected; stderr:\n%s", p.stderrText())
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("crashprog printed nothing for %v; stderr:\n%s", timeout, p.stderrText())
	}
	return ""
}

// kill9 kills the program with SIGKILL and waits for it to be gone.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	for range p.lines { // drain until the pipe closes
	}
	err := p.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 || !strings.Contains(ee.String(), "killed") {
		t.Fatalf("crashprog did not die by SIGKILL: %v", err)
	}
}

// envInt reads a positive integer from the environment, or returns def.
func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
