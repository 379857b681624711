package e2e

import (
	"testing"
)

// TestTurnFromAnotherProcessAppears: a turn a headless `run` writes into the open
// conversation shows in the workbench without anything being sent there.
func TestTurnFromAnotherProcessAppears(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	tm := startTerm(t, ws, 140, 40)
	tm.waitFor("no turns yet")
	tm.typeText("I can't log in")
	tm.press("Enter")
	tm.waitFor("turn recorded on main", "╰─ 1 turn ")

	convs, list := listConversations(t, ws)
	if len(convs) != 1 {
		t.Fatalf("session ls --json: want one conversation\n%s", list)
	}
	out, err := runBinary(t, ws, "run", "--db", ws.db, "--config", ws.config, "--model", "demo",
		"--conversation", convs[0].ID, "--input", "question=The reset email never arrives")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	tm.waitFor("╰─ 2 turns", "The reset email never arrives", "Let's check your spam folder")
}

// TestConversationListFollowsOtherProcesses: a conversation a headless `run` creates
// while the conversation list is shown joins the list without a key press, and the
// selected row stays selected.
func TestConversationListFollowsOtherProcesses(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	tm := startTerm(t, ws, 120, 30)
	tm.waitFor("no turns yet")
	tm.press("Escape", "L") // leave the editor, open the list
	tm.waitFor("conversations (1)", "untitled")

	out, err := runBinary(t, ws, "run", "--db", ws.db, "--config", ws.config, "--model", "demo",
		"--agent", "SupportAgent", "--title", "made by a headless run", "--input", "question=I can't log in")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	tm.waitFor("conversations (2)", "made by a headless run")
	// the cursor stayed on the conversation it was on (the new row is above it, newest
	// first): enter opens that one
	tm.press("Enter")
	tm.waitFor("opened untitled")
}
