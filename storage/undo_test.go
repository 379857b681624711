package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Undo, Redo and AppendTurn(s) move a branch's tip: while a turn is in flight on the
// branch, in another store, another process or this very store, they are refused as busy,
// naming the turn and its process, and change nothing; the turn then commits. Once the
// process running it is gone, they work (its turn kept first, as interrupted).
func TestTipMovesRefuseTurnInFlight(t *testing.T) {
	ctx := context.Background()
	ops := []struct {
		name, what string
		move       func(s *Store) error
	}{
		{"undo", "undone", func(s *Store) error { _, err := s.Undo(ctx, "S", MainBranch, 1); return err }},
		{"redo", "redone", func(s *Store) error { _, err := s.Redo(ctx, "S", MainBranch, 1); return err }},
		{"append turn", "stored", func(s *Store) error {
			_, err := s.AppendTurn(ctx, "S", MainBranch, fixtureTurn(9, 0, false))
			return err
		}},
		{"append turns", "stored", func(s *Store) error {
			_, err := s.AppendTurns(ctx, "S", MainBranch, []*trace.Turn{fixtureTurn(9, 0, false)})
			return err
		}},
	}
	for _, by := range []string{"this store", "another store", "another process"} {
		for _, op := range ops {
			t.Run(by+", "+op.name, func(t *testing.T) {
				if by == "another process" && testing.Short() {
					t.Skip("spawns processes")
				}
				db := filepath.Join(t.TempDir(), "tip.db")
				s, err := Open(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				mustConv(t, s, "S")
				appendN(t, s, "S", MainBranch, 3)
				if _, err := s.Undo(ctx, "S", MainBranch, 1); err != nil { // something to redo
					t.Fatal(err)
				}
				before := branchJSON(t, s, "S", MainBranch)

				var sink *BranchSink
				var key string
				pid := os.Getpid()
				switch by {
				case "this store":
					sink = s.Sink("S", MainBranch)
				case "another store":
					other, err := Open(ctx, db)
					if err != nil {
						t.Fatal(err)
					}
					defer other.Close()
					sink = other.Sink("S", MainBranch)
				case "another process":
					cmd, out, stderr := startChild(t, "hold", db, "S", MainBranch)
					defer func() {
						cmd.Process.Signal(syscall.SIGKILL)
						cmd.Wait()
					}()
					if !out.Scan() || !strings.HasPrefix(out.Text(), "began ") {
						t.Fatalf("child: %q %s", out.Text(), stderr)
					}
					key, pid = strings.TrimPrefix(out.Text(), "began "), cmd.Process.Pid
					defer func() {
						// gone: the tip moves, its turn kept first, as interrupted
						cmd.Process.Signal(syscall.SIGKILL)
						cmd.Wait()
						if err := op.move(s); err != nil {
							t.Errorf("%s once the process is gone: %v", op.name, err)
						}
						if info, err := s.TurnInfo(ctx, key); err != nil || info.Status != trace.StatusInterrupted {
							t.Errorf("its turn: %+v, %v; want it kept as interrupted", info, err)
						}
					}()
				}
				tr := fixtureTurn(2, 0, false)
				if sink != nil {
					if key, err = sink.BeginTurn(ctx, tr.Inputs); err != nil {
						t.Fatal(err)
					}
				}

				err = op.move(s)
				want := fmt.Sprintf(`(id %s) is running in process %d on `, key, pid)
				if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing was "+op.what) {
					t.Fatalf("%s: %v; want it refused saying %q and that nothing was %s", op.name, err, want, op.what)
				}
				if got := branchJSON(t, s, "S", MainBranch); got != before {
					t.Errorf("the branch changed:\n%s\nwant\n%s", got, before)
				}
				if sink == nil {
					return
				}
				if err := sink.CommitTurn(ctx, key, tr); err != nil {
					t.Fatalf("the turn in flight, committed: %v", err)
				}
				if b, _ := s.Branch(ctx, "S", MainBranch); b.Tip != key {
					t.Errorf("the tip is %s, want the turn committed, %s", b.Tip, key)
				}
			})
		}
	}
}

// The refusal is taken under the journal lock a turn holds, so it has no window: turns
// and undos/redos racing on one branch from two stores never make a turn's commit fail
// (the branch moved under it); each side is at most refused as busy.
func TestTipMovesRaceTurns(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	appendN(t, s, "S", MainBranch, 2)
	other, err := Open(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const rounds = 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	var turns, moves int
	stop := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(stop)
		sink := s.Sink("S", MainBranch)
		for i := range rounds {
			b, err := s.Branch(ctx, "S", MainBranch)
			if err != nil {
				errs <- err
				return
			}
			tr := fixtureTurn(b.Length, 0, i%4 == 0)
			key, err := sink.BeginTurn(ctx, tr.Inputs)
			for _, c := range tr.Calls { // in flight a while: the other store tries meanwhile
				if err == nil {
					time.Sleep(time.Millisecond)
					err = sink.RecordCall(ctx, key, "", c)
				}
			}
			if err == nil {
				err = sink.CommitTurn(ctx, key, tr)
			}
			time.Sleep(2 * time.Millisecond) // the other store gets the branch between turns too
			switch {
			case err == nil:
				turns++
			case !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "or moving its tip"):
				errs <- fmt.Errorf("turn %d: %w", i, err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if i%2 == 0 {
				_, err = other.Undo(ctx, "S", MainBranch, 1)
			} else {
				_, err = other.Redo(ctx, "S", MainBranch, 1)
			}
			time.Sleep(time.Millisecond) // the turns' side gets the lock too
			switch {
			case err == nil:
				moves++
			case !errors.Is(err, ErrBusy):
				errs <- fmt.Errorf("move %d: %w", i, err)
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tree, err := s.TurnTree(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tree {
		if n.Status != trace.StatusCompleted {
			t.Errorf("turn %s is %s: %s", n.Key, n.Status, n.Error)
		}
	}
	t.Logf("%d of %d turns committed, %d undos and redos meanwhile", turns, rounds, moves)
	checkIntegrity(t, s)
}

// A tip move and a turn beginning wait for each other's moment with the lock (a holder
// that has written no turn is not one in flight): a turn begun while the lock is held
// that long is refused, saying so; once let go, it begins.
func TestBeginWaitsForTipMove(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	br, err := s.Branch(ctx, "S", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	f, h, err := s.lockRun(ctx, br.ID) // as moveTip holds it
	if err != nil || f == nil {
		t.Fatalf("lock: %v %v", h, err)
	}
	sink := s.Sink("S", MainBranch)
	if _, err := sink.BeginTurn(ctx, sig.NewMap("q", "1")); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "moving its tip") {
		t.Errorf("begin while the lock stays held: %v", err)
	}
	if _, err := s.Undo(ctx, "S", MainBranch, 1); !errors.Is(err, ErrBusy) {
		t.Errorf("undo while the lock stays held: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		key, err := sink.BeginTurn(ctx, sig.NewMap("q", "2"))
		if err == nil {
			err = sink.AbortTurn(ctx, key, &trace.Turn{Status: trace.StatusCancelled})
		}
		done <- err
	}()
	f.Close() // while BeginTurn waits, mostly
	if err := <-done; err != nil {
		t.Errorf("begin once the lock is let go: %v", err)
	}
}
