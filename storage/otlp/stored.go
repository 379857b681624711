package otlp

import (
	"context"

	"github.com/sessionbench/sessionbench/storage"
)

// Stored is a stored turn, with its conversation's title and agent, ready to export.
func Stored(ctx context.Context, s *storage.Store, conv, branch, key string) (Turn, error) {
	c, err := s.Conversation(ctx, conv)
	if err != nil {
		return Turn{}, err
	}
	t, err := s.LoadTurn(ctx, key)
	if err != nil {
		return Turn{}, err
	}
	return Turn{Conversation: conv, Title: c.Title, Agent: c.Agent, Branch: branch, Key: key, Turn: t}, nil
}

// Branch is every turn on a branch, ready to export.
func Branch(ctx context.Context, s *storage.Store, conv, branch string) ([]Turn, error) {
	c, err := s.Conversation(ctx, conv)
	if err != nil {
		return nil, err
	}
	n, err := s.BranchLen(ctx, conv, branch)
	if err != nil {
		return nil, err
	}
	page, err := s.LoadBranchRange(ctx, conv, branch, 0, n)
	if err != nil {
		return nil, err
	}
	out := make([]Turn, len(page.Turns))
	for i, t := range page.Turns {
		out[i] = Turn{Conversation: conv, Title: c.Title, Agent: c.Agent, Branch: branch, Key: page.Keys[i], Turn: t}
	}
	return out, nil
}
