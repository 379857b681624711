package storage

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
)

// commitChild records turn n (the branch's length) as the engine would, tells the parent
// (stdout "recorded"), and commits it once the file at goFile exists.
func commitChild(ctx context.Context, s *Store, conv, branch, goFile string) (string, error) {
	b, err := s.Branch(ctx, conv, branch)
	if err != nil {
		return "", err
	}
	sink := s.Sink(conv, branch)
	tr := fixtureTurn(b.Length, 0, true)
	key, _, err := recordAsEngine(ctx, sink, tr, false)
	if err != nil {
		return "", err
	}
	fmt.Println("recorded", key)
	for {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return key, sink.CommitTurn(ctx, key, tr)
}

// A turn CommitTurn returned is committed: its end is in its journal, its transaction
// runs beside (commitlater.go). When the process is killed before that transaction ran
// (here: another connection holds the write lock meanwhile), the first reader of the
// branch commits the turn onto it, calls, outputs and all, as the process would have;
// when the branch moved meanwhile, the turn is kept beside it, interrupted.
func TestCommittedTurnOutlivesItsProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	for _, moved := range []bool{false, true} {
		t.Run(fmt.Sprintf("branch moved %v", moved), func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "late.db")
			s, err := Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			mustConv(t, s, "S")
			const n = 3
			for i := range n {
				if _, err := runTurn(ctx, s.Sink("S", MainBranch), fixtureTurn(i, 0, true)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			goFile := filepath.Join(dir, "go")
			cmd, out, stderr := startChild(t, "commit", db, "S", MainBranch, "SB_GO="+goFile)
			defer func() {
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
			}()
			if !out.Scan() || !strings.HasPrefix(out.Text(), "recorded ") {
				t.Fatalf("child: %q %s", out.Text(), stderr)
			}
			key := strings.TrimPrefix(out.Text(), "recorded ")

			// hold the write lock, so the child's transaction cannot run
			holder, err := sql.Open("sqlite", db+"?_pragma=busy_timeout(10000)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			hold, err := holder.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(goFile, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if !out.Scan() || out.Text() != "committed "+key {
				t.Fatalf("child: %q %s", out.Text(), stderr)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			if moved { // as only a version of this program that took no journal lock could
				if _, err := hold.ExecContext(ctx, `UPDATE branches SET tip_id = (SELECT parent_id FROM turns WHERE id = tip_id)
					WHERE conv_id = 'S' AND name = 'main'`); err != nil {
					t.Fatal(err)
				}
				if err := hold.Commit(); err != nil {
					t.Fatal(err)
				}
			} else if err := hold.Rollback(); err != nil {
				t.Fatal(err)
			}

			path, err := s.BranchPath(ctx, "S", MainBranch)
			if err != nil {
				t.Fatal(err)
			}
			info, err := s.TurnInfo(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			want := fixtureTurn(n, 0, true)
			switch {
			case !moved && (len(path) != n+1 || path[n].Key != key || info.Status != trace.StatusCompleted):
				t.Fatalf("turn %s: %s, branch of %d turns; want it committed at its tip", key, info.Status, len(path))
			case moved && (len(path) != n-1 || info.Status != trace.StatusInterrupted):
				t.Fatalf("turn %s: %s, branch of %d turns; want it kept beside, interrupted", key, info.Status, len(path))
			}
			got, err := s.LoadTurns(ctx, []string{key})
			if err != nil {
				t.Fatal(err)
			}
			if toJSON(t, got[0].Calls) != toJSON(t, want.Calls) {
				t.Error("the turn's calls are not those recorded")
			}
			if !moved && toJSON(t, got[0].Outputs) != toJSON(t, want.Outputs) {
				t.Errorf("outputs %s, want %s", toJSON(t, got[0].Outputs), toJSON(t, want.Outputs))
			}
			if err := s.IntegrityCheck(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A turn whose transaction runs beside its CommitTurn is this process's at once: a read
// waits for the transaction, a turn or tip move of the branch follows it, and another
// process's tip move waits for it instead of finding the branch busy.
func TestCommittedTurnReadAtOnce(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	other, err := Open(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for i := range 20 {
		key, err := runTurn(ctx, s.Sink("S", MainBranch), fixtureTurn(i, 0, true))
		if err != nil {
			t.Fatal(err)
		}
		tip, _, err := s.BranchTip(ctx, "S", MainBranch)
		if err != nil || tip.Key != key {
			t.Fatalf("turn %d: tip %+v, %v; want turn %s", i, tip, err, key)
		}
		if i%5 == 4 {
			// another process's undo right after the Send waits for the transaction
			if _, err := runTurn(ctx, s.Sink("S", MainBranch), fixtureTurn(i+1, 0, true)); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Undo(ctx, "S", MainBranch, 1); err != nil {
				t.Fatalf("undo in another process right after a turn: %v", err)
			}
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
}
