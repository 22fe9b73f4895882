// Package postgrestest damages a PostgreSQL store's audit log on purpose, for tests that
// prove [store.Store.VerifyAudit] (and what shows its report) notices. It is its own
// package so that no production type carries a test hook: it reaches the database over
// a connection of its own, the way an attacker with write access would.
//
// Nothing outside tests may import it.
package postgrestest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/store"
)

// TamperAudit changes the audit log of the store in the database named by dsn (the DSN
// the store was opened with, search_path included) without fixing the hash chain: op
// "edit" changes the rationale of the entry numbered seq, op "delete" removes it, op
// "truncate" removes it and every newer entry and rewinds the recorded chain head to
// entry seq-1 (what covers a deleted tail from the log alone), op "drop-head" removes
// it, every newer entry and the chain-head record. It
// disables the append-only trigger inside its own transaction only. A seq with no entry
// is [store.ErrNotFound].
func TamperAudit(ctx context.Context, dsn string, seq int64, op string) error {
	var stmt, after string
	switch op {
	case "edit":
		stmt = `UPDATE warden_audit SET rationale = rationale || ' (edited)' WHERE seq = $1`
	case "delete":
		stmt = `DELETE FROM warden_audit WHERE seq = $1`
	case "truncate":
		stmt = `DELETE FROM warden_audit WHERE seq >= $1`
		after = `UPDATE warden_audit_head SET seq = $1::bigint - 1, hash = coalesce((SELECT hash FROM warden_audit WHERE seq = $1::bigint - 1), '') WHERE id = 1`
	case "drop-head":
		stmt = `DELETE FROM warden_audit WHERE seq >= $1`
		after = `DELETE FROM warden_audit_head WHERE $1::bigint > 0`
	default:
		return fmt.Errorf("postgrestest: unknown tamper op %q (want edit, delete, truncate or drop-head)", op)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `ALTER TABLE warden_audit DISABLE TRIGGER warden_audit_no_change`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, stmt, seq)
		if err != nil {
			return err
		}
		if tag.RowsAffected() < 1 {
			return fmt.Errorf("%w: audit entry %d", store.ErrNotFound, seq)
		}
		if after != "" {
			if _, err := tx.Exec(ctx, after, seq); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `ALTER TABLE warden_audit ENABLE TRIGGER warden_audit_no_change`)
		return err
	})
}

// RefuseAudit makes the PostgreSQL store in the database named by dsn (search_path
// included) refuse every new audit entry (refuse=true), as a full disk refuses a
// growing table while a small update still fits, or accept them again
// (refuse=false). It adds (or drops) a trigger over a connection of its own.
func RefuseAudit(ctx context.Context, dsn string, refuse bool) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	stmt := `DROP TRIGGER IF EXISTS postgrestest_refuse_audit ON warden_audit`
	if refuse {
		stmt = `CREATE OR REPLACE FUNCTION postgrestest_refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				RAISE EXCEPTION 'audit entry refused by postgrestest.RefuseAudit (a stand-in for a full disk)';
			END
			$$;
			CREATE TRIGGER postgrestest_refuse_audit BEFORE INSERT ON warden_audit
				FOR EACH ROW EXECUTE FUNCTION postgrestest_refuse_audit()`
	}
	_, err = conn.Exec(ctx, stmt)
	return err
}
