package adapter

import (
	"errors"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Issue 16: a missing output becomes None exactly when DSPy's annotation_allows_none says
// so (None, or a union with None in it; not Any, not Literal[..., None]), in the
// JSONAdapter (apply_output_field_defaults) and the ChatAdapter alike.
func TestMissingOutputAllowsNone(t *testing.T) {
	cases := []struct {
		typ   string
		allow bool
	}{
		{"None", true},
		{"Optional[int]", true},
		{"Union[int, None]", true},
		{"Union[int, str, None]", true},
		{"int | None", true},
		{"Optional[list[str]]", true},
		{"Any", false},
		{"Literal['a', None]", false},
		{"int", false},
		{"str", false},
		{"Union[int, str]", false},
	}
	for _, c := range cases {
		s := sig.New("S", "x", []sig.Field{field("q", "str", "")}, []sig.Field{field("answer", "str", ""), field("extra", c.typ, "")})
		if got := sig.MustType(c.typ).AllowsNone(); got != c.allow {
			t.Errorf("%s: AllowsNone() = %v, want %v", c.typ, got, c.allow)
		}
		for _, ad := range []struct {
			name  string
			parse func(*sig.Signature, string) (*sig.Map, error)
			text  string
		}{
			{"json", ParseJSON, `{"answer": "a"}`},
			{"chat", ParseChat, "[[ ## answer ## ]]\na\n\n[[ ## completed ## ]]"},
		} {
			out, err := ad.parse(s, ad.text)
			var pe *ParseError
			switch {
			case c.allow && err != nil:
				t.Errorf("%s %s: %v, want extra = None", ad.name, c.typ, err)
			case c.allow:
				if v, ok := out.Get("extra"); !ok || v != nil || out.Keys()[1] != "extra" {
					t.Errorf("%s %s: extra = %v (%v), want None in signature order", ad.name, c.typ, v, out.Keys())
				}
			case !errors.As(err, &pe):
				t.Errorf("%s %s: err = %v, want a parse error for the missing field", ad.name, c.typ, err)
			}
		}
	}
}
