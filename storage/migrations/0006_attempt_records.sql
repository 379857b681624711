-- sessionbench schema version 6: attempts are seed 003's whole attempt record, stored with
-- their turn (the workflow engine records them; nothing else writes attempts): the review
-- summary, whether it is the best attempt of its step's run, why it failed (when it did)
-- and the IDs of the calls it made (a JSON list). details is 'null' for a failed attempt.
-- Attempts load with their turns, so they are found by turn.
ALTER TABLE attempts ADD COLUMN summary TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN best INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN error TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN calls TEXT NOT NULL DEFAULT '[]';
CREATE INDEX attempts_by_turn ON attempts(turn_id);
