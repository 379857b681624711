package adapter

import (
	"fmt"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
)

func TestChatStreamFields(t *testing.T) {
	s := sig.New("S", "x", []sig.Field{field("q", "str", "")}, []sig.Field{field("reasoning", "str", ""), field("answer", "str", "")})
	cases := []struct {
		partial string
		want    string // fmt %q of the parts, joined
	}{
		{"", ""},
		{"   \n", ""},
		{"Sure, here", `"":"Sure, here"`},
		{"[", ""},
		{"[[ ## reas", ""},
		{"[[ ## reasoning ## ]", ""},
		{"[[ ## reasoning ## ]]", `"reasoning":""`},
		{"[[ ## reasoning ## ]]\nstep 1", `"reasoning":"step 1"`},
		{"[[ ## reasoning ## ]]\nstep 1\n\n[[ ## ans", `"reasoning":"step 1\n"`},
		{"[[ ## reasoning ## ]]\nstep 1\n\n[[ ## answer ## ]]\n4", `"reasoning":"step 1\n" "answer":"4"`},
		{"[[ ## reasoning ## ]]\n[1, 2]", `"reasoning":"[1, 2]"`},
		{"[[ ## reasoning ## ]]\nx\n[[ ## q ## ]]\nnot an output", `"reasoning":"x"`},
		{"[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]\ntrailing", `"answer":"4\n"`},
		{"[[ ## answer ## ]] 4 on the header line", `"answer":"4 on the header line"`},
	}
	for _, c := range cases {
		got := ""
		for i, f := range (Chat{}).StreamFields(s, c.partial) {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%q:%q", f.Name, f.Text)
		}
		if got != c.want {
			t.Errorf("%q: got %s, want %s", c.partial, got, c.want)
		}
	}
}
