package savefile

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A call's request (its messages) and the history it saw repeat most of the call before
// it: written whole, a conversation's file grows with the square of its length. The
// extension (format 2) writes each distinct message and history entry once, in the
// list under its "shared" key, and a call names its own by position: "messages_ref" and
// "history_ref" are ranges such as "0-3,7" (messages 0 to 3, then 7; "" for none). Read
// back, the call has the very values it was written with. Format 1 files, with whole
// "messages" and "history", are still read.

// shared is the table of an encoding: each distinct message's and history entry's
// position, by a SHA-256 digest (the values themselves are not held).
type shared struct {
	ids map[[32]byte]int
}

func newShared() *shared { return &shared{ids: map[[32]byte]int{}} }

// add returns the position of the value with digest k and whether it is new.
func (s *shared) add(k [32]byte) (int, bool) {
	if id, ok := s.ids[k]; ok {
		return id, false
	}
	id := len(s.ids)
	s.ids[k] = id
	return id, true
}

// messageKey and entryKey digest a message and a history entry (kept apart by a first
// byte, so a message and an entry that happen to spell the same JSON stay two values).
func messageKey(m lm.Message) [32]byte {
	h := sha256.New()
	for _, part := range []string{"m", m.Role, m.Content, m.Extra} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func entryKey(e *sig.Map) [32]byte { return sha256.Sum256([]byte("h\x00" + py.CompactJSON(e))) }

// collect adds the messages and history entries of calls (children included) to the
// table, telling emit each one that is new (its JSON form), in first-use order.
func (s *shared) collect(calls []*trace.Call, emit func(v any) error) error {
	var err error
	trace.WalkCalls(calls, func(c *trace.Call, _ int) {
		for _, m := range c.Messages.All() {
			if _, isNew := s.add(messageKey(m)); isNew && err == nil {
				var v any
				if v, err = jsonValue(m); err == nil {
					err = emit(v)
				}
			}
		}
		for _, e := range c.History.Messages {
			if _, isNew := s.add(entryKey(e)); isNew && err == nil {
				err = emit(e)
			}
		}
	})
	return err
}

// callsValue is the JSON form of calls (children included) whose "messages" and
// "history" are "messages_ref" and "history_ref", in the same place. The records are
// encoded without them, so a call's request is never written out whole.
func (s *shared) callsValue(calls []*trace.Call) (any, error) {
	v, err := CallsValue(stripped(calls))
	if err != nil {
		return nil, err
	}
	return s.refer(v, calls), nil
}

// stripped copies calls (children included) without their messages and history.
func stripped(calls []*trace.Call) []*trace.Call {
	out := make([]*trace.Call, len(calls))
	for i, c := range calls {
		cc := *c
		cc.Messages, cc.History = lm.MessageList{}, sig.History{}
		cc.Children = stripped(c.Children)
		out[i] = &cc
	}
	return out
}

// refer replaces, in values (the JSON form of calls), "messages" and "history" by the
// ranges of calls' own.
func (s *shared) refer(values any, calls []*trace.Call) any {
	list, _ := values.([]any)
	for i, v := range list {
		c, ok := v.(*sig.Map)
		if !ok || i >= len(calls) {
			continue
		}
		orig := calls[i]
		m := sig.NewMap()
		c.Range(func(k string, v any) bool {
			switch {
			case k == "messages" && !orig.Messages.IsNil():
				ids := make([]int, orig.Messages.Len())
				for j, msg := range orig.Messages.All() {
					ids[j], _ = s.add(messageKey(msg))
				}
				m.Set("messages_ref", ranges(ids))
			case k == "history":
				ids := make([]int, len(orig.History.Messages))
				for j, e := range orig.History.Messages {
					ids[j], _ = s.add(entryKey(e))
				}
				m.Set("history_ref", ranges(ids))
			case k == "children":
				m.Set(k, s.refer(v, orig.Children))
			default:
				m.Set(k, v)
			}
			return true
		})
		list[i] = m
	}
	return values
}

// ranges writes positions as ranges ("0-3,7").
func ranges(ids []int) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// eachCall calls f for every call object in calls (their JSON form) and their children.
func eachCall(calls any, f func(c *sig.Map)) {
	list, _ := calls.([]any)
	for _, v := range list {
		if c, ok := v.(*sig.Map); ok {
			f(c)
			ch, _ := c.Get("children")
			eachCall(ch, f)
		}
	}
}

// maxSharedRefs bounds how many shared values the calls of one file may name in all,
// 16,000,000. Each names a value already in memory, but a small file naming big ranges
// many times over would otherwise unfold into gigabytes of requests.
var maxSharedRefs = 16_000_000

// sharedTable is the "shared" list of a file being read, each value decoded on first use
// as a message or a history entry, and shared by every call that names it.
type sharedTable struct {
	values []any
	msgs   []*lm.Message
	refs   int
}

func newSharedTable(values []any) *sharedTable {
	return &sharedTable{values: values, msgs: make([]*lm.Message, len(values))}
}

// positions reads a ranges string ("0-3,7") into positions in the table.
func (t *sharedTable) positions(v any, at string) ([]int, error) {
	s, ok := v.(string)
	if !ok {
		return nil, perr(at, "is %s, want a string of positions such as \"0-3,7\"", sig.KindName(v))
	}
	var out []int
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		switch {
		case err1 != nil || err2 != nil || a < 0 || b < a:
			return nil, perr(at, "%q is not a position or a range such as 3-7", part)
		case b >= len(t.values):
			return nil, perr(at, "position %d is past the %d shared values", b, len(t.values))
		}
		if t.refs += b - a + 1; t.refs > maxSharedRefs {
			return nil, perr(at, "the calls name more than %d shared values in all, more than a file may (export it with --no-calls)", maxSharedRefs)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// messages is the request a "messages_ref" names.
func (t *sharedTable) messages(ref any, at string) ([]lm.Message, error) {
	pos, err := t.positions(ref, at)
	if err != nil {
		return nil, err
	}
	out := make([]lm.Message, len(pos))
	for i, p := range pos {
		if t.msgs[p] == nil {
			var m lm.Message
			if err := json.Unmarshal([]byte(py.CompactJSON(t.values[p])), &m); err != nil {
				return nil, perr(fmt.Sprintf("%s (shared value %d)", at, p), "not a message: %v", err)
			}
			t.msgs[p] = &m
		}
		out[i] = *t.msgs[p]
	}
	return out, nil
}

// history is the history a "history_ref" names.
func (t *sharedTable) history(ref any, at string) (sig.History, error) {
	pos, err := t.positions(ref, at)
	if err != nil {
		return sig.History{}, err
	}
	h := sig.History{Messages: make([]*sig.Map, len(pos))}
	for i, p := range pos {
		m, ok := t.values[p].(*sig.Map)
		if !ok {
			return sig.History{}, perr(fmt.Sprintf("%s (shared value %d)", at, p), "is %s, want a history entry (an object)", sig.KindName(t.values[p]))
		}
		h.Messages[i] = m
	}
	return h, nil
}

// stripRefs returns calls (their JSON form) without "messages_ref" and "history_ref",
// children included, to be decoded as call records; attach then puts their values in.
func stripRefs(calls any) any {
	list, ok := calls.([]any)
	if !ok {
		return calls
	}
	out := make([]any, len(list))
	for i, v := range list {
		c, ok := v.(*sig.Map)
		if !ok || !hasRefs(c) {
			out[i] = v
			continue
		}
		out[i] = c.Filter(func(k string) bool { return k != "messages_ref" && k != "history_ref" })
		if ch, ok := c.Get("children"); ok {
			out[i].(*sig.Map).Set("children", stripRefs(ch))
		}
	}
	return out
}

func hasRefs(c *sig.Map) bool {
	found := c.Has("messages_ref") || c.Has("history_ref")
	ch, _ := c.Get("children")
	eachCall(ch, func(x *sig.Map) { found = found || x.Has("messages_ref") || x.Has("history_ref") })
	return found
}

// attach sets the messages and histories the refs of calls (their JSON form) name on the
// decoded records, which mirror them call for call.
func (t *sharedTable) attach(values any, calls []*trace.Call, at string) error {
	list, _ := values.([]any)
	for i, v := range list {
		c, ok := v.(*sig.Map)
		if !ok || i >= len(calls) {
			continue
		}
		here := fmt.Sprintf("%s[%d]", at, i)
		if ref, ok := c.Get("messages_ref"); ok {
			msgs, err := t.messages(ref, here+".messages_ref")
			if err != nil {
				return err
			}
			calls[i].Messages = lm.MessagesOf(msgs)
		}
		if ref, ok := c.Get("history_ref"); ok {
			h, err := t.history(ref, here+".history_ref")
			if err != nil {
				return err
			}
			calls[i].History = h
		}
		if ch, ok := c.Get("children"); ok {
			if err := t.attach(ch, calls[i].Children, here+".children"); err != nil {
				return err
			}
		}
	}
	return nil
}
