-- sessionbench schema version 11: turn ids come from a counter, so a process can reserve
-- a block of them and give a turn its key before the turn is in the database (a turn in
-- flight lives in a journal beside the database until it ends: one commit per turn).
-- Ids are never reused, also after the newest turn is deleted.
CREATE TABLE turn_ids (next INTEGER NOT NULL);
INSERT INTO turn_ids(next) SELECT coalesce(max(id), 0) + 1 FROM turns;
