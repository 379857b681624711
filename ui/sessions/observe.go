package sessions

import (
	"strings"
	"sync"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// send delivers an event without blocking a turn on a slow reader.
func send(ch chan<- Event, e Event) { trySend(ch, e) }

// trySend delivers e if the channel has room and says whether it did.
func trySend(ch chan<- Event, e Event) bool {
	if ch == nil {
		return true
	}
	select {
	case ch <- e:
		return true
	default:
		return false
	}
}

// fieldStreamer is what adapters that can route a growing completion to an output field
// implement (adapter.Chat, adapter.JSON, *template.Template).
type fieldStreamer interface {
	StreamField(s *sig.Signature, partial string) string
}

// observer turns engine callbacks into UI events. Deltas are accumulated per call path
// so each one can be labelled with the output field the completion is writing.
type observer struct {
	events chan<- Event
	mod    core.Module

	mu    sync.Mutex
	calls map[string]*streaming
	preds map[string]*core.Predict
}

// streaming is one call's completion so far.
type streaming struct {
	text   strings.Builder
	unsent string // deltas a full channel refused: they go out with the next one
	sig    *sig.Signature
	sf     fieldStreamer
}

func newObserver(events chan<- Event, mod core.Module) *observer {
	return &observer{events: events, mod: mod, calls: map[string]*streaming{}, preds: map[string]*core.Predict{}}
}

// CallStarted begins a completion; it is called again for each exchange of a call (a
// fallback to the JSON adapter restarts the text under that adapter).
func (o *observer) CallStarted(path string, c *trace.Call) {
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
	}
	o.calls[path] = st
}

// Delta never blocks the call on a slow reader, and loses no text either: a delta the
// channel has no room for is merged into the next one.
func (o *observer) Delta(path, d string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.calls[path]
	if st == nil {
		send(o.events, Event{Kind: EventDelta, Path: path, Delta: d})
		return
	}
	st.text.WriteString(d)
	field := ""
	if st.sf != nil {
		field = st.sf.StreamField(st.sig, st.text.String())
	}
	st.unsent += d
	if trySend(o.events, Event{Kind: EventDelta, Path: path, Field: field, Delta: st.unsent}) {
		st.unsent = ""
	}
}

func (o *observer) Try(path string, at lm.Try) {
	if at.Retrying {
		o.mu.Lock()
		if st := o.calls[path]; st != nil {
			st.text.Reset() // the next try writes its completion from the start
			st.unsent = ""
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
