package core

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// restoreByWalk is Restore with snapshots derived as before historyLog: each one walks
// back from the tip (buildHistory), and every turn is deep-copied. The reference outputs.
func restoreByWalk(module Module, opts Options, turns []*trace.Turn) (*Session, error) {
	s, err := Sessionify(module, opts)
	if err != nil {
		return nil, err
	}
	for _, t := range turns {
		nt := t.Clone()
		for _, k := range planChildren(s, "", nt.Calls, nil) {
			k.s.pushNode(k.t, nil)
			fixIndex(k.s.tip)
		}
		if !nt.Explicit {
			nt.History = s.buildHistory(nil)
		}
		s.pushNode(nt, nil)
	}
	return s, nil
}

// turnsJSON renders a session's turns and its children's, for exact comparison.
func turnsJSON(t *testing.T, s *Session) string {
	t.Helper()
	all := map[string][]*trace.Turn{"": s.Turns()}
	for path, cs := range s.Children() {
		all[path] = cs.Turns()
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Restore derives the same snapshots as walking back from the tip, under every window,
// stored-turn limit and seed, explicit snapshots kept; and it leaves its input alone.
func TestRestoreMatchesWalk(t *testing.T) {
	seed := &sig.History{Messages: []*sig.Map{sig.NewMap("task", "s1", "plan", "p1"), sig.NewMap("task", "s2", "plan", "p2")}}
	ctx := ctxWith(echoLM())
	orig := MustSessionify(retryAgent(2), Options{Recursive: Predictors})
	for i := 0; i < 9; i++ {
		mustRun(t, ctx, orig, "task", fmt.Sprintf("t%d", i))
	}
	recorded := orig.Turns()
	recorded[4].Explicit = true
	recorded[4].History = sig.History{Messages: []*sig.Map{sig.NewMap("task", "explicit")}}
	recorded[7].Explicit = true
	recorded[7].History = sig.History{Messages: []*sig.Map{}}
	before, _ := json.Marshal(recorded)
	for _, maxTurns := range []*int{nil, Int(0), Int(1), Int(3), Int(20)} {
		for _, maxStored := range []*int{nil, Int(0), Int(2), Int(5), Int(50)} {
			for _, sd := range []*sig.History{nil, seed} {
				name := fmt.Sprintf("max_turns=%v/max_stored=%v/seed=%v", deref(maxTurns), deref(maxStored), sd != nil)
				t.Run(name, func(t *testing.T) {
					o := Options{Recursive: Predictors, MaxTurns: maxTurns, MaxStoredTurns: maxStored, InitialHistory: sd}
					want, err := restoreByWalk(retryAgent(2), o, recorded)
					if err != nil {
						t.Fatal(err)
					}
					got, err := Restore(retryAgent(2), o, recorded)
					if err != nil {
						t.Fatal(err)
					}
					if g, w := turnsJSON(t, got), turnsJSON(t, want); g != w {
						t.Fatalf("restored turns differ:\n got %s\nwant %s", g, w)
					}
					if g, w := got.History(), want.History(); !py.Same(g, w) || len(g.Messages) != len(w.Messages) {
						t.Fatalf("next history %v, want %v", g, w)
					}
					// The next turn runs the same on both.
					a, b := mustRun(t, ctx, got, "task", "next"), mustRun(t, ctx, want, "task", "next")
					if a.String("plan") != b.String("plan") || !sameValues(got.Turns(), want.Turns()) {
						t.Fatal("restored session diverges on the next turn")
					}
					if after, _ := json.Marshal(recorded); string(after) != string(before) {
						t.Fatal("Restore changed the turns it was given")
					}
				})
			}
		}
	}
}

// sameValues compares turns without their timestamps (the next turn runs twice).
func sameValues(a, b []*trace.Turn) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !py.Same(x.Inputs, y.Inputs) || !py.Same(x.Outputs, y.Outputs) || !py.Same(x.History, y.History) ||
			len(x.History.Messages) != len(y.History.Messages) || len(x.Calls) != len(y.Calls) {
			return false
		}
		for j := range x.Calls {
			if !py.Same(x.Calls[j].History, y.Calls[j].History) || !py.Same(x.Calls[j].Inputs, y.Calls[j].Inputs) {
				return false
			}
		}
	}
	return true
}

func deref(p *int) any {
	if p == nil {
		return "nil"
	}
	return *p
}

