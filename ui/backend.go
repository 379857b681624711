package ui

import (
	"context"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// Backend is everything the workbench needs from the engine, storage and models. The UI
// calls it only from tea.Cmd functions (never from Update), so an implementation may
// block on I/O; it must be safe for concurrent use by those commands.
//
// Turns are named by opaque IDs (TurnID) because the turn tree has turns that are on no
// open branch; the Index of a trace.Turn is its position on its branch's path.
type Backend interface {
	// ModelName labels the model in the UI, e.g. "demo (offline)" or "gpt-4o-mini".
	ModelName() string
	// Agents lists the agents a conversation can be started with.
	Agents() []sessions.AgentInfo
	// Strategies lists the history strategies the wire pane can preview (1-5 in the seed).
	Strategies() []core.StrategyInfo

	Conversations(ctx context.Context) ([]sessions.ConversationInfo, error)
	NewConversation(ctx context.Context, agent, title string) (sessions.ConversationInfo, error)
	RenameConversation(ctx context.Context, conv, title string) error
	// DeleteConversation removes the conversation with all its branches and turns.
	DeleteConversation(ctx context.Context, conv string) error

	Branches(ctx context.Context, conv string) ([]sessions.BranchInfo, error)
	// Branch is one branch's row of Branches, read alone.
	Branch(ctx context.Context, conv, name string) (sessions.BranchInfo, error)
	// TurnTreePage is up to limit turns of the conversation's tree after turn after ("" for
	// the first page), parents before children, and the turn to continue after ("" when
	// there are no more): a long conversation's tree arrives by pages.
	TurnTreePage(ctx context.Context, conv, after string, limit int) ([]storage.TurnNode, string, error)
	// LoadTurns returns up to limit turns of a branch's path starting at position from
	// (0 = first turn; a negative from counts from the end, so -limit is the last page),
	// plus the path's total length, so a long branch loads by pages.
	LoadTurns(ctx context.Context, conv, branch string, from, limit int) (sessions.TurnPage, error)
	// Turn loads one turn by ID (any turn of the tree, on a branch or not).
	Turn(ctx context.Context, conv, turn string) (*trace.Turn, error)

	// Send runs one turn on the branch's tip. Progress goes to events (never closed by
	// the backend); the finished turn is returned and also sent as EventTurn. A cancelled
	// ctx must abort at once. A turn that began and did not complete (a call failed, ctx
	// was cancelled or interrupted) never enters the branch: it is kept beside it
	// (KeptTurns) and its error is a *sessions.KeptTurnError naming it.
	Send(ctx context.Context, req sessions.SendRequest, events chan<- sessions.Event) (*trace.Turn, error)
	// KeptTurns lists the turns kept beside branch (failed, cancelled, interrupted or
	// running elsewhere) whose place is on its path, oldest first.
	KeptTurns(ctx context.Context, conv, branch string) ([]sessions.KeptTurn, error)
	// Retry runs a kept turn again from where it stopped, streaming like Send: calls it
	// already got answers for are replayed, not sent again; Inputs, when set, replace its
	// inputs (edit and retry). The kept turn stays beside the branch.
	Retry(ctx context.Context, req sessions.RetryRequest, events chan<- sessions.Event) (string, *trace.Turn, error)
	// DeleteTurn removes a kept turn with its calls.
	DeleteTurn(ctx context.Context, key string) error
	// EditAndResubmit runs new inputs in place of turn (a user turn) as its sibling, on a
	// new branch whose name is returned; the original branch is untouched.
	EditAndResubmit(ctx context.Context, req sessions.EditRequest, events chan<- sessions.Event) (string, *trace.Turn, error)
	// Replay re-runs a branch (from a chosen turn on) with another model, strategy or agent
	// setting into a new sibling branch, whose name is returned (compare runs).
	Replay(ctx context.Context, req sessions.ReplayRequest, events chan<- sessions.Event) (string, error)

	// Fork makes a new branch whose tip is turn; name "" lets the backend choose. It
	// returns the new branch's name.
	Fork(ctx context.Context, conv, turn, name string) (string, error)
	// Undo moves the branch's tip back up to steps turns; the inner (keep) predictors'
	// histories go back with them, as they are derived from the path. The result says
	// what moved: no turn (an empty branch) is not an error.
	Undo(ctx context.Context, conv, branch string, steps int) (sessions.UndoResult, error)
	// Redo moves the tip forward again along the last undone path, up to steps turns;
	// it returns how many it moved (0: nothing to redo, not an error).
	Redo(ctx context.Context, conv, branch string, steps int) (int, error)

	// Preview renders the messages a recorded call sends under a strategy. Strategy 0
	// is "actual": exactly the messages that were sent.
	Preview(ctx context.Context, req sessions.PreviewRequest) (sessions.Rendering, error)
	// Prefetch readies what the branch's next turn needs (its engine session) while the
	// user types, so Send does not wait for it. It reports nothing: Send does.
	Prefetch(ctx context.Context, conv, branch string)
	// DryRun renders, without calling any model, the requests the next turn would send
	// with these inputs under a strategy (one rendering per predictor call it can foresee).
	DryRun(ctx context.Context, conv, branch string, inputs *sig.Map, strategy int) ([]sessions.Rendering, error)

	// Pending lists turns left interrupted by a crash, a kill or a signal, oldest first:
	// in conv, or in every conversation when conv is "". A turn still running in a live
	// process is not listed. The workbench offers each for resume or discard.
	Pending(ctx context.Context, conv string) ([]sessions.PendingInfo, error)
	// Resume finishes the interrupted turn key on its branch, streaming like Send: inner
	// calls the turn already got answers for are replayed from storage, not sent (or paid
	// for) again. The finished turn is returned and sent as EventTurn. A stale turn, or one
	// still running in a live process, cannot be resumed; a resume that fails is kept as
	// Send's are.
	Resume(ctx context.Context, key string, events chan<- sessions.Event) (*trace.Turn, error)
	// Discard gives up the interrupted turn key (kept, cancelled); its branch is unchanged.
	Discard(ctx context.Context, key string) error
}
