package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// wireSummary is the wire pane's first line: "<strategy> · <call> · N messages · T tok".
var wireSummary = regexp.MustCompile(`(actual|\d [\w ,-]+?) · (\w+) · (\d+) messages · ([\d.]+k?) tok`)

// wireLine returns the wire pane's summary for strategy label (e.g. "1 per-predictor").
func wireLine(t *testing.T, screen, label string) []string {
	t.Helper()
	for _, m := range wireSummary.FindAllStringSubmatch(screen, -1) {
		if m[1] == label {
			return m
		}
	}
	t.Fatalf("no wire summary for %q on screen:\n%s", label, screen)
	return nil
}

// TestStory is the walk through the workbench: a new conversation with the demo
// agent, two turns, the call tree, the wire strategies, a fork, undo, redo, quit, and a
// second run on the same database that finds it all again.
func TestStory(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	tm := startTerm(t, ws, 140, 40)

	// An empty database opens a first conversation with the first demo agent; the
	// offline demo model is labelled as such.
	tm.waitFor("model: demo (offline)", "agent SupportAgent", "no turns yet")

	// ? lists every key; esc closes the help. Tab first: it leaves the one-field editor
	// for the transcript, where letters are commands (in the editor they are text).
	tm.press("Tab", "?")
	tm.waitFor("keys can be rebound", "transcript", "edit & resubmit", "new branch pane", "compare strategies")
	tm.press("Escape")
	tm.waitFor("no turns yet")

	// A new conversation from the list, with its own title.
	tm.press("L")
	tm.waitFor("conversations (1)", "untitled")
	tm.press("n")
	tm.waitFor("new conversation with agent SupportAgent")
	tm.press("C-u")
	tm.typeText("e2e story")
	tm.press("Enter")
	tm.waitFor("e2e story · agent SupportAgent", "no turns yet", "opened e2e story")

	// Two turns; the demo model answers from the support agent's script.
	tm.typeText("How do I reset my password?")
	tm.press("Enter")
	s := tm.waitFor("turn recorded on main", "╰─ 1 turn ", "choose 'Forgot")
	for _, want := range []string{"main · demo (offline)", "#0 you", "How do I reset my password?", "intent:", "technical", "calls · turn 0", "classify", "respond"} {
		if !strings.Contains(s, want) {
			t.Errorf("after the first turn, %q is not on screen:\n%s", want, s)
		}
	}
	tm.typeText("I was charged twice")
	tm.press("Enter")
	tm.waitFor("╰─ 2 turns", "#1 you", "your billing question?", "calls · turn 1")

	// The call tree: tab to the transcript, enter moves to the tree, j selects the
	// second call, enter opens its detail, esc closes it.
	tm.press("Tab", "Enter", "j")
	tm.waitFor("2/2 · 2 calls")
	tm.press("Enter")
	s = tm.waitFor("call respond", "Inputs", "Outputs")
	if !strings.Contains(s, "I was charged twice") {
		t.Errorf("the respond call's detail does not show its input:\n%s", s)
	}
	tm.press("Escape")
	tm.waitGone("call respond")
	tm.waitFor("calls · turn 1", "2/2 · 2 calls")

	// The wire pane follows the selected call and cycles the history strategies.
	s = tm.waitFor("wire · actual", "actual · respond")
	actual := wireLine(t, s, "actual")
	tm.press("s")
	s = tm.waitFor("wire: 1 per-predictor", "wire · 1 per-predictor", "1 per-predictor · respond")
	keep := wireLine(t, s, "1 per-predictor")
	tm.press("s")
	tm.waitFor("wire: 2 outer, signature-filtered", "2 outer, signature-filtered · respond")
	tm.press("s")
	s = tm.waitFor("wire: 3 outer inline", "3 outer inline · respond")
	inline := wireLine(t, s, "3 outer inline")
	if keep[3] != actual[3] || keep[4] != actual[4] {
		t.Errorf("the recorded turn ran under keep, yet keep's request differs from the actual one: %q vs %q", keep[0], actual[0])
	}
	if inline[3] == keep[3] && inline[4] == keep[4] {
		t.Errorf("inline renders the same request as keep: %q vs %q", inline[0], keep[0])
	}
	// c opens the full-screen compare of the call (keep against inherit): respond's
	// reasoning is in its own history only, so inherit shows None; esc goes back, a
	// shows the actual request again.
	tm.press("c")
	tm.waitFor("compare · turn 1 · respond", "1 per-predictor", "2 outer, signature-filtered", "1 message differs", "+None")
	tm.press("Escape")
	tm.waitGone("compare · turn 1")
	tm.press("a")
	tm.waitFor("wire: actual", "actual · respond")

	// Fork at turn 0: back to the transcript, select the first turn, f.
	tm.press("BTab", "k")
	tm.waitFor("turn 0 selected")
	tm.press("f")
	tm.waitFor("forked fork-1 at turn 0", "fork-1 · demo (offline)")
	// both panes reload; then main (2 turns) and fork-1 (1 turn) stand side by side
	tm.waitUntil("main and fork-1 side by side", func(s string) bool {
		return strings.HasPrefix(lineWith(s, "╰─ 2 turns"), "╰─ 2 turns") && strings.Contains(lineWith(s, "╰─ 2 turns"), "╯╰─ 1 turn ")
	})
	// The fork pane has the focus; tab goes on through the tree and the wire pane to the
	// editor (focus order: editor, main, fork-1, tree, wire), and the turn goes to fork-1,
	// the last focused transcript.
	tm.press("Tab", "Tab", "Tab")
	tm.typeText("Do you have a dark mode?")
	tm.press("Enter")
	tm.waitFor("turn recorded on fork-1", "Do you have a dark mode?", "your general question?")

	// Undo the last turn of main (tab from the editor focuses the first pane), redo it.
	tm.press("Tab", "u")
	tm.waitFor("undid 1 turn on main (with its 2 inner calls) · r redoes", "1 to redo")
	// main reloads: it ends with one turn, and the second turn's text is nowhere
	tm.waitUntil("main with 1 turn", func(s string) bool {
		return strings.HasPrefix(lineWith(s, "╰─ 1 turn "), "╰─ 1 turn ") && strings.Contains(s, "#0 you") &&
			!strings.Contains(s, "I was charged twice") && !strings.Contains(s, "your billing question?")
	})
	tm.press("r")
	tm.waitFor("redid 1 turn on main")
	tm.waitUntil("main with 2 turns again", func(s string) bool {
		return strings.HasPrefix(lineWith(s, "╰─ 2 turns"), "╰─ 2 turns") &&
			strings.Contains(s, "I was charged twice") && strings.Contains(s, "your billing question?")
	})

	// Edit and resubmit turn 0 of main: its question comes back into the editor, enter
	// runs it as a sibling branch that opens in a pane.
	tm.press("g")
	tm.waitFor("2 turns · turn 0 selected")
	tm.press("e")
	tm.waitFor("editing turn 0", "> How do I reset my password?")
	tm.typeText(" Quickly")
	tm.press("Enter")
	tm.waitFor("turn recorded on edit-1", "edit-1 · demo (offline)", "How do I reset my password? Quickly")

	// ctrl+c quits with status 0.
	tm.press("C-c")
	if code := tm.waitExit(); code != 0 {
		t.Fatalf("the workbench exited with status %d; screen:\n%s", code, tm.screen())
	}

	// A second run on the same database lists both conversations; the story has three
	// branches and four distinct turns (main: 1, 2; fork-1: 1, 3; edit-1: 1').
	tm.restart()
	s = tm.waitFor("conversations (2)", "e2e story", "untitled")
	row := regexp.MustCompile(`e2e story\s+SupportAgent\s+\S+\s+3\s+4\s`)
	if !row.MatchString(lineWith(s, "e2e story")) {
		t.Errorf("the list row of the story does not say 3 branches, 4 turns: %q", lineWith(s, "e2e story"))
	}
	tm.press("/")
	tm.typeText("e2e")
	tm.press("Enter")
	tm.waitFor("conversations (1)")
	tm.waitGone("untitled")
	tm.press("Enter")
	tm.waitFor("e2e story · agent SupportAgent", "╰─ 2 turns", "How do I reset my password?", "I was charged twice")
	// the branch navigator shows both branches and where they part
	tm.press("Tab", "b")
	tm.waitFor("branches · turn tree", "[main]", "[fork-1]", "[edit-1]", "Do you have a dark mode?", "How do I reset my password? Quickly")
	tm.press("Escape")
	tm.waitGone("branches · turn tree")
	tm.press("n")
	tm.waitFor("fork-1 · demo (offline)", "Do you have a dark mode?")
	tm.press("C-c")
	if code := tm.waitExit(); code != 0 {
		t.Fatalf("the second run exited with status %d", code)
	}
}

