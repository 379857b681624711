package lm

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// encodingJSON is a message as the go-openai client marshals it (encoding/json, HTML
// escaping on): what AppendMessageJSON must write byte for byte.
func encodingJSON(t testing.TB, m Message) string {
	t.Helper()
	b, err := json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content,omitempty"`
	}{m.Role, m.Content})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppendMessageJSON(t *testing.T) {
	cases := []Message{
		{Role: "system", Content: "Your input fields are:\n1. `question` (str)"},
		{Role: "user", Content: ""},
		{Role: "assistant", Content: `quotes " and \ backslashes, <b>tags</b> & ampersands`},
		{Role: "user", Content: "controls \x00\x01\x1f\x7f \b\f\n\r\t"},
		{Role: "user", Content: "unicode é 日本 🎉, separators \u2028 \u2029, BOM \ufeff"},
		{Role: "user", Content: "invalid \xff\xfe UTF-8 \xc3 cut, and a lone \xed\xa0\x80 surrogate"},
		{Role: "ro\"le", Content: strings.Repeat("long text ", 1000)},
	}
	// and strings of random bytes, ASCII-heavy as texts are
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab <>&\"\\\n\t\x00\x1f\x7f\xc3\xa9\xe2\x80\xa8\xff")
	for range 500 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, Message{Role: "user", Content: string(b)})
	}
	for i, m := range cases {
		if got, want := string(AppendMessageJSON(nil, m)), encodingJSON(t, m); got != want {
			t.Errorf("case %d (%q):\n got %s\nwant %s", i, m.Content, got, want)
		}
	}
}

// FuzzAppendJSONString checks AppendJSONString against encoding/json on any string.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\x00\n\"\\", "\u2028\xff", "é日🎉"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want)
		}
	})
}

// BenchmarkMessagesJSON writes a 1,000-turn request's 2,001 messages, as encoding/json
// (the go-openai client's way) and as AppendMessageJSON.
func BenchmarkMessagesJSON(b *testing.B) {
	msgs := make([]Message, 2001)
	for i := range msgs {
		role, text := "user", "[[ ## question ## ]]\nWhy was I charged twice for my subscription this month? <order #1234>"
		if i%2 == 0 {
			role, text = "assistant", "[[ ## reasoning ## ]]\nThe customer sees two charges & asks why.\n\n[[ ## reply ## ]]\nSorry about that: the second charge is a pre-authorisation and will drop off in 3-5 days.\n\n[[ ## completed ## ]]"
		}
		msgs[i] = Message{Role: role, Content: text}
	}
	type wire struct {
		Role    string `json:"role"`
		Content string `json:"content,omitempty"`
	}
	b.Run("encoding-json", func(b *testing.B) {
		ws := make([]wire, len(msgs))
		for i, m := range msgs {
			ws[i] = wire{m.Role, m.Content}
		}
		for b.Loop() {
			if _, err := json.Marshal(ws); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendMessageJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = append(buf[:0], '[')
			for i, m := range msgs {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = AppendMessageJSON(buf, m)
			}
			buf = append(buf, ']')
		}
	})
}
