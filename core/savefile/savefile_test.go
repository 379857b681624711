package savefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

func TestDecodeErrorsLocate(t *testing.T) {
	cases := []struct {
		text        string
		line, col   int
		path, text2 string
	}{
		{"{\n  \"version\": 2,\n  \"turns\": [}\n", 3, 13, "", "invalid character '}'"},
		{"{\"version\": 2} x", 1, 16, "", "invalid character 'x'"},
		{"[1]", 0, 0, "$", "top level is a list, want an object"},
		{"{\"turns\": []}", 0, 0, "$", `no "version" key`},
		{"{\"version\": 3}", 0, 0, "$.version", "unsupported session state version: 3 (want 1 or 2)"},
		{"{\"version\": 2, \"turns\": [{\"index\": \"0\"}]}", 0, 0, "$.turns[0].index", "is a string, want an int"},
		{"{\"version\": 2, \"turns\": [{\"score\": true}]}", 0, 0, "$.turns[0].score", "is a bool, want a number or null"},
		{"{\"version\": 2, \"history_field\": \"\"}", 0, 0, "$.history_field", "want a non-empty string"},
		{"{\"version\": 2, \"max_turns\": \"3\"}", 0, 0, "$.max_turns", "is a string, want an int or null"},
		{"{\"version\": 2, \"exclude_fields\": [\"a\", 1]}", 0, 0, "$.exclude_fields[1]", "is an int, want a string"},
		{"{\"version\": 2, \"input_field_override\": \"q\"}", 0, 0, "$.input_field_override", "want a list of strings"},
		{"{\"version\": 2, \"copy_mode\": 1}", 0, 0, "$.copy_mode", "is an int, want a string"},
		{"{\"version\": 2, \"l2_memory\": 1}", 0, 0, "$.l2_memory", "is an int, want a string"},
		{"{\"version\": 2, \"node_states\": {\"w\": {\"version\": 7}}}", 0, 0, `$.node_states["w"].version`, "unsupported session state version: 7"},
		{"{\"version\": 2, \"node_states\": {\"w\": []}}", 0, 0, `$.node_states["w"]`, "is a list, want an object"},
		{"{\"version\": 1, \"turns\": [{\"history_snapshot\": {\"msgs\": []}}]}", 0, 0, "$.turns[0].history_snapshot", `history object has no "messages" key`},
		{"{\"version\": 2, \"x_sessionbench\": {\"title\": 5}}", 0, 0, "$.x_sessionbench.title", "is an int, want a string"},
		{"{\"version\": 2, \"turns\": [], \"sessionbench\": {\"turns\": [{}]}}", 0, 0, "$.sessionbench.turns", "has 1 entries for 0 turns"},
		{"{\"version\": 2, \"turns\": [{}], \"sessionbench\": {\"turns\": [{\"started\": \"noon\"}]}}", 0, 0, "$.sessionbench.turns[0].started", "want an RFC 3339 time"},
		{"{\"version\": 2, \"turns\": [{}], \"sessionbench\": {\"turns\": [{\"calls\": [null]}]}}", 0, 0, "$.sessionbench.turns[0].calls[0]", "is null"},
		{"{\"version\": 2, \"turns\": [{}], \"sessionbench\": {\"turns\": [{\"child_turns\": {\"w\": -1}}]}}", 0, 0, "$.sessionbench.turns[0].child_turns[\"w\"]", "want a count"},
		{"{\"version\": 2, \"turns\": [{}], \"sessionbench\": {\"turns\": [{\"attempts\": {}}]}}", 0, 0, "$.sessionbench.turns[0].attempts", "want a list"},
		{"{\"version\": 2, \"turns\": [{}], \"sessionbench\": {\"turns\": [{\"attempts\": [{\"attempt\": \"2\"}]}]}}", 0, 0, "$.sessionbench.turns[0].attempts", "not attempt records"},
	}
	for _, tc := range cases {
		_, err := Decode([]byte(tc.text))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v is not a ParseError", tc.text, err)
			continue
		}
		if pe.Line != tc.line || pe.Column != tc.col || pe.Path != tc.path || !strings.Contains(pe.Msg, tc.text2) {
			t.Errorf("%q: got %+v, want line %d col %d path %q msg %q", tc.text, pe, tc.line, tc.col, tc.path, tc.text2)
		}
	}
}

