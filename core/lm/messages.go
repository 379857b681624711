package lm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"unsafe"
)

// MessageList is a request's messages as a call records them (trace.Call.Messages): runs
// of messages it may share with other requests, then its own. A session's next request
// repeats the last one's system message, demos and history, so lists built by a
// MessageLog cost the messages that are new, not the request's length: a session that
// records every request keeps O(1) per turn instead of O(turns).
//
// A list is immutable: its runs are capped slices never written once built, so lists
// share them freely. The zero value is no request (JSON null), which is not the empty
// request (JSON []). How a list is cut into runs is not part of its value: compare lists
// with Equal.
type MessageList struct {
	runs [][]Message
	n    int
	set  bool
}

// MessagesOf is the list of ms, sharing ms: the caller must not change ms afterwards.
// A nil ms is no request.
func MessagesOf(ms []Message) MessageList {
	if ms == nil {
		return MessageList{}
	}
	return ListOf(ms)
}

// ListOf is the list of runs, in order, sharing them: the caller must not change them
// afterwards. Empty runs are left out; no run at all is the empty request.
func ListOf(runs ...[]Message) MessageList {
	l := MessageList{set: true}
	for _, r := range runs {
		if len(r) > 0 {
			l.runs = append(l.runs, r[:len(r):len(r)])
			l.n += len(r)
		}
	}
	return l
}

// Len is the number of messages.
func (l MessageList) Len() int { return l.n }

// IsNil reports whether there is no request at all (not even an empty one).
func (l MessageList) IsNil() bool { return !l.set }

// At is message i; it panics out of range, as indexing a slice does.
func (l MessageList) At(i int) Message {
	if i >= 0 {
		for _, r := range l.runs {
			if i < len(r) {
				return r[i]
			}
			i -= len(r)
		}
	}
	panic(fmt.Sprintf("lm: message %d out of range [0:%d]", i, l.n))
}

// All yields the messages with their indexes.
func (l MessageList) All() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		i := 0
		for _, r := range l.runs {
			for _, m := range r {
				if !yield(i, m) {
					return
				}
				i++
			}
		}
	}
}

// Slice is a fresh copy of the messages: nil for no request, empty for an empty one.
func (l MessageList) Slice() []Message {
	if !l.set {
		return nil
	}
	out := make([]Message, 0, l.n)
	for _, r := range l.runs {
		out = append(out, r...)
	}
	return out
}

// Sub is messages [from, to), sharing the runs. It panics out of range, as slicing does.
func (l MessageList) Sub(from, to int) MessageList {
	if from < 0 || to < from || to > l.n {
		panic(fmt.Sprintf("lm: messages [%d:%d] out of range [0:%d]", from, to, l.n))
	}
	if !l.set {
		return l
	}
	out := MessageList{n: to - from, set: true}
	at := 0
	for _, r := range l.runs {
		a, b := max(from-at, 0), min(to-at, len(r))
		if a < b {
			out.runs = append(out.runs, r[a:b:b])
		}
		at += len(r)
		if at >= to {
			break
		}
	}
	return out
}

// Concat is l followed by m, sharing both.
func (l MessageList) Concat(m MessageList) MessageList {
	if !m.set {
		return l
	}
	if !l.set {
		return m
	}
	runs := make([][]Message, 0, len(l.runs)+len(m.runs))
	return MessageList{runs: append(append(runs, l.runs...), m.runs...), n: l.n + m.n, set: true}
}

// Equal reports whether both hold the same messages (or both none), however cut.
func (l MessageList) Equal(m MessageList) bool {
	return l.set == m.set && l.n == m.n && l.CommonPrefix(m) == l.n
}

// CommonPrefix is how many messages both begin with.
func (l MessageList) CommonPrefix(m MessageList) int {
	n := 0
	var rb []Message // what is left of m's current run
	rest := m.runs
	for _, ra := range l.runs {
		for len(ra) > 0 {
			for len(rb) == 0 {
				if len(rest) == 0 {
					return n
				}
				rb, rest = rest[0], rest[1:]
			}
			k := min(len(ra), len(rb))
			// the very same texts as raw memory, a block at a time; a message between
			// them (equal texts elsewhere in memory, or another message) by value
			for i := sameHeaders(ra[:k], rb[:k]); i < k; i += 1 + sameHeaders(ra[i+1:k], rb[i+1:k]) {
				if ra[i] != rb[i] {
					return n + i
				}
			}
			n += k
			ra, rb = ra[k:], rb[k:]
		}
	}
	return n
}

