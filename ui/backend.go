package ui

import (
	"context"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
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
	Agents() []AgentInfo
	// Strategies lists the history strategies the wire pane can preview (1-5 in the seed).
	Strategies() []Strategy

	Conversations(ctx context.Context) ([]ConversationInfo, error)
	NewConversation(ctx context.Context, agent, title string) (ConversationInfo, error)
	RenameConversation(ctx context.Context, conv, title string) error
	// DeleteConversation removes the conversation with all its branches and turns.
	DeleteConversation(ctx context.Context, conv string) error

	Branches(ctx context.Context, conv string) ([]BranchInfo, error)
	// TurnTree is every turn of the conversation, parents before children.
	TurnTree(ctx context.Context, conv string) ([]TurnNode, error)
	// LoadTurns returns up to limit turns of a branch's path starting at position from
	// (0 = first turn), plus the path's total length, so a long branch loads by pages.
	LoadTurns(ctx context.Context, conv, branch string, from, limit int) (TurnPage, error)
	// Turn loads one turn by ID (any turn of the tree, on a branch or not).
	Turn(ctx context.Context, conv, turn string) (*trace.Turn, error)

	// Send runs one turn on the branch's tip. Progress goes to events (never closed by
	// the backend); the finished turn is returned and also sent as EventTurn. A cancelled
	// ctx must abort at once and record no turn, partial or otherwise.
	Send(ctx context.Context, req SendRequest, events chan<- Event) (*trace.Turn, error)
	// EditAndResubmit runs new inputs in place of turn (a user turn) as its sibling, on a
	// new branch whose name is returned; the original branch is untouched.
	EditAndResubmit(ctx context.Context, req EditRequest, events chan<- Event) (string, *trace.Turn, error)
	// Replay re-runs a branch (from a chosen turn on) with another model, strategy or agent
	// setting into a new sibling branch, whose name is returned (compare runs).
	Replay(ctx context.Context, req ReplayRequest, events chan<- Event) (string, error)

	// Fork makes a new branch whose tip is turn; name "" lets the backend choose. It
	// returns the new branch's name.
	Fork(ctx context.Context, conv, turn, name string) (string, error)
	// Undo moves the branch's tip back steps turns. cascade also rolls back the inner
	// (keep) predictors' own histories for those turns; the result says what moved.
	Undo(ctx context.Context, conv, branch string, steps int, cascade bool) (UndoResult, error)
	// Redo moves the tip forward again along the last undone path.
	Redo(ctx context.Context, conv, branch string, steps int) error

	// Preview renders the messages a recorded call sends under a strategy. Strategy 0
	// is "actual": exactly the messages that were sent.
	Preview(ctx context.Context, req PreviewRequest) (Rendering, error)
	// DryRun renders, without calling any model, the requests the next turn would send
	// with these inputs under a strategy (one Rendering per predictor call it can foresee).
	DryRun(ctx context.Context, conv, branch string, inputs *sig.Map, strategy int) ([]Rendering, error)

	// Pending lists turns left in flight by a crash or a kill, oldest first: in conv, or
	// in every conversation when conv is "". The workbench offers each for resume or
	// discard.
	Pending(ctx context.Context, conv string) ([]PendingInfo, error)
	// Resume finishes the pending turn key on its branch, streaming like Send: inner calls
	// the turn already got answers for are replayed from storage, not sent (or paid for)
	// again. The finished turn is returned and sent as EventTurn. A stale turn cannot be
	// resumed; a resume that fails or is cancelled drops the turn, as Send records nothing.
	Resume(ctx context.Context, key string, events chan<- Event) (*trace.Turn, error)
	// Discard drops the pending turn key; its branch is unchanged.
	Discard(ctx context.Context, key string) error
}

// PendingInfo is a turn interrupted in flight.
type PendingInfo struct {
	Conv      string
	ConvTitle string
	Branch    string // "" if the branch was deleted since
	TurnKey   string
	Index     int // position the turn takes on the branch (0 = first turn)
	Inputs    *sig.Map
	Started   time.Time
	CallsDone int // inner calls that finished and were stored before the interruption
	// CallsExpected estimates the turn's calls from the branch's previous turn (0 when
	// unknown); a turn whose calls depend on the input may make more or fewer.
	CallsExpected int
	// Stale is set when the branch moved since the turn began: it can only be discarded.
	Stale bool
}

