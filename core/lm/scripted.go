package lm

import (
	"context"
	"fmt"
	"sync"
)

// Scripted is a deterministic model for tests. It answers from ByPath[path] (a queue per
// predictor path; the last answer repeats once the queue is down to one) or, failing that,
// from Seq in call order. Every request is kept in Calls.
type Scripted struct {
	mu     sync.Mutex
	ByPath map[string][]string
	Seq    []string
	// Func, when set, is asked first; ok=false falls through to the tables.
	Func  func(req Request) (text string, ok bool, err error)
	Calls []Request
	seqN  int
	pathN map[string]int
}

// Name reports the scripted model's name.
func (s *Scripted) Name() string { return "scripted" }

// Call answers from the script.
func (s *Scripted) Call(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("scripted model: %w", err)
	}
	s.mu.Lock()
	s.Calls = append(s.Calls, req)
	text, err := s.answer(req)
	s.mu.Unlock()
	if err != nil {
		return Response{}, err
	}
	if req.OnDelta != nil {
		req.OnDelta(text)
	}
	return Response{Text: text, Model: "scripted", Usage: Usage{CompletionTokens: len(text) / 4, TotalTokens: len(text) / 4},
		Tries: []Try{{N: 1}}}, nil
}

func (s *Scripted) answer(req Request) (string, error) {
	if s.Func != nil {
		text, ok, err := s.Func(req)
		if err != nil || ok {
			return text, err
		}
	}
	if q, ok := s.ByPath[req.Meta.Path]; ok && len(q) > 0 {
		if s.pathN == nil {
			s.pathN = map[string]int{}
		}
		i := s.pathN[req.Meta.Path]
		s.pathN[req.Meta.Path]++
		if i >= len(q) {
			i = len(q) - 1
		}
		return q[i], nil
	}
	if s.seqN < len(s.Seq) {
		s.seqN++
		return s.Seq[s.seqN-1], nil
	}
	return "", fmt.Errorf("scripted model: no answer for call %d (path %q)", len(s.Calls), req.Meta.Path)
}

// Requests returns a copy of the requests seen so far.
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.Calls...)
}
