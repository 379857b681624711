package ui

import (
	"reflect"
	"testing"

	"github.com/sessionbench/sessionbench/ui/sessions"
)

// TestMergeBranches checks how the rows read after an undo, a redo or a fork join the
// branch list known: a row replaces the row of its name in place, a new one comes last.
func TestMergeBranches(t *testing.T) {
	known := []sessions.BranchInfo{{Name: "main", Turns: 5}, {Name: "fork-1", Turns: 2}}
	for _, tc := range []struct {
		name string
		rows []sessions.BranchInfo
		want []sessions.BranchInfo
	}{
		{"undo on main", []sessions.BranchInfo{{Name: "main", Turns: 4, Redo: 1}},
			[]sessions.BranchInfo{{Name: "main", Turns: 4, Redo: 1}, {Name: "fork-1", Turns: 2}}},
		{"fork", []sessions.BranchInfo{{Name: "fork-2", Turns: 3}},
			[]sessions.BranchInfo{{Name: "main", Turns: 5}, {Name: "fork-1", Turns: 2}, {Name: "fork-2", Turns: 3}}},
		{"nothing", nil, known},
	} {
		got := mergeBranches(known, tc.rows)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if known[0].Turns != 5 {
		t.Errorf("the known list was changed: %+v", known)
	}
}
