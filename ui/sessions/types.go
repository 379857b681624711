package sessions

import (
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

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

// ConversationInfo is one row of the conversation list.
type ConversationInfo struct {
	ID       string
	Title    string
	Agent    string
	Status   trace.Status // in_progress, completed, needs_human, failed, cancelled
	Branches int
	Turns    int
	Updated  time.Time
	// Kept counts the turns that did not complete (failed, cancelled, interrupted,
	// running elsewhere), kept beside their branches, by status.
	Kept map[trace.Status]int
	// Recorded marks a conversation the proxy recorded (capture.Recorded): its program
	// runs outside sessionbench, so it is inspected, previewed and exported, never run.
	Recorded bool
}

// BranchInfo is one named branch: a pointer to a tip turn.
type BranchInfo struct {
	Name   string
	Tip    string // TurnID of the tip ("" for an empty branch)
	Turns  int    // turns on the path from the root to the tip
	Model  string // model of the last turn ("" when unknown)
	Usage  lm.Usage
	Status trace.Status // the conversation's
	// Redo is how many turns a redo can bring back.
	Redo int
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
	Calls int // the model requests of those turns (their inner predictors' turns), rolled back with them
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
	Message int    // index into Messages; -1 for the request as a whole
	Field   string // the field or placeholder concerned, when there is one
	Text    string
}

// EventKind tells what an Event carries.
type EventKind int

const (
	EventDelta  EventKind = iota // Output: text arrived for call Path, now writing Field
	EventTry                     // Try: an HTTP try finished; Retrying with Wait before the next
	EventCall                    // Call: an inner call finished
	EventTurn                    // Turn: the turn finished and was recorded
	EventBranch                  // Branch: a new branch was created (edit, replay)
)

// Event is streamed progress of Send, EditAndResubmit and Replay.
type Event struct {
	Kind  EventKind
	Path  string // predictor path of the call in flight
	Field string // output field being written, as the call's adapter reports it
	// Output is the call's completion so far split into its output fields by the
	// call's adapter (header markup removed); an adapter that cannot split it gives one
	// unnamed part holding the raw text.
	Output []adapter.FieldText
	Try    lm.Try
	Call   *trace.Call
	Turn   *trace.Turn
	Branch string
}