// AgentInfo describes an agent: its top-level signature gives the input form.
type AgentInfo struct {
	Name        string
	Description string
	Signature   *sig.Signature
}

// Strategy is one way of giving inner predictors their history (seed 000 §5).
type Strategy struct {
	N    int    // 1-5
	Name string // short, e.g. "keep", "inherit", "inline", "directive", "hybrid"
	Desc string
}

// ConversationInfo is one row of the conversation list.
type ConversationInfo struct {
	ID       string
	Title    string
	Agent    string
	Status   string // in_progress, completed, needs_human, failed, cancelled
	Branches int
	Turns    int
	Updated  time.Time
}

// BranchInfo is one named branch: a pointer to a tip turn.
type BranchInfo struct {
	Name   string
	Tip    string // TurnID of the tip ("" for an empty branch)
	Turns  int    // turns on the path from the root to the tip
	Model  string // model of the last turn ("" when unknown)
	Usage  lm.Usage
	Status string
	// CanRedo reports whether a redo would move the tip forward.
	CanRedo bool
}

// TurnNode is one turn in the conversation's tree.
type TurnNode struct {
	ID      string
	Parent  string // "" for a root turn
	Index   int    // depth on its path (0 = first turn)
	Summary string // one line: the user's input
	Reply   string // one line: the main output
	Error   bool
	Started time.Time
}

// TurnPage is a window of a branch's path.
type TurnPage struct {
	From  int // position of Turns[0]
	Total int // turns on the whole path
	IDs   []string
	Turns []*trace.Turn
}

// SendRequest asks for one new turn.
type SendRequest struct {
	Conv, Branch string
	Inputs       *sig.Map
	Strategy     int // 0: the agent's configured strategy
}

// EditRequest resubmits a user turn with new inputs as a sibling branch.
type EditRequest struct {
	Conv   string
	Turn   string // TurnID of the turn being replaced
	Inputs *sig.Map
	Name   string // new branch name; "" lets the backend choose
}

// ReplayRequest re-runs a branch from a turn on with changed settings.
type ReplayRequest struct {
	Conv, Branch string
	From         string // TurnID of the first turn to replay ("" = from the start)
	Model        string // "" keeps the model
	Strategy     int    // 0 keeps the strategy
	Agent        string // "" keeps the agent
	Name         string // new branch name; "" lets the backend choose
}

// UndoResult says what an undo moved.
type UndoResult struct {
	Turns int // turns taken off the branch
	Calls int // inner predictor turns rolled back with them (cascade)
}

// PreviewRequest picks a recorded call and a strategy.
type PreviewRequest struct {
	Conv, Branch string
	Turn         string // TurnID
	Call         string // trace.Call.ID; "" = the turn's first call
	Strategy     int    // 0 = actual
}

// Rendering is one request as it would be (or was) sent.
type Rendering struct {
	Strategy int
	CallID   string
	Path     string
	Messages []RenderedMessage
	Tokens   int // prompt tokens of all messages
	Warnings []Lint
	Err      string // why this strategy cannot render the call, if it cannot
}

// RenderedMessage is one message with its token count.
type RenderedMessage struct {
	lm.Message
	Tokens int
}

// Lint is a warning about a rendering, e.g. a history entry rendering `None`.
type Lint struct {
	Message int // index into Messages; -1 for the request as a whole
	Text    string
}

// EventKind tells what an Event carries.
type EventKind int

const (
	EventDelta  EventKind = iota // Delta: text arrived for Field of call Path
	EventTry                     // Try: an HTTP try finished; Retrying with Wait before the next
	EventCall                    // Call: an inner call finished
	EventTurn                    // Turn: the turn finished and was recorded
	EventBranch                  // Branch: a new branch was created (edit, replay)
)

// Event is streamed progress of Send, EditAndResubmit and Replay.
type Event struct {
	Kind   EventKind
	Path   string // predictor path of the call in flight
	Field  string // output field being written, when the adapter can tell
	Delta  string
	Try    lm.Try
	Call   *trace.Call
	Turn   *trace.Turn
	Branch string
}
