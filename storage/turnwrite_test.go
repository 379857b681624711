package storage

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A turn a sink commits has its row written once, after its calls (commitNewTurn); it
// must be the row a turn stored running and then completed gets (AppendTurn's path,
// commitTurn): the same place in the tree, values, previews and running usage totals.
func TestNewTurnRowAsStoredRunning(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "sink")
	mustConv(t, s, "append")
	sink := s.Sink("sink", MainBranch)
	const n = 12 // past a few skew-binary jumps
	for i := range n {
		mk := func() *trace.Turn {
			tr := fixtureTurn(i, 3, false)
			switch i {
			case 2: // usage counted here, not by the server
				tr.Calls[1].Usage.Estimated = true
			case 5: // attempts: the row's best attempt is set after it is written
				tr.Attempts = []*trace.Attempt{{Step: "answer", N: 1, Score: 0.5, Time: fixtureEpoch},
					{Step: "answer", N: 2, Score: 0.9, Time: fixtureEpoch, Best: true}}
			case 7: // no inputs: the journal header's ("{}") stay
				tr.Inputs = nil
			}
			return tr
		}
		tr := mk()
		var key string
		var err error
		if i == 9 { // the tool call only inside its parent's record, and the calls only recorded
			if key, err = sink.BeginTurn(ctx, tr.Inputs); err == nil {
				for _, c := range tr.Calls {
					if err = sink.RecordCall(ctx, key, "", c); err != nil {
						break
					}
				}
			}
			tr.Calls = nil
		} else {
			key, err = recordCalls(ctx, sink, tr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 4 { // the answer call recorded again, first with other usage: replaced twice
			other := *tr.Calls[1]
			other.Usage = lm.Usage{PromptTokens: 1000, TotalTokens: 1000}
			for _, c := range []*trace.Call{&other, tr.Calls[1]} {
				if err := sink.RecordCall(ctx, key, "", c); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := sink.CommitTurn(ctx, key, tr); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendTurn(ctx, "append", MainBranch, mk()); err != nil {
			t.Fatal(err)
		}
	}
	got, wantRows := turnRows(t, s, "sink"), turnRows(t, s, "append")
	if len(got) != n || len(wantRows) != n {
		t.Fatalf("%d and %d turns stored, want %d", len(got), len(wantRows), n)
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], wantRows[i]) {
			t.Errorf("turn %d committed by the sink:\n%v\nstored running, then completed:\n%v", i, got[i], wantRows[i])
		}
	}
	if last := got[n-1]; last[len(last)-5] == "0" {
		t.Errorf("no running usage totals: %v", last)
	}
}

// turnRows are conv's turns (by depth) as their rows hold them, less what names the
// conversation, the branch or other rows: each jump is given as its target's depth.
func turnRows(t *testing.T, s *Store, conv string) [][]string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `SELECT t.depth, t.jump_depth, (SELECT depth FROM turns j WHERE j.id = t.jump_id),
			(SELECT depth FROM turns p WHERE p.id = t.parent_id), t.status, t.inputs, t.input_preview, t.outputs, t.output_preview,
			t.score, t.explicit, t.snapshot_node IS NULL, t.started_at, t.ended_at, t.error, t.owner_pid, t.retry_of,
			(SELECT a.n FROM attempts a WHERE a.id = t.best_attempt_id),
			(SELECT count(*) FROM calls c WHERE c.turn_id = t.id),
			t.cum_prompt_tokens, t.cum_completion_tokens, t.cum_cached_tokens, t.cum_total_tokens, t.cum_estimated
		FROM turns t WHERE t.conv_id = ? ORDER BY t.depth`, conv)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		cols := make([]sql.NullString, 24)
		dest := make([]any, len(cols))
		for i := range cols {
			dest[i] = &cols[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = fmt.Sprint(c.String, map[bool]string{false: "∅"}[c.Valid])
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
