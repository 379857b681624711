package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/llm"
)

func init() {
	Register(Command{
		Name: "ask",
		Usage: []string{
			"ask [--model M] TEXT         send one chat message and stream the answer (checks a provider's setup)",
			"                             flags go before TEXT; TEXT '-' reads standard input",
		},
		Run:     runAsk,
		Ordinal: 21,
	})
}

// Exit codes of ask.
const (
	askOK        = 0
	askFailed    = 1   // the model call failed
	askUsage     = 2   // bad flags or configuration
	askCancelled = 130 // interrupted
)

// optFloat and optInt are flags that remember whether they were given.
type optFloat struct{ v *float64 }

func (o *optFloat) String() string {
	if o.v == nil {
		return ""
	}
	return fmt.Sprint(*o.v)
}

func (o *optFloat) Set(s string) error {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	o.v = &f
	return nil
}

type optInt struct{ v *int }

func (o *optInt) String() string {
	if o.v == nil {
		return ""
	}
	return fmt.Sprint(*o.v)
}

func (o *optInt) Set(s string) error {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
		return fmt.Errorf("%q is not a positive integer", s)
	}
	o.v = &n
	return nil
}

func runAsk(ctx context.Context, env Env) int {
	fs := newFlags("ask")
	var f llm.Flags
	var temp optFloat
	var maxTok optInt
	fs.StringVar(&f.Model, "model", "", `model name, "<provider>/<model>" or "demo"`)
	fs.StringVar(&f.Provider, "provider", "", "configured provider to use")
	fs.StringVar(&f.BaseURL, "base-url", "", "ad-hoc OpenAI-compatible endpoint, e.g. http://localhost:11434/v1")
	fs.StringVar(&f.APIKeyEnv, "api-key-env", "", "environment variable holding the key for --base-url (default OPENAI_API_KEY)")
	fs.StringVar(&f.ConfigPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/sessionbench/config.toml)")
	fs.Var(&temp, "temperature", "sampling temperature")
	fs.Var(&maxTok, "max-tokens", "maximum tokens in the answer")
	system := fs.String("system", "", "system message sent before the question")
	noStream := fs.Bool("no-stream", false, "wait for the whole answer instead of streaming")
	asJSON := fs.Bool("json", false, "print the answer, model, usage and latency as one JSON object (no streaming)")
	acceptDB(fs)
	args, code, done := parseFlags(env, fs, env.Args, false)
	if done {
		return code
	}
	f.Temperature, f.MaxTokens = temp.v, maxTok.v
	text := strings.Join(args, " ")
	if text == "-" {
		b, err := readInput(env.Stdin, "standard input", maxMessage)
		if err != nil {
			fmt.Fprintf(env.Stderr, "ask: %v\n", err)
			return askUsage
		}
		text = string(b)
	} else if err := limits.CheckUTF8([]byte(text)); err != nil {
		fmt.Fprintf(env.Stderr, "ask: the message: %v\n", err)
		return askUsage
	}
	if strings.TrimSpace(text) == "" {
		fmt.Fprintln(env.Stderr, "ask: nothing to ask (give the message as arguments, or '-' to read standard input)")
		return askUsage
	}

	sel, err := llm.Resolve(ctx, f, os.Getenv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "ask: %v\n", err)
		return askUsage
	}
	if sel.Demo {
		why := ""
		if sel.Note != "" {
			why = ": " + sel.Note
		}
		fmt.Fprintf(env.Stderr, "using the offline demo model%s; it does not understand text\n", why)
	} else {
		fmt.Fprintf(env.Stderr, "asking %s\n", sel.Description)
		if sel.Note != "" {
			fmt.Fprintf(env.Stderr, "(%s)\n", sel.Note)
		}
	}

	var msgs []lm.Message
	if *system != "" {
		msgs = append(msgs, lm.Message{Role: "system", Content: *system})
	}
	msgs = append(msgs, lm.Message{Role: "user", Content: text})
	req := lm.Request{Messages: lm.ListOf(msgs), OnTry: func(a lm.Try) {
		if a.Retrying {
			fmt.Fprintf(env.Stderr, "try %d failed: %s; retrying in %s\n", a.N, a.Err, a.Wait.Round(100*time.Millisecond))
		}
	}}
	streamed := false
	switch {
	case *asJSON && !*noStream:
		// Still a streamed request (its timeouts and usage reporting), printed at the end.
		req.OnDelta = func(string) {}
	case !*noStream:
		req.OnDelta = func(d string) {
			streamed = true
			_, _ = io.WriteString(env.Stdout, d)
		}
	}
	start := time.Now()
	resp, err := sel.LM.Call(ctx, req)
	if err != nil {
		if streamed {
			fmt.Fprintln(env.Stdout)
		}
		var pe *lm.PartialError
		switch {
		case lm.IsCancelled(err):
			fmt.Fprintln(env.Stderr, "ask: cancelled")
			return askCancelled
		case errors.As(err, &pe):
			fmt.Fprintf(env.Stderr, "ask: the answer broke off after %d characters (the text above is incomplete): %v\n", len(pe.Partial), err)
		default:
			fmt.Fprintf(env.Stderr, "ask: %v\n", err)
		}
		return askFailed
	}
	model := resp.Model
	if model == "" {
		model = sel.LM.Name()
	}
	u := resp.Usage
	elapsed := time.Since(start)
	if *asJSON {
		err := writeJSONOut(env.Stdout, askOut{Text: resp.Text, Model: model, Provider: sel.Provider, Demo: sel.Demo,
			Usage:     askUsageOut{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Cached: u.CachedTokens, Estimated: u.Estimated},
			LatencyMS: elapsed.Milliseconds(), Tries: len(resp.Tries)})
		if err != nil {
			fmt.Fprintf(env.Stderr, "ask: %v\n", err)
			return askFailed
		}
		return askOK
	}
	if !streamed {
		_, _ = io.WriteString(env.Stdout, resp.Text)
	}
	fmt.Fprintln(env.Stdout)
	cached, est, note := "", "", ""
	if u.CachedTokens > 0 {
		cached = fmt.Sprintf(", %d cached", u.CachedTokens)
	}
	if u.Estimated {
		est, note = "≈", " (≈ estimated with tiktoken: the server reported no usage)"
	}
	fmt.Fprintf(env.Stderr, "[%s · %s%d prompt + %s%d completion tokens%s%s · %s · %d tries]\n",
		model, est, u.PromptTokens, est, u.CompletionTokens, cached, note, elapsed.Round(time.Millisecond), len(resp.Tries))
	return askOK
}

// askOut is what ask --json prints.
type askOut struct {
	Text      string      `json:"text"`
	Model     string      `json:"model"`
	Provider  string      `json:"provider"`
	Demo      bool        `json:"demo"`
	Usage     askUsageOut `json:"usage"`
	LatencyMS int64       `json:"latency_ms"`
	Tries     int         `json:"attempts"` // HTTP tries (the key predates lm.Try)
}

type askUsageOut struct {
	Prompt     int  `json:"prompt_tokens"`
	Completion int  `json:"completion_tokens"`
	Cached     int  `json:"cached_tokens"`
	Estimated  bool `json:"estimated"` // counted with tiktoken: the server reported no usage
}
