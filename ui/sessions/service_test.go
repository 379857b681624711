package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

var questions = []string{"Why was I charged twice this month?", "The app crashes when I log in.", "What are your opening hours?"}

func TestSendBranchesLoadTurns(t *testing.T) {
	ctx := context.Background()
	a, _, model, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	ev := collect()
	var sent []*trace.Turn
	for _, q := range questions {
		tr, err := a.Send(ctx, SendRequest{Conv: conv, Branch: "main", Inputs: question(q)}, ev.ch)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, tr)
	}
	all := ev.stop()
	if got := model.n.Load(); got != 6 {
		t.Errorf("model asked %d times, want 6 (two predictors, three turns)", got)
	}
	kinds := map[EventKind]int{}
	for _, e := range all {
		kinds[e.Kind]++
	}
	if kinds[EventTurn] != 3 || kinds[EventCall] != 6 || kinds[EventDelta] == 0 {
		t.Errorf("events by kind %v: want 3 turns, 6 calls and some deltas", kinds)
	}

	pg := pageOf(t, a, conv, "main")
	if pg.Total != 3 || len(pg.Turns) != 3 || len(pg.IDs) != 3 {
		t.Fatalf("page: total %d, %d turns", pg.Total, len(pg.Turns))
	}
	var usage lm.Usage
	for i, tr := range pg.Turns {
		if tr.Index != i || tr.Inputs.String("question") != questions[i] || tr.Outputs.String("reply") != sent[i].Outputs.String("reply") {
			t.Errorf("turn %d: index %d inputs %v outputs %v", i, tr.Index, tr.Inputs, tr.Outputs)
		}
		calls := leafCalls(tr)
		if len(calls) != 2 || calls[0].Path != "classify" || calls[1].Path != "respond" {
			t.Fatalf("turn %d calls: %+v", i, calls)
		}
		for _, c := range calls {
			usage.PromptTokens += c.Usage.PromptTokens
			usage.CompletionTokens += c.Usage.CompletionTokens
			usage.TotalTokens += c.Usage.TotalTokens
		}
	}
	// Windows of the path, as the chat pane pages them.
	for _, w := range []struct{ from, limit, want int }{{0, 1, 1}, {1, 5, 2}, {2, 0, 1}, {3, 2, 0}, {-4, 2, 2}} {
		p, err := a.LoadTurns(ctx, conv, "main", w.from, w.limit)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != 3 || len(p.Turns) != w.want {
			t.Errorf("LoadTurns(%d, %d): total %d, %d turns; want %d", w.from, w.limit, p.Total, len(p.Turns), w.want)
		}
	}

	bi := branchInfo(t, a, conv, "main")
	if bi.Turns != 3 || bi.Tip != pg.IDs[2] || bi.Redo != 0 {
		t.Errorf("branch info %+v", bi)
	}
	if usage.TotalTokens == 0 || bi.Usage != usage {
		t.Errorf("branch usage %+v, want the calls' sum %+v", bi.Usage, usage)
	}
	tree, err := a.TurnTree(ctx, conv)
	if err != nil || len(tree) != 3 || tree[1].Parent != tree[0].Key || tree[0].InputPreview != questions[0] {
		t.Fatalf("turn tree %+v, %v", tree, err)
	}
	convs, err := a.Conversations(ctx)
	if err != nil || len(convs) != 1 || convs[0].Agent != "SupportAgent" || convs[0].Turns != 3 {
		t.Fatalf("conversations %+v, %v", convs, err)
	}
}

