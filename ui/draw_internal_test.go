package ui

import (
	"reflect"
	"testing"
)

// Blocks of different heights stay in their columns.
func TestHJoinPadsShortBlocks(t *testing.T) {
	got := hjoin([]string{"ab", "cd"}, []string{"X"}, []string{"1", "2", "3"})
	want := []string{"abX1", "cd 2", "   3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hjoin = %q, want %q", got, want)
	}
}
