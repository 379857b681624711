package sessions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// TestDeltaFields streams a real turn: every delta names the output field its call is
// writing once the field's header has arrived, and the last delta of each call holds
// every output field's value, split by the adapter with no header markup left.
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
	last := map[string][]adapter.FieldText{}
	fields := map[string]bool{}
	for _, e := range all {
		if e.Kind != EventDelta {
			continue
		}
		last[e.Path] = e.Output
		if e.Field != "" {
			fields[e.Path+"/"+e.Field] = true
		}
		for _, f := range e.Output {
			if strings.Contains(f.Text, "[[ ##") || strings.Contains(f.Text, "## ]]") {
				t.Errorf("%s: field %q streamed adapter markup: %q", e.Path, f.Name, f.Text)
			}
		}
	}
	want := map[string]string{}
	for _, c := range tr.Calls {
		c.Outputs.Range(func(k string, v any) bool { want[c.Path+"/"+k] = c.Outputs.String(k); return true })
	}
	if len(want) != 3 { // classify: intent; respond: reasoning, reply
		t.Fatalf("outputs of the calls: %v", want)
	}
	for k, v := range want {
		if !fields[k] {
			t.Errorf("no delta labelled %s (have %v)", k, fields)
		}
		path, name, _ := strings.Cut(k, "/")
		var got string
		for _, f := range last[path] {
			if f.Name == name {
				got = f.Text
			}
		}
		if strings.TrimSpace(got) != v {
			t.Errorf("%s streamed %q, want the field's value %q", k, got, v)
		}
	}
	for k := range fields {
		if _, ok := want[k]; !ok {
			t.Errorf("delta labelled with an unexpected field %s", k)
		}
	}
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
		retryAfter          int // a retrying try after this many deltas (0: none)
		deltas              []string
		want                []string // field per delta
		output              string   // the last delta's output parts
	}{
		{"chat", "chat", "chat", 0,
			[]string{"[[ ## reas", "oning ## ]]\nI think", "\n\n[[ ## answer ## ]]\n", "42", "\n\n[[ ## completed ## ]]"},
			[]string{"", "reasoning", "answer", "answer", ""}, `reasoning="I think\n" answer="42\n"`},
		{"json", "json", "json", 0,
			[]string{`{"reasoning": "a, b`, `", "ans`, `wer": "4`, `2"}`},
			[]string{"reasoning", "reasoning", "answer", ""}, `="{\"reasoning\": \"a, b\", \"answer\": \"42\"}"`},
		{"fallback to json", "chat", "json", 0,
			[]string{`{"answer": `, `"x"`},
			[]string{"answer", "answer"}, `="{\"answer\": \"x\""`},
		{"retry restarts the text", "chat", "chat", 2,
			[]string{"[[ ## reasoning ## ]]\n", "so", "[[ ## answer ## ]]\n", "1"},
			[]string{"reasoning", "reasoning", "answer", "answer"}, `answer="1"`},
		{"unknown path", "nowhere", "chat", 0,
			[]string{"[[ ## answer ## ]]\n1"},
			[]string{""}, `="[[ ## answer ## ]]\n1"`},
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
			var got, output []string
			for e := range ch {
				if e.Kind == EventDelta {
					got = append(got, e.Field)
					output = output[:0]
					for _, f := range e.Output {
						output = append(output, fmt.Sprintf("%s=%q", f.Name, f.Text))
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("fields %q, want %q", got, tc.want)
			}
			if o := strings.Join(output, " "); o != tc.output {
				t.Errorf("output %s, want %s", o, tc.output)
			}
		})
	}
}

// An event refused by a full channel loses no text: the next one carries all of it.
func TestObserverFullChannelLosesNoText(t *testing.T) {
	ch := make(chan Event, 2)
	o := newObserver(ch, nil)
	o.CallStarted("p", &trace.Call{Path: "p"})
	for _, d := range []string{"a", "b", "c", "d"} {
		o.Delta("p", d)
	}
	<-ch
	<-ch              // a, ab; abc and abcd were refused
	o.Delta("p", "e") // abcde
	if got := (<-ch).Output; len(got) != 1 || got[0].Text != "abcde" {
		t.Fatalf("streamed %q, want abcde", got)
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
