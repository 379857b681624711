package core

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A session restored from its turns continues exactly like the original, children included.
func TestRestoreFromTurns(t *testing.T) {
	ctx := ctxWith(echoLM())
	orig := MustSessionify(retryAgent(2), Options{Recursive: Predictors})
	mustRun(t, ctx, orig, "task", "t1")
	mustRun(t, ctx, orig, "task", "t2")
	r, err := Restore(retryAgent(2), Options{Recursive: Predictors}, orig.Turns())
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 2 || r.Children()["planner"].Len() != 4 || !reflect.DeepEqual(r.TurnGroups("planner"), orig.TurnGroups("planner")) {
		t.Fatalf("restored: %d turns, planner %d, groups %+v", r.Len(), r.Children()["planner"].Len(), r.TurnGroups("planner"))
	}
	mustRun(t, ctx, orig, "task", "t3")
	mustRun(t, ctx, r, "task", "t3")
	a, b := orig.Turns()[2], r.Turns()[2]
	if !py.Same(a.History, b.History) || len(a.Calls) != len(b.Calls) {
		t.Fatal("restored session diverges on the next turn")
	}
	for i := range a.Calls {
		if !py.Same(a.Calls[i].History, b.Calls[i].History) {
			t.Fatalf("call %d saw a different history after restore", i)
		}
	}
	r.Undo(1, true)
	if r.Children()["planner"].Len() != 4 {
		t.Fatal("cascade undo after restore")
	}
	if _, err := Restore(retryAgent(2), Options{}, []*trace.Turn{nil}); err == nil {
		t.Fatal("nil turn accepted")
	}
}

// A session restored from the last turns of a branch sends exactly what one restored
// from the whole branch sends, when every history it reads has a window it holds; it
// says when it does not.
func TestRestoreTail(t *testing.T) {
	windowed := Options{Recursive: Predictors, MaxTurns: Int(3), Record: RecordAll}
	cases := []struct {
		name  string
		opts  Options
		held  int // turns of the 8 given to RestoreTail
		exact bool
	}{
		{"window held", windowed, 3, true},
		{"more than the window", windowed, 5, true},
		{"fewer than the window", windowed, 2, false},
		{"whole branch", windowed, 8, true},
		{"no window", Options{Recursive: Predictors, Record: RecordAll}, 5, false},
		{"stored turns bound it", Options{Recursive: Predictors, MaxStoredTurns: Int(2), Record: RecordAll}, 2, true},
		{"a child with a wider window", Options{Recursive: Predictors, MaxTurns: Int(2), Record: RecordAll,
			ChildConfigs: map[string]ChildConfig{"planner": {MaxTurns: Int(20)}}}, 4, false},
		{"per-turn children", Options{Recursive: Predictors, MaxTurns: Int(1), InnerScope: PerTurn, Record: RecordAll}, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxWith(echoLM())
			orig := MustSessionify(retryAgent(2), c.opts)
			for i := range 8 {
				mustRun(t, ctx, orig, "task", fmt.Sprintf("t%d", i))
			}
			turns := orig.Turns()
			first := len(turns) - c.held
			full, err := Restore(retryAgent(2), c.opts, turns)
			if err != nil {
				t.Fatal(err)
			}
			tail, exact, err := RestoreTail(retryAgent(2), c.opts, first, turns[first:])
			if err != nil || exact != c.exact {
				t.Fatalf("exact %v, want %v (%v)", exact, c.exact, err)
			}
			if tail.Len() != full.Len() {
				t.Fatalf("length %d, want %d", tail.Len(), full.Len())
			}
			for i := range turns {
				h, ok := tail.HistoryAt(i)
				want, _ := full.HistoryAt(i)
				if ok && !py.Same(h, want) {
					t.Fatalf("HistoryAt(%d) differs", i)
				}
				if ok && i < first {
					t.Fatalf("HistoryAt(%d) answered for a turn it does not hold", i)
				}
			}
			if !exact {
				return
			}
			_, a, err := full.Run(ctx, in("task", "next"))
			if err != nil {
				t.Fatal(err)
			}
			_, b, err := tail.Run(ctx, in("task", "next"))
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Calls) != len(b.Calls) || a.Index != b.Index {
				t.Fatalf("%d calls, index %d; want %d, %d", len(b.Calls), b.Index, len(a.Calls), a.Index)
			}
			for i := range a.Calls {
				if !reflect.DeepEqual(a.Calls[i].Messages, b.Calls[i].Messages) {
					t.Fatalf("call %d sent\n%v\nwant\n%v", i, b.Calls[i].Messages, a.Calls[i].Messages)
				}
			}
			// Undo stops at the first turn held: the turns before it are not there.
			wantUndone, wantLen := c.held+1, 0
			if first > 0 {
				wantUndone, wantLen = c.held, first+1
			}
			if n := len(tail.Undo(100, true)); n != wantUndone || tail.Len() != wantLen {
				t.Fatalf("undid %d turns, leaving %d; want %d, %d", n, tail.Len(), wantUndone, wantLen)
			}
		})
	}
}
