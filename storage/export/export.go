// Package export writes a stored branch in the formats other tools read: dspy-session's
// save file (version 2, loadable by the Python library), DSPy Example JSONL at turn or
// call level, every call record as JSONL, OpenAI fine-tuning chat JSONL built from the
// exact requests, and a Markdown transcript.
package export

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// Formats lists the format names Write accepts.
var Formats = []string{"session-json", "examples", "calls", "openai-jsonl", "markdown"}

// Source is what is exported: one branch of one conversation. A source Load made reads
// its turns from the store a page at a time, on every pass over them (Each), so an
// export holds a page of turns, never the whole conversation; a source built with Turns
// set is read from them.
type Source struct {
	Conv   *storage.Conversation
	Branch string
	Turns  []*trace.Turn

	ctx   context.Context // what Load was given: the store is read under it
	store *storage.Store
	n     int // turns on the branch
}

// pageTurns is how many turns a pass holds at once.
const pageTurns = 8

// Load opens a branch for export; its turns are read as Each goes.
func Load(ctx context.Context, s *storage.Store, convID, branch string) (*Source, error) {
	c, err := s.Conversation(ctx, convID)
	if err != nil {
		return nil, err
	}
	b, err := s.Branch(ctx, convID, branch)
	if err != nil {
		return nil, err
	}
	return &Source{Conv: c, Branch: branch, ctx: ctx, store: s, n: b.Length}, nil
}

// Len is the number of turns.
func (src *Source) Len() int {
	if src.store == nil {
		return len(src.Turns)
	}
	return src.n
}

// Each calls f with every turn, root first, with its calls and their exact requests.
func (src *Source) Each(f func(t *trace.Turn) error) error {
	return src.EachWith(storage.LoadOptions{}, f)
}