func TestForkUndoRedo(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	for _, q := range questions {
		mustSend(t, a, conv, "main", question(q))
	}
	ids := pageOf(t, a, conv, "main").IDs

	name, err := a.Fork(ctx, conv, ids[1], "")
	if err != nil {
		t.Fatal(err)
	}
	fork := pageOf(t, a, conv, name)
	if fork.Total != 2 || fork.IDs[0] != ids[0] || fork.IDs[1] != ids[1] {
		t.Fatalf("fork %s at turn 2: %v, want the first two of %v", name, fork.IDs, ids)
	}
	// The fork continues with the history of its own path.
	tr := mustSend(t, a, conv, name, question("Can I get a refund?"))
	if tr.Index != 2 || len(tr.History.Messages) != 2 {
		t.Errorf("turn on the fork: index %d, %d history entries; want 2, 2", tr.Index, len(tr.History.Messages))
	}
	if n := pageOf(t, a, conv, "main").Total; n != 3 {
		t.Errorf("main has %d turns after the fork's turn, want 3", n)
	}

	// an undo reports the turn and its model requests (classify and respond), which go
	// back with it; the redo count shows in the branch
	res, err := a.Undo(ctx, conv, "main", 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != 1 || res.Calls != 2 {
		t.Errorf("undo result %+v, want 1 turn, 2 calls", res)
	}
	if bi := branchInfo(t, a, conv, "main"); bi.Turns != 2 || bi.Redo != 1 {
		t.Errorf("after undo: %+v", bi)
	}
	if n, err := a.Redo(ctx, conv, "main", 1); err != nil || n != 1 {
		t.Fatalf("redo: %d, %v", n, err)
	}
	if bi := branchInfo(t, a, conv, "main"); bi.Turns != 3 || bi.Redo != 0 || bi.Tip != ids[2] {
		t.Errorf("after redo: %+v, want tip %s", bi, ids[2])
	}
	if _, err := a.Undo(ctx, conv, "main", 1); err != nil {
		t.Fatal(err)
	}
	// The next turn sees the shortened path, and clears the redo stack.
	tr = mustSend(t, a, conv, "main", question("Something else"))
	if tr.Index != 2 || len(tr.History.Messages) != 2 {
		t.Errorf("turn after undo: index %d, %d history entries", tr.Index, len(tr.History.Messages))
	}
	if n, err := a.Redo(ctx, conv, "main", 1); err != nil || n != 0 {
		t.Errorf("redo after a new turn moved %d turn(s) (%v); a new turn must clear the redo stack", n, err)
	}
	// nothing to undo on an empty branch is not an error
	if _, err := a.store.CreateBranch(ctx, conv, "empty"); err != nil {
		t.Fatal(err)
	}
	if res, err := a.Undo(ctx, conv, "empty", 1); err != nil || res.Turns != 0 {
		t.Errorf("undo on an empty branch: %+v, %v", res, err)
	}
}

func TestEditAndResubmit(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	for _, q := range questions {
		mustSend(t, a, conv, "main", question(q))
	}
	before := pageOf(t, a, conv, "main")
	ev := collect()
	name, tr, err := a.EditAndResubmit(ctx, EditRequest{Conv: conv, Turn: before.IDs[1], Inputs: question("My login fails with error 42.")}, ev.ch)
	all := ev.stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 || all[0].Kind != EventBranch || all[0].Branch != name {
		t.Errorf("first event %+v, want the new branch %s", all[0], name)
	}
	edit := pageOf(t, a, conv, name)
	if edit.Total != 2 || edit.IDs[0] != before.IDs[0] || edit.IDs[1] == before.IDs[1] {
		t.Fatalf("edit branch %v, want turn 1 shared and a new turn 2 (main: %v)", edit.IDs, before.IDs)
	}
	if tr.Index != 1 || edit.Turns[1].Inputs.String("question") != "My login fails with error 42." {
		t.Errorf("edited turn %d inputs %v", tr.Index, edit.Turns[1].Inputs)
	}
	after := pageOf(t, a, conv, "main")
	if strings.Join(after.IDs, ",") != strings.Join(before.IDs, ",") {
		t.Errorf("main changed by the edit: %v -> %v", before.IDs, after.IDs)
	}
	// Editing the first turn gives a branch with only the new turn.
	name2, _, err := a.EditAndResubmit(ctx, EditRequest{Conv: conv, Turn: before.IDs[0], Inputs: question("Hello?")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := pageOf(t, a, conv, name2); p.Total != 1 || p.Turns[0].Inputs.String("question") != "Hello?" {
		t.Errorf("edit of the first turn: %d turns", p.Total)
	}
}

func TestReplay(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	for _, q := range questions {
		mustSend(t, a, conv, "main", question(q))
	}
	main := pageOf(t, a, conv, "main")
	tests := []struct {
		name      string
		from      string
		wantTotal int
		shared    int
	}{
		{"whole branch", "", 3, 0},
		{"from turn 2", main.IDs[1], 3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := collect()
			name, err := a.Replay(ctx, ReplayRequest{Conv: conv, Branch: "main", From: tc.from}, ev.ch)
			all := ev.stop()
			if err != nil {
				t.Fatal(err)
			}
			rp := pageOf(t, a, conv, name)
			if rp.Total != tc.wantTotal {
				t.Fatalf("replay %s has %d turns, want %d", name, rp.Total, tc.wantTotal)
			}
			for i := range rp.Turns {
				shared := rp.IDs[i] == main.IDs[i]
				if shared != (i < tc.shared) {
					t.Errorf("turn %d shared with main: %v", i, shared)
				}
				if !py.Same(rp.Turns[i].Inputs, main.Turns[i].Inputs) {
					t.Errorf("turn %d inputs %v, want %v", i, rp.Turns[i].Inputs, main.Turns[i].Inputs)
				}
			}
			turns := 0
			for _, e := range all {
				if e.Kind == EventTurn {
					turns++
				}
			}
			if turns != tc.wantTotal-tc.shared {
				t.Errorf("%d turn events, want %d", turns, tc.wantTotal-tc.shared)
			}
		})
	}
}

// TestPreviewActualIsRecorded is issue 4's requirement: the preview of the strategy
// actually used equals the recorded request byte for byte. Strategy 0 shows what was
// sent; for these keep-agents (ChatAdapter, own history) strategy 1 "keep" must
// re-render exactly the same messages from the stored history, whatever the agent's
// filters (RAG's excluded documents) and scope (ResearchAgent's per_turn module).
func TestPreviewActualIsRecorded(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		agent  string
		inputs []*sig.Map
	}{
		{"SupportAgent", []*sig.Map{question(questions[0]), question(questions[1]), question(questions[2])}},
		{"CorrectThenTranslate", []*sig.Map{sig.NewMap("text", "i has a apple"), sig.NewMap("text", "she go home yesterday")}},
		{"RetryAgent", []*sig.Map{sig.NewMap("task", "Plan a team offsite for 12 people"), sig.NewMap("task", "Plan the launch of our data export feature")}},
		{"StepAgent", []*sig.Map{sig.NewMap("task", "What is 17 * 23 + 4?"), sig.NewMap("task", "What is our refund policy?")}},
		{"RAGAgent", []*sig.Map{question("How long do refunds take?"), question("How do I enable two-factor authentication?")}},
		{"ResearchAgent", []*sig.Map{question("How long do refunds take?"), question("When can I talk to a human?")}},
	}
	for _, tc := range tests {
		t.Run(tc.agent, func(t *testing.T) {
			a, st, _, _ := newWorkbench(t)
			conv := mustConversation(t, a, tc.agent)
			for _, in := range tc.inputs {
				mustSend(t, a, conv, "main", in)
			}
			// a service that read no page renders from the branch as restored (without
			// the calls' histories, read for the previewed turn alone)
			fresh := New(st, demoModel(0))
			fresh.SetAgentDirs()
			pg := pageOf(t, a, conv, "main")
			checked := 0
			for i, tr := range pg.Turns {
				for _, c := range leafCalls(tr) {
					want, err := json.Marshal(c.Messages)
					if err != nil || c.Messages.Len() == 0 {
						t.Fatalf("turn %d call %s has no recorded messages", i, c.ID)
					}
					strategies := []int{0, 1}
					if !strings.Contains(c.Messages.At(0).Content, "`history` (History)") {
						strategies = []int{0} // run without history (RAG's retriever): strategy 1 is a what-if
					}
					for k := range 2 * len(strategies) {
						strategy, svc := strategies[k/2], []*Service{a, fresh}[k%2]
						r, err := svc.Preview(ctx, PreviewRequest{Conv: conv, Branch: "main", Turn: pg.IDs[i], Call: c.ID, Strategy: strategy})
						if err != nil || r.Err != "" {
							t.Fatalf("preview turn %d %s strategy %d: %v %s", i, c.Path, strategy, err, r.Err)
						}
						msgs := make([]lm.Message, len(r.Messages))
						for k, m := range r.Messages {
							msgs[k] = m.Message
						}
						got, _ := json.Marshal(msgs)
						if string(got) != string(want) {
							t.Errorf("turn %d %s strategy %d differs from the recorded request:\n got %s\nwant %s", i, c.Path, strategy, got, want)
						}
						if r.CallID != c.ID || r.Path != c.Path || r.Tokens <= 0 {
							t.Errorf("rendering header %q %q tokens %d", r.CallID, r.Path, r.Tokens)
						}
						checked++
					}
				}
			}
			if checked == 0 {
				t.Fatal("nothing compared")
			}
		})
	}
}

// TestPreviewStrategies renders the translator's second call under each strategy: keep
// shows its own earlier call (with its target_language input), inherit shows the outer
// turns filtered by its signature, the others put the outer turn (its `text` input,
// which the translator never saw) into the prompt.
func TestPreviewStrategies(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	conv := mustConversation(t, a, "CorrectThenTranslate")
	mustSend(t, a, conv, "main", sig.NewMap("text", "i has a apple"))
	mustSend(t, a, conv, "main", sig.NewMap("text", "she go home yesterday"))
	pg := pageOf(t, a, conv, "main")
	var call *trace.Call
	for _, c := range leafCalls(pg.Turns[1]) {
		if c.Path == "translator" {
			call = c
		}
	}
	if call == nil {
		t.Fatal("no translator call")
	}
	all := func(r Rendering) string {
		var b strings.Builder
		for _, m := range r.Messages {
			b.WriteString(m.Role + ": " + m.Content + "\n")
		}
		return b.String()
	}
	tests := []struct {
		strategy int
		has      []string
		hasNot   []string
	}{
		{1, []string{"[[ ## corrected ## ]]\nI has a apple.\n\n[[ ## target_language ## ]]\nFrench"}, []string{"i has a apple"}},
		{2, []string{"user: [[ ## corrected ## ]]\nI has a apple.\nassistant"}, []string{"i has a apple"}},
		{3, []string{"text: i has a apple"}, nil},
		{4, []string{"user: i has a apple"}, nil},
		{5, []string{"text: i has a apple"}, nil},
	}
	for _, tc := range tests {
		r, err := a.Preview(ctx, PreviewRequest{Conv: conv, Branch: "main", Turn: pg.IDs[1], Call: call.ID, Strategy: tc.strategy})
		if err != nil || r.Err != "" || len(r.Messages) == 0 || r.Tokens <= 0 {
			t.Fatalf("strategy %d: %v %q, %d messages", tc.strategy, err, r.Err, len(r.Messages))
		}
		text := all(r)
		for _, s := range tc.has {
			if !strings.Contains(text, s) {
				t.Errorf("strategy %d lacks %q:\n%s", tc.strategy, s, text)
			}
		}
		for _, s := range tc.hasNot {
			if strings.Contains(text, s) {
				t.Errorf("strategy %d shows %q:\n%s", tc.strategy, s, text)
			}
		}
		if !strings.Contains(r.Messages[len(r.Messages)-1].Content, "she go home yesterday") &&
			!strings.Contains(r.Messages[len(r.Messages)-1].Content, call.Inputs.String("corrected")) {
			t.Errorf("strategy %d: the last message does not carry the call's own input:\n%s", tc.strategy, text)
		}
	}
}

func TestPreviewOrchestratorInnerSessions(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	conv := mustConversation(t, a, "Orchestrator")
	mustSend(t, a, conv, "main", sig.NewMap("task", "write a short poem about cats"))
	mustSend(t, a, conv, "main", sig.NewMap("task", "now one about dogs"))
	pg := pageOf(t, a, conv, "main")
	for _, c := range leafCalls(pg.Turns[1]) {
		for s := 1; s <= 5; s++ {
			r, err := a.Preview(ctx, PreviewRequest{Conv: conv, Branch: "main", Turn: pg.IDs[1], Call: c.ID, Strategy: s})
			if err != nil || r.Err != "" || len(r.Messages) == 0 {
				t.Errorf("%s strategy %d: %v %q", c.Path, s, err, r.Err)
			}
		}
	}
}

func TestDryRun(t *testing.T) {
	ctx := context.Background()
	a, _, model, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	mustSend(t, a, conv, "main", question(questions[0]))
	asked := model.n.Load()
	for s := 0; s <= 5; s++ {
		rs, err := a.DryRun(ctx, conv, "main", question("Is the typed text in the request?"), s)
		if err != nil || len(rs) != 1 {
			t.Fatalf("strategy %d: %v, %d renderings", s, err, len(rs))
		}
		r := rs[0]
		if r.Err != "" || r.Path != "classify" || len(r.Messages) < 2 || r.Tokens <= 0 {
			t.Fatalf("strategy %d: %+v", s, r)
		}
		if last := r.Messages[len(r.Messages)-1].Content; !strings.Contains(last, "Is the typed text in the request?") {
			t.Errorf("strategy %d: last message %q lacks the typed input", s, last)
		}
	}
	if model.n.Load() != asked {
		t.Error("a dry run called the model")
	}
	if n := pageOf(t, a, conv, "main").Total; n != 1 {
		t.Errorf("dry runs recorded turns: %d", n)
	}
}

// TestCancelledSend: a Send cancelled before its turn began records nothing; one
// cancelled mid-stream keeps a cancelled turn beside the branch (out of its history),
// with the call it cut.
func TestCancelledSend(t *testing.T) {
	ctx := context.Background()
	a, st, _, _ := newWorkbench(t)
	a.model = demoModel(400) // slow enough to cancel mid-stream
	conv := mustConversation(t, a, "SupportAgent")
	mustSend(t, a, conv, "main", question(questions[0]))

	tests := []struct {
		name   string
		cancel func(context.CancelFunc, chan Event)
		kept   int // cancelled turns kept beside the branch after this case
	}{
		{"before the turn", func(c context.CancelFunc, _ chan Event) { c() }, 0},
		{"mid-stream", func(c context.CancelFunc, ev chan Event) {
			go func() {
				n := 0
				for e := range ev {
					if e.Kind == EventDelta {
						if n++; n == 3 {
							c()
						}
					}
				}
			}()
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ev := make(chan Event, 1024)
			tc.cancel(cancel, ev)
			tr, err := a.Send(cctx, SendRequest{Conv: conv, Branch: "main", Inputs: question("cancel me")}, ev)
			close(ev)
			if err == nil || !errors.Is(err, context.Canceled) || tr != nil {
				t.Fatalf("cancelled send: turn %v, err %v; want context.Canceled", tr, err)
			}
			var kt *KeptTurnError
			if errors.As(err, &kt) != (tc.kept > 0) {
				t.Errorf("kept turn error: %v", err)
			}
			kept, err := a.KeptTurns(ctx, conv, "main")
			if err != nil || len(kept) != tc.kept || (tc.kept > 0 && (kept[0].Status != trace.StatusCancelled || len(kept[0].Turn.Calls) == 0)) {
				t.Errorf("kept turns: %v %+v", err, kept)
			}
			if n := pageOf(t, a, conv, "main").Total; n != 1 {
				t.Errorf("branch has %d turns, want 1", n)
			}
			if p, err := st.PendingTurns(ctx); err != nil || len(p) != 0 {
				t.Errorf("pending turns after cancel: %v %v", p, err)
			}
			if tree, _ := a.TurnTree(ctx, conv); len(tree) != 1 {
				t.Errorf("turn tree has %d turns, want 1", len(tree))
			}
		})
	}
}

// The dry run under the strategy an agent uses is exactly the first request enter then
// sends: same history (filters, windows, scopes applied), byte for byte.
func TestDryRunIsWhatEnterSends(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		agent string
		field string
		texts []string
	}{
		{"SupportAgent", "question", []string{questions[0], questions[1], questions[2]}},
		{"CorrectThenTranslate", "text", []string{"i has a apple", "she go home yesterday", "they was late"}},
		{"ResearchAgent", "question", []string{"How long do refunds take?", "When can I talk to a human?", "How do I export my data?"}},
		// an agent file whose session keeps a window of one turn: the dry run must apply it
		{"windowed", "question", []string{questions[0], questions[1], questions[2]}},
	}
	for _, tc := range tests {
		t.Run(tc.agent, func(t *testing.T) {
			a, _, _, _ := newWorkbench(t)
			if tc.agent == "windowed" {
				dir := t.TempDir()
				a.SetAgentDirs(dir)
				writeAgent(t, dir, "windowed.toml", "support.toml", func(s string) string {
					s = strings.Replace(s, `name = "support"`, `name = "windowed"`, 1)
					return strings.Replace(s, "[[predictors]]", "[session]\nmax_turns = 1\n\n[[predictors]]", 1)
				})
			}
			conv := mustConversation(t, a, tc.agent)
			last := len(tc.texts) - 1
			for _, text := range tc.texts[:last] {
				mustSend(t, a, conv, "main", sig.NewMap(tc.field, text))
			}
			next := sig.NewMap(tc.field, tc.texts[last])
			rs, err := a.DryRun(ctx, conv, "main", next, 1)
			if err != nil || len(rs) != 1 || rs[0].Err != "" {
				t.Fatalf("dry run: %v %+v", err, rs)
			}
			mustSend(t, a, conv, "main", next)
			pg := pageOf(t, a, conv, "main")
			sent := leafCalls(pg.Turns[len(pg.Turns)-1])[0]
			if sent.Path != rs[0].Path {
				t.Fatalf("dry run of %q, first call sent %q", rs[0].Path, sent.Path)
			}
			var dry []lm.Message
			for _, m := range rs[0].Messages {
				dry = append(dry, m.Message)
			}
			g, _ := json.Marshal(dry)
			w, _ := json.Marshal(sent.Messages)
			if string(g) != string(w) {
				t.Errorf("dry run differs from what was sent:\n dry  %s\n sent %s", g, w)
			}
		})
	}
}
