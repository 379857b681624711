// Package capture stores LLM calls made outside the engine, those the recording proxy
// (llm/proxy) sees, as conversations, turns and call records, so the workbench and the
// exports treat a real program's calls like the engine's own.
//
// Grouping, in order:
//   - conversations: calls carrying the X-Sessionbench-Session header share the
//     conversation named by its value (continued across proxy runs); every other call
//     goes to one conversation per Recorder (one per proxy run);
//   - turns: a call carrying X-Sessionbench-Turn joins the open turn with that value and
//     closes any other; without it, a call that starts while another is in flight, or
//     within IdleGap of the last call's end, joins the open turn, and otherwise begins a
//     new one. A turn is committed IdleGap after its last call ended (or at Close);
//   - a turn's inputs are its first call's inputs and its outputs its last successful
//     call's outputs.
//
// Every finished call is stored the moment it ends (in the open turn), so a proxy that
// is killed loses no finished call: New commits the turns such a proxy left open.
package capture

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// Agent is the agent name of conversations the proxy records: their program runs
// outside sessionbench, so the workbench shows them but cannot run their turns.
const Agent = "proxy"

// Recorded reports whether a conversation's stored agent marks it as recorded by the
// proxy: the one test for it, so the workbench, the service and the recorder agree.
func Recorded(agent string) bool { return agent == Agent }

// DefaultIdleGap is how long after its last call a turn is closed.
const DefaultIdleGap = 3 * time.Second

// Options configure a Recorder.
type Options struct {
	Store   *storage.Store
	IdleGap time.Duration // 0: DefaultIdleGap
	// Title names the run's own conversation; "" gives "proxy <start time>".
	Title string
	// Metadata is added to every conversation the recorder creates (e.g. the upstream).
	Metadata map[string]any
	// OnTurn is told about every turn that ended (completed, or kept as failed), in a
	// goroutine of its own.
	OnTurn func(ctx context.Context, convID, turnKey string)
	// OnError is told about failures that reach no caller (a turn that would not commit).
	OnError func(error)
}

// Recorder groups finished calls into turns and conversations. It is safe for
// concurrent use and implements llm/proxy's Recorder.
type Recorder struct {
	opts Options
	// timerGap is when an idle turn's timer fires: IdleGap, except in tests that let
	// only the calls' own times decide.
	timerGap time.Duration

	mu     sync.Mutex
	convs  map[string]*conv // by session header ("" = the run's own conversation)
	closed bool
	wg     sync.WaitGroup // idle-timer commits in progress
}

// New makes a recorder and commits the turns that proxies no longer running left open.
func New(ctx context.Context, opts Options) (*Recorder, error) {
	if opts.Store == nil {
		return nil, errors.New("capture: no store")
	}
	if opts.IdleGap <= 0 {
		opts.IdleGap = DefaultIdleGap
	}
	r := &Recorder{opts: opts, convs: map[string]*conv{}, timerGap: opts.IdleGap}
	if _, err := Recover(ctx, opts.Store, opts.OnTurn); err != nil {
		return nil, err
	}
	return r, nil
}

// conv is one conversation being recorded into.
type conv struct {
	id     string
	sink   *storage.BranchSink
	turns  []*turn           // open turns, oldest first; only the first is begun in storage
	paths  map[string]string // predictor identity (its system message) -> call path
	byPath map[string]string // call path -> identity
}

// turn is a turn being recorded.
type turn struct {
	header   string // X-Sessionbench-Turn, "" under the heuristics
	key      string // storage key once begun
	started  time.Time
	last     time.Time // latest start or end of one of its calls
	inflight int
	n        int // calls begun
	closing  bool
	inputs   *sig.Map // the first call's inputs
	firstSeq int      // sequence number of the call inputs came from
	outputs  *sig.Map // the last successful call's outputs
	outAt    time.Time
	lastErr  *trace.Call // the call that ended last, when it failed
	lastEnd  time.Time
	waiting  []*trace.Call // finished before the turn was begun in storage
	timer    *time.Timer
}

// Conversation creates the run's own conversation now rather than at its first call
// (proxy --open lists it from the start) and returns its ID.
func (r *Recorder) Conversation() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cv, err := r.conversation("")
	if err != nil {
		return "", err
	}
	return cv.id, nil
}

