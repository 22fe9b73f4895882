-- The probe Store.CheckWrite commits: one row, outside the audit log, whose time is
-- replaced by every check.
CREATE TABLE warden_probe (
	id integer     PRIMARY KEY CHECK (id = 1),
	at timestamptz NOT NULL
);
INSERT INTO warden_probe (id, at) VALUES (1, '1970-01-01T00:00:00Z');
