-- The audit chain: one row per entry (see store.Entry). seq is assigned by the single
-- writer, never by SQLite, because it is part of the hashed content.
CREATE TABLE audit (
	seq          INTEGER PRIMARY KEY,
	kind         TEXT    NOT NULL CHECK (kind IN ('intent', 'complete', 'record')),
	ref          INTEGER NOT NULL,
	at           INTEGER NOT NULL, -- unix microseconds, UTC
	call_id      TEXT    NOT NULL,
	session      TEXT    NOT NULL,
	tool         TEXT    NOT NULL,
	tenant       TEXT    NOT NULL,
	principal    TEXT    NOT NULL,
	conversation TEXT    NOT NULL,
	args_digest  TEXT    NOT NULL,
	args         BLOB,             -- NULL when redacted
	stage        TEXT    NOT NULL,
	effect       TEXT    NOT NULL,
	rule_id      TEXT    NOT NULL,
	rationale    TEXT    NOT NULL,
	reason       TEXT    NOT NULL,
	revision     TEXT    NOT NULL,
	executed     INTEGER NOT NULL,
	status       TEXT    NOT NULL,
	duration_ns  INTEGER NOT NULL,
	result_size  INTEGER NOT NULL,
	approved_by  TEXT    NOT NULL,
	prev_hash    TEXT    NOT NULL,
	hash         TEXT    NOT NULL
) STRICT;

-- The newest entry, kept apart from the entries: appends continue from it, and
-- VerifyAudit compares it with the last entry, so deleting the newest entries shows.
CREATE TABLE audit_head (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	seq  INTEGER NOT NULL,
	hash TEXT    NOT NULL
) STRICT;
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '');

-- At most one completion per intent, and only of an intent.
CREATE UNIQUE INDEX audit_completion ON audit (ref) WHERE kind = 'complete';
CREATE TRIGGER audit_completion_of_intent BEFORE INSERT ON audit WHEN NEW.kind = 'complete'
BEGIN
	SELECT RAISE(ABORT, 'a completion must refer to an intent entry')
	WHERE NOT EXISTS (SELECT 1 FROM audit WHERE seq = NEW.ref AND kind = 'intent');
END;
-- Since filters read intents and records only; completions need no time index.
CREATE INDEX audit_at ON audit (at) WHERE kind <> 'complete';

-- Append-only: a guard against mistakes, not against an attacker (who can drop the
-- triggers); the hash chain is what makes tampering evident.
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN
	SELECT RAISE(ABORT, 'the warden audit log is append-only');
END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN
	SELECT RAISE(ABORT, 'the warden audit log is append-only');
END;

CREATE TABLE pending (
	id             TEXT    PRIMARY KEY,
	kind           TEXT    NOT NULL,
	question       TEXT    NOT NULL,
	detail         TEXT    NOT NULL,
	tool           TEXT    NOT NULL,
	args           BLOB,
	digest         TEXT    NOT NULL,
	evidence       BLOB,
	tenant         TEXT    NOT NULL,
	principal      TEXT    NOT NULL,
	conversation   TEXT    NOT NULL,
	session        TEXT    NOT NULL,
	revision       TEXT    NOT NULL,
	created        INTEGER NOT NULL, -- unix microseconds
	expires        INTEGER NOT NULL, -- unix microseconds; 0: never
	state          TEXT    NOT NULL CHECK (state IN ('pending', 'approved', 'declined')),
	scope          TEXT    NOT NULL CHECK (scope IN ('once', 'session')),
	session_ttl_ns INTEGER NOT NULL,
	decided_by     TEXT    NOT NULL,
	note           TEXT    NOT NULL,
	decided_at     INTEGER NOT NULL, -- unix microseconds; 0: undecided
	consumed       INTEGER NOT NULL,
	decision       BLOB
) STRICT;

CREATE INDEX pending_state ON pending (state, created);
CREATE INDEX pending_approved ON pending (digest, scope) WHERE state = 'approved';

CREATE TABLE checkpoints (
	id      TEXT    PRIMARY KEY,
	data    BLOB    NOT NULL,
	updated INTEGER NOT NULL
) STRICT;

CREATE TABLE pins (
	name         TEXT    PRIMARY KEY,
	hash         TEXT    NOT NULL,
	definition   BLOB,
	approved     INTEGER NOT NULL,
	approved_by  TEXT    NOT NULL,
	updated      INTEGER NOT NULL,
	pending      BLOB,
	pending_hash TEXT    NOT NULL
) STRICT;
