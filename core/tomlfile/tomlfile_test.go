package tomlfile

import "testing"

func TestIndexLines(t *testing.T) {
	text := "a = 1\n[[steps]]\nname = \"x\"\ntext = \"\"\"\nname = \"not a key\"\n\"\"\"\n[[steps]]\nlist = [\n  1,\n]\nname = \"y\"\n[[steps.sub]]\nname = \"z\"\n"
	ix := NewIndex([]byte(text))
	cases := []struct {
		key  string
		line int
	}{
		{"a", 1}, {"steps.0", 2}, {"steps.0.name", 3}, {"steps.1", 7}, {"steps.1.name", 11},
		{"steps.1.sub.0.name", 13}, {"steps.1.missing", 7}, {"nothing", 0},
	}
	for _, c := range cases {
		if got := ix.Line(c.key); got != c.line {
			t.Errorf("Line(%q) = %d, want %d", c.key, got, c.line)
		}
	}
	if got := ix.LineOfPattern("steps.sub.name"); got != 13 {
		t.Errorf("LineOfPattern = %d, want 13", got)
	}
	if got := ix.Text(3); got != `name = "x"` {
		t.Errorf("Text(3) = %q", got)
	}
}
