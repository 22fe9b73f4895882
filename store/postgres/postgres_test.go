package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/postgres/postgrestest"
	"github.com/wardenhq/warden/store/storetest"
)

// testDSN returns the server to test against, or skips the test.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("WARDEN_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WARDEN_TEST_POSTGRES_DSN is not set; set it to a PostgreSQL URL (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL store tests")
	}
	return dsn
}

// freshSchema creates an empty schema that is dropped when t ends, and returns a DSN
// whose connections use it.
func freshSchema(t testing.TB) string {
	t.Helper()
	dsn := testDSN(t)
	var b [6]byte
	rand.Read(b[:])
	schema := "warden_test_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connecting to WARDEN_TEST_POSTGRES_DSN: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return withParam(t, dsn, "search_path", schema)
}

func withParam(t testing.TB, dsn, key, value string) string {
	u, err := url.Parse(dsn)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("WARDEN_TEST_POSTGRES_DSN must be a postgres:// URL: %q", dsn)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func openFresh(t testing.TB) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), freshSchema(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMain(m *testing.M) {
	storetest.HelperProcess()
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	testDSN(t)
	storetest.Run(t, newDSN, open, &storetest.Options{Tamper: postgrestest.TamperAudit, RefuseAudit: postgrestest.RefuseAudit})
}

func newDSN(t *testing.T) string { return freshSchema(t) }

// open is the suites' storetest.Opener: the store of dsn with the clock now.
func open(t *testing.T, dsn string, now func() time.Time) store.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn, &postgres.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestReplicas(t *testing.T) {
	testDSN(t)
	storetest.RunReplicas(t, newDSN, open)
}

func TestProcesses(t *testing.T) {
	testDSN(t)
	storetest.RunProcesses(t, newDSN, open)
}

// TestSoak is the long reliability run: 16 goroutines x 10,000 audited calls. It runs
// only when WARDEN_STORE_SOAK is set.
func TestSoak(t *testing.T) {
	testDSN(t)
	if os.Getenv("WARDEN_STORE_SOAK") == "" {
		t.Skip("set WARDEN_STORE_SOAK=1 to run 16 x 10,000 audited calls")
	}
	storetest.Soak(t, openFresh(t), 16, 10_000)
}

// TestConcurrentMigrations opens several stores on one new schema at once, as replicas
// starting together do: the advisory lock lets each migration apply once.
func TestConcurrentMigrations(t *testing.T) {
	dsn := freshSchema(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := store.Open(t.Context(), dsn)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM warden_schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("%d migrations recorded, want 4 (0001_init, 0002_checkpoint_claims, 0003_probe, 0004_shadow)", n)
	}
}

// BenchmarkAuditedCalls: audited calls per second in a fresh schema of
// WARDEN_TEST_POSTGRES_DSN; a call is BeginCall + EndCall (end=sync) or BeginCall +
// EndCallLater (end=later), made by one caller after another or by 16 at once.
func BenchmarkAuditedCalls(b *testing.B) {
	for _, end := range []struct {
		name  string
		bench func(*testing.B, store.Store, int)
	}{{"end=sync", storetest.BenchmarkAuditedCalls}, {"end=later", storetest.BenchmarkAuditedCallsLater}} {
		for _, callers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/callers=%d", end.name, callers), func(b *testing.B) {
				end.bench(b, openFresh(b), callers)
			})
		}
	}
}
