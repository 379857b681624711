package llm

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
)

func TestEncodingFor(t *testing.T) {
	cases := map[string]string{
		"gpt-4":                  "cl100k_base",
		"gpt-4-0613":             "cl100k_base",
		"gpt-3.5-turbo":          "cl100k_base",
		"openai/gpt-4-turbo":     "cl100k_base",
		"text-embedding-3-small": "cl100k_base",
		"gpt-4o-mini":            "o200k_base",
		"gpt-4.1":                "o200k_base",
		"o3-mini":                "o200k_base",
		"llama3.1:8b":            "o200k_base",
		"":                       "o200k_base",
	}
	for model, want := range cases {
		if got := EncodingFor(model); got != want {
			t.Errorf("EncodingFor(%q) = %s, want %s", model, got, want)
		}
	}
}

func TestCountTokens(t *testing.T) {
	// "tiktoken is great!" is 6 tokens in cl100k_base (OpenAI's cookbook example).
	if n, err := CountText("gpt-4", "tiktoken is great!"); err != nil || n != 6 {
		t.Fatalf("CountText = %d, %v; want 6", n, err)
	}
	msgs := []lm.Message{{Role: "system", Content: "hello world"}, {Role: "user", Content: "tiktoken is great!"}}
	for _, model := range []string{"gpt-4", "gpt-4o"} {
		per, total, err := CountTokens(model, msgs)
		if err != nil {
			t.Fatal(err)
		}
		// framing 3 + role 1 + content; total adds the reply priming.
		c0, _ := CountText(model, "hello world")
		c1, _ := CountText(model, "tiktoken is great!")
		if per[0] != 3+1+c0 || per[1] != 3+1+c1 || total != per[0]+per[1]+3 {
			t.Errorf("%s: per %v total %d (contents %d, %d)", model, per, total, c0, c1)
		}
	}
	if per, total, err := CountTokens("gpt-4o", nil); err != nil || len(per) != 0 || total != 3 {
		t.Errorf("empty request: %v %d %v", per, total, err)
	}
	// A special-token spelling in user text is ordinary text, not a crash.
	if n, err := CountText("gpt-4o", "<|endoftext|>"); err != nil || n < 2 {
		t.Errorf("special token text: %d %v", n, err)
	}
}

