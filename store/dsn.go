package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// DefaultDSN is the store used when none is configured: a SQLite file in the working
// directory.
const DefaultDSN = "sqlite://./warden.db"

// Opener opens a store from a full DSN (scheme included). It is called by [Open].
type Opener func(ctx context.Context, dsn string) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{} // lower-case scheme -> opener
)

// Register makes an implementation available to [Open] under a DSN scheme ("sqlite",
// "postgres"). It is meant to be called from an implementation package's init, and
// panics when open is nil or the scheme is registered twice.
func Register(scheme string, open Opener) {
	scheme = strings.ToLower(scheme)
	if open == nil {
		panic("store: Register opener is nil for scheme " + scheme)
	}
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Schemes returns the registered DSN schemes, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	var s []string
	for k := range openers {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// Open opens the store named by dsn ([DefaultDSN] when empty):
//
//	sqlite:///abs/path/warden.db   an absolute path
//	sqlite://./warden.db           a path relative to the working directory
//	postgres://user@host/db?...    PostgreSQL (also postgresql://)
//
// The implementation must have been registered, normally by importing its package
// (store/sqlite, store/postgres). Open applies pending schema migrations before it
// returns.
func Open(ctx context.Context, dsn string) (Store, error) {
	if dsn == "" {
		dsn = DefaultDSN
	}
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || scheme == "" {
		// Not quoted: without a scheme there is no telling where a password might be.
		return nil, errors.New("store: the DSN has no scheme (want sqlite://PATH or postgres://...)")
	}
	openersMu.RLock()
	open := openers[strings.ToLower(scheme)]
	openersMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("store: no store registered for scheme %q (registered: %s); import its package, for example github.com/wardenhq/warden/store/%s",
			scheme, strings.Join(Schemes(), ", "), strings.ToLower(scheme))
	}
	return open(ctx, dsn)
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewPendingID returns a new random decision ID: "apv_" and 16 lower-case base32
// characters (80 random bits), safe in URLs and shell arguments.
func NewPendingID() string {
	var b [10]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return "apv_" + strings.ToLower(idEncoding.EncodeToString(b[:]))
}
