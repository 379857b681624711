package recognize

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
)

// TestReferenceMessages recognises the messages DSPy 3.3.1 itself wrote (the reference
// cases core/adapter checks against): each is recognised as ChatAdapter's, re-formats
// byte for byte, and the recovered signature has the case's fields in order.
func TestReferenceMessages(t *testing.T) {
	data, err := os.ReadFile("../adapter/testdata/chat-adapter-examples.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		FormatCases []struct {
			Name      string
			Signature struct{ Inputs, Outputs []struct{ Name, Type string } }
			Messages  []lm.Message
		} `json:"format_cases"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range f.FormatCases {
		if len(c.Messages) == 0 {
			continue // a case where DSPy raised
		}
		n++
		r := Parse(c.Messages)
		if r.Adapter != AdapterChat || !r.Exact {
			t.Errorf("%s: adapter %q exact %v (%s%s)", c.Name, r.Adapter, r.Exact, r.Reason, r.Mismatch)
			continue
		}
		for side, want := range map[string][]struct{ Name, Type string }{"inputs": c.Signature.Inputs, "outputs": c.Signature.Outputs} {
			got := r.Signature.Inputs
			if side == "outputs" {
				got = r.Signature.Outputs
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d %s, want %d", c.Name, len(got), side, len(want))
				continue
			}
			for i := range want {
				if got[i].Name != want[i].Name {
					t.Errorf("%s: %s %d is %s, want %s", c.Name, side, i, got[i].Name, want[i].Name)
				}
			}
		}
		msgs, err := adapter.Chat{}.Format(adapter.Request{Signature: r.Signature, Demos: r.Demos, Inputs: r.FormatInputs()})
		if err != nil || Compare(c.Messages, msgs) != "" {
			t.Errorf("%s: re-formatting: %v %s", c.Name, err, Compare(c.Messages, msgs))
		}
	}
	if n < 5 {
		t.Fatalf("only %d reference cases with messages", n)
	}
}