// syntheticTurns are n recorded turns of a planner/validator program without a window:
// each call's history holds every earlier call of its predictor, sharing one array as
// storage's loaded lists do.
func syntheticTurns(n int) []*trace.Turn {
	at := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)
	hist := map[string][]*sig.Map{}
	out := make([]*trace.Turn, n)
	for i := range out {
		task := fmt.Sprintf("task %d", i)
		t := &trace.Turn{Index: i, Inputs: sig.NewMap("task", task), Outputs: sig.NewMap("plan", "plan for "+task),
			Started: at, Ended: at.Add(time.Second)}
		for _, p := range []struct{ path, in, out string }{{"planner", "task", "plan"}, {"validator", "plan", "feedback"}} {
			c := &trace.Call{ID: p.path, Path: p.path, PredictorType: "Predict", Adapter: "chat",
				Inputs: sig.NewMap(p.in, task), Outputs: sig.NewMap(p.out, "ok "+task),
				History: sig.History{Messages: hist[p.path]}, Started: at, Latency: time.Millisecond}
			m := c.Inputs.Clone()
			m.Set(p.out, "ok "+task)
			hist[p.path] = append(hist[p.path], m)
			t.Calls = append(t.Calls, c)
		}
		out[i] = t
	}
	return out
}

// BenchmarkRestore restores unwindowed branches of 1,000 and 10,000 turns: linear work
// means about 10x between them. The old way (walk) is measured at 1,000 and 2,000 turns
// only: it is quadratic (4x for twice the turns) and takes minutes at 10,000.
func BenchmarkRestore(b *testing.B) {
	mk := func() Module {
		return &Program{Name: "P", Subs: []Sub{{"planner", MustPredict("task -> plan")}, {"validator", MustPredict("plan -> feedback")}}}
	}
	for _, n := range []int{1000, 2000, 10000} {
		turns := syntheticTurns(n)
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := Restore(mk(), Options{Recursive: Predictors}, turns)
				if err != nil || s.Len() != n {
					b.Fatal(err)
				}
			}
		})
		if n > 2000 {
			continue
		}
		b.Run(fmt.Sprintf("walk/turns=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := restoreByWalk(mk(), Options{Recursive: Predictors}, turns); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A long restore plans its turns in chunks beside the linking (replay.go): it restores
// what planning and linking them one by one restores (and, where that applies, walking
// them), for flat, windowed, episodic and nested sessions, with explicit snapshots on
// the way, whichever chunk a turn falls in.
func TestRestoreLongMatchesWalk(t *testing.T) {
	ctx := ctxWith(echoLM())
	cases := []struct {
		name  string
		build func() (Module, Options)
		field string
		walk  bool // restoreByWalk applies (it ends no episodes)
	}{
		{"predictors", func() (Module, Options) { return retryAgent(2), Options{Recursive: Predictors} }, "task", true},
		{"window", func() (Module, Options) {
			return retryAgent(2), Options{Recursive: Predictors, MaxTurns: Int(3)}
		}, "task", true},
		{"episodic child", func() (Module, Options) {
			return twoCalls(nil), Options{Recursive: Predictors, ChildConfigs: map[string]ChildConfig{"worker": {Lifespan: LifespanEpisodic}}}
		}, "question", false},
		{"keep session around a module", keepSessionAroundModule, "q", true},
	}
	const n = 3*replayChunkMin + 17 // three chunks, of unequal length
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, o := c.build()
			live := MustSessionify(m, o)
			for i := range n {
				mustRun(t, ctx, live, c.field, fmt.Sprintf("t%d", i))
			}
			recorded := live.Turns()
			for _, i := range []int{5, replayChunkMin, n - 2} {
				recorded[i].Explicit = true
				recorded[i].History = sig.History{Messages: []*sig.Map{sig.NewMap(c.field, fmt.Sprintf("explicit %d", i))}}
			}
			restore := func(procs int) *Session {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				m, o := c.build()
				s, err := Restore(m, o, recorded)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			got, want := restore(4), restore(1)
			if g, w := turnsDigest(t, got), turnsDigest(t, want); g != w {
				t.Fatalf("restored in chunks:\n%s\nrestored in one go:\n%s", g, w)
			}
			if c.walk {
				m, o := c.build()
				walked, err := restoreByWalk(m, o, recorded)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := turnsDigest(t, got), turnsDigest(t, walked); g != w {
					t.Fatalf("restored in chunks:\n%s\nwalked:\n%s", g, w)
				}
			}
			a, b := mustRun(t, ctx, got, c.field, "next"), mustRun(t, ctx, want, c.field, "next")
			if !py.Same(a.Fields, b.Fields) || !sameValues(got.Turns()[n-8:], want.Turns()[n-8:]) {
				t.Fatal("restored session diverges on the next turn")
			}
		})
	}
}

// turnsDigest is a line per turn of a session and its children's: its index, values,
// history length and the history's last message (turnsJSON's whole histories cost
// O(turns²) bytes on a long session).
func turnsDigest(t *testing.T, s *Session) string {
	t.Helper()
	var b strings.Builder
	line := func(path string, ts []*trace.Turn) {
		for _, x := range ts {
			var last *sig.Map
			if k := len(x.History.Messages); k > 0 {
				last = x.History.Messages[k-1]
			}
			j, err := json.Marshal([]any{x.Index, x.Inputs, x.Outputs, len(x.History.Messages), last, len(x.Calls)})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %s\n", path, j)
		}
	}
	line("", s.Turns())
	paths := []string{}
	for p := range s.Children() {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		line(p, s.Children()[p].Turns())
	}
	return b.String()
}
