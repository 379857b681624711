package storage

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// TestCallRecordFields fails when trace.Call, lm.Usage or lm.Try gains, loses or
// reorders a JSON field that journalenc.go does not know of: a call's journal record
// would drop it.
func TestCallRecordFields(t *testing.T) {
	for _, c := range []struct {
		typ   reflect.Type
		known []string
	}{
		{reflect.TypeFor[trace.Call](), callRecordFields},
		{reflect.TypeFor[lm.Usage](), usageRecordFields},
		{reflect.TypeFor[lm.Try](), tryRecordFields},
	} {
		var got []string
		for i := range c.typ.NumField() {
			name, _, _ := strings.Cut(c.typ.Field(i).Tag.Get("json"), ",")
			if name != "-" {
				got = append(got, name)
			}
		}
		if !reflect.DeepEqual(got, c.known) {
			t.Errorf("%s's JSON fields are\n%v\nstorage/journalenc.go writes\n%v", c.typ, got, c.known)
		}
	}
}

// fullCall is a call with every field set, its texts holding what JSON escapes.
func fullCall() *trace.Call {
	odd := "a<b>&c \u2028 \u2029 \x01 \t \"q\" \\ caf\u00e9 \xff end"
	score := 0.75
	temp := 0.5
	max := 200
	return &trace.Call{
		ID: "t3.c2", Path: "agent.answer<x>", PredictorType: "ChainOfThought",
		Inputs:  sig.NewMap("question", odd, "n", 3, "nested", sig.NewMap("k", []any{1.5, true, nil, "x&y"})),
		Outputs: sig.NewMap("answer", "ok > fine"),
		History: sig.History{Messages: []*sig.Map{sig.NewMap("question", "q1", "answer", odd)}},
		Adapter: "chat",
		Messages: lm.MessagesOf([]lm.Message{
			{Role: "system", Content: odd},
			{Role: "user", Content: ""},
			{Role: "user", Content: "named <one>", Extra: `{"name":"bob & co"}`},
		}),
		Params:     lm.Params{Model: "m", Temperature: &temp, MaxTokens: &max, Stop: []string{"</s>"}},
		Completion: "[[ ## answer ## ]]\n" + odd,
		Usage:      lm.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 1, TotalTokens: 12, Estimated: true},
		Model:      "gpt-x",
		Started:    time.Date(2026, 11, 28, 10, 0, 0, 123456789, time.UTC),
		Latency:    1234 * time.Microsecond,
		Error:      "parse <failed>",
		Tries: []lm.Try{
			{N: 1, Status: 429, Err: "rate <limited>", Wait: time.Second, Latency: time.Millisecond, Retrying: true, Adapter: "json",
				Messages: []lm.Message{{Role: "user", Content: "x<y"}, {Role: "user", Content: "n", Extra: `{"name":"a&b"}`}}, Completion: "no"},
			{N: 2},
		},
		Score:      &score,
		Children:   []*trace.Call{{ID: "t3.c2.1", Path: "inner", Messages: lm.MessagesOf(nil)}, nil},
		RawRequest: `{"a":"<b>"}`, RawResponse: "data: {}\n\n", Recovered: trace.RecoveredExact,
	}
}