// EachWith is Each reading the turns with o (NoRequests: without the calls' requests,
// completions and raw bodies, for a format that writes none of them).
func (src *Source) EachWith(o storage.LoadOptions, f func(t *trace.Turn) error) error {
	if src.store == nil {
		for _, t := range src.Turns {
			if err := f(t); err != nil {
				return err
			}
		}
		return nil
	}
	for from := 0; from < src.n; from += pageTurns {
		p, err := src.store.LoadBranchRangeWith(src.ctx, src.Conv.ID, src.Branch, from, pageTurns, o)
		if err != nil {
			return err
		}
		if p.Total != src.n {
			return fmt.Errorf("branch %s of %s changed while it was exported (%d turns, now %d)", src.Branch, src.Conv.ID, src.n, p.Total)
		}
		for _, t := range p.Turns {
			if err := f(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// Options refine some formats.
type Options struct {
	// Path selects call-level examples (examples) or the calls of one predictor
	// (openai-jsonl); "" means turn level / every call.
	Path string
	// HistoryField is the session's history field name; "" or "history" let the
	// settings an imported file carried decide.
	HistoryField string
	// NoCalls leaves the call records out of a session-json file (its extension keeps
	// each turn's times, attempts and children's counts): the file is then much smaller,
	// and what it restores has no calls to inspect.
	NoCalls bool
	// Session holds the conversation's own session settings when the caller knows them
	// (its agent's options): turn-level examples derive each history with them, the
	// settings an imported file carried filling what they leave unset (as core.Load
	// does), so the examples equal Session.ToExamples of the restored session.
	Session core.Options
}

// Write writes src in format.
func Write(w io.Writer, format string, src *Source, o Options) error {
	bw := bufio.NewWriter(w)
	var err error
	switch format {
	case "session-json":
		err = SessionJSON(bw, src, o)
	case "examples":
		err = Examples(bw, src, o)
	case "calls":
		err = Calls(bw, src)
	case "openai-jsonl":
		err = OpenAIJSONL(bw, src, o)
	case "markdown":
		err = Markdown(bw, src)
	default:
		return fmt.Errorf("unknown export format %q (want one of %s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// callLine is one call record in the calls export.
type callLine struct {
	Turn   int    `json:"turn"`
	Parent string `json:"parent,omitempty"`
	Depth  int    `json:"depth"`
	*trace.Call
	Children []string `json:"children,omitempty"` // shadows the embedded tree: ids only
	// StepAttempt is the scored attempt of a retrying step the call was made in (seed 003).
	StepAttempt *stepAttempt `json:"step_attempt,omitempty"`
}

// stepAttempt names an attempt in the calls export.
type stepAttempt struct {
	Step  string  `json:"step"`
	N     int     `json:"attempt"`
	Score float64 `json:"quality_score"`
	Best  bool    `json:"best"`
}

// Calls writes every call record as JSONL, parents before children, with the exact request,
// raw completion, usage, latency, error and HTTP tries ("attempts"); children are listed
// by id. A call made in a scored attempt of a retrying step says which (step_attempt; the
// innermost when attempts nest), and whether it was the step's best.
func Calls(w io.Writer, src *Source) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return src.Each(func(t *trace.Turn) error {
		byCall := map[string]*stepAttempt{}
		for _, a := range t.Attempts {
			for _, id := range a.Calls {
				byCall[id] = &stepAttempt{Step: a.Step, N: a.N, Score: a.Score, Best: a.Best}
			}
		}
		var rec func(parent string, c *trace.Call, depth int, in *stepAttempt) error
		rec = func(parent string, c *trace.Call, depth int, in *stepAttempt) error {
			if a := byCall[c.ID]; a != nil {
				in = a
			}
			line := callLine{Turn: t.Index, Parent: parent, Depth: depth, Call: c, StepAttempt: in}
			for _, ch := range c.Children {
				line.Children = append(line.Children, ch.ID)
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
			for _, ch := range c.Children {
				if err := rec(c.ID, ch, depth+1, in); err != nil {
					return err
				}
			}
			return nil
		}
		for _, c := range t.Calls {
			if err := rec("", c, 0, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// OpenAIJSONL writes OpenAI fine-tuning chat lines: the exact messages of each successful
// call followed by the model's raw answer as the assistant message.
func OpenAIJSONL(w io.Writer, src *Source, o Options) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return src.Each(func(t *trace.Turn) error {
		var err error
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if err != nil || c.Error != "" || c.Completion == "" || c.Messages.Len() == 0 || (o.Path != "" && c.Path != o.Path) {
				return
			}
			msgs := append(c.Messages.Slice(), lm.Message{Role: "assistant", Content: c.Completion})
			err = enc.Encode(struct {
				Messages []lm.Message `json:"messages"`
			}{msgs})
		})
		return err
	})
}

// Markdown writes a readable transcript: each turn's inputs and outputs, its score, and a
// list of the inner calls. It is written a turn at a time.
func Markdown(w io.Writer, src *Source) error {
	var b strings.Builder
	title := "Conversation"
	if src.Conv != nil {
		title = src.Conv.Title
		if title == "" {
			title = src.Conv.ID
		}
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	if src.Conv != nil {
		fmt.Fprintf(&b, "- conversation: `%s`\n- branch: `%s`\n- agent: %s\n- status: %s\n- turns: %d\n\n",
			src.Conv.ID, src.Branch, orDash(src.Conv.Agent), src.Conv.Status, src.Len())
	}
	err := src.EachWith(storage.LoadOptions{NoRequests: true}, func(t *trace.Turn) error {
		fmt.Fprintf(&b, "## Turn %d\n\n", t.Index)
		fields := func(m *sig.Map) {
			m.Range(func(k string, v any) bool {
				text := py.Text(v)
				if strings.Contains(text, "\n") {
					fmt.Fprintf(&b, "**%s**:\n\n%s\n\n", k, text)
				} else {
					fmt.Fprintf(&b, "**%s**: %s\n\n", k, text)
				}
				return true
			})
		}
		fields(t.Inputs)
		if t.Outputs == nil {
			b.WriteString("_(no outputs)_\n\n")
		} else {
			fields(t.Outputs)
		}
		if t.Score != nil {
			fmt.Fprintf(&b, "score: %s\n\n", py.Float(*t.Score))
		}
		if len(t.Attempts) > 0 {
			b.WriteString("Attempts:\n\n")
			for _, a := range t.Attempts {
				fmt.Fprintf(&b, "- `%s` #%d, score %s", a.Step, a.N, py.Float(a.Score))
				if a.Best {
					b.WriteString(" (best)")
				}
				if a.Summary != "" {
					fmt.Fprintf(&b, ": %s", a.Summary)
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		if len(t.Calls) > 0 {
			b.WriteString("Calls:\n\n")
			trace.WalkCalls(t.Calls, func(c *trace.Call, d int) {
				fmt.Fprintf(&b, "%s- `%s` %s, %d tokens, %s", strings.Repeat("  ", d), c.Path, c.PredictorType,
					c.Usage.TotalTokens, c.Latency.Round(1e6))
				if c.Error != "" {
					fmt.Fprintf(&b, " — error: %s", c.Error)
				}
				b.WriteString("\n")
			})
			b.WriteString("\n")
		}
		_, err := io.WriteString(w, b.String())
		b.Reset()
		return err
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, b.String()) // the heading of a branch without turns
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