// sample is a file using every part of the format.
func sample() *File {
	score := 0.5
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	seed := sig.History{Messages: []*sig.Map{sig.NewMap("q", "hi", "a", "hello")}}
	explicit := sig.History{Messages: []*sig.Map{sig.NewMap("q", "given")}}
	call := &trace.Call{ID: "c1", Path: "w", PredictorType: "Predict", Inputs: sig.NewMap("k", "x"), Outputs: sig.NewMap("v", 1.0),
		Started: t0, Latency: time.Second}
	return &File{
		Version: 2,
		Settings: Settings{HistoryField: "history", MaxTurns: ptr(4), CopyMode: "none", ExcludeFields: []string{"ctx", "history"},
			HistoryInputFields: []string{}, HistoryPolicy: "use_if_provided"},
		State: State{
			Turns: []Entry{
				{Turn: &trace.Turn{Index: 0, Inputs: sig.NewMap("q", "Q1"), Outputs: sig.NewMap("a", "A1", "n", int64(2)), Started: t0, Ended: t0,
					Calls: []*trace.Call{call}, Attempts: []*trace.Attempt{
						{Step: "s", N: 1, Score: 0.65, Time: t0, Summary: "v=1.0", Details: sig.NewMap("v", 1.0), Calls: []string{"c1"}},
						{Step: "s", N: 2, Score: 0.78, Time: t0, Best: true, Error: "", Details: sig.NewMap("v", 2.0)},
						{Step: "s", N: 3, Time: t0, Error: "boom"}}}, ChildTurns: []ChildCount{{"w", 1}}},
				{Turn: &trace.Turn{Index: 1, Inputs: sig.NewMap("q", "Q2"), Outputs: sig.NewMap(), Score: &score, History: explicit, Explicit: true,
					Started: t0, Ended: t0}, ChildTurns: []ChildCount{{"w", 1}}},
			},
			InitialHistory: &seed,
			L2Memory:       "root notes",
			Nodes: []Node{
				{Path: "w", State: &State{Turns: []Entry{{Turn: &trace.Turn{Index: 0, Inputs: sig.NewMap("k", "x"), Outputs: sig.NewMap("v", 1.0)}}},
					L2Memory: "w notes", Nodes: []Node{{Path: "inner", State: &State{Raw: sig.NewMap("version", int64(1), "l2_memory", "deep")}}}}},
				{Path: "gone", State: &State{Raw: sig.NewMap("version", int64(1), "turns", []any{}, "odd", true)}},
			},
		},
		Extra:   sig.NewMap("app_version", "1.2"),
		Options: sig.NewMap("record", "all"),
		Meta:    &Meta{Conversation: "c1", Title: "T", Branch: "main", Metadata: map[string]any{"user": "u"}},
	}
}

func ptr(n int) *int { return &n }

