package limits_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/limits"
)

func TestCheckJSON(t *testing.T) {
	deep := strings.Repeat("[", limits.Depth)
	cases := []struct {
		name      string
		in        string
		line, col int // 0: no error
	}{
		{"flat", `{"a":[1,2,{"b":3}]}`, 0, 0},
		{"at the limit", deep + strings.Repeat("]", limits.Depth), 0, 0},
		{"one past", deep + "[", 1, limits.Depth + 1},
		{"objects count", strings.Repeat(`{"a":`, limits.Depth+1), 1, 5*limits.Depth + 1},
		{"brackets in strings do not", `["` + strings.Repeat("[", 3*limits.Depth) + `"]`, 0, 0},
		{"escaped quote stays in the string", `["\"` + strings.Repeat("[", 3*limits.Depth) + `"]`, 0, 0},
		{"line and column", "{\n  \"a\":\n" + strings.Repeat("[", limits.Depth), 3, limits.Depth}, // the object is level 1
		{"closing resets", strings.Repeat("[]", 5*limits.Depth), 0, 0},
	}
	for _, c := range cases {
		err := limits.CheckJSON([]byte(c.in))
		var de *limits.DepthError
		switch {
		case c.line == 0 && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.line != 0 && !errors.As(err, &de):
			t.Errorf("%s: got %v, want a DepthError", c.name, err)
		case c.line != 0 && (de.Line != c.line || de.Column != c.col):
			t.Errorf("%s: at %d:%d, want %d:%d (%v)", c.name, de.Line, de.Column, c.line, c.col, err)
		}
	}
}

func TestCheckUTF8(t *testing.T) {
	if err := limits.CheckUTF8([]byte("é👍 fine")); err != nil {
		t.Fatal(err)
	}
	err := limits.CheckUTF8([]byte("ok\nab\xffc"))
	var ue *limits.UTF8Error
	if !errors.As(err, &ue) || ue.Line != 2 || ue.Column != 3 || ue.Byte != 0xff {
		t.Fatalf("got %#v", err)
	}
	if want := "line 2, column 3: invalid UTF-8 (byte 0xff)"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start with %q", err, want)
	}
}

func TestExcerpt(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{strings.Repeat("a", 3000), 4, "aaaa… [2.9 KiB more, 2.9 KiB in all]"},
		{"éééé", 3, "é… [6 bytes more, 8 bytes in all]"}, // cut at a rune boundary
		{strings.Repeat("x", 5<<20), 2, "xx… [5 MiB more, 5 MiB in all]"},
	}
	for _, c := range cases {
		if got := limits.Excerpt(c.in, c.n); got != c.want {
			t.Errorf("Excerpt(%.10q…, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
