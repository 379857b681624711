package sessions

import (
	"context"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// TestDeltaFields streams a real turn: every delta names the output field its call is
// writing once the field's header has arrived, and the text streamed under a field is
// that field's value.
func TestDeltaFields(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	ev := collect()
	tr, err := a.Send(ctx, SendRequest{Conv: conv, Branch: "main", Inputs: question(questions[0])}, ev.ch)
	all := ev.stop()
	if err != nil {
		t.Fatal(err)
	}
	byField := map[string]*strings.Builder{}
	for _, e := range all {
		if e.Kind != EventDelta {
			continue
		}
		k := e.Path + "/" + e.Field
		if byField[k] == nil {
			byField[k] = &strings.Builder{}
		}
		byField[k].WriteString(e.Delta)
	}
	want := map[string]string{"classify/intent": tr.Outputs.String("intent"), "respond/reply": tr.Outputs.String("reply")}
	for k, v := range want {
		b := byField[k]
		if b == nil {
			t.Errorf("no delta labelled %s (have %v)", k, keys(byField))
			continue
		}
		if !strings.Contains(b.String(), v) {
			t.Errorf("%s streamed %q, which lacks the field's value %q", k, b.String(), v)
		}
	}
	for k := range byField {
		if _, ok := want[k]; !ok && !strings.HasSuffix(k, "/") {
			t.Errorf("delta labelled with an unexpected field %s", k)
		}
	}
}

func keys(m map[string]*strings.Builder) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

type twoPredictors struct{ Chat, JSON *core.Predict }

func (m *twoPredictors) Submodules() []core.Sub {
	return []core.Sub{{Name: "chat", Module: m.Chat}, {Name: "json", Module: m.JSON}}
}
func (m *twoPredictors) Forward(context.Context, *sig.Map) (*core.Prediction, error) { return nil, nil }

// TestObserverFields drives the observer as the engine does, split at awkward places.
func TestObserverFields(t *testing.T) {
	mod := &twoPredictors{
		Chat: core.MustChainOfThought("question -> answer"),
		JSON: &core.Predict{Signature: core.MustChainOfThought("question -> answer").Signature, Adapter: adapter.JSON{}},
	}
	tests := []struct {
		name, path, adapter string
		retryAfter          int // a retrying attempt after this many deltas (0: none)
		deltas              []string
		want                []string // field per delta
	}{
		{"chat", "chat", "chat", 0,
			[]string{"[[ ## reas", "oning ## ]]\nI think", "\n\n[[ ## answer ## ]]\n", "42", "\n\n[[ ## completed ## ]]"},
			[]string{"", "reasoning", "answer", "answer", ""}},
		{"json", "json", "json", 0,
			[]string{`{"reasoning": "a, b`, `", "ans`, `wer": "4`, `2"}`},
			[]string{"reasoning", "reasoning", "answer", ""}},
		{"fallback to json", "chat", "json", 0,
			[]string{`{"answer": `, `"x"`},
			[]string{"answer", "answer"}},
		{"retry restarts the text", "chat", "chat", 2,
			[]string{"[[ ## reasoning ## ]]\n", "so", "[[ ## answer ## ]]\n", "1"},
			[]string{"reasoning", "reasoning", "answer", "answer"}},
		{"unknown path", "nowhere", "chat", 0,
			[]string{"[[ ## answer ## ]]\n1"},
			[]string{""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := make(chan Event, 100)
			o := newObserver(ch, mod)
			o.CallStarted(tc.path, &trace.Call{Path: tc.path, Adapter: tc.adapter})
			for i, d := range tc.deltas {
				if tc.retryAfter > 0 && i == tc.retryAfter {
					o.Try(tc.path, lm.Try{N: 1, Retrying: true})
				}
				o.Delta(tc.path, d)
			}
			o.CallFinished(tc.path, &trace.Call{Path: tc.path})
			close(ch)
			var got []string
			for e := range ch {
				if e.Kind == EventDelta {
					got = append(got, e.Field)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("fields %q, want %q", got, tc.want)
			}
		})
	}
}

// A delta refused by a full channel is not lost: it goes out merged with the next one.
func TestObserverMergesDeltasOnFullChannel(t *testing.T) {
	ch := make(chan Event, 2)
	o := newObserver(ch, nil)
	o.CallStarted("p", &trace.Call{Path: "p"})
	for _, d := range []string{"a", "b", "c", "d"} {
		o.Delta("p", d)
	}
	got := (<-ch).Delta + (<-ch).Delta // a, b; c was refused
	o.Delta("p", "e")                  // c and d and e together
	got += (<-ch).Delta
	if got != "abcde" {
		t.Fatalf("streamed text %q, want abcde", got)
	}
}

// The dry run names the first predictor by its call path, also when a session wraps it.
func TestFirstPredictorPath(t *testing.T) {
	p := core.MustPredict("q -> a")
	wrapped, err := core.Sessionify(p, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		m    core.Module
		want string
	}{
		{p, ""},
		{&core.Program{Subs: []core.Sub{{Name: "planner", Module: p}}}, "planner"},
		{&core.Program{Subs: []core.Sub{{Name: "planner", Module: wrapped}}}, "planner"},
		{&core.Program{Subs: []core.Sub{{Name: "team", Module: &core.Program{Subs: []core.Sub{{Name: "lead", Module: p}}}}}}, "team.lead"},
	}
	for _, c := range cases {
		if path, got := firstPredictor(c.m); got != p || path != c.want {
			t.Errorf("firstPredictor = %q, %p; want %q", path, got, c.want)
		}
	}
}
