package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// TestResearchAgentCallTree: the built-in ResearchAgent's turns record nested calls
// (plan, the research module around two queries and a summary, answer); the tree folds
// and unfolds, an inner call opens with the history it saw, and a second run on the
// same database shows the same nesting (read back from storage).
func TestResearchAgentCallTree(t *testing.T) {
	t.Parallel()
	needTmux(t)
	ws := newWorkspace(t)
	tm := startTerm(t, ws, 140, 40)
	tm.waitFor("agent SupportAgent", "no turns yet")
	tm.press("Tab", "L", "n")
	tm.waitFor("new conversation with agent SupportAgent")
	// tab picks the next agent; wait for each pick to show before the next
	agent := regexp.MustCompile(`new conversation with agent (\w+)`)
	picked := func(s string) string {
		if m := agent.FindStringSubmatch(s); m != nil {
			return m[1]
		}
		return ""
	}
	for cur := "SupportAgent"; cur != "ResearchAgent"; {
		tm.press("Tab")
		prev := cur
		cur = picked(tm.waitUntil("the next agent", func(s string) bool { return picked(s) != prev && picked(s) != "" }))
		if cur == "SupportAgent" {
			t.Fatal("no ResearchAgent among the agents")
		}
	}
	tm.press("C-u")
	tm.typeText("research e2e")
	tm.press("Enter")
	tm.waitFor("research e2e · agent ResearchAgent", "no turns yet")

	tm.typeText("How long do refunds take?")
	tm.press("Enter")
	tm.waitFor("turn recorded on main", "[Refund policy]", "calls · turn 0")
	s := tm.waitFor("▾ research", "research.query", "research.summarize", "1/6 · 6 calls")
	if q := lineWith(s, "research.query"); !strings.Contains(q, "│   ├──") {
		t.Errorf("research.query is not drawn under research: %q", q)
	}

	tm.press("Tab", "Enter", "j") // transcript, the tree, the research module
	tm.waitFor("2/6 · 6 calls")
	tm.press("h") // collapse it
	s = tm.waitFor("▸ research", "2/3 · 6 calls")
	if strings.Contains(s, "research.query") {
		t.Errorf("inner calls still shown after collapsing:\n%s", s)
	}
	tm.press("l", "j", "j") // expand, then the second query
	tm.waitFor("▾ research", "4/6 · 6 calls")
	tm.press("Enter")
	s = tm.waitFor("call research.query", "id: c2.c4", "History seen (1 messages)")
	if !strings.Contains(s, "query: Support hours") {
		t.Errorf("the second query's detail does not show its output:\n%s", s)
	}
	tm.press("Escape")
	tm.waitGone("call research.query")
	tm.press("C-c")
	if code := tm.waitExit(); code != 0 {
		t.Fatalf("exit status %d", code)
	}

	tm.restart()
	tm.waitFor("conversations (2)", "research e2e")
	tm.press("/")
	tm.typeText("research")
	tm.press("Enter")
	tm.waitFor("conversations (1)")
	tm.press("Enter")
	s = tm.waitFor("agent ResearchAgent", "╰─ 1 turn ", "▾ research", "research.summarize", "1/6 · 6 calls")
	if q := lineWith(s, "research.summarize"); !strings.Contains(q, "│   └──") {
		t.Errorf("after reopening, research.summarize is not drawn under research: %q", q)
	}
	tm.press("C-c")
	if code := tm.waitExit(); code != 0 {
		t.Fatalf("the second run exited with status %d", code)
	}
}
