package export

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/storage"
)

// answerLM answers "question, context -> answer, note" from the question.
func answerLM() *lm.Scripted {
	return &lm.Scripted{Func: func(req lm.Request) (string, bool, error) {
		q := req.Meta.Inputs.String("question")
		return fmt.Sprintf("[[ ## answer ## ]]\nA:%s\n\n[[ ## note ## ]]\nN:%s\n\n[[ ## completed ## ]]", q, q), true, nil
	}}
}

// TestExamplesEqualToExamples (issue 16): a stored conversation's turn-level examples are
// what Session.ToExamples gives for its session: the seed, exclude_fields,
// history_input_fields, the window, max_stored_turns and explicit snapshots applied by
// the engine's history builder; both when the caller gives the session's options and
// when a saved file's settings come in through import.
func TestExamplesEqualToExamples(t *testing.T) {
	seed := &sig.History{Messages: []*sig.Map{sig.NewMap("question", "hi", "answer", "hello")}}
	cases := []struct {
		name string
		opts core.Options
	}{
		{"defaults", core.Options{}},
		{"seed", core.Options{InitialHistory: seed}},
		{"exclude_fields", core.Options{ExcludeFields: []string{"context", "note"}}},
		{"history_input_fields", core.Options{HistoryInputFields: []string{"question"}}},
		{"window over the seed", core.Options{InitialHistory: seed, MaxTurns: core.Int(2)}},
		{"max_stored_turns", core.Options{MaxStoredTurns: core.Int(2)}},
		{"explicit history kept", core.Options{HistoryPolicy: core.UseIfProvided}},
		{"history field renamed", core.Options{HistoryField: "chat"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := core.WithLM(context.Background(), answerLM())
			st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "x.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			// Stored live through the sink, as the workbench stores an agent's turns (the
			// caller knows the options).
			if _, err := st.CreateConversation(ctx, storage.NewConversation{ID: "live"}); err != nil {
				t.Fatal(err)
			}
			opts := tc.opts
			opts.Sink = st.Sink("live", storage.MainBranch)
			module := core.MustPredict("question, context -> answer, note")
			s, err := core.Sessionify(module, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range []string{"Q1", "Q2", "Q3", "Q4"} {
				in := sig.NewMap("question", q, "context", "C"+q)
				if i == 2 {
					in.Set(s.HistoryField(), sig.History{Messages: []*sig.Map{sig.NewMap("question", "given")}})
				}
				if _, err := s.Forward(ctx, in); err != nil {
					t.Fatal(err)
				}
			}
			// Imported from the session's save file (the settings come from the file); its
			// session is the one core.Load makes of the file.
			var file bytes.Buffer
			if err := s.Save(&file); err != nil {
				t.Fatal(err)
			}
			f, err := savefile.Decode(file.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			im, err := BuildImport(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.CreateConversation(ctx, storage.NewConversation{ID: "imported", Metadata: im.Metadata}); err != nil {
				t.Fatal(err)
			}
			for _, tr := range im.Turns {
				if _, err := st.AppendTurn(ctx, "imported", storage.MainBranch, tr); err != nil {
					t.Fatal(err)
				}
			}
			loaded, err := core.Load(file.Bytes(), module, core.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, route := range []struct {
				conv string
				o    Options
				s    *core.Session
			}{{"live", Options{Session: tc.opts}, s}, {"imported", Options{}, loaded}} {
				want, err := route.s.ToExamples(core.ExampleOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var wantText strings.Builder
				for _, ex := range want {
					wantText.WriteString(exampleLine(ex) + "\n")
				}
				src, err := Load(ctx, st, route.conv, storage.MainBranch)
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if err := Write(&got, "examples", src, route.o); err != nil {
					t.Fatal(err)
				}
				if got.String() != wantText.String() {
					t.Errorf("%s: examples differ from ToExamples:\n%s\nwant\n%s", route.conv, got.String(), wantText.String())
				}
			}
		})
	}
}
