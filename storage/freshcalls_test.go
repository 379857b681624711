package storage

import (
	"context"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// TestFreshTurnCalls: the calls of a turn inserted in the same transaction are stored
// without asking the database for their sequence numbers or whether they are there
// (wtx.fresh), and come back exactly as when it is asked: a call recorded twice (the
// later one kept), a call with a child, then the turn's calls offered again as a commit
// offers them (insertCallIfMissing: only the missing child is added), in the same
// order.
func TestFreshTurnCalls(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	br, err := s.Branch(ctx, "c", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	store := func(id int64, asked bool) []*trace.Call {
		t.Helper()
		a1 := fixtureCall(0, 1, "agent.planner", 0, false)
		a2 := fixtureCall(0, 1, "agent.planner", 0, false)
		a2.Outputs = sig.NewMap("answer", "recorded again, kept")
		b := fixtureCall(0, 2, "agent.answer", 0, false)
		b.Children = []*trace.Call{fixtureCall(0, 3, "agent.answer.tool", 0, false)}
		late := fixtureCall(0, 4, "agent.answer.late", 0, false) // only the commit has it
		unnamed := fixtureCall(0, 5, "agent.unnamed", 0, false)
		unnamed.ID = "" // keyed by its sequence number
		err := s.write(ctx, func(tx *wtx) error {
			if err := insertTurnAt(ctx, tx, turnRow{id: id, branchID: br.ID, conv: "c", inputs: `{"question":"q"}`, started: time.Now()}); err != nil {
				return err
			}
			if asked {
				tx.fresh = nil // as for a turn stored before the transaction
			}
			for _, c := range []*trace.Call{a1, a2, b, unnamed} {
				if err := insertCall(ctx, s.wc, tx, id, "", c, true); err != nil {
					return err
				}
			}
			b2 := *b
			b2.Children = append(b.Children, late)
			for _, c := range []*trace.Call{a2, &b2} {
				if err := insertCallIfMissing(ctx, s.wc, tx, id, "", c); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		calls, err := loadCalls(ctx, s.r, []int64{id}, LoadOptions{}, newDecoder())
		if err != nil {
			t.Fatal(err)
		}
		return calls[id]
	}
	fresh, asked := store(1001, false), store(1002, true)
	if len(fresh) != 3 || len(fresh[1].Children) != 2 || toJSON(t, fresh[0].Outputs) != `{
 "answer": "recorded again, kept"
}` {
		t.Fatalf("fresh turn's calls: %s", toJSON(t, fresh))
	}
	if got, want := toJSON(t, fresh), toJSON(t, asked); got != want {
		t.Fatalf("a fresh turn's calls differ from those stored asking the database:\n%s\nwant\n%s", got, want)
	}
	var seqs [2][]int
	for i, id := range []int64{1001, 1002} {
		rows, err := s.r.QueryContext(ctx, "SELECT seq FROM calls WHERE turn_id = ? ORDER BY seq", id)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n int
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			seqs[i] = append(seqs[i], n)
		}
		rows.Close()
	}
	if len(seqs[0]) != 5 || len(seqs[1]) != 5 {
		t.Fatalf("calls stored: %v and %v, want 5 each", seqs[0], seqs[1])
	}
}
