// Package sqlitetest damages a SQLite store's audit log on purpose, for tests that prove
// [store.Store.VerifyAudit] (and what shows its report) notices. It is its own package
// so that no production type carries a test hook: it reaches the database file over a
// connection of its own, the way an attacker with write access to the file would.
//
// Nothing outside tests may import it.
package sqlitetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/sqlite"
)

// TamperAudit changes the audit log of the SQLite database named by dsn (a
// "sqlite://PATH" DSN, as [store.Open] takes) without fixing the hash chain: op "edit"
// changes the rationale of the entry numbered seq, op "delete" removes it, op
// "truncate" removes it and every newer entry and rewinds the recorded chain head to
// entry seq-1 (what covers a deleted tail from the log alone), op "drop-head" removes
// it, every newer entry and the chain-head record. It lifts the
// append-only triggers for that one statement and puts them back in the same
// transaction. A seq with no entry is [store.ErrNotFound]. The database may be open in
// a [sqlite.Store] meanwhile.
func TamperAudit(ctx context.Context, dsn string, seq int64, op string) (err error) {
	var stmts []string
	switch op {
	case "edit":
		stmts = []string{`UPDATE audit SET rationale = rationale || ' (edited)' WHERE seq = ?1`}
	case "delete":
		stmts = []string{`DELETE FROM audit WHERE seq = ?1`}
	case "truncate":
		stmts = []string{`DELETE FROM audit WHERE seq >= ?1`,
			`UPDATE audit_head SET seq = ?1 - 1, hash = coalesce((SELECT hash FROM audit WHERE seq = ?1 - 1), '') WHERE id = 1`}
	case "drop-head":
		stmts = []string{`DELETE FROM audit WHERE seq >= ?1`, `DELETE FROM audit_head WHERE ?1 > 0`}
	default:
		return fmt.Errorf("sqlitetest: unknown tamper op %q (want edit, delete, truncate or drop-head)", op)
	}
	path, _, err := sqlite.ParseDSN(dsn)
	if err != nil {
		return err
	}
	params := url.Values{}
	params.Set("_busy_timeout", "10000")
	params.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE seq = ?`, seq).Scan(&n); err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%w: audit entry %d", store.ErrNotFound, seq)
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'audit'`)
	if err != nil {
		return err
	}
	var names, defs []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return err
		}
		names, defs = append(names, name), append(defs, def)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, name := range names {
		if _, err := tx.ExecContext(ctx, `DROP TRIGGER "`+name+`"`); err != nil {
			return err
		}
	}
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt, seq); err != nil {
			return err
		}
	}
	for _, def := range defs {
		if _, err := tx.ExecContext(ctx, def); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// RefuseAudit makes the SQLite database named by dsn refuse every new audit entry
// (refuse=true), as a full disk refuses a growing table while a small update still
// fits, or accept them again (refuse=false). It adds (or drops) a trigger over a
// connection of its own; the database may be open in a [sqlite.Store] meanwhile.
func RefuseAudit(ctx context.Context, dsn string, refuse bool) error {
	path, _, err := sqlite.ParseDSN(dsn)
	if err != nil {
		return err
	}
	params := url.Values{}
	params.Set("_busy_timeout", "10000")
	db, err := sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	stmt := `DROP TRIGGER IF EXISTS sqlitetest_refuse_audit`
	if refuse {
		stmt = `CREATE TRIGGER sqlitetest_refuse_audit BEFORE INSERT ON audit
			BEGIN SELECT RAISE(ABORT, 'audit entry refused by sqlitetest.RefuseAudit (a stand-in for a full disk)'); END`
	}
	_, err = db.ExecContext(ctx, stmt)
	return err
}
