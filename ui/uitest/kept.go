package uitest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// keptTurn is a turn kept beside a branch: begun after parent, it did not complete.
type keptTurn struct {
	conv, branch, parent string
	kt                   sessions.KeptTurn
}

// keep records a turn that did not complete (err says how) and returns the error the real
// backend returns for it.
func (m *Memory) keep(ctx context.Context, conv, branch, parent string, index int, inputs *sig.Map, calls []*trace.Call, err error) error {
	st := trace.EndStatus(ctx, err)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	key := fmt.Sprintf("k%d", m.seq)
	t := &trace.Turn{Index: index, Inputs: inputs.Clone(), Calls: calls, Started: m.tick(), Status: st, Error: err.Error()}
	m.kept = append(m.kept, &keptTurn{conv: conv, branch: branch, parent: parent, kt: sessions.KeptTurn{
		Key: key, Index: index, Status: st, Reason: err.Error(), FailedCall: trace.FailedCall(calls), Turn: t}})
	return &sessions.KeptTurnError{Key: key, Turn: t.Clone(), Err: err}
}

func (m *Memory) KeptTurns(ctx context.Context, conv, branchName string) ([]sessions.KeptTurn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(conv)
	if err != nil {
		return nil, err
	}
	b, err := m.branchLocked(c, branchName)
	if err != nil {
		return nil, err
	}
	path := c.path(b.tip)
	var out []sessions.KeptTurn
	for _, k := range m.kept {
		if k.conv != conv || k.branch != branchName {
			continue
		}
		if i := k.kt.Index; (i == 0 && k.parent == "") || (i > 0 && i-1 < len(path) && path[i-1] == k.parent) {
			kt := k.kt
			kt.Turn = kt.Turn.Clone()
			out = append(out, kt)
		}
	}
	return out, nil
}

// Retry runs a kept turn's inputs (or the edited ones) again on its branch, which must
// still end at the turn's parent; the kept turn stays.
func (m *Memory) Retry(ctx context.Context, req sessions.RetryRequest, events chan<- sessions.Event) (string, *trace.Turn, error) {
	m.mu.Lock()
	i := slices.IndexFunc(m.kept, func(k *keptTurn) bool { return k.kt.Key == req.Key })
	if i < 0 {
		m.mu.Unlock()
		return "", nil, fmt.Errorf("retry: no kept turn %q", req.Key)
	}
	k := m.kept[i]
	c, err := m.convLocked(k.conv)
	var b *branch
	if err == nil {
		b, err = m.branchLocked(c, k.branch)
	}
	if err == nil && b.tip != k.parent {
		err = fmt.Errorf("branch %q moved since turn %s began", k.branch, req.Key)
	}
	inputs := k.kt.Turn.Inputs
	m.mu.Unlock()
	if err != nil {
		return "", nil, fmt.Errorf("retry turn %s: %w", req.Key, err)
	}
	if req.Branch != "" || req.NewBranch {
		return "", nil, errors.New("retry: the memory backend retries on the turn's own branch only")
	}
	if req.Inputs != nil {
		inputs = req.Inputs
	}
	t, err := m.runTurn(ctx, c, b, inputs, m.model, events)
	return k.branch, t, err
}

func (m *Memory) DeleteTurn(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.IndexFunc(m.kept, func(k *keptTurn) bool { return k.kt.Key == key })
	if i < 0 {
		return fmt.Errorf("delete turn %s: not a kept turn", key)
	}
	m.kept = slices.Delete(m.kept, i, i+1)
	return nil
}
