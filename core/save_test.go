package core

import (
	"context"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A file written by dspy-session with_memory: root l2_memory, a child state with its own
// memory and a grandchild, and copy_mode "none".
const memoryFile = `{
  "version": 2,
  "history_field": "history",
  "max_turns": null,
  "max_stored_turns": null,
  "copy_mode": "none",
  "exclude_fields": ["history"],
  "history_input_fields": [],
  "history_policy": "override",
  "turns": [{"index": 0, "inputs": {"question": "Q1", "context": "C"}, "outputs": {"answer": "A1"}, "score": null}],
  "initial_history": null,
  "l2_memory": "root summary",
  "node_states": {
    "worker": {"version": 1, "turns": [
      {"index": 0, "inputs": {"task": "t"}, "outputs": {"result": "r"}, "history_snapshot": {"messages": []}, "score": 0.5}
    ], "initial_history": null, "l2_memory": "worker summary", "node_states": {
      "worker.inner": {"version": 1, "turns": [], "initial_history": null, "l2_memory": "deep", "node_states": {}}
    }}
  }
}`

// Issue 16, save files: what a file carries survives Load and Save, whatever the session.
func TestSaveKeepsFileState(t *testing.T) {
	cases := []struct {
		name   string
		module Module
		opts   Options
	}{
		{"flat session, no matching children", MustPredict("question, context -> answer"), Options{}},
		{"recursive session with a worker child", &Program{Name: "P", Subs: []Sub{{"worker", MustPredict("task -> result")}},
			Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) { return NewPrediction("answer", "x"), nil }}, Options{Recursive: Predictors}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load([]byte(memoryFile), tc.module, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			// An empty history_input_fields is no allow-list: every input is in the history.
			if keys := s.History().Messages[0].Keys(); strings.Join(keys, ",") != "question,context,answer" {
				t.Errorf("history keys %v, want every input", keys)
			}
			f, err := savefile.Decode(saved(t, s))
			if err != nil {
				t.Fatal(err)
			}
			w := f.Node("worker")
			got := []struct {
				what string
				ok   bool
			}{
				{"copy_mode", f.Settings.CopyMode == "none"},
				{"history_input_fields", f.Settings.HistoryInputFields != nil && len(f.Settings.HistoryInputFields) == 0},
				{"l2_memory", f.L2Memory == "root summary"},
				{"worker state", w != nil && len(w.Turns) == 1 && w.Turns[0].Turn.Outputs.String("result") == "r" && *w.Turns[0].Turn.Score == 0.5},
				{"worker l2_memory", w != nil && w.L2Memory == "worker summary"},
				{"grandchild", w != nil && w.Node("worker.inner") != nil && w.Node("worker.inner").L2Memory == "deep"},
			}
			for _, g := range got {
				if !g.ok {
					t.Errorf("%s lost on re-save:\n%s", g.what, saved(t, s))
				}
			}
		})
	}
}

// Issue 16: Options.CopyMode is saved as given; an unknown mode is refused.
func TestCopyModeOption(t *testing.T) {
	for _, tc := range []struct{ mode, want, err string }{
		{"", "deep", ""}, {"shallow", "shallow", ""}, {"none", "none", ""}, {"clone", "", "copy_mode"},
	} {
		s, err := Sessionify(MustPredict("q -> a"), Options{CopyMode: tc.mode})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v", tc.mode, err)
			}
			continue
		}
		f, err := savefile.Decode(saved(t, s))
		if err != nil || f.Settings.CopyMode != tc.want {
			t.Errorf("%q saved as %q (%v)", tc.mode, f.Settings.CopyMode, err)
		}
	}
}

// Issue 16: an empty allow-list option means all inputs, as in the file.
func TestEmptyHistoryInputFields(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		want  string
	}{
		{nil, "question,context,answer"},
		{[]string{}, "question,context,answer"},
		{[]string{"question"}, "question,answer"},
	} {
		s := MustSessionify(MustPredict("question, context -> answer"), Options{HistoryInputFields: tc.allow})
		mustRun(t, ctxWith(echoLM()), s, "question", "Q", "context", "C")
		if keys := strings.Join(s.History().Messages[0].Keys(), ","); keys != tc.want {
			t.Errorf("allow %v: history keys %s, want %s", tc.allow, keys, tc.want)
		}
	}
}

