package storage

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A journal is retired beside the commit: this process's next turn, tip move and reader
// of turns in flight find it empty, and another process that finds it still locked by
// the ended turn waits for the branch instead of calling it busy; a holder whose turn is
// still in flight is busy at once.
func TestRetiredBesideTheCommit(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "x")
	sink := s.Sink("x", MainBranch)
	for i := range 3 {
		if _, err := runTurn(ctx, sink, fixtureTurn(i, 0, false)); err != nil {
			t.Fatal(err)
		}
		// each at once after the commit, while the journal may still be retiring
		switch i {
		case 0:
			if runs, err := s.liveRuns(ctx); err != nil || len(runs) != 0 {
				t.Fatalf("turns in flight after a commit: %d %v", len(runs), err)
			}
		case 1:
			if _, err := s.Undo(ctx, "x", MainBranch, 1); err != nil {
				t.Fatalf("undo at once after a commit: %v", err)
			}
		}
	}
	br, err := branchByName(ctx, s.r, "x", MainBranch)
	if err != nil {
		t.Fatal(err)
	}

	// Another process's view: the journal held by a file whose turn is stored, ended.
	other, err := Open(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holding := func(id int64) *os.File {
		t.Helper()
		s.awaitAllRetired()
		f, err := os.OpenFile(s.runPath(br.ID), os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := tryLock(f, true); !ok || err != nil {
			t.Fatalf("lock: %v %v", ok, err)
		}
		if err := appendRecord(f, &runHeader{V: journalVersion, ID: id, Conv: "x", Branch: MainBranch, BranchID: br.ID,
			PID: os.Getpid(), Host: hostName(), Started: now()}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := holding(br.tipID.Int64)
	released := make(chan time.Time, 1)
	go func(f *os.File) {
		time.Sleep(30 * time.Millisecond)
		f.Truncate(0)
		released <- time.Now()
		f.Close()
	}(f)
	osink := other.Sink("x", MainBranch)
	key, err := osink.BeginTurn(ctx, sig.NewMap("question", "next"))
	began := time.Now()
	if err != nil {
		t.Fatalf("a turn beginning while the ended turn's journal was retiring: %v", err)
	}
	if at := <-released; began.Before(at) {
		t.Errorf("the turn began before the journal was let go")
	}
	if err := osink.AbortTurn(ctx, key, &trace.Turn{Status: trace.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	other.awaitAllRetired()

	// A holder whose turn is in flight (not in the database) is busy at once.
	inFlight := holding(1 << 40)
	defer inFlight.Close()
	t0 := time.Now()
	if _, err := other.Sink("x", MainBranch).BeginTurn(ctx, sig.NewMap("question", "busy")); !errors.Is(err, ErrBusy) {
		t.Fatalf("a turn in flight elsewhere: %v", err)
	}
	if d := time.Since(t0); d > holderWait/2 {
		t.Errorf("a turn in flight elsewhere was waited for (%v)", d)
	}
}
