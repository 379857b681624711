package adapter

import (
	"strconv"
	"strings"
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// historyMessages appends the messages of h's entries to msgs: for each, the user
// message of its inputs (none when it has none) and the assistant message of its
// outputs, under s (the signature without its history field). Requests repeat the
// conversation, so an entry is rendered once and its texts kept with it
// (sig.Rendering): a request then costs its message list, not its history's text.
func historyMessages(msgs []lm.Message, st style, s *sig.Signature, h sig.History) []lm.Message {
	if len(h.Messages) == 0 {
		return msgs
	}
	key := renderKey(st, s)
	for _, m := range h.Messages {
		u, a, _ := historyEntry(st, s, key, m)
		if u != "" {
			msgs = append(msgs, lm.Message{Role: "user", Content: u})
		}
		msgs = append(msgs, lm.Message{Role: "assistant", Content: a})
	}
	return msgs
}

// historyEntry is m's user and assistant texts under s, from a rendering kept with m
// when one was made under key, else rendered and kept when m's values cannot change in
// place (Set drops a rendering, but a list or dict value can change under it). Two
// renderings are kept at most: this one and the last under another key. kept says
// whether the texts are kept with m.
func historyEntry(st style, s *sig.Signature, key string, m *sig.Map) (user, assistant string, kept bool) {
	last := m.Rendering()
	for r := last; r != nil; r = r.Next {
		if r.Key == key {
			return r.User, r.Assistant, true
		}
	}
	user, assistant = renderEntry(st, s, m)
	if m.ScalarValues() {
		r := &sig.Rendering{Key: key, User: user, Assistant: assistant}
		if last != nil {
			r.Next = &sig.Rendering{Key: last.Key, User: last.User, Assistant: last.Assistant}
		}
		m.SetRendering(r)
		kept = true
	}
	return user, assistant, kept
}

// renderEntry is userContent(st, s, m, "", false) and st.assistant(s, m, nil), the
// ChatAdapter's two texts written into one buffer sized up front.
func renderEntry(st style, s *sig.Signature, m *sig.Map) (user, assistant string) {
	var buf [8]rendered
	all := appendSections(buf[:0], s.Inputs, m, false)
	nIn := len(all)
	_, chat := st.(chatStyle)
	if chat {
		all = appendSections(all, s.Outputs, m, true)
	}
	var b strings.Builder
	b.Grow(sectionsLen(all) + len(completedSuffix))
	writeSections(&b, all[:nIn])
	user = b.String()
	if !chat {
		return user, st.assistant(s, m, nil)
	}
	writeSections(&b, all[nIn:])
	b.WriteString(completedSuffix)
	return user, b.String()[len(user):]
}

// completedSuffix ends every ChatAdapter assistant message.
const completedSuffix = "\n\n" + completedHeader + "\n"

// rendered is one section of a message: "[[ ## name ## ]]⏎text".
type rendered struct{ name, text string }

// appendSections appends the sections of the fields of fs m holds, or with all of every
// field of fs (a missing one rendered from None, as AssistantContent's missing=nil).
func appendSections(dst []rendered, fs []sig.Field, m *sig.Map, all bool) []rendered {
	for _, f := range fs {
		v, ok := m.Get(f.Name)
		if ok || all {
			dst = append(dst, rendered{f.Name, FormatFieldValue(f, v)})
		}
	}
	return dst
}

// sectionsLen bounds the bytes writeSections writes for ss.
func sectionsLen(ss []rendered) int {
	n := 0
	for _, s := range ss {
		n += len("\n\n[[ ## ") + len(s.name) + len(" ## ]]\n") + len(s.text)
	}
	return n
}

// writeSections writes py.Strip of ss joined by blank lines. A section starts with
// "[[", so only the end can be stripped: the last text's trailing white space, and
// when that text is all white space, the line break after its header (which ends in
// "]]"). The byte before a text is a line break, so stripping the text alone ends where
// stripping the whole would.
func writeSections(b *strings.Builder, ss []rendered) {
	for i, s := range ss {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("[[ ## ")
		b.WriteString(s.name)
		b.WriteString(" ## ]]")
		t := s.text
		if i == len(ss)-1 {
			if t = py.RStrip(t); t == "" {
				continue
			}
		}
		b.WriteByte('\n')
		b.WriteString(t)
	}
}

// renderKeys interns the keys of history renderings, so that matching a kept
// rendering's key against a request's compares two pointers, not two strings, for each
// entry of a long history. Bounded: full, it starts again (a rendering made under a
// forgotten copy of a key still matches, byte by byte).
var renderKeys = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

const maxRenderKeys = 256

// renderKey names what a history entry's texts depend on besides its values: the
// adapter's style and s's input and output fields (names and types, in order; each
// length-prefixed, so no two field lists spell the same key).
func renderKey(st style, s *sig.Signature) string {
	var buf [256]byte
	b := append(buf[:0], st.name()...)
	for _, fs := range [2][]sig.Field{s.Inputs, s.Outputs} {
		b = append(b, '|')
		for _, f := range fs {
			t := typ(f).Name()
			b = strconv.AppendInt(b, int64(len(f.Name)), 10)
			b = append(append(b, ':'), f.Name...)
			b = strconv.AppendInt(b, int64(len(t)), 10)
			b = append(append(b, ':'), t...)
		}
	}
	renderKeys.Lock()
	defer renderKeys.Unlock()
	if k, ok := renderKeys.m[string(b)]; ok {
		return k
	}
	if len(renderKeys.m) >= maxRenderKeys {
		clear(renderKeys.m)
	}
	k := string(b)
	renderKeys.m[k] = k
	return k
}
