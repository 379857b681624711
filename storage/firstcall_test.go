package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
)

// historyOf is n messages of a history, user and assistant by turns, the fourth of each
// eight with an extra key.
func historyOf(n int, tag string) lm.MessageList {
	msgs := make([]lm.Message, n)
	for i := range msgs {
		msgs[i] = lm.Message{Role: "user", Content: fmt.Sprintf("[[ ## question ## ]]\nquestion %d %s", i/2, tag)}
		if i%2 == 1 {
			msgs[i] = lm.Message{Role: "assistant", Content: "[[ ## intent ## ]]\nbilling\n\n[[ ## completed ## ]]"}
		}
		if i%8 == 3 {
			msgs[i].Extra = `{"name":"n"}`
		}
	}
	return lm.ListOf(msgs)
}

// changes is how many rows the writer connection has changed so far.
func changes(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.w.QueryRowContext(context.Background(), `SELECT total_changes()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFirstCall: what PutFirstCall keeps FirstCall gives back, message for message,
// while it follows the branch's tip; a later put rewrites the rows from the first that
// changed when the caller knows what the store holds, and every row when it does not
// (or is wrong); a turn after the tip leaves nothing to read.
func TestFirstCall(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	keys := appendN(t, s, "c", MainBranch, 2)
	if fc, _, err := s.FirstCall(ctx, "c", MainBranch); err != nil || fc != nil {
		t.Fatalf("a branch with none: %v, %v", fc, err)
	}
	put := func(tip, prevTip string, held int, h lm.MessageList) {
		t.Helper()
		fc := &FirstCall{Tip: tip, Agent: "agent-hash", Path: "classify", Fields: []string{"question"}, History: h}
		if err := s.PutFirstCall(ctx, "c", MainBranch, fc, prevTip, held); err != nil {
			t.Fatal(err)
		}
	}
	check := func(tip string, want lm.MessageList) {
		t.Helper()
		fc, ref, err := s.FirstCall(ctx, "c", MainBranch)
		if err != nil || fc == nil {
			t.Fatalf("FirstCall: %v, %v", fc, err)
		}
		if fc.Tip != tip || fc.Agent != "agent-hash" || fc.Path != "classify" || strings.Join(fc.Fields, ",") != "question" || ref != "demo" {
			t.Errorf("FirstCall: %+v of %s", fc, ref)
		}
		if !fc.History.Equal(want) {
			t.Errorf("history of %d messages, want %d (common prefix %d)", fc.History.Len(), want.Len(), fc.History.CommonPrefix(want))
		}
	}
	// the branch's tip is keys[1]
	put(keys[1], "", 0, historyOf(300, "a"))
	check(keys[1], historyOf(300, "a"))
	cases := []struct {
		name    string
		prevTip string
		held    int
		h       lm.MessageList
		kept    int // the rows not written again
	}{
		{"grown", keys[1], 300, historyOf(302, "a"), 2},
		{"changed from message 130", keys[1], 130, historyOf(130, "a").Concat(historyOf(200, "b").Sub(130, 200)), 1},
		{"unknown", "", 0, historyOf(260, "a"), 0},
		{"another tip", keys[0], 260, historyOf(260, "a"), 0},
		{"shorter", keys[1], 260, historyOf(100, "a"), 0},
		{"empty", keys[1], 100, historyOf(0, ""), 0},
		{"from empty", keys[1], 0, historyOf(129, "c"), 0},
	}
	rows := 3 // of the 300 messages put
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := changes(t, s)
			put(keys[1], c.prevTip, c.held, c.h)
			check(keys[1], c.h)
			// the header, the rows deleted and those written
			newRows := (c.h.Len() + firstCallRowMessages - 1) / firstCallRowMessages
			if got, want := changes(t, s)-before, 1+(rows-c.kept)+(newRows-c.kept); got != want {
				t.Errorf("%d rows changed, want %d (%d of %d rows kept)", got, want, c.kept, rows)
			}
			rows = newRows
		})
	}
	// a turn after the one it follows: nothing to read
	appendN(t, s, "c", MainBranch, 1)
	if fc, _, err := s.FirstCall(ctx, "c", MainBranch); err != nil || fc != nil {
		t.Errorf("after the tip moved: %v, %v", fc, err)
	}
}

// A row that does not decode, or rows missing, is an error naming the branch, never
// a history cut short.
func TestFirstCallCorrupt(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, sql string
	}{
		{"cut short", `UPDATE first_call_rows SET body = substr(body, 1, 40) WHERE seq = 1`},
		{"row missing", `DELETE FROM first_call_rows WHERE seq = 1`},
		{"count wrong", `UPDATE first_calls SET messages = messages + 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTemp(t)
			mustConv(t, s, "c")
			keys := appendN(t, s, "c", MainBranch, 1)
			fc := &FirstCall{Tip: keys[0], Agent: "a", Path: "p", Fields: []string{"question"}, History: historyOf(300, "a")}
			if err := s.PutFirstCall(ctx, "c", MainBranch, fc, "", 0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.w.ExecContext(ctx, c.sql); err != nil {
				t.Fatal(err)
			}
			got, _, err := s.FirstCall(ctx, "c", MainBranch)
			if got != nil || !errors.Is(err, errPackCorrupt) || !strings.Contains(err.Error(), "first call of branch main") {
				t.Errorf("FirstCall: %v, %v", got, err)
			}
		})
	}
}

// What a user deletes goes from the first calls kept too: a prune that deleted turns
// forgets every first call of the conversation (a remaining branch's may copy a deleted
// turn an undo took off its path), and deleting a branch forgets its own.
func TestDeleteBranchForgetsFirstCalls(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	main := appendN(t, s, "c", MainBranch, 3)
	if _, err := s.Fork(ctx, "c", MainBranch, "f", 1); err != nil {
		t.Fatal(err)
	}
	f := appendN(t, s, "c", "f", 2)
	for _, b := range []struct{ name, tip string }{{MainBranch, main[2]}, {"f", f[1]}} {
		fc := &FirstCall{Tip: b.tip, Agent: "a", Path: "p", Fields: []string{"question"}, History: historyOf(200, b.name)}
		if err := s.PutFirstCall(ctx, "c", b.name, fc, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	count := func() (n int) {
		t.Helper()
		if err := s.w.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM first_calls) + (SELECT count(*) FROM first_call_rows)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 6 {
		t.Fatalf("%d first call rows before, want 6", n)
	}
	if _, err := s.DeleteBranch(ctx, "c", "f", false); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d first call rows after the branch's turns were deleted", n)
	}
	if fc, _, err := s.FirstCall(ctx, "c", MainBranch); err != nil || fc != nil {
		t.Errorf("main's first call after the prune: %v, %v", fc, err)
	}
}
