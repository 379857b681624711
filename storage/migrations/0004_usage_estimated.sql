-- sessionbench schema version 4: whether a call's token usage was counted by sessionbench
-- (tiktoken) because the server reported none, so the workbench marks it as an estimate.
-- cum_estimated counts such calls along the turn's path (0: every count is the server's).
ALTER TABLE calls ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN cum_estimated INTEGER NOT NULL DEFAULT 0;
