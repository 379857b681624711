package adapter

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Issue 16: pydantic's error texts: every error counted and listed, each with its
// "For further information visit" line, under pydantic's name of the annotation.
func TestPydanticErrorTexts(t *testing.T) {
	const url = "\n    For further information visit https://errors.pydantic.dev/2.13/v/"
	cases := []struct {
		typ  string
		in   any
		want string
	}{
		{"int", "forty", "1 validation error for int\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='forty', input_type=str]" + url + "int_parsing"},
		{"list[int]", []any{"a", int64(1), "b"}, "2 validation errors for list[int]\n0\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='a', input_type=str]" + url + "int_parsing" +
			"\n2\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='b', input_type=str]" + url + "int_parsing"},
		{"dict[str, int]", sig.NewMap("a", "x", "b", int64(2)), "1 validation error for dict[str,int]\na\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='x', input_type=str]" + url + "int_parsing"},
		{"Optional[int]", "x", "1 validation error for nullable[int]\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='x', input_type=str]" + url + "int_parsing"},
		{"Union[int, bool]", "x", "2 validation errors for union[int,bool]\nint\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='x', input_type=str]" + url + "int_parsing" +
			"\nbool\n  Input should be a valid boolean, unable to interpret input [type=bool_parsing, input_value='x', input_type=str]" + url + "bool_parsing"},
		{"tuple[int, str]", []any{"x"}, "2 validation errors for tuple[int, str]\n0\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='x', input_type=str]" + url + "int_parsing" +
			"\n1\n  Field required [type=missing, input_value=['x'], input_type=list]" + url + "missing"},
		{"Literal['a', 'b']", "c", "1 validation error for literal['a','b']\n  Input should be 'a' or 'b' [type=literal_error, input_value='c', input_type=str]" + url + "literal_error"},
	}
	for _, c := range cases {
		_, err := Validate(sig.MustType(c.typ), c.in)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.typ, err, c.want)
		}
	}
}
