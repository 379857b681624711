-- sessionbench schema version 12: a branch's path as a session restores it, packed in one
-- value (storage/pathpack.go), so a new process restores a long branch from one row and
-- the rows of the turns after the pack instead of every turn's and call's rows. Packs
-- are a cache of rows that never change (committed turns): a pack whose last turn is not
-- on its branch's path any more is not used, and deleting one loses nothing.
CREATE TABLE path_packs (
    branch_id  INTEGER PRIMARY KEY REFERENCES branches(id) ON DELETE CASCADE,
    conv_id    TEXT NOT NULL,
    tip_id     INTEGER NOT NULL, -- the pack's last turn (turn ids are never reused)
    turns      INTEGER NOT NULL, -- how many turns it holds, from the root
    written_at TEXT NOT NULL,
    body       BLOB NOT NULL
);
CREATE INDEX path_packs_by_conv ON path_packs(conv_id, written_at);
