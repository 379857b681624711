package storage

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
)

// packRowsWritten is when each pack row was written, by seq (warmPack sleeps first, so
// a row written again has a later time).
func packRowsWritten(t *testing.T, s *Store, conv, branch string) []string {
	t.Helper()
	rows, err := s.w.Query(`SELECT p.written_at FROM path_packs p JOIN branches b ON b.id = p.branch_id
		WHERE b.conv_id = ? AND b.name = ? ORDER BY p.seq`, conv, branch)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// repackLater is warmPack a little later than the last write, which packRowsWritten tells.
func repackLater(t *testing.T, s *Store, conv, branch string) {
	t.Helper()
	time.Sleep(2 * time.Millisecond)
	warmPack(t, s, conv, branch)
}

// packedBranch is a store whose conversation "c" has n turns made by mk on its main
// branch, packed.
func packedBranch(t *testing.T, n int, mk func(i int) *trace.Turn) *Store {
	t.Helper()
	s := openTemp(t)
	mustConv(t, s, "c")
	bulkAppend(t, s, "c", MainBranch, n, 100, mk)
	loadValues(t, s, "c", MainBranch)
	repackLater(t, s, "c", MainBranch)
	return s
}

// TestPackRowsRewritten: repacking a branch writes only the rows its path changed (the
// last, partial one and those after it; from where the path left the pack), so keeping
// a pack costs a few turns' values per turn at any length; the rows kept and written
// read back as the rows' path.
func TestPackRowsRewritten(t *testing.T) {
	ctx := context.Background()
	n := 4*packRowTurns + 20
	s := packedBranch(t, n, lightTurn)
	first := packRowsWritten(t, s, "c", MainBranch)
	if len(first) != 5 {
		t.Fatalf("%d rows for %d turns, want 5", len(first), n)
	}

	// the tip moves on by packLagTurns: only the last row is written again
	bulkAppend(t, s, "c", MainBranch, packLagTurns, packLagTurns, lightTurn)
	if got := loadValues(t, s, "c", MainBranch); got != n {
		t.Fatalf("%d turns packed, want %d", got, n)
	}
	repackLater(t, s, "c", MainBranch)
	grown := packRowsWritten(t, s, "c", MainBranch)
	if len(grown) != 5 || !reflect.DeepEqual(grown[:4], first[:4]) || grown[4] == first[4] {
		t.Fatalf("rows %v after %v, want the first four kept and the last written again", grown, first)
	}
	n += packLagTurns
	if got := loadValues(t, s, "c", MainBranch); got != n {
		t.Fatalf("%d turns packed after repacking, want %d", got, n)
	}

	// the tip moves on across a row's end: the last row is filled, a new one follows
	bulkAppend(t, s, "c", MainBranch, packRowTurns, 100, lightTurn)
	loadValues(t, s, "c", MainBranch)
	repackLater(t, s, "c", MainBranch)
	n += packRowTurns
	across := packRowsWritten(t, s, "c", MainBranch)
	if len(across) != 6 || !reflect.DeepEqual(across[:4], first[:4]) || across[4] == grown[4] {
		t.Fatalf("rows %v after %v, want 6, the first four kept", across, grown)
	}
	if tip, held := packHeld(t, s, "c", MainBranch); held != n || tip == 0 {
		t.Fatalf("pack of %d turns ending at %d, want %d", held, tip, n)
	}

	// an undo into the fourth row, then other turns: the rows from the fourth on are
	// written again, the rows after the new path's end are gone
	if _, err := s.Undo(ctx, "c", MainBranch, n-(3*packRowTurns+58)); err != nil {
		t.Fatal(err)
	}
	bulkAppend(t, s, "c", MainBranch, 40, 40, packedTurn)
	n = 3*packRowTurns + 98
	if got := loadValues(t, s, "c", MainBranch); got != 0 {
		t.Fatalf("%d turns packed from a pack that left the path two rows back, want none", got)
	}
	repackLater(t, s, "c", MainBranch)
	moved := packRowsWritten(t, s, "c", MainBranch)
	if len(moved) != 5 || !reflect.DeepEqual(moved[:3], first[:3]) || moved[3] == first[3] {
		t.Fatalf("rows %v after %v, want 5, the first three kept", moved, across)
	}
	if got := loadValues(t, s, "c", MainBranch); got != n {
		t.Fatalf("%d turns packed after repacking, want %d", got, n)
	}
}

// TestPackRowsBroken: rows that are not one contiguous pack (a row missing, a row
// claiming more turns than a row holds, a row holding other turns than it says) are not
// used, and the next repack puts them right.
func TestPackRowsBroken(t *testing.T) {
	for _, c := range []struct{ name, breakIt string }{
		{"row missing", `DELETE FROM path_packs WHERE seq = 1`},
		{"row too long", `UPDATE path_packs SET turns = turns + 1 WHERE seq = 0`},
		{"bodies swapped", `UPDATE path_packs SET body = (SELECT q.body FROM path_packs q
			WHERE q.branch_id = path_packs.branch_id AND q.seq = 3 - path_packs.seq) WHERE seq IN (1, 2)`},
		{"other tip", `UPDATE path_packs SET tip_id = tip_id - 1 WHERE seq = 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := 4*packRowTurns + 5
			s := packedBranch(t, n, packedTurn)
			if _, err := s.w.Exec(c.breakIt); err != nil {
				t.Fatal(err)
			}
			if got := loadValues(t, s, "c", MainBranch); got != 0 {
				t.Fatalf("%d turns packed from broken rows, want none", got)
			}
			repackLater(t, s, "c", MainBranch)
			if got := loadValues(t, s, "c", MainBranch); got != n {
				t.Fatalf("%d turns packed after the repack, want %d", got, n)
			}
		})
	}
}
