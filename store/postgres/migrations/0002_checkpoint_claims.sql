-- A checkpoint is claimed once (Store.ClaimCheckpoint): claimed is when; NULL while
-- unclaimed. Nothing clears it.
ALTER TABLE warden_checkpoints ADD COLUMN claimed timestamptz;
