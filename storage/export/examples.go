package export

import (
	"fmt"
	"io"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// Examples writes DSPy Example JSONL. At turn level it is dspy-session's to_examples of
// the conversation's session: one line per stored turn with outputs, its history built
// by the engine's history builder from the conversation's own settings (o.Session, then
// what an imported file carried: the seed, exclude_fields, history_input_fields, the
// window, max_stored_turns), so the lines equal core.Session.ToExamples of the restored
// session. With o.Path it writes one line per successful call of that predictor, with the
// history that call saw. Each line carries "_input_keys" for
// Example(**d).with_inputs(*keys).
func Examples(w io.Writer, src *Source, o Options) error {
	if o.Path != "" {
		return callExamples(w, src, o)
	}
	im, err := importedSettings(src)
	if err != nil {
		return err
	}
	opts := o.Session.WithFileSettings(im.settings, im.options)
	if o.Session.HistoryField == "" {
		opts.HistoryField = im.field(o.HistoryField)
	}
	seed := sig.History{}
	switch {
	case im.initial != nil:
		seed = *im.initial // a loaded file's seed replaces the option's, as in core.Load
	case opts.InitialHistory != nil:
		seed = *opts.InitialHistory
	}
	b, err := core.NewHistoryBuilder(opts, seed)
	if err != nil {
		return fmt.Errorf("examples: %w", err)
	}
	skip := 0 // max_stored_turns: the session keeps only the latest turns
	if m := opts.MaxStoredTurns; m != nil && src.Len() > *m {
		skip = src.Len() - *m
	}
	i := -1
	return src.EachWith(storage.LoadOptions{NoRequests: true}, func(t *trace.Turn) error {
		i++
		h := b.Snapshot(t)
		b.Add(t)
		if i < skip || t.Outputs.Len() == 0 {
			return nil
		}
		tt := *t
		tt.History = h
		_, err := io.WriteString(w, exampleLine(core.TurnExample(&tt, opts.HistoryField, true))+"\n")
		return err
	})
}

// callExamples writes one line per successful call at o.Path.
func callExamples(w io.Writer, src *Source, o Options) error {
	field := o.HistoryField
	if field == "" {
		field = "history"
	}
	n := 0
	err := src.EachWith(storage.LoadOptions{NoRequests: true}, func(t *trace.Turn) error {
		var err error
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if err != nil || c.Path != o.Path || c.Outputs == nil || c.Error != "" {
				return
			}
			_, err = io.WriteString(w, exampleLine(core.CallExample(c, field))+"\n")
			n++
		})
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no successful calls with path %q on this branch", o.Path)
	}
	return nil
}

// exampleLine is one example as JSON: its fields in order, then "_input_keys".
func exampleLine(ex core.Example) string {
	m := ex.Fields.Clone()
	keys := make([]any, len(ex.InputKeys))
	for i, k := range ex.InputKeys {
		keys[i] = k
	}
	m.Set("_input_keys", keys)
	return py.CompactJSON(m)
}
