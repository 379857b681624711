package savefile

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// conversation is n turns whose calls send the whole conversation so far, as a chat
// with history does: each request repeats the one before it and adds two messages. The
// first call of each turn has a nested call; messages carry an extra key now and then.
func conversation(n int) *File {
	f := &File{Version: 2}
	var msgs []lm.Message
	var hist []*sig.Map
	sys := lm.Message{Role: "system", Content: "You answer questions about logins."}
	for i := range n {
		q := fmt.Sprintf("question %d: my login fails after the reset", i)
		user := lm.Message{Role: "user", Content: "[[ ## question ## ]]\n" + q}
		if i%3 == 0 {
			user.Extra = `{"name":"alice"}`
		}
		req := append(append([]lm.Message{sys}, msgs...), user)
		inner := &trace.Call{ID: fmt.Sprintf("t%d.inner", i), Path: "answer.lookup", Messages: lm.MessagesOf(req[len(req)-1:]),
			History: sig.History{Messages: []*sig.Map{}}, Inputs: sig.NewMap("q", q), Outputs: sig.NewMap("doc", "d")}
		call := &trace.Call{ID: fmt.Sprintf("t%d", i), Path: "answer", Messages: lm.MessagesOf(req),
			History:  sig.History{Messages: append([]*sig.Map(nil), hist...)},
			Inputs:   sig.NewMap("question", q),
			Outputs:  sig.NewMap("answer", fmt.Sprintf("answer %d", i)),
			Children: []*trace.Call{inner}}
		f.Turns = append(f.Turns, Entry{Turn: &trace.Turn{Index: i, Inputs: call.Inputs, Outputs: call.Outputs, Calls: []*trace.Call{call}}})
		msgs = append(msgs, user, lm.Message{Role: "assistant", Content: "[[ ## answer ## ]]\n" + fmt.Sprintf("answer %d", i)})
		hist = append(hist, sig.NewMap("question", q, "answer", fmt.Sprintf("answer %d", i)))
	}
	return f
}

// Calls name their requests and histories in the shared list, and read back with the
// very messages (extra keys included) and history entries they were written with.
func TestSharedRequestsRoundTrip(t *testing.T) {
	f := conversation(12)
	data := encode(t, f)
	for _, want := range []string{`"shared": [`, `"messages_ref": "0-1"`, `"history_ref": ""`, `"format": 2`} {
		if !strings.Contains(data, want) {
			t.Errorf("the file lacks %s", want)
		}
	}
	if strings.Contains(data, `"messages": [`) {
		t.Error("a call still writes its messages whole")
	}
	back, err := Decode([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range back.Turns {
		got, want := e.Turn.Calls[0], f.Turns[i].Turn.Calls[0]
		if !reflect.DeepEqual(got.Messages, want.Messages) {
			t.Fatalf("turn %d: messages\n%v\nwant\n%v", i, got.Messages, want.Messages)
		}
		if !reflect.DeepEqual(got.Children[0].Messages, want.Children[0].Messages) {
			t.Errorf("turn %d: the nested call's messages differ", i)
		}
		if len(got.History.Messages) != len(want.History.Messages) {
			t.Fatalf("turn %d: %d history entries, want %d", i, len(got.History.Messages), len(want.History.Messages))
		}
		for j := range got.History.Messages {
			if !got.History.Messages[j].Equal(want.History.Messages[j]) {
				t.Errorf("turn %d: history entry %d differs", i, j)
			}
		}
	}
	if again := encode(t, back); again != data {
		t.Error("load then save gives other bytes")
	}
}

// The extension grows with the conversation, not its square: doubling the turns about
// doubles the file (whole requests would quadruple it).
func TestSharedRequestsGrowLinearly(t *testing.T) {
	small, big := len(encode(t, conversation(40))), len(encode(t, conversation(80)))
	if r := float64(big) / float64(small); r > 2.6 {
		t.Errorf("80 turns take %.1f times the bytes of 40 (%d, %d)", r, big, small)
	}
}

// Refs that name nothing, or name too much, are errors saying where.
func TestSharedRefErrors(t *testing.T) {
	head := `{"version": 2, "turns": [{}], "sessionbench": {"format": 2, "shared": [{"role": "user", "content": "x"}, 5], "turns": [{"calls": [`
	cases := []struct{ calls, path, msg string }{
		{`{"messages_ref": "0-3"}`, "$.sessionbench.turns[0].calls[0].messages_ref", "position 3 is past the 2 shared values"},
		{`{"messages_ref": "1-0"}`, "$.sessionbench.turns[0].calls[0].messages_ref", `"1-0" is not a position`},
		{`{"messages_ref": 4}`, "$.sessionbench.turns[0].calls[0].messages_ref", "want a string of positions"},
		{`{"history_ref": "1"}`, "$.sessionbench.turns[0].calls[0].history_ref (shared value 1)", "want a history entry"},
		{`{"children": [{"messages_ref": "x"}]}`, "$.sessionbench.turns[0].calls[0].children[0].messages_ref", `"x" is not a position`},
	}
	for _, c := range cases {
		_, err := Decode([]byte(head + c.calls + `]}]}}`))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Path != c.path || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: got %v, want %s: %s", c.calls, err, c.path, c.msg)
		}
	}
	// a small file naming a big range over and over is refused, not unfolded (the limit
	// is lowered here from 16,000,000)
	defer func(n int) { maxSharedRefs = n }(maxSharedRefs)
	maxSharedRefs = 20_000
	var b bytes.Buffer
	b.WriteString(`{"version": 2, "turns": [{}], "sessionbench": {"format": 2, "shared": [`)
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"role": "user", "content": "%d"}`, i)
	}
	b.WriteString(`], "turns": [{"calls": [`)
	for i := range maxSharedRefs/1000 + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"messages_ref": "0-999"}`)
	}
	b.WriteString(`]}]}}`)
	if _, err := Decode(b.Bytes()); err == nil || !strings.Contains(err.Error(), "more than 20000 shared values") {
		t.Errorf("a bomb: %v", err)
	}
}
