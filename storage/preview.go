package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/sig"
)

// maxPreview bounds a stored preview, in characters: more than a terminal row shows.
const maxPreview = 300

// preview renders the first value of a stored JSON object (turn inputs or outputs) on
// one line, whitespace runs collapsed, cut to maxPreview characters with "…"; "" when
// the object is empty, missing or not an object.
func preview(raw sql.NullString) string {
	if !raw.Valid || raw.String == "" {
		return ""
	}
	v, err := sig.DecodeJSON([]byte(raw.String))
	if err != nil {
		return ""
	}
	m, ok := v.(*sig.Map)
	if !ok || m.Len() == 0 {
		return ""
	}
	s := strings.Join(strings.Fields(m.String(m.Keys()[0])), " ")
	if len(s) > maxPreview { // bytes >= characters: only then can it be too long
		n := 0
		for i := range s {
			if n == maxPreview {
				return s[:i] + "…"
			}
			n++
		}
	}
	return s
}

// backfillPreviews fills the preview columns of every turn (schema version 2), a batch
// of turns at a time so a large database is not held in memory.
func backfillPreviews(ctx context.Context, tx *wtx) error {
	type row struct {
		id      int64
		in, out sql.NullString
	}
	// One prepared statement: parsing the UPDATE per turn would cost more than the turn.
	upd, err := tx.PrepareContext(ctx, "UPDATE turns SET input_preview = ?, output_preview = ? WHERE id = ?")
	if err != nil {
		return fmt.Errorf("backfill turn previews: %w", err)
	}
	defer upd.Close()
	var after int64
	for {
		rows, err := tx.QueryContext(ctx, "SELECT id, inputs, outputs FROM turns WHERE id > ? ORDER BY id LIMIT 1000", after)
		if err != nil {
			return fmt.Errorf("backfill turn previews: %w", err)
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.in, &r.out); err != nil {
				rows.Close()
				return fmt.Errorf("backfill turn previews: %w", err)
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("backfill turn previews: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			if _, err := upd.ExecContext(ctx, preview(r.in), preview(r.out), r.id); err != nil {
				return fmt.Errorf("backfill preview of turn %d: %w", r.id, err)
			}
		}
		after = batch[len(batch)-1].id
	}
}