// MarshalJSON writes the messages as a JSON array (null for no request).
func (l MessageList) MarshalJSON() ([]byte, error) {
	if !l.set {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, m := range l.All() {
		if i > 0 {
			b.WriteByte(',')
		}
		data, err := m.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		b.Write(data)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON array of messages (null: no request).
func (l *MessageList) UnmarshalJSON(data []byte) error {
	var ms []Message
	if err := json.Unmarshal(data, &ms); err != nil {
		return err
	}
	*l = MessagesOf(ms)
	return nil
}

// MessageLog makes the lists of one predictor's consecutive requests share their runs:
// it keeps the messages requests sent (all but each one's last, the current input, which
// the next request does not repeat where it stood) in one array only appended to, and
// cuts a new request into runs of that array and the messages it adds. Consecutive
// requests of a growing history share one run; under a window, the system message and
// demos are one run and the window another. Safe for concurrent use.
type MessageLog struct {
	mu   sync.Mutex
	msgs []Message
	at   map[string]int // a message's content to its last index in msgs
}

// Record is l as the log keeps it: l itself when shared says its runs are shared with
// the predictor's other requests already (built by its adapter's request cache, whose
// array the next request's history run shares) and one of them holds most of it, else
// List on its messages. A short request (under a window, the same few messages
// shifted a turn) costs little to log, and only the log finds what it shares with the
// requests before; so does a request whose history the cache could not keep (entries
// rendered anew each time: their texts repeat, in new strings).
func (g *MessageLog) Record(l MessageList, shared bool) MessageList {
	if shared && l.n >= sharedMin {
		for _, r := range l.runs {
			if 2*len(r) >= l.n {
				return l
			}
		}
	}
	return g.List(l.Slice())
}

// sharedMin is the length from which Record keeps a shared list as it is.
const sharedMin = 64

// List is ms as a list sharing what earlier requests sent; ms itself is not kept.
// Matching compares whole messages, so the list always equals ms.
func (g *MessageLog) List(ms []Message) MessageList {
	if len(ms) == 0 {
		return MessagesOf(ms)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.at == nil {
		g.at = map[string]int{}
	}
	body := ms[:len(ms)-1]
	type span struct{ from, to int } // of g.msgs
	var spans []span
	for i := 0; i < len(body); i++ {
		m := body[i]
		// Continue the run so far: where it goes on in the log, or, when it ends the
		// log, by appending (a growing history stays one run even when its texts repeat
		// earlier ones). Otherwise look the message up, or append it.
		if k := len(spans) - 1; k >= 0 {
			if p := spans[k].to; p < len(g.msgs) && g.msgs[p] == m {
				n := sameHeaders(g.msgs[p+1:], body[i+1:])
				spans[k].to += 1 + n
				i += n
				continue
			} else if p == len(g.msgs) {
				g.add(m)
				spans[k].to++
				continue
			}
		}
		j, ok := g.find(m)
		if !ok {
			j = len(g.msgs)
			g.add(m)
		}
		spans = append(spans, span{j, j + 1})
	}
	used := 0
	for _, s := range spans {
		used += s.to - s.from
	}
	// Messages no request refers to any more (a window slid past them) are dropped once
	// they are half the array: the array is rebuilt from the spans, which amortises to
	// O(1) per message appended.
	if len(g.msgs) > 64 && len(g.msgs) > 2*used {
		msgs := make([]Message, 0, 2*used)
		g.at = make(map[string]int, used)
		for i, s := range spans {
			from := len(msgs)
			for _, m := range g.msgs[s.from:s.to] {
				g.at[m.Content] = len(msgs)
				msgs = append(msgs, m)
			}
			spans[i] = span{from, len(msgs)}
		}
		g.msgs = msgs
	}
	l := MessageList{runs: make([][]Message, 0, len(spans)+1), n: len(ms), set: true}
	for _, s := range spans {
		l.runs = append(l.runs, g.msgs[s.from:s.to:s.to])
	}
	l.runs = append(l.runs, []Message{ms[len(ms)-1]})
	return l
}

// sameHeaders is how many messages a and b begin with whose texts are the very same
// strings (same bytes at the same address), compared as raw memory a block at a time: a
// request repeats the history texts the ones before it rendered (sig.Rendering), so this
// is most of a long request, at the speed of memcmp. Equal texts elsewhere in memory are
// left to the caller's comparison.
func sameHeaders(a, b []Message) int {
	const block = 64
	n := min(len(a), len(b))
	i := 0
	for ; i+block <= n; i += block {
		if !bytes.Equal(raw(a[i:i+block]), raw(b[i:i+block])) {
			break
		}
	}
	for ; i < n; i++ {
		if !bytes.Equal(raw(a[i:i+1]), raw(b[i:i+1])) {
			break
		}
	}
	return i
}

// raw is the memory of ms: their string headers (address and length of each text).
func raw(ms []Message) []byte {
	if len(ms) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&ms[0])), len(ms)*int(unsafe.Sizeof(ms[0])))
}

// add appends m to the log.
func (g *MessageLog) add(m Message) {
	g.at[m.Content] = len(g.msgs)
	g.msgs = append(g.msgs, m)
}

// find is where the log holds m, if it does.
func (g *MessageLog) find(m Message) (int, bool) {
	j, ok := g.at[m.Content]
	if !ok || g.msgs[j] != m {
		return 0, false
	}
	return j, true
}