func encode(t *testing.T, f *File) string {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestEncodeDecodeRoundTrip: everything written comes back, and writing what was read
// gives the same bytes.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	text := encode(t, sample())
	if !json.Valid([]byte(text)) {
		t.Fatalf("not JSON:\n%s", text)
	}
	f, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := sample()
	checks := []struct {
		name string
		ok   bool
	}{
		{"version", f.Version == 2},
		{"settings", f.Settings.HistoryField == "history" && *f.Settings.MaxTurns == 4 && f.Settings.MaxStoredTurns == nil &&
			f.Settings.CopyMode == "none" && strings.Join(f.Settings.ExcludeFields, ",") == "ctx,history" &&
			f.Settings.HistoryInputFields != nil && len(f.Settings.HistoryInputFields) == 0 && f.Settings.HistoryPolicy == "use_if_provided"},
		{"turns", len(f.Turns) == 2 && f.Turns[0].Turn.Inputs.Equal(want.Turns[0].Turn.Inputs) && f.Turns[0].Turn.Outputs.Equal(want.Turns[0].Turn.Outputs)},
		{"score", f.Turns[0].Turn.Score == nil && *f.Turns[1].Turn.Score == 0.5},
		{"explicit snapshot", !f.Turns[0].Turn.Explicit && f.Turns[1].Turn.Explicit && py.Same(f.Turns[1].Turn.History, want.Turns[1].Turn.History)},
		{"times", f.Turns[0].Turn.Started.Equal(want.Turns[0].Turn.Started)},
		{"calls", f.HasCalls && len(f.Turns[0].Turn.Calls) == 1 && f.Turns[0].Turn.Calls[0].Outputs.Equal(sig.NewMap("v", 1.0))},
		{"attempts", len(f.Turns[0].Turn.Attempts) == 3 && f.Turns[0].Turn.Attempts[1].Best && f.Turns[0].Turn.Attempts[1].Score == 0.78 &&
			f.Turns[0].Turn.Attempts[0].Calls[0] == "c1" && f.Turns[0].Turn.Attempts[0].Details.Equal(sig.NewMap("v", 1.0)) &&
			f.Turns[0].Turn.Attempts[2].Error == "boom" && f.Turns[0].Turn.Attempts[2].Details == nil && f.Turns[1].Turn.Attempts == nil},
		{"child turns", len(f.Turns[1].ChildTurns) == 1 && f.Turns[1].ChildTurns[0] == ChildCount{"w", 1}},
		{"seed", f.InitialHistory != nil && py.Same(*f.InitialHistory, *want.InitialHistory)},
		{"l2", f.L2Memory == "root notes"},
		{"node w", f.Node("w") != nil && f.Node("w").L2Memory == "w notes" && len(f.Node("w").Turns) == 1 &&
			f.Node("w").Turns[0].Snapshot != nil && f.Node("w").Node("inner").L2Memory == "deep"},
		{"raw node", f.Node("gone") != nil && py.Same(f.Node("gone").Raw, want.Node("gone").Raw)},
		{"extra", py.Same(f.Extra, want.Extra)},
		{"options", py.Same(f.Options, want.Options)},
		{"meta", f.Meta != nil && f.Meta.Title == "T" && string(f.Meta.Metadata["user"].(json.RawMessage)) == `"u"`},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s lost:\n%s", c.name, text)
		}
	}
	if again := encode(t, f); again != text {
		t.Errorf("re-encoding what was decoded differs:\n%s\n---\n%s", text, again)
	}
}

// TestEncodeStreamsTurns: turns given by Each are written as the same bytes as a slice.
func TestEncodeStreamsTurns(t *testing.T) {
	f := sample()
	want := encode(t, f)
	turns := f.Turns
	runs := 0
	f.Turns, f.Each = nil, func(yield func(Entry) error) error {
		runs++
		for _, e := range turns {
			if err := yield(e); err != nil {
				return err
			}
		}
		return nil
	}
	// Read three times: the Python turns, the extension's shared values, its turns.
	if got := encode(t, f); got != want || runs != 3 {
		t.Errorf("streamed turns (%d runs) differ:\n%s\n---\n%s", runs, got, want)
	}
	broken := errors.New("cursor broke")
	f.Each = func(yield func(Entry) error) error { return broken }
	if err := Encode(&bytes.Buffer{}, f); !errors.Is(err, broken) {
		t.Errorf("a failing source: %v", err)
	}
}

// TestEncodeSpelling: Python's json.dump(indent=2) spelling, empty containers inline,
// the defaults for unset settings.
func TestEncodeSpelling(t *testing.T) {
	got := encode(t, &File{})
	want := `{
  "version": 2,
  "history_field": "history",
  "max_turns": null,
  "max_stored_turns": null,
  "copy_mode": "deep",
  "exclude_fields": [
    "history"
  ],
  "history_input_fields": null,
  "history_policy": "override",
  "turns": [],
  "initial_history": null,
  "l2_memory": "",
  "node_states": {},
  "sessionbench": {
    "format": 2,
    "turns": []
  }
}
`
	if got != want {
		t.Errorf("empty file:\n%s\nwant\n%s", got, want)
	}
}
