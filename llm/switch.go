package llm

import (
	"context"
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
)

// Switch is a model that can be replaced while the program runs: the workbench starts on
// the model Resolve took and its model picker switches to another of the server's
// models. A call goes wholly to the model current when it starts.
type Switch struct {
	mu  sync.RWMutex
	cur lm.LM
}

// NewSwitch starts on m.
func NewSwitch(m lm.LM) *Switch { return &Switch{cur: m} }

// Set makes m the model of the calls that start from now on.
func (s *Switch) Set(m lm.LM) {
	s.mu.Lock()
	s.cur = m
	s.mu.Unlock()
}

// Current is the model calls go to now.
func (s *Switch) Current() lm.LM {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// Name is the current model's name.
func (s *Switch) Name() string { return s.Current().Name() }

// Call sends the request to the current model.
func (s *Switch) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	return s.Current().Call(ctx, req)
}

// Preconnecter is a model that can open its connection to its server ahead of a call
// (OpenAI.Preconnect).
type Preconnecter interface {
	Preconnect(ctx context.Context)
}

// Preconnect opens the current model's connection ahead of a call, when it has one.
func (s *Switch) Preconnect(ctx context.Context) {
	if p, ok := s.Current().(Preconnecter); ok {
		p.Preconnect(ctx)
	}
}
