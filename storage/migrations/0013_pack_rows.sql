-- sessionbench schema version 13: a branch's path pack is kept as rows of 64 turns each
-- (storage/packrows.go), every row a pack of its own turns, so that repacking a branch
-- that grew writes its last rows, not its whole path again. Packs are a cache of rows
-- that never change: the packs of version 12 are dropped, and the next read of each
-- long branch packs it again.
DROP TABLE path_packs;
CREATE TABLE path_packs (
    branch_id  INTEGER NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL, -- the row's place: it holds the path's turns from seq*64 on
    conv_id    TEXT NOT NULL,
    tip_id     INTEGER NOT NULL, -- the row's last turn (turn ids are never reused)
    turns      INTEGER NOT NULL, -- how many turns it holds: 64 but in the last row
    written_at TEXT NOT NULL,
    body       BLOB NOT NULL,
    PRIMARY KEY (branch_id, seq)
);
CREATE INDEX path_packs_by_conv ON path_packs(conv_id, written_at);
