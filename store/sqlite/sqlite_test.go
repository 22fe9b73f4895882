package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/store/sqlite/sqlitetest"
	"github.com/wardenhq/warden/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.HelperProcess()
	os.Exit(m.Run())
}

func openTemp(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newDSN(t *testing.T) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "warden.db")
}

// open is the suites' storetest.Opener: the store of dsn with the clock now.
func open(t *testing.T, dsn string, now func() time.Time) store.Store {
	t.Helper()
	path, opts, err := sqlite.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	opts.Now = now
	s, err := sqlite.Open(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newDSN, open, &storetest.Options{Tamper: sqlitetest.TamperAudit, RefuseAudit: sqlitetest.RefuseAudit})
}

func TestReplicas(t *testing.T) { storetest.RunReplicas(t, newDSN, open) }

func TestProcesses(t *testing.T) { storetest.RunProcesses(t, newDSN, open) }

// TestSoak is the long reliability run: 16 goroutines x 10,000 audited calls. It runs
// only when WARDEN_STORE_SOAK is set.
func TestSoak(t *testing.T) {
	if os.Getenv("WARDEN_STORE_SOAK") == "" {
		t.Skip("set WARDEN_STORE_SOAK=1 to run 16 x 10,000 audited calls")
	}
	storetest.Soak(t, openTemp(t), 16, 10_000)
}

func TestParseDSN(t *testing.T) {
	cases := []struct {
		dsn     string
		path    string
		opts    sqlite.Options
		wantErr bool
	}{
		{dsn: "sqlite:///var/lib/warden/warden.db", path: "/var/lib/warden/warden.db"},
		{dsn: "sqlite://./warden.db", path: "./warden.db"},
		{dsn: "sqlite://warden.db", path: "warden.db"},
		{dsn: "sqlite://", path: "./warden.db"},
		{dsn: "sqlite:///tmp/my%20dir/w.db", path: "/tmp/my dir/w.db"},
		{dsn: "sqlite:///w.db?sync=normal&busy_timeout=2s", path: "/w.db", opts: sqlite.Options{AllowLossOnPowerFailure: true, BusyTimeout: 2e9}},
		{dsn: "sqlite:///w.db?sync=full", path: "/w.db"},
		{dsn: "sqlite:///w.db?write_timeout=300ms&commit_delay=5ms", path: "/w.db", opts: sqlite.Options{WriteTimeout: 300 * time.Millisecond, CommitDelay: 5 * time.Millisecond}},
		{dsn: "sqlite:///w.db?commit_delay=0", path: "/w.db", opts: sqlite.Options{CommitDelay: -1}},
		{dsn: "sqlite:///w.db?write_timeout=soon", wantErr: true},
		{dsn: "sqlite:///w.db?write_timeout=-1s", wantErr: true},
		{dsn: "sqlite:///w.db?commit_delay=x", wantErr: true},
		{dsn: "sqlite:///w.db?sync=off", wantErr: true},
		{dsn: "sqlite:///w.db?busy_timeout=soon", wantErr: true},
		{dsn: "sqlite:///w.db?journal=delete", wantErr: true},
		{dsn: "postgres://x", wantErr: true},
	}
	for _, c := range cases {
		path, opts, err := sqlite.ParseDSN(c.dsn)
		if c.wantErr {
			if err == nil {
				t.Errorf("ParseDSN(%q) succeeded, want an error", c.dsn)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", c.dsn, err)
			continue
		}
		if path != c.path || opts == nil || !cmp.Equal(*opts, c.opts) {
			t.Errorf("ParseDSN(%q) = %q, %+v; want %q, %+v", c.dsn, path, opts, c.path, c.opts)
		}
	}
}

func TestOpenByDSN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub-dir-is-not-created.db")
	s, err := store.Open(t.Context(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*sqlite.Store); !ok {
		t.Fatalf("store.Open returned %T", s)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database file not created: %v", err)
	}
	// Opening again applies no migration twice.
	s2, err := store.Open(t.Context(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}

// BenchmarkAuditedCalls: audited calls per second, on a file in a temporary directory,
// in both durability modes; a call is BeginCall + EndCall (end=sync) or BeginCall +
// EndCallLater (end=later), made by one caller after another or by 16 at once.
func BenchmarkAuditedCalls(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts *sqlite.Options
	}{
		{"sync=full", nil},
		{"sync=normal", &sqlite.Options{AllowLossOnPowerFailure: true}},
	} {
		for _, end := range []struct {
			name  string
			bench func(*testing.B, store.Store, int)
		}{{"end=sync", storetest.BenchmarkAuditedCalls}, {"end=later", storetest.BenchmarkAuditedCallsLater}} {
			for _, callers := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/%s/callers=%d", mode.name, end.name, callers), func(b *testing.B) {
					s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "warden.db"), mode.opts)
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					end.bench(b, s, callers)
				})
			}
		}
	}
}
