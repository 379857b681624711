package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// dump is every row of every table of the store's database, as text.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	rows, err := s.r.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		rows, err := s.r.DB.QueryContext(ctx, "SELECT * FROM "+tb)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v\n", tb, vals)
		}
		rows.Close()
	}
	return b.String()
}

func nextTurnIDs(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	if err := s.r.QueryRowContext(context.Background(), "SELECT next FROM turn_ids").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWarmLeavesNoTrace checks that Warm changes nothing in the database, the turn id
// counter included, and that the first turn after it takes the id it would have taken
// without it (no gap).
func TestWarmLeavesNoTrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		turns int // on conversation c1's main branch; -1: no conversation
	}{
		{"empty database", -1},
		{"empty branch", 0},
		{"branch with turns", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "sb.db")
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.turns >= 0 {
				mustConv(t, s, "c1")
				appendN(t, s, "c1", MainBranch, tc.turns)
			}
			before, next := dump(t, s), nextTurnIDs(t, s)
			if err := s.Warm(ctx); err != nil {
				t.Fatal(err)
			}
			if got := nextTurnIDs(t, s); got != next {
				t.Errorf("after Warm the turn id counter is %d, want %d (nothing reserved)", got, next)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if after := dump(t, s); after != before {
				t.Errorf("Warm left a trace:\nbefore\n%s\nafter\n%s", before, after)
			}
			if tc.turns < 0 {
				return
			}
			// the first turn of a warmed store takes the first id of the block it reserves
			// for its branch
			if err := s.Warm(ctx); err != nil {
				t.Fatal(err)
			}
			key, err := runTurn(ctx, s.Sink("c1", MainBranch), fixtureTurn(tc.turns, 0, false))
			if err != nil {
				t.Fatal(err)
			}
			if key != turnKey(next) {
				t.Errorf("the first turn after Warm is %s, want %d", key, next)
			}
		})
	}
}

// TestWarmYieldsToWrites checks that a write wanting the writer connection while Warm's
// transaction holds it makes Warm roll back at once and start again after it: the write
// is not kept waiting for the warm-up, and the warm-up still ends complete. The writes:
// a rename, and a turn reserving turn ids (holding their lock while it waits).
func TestWarmYieldsToWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, s *Store) error
		check func(ctx context.Context, s *Store) error
	}{
		{"rename", func(ctx context.Context, s *Store) error {
			return s.SetTitle(ctx, "c1", "renamed during the warm-up")
		}, func(ctx context.Context, s *Store) error {
			c, err := s.Conversation(ctx, "c1")
			if err == nil && c.Title != "renamed during the warm-up" {
				err = fmt.Errorf("title %q", c.Title)
			}
			return err
		}},
		{"turn reserving ids", func(ctx context.Context, s *Store) error {
			// main has none reserved (appendN's turns take theirs from the counter):
			// this turn reserves a block for it
			_, err := runTurn(ctx, s.Sink("c1", MainBranch), fixtureTurn(2, 0, false))
			return err
		}, func(ctx context.Context, s *Store) error {
			b, err := s.Branch(ctx, "c1", MainBranch)
			if err == nil && b.Length != 3 {
				err = fmt.Errorf("%d turns on main, want 3", b.Length)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTemp(t)
			mustConv(t, s, "c1")
			appendN(t, s, "c1", MainBranch, 2)
			var mu sync.Mutex
			steps, wrote := 0, make(chan error, 1)
			warmStep = func(_ context.Context, turn int) {
				mu.Lock()
				defer mu.Unlock()
				steps++
				if steps != 2 {
					return
				}
				// a write arrives while the transaction holds the connection
				go func() { wrote <- tc.write(ctx, s) }()
				for s.warm.wanted.Load() == 0 {
				}
			}
			defer func() { warmStep = nil }()
			if err := s.Warm(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if steps <= 3 {
				t.Errorf("Warm ran %d turn steps: it did not start again after giving the writer away", steps)
			}
			if err := tc.check(ctx, s); err != nil {
				t.Error(err)
			}
			if n := s.wc.pendingCount(); n != 0 {
				t.Errorf("%d write statements left unprepared", n)
			}
		})
	}
}

// TestWarmBesideTurns runs Warm while turns are sent on another goroutine: every turn
// commits, and Warm leaves no conversation behind.
func TestWarmBesideTurns(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c1")
	var wg sync.WaitGroup
	var warmErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		warmErr = s.Warm(ctx)
	}()
	sink := s.Sink("c1", MainBranch)
	for i := range 5 {
		if _, err := runTurn(ctx, sink, fixtureTurn(i, 0, false)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if warmErr != nil && !errors.Is(warmErr, errYield) {
		t.Fatal(warmErr)
	}
	cs, err := s.ListConversations(ctx)
	if err != nil || len(cs) != 1 {
		t.Fatalf("%d conversations (%v), want c1 alone", len(cs), err)
	}
	b, err := s.Branch(ctx, "c1", MainBranch)
	if err != nil || b.Length != 5 {
		t.Fatalf("main holds %d turns (%v), want 5", b.Length, err)
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCloseStopsWarm checks that Close stops a warm-up under way and waits for it, that
// nothing of it stays, and that Warm on a closed store does nothing.
func TestCloseStopsWarm(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mustConv(t, s, "c1")
	before, next := dump(t, s), nextTurnIDs(t, s)
	inside := make(chan struct{})
	warmStep = func(ctx context.Context, turn int) {
		if turn == 1 {
			close(inside)
			<-ctx.Done() // held until Close stops it
		}
	}
	defer func() { warmStep = nil }()
	done := make(chan error, 1)
	go func() { done <- s.Warm(ctx) }()
	<-inside
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, errWarmClosed) {
		t.Errorf("Warm stopped by Close returned %v, want %v", err, errWarmClosed)
	}
	if err := s.Warm(ctx); err != nil {
		t.Errorf("Warm on a closed store: %v", err)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if after := dump(t, s); after != before || nextTurnIDs(t, s) != next {
		t.Errorf("a stopped warm-up left a trace:\nbefore\n%s\nafter\n%s", before, after)
	}
	sink := s.Sink("c1", MainBranch)
	if _, err := runTurn(ctx, sink, &trace.Turn{Inputs: sig.NewMap("question", "q")}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkWarm is what a warm-up costs a process, in the background: Warm on a freshly
// opened store (opening and closing it left out).
func BenchmarkWarm(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "sb.db")
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	s.CreateConversation(ctx, NewConversation{ID: "c1", Agent: "demo"})
	s.Close()
	var cpu time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		if s, err = Open(ctx, path); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0 := cpuTime()
		if err := s.Warm(ctx); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
		n++
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/op")
}
