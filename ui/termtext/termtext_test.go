package termtext_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/ui/termtext"
	"github.com/sessionbench/sessionbench/ui/termtext/termtexttest"
)

func TestSanitizeRemovesEveryControl(t *testing.T) {
	for _, h := range termtexttest.Hostile {
		got := termtext.Sanitize("before " + h + " after")
		for _, p := range termtexttest.Problems(got, false) {
			t.Errorf("Sanitize(%q) kept %s: %q", h, p, got)
		}
		if !strings.Contains(got, "before") || !strings.Contains(got, "after") {
			t.Errorf("Sanitize(%q) lost the text: %q", h, got)
		}
	}
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\tb", "a    b"},
		{"crlf\r\nline", "crlf\nline"},
		{"lone\rcr", "lone␍cr"},
		{"esc\x1b[1m", "esc␛[1m"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"emoji 👍 ok", "emoji 👍 ok"},
		{"two\nlines", "two\nlines"},
		{"nul\x00", "nul␀"},
		{"del\x7f", "del␡"},
		{"c1\u0085 next", "c1\uFFFD next"},
		{"user\u202Efdp.exe", "user⟨RLO⟩fdp.exe"},
		{"\u202A\u202B\u202C\u202D", "⟨LRE⟩⟨RLE⟩⟨PDF⟩⟨LRO⟩"},
		{"\u2066a\u2069\u2067b\u2068c", "⟨LRI⟩a⟨PDI⟩⟨RLI⟩b⟨FSI⟩c"},
		{"arabic مرحبا stays", "arabic مرحبا stays"},
	}
	for _, c := range cases {
		if got := termtext.Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := termtext.OneLine("a\n\x1b]0;t\x07  b\r\nc"); got != "a ␛]0;t␇ b c" {
		t.Errorf("OneLine = %q", got)
	}
}

// The writer gives the same text as Sanitize (tabs kept) however the input is cut into
// writes: UTF-8 sequences and CRLF split between two writes included.
func TestWriterAnySplit(t *testing.T) {
	in := "tab\there " + termtexttest.Payload + " é€👍\r\nend\r"
	want := strings.ReplaceAll(termtext.Sanitize(strings.ReplaceAll(in, "\t", "\x00TAB\x00")), "␀TAB␀", "\t")
	for _, size := range []int{1, 2, 3, 5, 7, len(in)} {
		var out bytes.Buffer
		w := termtext.NewWriter(&out)
		for i := 0; i < len(in); i += size {
			if _, err := w.Write([]byte(in[i:min(i+size, len(in))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("writes of %d bytes:\n got %q\nwant %q", size, out.String(), want)
		}
	}
}

func TestWriterFlushesUnfinishedUTF8(t *testing.T) {
	var out bytes.Buffer
	w := termtext.NewWriter(&out)
	_, _ = w.Write([]byte("cut \xe2\x82"))
	if out.String() != "cut " {
		t.Errorf("before Flush: %q", out.String())
	}
	_ = w.Flush()
	if out.String() != "cut \uFFFD\uFFFD" {
		t.Errorf("after Flush: %q", out.String())
	}
}

func TestEscapeJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":"plain"}`, `{"a":"plain"}`},
		{"{\"a\":\"x\u202Ey\"}", `{"a":"x\u202ey"}`},
		{"[\"\u0085\u009b\x7f\"]", `["\u0085\u009b\u007f"]`},
		{"[\"\u2028\u2066é👍\"]", `["\u2028\u2066é👍"]`},
		{"[\"\xff\"]", `["\ufffd"]`},
	}
	for _, c := range cases {
		got := string(termtext.EscapeJSON([]byte(c.in)))
		if got != c.want {
			t.Errorf("EscapeJSON(%q) = %q, want %q", c.in, got, c.want)
		}
		if problems := termtexttest.Problems(got, false); len(problems) > 0 {
			t.Errorf("EscapeJSON(%q) left %v", c.in, problems)
		}
	}
}

// The JSON writer writes what EscapeJSON does, however the text is cut.
func TestJSONWriterAnySplit(t *testing.T) {
	in := "[\"x\u202Ey\u0085é👍\xff\"]\n"
	want := string(termtext.EscapeJSON([]byte(in)))
	for size := 1; size <= len(in); size++ {
		var out bytes.Buffer
		w := termtext.NewJSONWriter(&out)
		for i := 0; i < len(in); i += size {
			_, _ = w.Write([]byte(in[i:min(i+size, len(in))]))
		}
		_ = w.Flush()
		if out.String() != want {
			t.Errorf("writes of %d bytes: got %q, want %q", size, out.String(), want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{{0, "turn", "0 turns"}, {1, "call", "1 call"}, {2, "call record", "2 call records"}, {-1, "turn", "-1 turns"}} {
		if got := termtext.Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
