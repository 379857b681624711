-- sessionbench schema version 2: running usage totals and one-line previews per turn.
-- cum_*_tokens are the usage of every call of the turn plus its parent's totals, so a
-- branch's usage is its tip's row instead of a walk over its whole path. A committed
-- turn's calls never change, so the totals are written once, when it is committed.
-- input_preview/output_preview are the first input/output value on one line (shortened),
-- what the turn tree shows, so listing a long conversation decodes no JSON.
ALTER TABLE turns ADD COLUMN cum_prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN cum_completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN cum_cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN cum_total_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN input_preview TEXT NOT NULL DEFAULT '';
ALTER TABLE turns ADD COLUMN output_preview TEXT NOT NULL DEFAULT '';

-- Backfill the totals: the tree is walked once from its roots down (previews are filled
-- by the Go step of this migration, which needs the value rendering).
WITH RECURSIVE
	own(id, p, c, ca, tt) AS (
		SELECT turn_id, sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(total_tokens)
		FROM calls GROUP BY turn_id),
	cum(id, p, c, ca, tt) AS (
		SELECT t.id, coalesce(o.p, 0), coalesce(o.c, 0), coalesce(o.ca, 0), coalesce(o.tt, 0)
		FROM turns t LEFT JOIN own o ON o.id = t.id WHERE t.parent_id IS NULL
		UNION ALL
		SELECT t.id, cum.p + coalesce(o.p, 0), cum.c + coalesce(o.c, 0), cum.ca + coalesce(o.ca, 0), cum.tt + coalesce(o.tt, 0)
		FROM turns t JOIN cum ON t.parent_id = cum.id LEFT JOIN own o ON o.id = t.id)
UPDATE turns SET cum_prompt_tokens = cum.p, cum_completion_tokens = cum.c, cum_cached_tokens = cum.ca, cum_total_tokens = cum.tt
FROM cum WHERE turns.id = cum.id;
