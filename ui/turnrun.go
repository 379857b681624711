package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// turnRunner runs one turn at a time in the background (a send, an edit, a replay or a
// resume) and streams its events into the pane the turn lands in. Its backend call runs
// in a goroutine; events and the result come back as messages.
type turnRunner struct {
	e   *env
	seq int
	cur *runState
	// draining are cancelled runs whose backend call has not returned yet: their
	// messages are still read (and dropped), so the update loop sees them end
	draining map[int]chan tea.Msg
	// runs counts turn goroutines until their backend call returns (see wait)
	runs sync.WaitGroup
}

// runState is a turn in flight.
type runState struct {
	id     int
	cancel context.CancelCauseFunc
	msgs   chan tea.Msg
	pane   *chatPane
	kind   runKind
}

type runKind int

const (
	runSend runKind = iota
	runEdit
	runReplay
	runResume
	runRetry
)

type (
	runEventMsg struct {
		id int
		ev sessions.Event
	}
	runDoneMsg struct {
		id     int
		branch string
		turn   *trace.Turn
		err    error
	}
	retryTickMsg struct{ id int }
)

func (r *turnRunner) active() bool { return r.cur != nil }

// start runs f, streaming into pane p (its stream shows the inputs at once).
func (r *turnRunner) start(p *chatPane, kind runKind, inputs *sig.Map, f func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error)) tea.Cmd {
	r.seq++
	id := r.seq
	ctx, cancel := context.WithCancelCause(r.e.ctx)
	msgs := make(chan tea.Msg, 256)
	r.cur = &runState{id: id, cancel: cancel, msgs: msgs, pane: p, kind: kind}
	if p != nil && inputs != nil {
		p.stream = &streamState{index: p.total, inputs: inputs, started: time.Now()}
		p.list.follow = true
	}
	r.runs.Add(1)
	go func() {
		events := make(chan sessions.Event, 64)
		fwd := make(chan struct{})
		go func() {
			for e := range events {
				msgs <- runEventMsg{id: id, ev: e}
			}
			close(fwd)
		}()
		branch, turn, err := f(ctx, events)
		r.runs.Done()
		close(events)
		<-fwd
		msgs <- runDoneMsg{id: id, branch: branch, turn: turn, err: err}
		close(msgs)
	}()
	return waitRun(msgs)
}

func waitRun(ch chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		return msg
	}
}

// cancel aborts the turn in flight at once; it returns the run's kind and its stream, so
// a send's text can go back to the editor. The backend keeps the turn beside the branch:
// cancelled, or interrupted (resumable) when cause wraps trace.ErrInterrupted.
func (r *turnRunner) cancel(cause error) (runKind, *streamState) {
	if r.cur == nil {
		return 0, nil
	}
	c := r.cur
	r.cur = nil
	c.cancel(cause)
	if r.draining == nil {
		r.draining = map[int]chan tea.Msg{}
	}
	r.draining[c.id] = c.msgs
	var st *streamState
	if c.pane != nil {
		st, c.pane.stream = c.pane.stream, nil
	}
	return c.kind, st
}

// event applies a streamed event to the run's pane.
func (r *turnRunner) event(msg runEventMsg) tea.Cmd {
	if r.cur == nil || msg.id != r.cur.id {
		if ch, ok := r.draining[msg.id]; ok {
			return waitRun(ch) // a cancelled run: read on until it ends
		}
		return nil
	}
	next := waitRun(r.cur.msgs)
	ev := msg.ev
	if r.cur.kind == runReplay && ev.Kind == sessions.EventTurn && ev.Turn != nil {
		r.e.status.set(fmt.Sprintf("replayed %s…", turnLabel(ev.Turn.Index)))
	}
	if ev.Kind == sessions.EventBranch {
		r.e.status.set("new branch " + termtext.OneLine(ev.Branch))
	}
	if r.cur.pane == nil || r.cur.pane.stream == nil {
		return next
	}
	st := r.cur.pane.stream
	switch ev.Kind {
	case sessions.EventDelta:
		st.path, st.field = ev.Path, ev.Field
		if st.outputs == nil {
			st.outputs = map[string][]adapter.FieldText{}
		}
		st.outputs[ev.Path] = ev.Output
		st.try.Retrying = false
	case sessions.EventTry:
		st.try = ev.Try
		if ev.Try.Retrying {
			st.retryAt = time.Now().Add(ev.Try.Wait)
			delete(st.outputs, ev.Path) // the next try writes its completion from the start
			return tea.Batch(next, retryTick(msg.id))
		}
	case sessions.EventCall:
		st.calls++
		delete(st.outputs, ev.Path) // a loop calls the same path again: start its text afresh
	}
	return next
}

func retryTick(id int) tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return retryTickMsg{id: id} })
}

// tick keeps a retry countdown moving.
func (r *turnRunner) tick(msg retryTickMsg) tea.Cmd {
	if r.cur != nil && r.cur.id == msg.id && r.cur.pane != nil && r.cur.pane.stream != nil {
		if st := r.cur.pane.stream; st.try.Retrying && time.Now().Before(st.retryAt) {
			return retryTick(msg.id)
		}
	}
	return nil
}

// finished is a run's end as the root applies it.
type finished struct {
	kind   runKind
	pane   *chatPane
	stream *streamState
	msg    runDoneMsg
}

// done ends the run msg belongs to (ok is false for a run cancelled before).
func (r *turnRunner) done(msg runDoneMsg) (finished, bool) {
	if r.cur == nil || msg.id != r.cur.id {
		delete(r.draining, msg.id)
		return finished{}, false
	}
	c := r.cur
	r.cur = nil
	f := finished{kind: c.kind, pane: c.pane, msg: msg}
	if c.pane != nil {
		f.stream, c.pane.stream = c.pane.stream, nil
	}
	return f, true
}

// wait gives a turn stopped by quitting the time to finish: the backend records it
// interrupted when the stopped call returns (a process that exits first leaves it
// running with its owner gone, which is interrupted too). The wait is bounded in case a
// backend hangs.
func (r *turnRunner) wait(limit time.Duration) {
	done := make(chan struct{})
	go func() {
		r.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
	}
}
