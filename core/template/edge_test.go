package template

import (
	"encoding/json"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Issue 16: a history given as raw chat messages keeps every key of each message, as the
// reference passes the dicts through; they reach the request and its JSON.
func TestRawHistoryKeepsKeys(t *testing.T) {
	raw := []any{
		sig.NewMap("role", "user", "content", "hi", "name", "alice"),
		sig.NewMap("role", "assistant", "content", "hello"),
		sig.NewMap("role", "tool", "content", "42", "tool_call_id", "t1", "name", "calc"),
	}
	msgs := doRender(t, one("{question}"), adapter.Request{Inputs: sig.NewMap("question", "q", "history", raw)})
	want := []lm.Message{{Role: "user", Content: "hi", Extra: `{"name":"alice"}`}, a("hello"),
		{Role: "tool", Content: "42", Extra: `{"tool_call_id":"t1","name":"calc"}`}, u("q")}
	checkMessages(t, msgs, want)
	data, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `[{"role":"user","content":"hi","name":"alice"},{"role":"assistant","content":"hello"},` +
		`{"role":"tool","content":"42","tool_call_id":"t1","name":"calc"},{"role":"user","content":"q"}]`
	if string(data) != wantJSON {
		t.Errorf("request JSON:\n%s\nwant\n%s", data, wantJSON)
	}
	var back []lm.Message
	if err := json.Unmarshal(data, &back); err != nil || len(back) != 4 || back[2] != want[2] || back[0].ExtraString("name") != "alice" {
		t.Errorf("read back: %+v %v", back, err)
	}
}

// Issue 16: the json parse mode reads the whole completion with json_repair first, whose
// key rules skip prose and its brace groups, and falls back to the first balanced {...}
// only when that gives no object.
func TestJSONParseModeProse(t *testing.T) {
	s := sig.New("S", "x", []sig.Field{{Name: "text"}}, []sig.Field{{Name: "summary"}})
	tpl := &Template{Messages: []MessageTemplate{{Role: "user", Content: "{text}"}}, ParseMode: ParseJSON}
	for _, c := range []struct{ completion, want string }{
		{`Use {placeholders} wisely. {"summary": "ok"}`, "ok"},
		{`{"summary": "ok"}`, "ok"},
		{"Sure!\n```json\n{\"summary\": \"fenced\"}\n```", "fenced"},
		{`Answer: {"summary": "a"} and {"other": 1}`, "a"},
	} {
		out, err := tpl.Parse(s, c.completion)
		if err != nil || out.String("summary") != c.want {
			t.Errorf("%q: %v %v, want summary %q", c.completion, out, err, c.want)
		}
	}
}