// Begin registers a call that started; the returned function records it when it ends.
func (r *Recorder) Begin(session, turnHeader string, started time.Time) func(ctx context.Context, c *trace.Call) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return func(context.Context, *trace.Call) error { return errors.New("capture: the recorder is closed") }
	}
	cv, err := r.conversation(session)
	if err != nil {
		return func(context.Context, *trace.Call) error { return err }
	}
	var t *turn
	if n := len(cv.turns); n > 0 {
		t = cv.turns[n-1]
	}
	join := t != nil && !t.closing && t.header == turnHeader &&
		(turnHeader != "" || t.inflight > 0 || started.Sub(t.last) <= r.opts.IdleGap)
	if !join {
		if t != nil {
			r.close(cv, t)
		}
		t = &turn{header: turnHeader, started: started}
		cv.turns = append(cv.turns, t)
	}
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.inflight++
	t.n++
	seq := t.n
	if started.After(t.last) {
		t.last = started
	}
	return func(ctx context.Context, c *trace.Call) error { return r.finish(ctx, cv, t, seq, c) }
}

// finish records one finished call in its turn.
func (r *Recorder) finish(ctx context.Context, cv *conv, t *turn, seq int, c *trace.Call) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t.inflight--
	if c == nil {
		return r.settle(ctx, cv, t)
	}
	c.ID = fmt.Sprintf("c%d", seq)
	c.Path = cv.pathFor(c)
	if end := c.Started.Add(c.Latency); end.After(t.last) {
		t.last = end
	}
	if t.inputs == nil || seq < t.firstSeq {
		t.inputs, t.firstSeq = c.Inputs, seq
	}
	if end := c.Started.Add(c.Latency); !end.Before(t.lastEnd) {
		t.lastEnd, t.lastErr = end, nil
		if c.Error != "" {
			t.lastErr = c
		}
	}
	if c.Outputs != nil && c.Error == "" && !c.Started.Add(c.Latency).Before(t.outAt) {
		t.outputs, t.outAt = c.Outputs, c.Started.Add(c.Latency)
	}
	var err error
	if cv.turns[0] == t {
		err = r.record(ctx, cv, t, c)
	} else {
		t.waiting = append(t.waiting, c)
	}
	if serr := r.settle(ctx, cv, t); err == nil {
		err = serr
	}
	return err
}

// record stores c in t, beginning t in storage first if need be.
func (r *Recorder) record(ctx context.Context, cv *conv, t *turn, c *trace.Call) error {
	if t.key == "" {
		in := t.inputs
		if in == nil {
			in = sig.NewMap()
		}
		key, err := cv.sink.BeginTurn(ctx, in)
		if err != nil {
			return fmt.Errorf("capture: begin a turn in %s: %w", cv.id, err)
		}
		t.key = key
	}
	if err := cv.sink.RecordCall(ctx, t.key, "", c); err != nil {
		return fmt.Errorf("capture: record call %s in %s: %w", c.ID, cv.id, err)
	}
	return nil
}

// settle commits t if it is closing and done, or arms its idle timer.
func (r *Recorder) settle(ctx context.Context, cv *conv, t *turn) error {
	if t.inflight > 0 {
		return nil
	}
	if t.closing {
		return r.commitReady(ctx, cv)
	}
	t.timer = time.AfterFunc(r.timerGap, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if t.timer == nil || t.inflight > 0 || t.closing || r.closed {
			return
		}
		t.timer = nil
		r.close(cv, t)
	})
	return nil
}

// close marks t closing and commits what can be committed.
func (r *Recorder) close(cv *conv, t *turn) {
	t.closing = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.commitReady(ctx, cv); err != nil && r.opts.OnError != nil {
		r.opts.OnError(err)
	}
}

// commitReady commits the oldest open turns while they are closing with nothing in
// flight, beginning the next one in storage with the calls it already has.
func (r *Recorder) commitReady(ctx context.Context, cv *conv) error {
	for len(cv.turns) > 0 {
		t := cv.turns[0]
		for _, c := range t.waiting {
			if err := r.record(ctx, cv, t, c); err != nil {
				return err
			}
		}
		t.waiting = nil
		if !t.closing || t.inflight > 0 {
			return nil
		}
		cv.turns = cv.turns[1:]
		if t.key == "" {
			continue // no call finished: nothing to keep
		}
		if err := end(ctx, cv.sink, t.key, &trace.Turn{Inputs: t.inputs, Outputs: t.outputs, Started: t.started, Ended: t.last}, t.lastErr); err != nil {
			return fmt.Errorf("capture: end turn %s of %s: %w", t.key, cv.id, err)
		}
		if r.opts.OnTurn != nil {
			conv, key := cv.id, t.key
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.opts.OnTurn(context.WithoutCancel(ctx), conv, key)
			}()
		}
	}
	return nil
}

