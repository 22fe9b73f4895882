package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/store"
)

func TestOpenUnknownScheme(t *testing.T) {
	for _, dsn := range []string{"mysql://x", "nope", "://x"} {
		_, err := store.Open(context.Background(), dsn)
		if err == nil {
			t.Errorf("Open(%q) succeeded", dsn)
		}
	}
	_, err := store.Open(context.Background(), "secret://user:hunter2@host/db")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open error %v: want an error that does not quote the password", err)
	}
	_, err = store.Open(context.Background(), "no-scheme-user:hunter2@host")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open error %v: want an error that does not quote the password", err)
	}
}

func TestRegister(t *testing.T) {
	errTest := errors.New("opened")
	var got string
	store.Register("storetest-fake", func(ctx context.Context, dsn string) (store.Store, error) {
		got = dsn
		return nil, errTest
	})
	if _, err := store.Open(context.Background(), "StoreTest-Fake://a/b?c=d"); !errors.Is(err, errTest) {
		t.Fatalf("Open did not reach the registered opener: %v", err)
	}
	if got != "StoreTest-Fake://a/b?c=d" {
		t.Errorf("opener got DSN %q, want it whole", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a scheme twice did not panic")
		}
	}()
	store.Register("storetest-fake", func(context.Context, string) (store.Store, error) { return nil, nil })
}

func TestNewPendingID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := store.NewPendingID()
		if len(id) != 20 || !strings.HasPrefix(id, "apv_") || strings.Trim(id[4:], "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("ID %q: want apv_ and 16 lower-case base32 characters", id)
		}
		if seen[id] {
			t.Fatalf("ID %q twice", id)
		}
		seen[id] = true
	}
}
