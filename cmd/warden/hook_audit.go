package main

// The store helpers warden run shares with the hook (package hook/cli).

import (
	"context"

	"github.com/wardenhq/warden/hook/cli"
	"github.com/wardenhq/warden/store"
)

// openHookStore opens the store at dsn, creating it on first use, as the hook does;
// the caller closes it.
func openHookStore(ctx context.Context, dsn string) (store.Store, error) {
	return cli.OpenStore(ctx, dsn)
}

// storeFiles are the files of a sqlite:// store (the database and SQLite's journal
// files beside it), absolute; none for another scheme.
func storeFiles(dsn string) ([]string, error) { return cli.StoreFiles(dsn) }
