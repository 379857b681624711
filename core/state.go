package core

import (
	"errors"
	"fmt"
)

// State is one independent state of a session blueprint (dspy-session's SessionState
// bound with use_state): its own turns, children, L2 memory and seed, over the blueprint's
// module and options. One blueprint serves any number of states (one per user, say):
// binding is a pointer lookup, and sessions bound to different states run concurrently
// without touching each other. A nested session found in the module gets its own state in
// each bound state too.
type State struct {
	blueprint *Session
	session   *Session
}

// ErrForeignState is returned when a state is bound to a session it was not made from.
var ErrForeignState = errors.New("state belongs to another session blueprint")

// NewState returns an empty state for this blueprint, seeded with its initial history
// (new_state()).
func (s *Session) NewState() (*State, error) {
	s.mu.Lock()
	module, opts, seed := s.module, s.opts, s.seed.Clone()
	s.mu.Unlock()
	ns, err := Sessionify(module, opts)
	if err != nil {
		return nil, fmt.Errorf("new state of %s: %w", s.name, err)
	}
	ns.seed = seed
	for _, ch := range ns.children {
		if ch.kind != childSession {
			continue
		}
		inner, err := ch.session.NewState()
		if err != nil {
			return nil, err
		}
		ch.session = inner.session
	}
	return &State{blueprint: s, session: ns}, nil
}

// UseState returns the session bound to st: calls, edits, examples and saves through it
// act on st alone (use_state(state)).
func (s *Session) UseState(st *State) (*Session, error) {
	if st == nil || st.blueprint != s {
		return nil, fmt.Errorf("session %s: %w", s.name, ErrForeignState)
	}
	return st.session, nil
}
