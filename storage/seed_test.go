package storage

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// recordCalls begins turn t on sink and records its calls as the engine does (children
// before their parent), without ending it.
func recordCalls(ctx context.Context, sink *BranchSink, t *trace.Turn) (string, error) {
	return recordCallsWith(ctx, sink, t, false)
}

// recordCallsWith is recordCalls, each call prepared as it begins (PrepareCall) when
// prepare is set, as a Service's turn does.
func recordCallsWith(ctx context.Context, sink *BranchSink, t *trace.Turn, prepare bool) (string, error) {
	key, err := sink.BeginTurn(ctx, t.Inputs)
	if err != nil {
		return "", err
	}
	var rec func(parent string, c *trace.Call) error
	rec = func(parent string, c *trace.Call) error {
		if prepare {
			sink.PrepareCall(ctx, c)
		}
		for _, ch := range c.Children {
			if err := rec(c.ID, ch); err != nil {
				return err
			}
		}
		return sink.RecordCall(ctx, key, parent, c)
	}
	for _, c := range t.Calls {
		if err := rec("", c); err != nil {
			return key, err
		}
	}
	return key, nil
}

// recordChild is the "record" child: the next fixture turn of the branch (window
// SB_WINDOW), recorded by the first sink of its process, in record mode "calls" when
// SB_DROP is set.
func recordChild(ctx context.Context, s *Store, conv, branch string) (string, error) {
	b, err := s.Branch(ctx, conv, branch)
	if err != nil {
		return "", err
	}
	window, _ := strconv.Atoi(os.Getenv("SB_WINDOW"))
	key, _, err := recordAsEngine(ctx, s.Sink(conv, branch), fixtureTurn(b.Length, window, true), os.Getenv("SB_DROP") != "")
	return key, err
}