// TestResize: the layout holds at the minimum size and says so plainly below it.
func TestResize(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	tm := startTerm(t, ws, 140, 40)
	tm.waitFor("no turns yet")
	tm.typeText("How do I reset my password?")
	tm.press("Enter")
	tm.waitFor("turn recorded on main", "calls · turn 0")

	tm.resize(60, 20)
	// tmux first crops the old frame; the workbench then redraws at the new size, with
	// every frame whole: each top border has its bottom border, both full width.
	whole := func(s string) bool {
		rows := lines(s)
		if len(rows) != 20 || !strings.HasPrefix(rows[0], " sessionbench · model: demo (offline)") {
			return false
		}
		for _, pair := range [][2]string{{"╭─ main", "╰─ 1 turn "}, {"╭─ SupportAgent", "╰─ enter send"}} {
			top, bottom := lineWith(s, pair[0]), lineWith(s, pair[1])
			if !strings.HasSuffix(top, "╮") || !strings.HasSuffix(bottom, "╯") || len([]rune(top)) != 60 || len([]rune(bottom)) != 60 {
				return false
			}
		}
		return true
	}
	s := tm.waitUntil("a whole 60x20 layout", whole)
	for i, l := range lines(s) {
		if n := len([]rune(l)); n > 60 {
			t.Errorf("row %d is %d cells wide at 60 columns: %q", i+1, n, l)
		}
	}
	// below the wide width one pane shows at a time: the transcript, not the side panes
	for _, want := range []string{"intent:", "technical", "enter send"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q is not on the 60x20 screen:\n%s", want, s)
		}
	}
	if strings.Contains(s, "calls · turn 0") {
		t.Errorf("the call tree shares a 60-column screen:\n%s", s)
	}
	if strings.Contains(s, "too small") {
		t.Errorf("60x20 is the supported minimum, yet:\n%s", s)
	}
	// narrow, the focused side pane takes the body: tab from the editor goes to the
	// transcript, then the call tree, then the wire pane
	tm.press("Tab", "Tab")
	tm.waitFor("╭─ calls · turn 0", "classify", "respond")
	tm.press("Tab")
	tm.waitFor("╭─ wire · actual", "actual · classify")
	tm.waitGone("╭─ calls")
	tm.press("Tab") // back to the editor: the transcript returns
	tm.waitFor("╭─ main", "technical")

	tm.resize(50, 15)
	tm.waitFor("terminal too small: 50x15", "sessionbench needs at least 60x20")

	// back to full size: the side panes return
	tm.resize(140, 40)
	tm.waitFor("calls · turn 0", "wire · actual", "choose 'Forgot")
	tm.waitGone("too small")
}

