package llm

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// DemoName is the demo model's display name; it says what it is wherever it is shown.
const DemoName = "demo (offline)"

// DefaultDemoTokenRate is the demo model's streaming speed in the workbench.
const DefaultDemoTokenRate = 60.0

// Script answers some calls for the demo model, e.g. a scenario's agents following a
// prepared conversation. ok=false passes the call on (to the next script, then to the
// generic answer). Outputs missing from a script's answer are filled generically.
type Script interface {
	Answer(meta lm.Meta, msgs []lm.Message) (outputs *sig.Map, ok bool)
}

// ScriptFunc adapts a function to Script.
type ScriptFunc func(meta lm.Meta, msgs []lm.Message) (*sig.Map, bool)

// Answer calls f.
func (f ScriptFunc) Answer(meta lm.Meta, msgs []lm.Message) (*sig.Map, bool) { return f(meta, msgs) }

// DemoOptions configures the demo model.
type DemoOptions struct {
	// TokenRate is the streaming speed in tokens per second; 0 answers at once. The delay
	// applies to non-streaming calls too, so both behave like a real model.
	TokenRate float64
	Scripts   []Script
}

// Demo is the offline demo model: a real lm.LM that answers any signature with
// well-formed output in the calling adapter's format, deterministically (the same
// request always gets the same answer) and without any network. Plain chat requests get
// a plain, clearly labelled reply.
type Demo struct {
	opts DemoOptions
	// Scripts are consulted first, in order.
	Scripts []Script
}

// NewDemo builds the demo model.
func NewDemo(opts DemoOptions) *Demo { return &Demo{opts: opts, Scripts: opts.Scripts} }

// Name is DemoName.
func (d *Demo) Name() string { return DemoName }

// Call answers the request. It streams through req.OnDelta at the configured rate and
// stops at once when ctx is cancelled (the text so far goes into an lm.PartialError).
func (d *Demo) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return lm.Response{}, fmt.Errorf("demo model: call cancelled: %w", err)
	}
	msgs := req.Messages.Slice() // the demo model reads them as a slice; a fraction of its scripted work
	text, err := d.Complete(req.Meta, msgs)
	if err != nil {
		return lm.Response{}, err
	}
	var sent strings.Builder
	var tick *time.Ticker
	if d.opts.TokenRate > 0 {
		tick = time.NewTicker(time.Duration(float64(time.Second) / d.opts.TokenRate))
		defer tick.Stop()
	}
	for _, piece := range splitTokens(text) {
		if tick != nil {
			select {
			case <-tick.C:
			case <-ctx.Done():
				err := fmt.Errorf("demo model: call cancelled: %w", ctx.Err())
				if sent.Len() > 0 {
					return lm.Response{}, &lm.PartialError{Partial: sent.String(), Err: err}
				}
				return lm.Response{}, err
			}
		}
		sent.WriteString(piece)
		if req.OnDelta != nil {
			req.OnDelta(piece)
		}
	}
	att := lm.Try{N: 1, Latency: time.Since(start)}
	if req.OnTry != nil {
		req.OnTry(att)
	}
	resp := lm.Response{Text: text, Model: DemoName, FinishReason: "stop", Tries: []lm.Try{att}}
	if _, prompt, err := CountTokens("demo", msgs); err == nil {
		completion, _ := CountText("demo", text)
		resp.Usage = lm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	}
	return resp, nil
}

// Complete is the demo model's answer text, without streaming or delays.
func (d *Demo) Complete(meta lm.Meta, msgs []lm.Message) (string, error) {
	meta = fromMessages(meta, msgs)
	f := detectFormat(meta, msgs)
	inputs := meta.Inputs
	seed := demoSeed(meta, inputs, msgs)
	if f.kind == formatPlain {
		return plainReply(msgs, seed), nil
	}
	var scripted *sig.Map
	for _, s := range d.Scripts {
		if out, ok := s.Answer(meta, msgs); ok {
			scripted = out
			break
		}
	}
	g := newGen(seed, inputs)
	outputs := sig.NewMap()
	for _, fld := range f.outputs {
		if v, ok := scripted.Get(fld.Name); ok {
			outputs.Set(fld.Name, v)
			continue
		}
		outputs.Set(fld.Name, g.value(fld))
	}
	return render(f, outputs), nil
}

// demoSeed hashes what identifies a call, so equal calls get equal answers.
func demoSeed(meta lm.Meta, inputs *sig.Map, msgs []lm.Message) uint64 {
	h := fnv.New64a()
	h.Write([]byte(meta.Path))
	h.Write([]byte{0})
	if inputs.Len() > 0 {
		h.Write([]byte(py.CompactJSON(inputs)))
	} else if len(msgs) > 0 {
		h.Write([]byte(msgs[len(msgs)-1].Content))
	}
	return h.Sum64()
}

// splitTokens cuts text into token-sized pieces (a word with its leading space, or runs
// of at most four letters), which is roughly how real models stream.
func splitTokens(text string) []string {
	var out []string
	var cur strings.Builder
	letters := 0
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
			letters = 0
		}
	}
	for _, r := range text {
		switch {
		case r == ' ' && letters > 0:
			flush()
		case r == '\n' || unicode.IsPunct(r) && r != '\'':
			flush()
			cur.WriteRune(r)
			flush()
			continue
		case letters >= 4:
			flush()
		}
		cur.WriteRune(r)
		if r != ' ' {
			letters++
		}
	}
	flush()
	return out
}

// plainReply answers an unstructured chat (e.g. 'sessionbench ask').
func plainReply(msgs []lm.Message, seed uint64) string {
	last := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			last = msgs[i].Content
			break
		}
	}
	words := keywords(last, 4)
	intro := pick(seed, []string{
		"This is the offline demo model: no network, no real language model.",
		"Offline demo model here; this answer is generated locally and deterministically.",
		"(Offline demo model.) I do not understand text, but I can show how answers stream.",
	})
	if len(words) == 0 {
		return intro + " Configure a provider to talk to a real model: see 'sessionbench models'."
	}
	return fmt.Sprintf("%s You asked about %s. Configure a provider to get a real answer: see 'sessionbench models'.",
		intro, joinAnd(quoteAll(words)))
}

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = "\u201c" + w + "\u201d"
	}
	return out
}

func joinAnd(ws []string) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0]
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
}

func pick(seed uint64, options []string) string { return options[seed%uint64(len(options))] }

var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`about above after again against also because been before being below between
		both cannot could does doing down during each even ever from further have having here hers herself
		himself into itself just more most much must myself never only other ought ours over same should some
		such than that their theirs them themselves then there these they this those through under until very
		were what when where which while whom will with would your yours yourself please thanks thank really
		still want need like know think make made gets getting tell give show`) {
		stopwords[w] = true
	}
}

// keywords are the first n distinct content words of s (4+ letters, not stopwords).
func keywords(s string, n int) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '\'' }) {
		w = strings.Trim(w, "-'")
		lw := strings.ToLower(w)
		if utf8.RuneCountInString(lw) < 4 || stopwords[lw] || seen[lw] || strings.HasPrefix(lw, "http") {
			continue
		}
		seen[lw] = true
		out = append(out, lw)
		if len(out) == n {
			break
		}
	}
	return out
}
