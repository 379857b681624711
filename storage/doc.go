// Package storage keeps everything the workbench does in one SQLite file (modernc.org/sqlite,
// pure Go): conversations with status and metadata, named branches over a tree of turns,
// the call records of every turn with their exact requests, retry attempts, and the
// in-flight turn of a crash. See migrations/ for the schema and ARCHITECTURE.md for why turns
// form a tree.
//
// Typical use by the engine and the UI:
//
//	s, err := storage.Open(ctx, path)                     // path from config.DatabaseFile() or --db
//	c, err := s.CreateConversation(ctx, storage.NewConversation{Title: "…", Agent: "support"})
//	sink := s.Sink(c.ID, storage.MainBranch)               // a core/trace.Sink for one branch
//	// the engine: key := sink.BeginTurn; sink.RecordCall per finished call; sink.CommitTurn
//	turns, err := s.LoadBranch(ctx, c.ID, storage.MainBranch)
//	b, err := s.Fork(ctx, c.ID, storage.MainBranch, "alt", 3) // shares turns 0..3
//	s.Undo(ctx, c.ID, "alt", 1); s.Redo(ctx, c.ID, "alt", 1)
//
// Whole turns (imports): s.AppendTurn(ctx, conv, branch, turn).
//
// Crash recovery: s.PendingTurns(ctx) lists in-flight turns. To resume one, call
// sink.Resume(ctx, p.Key) and run the turn again through the engine with the model
// wrapped by s.ReplayLM(p.Key, model): the next BeginTurn continues the pending turn, and
// requests already answered are served from storage instead of being paid for again. To
// drop it, s.DiscardTurn(ctx, p.Key, reason); a new turn on the branch also discards it.
//
// Listing for the UI without loading calls: ListConversations, Branches, BranchPath,
// TurnTree (TurnOutline: the same tree with one-line previews instead of values, for
// drawing it), BranchUsage (each committed turn stores its path's running usage totals,
// so this reads one row per branch). Attempts (seed 003) are stored with their turn
// (trace.Turn.Attempts, written by CommitTurn and AbortTurn, loaded with the turn); the
// best of a turn and of the conversation are tracked as they are committed: BestAttempt,
// Attempts, Conversation.BestAttempt.
package storage
