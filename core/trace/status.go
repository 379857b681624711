package trace

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Status is the one lifecycle status type (seed 003) of everything that has a
// lifecycle: conversations and turns. The two share the values they have in common
// (completed, failed, cancelled) so a reader meets one set of names everywhere: in
// Go, in the database and in JSON.
type Status string

const (
	// StatusInProgress: a conversation that is active and takes turns and retries.
	StatusInProgress Status = "in_progress"
	// StatusRunning: a turn in flight, owned by a live process.
	StatusRunning Status = "running"
	// StatusCompleted: a conversation whose goal was met or whose retries ran out; a turn
	// that answered, the only kind that enters history and examples.
	StatusCompleted Status = "completed"
	// StatusNeedsHuman: a conversation escalated to a person.
	StatusNeedsHuman Status = "needs_human"
	// StatusFailed: a conversation with an unrecoverable error; a turn one of whose calls
	// failed (it keeps every call it made, the failing one included).
	StatusFailed Status = "failed"
	// StatusCancelled: stopped by the user (esc on a turn, or a superseded turn).
	StatusCancelled Status = "cancelled"
	// StatusInterrupted: a turn whose process stopped before it ended (a signal, a
	// crash, a kill): it is resumable, paying only for the calls it had not answered.
	StatusInterrupted Status = "interrupted"
)

// ConversationStatuses lists a conversation's statuses in display order.
var ConversationStatuses = []Status{StatusInProgress, StatusCompleted, StatusNeedsHuman, StatusFailed, StatusCancelled}

// TurnStatuses lists a turn's statuses in display order.
var TurnStatuses = []Status{StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusInterrupted}

// conversationMoves are seed 003's transitions: only an active conversation moves, every
// other status is final.
var conversationMoves = map[Status][]Status{
	StatusInProgress: {StatusCompleted, StatusNeedsHuman, StatusFailed, StatusCancelled},
}

// ParseConversationStatus validates a conversation status name.
func ParseConversationStatus(s string) (Status, error) {
	return parse(s, "conversation", ConversationStatuses)
}

// ParseTurnStatus validates a turn status name.
func ParseTurnStatus(s string) (Status, error) { return parse(s, "turn", TurnStatuses) }

func parse(s, what string, valid []Status) (Status, error) {
	names := make([]string, len(valid))
	for i, st := range valid {
		if string(st) == s {
			return st, nil
		}
		names[i] = string(st)
	}
	return "", fmt.Errorf("unknown %s status %q (want one of %s)", what, s, strings.Join(names, ", "))
}

// CanTransition reports whether a conversation may move from one status to another.
// Setting the current status again is allowed and changes nothing.
func CanTransition(from, to Status) bool {
	if from == to {
		return true
	}
	for _, t := range conversationMoves[from] {
		if t == to {
			return true
		}
	}
	return false
}

// ErrInterrupted is the cause to cancel a turn's context with (context.WithCancelCause,
// wrapped with the reason, e.g. the signal) when the process is stopping: the turn is
// then recorded as interrupted, resumable, instead of cancelled by the user.
var ErrInterrupted = errors.New("interrupted")

// EndStatus is the status of a turn that ended with err (nil: completed) under ctx: a
// turn whose context was cancelled is interrupted when the cause says so (ErrInterrupted)
// and cancelled otherwise; any other error fails it.
func EndStatus(ctx context.Context, err error) Status {
	switch {
	case err == nil:
		return StatusCompleted
	case ctx.Err() == nil:
		return StatusFailed
	case errors.Is(context.Cause(ctx), ErrInterrupted):
		return StatusInterrupted
	}
	return StatusCancelled
}

// Retryable reports whether a turn with this status can be run again from where it
// stopped: failed, cancelled and interrupted turns.
func (s Status) Retryable() bool {
	return s == StatusFailed || s == StatusCancelled || s == StatusInterrupted
}

// Mark is the one-character sign of a turn status in lists and the workbench.
func (s Status) Mark() string {
	switch s {
	case StatusCompleted:
		return "✓"
	case StatusFailed:
		return "✗"
	case StatusCancelled:
		return "⊘"
	case StatusInterrupted:
		return "⏸"
	case StatusRunning:
		return "…"
	}
	return "?"
}