// Issue 16: Undo, PopTurn and Redo return turns with their scores.
func TestEditsKeepScores(t *testing.T) {
	ops := []struct {
		name string
		run  func(s *Session) []float64
	}{
		{"PopTurn", func(s *Session) []float64 { return scores(s.PopTurn()) }},
		{"Undo", func(s *Session) []float64 { return scores(s.Undo(2, false)...) }},
		{"Redo", func(s *Session) []float64 { s.Undo(2, false); return scores(s.Redo(2, false)...) }},
	}
	want := map[string]string{"PopTurn": "0.75", "Undo": "0.75,0.25", "Redo": "0.25,0.75"}
	for _, op := range ops {
		s := threeTurns(t, "Q1", "Q2", "Q3")
		i := 0
		vals := []float64{0.5, 0.25, 0.75}
		if _, err := s.Score(func(Example, *Prediction) (float64, error) { i++; return vals[i-1], nil }, nil); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range op.run(s) {
			got = append(got, py.Float(v))
		}
		if strings.Join(got, ",") != want[op.name] {
			t.Errorf("%s returned scores %v, want %s", op.name, got, want[op.name])
		}
	}
}

func scores(ts ...*trace.Turn) []float64 {
	var out []float64
	for _, t := range ts {
		if t.Score == nil {
			out = append(out, -1)
			continue
		}
		out = append(out, *t.Score)
	}
	return out
}

// Issue 16: a save written by the engine loads back with every field equal: writing the
// loaded session gives the same file, byte for byte.
func TestSaveLoadSaveIsStable(t *testing.T) {
	seed := &sig.History{Messages: []*sig.Map{sig.NewMap("question", "hi", "answer", "hello")}}
	cases := []struct {
		name   string
		module func() Module
		opts   Options
		run    func(ctx context.Context, s *Session)
	}{
		{"flat with every setting", func() Module { return MustPredict("question, context -> answer") },
			Options{InitialHistory: seed, MaxTurns: Int(3), MaxStoredTurns: Int(5), ExcludeFields: []string{"context"},
				HistoryInputFields: []string{"question"}, HistoryPolicy: UseIfProvided, CopyMode: "shallow"},
			func(ctx context.Context, s *Session) {
				for _, q := range []string{"Q1", "Q2"} {
					s.Forward(ctx, in("question", q, "context", "C"))
				}
				s.Forward(ctx, in("question", "Q3", "history", sig.History{Messages: []*sig.Map{in("question", "given")}}))
				s.Score(func(Example, *Prediction) (float64, error) { return 0.5, nil }, nil)
			}},
		{"recursive with memory", func() Module { return twoCalls(nil) },
			Options{Recursive: Predictors, CopyMode: "none", ChildConfigs: map[string]ChildConfig{"worker": {Lifespan: LifespanEpisodic, Consolidator: &consolidator{}}}},
			func(ctx context.Context, s *Session) {
				s.SetL2Memory("root memory")
				s.Forward(ctx, in("question", "Q1"))
				s.Forward(ctx, in("question", "Q2"))
			}},
		{"recursive, persistent children", func() Module { return retryAgent(2) }, Options{Recursive: Predictors},
			func(ctx context.Context, s *Session) {
				s.Forward(ctx, in("task", "t1"))
				s.Forward(ctx, in("task", "t2"))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := MustSessionify(tc.module(), tc.opts)
			tc.run(ctxWith(echoLM()), s)
			first := saved(t, s)
			l, err := Load(first, tc.module(), Options{Recursive: tc.opts.Recursive, ChildConfigs: tc.opts.ChildConfigs})
			if err != nil {
				t.Fatal(err)
			}
			if second := saved(t, l); string(second) != string(first) {
				t.Errorf("re-saved file differs:\n%s\n---\n%s", first, second)
			}
			for i, tr := range l.Turns() {
				w := s.Turns()[i]
				if !tr.Inputs.Equal(w.Inputs) || !tr.Outputs.Equal(w.Outputs) || !py.Same(tr.History, w.History) ||
					!py.Same(scoreOrNil(tr.Score), scoreOrNil(w.Score)) || tr.Explicit != w.Explicit || !tr.Started.Equal(w.Started) {
					t.Errorf("turn %d differs after load", i)
				}
			}
		})
	}
}

func scoreOrNil(s *float64) any {
	if s == nil {
		return nil
	}
	return *s
}