// journalRecords reads the call records of branch's journal as written.
func journalRecords(t *testing.T, s *Store, branch *Branch) []runCall {
	t.Helper()
	f, err := os.Open(s.runPath(branch.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, calls, err := readJournal(f)
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

// A sink that did not commit the turn its turn follows (a new process, a new Service)
// journals its calls against that turn's stored calls, read as a few list hashes: each
// record holds what the call adds, and the turn comes back exactly, committed, and
// imported after its process was killed.
func TestSeededJournal(t *testing.T) {
	ctx := context.Background()
	const n = 40 // stored turns before the one recorded
	cases := []struct {
		name   string
		window int
		change func(*trace.Turn) // the recorded turn's calls, made to differ from the stored
		// who records: "sink" (a new sink of the store that committed the turns before),
		// "store" (another store: nothing cached), "process" (a child process)
		by   string
		end  string // "commit" or "crash"
		msgs int    // the request messages and history entries each record takes as its base
		hist int
	}{
		{"new sink", 0, nil, "sink", "commit", 2*n - 1, n - 1},
		{"new store", 0, nil, "store", "commit", 2*n - 1, n - 1},
		{"new store, crash", 0, nil, "store", "crash", 2*n - 1, n - 1},
		{"new process, killed", 0, nil, "process", "crash", 2*n - 1, n - 1},
		// a window's request shares its first message (the system prompt), its history
		// nothing stored as one path
		{"window", 35, nil, "store", "commit", 1, 0},
		{"window, killed", 35, nil, "process", "crash", 1, 0},
		// a request and a history that begin differently from the stored ones share nothing
		{"differs", 0, func(tr *trace.Turn) {
			trace.WalkCalls(tr.Calls, func(c *trace.Call, _ int) {
				c.Messages = lm.MessagesOf([]lm.Message{{Role: "system", Content: "another prompt"}}).Concat(c.Messages.Sub(1, c.Messages.Len()))
				c.History.Messages = append([]*sig.Map{sig.NewMap("question", "another")}, c.History.Messages[1:]...)
			})
		}, "store", "crash", 0, 0},
		{"small", 0, func(tr *trace.Turn) {
			trace.WalkCalls(tr.Calls, func(c *trace.Call, _ int) {
				c.Messages = c.Messages.Sub(c.Messages.Len()-40, c.Messages.Len())
				c.History.Messages = c.History.Messages[len(c.History.Messages)-10:]
			})
		}, "store", "commit", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.by == "process" && testing.Short() {
				t.Skip("spawns processes")
			}
			s := storeWithTurns(t, n, tc.window)
			db := s.Path()
			want := fixtureTurn(n, tc.window, true)
			if tc.change != nil {
				tc.change(want)
			}
			br, err := s.Branch(ctx, "S", MainBranch)
			if err != nil {
				t.Fatal(err)
			}

			var key string
			var sink *BranchSink
			var child *exec.Cmd
			switch tc.by {
			case "sink":
				sink = s.Sink("S", MainBranch)
			case "store":
				other, err := Open(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				sink = other.Sink("S", MainBranch)
			case "process":
				cmd, out, stderr := startChild(t, "record", db, "S", MainBranch, "SB_WINDOW="+strconv.Itoa(tc.window))
				defer cmd.Process.Kill()
				if !out.Scan() || !strings.HasPrefix(out.Text(), "recorded ") {
					t.Fatalf("child: %q %s", out.Text(), stderr)
				}
				key = strings.TrimPrefix(out.Text(), "recorded ")
				child = cmd
			}
			if sink != nil {
				if key, err = recordCalls(ctx, sink, want); err != nil {
					t.Fatal(err)
				}
			}

			// Every record takes the stored call of its predictor as its base, as far as
			// the call repeats it, and holds only the rest.
			recs := journalRecords(t, s, br)
			if len(recs) != 3 {
				t.Fatalf("%d call records, want 3", len(recs))
			}
			for _, rc := range recs {
				msgs, hist := 0, 0
				if b := rc.Base; b != nil {
					msgs, hist = b.Msgs, b.Hist
					if turnKey(b.Turn) != br.Tip || b.Call != strings.Replace(rc.Call.ID, "t"+strconv.Itoa(n), "t"+strconv.Itoa(n-1), 1) {
						t.Errorf("call %s: base %+v, want the same predictor's call of turn %s", rc.Call.ID, b, br.Tip)
					}
				}
				if msgs != tc.msgs || hist != tc.hist {
					t.Errorf("call %s: base of %d messages and %d history entries, want %d and %d", rc.Call.ID, msgs, hist, tc.msgs, tc.hist)
				}
			}

			switch {
			case tc.end == "commit":
				if err := sink.CommitTurn(ctx, key, want); err != nil {
					t.Fatal(err)
				}
			case child != nil:
				if err := child.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				child.Wait() // killed: its journal's lock is free
			default:
				crash(t, s, sink, key)
			}
			// Read back by the first store: imported from the journal after a crash.
			if _, err := s.PendingTurns(ctx); err != nil {
				t.Fatal(err)
			}
			if !readsBackAs(t, s, key, want) {
				t.Errorf("the turn's calls come back different (%s)", tc.end)
			}
			if err := s.IntegrityCheck(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sharedPrefix finds the same prefix whether it hashes every element or takes the hashes
// of what the write cache knows.
func TestSharedPrefix(t *testing.T) {
	parent := messageItems(lm.MessagesOf(fixtureMessages("p", 9, 0))) // 20 messages
	call := messageItems(lm.MessagesOf(fixtureMessages("p", 10, 0)))  // repeats the first 19
	path := func(items []listItem) listPath {
		p := listPath{l: itemsOf(items)}
		var h hash16
		for _, it := range items {
			h = chainHash(h, it.key(), contentHash(it.Body))
			p.nodes.push(nodeRef{hash: h})
		}
		return p
	}
	stored := func(items []listItem, depths ...int) []prefixHash {
		p := path(items)
		var out []prefixHash
		for _, d := range depths {
			out = append(out, prefixHash{depth: d, hash: p.nodes.at(d - 1).hash.short()})
		}
		return out
	}
	other := messageItems(lm.MessagesOf(fixtureMessages("q", 9, 0)))
	cases := []struct {
		name   string
		stored []prefixHash
		known  listPath
		want   int
	}{
		{"nothing cached", stored(parent, 20, 19, 18, 17), listPath{}, 19},
		{"the parent cached", stored(parent, 20, 19, 18, 17), path(parent), 19},
		{"a prefix cached", stored(parent, 20, 19, 18, 17), path(parent[:5]), 19},
		{"the call itself cached", stored(parent, 20, 19, 18, 17), path(call), 19},
		{"another list cached", stored(parent, 20, 19, 18, 17), path(other), 19},
		{"only deeper candidates", stored(parent, 20), path(parent), 0},
		{"another stored list", stored(other, 20, 19, 18, 17), path(parent), 0},
		{"a shorter call", stored(append(append([]listItem(nil), call...), call...), 30, 22, 21), listPath{}, 22},
	}
	for _, tc := range cases {
		if got, _, _ := sharedPrefix(tc.stored, tc.known, call); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A call prepared as it begins (PrepareCall) is seeded while its model thinks: its record
// takes that seeding, reading nothing more, when the call still sends what it was
// prepared for, and seeds it again when it does not (a fallback to another adapter); the
// commit finds what the seeding found stored in the write cache. Either way the turn is
// stored as it ran.
func TestPreparedSeeding(t *testing.T) {
	ctx := context.Background()
	const n = 40
	cases := []struct {
		name   string
		wait   bool                    // for the seeding to be done before the call is recorded
		change func(*trace.Call)       // the call's request after it was prepared
		msgs   func(c *trace.Call) int // the messages its record takes from the stored call
	}{
		{"prepared", true, nil, func(*trace.Call) int { return 2*n - 1 }},
		{"recorded while seeding", false, nil, func(*trace.Call) int { return 2*n - 1 }},
		{"fell back", true, func(c *trace.Call) {
			c.Messages = lm.MessagesOf([]lm.Message{{Role: "system", Content: "another prompt"}}).Concat(c.Messages.Sub(1, c.Messages.Len()))
		}, func(*trace.Call) int { return 0 }},
		{"history rebuilt", true, func(c *trace.Call) {
			h := make([]*sig.Map, len(c.History.Messages))
			for i, m := range c.History.Messages {
				h[i] = m.Clone()
			}
			c.History.Messages = h
		}, func(*trace.Call) int { return 2*n - 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := storeWithTurns(t, n, 0)
			db := s.Path()
			br, err := s.Branch(ctx, "S", MainBranch)
			if err != nil {
				t.Fatal(err)
			}
			other, err := Open(ctx, db) // nothing cached
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			sink := other.Sink("S", MainBranch)
			want := fixtureTurn(n, 0, true)
			key, err := sink.BeginTurn(ctx, want.Inputs)
			if err != nil {
				t.Fatal(err)
			}
			r := sink.runs[key]
			var rec func(parent string, c *trace.Call)
			rec = func(parent string, c *trace.Call) {
				sink.PrepareCall(ctx, c)
				if tc.wait {
					r.seedMu.Lock()
					sd := r.seeds[c]
					r.seedMu.Unlock()
					if sd == nil {
						t.Fatalf("call %s: not prepared", c.ID)
					}
					<-sd.done
				}
				if tc.change != nil {
					tc.change(c)
				}
				for _, ch := range c.Children {
					rec(c.ID, ch)
				}
				reads0, _ := other.Reads()
				if err := sink.RecordCall(ctx, key, parent, c); err != nil {
					t.Fatal(err)
				}
				if reads, _ := other.Reads(); tc.wait && tc.change == nil && reads != reads0 {
					t.Errorf("call %s: recording a prepared call read %d statements", c.ID, reads-reads0)
				}
			}
			for _, c := range want.Calls {
				rec("", c)
			}
			recs := journalRecords(t, other, br)
			if len(recs) != 3 {
				t.Fatalf("%d call records, want 3", len(recs))
			}
			for _, rc := range recs {
				msgs := 0
				if rc.Base != nil {
					msgs = rc.Base.Msgs
				}
				if want := tc.msgs(rc.Call); msgs != want {
					t.Errorf("call %s: its record takes %d messages of the stored call, want %d", rc.Call.ID, msgs, want)
				}
			}
			ran0, back0 := other.wc.ran.Load(), other.wc.readBack.Load()
			if err := sink.CommitTurn(ctx, key, want); err != nil {
				t.Fatal(err)
			}
			if err := other.Settle(); err != nil { // the commit runs beside (commitlater.go)
				t.Fatal(err)
			}
			// what the seeding found stored is in the write cache (seedPath), although
			// other had written nothing before (readyCache): the commit neither looks the
			// prefixes up nor reads them back (49 statements here, 84 without, 450 when
			// the request changed after it was seeded)
			if ran := other.wc.ran.Load() - ran0; tc.change == nil && ran > 60 {
				t.Errorf("the commit ran %d statements, want at most 60", ran)
			}
			if back := other.wc.readBack.Load() - back0; tc.change == nil && back != 0 {
				t.Errorf("the commit read %d stored lists back, want none", back)
			}
			if !readsBackAs(t, s, key, want) {
				t.Error("the turn's calls come back different")
			}
		})
	}
}

// prepareAndRun runs turn t through sink as a Service's turn does: each call prepared
// as it begins (PrepareCall), recorded as it ends, then the commit.
func prepareAndRun(ctx context.Context, sink *BranchSink, t *trace.Turn) (string, error) {
	key, err := recordCallsWith(ctx, sink, t, true)
	if err != nil {
		return key, err
	}
	return key, sink.CommitTurn(ctx, key, t)
}

// storeWithTurns is a store (closed when the test ends) whose conversation S has n
// fixture turns (window) on its main branch, committed by one sink.
func storeWithTurns(t *testing.T, n, window int) *Store {
	t.Helper()
	s := openTemp(t)
	mustConv(t, s, "S")
	first := s.Sink("S", MainBranch)
	for i := range n {
		if _, err := runTurn(context.Background(), first, fixtureTurn(i, window, true)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// readsBackAs says whether turn key reads back from s with want's calls.
func readsBackAs(t *testing.T, s *Store, key string, want *trace.Turn) bool {
	t.Helper()
	got, err := s.LoadTurns(context.Background(), []string{key})
	if err != nil {
		t.Fatal(err)
	}
	return toJSON(t, got[0].Calls) == toJSON(t, want.Calls)
}

// The write cache knows of a seeded list's prefix only its last node (seedPath): a later
// list sharing less of it (an undo, then another turn) is stored as if nothing were
// cached, exactly, and so are the turns after it.
func TestSeededPathThenShorter(t *testing.T) {
	ctx := context.Background()
	const n = 40
	s := storeWithTurns(t, n, 0)
	other, err := Open(ctx, s.Path()) // a new process
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sink := other.Sink("S", MainBranch)
	if _, err := prepareAndRun(ctx, sink, fixtureTurn(n, 0, true)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Undo(ctx, "S", MainBranch, 3); err != nil {
		t.Fatal(err)
	}
	for _, tr := range []*trace.Turn{fixtureTurn(n-2, 0, true), fixtureTurn(n-1, 0, true)} {
		trace.WalkCalls(tr.Calls, func(c *trace.Call, _ int) { // another answer than the one undone
			last := c.Messages.Len() - 1
			m := c.Messages.At(last)
			m.Content += " (asked again)"
			c.Messages = c.Messages.Sub(0, last).Concat(lm.MessagesOf([]lm.Message{m}))
		})
		key, err := runTurn(ctx, sink, tr)
		if err != nil {
			t.Fatal(err)
		}
		if !readsBackAs(t, s, key, tr) {
			t.Errorf("turn %d: its calls come back different", tr.Index)
		}
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}
