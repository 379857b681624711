package core

import (
	"fmt"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
)

// benchHistories builds 1,000-turn own and outer histories for Scenario A's respond.
func benchHistories() (own, outer sig.History) {
	for i := 0; i < 1000; i++ {
		q := fmt.Sprintf("Question number %d: I still can't log in after the reset.", i)
		r := fmt.Sprintf("Reply %d: try clearing your cookies, then reset the password again.", i)
		own.Messages = append(own.Messages, sig.NewMap("question", q, "intent", "technical", "reply", r))
		outer.Messages = append(outer.Messages, sig.NewMap("question", q, "reply", r, "intent", "technical"))
	}
	return own, outer
}

// BenchmarkFiveStrategies renders one respond call under all five strategies (strategy 1
// in both its ChatAdapter and template forms) with 1,000-turn histories. Target: the
// whole set under 20 ms.
func BenchmarkFiveStrategies(b *testing.B) {
	own, outer := benchHistories()
	type job struct {
		name string
		ad   adapter.Adapter
		hist sig.History
	}
	var jobs []job
	for n := 1; n <= 5; n++ {
		opts := PresetOptions{Outer: outerA}
		st, err := Preset(n, respondSig, opts)
		if err != nil {
			b.Fatal(err)
		}
		h := outer
		if st.Nested != NestedInherit {
			h = own
		}
		jobs = append(jobs, job{fmt.Sprintf("strategy%d", n), st.Adapter, h})
		if n == 1 {
			st, _ = Preset(1, respondSig, PresetOptions{TemplateForKeep: true})
			jobs = append(jobs, job{"strategy1-template", st.Adapter, own})
		}
	}
	reqs := make([]adapter.Request, len(jobs))
	for i, j := range jobs {
		in := respondNowA.Clone()
		in.Set("history", j.hist)
		reqs[i] = adapter.Request{Signature: respondSig, Inputs: in, OuterHistory: &outer}
	}
	run := func(b *testing.B, idx []int) {
		b.ReportAllocs()
		for b.Loop() {
			for _, i := range idx {
				msgs, err := jobs[i].ad.Format(reqs[i])
				if err != nil || len(msgs) < 2 {
					b.Fatalf("%s: %v (%d messages)", jobs[i].name, err, len(msgs))
				}
			}
		}
	}
	all := make([]int, len(jobs))
	for i := range jobs {
		all[i] = i
		b.Run(jobs[i].name, func(b *testing.B) { run(b, []int{i}) })
	}
	b.Run("all", func(b *testing.B) { run(b, all) })
}
