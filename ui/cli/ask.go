package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/llm"
)

func init() {
	Register(Command{
		Name: "ask",
		Usage: []string{
			"ask [--model M] TEXT         send one chat message and stream the answer (checks a provider's setup)",
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
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
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
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sessionbench ask [flags] TEXT   (TEXT '-' reads standard input)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(env.Args); err != nil {
		return askUsage
	}
	f.Temperature, f.MaxTokens = temp.v, maxTok.v
	text := strings.Join(fs.Args(), " ")
	if text == "-" {
		b, err := io.ReadAll(env.Stdin)
		if err != nil {
			fmt.Fprintf(env.Stderr, "ask: reading standard input: %v\n", err)
			return askUsage
		}
		text = string(b)
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
	}

	var msgs []lm.Message
	if *system != "" {
		msgs = append(msgs, lm.Message{Role: "system", Content: *system})
	}
	msgs = append(msgs, lm.Message{Role: "user", Content: text})
	req := lm.Request{Messages: msgs, OnAttempt: func(a lm.Attempt) {
		if a.Retrying {
			fmt.Fprintf(env.Stderr, "attempt %d failed: %s; retrying in %s\n", a.N, a.Err, a.Wait.Round(100*time.Millisecond))
		}
	}}
	streamed := false
	if !*noStream {
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
	if !streamed {
		_, _ = io.WriteString(env.Stdout, resp.Text)
	}
	fmt.Fprintln(env.Stdout)
	u := resp.Usage
	cached := ""
	if u.CachedTokens > 0 {
		cached = fmt.Sprintf(", %d cached", u.CachedTokens)
	}
	model := resp.Model
	if model == "" {
		model = sel.LM.Name()
	}
	fmt.Fprintf(env.Stderr, "[%s · %d prompt + %d completion tokens%s · %s · %d attempt(s)]\n",
		model, u.PromptTokens, u.CompletionTokens, cached, time.Since(start).Round(time.Millisecond), len(resp.Attempts))
	return askOK
}
