package uitest

import (
	"context"
	"fmt"
	"slices"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// pendingTurn is an interrupted turn: begun after parent (the tip then), with done calls
// finished.
type pendingTurn struct {
	info   sessions.PendingInfo
	parent string
}

// AddPending records an interrupted turn on a branch's tip, as a crash during its call
// number callsDone+1 would leave it, and returns its key.
func (m *Memory) AddPending(id, branchName string, inputs *sig.Map, callsDone int) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return "", err
	}
	b, err := m.branchLocked(c, branchName)
	if err != nil {
		return "", err
	}
	m.seq++
	key := fmt.Sprintf("p%d", m.seq)
	m.pending = append(m.pending, &pendingTurn{parent: b.tip, info: sessions.PendingInfo{
		Conv: id, ConvTitle: c.info.Title, Branch: branchName, TurnKey: key, Index: len(c.path(b.tip)),
		Inputs: inputs.Clone(), Started: m.tick(), CallsDone: callsDone, CallsExpected: 2}})
	return key, nil
}

func (m *Memory) Pending(ctx context.Context, conv string) ([]sessions.PendingInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sessions.PendingInfo
	for _, p := range m.pending {
		if conv != "" && p.info.Conv != conv {
			continue
		}
		info := p.info
		info.Inputs = info.Inputs.Clone()
		c, ok := m.convs[info.Conv]
		b := (*branch)(nil)
		if ok {
			b = c.branches[info.Branch]
		}
		info.Stale = b == nil || b.tip != p.parent
		out = append(out, info)
	}
	return out, nil
}

// takePendingLocked removes the pending turn key and returns it.
func (m *Memory) takePendingLocked(key string) (*pendingTurn, error) {
	i := slices.IndexFunc(m.pending, func(p *pendingTurn) bool { return p.info.TurnKey == key })
	if i < 0 {
		return nil, fmt.Errorf("no pending turn %q", key)
	}
	p := m.pending[i]
	m.pending = slices.Delete(m.pending, i, i+1)
	return p, nil
}

// Resume runs the pending turn's inputs on its branch like Send (the echo model has
// nothing to replay); a failed or cancelled resume drops the turn, as the real backend's.
func (m *Memory) Resume(ctx context.Context, key string, events chan<- sessions.Event) (*trace.Turn, error) {
	m.mu.Lock()
	p, err := m.takePendingLocked(key)
	var c *conv
	var b *branch
	if err == nil {
		c, err = m.convLocked(p.info.Conv)
	}
	if err == nil {
		b, err = m.branchLocked(c, p.info.Branch)
	}
	if err == nil && b.tip != p.parent {
		m.pending = append(m.pending, p)
		err = fmt.Errorf("turn %s: branch %q moved since it began; it can only be discarded", key, p.info.Branch)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return m.runTurn(ctx, c, b, p.info.Inputs, m.model, events)
}

func (m *Memory) Discard(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.takePendingLocked(key)
	if err != nil {
		return fmt.Errorf("discard: %w", err)
	}
	return nil
}

// supersede drops the branch's interrupted turns: a new turn replaces them, as in the
// real backend.
func (m *Memory) supersede(conv, branch string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = slices.DeleteFunc(m.pending, func(p *pendingTurn) bool {
		return p.info.Conv == conv && p.info.Branch == branch
	})
}
