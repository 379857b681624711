package sessions

import (
	"strings"
	"sync"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/template"
	"github.com/sessionbench/sessionbench/core/trace"
)

// send delivers an event without blocking a turn on a slow reader.
func send(ch chan<- Event, e Event) {
	if ch == nil {
		return
	}
	select {
	case ch <- e:
	default:
	}
}

// fieldStreamer is what adapters that can route a growing completion to an output field
// implement (adapter.Chat, adapter.JSON, *template.Template).
type fieldStreamer interface {
	StreamField(s *sig.Signature, partial string) string
}

// observer turns engine callbacks into events. Each call's completion is accumulated so
// every delta event can carry the field the adapter says is being written and the text
// so far split into fields by the adapter, never by its readers.
type observer struct {
	events chan<- Event
	mod    core.Module
	// started, when set, is called as each call begins (before its model is asked).
	started func(c *trace.Call)

	mu    sync.Mutex
	calls map[string]*streaming
	preds map[string]*core.Predict
}

// streaming is one call's completion so far.
type streaming struct {
	text strings.Builder
	sig  *sig.Signature
	sf   fieldStreamer
	// split divides the text into output fields (ChatAdapter headers, also in a template
	// of the chat parse mode); nil for adapters whose text is shown unsplit.
	split func(s *sig.Signature, partial string) []adapter.FieldText
}

func newObserver(events chan<- Event, mod core.Module) *observer {
	return &observer{events: events, mod: mod, calls: map[string]*streaming{}, preds: map[string]*core.Predict{}}
}

// CallStarted begins a completion; it is called again for each exchange of a call (a
// fallback to the JSON adapter restarts the text under that adapter).
func (o *observer) CallStarted(path string, c *trace.Call) {
	if o.started != nil {
		defer o.started(c) // last: what it starts runs beside the model call
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	st := &streaming{}
	p, ok := o.preds[path]
	if !ok && o.mod != nil {
		p = core.FindPredictor(o.mod, path)
		o.preds[path] = p
	}
	if p != nil {
		st.sig = p.Signature
		var ad adapter.Adapter = adapter.Chat{}
		if p.Adapter != nil {
			ad = p.Adapter
		}
		if c != nil && c.Adapter == (adapter.JSON{}).Name() && ad.Name() != c.Adapter {
			ad = adapter.JSON{}
		}
		st.sf, _ = ad.(fieldStreamer)
		switch a := ad.(type) {
		case adapter.Chat:
			st.split = a.StreamFields
		case *template.Template:
			if a.Mode() == template.ParseChat {
				st.split = adapter.Chat{}.StreamFields
			}
		}
	}
	o.calls[path] = st
}

// Delta never blocks the call on a slow reader: an event a full channel refuses is
// dropped, and the next one carries the whole text so far anyway.
func (o *observer) Delta(path, d string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.calls[path]
	if st == nil {
		st = &streaming{}
		o.calls[path] = st
	}
	st.text.WriteString(d)
	text := st.text.String()
	e := Event{Kind: EventDelta, Path: path}
	if st.sf != nil {
		e.Field = st.sf.StreamField(st.sig, text)
	}
	if st.split != nil {
		e.Output = st.split(st.sig, text)
	} else {
		e.Output = []adapter.FieldText{{Text: text}}
	}
	send(o.events, e)
}

func (o *observer) Try(path string, at lm.Try) {
	if at.Retrying {
		o.mu.Lock()
		if st := o.calls[path]; st != nil {
			st.text.Reset() // the next try writes its completion from the start
		}
		o.mu.Unlock()
	}
	send(o.events, Event{Kind: EventTry, Path: path, Try: at})
}

func (o *observer) CallFinished(path string, c *trace.Call) {
	o.mu.Lock()
	delete(o.calls, path)
	o.mu.Unlock()
	send(o.events, Event{Kind: EventCall, Path: path, Call: c})
}
