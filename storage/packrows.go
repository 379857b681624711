package storage

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/sessionbench/sessionbench/core/trace"
)

// A branch's pack is stored as rows of packRowTurns turns each, seq 0, 1, ..., every row
// a pack of its own turns (pathpack.go). Repacking a path writes only the rows it
// changed: the last, partial row and those after it, or the rows from where the path
// left the pack. What keeping a pack costs per turn is then a few turns' values at any
// length, so a pack may lag its tip by a few turns (packLagTurns) where one value
// rewritten whole had to lag by a sixteenth of the branch (625 turns at 10,000, each
// read from its rows by a new process's first Send).
//
// The rows of a branch are always the first turns of one path (writePackRows keeps a
// row only while its last turn is the path's turn at its depth): a turn's parent never
// changes and turn ids are never reused, so a row whose last turn is on a path holds
// that path's turns, and the last row's tip vouches for every row before it.

// packRowTurns is how many turns a pack row holds (its last row fewer).
const packRowTurns = 64

// packRow is one stored row of a branch's pack.
type packRow struct {
	seq   int
	tip   int64
	turns int
	body  []byte
}

// packRows is a branch's pack as stored, in order; nil when there is none.
type packRows []packRow

// held is how many turns the rows hold.
func (rs packRows) held() int {
	if len(rs) == 0 {
		return 0
	}
	return (len(rs)-1)*packRowTurns + rs[len(rs)-1].turns
}

// readPackRows reads the pack of branchID, with its rows' bodies or without. Rows that
// are not one pack (not contiguous from seq 0, a row but the last not full) are
// errPackCorrupt.
func readPackRows(ctx context.Context, q querier, branchID int64, bodies bool) (packRows, error) {
	query := `SELECT seq, tip_id, turns, NULL FROM path_packs WHERE branch_id = ? ORDER BY seq`
	if bodies {
		query = `SELECT seq, tip_id, turns, body FROM path_packs WHERE branch_id = ? ORDER BY seq`
	}
	rows, err := q.QueryContext(ctx, query, branchID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var rs packRows
	for rows.Next() {
		var r packRow
		if err := rows.Scan(&r.seq, &r.tip, &r.turns, &r.body); err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, r := range rs {
		if r.seq != i || r.turns <= 0 || r.turns > packRowTurns || r.turns < packRowTurns && i != len(rs)-1 {
			return nil, fmt.Errorf("%w: row %d is row %d of %d turns", errPackCorrupt, i, r.seq, r.turns)
		}
	}
	return rs, nil
}

// decode decodes the first want turns the rows hold, with their ids: the rows in
// chunks at once, one per core up to maxChunks (decoding is allocating, one core's
// work). A row that cannot be decoded, or holds other than its row says, is
// errPackCorrupt. The turns share the rows' bodies (decodePack), which nothing changes.
func (rs packRows) decode(want int) (ids []int64, turns []*trace.Turn, err error) {
	want = min(want, rs.held())
	ids, turns = make([]int64, want), make([]*trace.Turn, want)
	need := (want + packRowTurns - 1) / packRowTurns
	err = inChunks(context.Background(), need, min(need, runtime.GOMAXPROCS(0), maxChunks), func(_ context.Context, from, to int) error {
		for i := from; i < to; i++ {
			r, lo := rs[i], i*packRowTurns
			rowIDs, rowTurns, held, err := decodePack(r.body, min(r.turns, want-lo))
			switch {
			case err != nil:
				return fmt.Errorf("row %d: %w", i, err)
			case held != r.turns || held == len(rowIDs) && rowIDs[held-1] != r.tip:
				return fmt.Errorf("%w: row %d holds %d turns, not the %d up to turn %d its row says", errPackCorrupt, i, held, r.turns, r.tip)
			}
			for _, t := range rowTurns {
				t.Attempts = nil // a ValuesOnly read gives none; packs written before held them
			}
			copy(ids[lo:], rowIDs)
			copy(turns[lo:], rowTurns)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ids, turns, nil
}

// packPlan is a path to store as a branch's pack: its ids and turns, root first, and
// the rows encoded so far by seq (encoded outside the write transaction, from the rows
// a reader found stored).
type packPlan struct {
	ids    []int64
	turns  []*trace.Turn
	bodies map[int][]byte
	// anew is set when a read found the stored rows damaged: none is kept
	anew bool
}

// kept is how many of the stored rows the plan keeps, those holding the first turns of
// its path, and how many rows the path fills. It keeps none when the plan is anew or
// the rows stored are not one pack (readErr). (Their bodies are not read: a read that
// finds one damaged has the path packed anew.)
func (p *packPlan) kept(stored packRows, readErr error) (keep, rows int) {
	n := len(p.ids)
	rows = (n + packRowTurns - 1) / packRowTurns
	if p.anew || readErr != nil {
		return 0, rows
	}
	for _, r := range stored {
		lo := r.seq * packRowTurns
		if lo >= n || r.turns != min(packRowTurns, n-lo) || p.ids[lo+r.turns-1] != r.tip {
			break
		}
		keep++
	}
	return keep, rows
}

// encode encodes the rows of the plan from seq on that it has not encoded yet. A path
// that cannot be packed (a value outside sig's canonical set) is refused.
func (p *packPlan) encode(from int) error {
	n := len(p.ids)
	if p.bodies == nil {
		p.bodies = map[int][]byte{}
	}
	for seq := from; seq*packRowTurns < n; seq++ {
		if p.bodies[seq] != nil {
			continue
		}
		lo, hi := seq*packRowTurns, min((seq+1)*packRowTurns, n)
		body, err := encodePack(p.ids[lo:hi], p.turns[lo:hi])
		if err != nil {
			return err
		}
		p.bodies[seq] = body
	}
	return nil
}

// writePackRows stores the plan's path as the pack of branchID: the rows already stored
// that hold its first turns are kept, the others replaced. It reports whether it wrote
// anything.
func writePackRows(ctx context.Context, tx *wtx, convID string, branchID int64, p *packPlan) (bool, error) {
	stored, err := readPackRows(ctx, tx, branchID, false)
	if err != nil && !errors.Is(err, errPackCorrupt) {
		return false, err
	}
	keep, rows := p.kept(stored, err)
	if keep == rows && len(stored) == rows {
		return false, nil
	}
	if err := p.encode(keep); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM path_packs WHERE branch_id = ? AND seq >= ?`, branchID, keep); err != nil {
		return false, err
	}
	at := fmtTime(now())
	for seq := keep; seq < rows; seq++ {
		lo, hi := seq*packRowTurns, min((seq+1)*packRowTurns, len(p.ids))
		if _, err := tx.ExecContext(ctx, `INSERT INTO path_packs(branch_id, seq, conv_id, tip_id, turns, written_at, body)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, branchID, seq, convID, p.ids[hi-1], hi-lo, at, p.bodies[seq]); err != nil {
			return false, err
		}
	}
	return true, nil
}