// Counts from the cache are the encoder's, for every text and however often it is seen,
// and a full generation gives way to a new one that keeps what is still counted.
func TestTokenCounterCache(t *testing.T) {
	c, err := counterFor("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	fresh := &tokenCounter{enc: c.enc, cur: map[string]int{}, limit: 10000}
	texts := []string{"", "hello world", "tiktoken is great!", "<|endoftext|> is text", strings.Repeat("long text ", 500), "héllo wörld 你好"}
	for round := 0; round < 3; round++ {
		for _, x := range texts {
			if got, want := fresh.count(x), len(c.enc.EncodeOrdinary(x)); got != want {
				t.Fatalf("round %d: count(%.20q) = %d, want %d", round, x, got, want)
			}
		}
	}
	for _, x := range texts { // with the pieces of the long one
		if _, ok := fresh.cur[x]; !ok {
			t.Fatalf("%.20q is not cached", x)
		}
	}
	// A text bigger than what is left in the generation starts a new one; the old one is
	// still looked up, and a text found there moves to the new generation.
	big := strings.Repeat("x ", 5000)
	fresh.count(big)
	if _, ok := fresh.cur[big]; !ok || len(fresh.cur) != 1 {
		t.Fatalf("after a full generation: cur %d, old %d", len(fresh.cur), len(fresh.old))
	}
	for _, x := range texts {
		if _, ok := fresh.old[x]; !ok {
			t.Fatalf("%.20q is not in the old generation", x)
		}
	}
	if fresh.count("hello world") != 2 {
		t.Fatal("a count from the old generation changed")
	}
	if _, ok := fresh.cur["hello world"]; !ok {
		t.Fatal("a text counted again did not move to the new generation")
	}
}

// Counting a long text by its lines gives the encoder's count of the whole text, under
// both encodings, for DSPy's message shapes and for random text built from the
// characters that decide where tiktoken's pieces end.
func TestCountLines(t *testing.T) {
	var yaml strings.Builder
	yaml.WriteString("Your input fields are:\n1. `question` (str)\n\nThe conversation so far:\n")
	for i := range 60 {
		fmt.Fprintf(&yaml, "- question: \"Question %d: can't log in?\"\n  reply: 'Reply %d: reset it.'\n  intent: technical\n\n", i, i)
	}
	texts := []string{yaml.String(),
		strings.Repeat("[[ ## question ## ]]\nWhy?\n\n[[ ## reply ## ]]\nBecause.\n\n", 80),
		strings.Repeat("line one  \n\n  indented\n123456789\nabc:\n/path\nx\r\ny\n's\n\tz\n", 60),
		strings.Repeat("héllo\nwörld\n你好\n😀 ok\n", 200),
		"Prior conversation for context:\n" + strings.Repeat("- turn: 1\n  question: \"Why?\"\n  reply: 'No.'\n{\n  \"a\": [1]\n}\n[[ ## x ## ]]\n\\n\n#h\n*b*\n", 60)}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "7", " ", "  ", "\n", "\n\n", "\r", "\t", ":", "/", "'s", "'", "é", "你", "😀", "-", ".", "\u00a0", "\u2028", "[", "]", "{", "\"", "#", "*", "\u0301", "\u3000", "\f", "\v", "\u0085", "//", "\\", "!", "("}
	for range 400 {
		var b strings.Builder
		for b.Len() < countByLinesFrom+500 {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		c, err := counterFor(enc)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range texts {
			fresh := &tokenCounter{enc: c.enc, cur: map[string]int{}, limit: maxCountedBytes}
			if got, want := fresh.countLines(x), len(c.enc.EncodeOrdinary(x)); got != want {
				t.Fatalf("%s, text %d (%.40q): %d by lines, %d whole", enc, i, x, got, want)
			}
		}
	}
}

// TestCountWords holds counting by words (countWords) to encoding the whole text, on
// the texts a preview counts and on random texts made of what could make a piece run
// across a cut: letters of either case, digits and punctuation next to spaces,
// contractions, marks, other spaces and line breaks.
func TestCountWords(t *testing.T) {
	texts := []string{
		"[[ ## reply ## ]]\nAbout \"question 5: why was I charged twice?\": clear the cookies, reset the password again.",
		"It's what they'd do: DON'T stop, we'll SEE. I'm here, you've been there.",
		"HELLO World aB Cd eF mIxEd CaSe ABC def GHI",
		"café au lait, naïve re\u0301sume\u0301 a\u0301 b, 你好 a b 😀 c d",
		"a b c d e f g h i j k l m n o p q r s t u v w x y z A B C",
		"tab\tsep a  b   c\u00a0d\u3000e x\ny z\r\nw",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "Z", "Q", " ", " ", " ", "  ", "7", "42", "'s", "'t", "'ll", "'", "\u0301", "é", "É", "你", "😀",
		".", ",", "\n", "\r", "\t", "\u00a0", "-", "/", "[", "\"", "_", "ǅ", "ʰ", "\u3000", "1", "2345", ":", "?", "!", "'", ")", "#", "\u0085", "\f", "\v", "\u2028", "&", "<", "~"}
	for range 600 {
		var b strings.Builder
		for b.Len() < 40+rng.IntN(400) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		c, err := counterFor(enc)
		if err != nil {
			t.Fatal(err)
		}
		fresh := &tokenCounter{enc: c.enc, cur: map[string]int{}, limit: maxCountedBytes}
		for i, x := range texts {
			want := len(c.enc.EncodeOrdinary(x))
			// twice: the second time from the pieces the first one cached
			for range 2 {
				if got := fresh.countWords(x); got != want {
					t.Fatalf("%s, text %d (%q): %d by words, %d whole", enc, i, x, got, want)
				}
			}
		}
		if len(fresh.cur) <= len(texts) {
			t.Fatalf("%s: %d pieces cached for %d texts: the texts were not cut", enc, len(fresh.cur), len(texts))
		}
	}
}

func BenchmarkCountTokens(b *testing.B) {
	msgs := []lm.Message{{Role: "system", Content: "Your input fields are:\n1. `question` (str): \nYour output fields are:\n1. `intent` (str): One of: billing, technical, general"},
		{Role: "user", Content: "[[ ## question ## ]]\nThe reset email never arrives\n\nRespond with the corresponding output fields."}}
	if _, _, err := CountTokens("gpt-4o", msgs); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _, _ = CountTokens("gpt-4o", msgs)
	}
}

// BenchmarkCountRequest counts the request a 1,000-turn conversation sends (2,001
// messages), the way the wire pane and the demo model do on every turn: cold is a text
// never counted (the cache is bypassed), warm a request whose messages were counted
// before, as the next turn's request is: it repeats the conversation.
func BenchmarkCountRequest(b *testing.B) {
	msgs := []lm.Message{{Role: "system", Content: "Your input fields are:\n1. `question` (str)\n2. `history` (History)"}}
	for i := range 1000 {
		msgs = append(msgs, lm.Message{Role: "user", Content: fmt.Sprintf("[[ ## question ## ]]\nQuestion %d: my login does not work after the reset.", i)},
			lm.Message{Role: "assistant", Content: fmt.Sprintf("[[ ## reply ## ]]\nReply %d: clear your cookies, then reset the password again.\n\n[[ ## completed ## ]]", i)})
	}
	b.Run("cold", func(b *testing.B) {
		c, err := counterFor("o200k_base")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for _, m := range msgs {
				_ = len(c.enc.EncodeOrdinary(m.Role)) + len(c.enc.EncodeOrdinary(m.Content))
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		if _, _, err := CountTokens("gpt-4o", msgs); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			_, _, _ = CountTokens("gpt-4o", msgs)
		}
	})
}