// TestBadInvocation: wrong command lines exit non-zero with a message naming the problem,
// before any terminal handling (plain exec, no tmux).
func TestBadInvocation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end tests are skipped under -short")
	}
	ws := newWorkspace(t)
	badKeys := filepath.Join(ws.dir, "badkeys.toml")
	if err := os.WriteFile(badKeys, []byte("[keys]\nfrob = [\"x\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--db", ws.db, "--nope"}, 2, "flag provided but not defined: -nope"},
		{"stray argument", []string{"--db", ws.db, "stray"}, 2, `unexpected argument "stray"`},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown theme", []string{"--db", ws.db, "--config", ws.config, "--theme", "nosuch"}, 2, `unknown theme "nosuch"`},
		{"unknown key action", []string{"--db", ws.db, "--config", badKeys}, 2, `badkeys.toml:2: keys.frob: unknown action "frob"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runBinary(t, ws, c.args...)
			if got := exitCode(err); got != c.code {
				t.Errorf("exit status %d, want %d (err %v); output:\n%s", got, c.code, err, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
			// a refused command line leaves nothing behind
			if _, err := os.Stat(ws.db); err == nil {
				t.Errorf("the database %s was created", ws.db)
			}
		})
	}
}

// TestCancelAndQuitWhileRunning: esc cancels a streaming turn and nothing is recorded;
// ctrl+c during a turn quits at once, leaving no turn in flight in the database.
func TestCancelAndQuitWhileRunning(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	ws.demoRate(t, 15) // slow enough to act while the answer streams
	tm := startTerm(t, ws, 100, 30)
	tm.waitFor("no turns yet")
	tm.typeText("How do I reset my password?")
	tm.press("Enter")
	tm.waitFor("● running · esc cancels", "╰─ 0 turns · running", "writing intent")
	tm.press("Escape")
	// esc: the turn is kept beside the branch, cancelled, out of its history
	tm.waitFor("cancelled: the turn is kept beside the branch as cancelled", "⊘ cancelled", "╰─ 0 turns ·")
	tm.waitGone("● running")

	// the cancelled question is back in the editor; send it again and quit while it runs:
	// ctrl+c asks first, then leaves the turn interrupted
	tm.waitFor("> How do I reset my password?")
	tm.press("Enter")
	tm.waitFor("● running · esc cancels")
	tm.press("C-c")
	tm.waitFor("A turn is running. Quit anyway?")
	tm.press("y")
	if code := tm.waitExit(); code != 0 {
		t.Fatalf("quitting during a turn exited with status %d", code)
	}

	// the headless CLI on the same database: one conversation, no turn on the branch, the
	// cancelled turn and the interrupted one kept beside it
	convs, out := listConversations(t, ws)
	if len(convs) != 1 || convs[0].Turns != 0 || convs[0].Pending != 1 || convs[0].Kept["cancelled"] != 1 || convs[0].Kept["interrupted"] != 1 {
		t.Fatalf("after a cancelled turn and a quit mid-turn, want 0 turns, 1 cancelled and 1 interrupted kept; got %s", out)
	}

	// the next start offers the interrupted turn (its owner, the quit process, is gone);
	// resumed, it is recorded
	tm.restart()
	tm.waitFor("was interrupted", "[r]esume")
	tm.press("r")
	tm.waitFor("turn recorded on main", "╰─ 1 turn")
}
