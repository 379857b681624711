package sessions

import (
	"slices"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
)

// Entries extended from the same entry, or from a prefix of one, never change what an
// entry made before holds, although the first extension shares its arrays.
func TestPathEntryExtensionsLeaveEarlierEntriesAsTheyWere(t *testing.T) {
	grow := func(e *pathEntry, keys ...string) *pathEntry {
		ts := make([]*trace.Turn, len(keys))
		st := make([]time.Time, len(keys))
		for i, k := range keys {
			ts[i] = &trace.Turn{Error: k}
			st[i] = time.Unix(int64(len(k)), 0)
		}
		return e.extend(keys, st, ts)
	}
	holds := func(name string, e *pathEntry, want ...string) {
		t.Helper()
		if !slices.Equal(e.keys, want) || len(e.turns) != len(want) || len(e.started) != len(want) {
			t.Fatalf("%s holds %v (%d turns), want %v", name, e.keys, len(e.turns), want)
		}
		for i, k := range want {
			if e.turns[i].Error != k {
				t.Fatalf("%s: turn %d is %q's, want %q's", name, i, e.turns[i].Error, k)
			}
		}
	}
	// arrays with room, as an entry's are once extended (append doubles them)
	room := &pathEntry{keys: make([]string, 0, 16), started: make([]time.Time, 0, 16), turns: make([]*trace.Turn, 0, 16)}
	root := grow(room, "a", "b")
	one := grow(root, "c")     // in place
	two := grow(root, "x")     // root again: a copy
	three := grow(one, "d")    // in place past one's end
	cut := one.prefix(2)       // [a b], capped
	four := grow(cut, "y")     // copies
	five := grow(three, "e")   // in place
	six := grow(one, "z", "w") // one again: a copy
	holds("root", root, "a", "b")
	holds("one", one, "a", "b", "c")
	holds("two", two, "a", "b", "x")
	holds("three", three, "a", "b", "c", "d")
	holds("four", four, "a", "b", "y")
	holds("five", five, "a", "b", "c", "d", "e")
	holds("six", six, "a", "b", "c", "z", "w")
}
