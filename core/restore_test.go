package core

import (
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
