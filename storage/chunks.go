package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/sessionbench/sessionbench/core/trace"
)

// A session restored from a long unwindowed branch reads every turn's calls: at 1,000
// turns that read was most of the first Send of a process (`sessionbench run`), and
// nearly all of it is SQLite stepping rows and Go decoding them, one core's work. The
// restore read (NoRequests and NoHistories) is therefore split in chunks read at once
// on the reader pool's connections. Only that read: it reads no stored lists, so a
// chunk reads nothing another reads too (a full read's request lists share runs across
// turns, which chunks would each walk again). A chunk reads its own snapshot, which is
// the same: the turns are committed, and a committed turn never changes.
const (
	// minChunkTurns keeps short reads whole: a chunk on a connection that has not run
	// the read yet first prepares its statements.
	minChunkTurns = 256
	// maxChunks is the reader pool's size (Open): a chunk more would wait for one.
	maxChunks = 4
)

// restoreChunks is how many chunks a read of n turns with o is split in: 1 for a read
// that is not the restore read, or too short, or on one core, or routed into a write
// transaction (Warm: its one connection would take the chunks one after the other).
func (s *Store) restoreChunks(ctx context.Context, n int, o LoadOptions) int {
	o = o.effective()
	if !o.NoRequests || !o.NoHistories || o.HistoryOf != "" || s.r.routed(ctx) != nil {
		return 1
	}
	return max(min(n/minChunkTurns, runtime.GOMAXPROCS(0), maxChunks), 1)
}

// turnsInChunks is turnsOfChunk over k chunks of nodes read at once, in the order of
// nodes.
func (s *Store) turnsInChunks(ctx context.Context, nodes []*TurnNode, o LoadOptions, k int) ([]*trace.Turn, error) {
	out := make([]*trace.Turn, len(nodes))
	err := inChunks(ctx, len(nodes), k, func(ctx context.Context, lo, hi int) error {
		ts, err := s.turnsOfChunk(ctx, s.r, nodes[lo:hi], o)
		copy(out[lo:hi], ts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// windowInChunks is a branch window's nodes and turns (pathWindow, then turnsOfChunk),
// read in k chunks of depths at once: each chunk finds its last turn from the tip by
// the jump pointers and walks up from there, so the walk is split too.
func (s *Store) windowInChunks(ctx context.Context, tip sql.NullInt64, total, from, end int, o LoadOptions, k int) ([]*TurnNode, []*trace.Turn, error) {
	nodes := make([]*TurnNode, end-from)
	turns := make([]*trace.Turn, end-from)
	err := inChunks(ctx, end-from, k, func(ctx context.Context, lo, hi int) error {
		ns, err := pathWindow(ctx, s.r, tip, total, from+lo, hi-lo)
		if err != nil {
			return err
		}
		if len(ns) != hi-lo {
			return fmt.Errorf("storage: the branch changed while its turns %d to %d were read (%d found): %w", from+lo, from+hi-1, len(ns), ErrConflict)
		}
		ts, err := s.turnsOfChunk(ctx, s.r, ns, o)
		copy(nodes[lo:hi], ns)
		copy(turns[lo:hi], ts)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return nodes, turns, nil
}

// inChunks runs read on k chunks [lo, hi) of n items at once. A chunk's failure cancels
// the others; its error is returned rather than their cancellation.
func inChunks(ctx context.Context, n, k int, read func(ctx context.Context, lo, hi int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, k)
	size := (n + k - 1) / k
	var wg sync.WaitGroup
	for i := range k {
		lo, hi := i*size, min((i+1)*size, n)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = read(ctx, lo, hi); errs[i] != nil {
				cancel() // the other chunks' work is wasted
			}
		}()
	}
	wg.Wait()
	var canceled error
	for _, err := range errs {
		switch {
		case err == nil:
		case !errors.Is(err, context.Canceled):
			return err
		case canceled == nil:
			canceled = err
		}
	}
	return canceled
}
