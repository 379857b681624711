package llm

import (
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
