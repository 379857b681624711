package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// setOwner makes turn key, begun by sink, a row stored running by an earlier version of
// this program (which kept turns in flight in the database under a lease), owned by pid
// on host until lease.
func setOwner(t *testing.T, s *Store, sink *BranchSink, key string, pid int, host string, lease time.Time) {
	t.Helper()
	sink.abandon(key)
	if _, err := s.PendingTurns(context.Background()); err != nil { // imports its journal
		t.Fatal(err)
	}
	id, _ := parseTurnKey(key)
	err := s.write(context.Background(), func(tx *wtx) error {
		_, err := tx.Exec("UPDATE turns SET owner_pid = ?, owner_host = ?, owner_id = 'v10', lease_until = ? WHERE id = ?", pid, host, fmtTime(lease), id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// holdJournal stands for another live process running turn key: sink lets go of the
// turn's journal and the test takes its lock.
func holdJournal(t *testing.T, s *Store, sink *BranchSink, key string) {
	t.Helper()
	r := sink.runs[key]
	path := r.f.Name()
	sink.abandon(key)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if ok, err := tryLock(f, true); !ok || err != nil {
		t.Fatalf("lock %s: %v %v", path, ok, err)
	}
}

// deadPID is the pid of a process of this host that has exited (and been reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestTurnOwnership: a running turn keeps its branch busy while its owner is alive and
// is interrupted (superseded by new input, resumable) once its owner is gone, whichever
// way it went.
func TestTurnOwnership(t *testing.T) {
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	cases := []struct {
		name  string
		owner func(t *testing.T, s *Store, sink *BranchSink, key string)
		alive bool
	}{
		{"this process", func(*testing.T, *Store, *BranchSink, string) {}, true},
		{"another process holds its journal", func(t *testing.T, s *Store, sink *BranchSink, key string) {
			holdJournal(t, s, sink, key)
		}, true},
		{"its process was killed", func(t *testing.T, s *Store, sink *BranchSink, key string) { crash(t, s, sink, key) }, false},
		{"earlier version: another host, lease valid", func(t *testing.T, s *Store, sink *BranchSink, key string) {
			setOwner(t, s, sink, key, 4242, "elsewhere.example", later)
		}, true},
		{"earlier version: another host, lease ran out", func(t *testing.T, s *Store, sink *BranchSink, key string) {
			setOwner(t, s, sink, key, 4242, "elsewhere.example", time.Now().Add(-time.Minute))
		}, false},
		{"earlier version: process of this host gone, lease valid", func(t *testing.T, s *Store, sink *BranchSink, key string) {
			setOwner(t, s, sink, key, deadPID(t), hostName(), later)
		}, false},
		{"interrupted by a signal", func(t *testing.T, _ *Store, sink *BranchSink, key string) {
			if err := sink.AbortTurn(ctx, key, &trace.Turn{Status: trace.StatusInterrupted, Error: "terminated"}); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			mustConv(t, s, "S")
			appendN(t, s, "S", MainBranch, 1)
			first := s.Sink("S", MainBranch)
			key, err := first.BeginTurn(ctx, sig.NewMap("question", "first"))
			if err != nil {
				t.Fatal(err)
			}
			tc.owner(t, s, first, key)
			p, err := s.PendingTurn(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			wantStatus := trace.StatusInterrupted
			if tc.alive {
				wantStatus = trace.StatusRunning
			}
			if p.Status != wantStatus || p.Resumable() == tc.alive {
				t.Fatalf("pending: status %s resumable %v, want %s", p.Status, p.Resumable(), wantStatus)
			}
			second := s.Sink("S", MainBranch)
			k2, err := second.BeginTurn(ctx, sig.NewMap("question", "second"))
			if tc.alive {
				if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf(`branch "main" is busy: turn %d (id %s) is running in process %d on %s`, p.Index, key, p.Owner.PID, p.Owner.Host)) {
					t.Fatalf("second writer: %v", err)
				}
				if err := second.Resume(ctx, key); !errors.Is(err, ErrBusy) {
					t.Fatalf("resume of a live turn: %v", err)
				}
				if err := s.DiscardTurn(ctx, key, "x"); !errors.Is(err, ErrBusy) {
					t.Fatalf("discard of a live turn: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("second writer after the owner left: %v", err)
			}
			kept, _ := s.KeptTurns(ctx, "S", MainBranch)
			if len(kept) != 2 || kept[0].Key != key || kept[0].Status != trace.StatusCancelled || kept[0].Error != "superseded by a new turn" ||
				kept[1].Key != k2 || kept[1].Status != trace.StatusRunning || kept[1].Owner.PID != os.Getpid() {
				t.Fatalf("kept: %+v", kept)
			}
			// The superseded turn's old owner, had it survived, can no longer write to it.
			if err := first.RecordCall(ctx, key, "", fixtureCall(1, 1, "a", 0, false)); !errors.Is(err, ErrConflict) {
				t.Errorf("old owner writes to a superseded turn: %v", err)
			}
		})
	}
}

// TestFailedTurnRetry: a failed turn keeps every call it made, stays beside the branch
// (not in its history), and its retry is a new turn that pays only for the failed call
// and what follows; the failed turn stays as it was.
func TestFailedTurnRetry(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	appendN(t, s, "S", MainBranch, 2)
	tr := fixtureTurn(2, 0, true)
	good, bad := tr.Calls[0].Children[0], tr.Calls[0]
	bad.Error, bad.Outputs, bad.Completion = "predictor agent.planner: cut stream", nil, "[[ ## answer ## ]]\nStep 2 of"
	bad.Tries = []lm.Try{{N: 1, Status: 200, Err: "stream cut after 10 bytes"}}
	sink := s.Sink("S", MainBranch)
	key, err := sink.BeginTurn(ctx, tr.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.RecordCall(ctx, key, bad.ID, good); err != nil {
		t.Fatal(err)
	}
	failed := &trace.Turn{Inputs: tr.Inputs, Status: trace.StatusFailed, Error: bad.Error, Calls: []*trace.Call{bad}}
	if err := sink.AbortTurn(ctx, key, failed); err != nil {
		t.Fatal(err)
	}
	path, _ := s.BranchPath(ctx, "S", MainBranch)
	if len(path) != 2 {
		t.Fatalf("a failed turn entered the branch: %d turns", len(path))
	}
	got, err := s.LoadTurn(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != trace.StatusFailed || got.Error != bad.Error || len(got.Calls) != 1 || len(got.Calls[0].Children) != 1 ||
		got.Calls[0].Error != bad.Error || got.Calls[0].Completion != bad.Completion || got.Calls[0].Tries[0].Err != "stream cut after 10 bytes" ||
		got.Calls[0].RawRequest != bad.RawRequest || got.Calls[0].Children[0].Error != "" {
		t.Fatalf("failed turn as stored: %+v", got)
	}
	list, _ := s.ListConversations(ctx)
	if len(list) != 1 || list[0].Kept[trace.StatusFailed] != 1 || list[0].Pending != 0 || list[0].Turns != 2 {
		t.Fatalf("listing: %+v", list)
	}
	if err := s.DiscardTurn(ctx, key, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("discard of a failed turn (not in flight): %v", err)
	}

	// Retry: a new turn on the branch; the answered call is replayed, the failed one paid.
	retry := s.Sink("S", MainBranch)
	if err := retry.Resume(ctx, key); err != nil {
		t.Fatal(err)
	}
	k2, err := retry.BeginTurn(ctx, tr.Inputs)
	if err != nil || k2 == key {
		t.Fatalf("retry began %s (%v); want a new turn beside %s", k2, err, key)
	}
	paid := &countingLM{}
	model := s.ReplayLM(key, paid)
	ok := fixtureTurn(2, 0, true)
	var rec func(parent string, c *trace.Call)
	rec = func(parent string, c *trace.Call) {
		for _, ch := range c.Children {
			rec(c.ID, ch)
		}
		if _, err := model.Call(ctx, lm.Request{Messages: c.Messages, Params: c.Params, Meta: lm.Meta{Path: c.Path}}); err != nil {
			t.Fatal(err)
		}
		if err := retry.RecordCall(ctx, k2, parent, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range ok.Calls {
		rec("", c)
	}
	if Replayed(model) != 1 || paid.calls != 2 {
		t.Errorf("retry replayed %d and paid %d calls; want 1 replayed (the answered one), 2 paid (the failed one and the next)", Replayed(model), paid.calls)
	}
	if err := retry.CommitTurn(ctx, k2, ok); err != nil {
		t.Fatal(err)
	}
	path, _ = s.BranchPath(ctx, "S", MainBranch)
	if len(path) != 3 || path[2].Key != k2 || path[2].RetryOf != key || path[2].Status != trace.StatusCompleted {
		t.Fatalf("after retry: %+v", path[len(path)-1])
	}
	kept, _ := s.KeptTurns(ctx, "S", MainBranch)
	if len(kept) != 1 || kept[0].Key != key || kept[0].Status != trace.StatusFailed || kept[0].Calls != 2 {
		t.Fatalf("the failed turn after its retry: %+v", kept)
	}
	// It cannot be retried again here: the branch moved on.
	if err := s.Sink("S", MainBranch).Resume(ctx, key); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "new branch that starts after turn 1") {
		t.Errorf("retry after the branch moved: %v", err)
	}
	if err := s.Sink("S", MainBranch).Resume(ctx, k2); !errors.Is(err, ErrConflict) {
		t.Errorf("retry of a completed turn: %v", err)
	}

	// Delete: a kept turn goes with its calls; completed turns are refused.
	if err := s.DeleteTurn(ctx, k2); !errors.Is(err, ErrInvalid) {
		t.Errorf("delete of a completed turn: %v", err)
	}
	if err := s.DeleteTurn(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadTurn(ctx, key); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted turn still loads: %v", err)
	}
	if p, _ := s.BranchPath(ctx, "S", MainBranch); len(p) != 3 || p[2].RetryOf != "" {
		t.Errorf("after deleting the failed turn: %+v", p[len(p)-1])
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTurnInFlightLivesInItsJournal: a turn in flight is not in the database but in its
// branch's journal, which readers show as running; a record a kill cut short is dropped
// and the rest kept; an ended turn empties its journal, and a closed store removes it.
func TestTurnInFlightLivesInItsJournal(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	appendN(t, s, "S", MainBranch, 1)
	tr := fixtureTurn(1, 0, true)
	sink := s.Sink("S", MainBranch)
	key, err := sink.BeginTurn(ctx, tr.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	all0, _ := s.Commits()
	if err := sink.RecordCall(ctx, key, "t1.c1", tr.Calls[0].Children[0]); err != nil {
		t.Fatal(err)
	}
	if err := sink.RecordCall(ctx, key, "", tr.Calls[0]); err != nil {
		t.Fatal(err)
	}
	id, _ := parseTurnKey(key)
	if _, err := turnNode(ctx, s.r, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a turn in flight is in the database: %v", err)
	}
	if all, _ := s.Commits(); all != all0 {
		t.Fatalf("recording calls committed %d times", all-all0)
	}
	p, err := s.PendingTurn(ctx, key)
	if err != nil || p.Status != trace.StatusRunning || p.Index != 1 || !p.Owner.Alive || p.Owner.PID != os.Getpid() ||
		len(p.Calls) != 1 || len(p.Calls[0].Children) != 1 || p.Calls[0].Completion != tr.Calls[0].Completion {
		t.Fatalf("turn in flight: %+v %v", p, err)
	}
	// A record cut short, as a kill in the middle of a write leaves it.
	path := sink.runs[key].f.Name()
	if _, err := sink.runs[key].f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, '{', '"'}); err != nil {
		t.Fatal(err)
	}
	crash(t, s, sink, key)
	p, err = s.PendingTurn(ctx, key)
	if err != nil || p.Status != trace.StatusInterrupted || !p.Resumable() || len(p.Calls) != 1 || len(p.Calls[0].Children) != 1 ||
		p.Calls[0].Messages.At(0).Content != tr.Calls[0].Messages.At(0).Content {
		t.Fatalf("after the kill: %+v %v", p, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("an imported journal is not emptied: %v", err)
	}
	// Resumed and committed: no journal left, no owner kept.
	if err := sink.Resume(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := runTurn(ctx, sink, tr); err != nil {
		t.Fatal(err)
	}
	s.awaitAllRetired() // emptied beside the commit
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("a committed turn's journal is not emptied: %v", err)
	}
	n, _ := turnNode(ctx, s.r, id)
	if n == nil || n.Owner != nil || n.Status != trace.StatusCompleted || n.Calls != 3 {
		t.Errorf("committed: %+v", n)
	}
	// Empty journals stay as long as the store; once it is closed, nothing is left but
	// a journal another process holds.
	other := filepath.Join(filepath.Dir(path), "b999")
	held, err := os.Create(other)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if ok, err := tryLock(held, true); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty journal is left after Close: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a journal another process holds was removed: %v", err)
	}
	held.Close()
	s, err = Open(ctx, s.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal directory is left after Close: %v", err)
	}
}

// A journal this program cannot read is reported with its path when its branch is used,
// and left for the user: nothing in it is lost by guessing.
func TestForeignJournal(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	b, err := s.Branch(ctx, "S", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.runsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(s.runPath(b.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := appendRecord(f, map[string]any{"v": 99, "id": 5}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := s.ListConversations(ctx); err != nil {
		t.Errorf("listing with a foreign journal: %v", err)
	}
	_, err = s.Sink("S", MainBranch).BeginTurn(ctx, sig.NewMap("q", "x"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), s.runPath(b.ID)) || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("begin beside a foreign journal: %v", err)
	}
	if fi, err := os.Stat(s.runPath(b.ID)); err != nil || fi.Size() == 0 {
		t.Errorf("the foreign journal was not left as it was: %v", err)
	}
}

// A journaled call that repeats the request and history of the same predictor's call in
// the turn before is recorded as the rest of them, and comes back whole when a killed
// process's journal is imported.
func TestJournalSharesTheTurnBefore(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	sink := s.Sink("S", MainBranch)
	var prev *trace.Turn
	for i := range 3 {
		prev = fixtureTurn(i, 0, true)
		if i > 0 { // the answer's history is the one before plus one entry, shared
			h := prev.Calls[1].History.Messages
			prev.Calls[1].History = sig.History{Messages: append(h[:len(h):len(h)], sig.NewMap("question", fmt.Sprint(i)))}
		}
		if _, err := runTurn(ctx, sink, prev); err != nil {
			t.Fatal(err)
		}
	}
	tr := fixtureTurn(3, 0, true)
	h := prev.Calls[1].History.Messages
	tr.Calls[1].History = sig.History{Messages: append(h[:len(h):len(h)], sig.NewMap("question", "3"))}
	tr.Calls[1].Messages = lm.MessagesOf(append(prev.Calls[1].Messages.Slice(), lm.Message{Role: "user", Content: "and now?"}))
	key, err := sink.BeginTurn(ctx, tr.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.RecordCall(ctx, key, "", tr.Calls[1]); err != nil {
		t.Fatal(err)
	}
	_, calls, err := readJournal(sink.runs[key].f)
	if err != nil || len(calls) != 1 || calls[0].Base == nil || calls[0].Base.Msgs != prev.Calls[1].Messages.Len() ||
		calls[0].Base.Hist != len(h) || calls[0].Call.Messages.Len() != 1 || len(calls[0].Call.History.Messages) != 1 {
		t.Fatalf("journaled: %+v %v", calls, err)
	}
	crash(t, s, sink, key)
	p, err := s.PendingTurn(ctx, key)
	if err != nil || len(p.Calls) != 1 {
		t.Fatalf("imported: %+v %v", p, err)
	}
	if got, want := toJSON(t, p.Calls[0].Messages), toJSON(t, tr.Calls[1].Messages); got != want {
		t.Errorf("request comes back as\n%s\nwant\n%s", got, want)
	}
	id, _ := parseTurnKey(key)
	loaded, err := loadCalls(ctx, s.r, []int64{id}, LoadOptions{HistoryOf: tr.Calls[1].ID}, newDecoder())
	if err != nil || len(loaded[id]) != 1 {
		t.Fatal(loaded, err)
	}
	if got, want := toJSON(t, loaded[id][0].History), toJSON(t, tr.Calls[1].History); got != want {
		t.Errorf("history comes back as\n%s\nwant\n%s", got, want)
	}
}

// The turns that have not ended are read through their partial index, not by scanning
// every turn stored: the query plan names turns_unended and no full scan of turns.
func TestPendingTurnsUseTheirIndex(t *testing.T) {
	s := openTemp(t)
	rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+pendingTurnsQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(plan, "; ")
	if !strings.Contains(all, "SCAN t USING INDEX turns_unended") {
		t.Errorf("the pending turns' plan is %q; want a scan of index turns_unended", all)
	}
}
