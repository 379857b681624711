-- sessionbench schema version 8: texts stored once and compactly.
-- A content may be stored as a delta against another content (base_id, itself stored
-- whole): the body is then two uvarints, the lengths of the prefix and the suffix it
-- shares with the base, followed by the bytes in between. Consecutive messages of a
-- conversation repeat their template (field markers, instructions), so most of a new
-- message is its base's. The hash stays that of the whole text.
ALTER TABLE contents ADD COLUMN base_id INTEGER REFERENCES contents(id);
-- A message's other keys (lm.Message.Extra, e.g. "name"), a compact JSON object; NULL
-- when it has none. They are part of the list's identity (its chain hash).
ALTER TABLE list_nodes ADD COLUMN extra TEXT;
-- A call's inputs and outputs as one text (io_id), the JSON object of both, which is
-- what the next turn's history entry for the call usually is, so it is stored once:
-- inputs are its first io_split bytes closed by '}', outputs '{' and the rest. inputs
-- and outputs are then NULL.
ALTER TABLE calls ADD COLUMN io_id INTEGER REFERENCES contents(id);
ALTER TABLE calls ADD COLUMN io_split INTEGER NOT NULL DEFAULT 0;
