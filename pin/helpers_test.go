package pin

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/sqlite"
)

// openPinStore opens a SQLite store in t.TempDir, closed when the test ends.
func openPinStore(t *testing.T) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
