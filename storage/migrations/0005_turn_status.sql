-- sessionbench schema version 5: turn status and ownership (issue 13).
-- A turn's status (seed 003's lifecycle, applied to turns) replaces its state:
--   committed -> completed; pending -> interrupted (no owner was recorded, so none can be
--   alive); discarded -> cancelled when the user or a newer turn dropped it, else failed.
-- Only completed turns are on a branch's path (what history is built from); the others
-- are kept beside it, with the error that stopped them.
ALTER TABLE turns ADD COLUMN status TEXT NOT NULL DEFAULT 'running'
    CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'interrupted'));
UPDATE turns SET status = CASE
    WHEN state = 'committed' THEN 'completed'
    WHEN state = 'pending' THEN 'interrupted'
    WHEN abort_reason LIKE 'superseded%' OR abort_reason LIKE 'discarded%' OR abort_reason LIKE '%context canceled%' THEN 'cancelled'
    ELSE 'failed' END;
DROP INDEX turns_by_conv;
ALTER TABLE turns DROP COLUMN state;
ALTER TABLE turns RENAME COLUMN abort_reason TO error;
CREATE INDEX turns_by_conv ON turns(conv_id, status);

-- The owner of a running turn: its process (pid on host) and a lease it renews while the
-- turn runs. A turn whose owner is gone (lease expired, or its process no longer exists
-- on this host) is interrupted and may be resumed; one whose owner is alive keeps its
-- branch busy. owner_id is random per run, so a process whose turn was taken over after
-- its lease ran out cannot write to it any more.
ALTER TABLE turns ADD COLUMN owner_pid INTEGER;
ALTER TABLE turns ADD COLUMN owner_host TEXT;
ALTER TABLE turns ADD COLUMN owner_id TEXT;
ALTER TABLE turns ADD COLUMN lease_until TEXT;
-- A retried turn points at the failed or cancelled turn it re-ran (which stays as it was).
ALTER TABLE turns ADD COLUMN retry_of INTEGER REFERENCES turns(id) ON DELETE SET NULL;
