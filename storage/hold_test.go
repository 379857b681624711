package storage

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

// A hold locks the branch as a turn does and reads it under the lock: another
// process cannot begin a turn or commit one until it is let go, and the turn that
// takes it over begins after the tip it read without reading the branch again.
func TestTurnHold(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, filepath.Join(dir, "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustConv(t, s, "c")
	keys := appendN(t, s, "c", MainBranch, 3)
	other, err := Open(ctx, filepath.Join(dir, "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	hold, err := s.Sink("c", MainBranch).Hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	agent, tip, total := hold.Head()
	if agent != "demo" || tip == nil || tip.Key != keys[2] || tip.Index != 2 || total != 3 {
		t.Fatalf("the held head: %q, %+v, %d; want demo's, turn %s of 3", agent, tip, total, keys[2])
	}
	id := hold.id
	if f, h, err := other.tryRun(id); f != nil || h != nil || err != nil {
		t.Fatalf("another process locking the held branch: %v, %+v, %v; want it held, with no turn yet", f, h, err)
	}

	// the turn that takes the hold over reads nothing and follows the tip held
	sink := s.Sink("c", MainBranch)
	sink.Adopt(hold)
	r0, w0 := s.Reads()
	key, err := sink.BeginTurn(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r1, w1 := s.Reads(); r1+w1 != r0+w0 {
		t.Errorf("the turn taking the hold over ran %d reads; want none", r1+w1-r0-w0)
	}
	hold.Release() // taken over: a no-op
	if f, _, _ := other.tryRun(id); f != nil {
		t.Fatal("another process locked the branch while a turn ran on it")
	}
	tt := fixtureTurn(3, 0, false)
	for _, c := range tt.Calls {
		if err := sink.RecordCall(ctx, key, "", c); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.CommitTurn(ctx, key, tt); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(); err != nil {
		t.Fatal(err)
	}
	n, err := s.LoadTurn(ctx, key)
	if err != nil || n.Index != 3 {
		t.Fatalf("the turn begun on the hold: %+v, %v; want turn 3", n, err)
	}

	// a hold let go frees the branch, and a turn given it locks the branch itself
	hold, err = s.Sink("c", MainBranch).Hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hold.Release()
	hold.Release()
	sink.Adopt(hold)
	if _, err := runTurn(ctx, other.Sink("c", MainBranch), fixtureTurn(4, 0, false)); err != nil {
		t.Fatalf("another process's turn after the hold was let go: %v", err)
	}
	if _, err := runTurn(ctx, sink, fixtureTurn(5, 0, false)); err != nil {
		t.Fatalf("a turn given a hold already let go: %v", err)
	}
	if br, err := s.Branch(ctx, "c", MainBranch); err != nil || br.Length != 6 {
		t.Fatalf("the branch: %+v, %v; want 6 turns", br, err)
	}
}

// A hold is refused where a turn would be: on a closed conversation (without making
// the branch's journal) and on a read-only store.
func TestTurnHoldRefused(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	appendN(t, s, "c", MainBranch, 1)
	if err := s.SetStatus(ctx, "c", trace.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sink("c", MainBranch).Hold(ctx); !errors.Is(err, ErrClosedSession) {
		t.Errorf("a hold on a completed conversation: %v; want ErrClosedSession", err)
	}
	if _, err := s.Sink("c", "nope").Hold(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("a hold on a missing branch: %v; want ErrNotFound", err)
	}
	ro, err := openReadOnly(ctx, s.Path(), "opened read-only for the test")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Sink("c", MainBranch).Hold(ctx); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a hold on a read-only store: %v; want ErrReadOnly", err)
	}
}
