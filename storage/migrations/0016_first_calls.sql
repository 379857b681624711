-- sessionbench schema version 16: the history a branch's next first call sends, as the
-- process that ran the branch's last turn rendered it (storage/firstcall.go), so that a
-- new process (`sessionbench run`) makes that call while it restores the branch's
-- session, and checks it against the session's own request. A cache: rows are
-- rewritten from the first message that changed, and a row set that does not follow
-- the branch's tip is not used.
CREATE TABLE first_calls (
    branch_id INTEGER PRIMARY KEY REFERENCES branches(id) ON DELETE CASCADE,
    tip_id    INTEGER NOT NULL, -- the turn the next turn follows (turn ids are never reused)
    agent     TEXT NOT NULL,    -- the agent as defined, hashed (ui/sessions: agentKey)
    path      TEXT NOT NULL,    -- the predictor's call path
    fields    TEXT NOT NULL,    -- JSON array: its inputs, the turn's inputs of these names
    messages  INTEGER NOT NULL  -- how many messages the rows hold
);
CREATE TABLE first_call_rows (
    branch_id INTEGER NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL, -- the row holds messages seq*128 to seq*128+127
    body      BLOB NOT NULL,
    PRIMARY KEY (branch_id, seq)
);
