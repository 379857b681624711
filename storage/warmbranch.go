package storage

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core/trace"
)

// WarmBranch puts the request and history lists of the calls of the branch's tip turn
// into the write cache, as committing that turn left them in the process that ran it. The
// next turn's requests repeat them, so its commit finds the shared prefix in the cache;
// in a process that has not written on the branch yet, it would otherwise look the prefix
// up and read every text of it back (a third of a first Send's time on a 10,000-turn
// unwindowed branch). The workbench calls it (through Prefetch) while the user types.
// It writes nothing: a list that is not stored exactly as the call's is left out.
func (s *Store) WarmBranch(ctx context.Context, convID, branch string) error {
	if s.readOnly != "" || s.wc == nil {
		return nil
	}
	leave, ok := s.warm.join() // Close waits for it
	if !ok {
		return nil
	}
	defer leave()
	return s.writeLight(ctx, func(tx *wtx) error {
		br, err := branchByName(ctx, tx, convID, branch)
		if err != nil || !br.tipID.Valid {
			return err
		}
		calls, err := loadCalls(ctx, tx, []int64{br.tipID.Int64}, LoadOptions{}, newDecoder())
		if err != nil {
			return err
		}
		var walkErr error
		trace.WalkCalls(calls[br.tipID.Int64], func(c *trace.Call, _ int) {
			if walkErr == nil {
				walkErr = warmLists(ctx, s.wc, tx, c)
			}
		})
		return walkErr
	})
}

// warmLists caches c's stored request and history lists under the keys insertCall
// stores the next ones with.
func warmLists(ctx context.Context, wc *writeCache, tx *wtx, c *trace.Call) error {
	lists := []struct {
		key   string
		items func(key string) []listItem
	}{
		{"h\x00" + c.Path, func(key string) []listItem { return historyItems(wc, key, c.History) }},
		{"m\x00" + c.Path, func(string) []listItem { return messageItems(c.Messages) }},
	}
	for _, l := range lists {
		if len(wc.path(l.key).items) > 0 {
			continue // this process has it already
		}
		items := l.items(l.key)
		if len(items) == 0 {
			continue
		}
		if _, n, err := storedPrefix(ctx, wc, tx, items); err != nil {
			return fmt.Errorf("storage: warm branch: %w", err)
		} else if n != len(items) {
			continue // stored otherwise (a run): putList would write
		}
		if _, err := putList(ctx, wc, tx, l.key, items); err != nil { // all cached: writes nothing
			return fmt.Errorf("storage: warm branch: %w", err)
		}
	}
	return nil
}