func TestCallRecordBytes(t *testing.T) {
	full := fullCall()
	for _, v := range []reflect.Value{reflect.ValueOf(*full), reflect.ValueOf(full.Usage), reflect.ValueOf(full.Tries[0])} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("fullCall leaves %s.%s unset: the test would not check it", v.Type(), v.Type().Field(i).Name)
			}
		}
	}
	cases := []struct {
		name string
		rc   runCall
	}{
		{"every field", runCall{Call: full}},
		{"nested, with a base", runCall{Parent: "t3.c1", Call: full, Base: &journalBase{Turn: 7, Call: "t2.c2", Msgs: 3, Hist: 2, MsgsFrom: 4, MsgsLen: 1}}},
		{"a base with every field", runCall{Call: &trace.Call{ID: "x"}, Base: &journalBase{Turn: -1, Call: "t\"<2>", Msgs: 1, Hist: 2, MsgsFrom: 3, MsgsLen: 4, HistFrom: 5, HistLen: 6}}},
		{"a base with none", runCall{Call: &trace.Call{ID: "x"}, Base: &journalBase{}}},
		{"a body around its messages", runCall{Call: &trace.Call{ID: "x"}, Base: &journalBase{Turn: 7, Call: "t2.c2", Msgs: 3}, RawMessages: `["{\"model\":\"m\",\"messages\":","}"]`}},
		{"empty call", runCall{Call: &trace.Call{}}},
		{"params set", runCall{Call: &trace.Call{Params: lm.Params{Stop: []string{}, Seed: new(int64)}}}},
		{"a year JSON cannot hold", runCall{Call: &trace.Call{Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		{"nil maps, empty history, no request", runCall{Call: &trace.Call{ID: "x", History: sig.History{Messages: []*sig.Map{}}, Messages: lm.MessagesOf([]lm.Message{})}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := likeEncodingJSON(t, c.rc)
			if got == nil {
				return
			}
			var back runCall
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("the record does not read back: %v", err)
			}
		})
	}
}

// BenchmarkCallRecord is a small call's journal record: appendCallRecord against
// encoding/json.
func BenchmarkCallRecord(b *testing.B) {
	var hist []*sig.Map
	for range 4 {
		hist = append(hist, sig.NewMap("question", "Why was I charged twice this month?", "answer", strings.Repeat("A duplicate authorisation. ", 4)))
	}
	rc := runCall{Call: &trace.Call{ID: "t3.c2", Path: "support.answer", PredictorType: "Predict",
		Inputs: sig.NewMap("question", "Why was I charged twice?"), Outputs: sig.NewMap("answer", "A duplicate."),
		History: sig.History{Messages: hist}, Adapter: "chat",
		Messages:   lm.MessagesOf([]lm.Message{{Role: "user", Content: strings.Repeat("[[ ## question ## ]]\nWhy?\n", 3)}}),
		Completion: "[[ ## answer ## ]]\nA duplicate.", Started: time.Now(), Latency: time.Millisecond}}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := recordJSON(rc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(rc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCallRecordNotJSON: a value JSON cannot hold (NaN, ±Inf, which Python writes) is
// refused as encoding/json refuses it, never written into a journal it could not be read
// back from.
func TestCallRecordNotJSON(t *testing.T) {
	for _, m := range []*sig.Map{
		sig.NewMap("x", math.NaN()),
		sig.NewMap("x", []any{1.0, math.Inf(1)}),
		sig.NewMap("x", sig.NewMap("y", math.Inf(-1))),
		sig.NewMap("h", sig.History{Messages: []*sig.Map{sig.NewMap("y", math.NaN())}}),
	} {
		for _, c := range []*trace.Call{{Inputs: m}, {Outputs: m}, {History: sig.History{Messages: []*sig.Map{m}}}, {Children: []*trace.Call{{Outputs: m}}}} {
			_, want := json.Marshal(runCall{Call: c})
			body, err := recordJSON(runCall{Call: c})
			if want == nil || err == nil || err.Error() != want.Error() {
				t.Fatalf("recordJSON(%v) = %s, %v; want encoding/json's error %v", m, body, err, want)
			}
		}
	}
}

// The header and the end record are written as encoding/json writes them, byte for
// byte, every field set or left out, and refused where it refuses them. The cases with
// every field set fail when runHeader or runEnd gains a field the writers do not know.
func TestHeaderAndEndRecordBytes(t *testing.T) {
	at := time.Date(2026, 11, 28, 14, 3, 4, 5060708, time.FixedZone("x", 3600))
	score := 0.1234567
	fullHeader := &runHeader{V: journalVersion, ID: 42, Conv: "c-<a>&\"b\"\u2028", Branch: "main\t\x01", BranchID: 7, Parent: 41,
		Depth: 12, Inputs: `{"question":"why <b>?"}`, RetryOf: 40, InPlace: true, PID: 1234, Host: "höst\xff", Started: at}
	fullEnd := &runEnd{Outputs: `{"reply":"a & b"}`, Inputs: `{"q":"\u2029"}`, Score: &score, Started: at, Ended: at.Add(time.Second),
		Attempts: []*trace.Attempt{{Step: "s", N: 1, Score: 0.5, Time: at, Summary: "ok", Best: true}}}
	for _, v := range []reflect.Value{reflect.ValueOf(*fullHeader), reflect.ValueOf(*fullEnd)} {
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && v.Field(i).IsZero() {
				t.Fatalf("the full case leaves %s.%s unset: the test would not check it", v.Type(), v.Type().Field(i).Name)
			}
		}
	}
	nan, tiny := math.NaN(), 1e-9
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		rec  any
	}{
		{"full header", fullHeader},
		{"bare header", &runHeader{}},
		{"header in a year JSON cannot hold", &runHeader{Started: far}},
		{"full end", runCall{End: fullEnd}},
		{"bare end", runCall{End: &runEnd{}}},
		{"end with inputs only", runCall{End: &runEnd{Inputs: "{}", Started: at, Ended: at}}},
		{"end with a tiny score", runCall{End: &runEnd{Score: &tiny}}},
		{"end with a NaN score", runCall{End: &runEnd{Score: &nan}}},
		{"end in a year JSON cannot hold", runCall{End: &runEnd{Ended: far}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { likeEncodingJSON(t, c.rec) })
	}
}

// likeEncodingJSON checks that recordJSON writes rec byte for byte as json.Marshal does,
// or refuses it with encoding/json's error, and returns the record (nil when refused).
func likeEncodingJSON(t *testing.T, rec any) []byte {
	t.Helper()
	want, wantErr := json.Marshal(rec)
	got, err := recordJSON(rec)
	switch {
	case wantErr != nil && (err == nil || err.Error() != wantErr.Error()):
		t.Fatalf("recordJSON = %s, %v; want encoding/json's error %v", got, err, wantErr)
	case wantErr != nil:
		return nil
	case err != nil:
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("record differs from encoding/json's\n got: %s\nwant: %s", got, want)
	}
	return got
}
