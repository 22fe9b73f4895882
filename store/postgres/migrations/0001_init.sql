-- The audit chain: one row per entry (see store.Entry). seq is assigned by the
-- appender holding the chain head, never by a sequence, because it is hashed.
CREATE TABLE warden_audit (
	seq          bigint      PRIMARY KEY,
	kind         text        NOT NULL CHECK (kind IN ('intent', 'complete', 'record')),
	ref          bigint      NOT NULL,
	at           timestamptz NOT NULL,
	call_id      text        NOT NULL,
	session      text        NOT NULL,
	tool         text        NOT NULL,
	tenant       text        NOT NULL,
	principal    text        NOT NULL,
	conversation text        NOT NULL,
	args_digest  text        NOT NULL,
	args         bytea,                 -- NULL when redacted
	stage        text        NOT NULL,
	effect       text        NOT NULL,
	rule_id      text        NOT NULL,
	rationale    text        NOT NULL,
	reason       text        NOT NULL,
	revision     text        NOT NULL,
	executed     boolean     NOT NULL,
	status       text        NOT NULL,
	duration_ns  bigint      NOT NULL,
	result_size  bigint      NOT NULL,
	approved_by  text        NOT NULL,
	prev_hash    text        NOT NULL,
	hash         text        NOT NULL
);

-- At most one completion per intent, and only of an intent.
CREATE UNIQUE INDEX warden_audit_completion ON warden_audit (ref) WHERE kind = 'complete';
CREATE FUNCTION warden_audit_completion_of_intent() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM warden_audit WHERE seq = NEW.ref AND kind = 'intent') THEN
		RAISE EXCEPTION 'audit entry % completes entry %, which is not an intent', NEW.seq, NEW.ref;
	END IF;
	RETURN NEW;
END
$$;
CREATE TRIGGER warden_audit_completion_of_intent BEFORE INSERT ON warden_audit
	FOR EACH ROW WHEN (NEW.kind = 'complete') EXECUTE FUNCTION warden_audit_completion_of_intent();
-- Since filters read intents and records only; completions need no time index.
CREATE INDEX warden_audit_at ON warden_audit (at) WHERE kind <> 'complete';

-- The newest entry, kept apart from the entries. Every append locks this row
-- (SELECT ... FOR UPDATE), which keeps the chain linear across replicas; VerifyAudit
-- compares it with the last entry, so deleting the newest entries shows.
CREATE TABLE warden_audit_head (
	id   integer PRIMARY KEY CHECK (id = 1),
	seq  bigint  NOT NULL,
	hash text    NOT NULL
);
INSERT INTO warden_audit_head (id, seq, hash) VALUES (1, 0, '');

-- Append-only: a guard against mistakes, not against an attacker (who can drop the
-- triggers); the hash chain is what makes tampering evident.
CREATE FUNCTION warden_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the warden audit log is append-only';
END
$$;
CREATE TRIGGER warden_audit_no_change BEFORE UPDATE OR DELETE ON warden_audit
	FOR EACH ROW EXECUTE FUNCTION warden_audit_append_only();
CREATE TRIGGER warden_audit_no_truncate BEFORE TRUNCATE ON warden_audit
	FOR EACH STATEMENT EXECUTE FUNCTION warden_audit_append_only();

CREATE TABLE warden_pending (
	id             text        PRIMARY KEY,
	kind           text        NOT NULL,
	question       text        NOT NULL,
	detail         text        NOT NULL,
	tool           text        NOT NULL,
	args           bytea,
	digest         text        NOT NULL,
	evidence       bytea,
	tenant         text        NOT NULL,
	principal      text        NOT NULL,
	conversation   text        NOT NULL,
	session        text        NOT NULL,
	revision       text        NOT NULL,
	created        timestamptz NOT NULL,
	expires        timestamptz,           -- NULL: never
	state          text        NOT NULL CHECK (state IN ('pending', 'approved', 'declined')),
	scope          text        NOT NULL CHECK (scope IN ('once', 'session')),
	session_ttl_ns bigint      NOT NULL,
	decided_by     text        NOT NULL,
	note           text        NOT NULL,
	decided_at     timestamptz,           -- NULL: undecided
	consumed       boolean     NOT NULL,
	decision       bytea
);

CREATE INDEX warden_pending_state ON warden_pending (state, created);
CREATE INDEX warden_pending_approved ON warden_pending (digest, scope) WHERE state = 'approved';

CREATE TABLE warden_checkpoints (
	id      text        PRIMARY KEY,
	data    bytea       NOT NULL,
	updated timestamptz NOT NULL
);

CREATE TABLE warden_pins (
	name         text        PRIMARY KEY,
	hash         text        NOT NULL,
	definition   bytea,
	approved     boolean     NOT NULL,
	approved_by  text        NOT NULL,
	updated      timestamptz NOT NULL,
	pending      bytea,
	pending_hash text        NOT NULL
);
