-- sessionbench schema version 9: contents and list nodes are found by the first 8 bytes of
-- their SHA-256 hash, in indexes that are not unique: a lookup compares what it finds
-- with what it looks for (the text; the list node's parent, role, content and extra
-- keys), so equal hashes of different things cost a comparison, never a wrong answer.
-- The 16-byte hashes and their unique indexes were a third of the database.
-- The tables are rebuilt (SQLite cannot drop a UNIQUE column); this migration runs with
-- foreign keys off, and checks them before it commits.
CREATE TABLE contents_v9 (
    id      INTEGER PRIMARY KEY,
    hash    BLOB NOT NULL, -- first 8 bytes of SHA-256(text)
    body    BLOB NOT NULL,
    base_id INTEGER REFERENCES contents(id)
);
INSERT INTO contents_v9(id, hash, body, base_id) SELECT id, substr(hash, 1, 8), body, base_id FROM contents;
DROP TABLE contents;
ALTER TABLE contents_v9 RENAME TO contents;
CREATE INDEX contents_by_hash ON contents(hash);

CREATE TABLE list_nodes_v9 (
    id         INTEGER PRIMARY KEY,
    hash       BLOB NOT NULL,        -- first 8 bytes of the chain hash
    parent_id  INTEGER REFERENCES list_nodes(id),
    role       TEXT NOT NULL,
    content_id INTEGER NOT NULL REFERENCES contents(id),
    depth      INTEGER NOT NULL,
    extra      TEXT
);
INSERT INTO list_nodes_v9(id, hash, parent_id, role, content_id, depth, extra)
    SELECT id, substr(hash, 1, 8), parent_id, role, content_id, depth, extra FROM list_nodes;
DROP TABLE list_nodes;
ALTER TABLE list_nodes_v9 RENAME TO list_nodes;
CREATE INDEX list_nodes_by_hash ON list_nodes(hash);

-- A resumed turn compares its few calls' requests with the one it is about to send:
-- the request key each call kept for that is gone.
ALTER TABLE calls DROP COLUMN request_key;
