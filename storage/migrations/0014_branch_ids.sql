-- sessionbench schema version 14: each branch keeps the turn ids reserved for its next
-- turns, [ids_next, ids_end) (storage/turnids.go). A process beginning a turn there takes
-- ids_next as it reads the branch under the branch's journal lock, with no write; the
-- turn's row, once stored, moves ids_next on, and its transaction reserves the next
-- block from turn_ids when few are left. 0, 0: none reserved yet.
ALTER TABLE branches ADD COLUMN ids_next INTEGER NOT NULL DEFAULT 0;
ALTER TABLE branches ADD COLUMN ids_end INTEGER NOT NULL DEFAULT 0;
