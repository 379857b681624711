-- sessionbench schema version 10: a delta (contents.base_id set) is a list of copies from
-- its base and inserted bytes (delta.go), which also captures a text that differs from its
-- base in more than one place; schema 8's shared prefix and suffix did not. The Go step
-- of this migration rewrites the deltas stored before.
SELECT 1;
