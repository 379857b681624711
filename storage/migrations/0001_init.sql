-- sessionbench schema version 1.
-- Turns form a tree (parent_id); a branch is a named pointer to a tip turn. Message contents
-- are stored once (contents, keyed by hash) and ordered lists of them (request messages,
-- histories) are paths in a shared prefix tree (list_nodes), so consecutive requests that
-- repeat the conversation so far cost only their new messages.

CREATE TABLE conversations (
    id              TEXT PRIMARY KEY,
    title           TEXT NOT NULL DEFAULT '',
    agent           TEXT NOT NULL DEFAULT '',
    agent_config    TEXT NOT NULL DEFAULT '{}',
    status          TEXT NOT NULL DEFAULT 'in_progress'
                    CHECK (status IN ('in_progress', 'completed', 'needs_human', 'failed', 'cancelled')),
    best_attempt_id INTEGER,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);

CREATE TABLE conversation_meta (
    conv_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL, -- JSON
    PRIMARY KEY (conv_id, key)
) WITHOUT ROWID;

CREATE TABLE contents (
    id   INTEGER PRIMARY KEY,
    hash BLOB NOT NULL UNIQUE, -- first 16 bytes of SHA-256(body)
    body BLOB NOT NULL         -- BLOB so every byte (NUL, invalid UTF-8) survives
);

CREATE TABLE list_nodes (
    id         INTEGER PRIMARY KEY,
    hash       BLOB NOT NULL UNIQUE, -- chains parent hash, role and content hash
    parent_id  INTEGER REFERENCES list_nodes(id),
    role       TEXT NOT NULL,        -- chat role, or 'h' for a history entry
    content_id INTEGER NOT NULL REFERENCES contents(id),
    depth      INTEGER NOT NULL      -- 1 for the first element
);

CREATE TABLE turns (
    id            INTEGER PRIMARY KEY,
    conv_id       TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_id     INTEGER REFERENCES turns(id) ON DELETE CASCADE,
    -- jump pointer (skew-binary ancestor links): the turn at any depth of a path is found
    -- in O(log n) lookups, which keeps fork-at-index and undo cheap on long branches.
    jump_id       INTEGER,
    jump_depth    INTEGER NOT NULL,
    depth         INTEGER NOT NULL, -- the turn's index on every path through it
    branch_id     INTEGER,          -- branch the turn was begun on (recovery)
    state         TEXT NOT NULL CHECK (state IN ('pending', 'committed', 'discarded')),
    inputs        TEXT NOT NULL,
    outputs       TEXT,
    snapshot_node INTEGER REFERENCES list_nodes(id), -- explicit history snapshot only
    explicit      INTEGER NOT NULL DEFAULT 0,
    score         REAL,
    best_attempt_id INTEGER,
    abort_reason  TEXT,
    started_at    TEXT NOT NULL,
    ended_at      TEXT
);
CREATE INDEX turns_by_parent ON turns(parent_id);
CREATE INDEX turns_by_conv ON turns(conv_id, state);

CREATE TABLE branches (
    id           INTEGER PRIMARY KEY,
    conv_id      TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    tip_id       INTEGER REFERENCES turns(id),
    forked_from  INTEGER REFERENCES branches(id) ON DELETE CASCADE,
    fork_turn_id INTEGER REFERENCES turns(id),
    fork_index   INTEGER,
    description  TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (conv_id, name)
);
CREATE INDEX branches_by_parent ON branches(forked_from, fork_index);

-- Undone turns per branch, a stack: the highest pos is redone first.
CREATE TABLE redo (
    branch_id INTEGER NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
    pos       INTEGER NOT NULL,
    turn_id   INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
    PRIMARY KEY (branch_id, pos)
) WITHOUT ROWID;

CREATE TABLE calls (
    id                INTEGER PRIMARY KEY,
    turn_id           INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
    call_key          TEXT NOT NULL, -- trace.Call.ID
    parent_key        TEXT NOT NULL DEFAULT '',
    seq               INTEGER NOT NULL,
    path              TEXT NOT NULL,
    predictor_type    TEXT NOT NULL,
    adapter           TEXT NOT NULL,
    model             TEXT NOT NULL,
    inputs            TEXT,
    outputs           TEXT,
    history_node      INTEGER REFERENCES list_nodes(id),
    messages_node     INTEGER REFERENCES list_nodes(id),
    request_key       BLOB NOT NULL, -- hash of path, exact messages and params (replay)
    params            TEXT NOT NULL,
    completion_id     INTEGER REFERENCES contents(id),
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens     INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    started_at        TEXT NOT NULL,
    latency_ns        INTEGER NOT NULL,
    error             TEXT NOT NULL DEFAULT '',
    attempts          TEXT,
    score             REAL,
    raw_request_mode  INTEGER NOT NULL DEFAULT 0, -- 0 none, 1 literal, 2 template over messages
    raw_request_id    INTEGER REFERENCES contents(id),
    raw_response_id   INTEGER REFERENCES contents(id),
    UNIQUE (turn_id, call_key)
);
CREATE INDEX calls_by_request ON calls(turn_id, request_key);

CREATE TABLE attempts (
    id         INTEGER PRIMARY KEY,
    conv_id    TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    turn_id    INTEGER REFERENCES turns(id) ON DELETE CASCADE,
    step       TEXT NOT NULL,
    n          INTEGER NOT NULL,
    score      REAL NOT NULL,
    details    TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
CREATE INDEX attempts_by_conv ON attempts(conv_id, turn_id);
