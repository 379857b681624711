package adapter

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// examplesPath is the DSPy 3.3.1 reference cases (format and parse), recorded from the
// Python library; docs/wire/chat-adapter-format.md explains them. The core and ui/cli
// tests read the same file, so there is one copy of the reference.
const examplesPath = "testdata/chat-adapter-examples.json"

type exampleFile struct {
	FormatCases []json.RawMessage `json:"format_cases"`
	ParseCases  []json.RawMessage `json:"parse_cases"`
}

// ExampleCase is one format case of the examples file, with the wire request rebuilt
// from it (the same JSON the `wire format` command reads).
type exampleCase struct {
	Name     string
	Request  []byte
	Messages []lm.Message
	Error    any
}

func loadExamples(t testing.TB) (format []exampleCase, parse []*sig.Map) {
	t.Helper()
	data, err := os.ReadFile(examplesPath)
	if err != nil {
		t.Fatal(err)
	}
	var f exampleFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("examples file: %v", err)
	}
	for _, raw := range f.FormatCases {
		v, err := sig.DecodeJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		c := v.(*sig.Map)
		inputs, _ := c.Get("inputs")
		in := inputs.(*sig.Map).Clone()
		hf := c.String("history_field")
		switch c.String("history_passed") {
		case "History":
			h, _ := c.Get("history")
			in.Set(hf, sig.NewMap("messages", h))
		case "None":
			in.Set(hf, nil)
		}
		s, _ := c.Get("signature")
		demos, _ := c.Get("demos")
		req := sig.NewMap("adapter", "chat", "signature", s, "demos", demos, "inputs", in)
		var msgs []lm.Message
		if raw, ok := c.Get("messages"); ok && raw != nil {
			if err := json.Unmarshal([]byte(py.CompactJSON(raw)), &msgs); err != nil {
				t.Fatal(err)
			}
		}
		errv, _ := c.Get("error")
		format = append(format, exampleCase{Name: c.String("name"), Request: []byte(py.CompactJSON(req)), Messages: msgs, Error: errv})
	}
	for _, raw := range f.ParseCases {
		v, err := sig.DecodeJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		parse = append(parse, v.(*sig.Map))
	}
	return format, parse
}

func TestExamplesFormat(t *testing.T) {
	cases, _ := loadExamples(t)
	if len(cases) == 0 {
		t.Fatal("no format cases")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			req, err := DecodeWireRequest(c.Request)
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(req.Adapter, req.Raw)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Format(Request{Signature: req.Signature, Demos: req.Demos, Inputs: req.Inputs})
			if c.Error != nil {
				if err == nil {
					t.Fatalf("want error %v, got none", c.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			compareMessages(t, got, c.Messages)
		})
	}
}

func compareMessages(t *testing.T, got, want []lm.Message) {
	t.Helper()
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			t.Errorf("message %d missing; want %s %q", i, want[i].Role, want[i].Content)
		case i >= len(want):
			t.Errorf("extra message %d: %s %q", i, got[i].Role, got[i].Content)
		case got[i] != want[i]:
			t.Errorf("message %d:\n got %s %q\nwant %s %q", i, got[i].Role, got[i].Content, want[i].Role, want[i].Content)
		}
	}
}

func TestExamplesParse(t *testing.T) {
	_, cases := loadExamples(t)
	if len(cases) == 0 {
		t.Fatal("no parse cases")
	}
	for _, c := range cases {
		t.Run(c.String("name"), func(t *testing.T) {
			rawSig, _ := c.Get("signature")
			s, err := DecodeSignature(rawSig, "signature")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Chat{}.Parse(s, c.String("completion"))
			if e, _ := c.Get("error"); e != nil {
				em := e.(*sig.Map)
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("want AdapterParseError, got %v (result %v)", err, py.CompactJSON(got))
				}
				want := em.String("message")
				if pe.Message == "" && err.Error() != want {
					t.Errorf("error text:\n got %q\nwant %q", err.Error(), want)
				}
				if pe.Message != "" && !strings.HasPrefix(err.Error(), want[:strings.Index(want, "Error message:")]) {
					t.Errorf("error text:\n got %q\nwant %q", err.Error(), want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res, _ := c.Get("result")
			want := sig.NewMap()
			res.(*sig.Map).Range(func(k string, v any) bool {
				val, _ := v.(*sig.Map).Get("value")
				want.Set(k, val)
				return true
			})
			if !got.Equal(want) {
				t.Errorf("got %s, want %s", py.CompactJSON(got), py.CompactJSON(want))
			}
			if order, ok := c.Get("result_key_order"); ok {
				if py.CompactJSON(sig.Normalize(got.Keys())) != py.CompactJSON(order) {
					t.Errorf("key order %v, want %s", got.Keys(), py.CompactJSON(order))
				}
			}
		})
	}
}
