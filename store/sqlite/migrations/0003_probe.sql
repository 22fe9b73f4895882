-- The probe Store.CheckWrite commits: one row, outside the audit log, whose time is
-- replaced by every check.
CREATE TABLE probe (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	at INTEGER NOT NULL -- unix microseconds
) STRICT;
INSERT INTO probe (id, at) VALUES (1, 0);