// Close commits every open turn (calls still in flight are waited for by the caller,
// e.g. http.Server.Shutdown) and waits for OnTurn callbacks.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	var errs []error
	for _, cv := range r.convs {
		for _, t := range cv.turns {
			t.closing = true
			if t.timer != nil {
				t.timer.Stop()
				t.timer = nil
			}
		}
		if err := r.commitReady(ctx, cv); err != nil {
			errs = append(errs, err)
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
	return errors.Join(errs...)
}

// pathFor names a call's predictor: its fields ("question -> answer"), with " #2",
// " #3" for a different predictor (other instructions, types or descriptions) with the
// same fields in this conversation.
func (cv *conv) pathFor(c *trace.Call) string {
	if c.Adapter == "" || c.Messages.Len() == 0 {
		return c.Path
	}
	id := c.Messages.At(0).Content
	if p, ok := cv.paths[id]; ok {
		return p
	}
	p := c.Path
	for n := 2; cv.byPath[p] != ""; n++ {
		p = fmt.Sprintf("%s #%d", c.Path, n)
	}
	cv.paths[id], cv.byPath[p] = p, id
	return p
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,47}$`)

// conversationID is the conversation a session header names: "p-" and the value when
// it is a short plain name, else "p-" and a hash of it.
func conversationID(session string) string {
	if safeID.MatchString(session) {
		return "p-" + session
	}
	h := sha256.Sum256([]byte(session))
	return "p-" + hex.EncodeToString(h[:8])
}

// conversation finds or creates the conversation for a session header (r.mu held).
func (r *Recorder) conversation(session string) (*conv, error) {
	if cv, ok := r.convs[session]; ok {
		return cv, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := r.opts.Store
	meta := map[string]any{}
	for k, v := range r.opts.Metadata {
		meta[k] = v
	}
	var id string
	if session == "" {
		title := r.opts.Title
		if title == "" {
			title = "proxy " + time.Now().Format("2006-01-02 15:04:05")
		}
		c, err := st.CreateConversation(ctx, storage.NewConversation{Title: title, Agent: Agent, Metadata: meta})
		if err != nil {
			return nil, fmt.Errorf("capture: %w", err)
		}
		id = c.ID
	} else {
		id = conversationID(session)
		meta["session"] = session
		c, err := st.Conversation(ctx, id)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			if _, err := st.CreateConversation(ctx, storage.NewConversation{ID: id, Title: sanitizeTitle(session), Agent: Agent, Metadata: meta}); err != nil {
				return nil, fmt.Errorf("capture: session %q: %w", session, err)
			}
		case err != nil:
			return nil, fmt.Errorf("capture: session %q: %w", session, err)
		case !Recorded(c.Agent):
			return nil, fmt.Errorf("capture: session %q names conversation %s, which the proxy did not record (agent %q)", session, id, c.Agent)
		}
	}
	cv := &conv{id: id, sink: st.Sink(id, storage.MainBranch), paths: map[string]string{}, byPath: map[string]string{}}
	r.convs[session] = cv
	return cv, nil
}

// sanitizeTitle keeps a header value printable and short enough for a title.
func sanitizeTitle(s string) string {
	out := make([]rune, 0, len(s))
	for _, c := range s {
		if c >= 0x20 && c != 0x7f {
			out = append(out, c)
		}
		if len(out) == 120 {
			break
		}
	}
	return string(out)
}

// end finishes a turn in storage: completed, unless the call that ended last failed and
// none after it answered (the program gave up there): then it is kept beside the branch
// as failed, or cancelled when the program hung up, with that call's error.
func end(ctx context.Context, sink *storage.BranchSink, key string, t *trace.Turn, failed *trace.Call) error {
	if t.Outputs == nil {
		t.Outputs = sig.NewMap()
	}
	if failed == nil {
		return sink.CommitTurn(ctx, key, t)
	}
	t.Status, t.Error = trace.StatusFailed, failed.Error
	if n := len(failed.Tries); n > 0 && failed.Tries[n-1].Status == StatusClientClosed {
		t.Status = trace.StatusCancelled
	}
	return sink.AbortTurn(ctx, key, t)
}

// StatusClientClosed is the status a call's try records when the program closed the
// connection before the answer was complete (nginx's 499, which no upstream sends).
const StatusClientClosed = 499
