-- sessionbench schema version 7: requests stored as references to shared message runs.
-- A list (a request's messages, a call's history) was one path from the root of the
-- prefix tree (list_nodes); a list that keeps a sliding window starts at a different
-- message every time, so each one was a path of its own. Now a list may end with a run:
-- the last *_tail_len elements of the path ending at node *_tail, after the path ending
-- at *_node (the head: the system message and demos). Consecutive windows share the
-- run's nodes as unwindowed lists share their prefix.
ALTER TABLE calls ADD COLUMN messages_tail INTEGER REFERENCES list_nodes(id);
ALTER TABLE calls ADD COLUMN messages_tail_len INTEGER NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN history_tail INTEGER REFERENCES list_nodes(id);
ALTER TABLE calls ADD COLUMN history_tail_len INTEGER NOT NULL DEFAULT 0;
-- raw_request_mode 3: the body is a prefix, the messages as a JSON array and a suffix
-- (raw_request_id holds [prefix, suffix]); raw_response_mode 1: raw_response_id holds
-- the body DEFLATE-compressed.
ALTER TABLE calls ADD COLUMN raw_response_mode INTEGER NOT NULL DEFAULT 0;
-- A resumed turn finds its answered calls among the turn's few calls (the (turn_id,
-- call_key) index): the request index cost more than it saved.
DROP INDEX calls_by_request;
