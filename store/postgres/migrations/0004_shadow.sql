-- Shadow verdicts (store.Entry.Shadow): the JSON array of what shadow policies would
-- have decided about a call, '' for none. Existing entries get '', which is not part of
-- their hashed content, so their hashes stay valid.
ALTER TABLE warden_audit ADD COLUMN shadow text NOT NULL DEFAULT '';
