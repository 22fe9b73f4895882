-- A checkpoint is claimed once (Store.ClaimCheckpoint): claimed is when, in
-- microseconds since the epoch; NULL while unclaimed. Nothing clears it.
ALTER TABLE checkpoints ADD COLUMN claimed INTEGER;
