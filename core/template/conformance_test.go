package template

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
)

func TestParseModeName(t *testing.T) {
	cases := []struct{ mode, want string }{{"", "json"}, {"json", "json"}, {"full_text", "full_text"}, {"xml", "xml"}, {"chat", "chat"}}
	for _, c := range cases {
		var ad adapter.Adapter = &Template{Messages: []MessageTemplate{{Role: "user", Content: "x"}}, ParseMode: c.mode}
		pm, ok := ad.(interface{ ParseModeName() string })
		if !ok {
			t.Fatal("Template does not implement ParseModeName (core.Predict fills lm.Meta.ParseMode through it)")
		}
		if got := pm.ParseModeName(); got != c.want {
			t.Errorf("mode %q: ParseModeName() = %q, want %q", c.mode, got, c.want)
		}
	}
}

// TestChatParseModeErrorIsChatAdapters: the reference delegates to ChatAdapter().parse,
// so the error text is ChatAdapter's, byte for byte, with no prefix.
func TestChatParseModeErrorIsChatAdapters(t *testing.T) {
	tpl := &Template{Messages: []MessageTemplate{{Role: "user", Content: "x"}}, ParseMode: ParseChat}
	completion := "[[ ## answer ## ]]\nx"
	_, err := tpl.Parse(twoOut, completion)
	_, want := adapter.Chat{}.Parse(twoOut, completion)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("got %v\nwant %v", err, want)
	}
	var pe *adapter.ParseError
	if !errors.As(err, &pe) || pe.Adapter != "ChatAdapter" {
		t.Errorf("want a ChatAdapter ParseError, got %T", err)
	}
}

// TestFullTextConversionErrorIsBare: the reference's _parse_full_text does not catch, so
// the caller sees parse_value's own error, not an AdapterParseError text.
func TestFullTextConversionErrorIsBare(t *testing.T) {
	tpl := &Template{Messages: []MessageTemplate{{Role: "user", Content: "x"}}, ParseMode: ParseFullText}
	_, err := tpl.Parse(oneOut, " forty ")
	if err == nil {
		t.Fatal("want an error")
	}
	want := "1 validation error for int\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='forty', input_type=str]\n" +
		"    For further information visit https://errors.pydantic.dev/2.13/v/int_parsing"
	if err.Error() != want {
		t.Errorf("got %q\nwant %q", err.Error(), want)
	}
	lit := sig.New("", "", []sig.Field{{Name: "q"}}, []sig.Field{{Name: "level", Type: sig.MustType("Literal['low', 'high']")}})
	if _, err := tpl.Parse(lit, "medium"); err == nil || err.Error() != "'medium' is not one of ('low', 'high')" {
		t.Errorf("literal: got %v", err)
	}
}

// TestDirectiveExtraKeysIgnored: 0.2.2 ignores every other key on a directive; a regular
// message with an unknown key is still reported (most likely a typo of "content").
func TestDirectiveExtraKeysIgnored(t *testing.T) {
	tpl, err := Load([]byte(`{"messages":[{"role":"system","content":"S"},{"role":"history","style":"yaml"},{"role":"demos","note":1},{"role":"user","content":"{question}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs := doRender(t, tpl, adapter.Request{Inputs: qaInputs()})
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	// The history directive expands plainly: q1/a1, q2/a2+score, orphan reply, lone question.
	if got := strings.Join(roles, ","); got != "system,user,assistant,user,assistant,assistant,user,user" {
		t.Errorf("roles %s", got)
	}
	if _, err := Load([]byte(`{"messages":[{"role":"user","contnet":"x"}]}`)); err == nil || !strings.Contains(err.Error(), `unknown key "contnet"`) {
		t.Errorf("typo on a regular message: %v", err)
	}
}

// TestOutputsSchemaStyle: json.dumps({name: TypeAdapter(T).json_schema()}, indent=2,
// ensure_ascii=False), pydantic's alphabetical key order (checked with pydantic 2.13).
func TestOutputsSchemaStyle(t *testing.T) {
	s := sig.New("", "x", []sig.Field{{Name: "q"}}, []sig.Field{
		{Name: "tags", Type: sig.MustType("list[str]")},
		{Name: "meta", Type: sig.MustType("dict[str, Any]")},
		{Name: "pick", Type: sig.MustType("Literal['é']")},
	})
	msgs := doRender(t, one("{outputs(style='schema')}"), adapter.Request{Signature: s, Inputs: sig.NewMap()})
	want := `{
  "tags": {
    "items": {
      "type": "string"
    },
    "type": "array"
  },
  "meta": {
    "additionalProperties": true,
    "type": "object"
  },
  "pick": {
    "const": "é",
    "type": "string"
  }
}`
	if msgs[0].Content != want {
		t.Errorf("got\n%s\nwant\n%s", msgs[0].Content, want)
	}
}

// TestNonFiniteInTemplateJSON: serialize_for_json turns NaN inside containers into null
// in demo replies, {demos(style='json')} and outputs_json.
func TestNonFiniteInTemplateJSON(t *testing.T) {
	s := sig.New("", "x", []sig.Field{{Name: "q"}}, []sig.Field{{Name: "score", Type: sig.TFloat}})
	demos := []*sig.Map{sig.NewMap("q", "a", "score", math.NaN())}
	tpl := &Template{Messages: []MessageTemplate{
		{Role: "system", Content: "{demos(style='json')}"},
		{Role: "demos", User: Str("{q}"), Assistant: Str("{outputs_json}")},
		{Role: "user", Content: "{q}"},
	}}
	msgs := doRender(t, tpl, adapter.Request{Signature: s, Demos: demos, Inputs: sig.NewMap("q", "b")})
	if want := "{\n  \"q\": \"a\",\n  \"score\": null\n}"; msgs[0].Content != want {
		t.Errorf("inline json demos: %q", msgs[0].Content)
	}
	if want := `{"score": null}`; msgs[2].Content != want {
		t.Errorf("outputs_json: %q, want %q", msgs[2].Content, want)
	}
	auto := doRender(t, &Template{Messages: []MessageTemplate{{Role: "user", Content: "{q}"}}}, adapter.Request{Signature: s, Demos: demos, Inputs: sig.NewMap("q", "b")})
	if want := "{\n  \"score\": null\n}"; auto[1].Content != want {
		t.Errorf("auto demo reply: %q, want %q", auto[1].Content, want)
	}
}
