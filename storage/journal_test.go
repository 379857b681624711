package storage

import (
	"context"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

// slideOf finds where a list goes on with a later run of its base's elements, past what
// they share: the run a sliding window keeps, within maxSlide of the shared prefix.
func TestSlideOf(t *testing.T) {
	cases := []struct {
		name, list, base string // one letter an element
		k, from, n       int
	}{
		{"a window slid by a turn", "Sbcdexy", "Sabcdez", 1, 2, 4},
		{"slid by two turns", "Scdxy", "Sabcdz", 1, 3, 2},
		{"nothing shared past the prefix", "Sxy", "Sabc", 1, 0, 0},
		{"one element shared, not at the end", "Sbxy", "Sabc", 1, 0, 0},
		{"one element shared, the base's last", "Scx", "Sabc", 1, 3, 1},
		{"the list ends at the prefix", "Sa", "Sab", 2, 0, 0},
		{"the base ends at the prefix", "Sabx", "Sab", 3, 0, 0},
		{"no prefix", "bcx", "abcz", 0, 1, 2},
		{"the run further than maxSlide", "S" + "yz", "S" + strings.Repeat("a", maxSlide+1) + "yz", 1, 0, 0},
		{"the run at maxSlide", "S" + "yz", "S" + strings.Repeat("a", maxSlide) + "yz", 1, maxSlide + 1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, b := tc.list, tc.base
			common := func(i, j int) int {
				n := 0
				for i+n < len(l) && j+n < len(b) && l[i+n] == b[j+n] {
					n++
				}
				return n
			}
			if from, n := slideOf(len(l), len(b), tc.k, common); from != tc.from || n != tc.n {
				t.Errorf("slideOf(%q, %q, %d) = %d, %d; want %d, %d", l, b, tc.k, from, n, tc.from, tc.n)
			}
		})
	}
}

// A turn whose process died with records that name slides of the turn before's calls (a
// sliding window, recorded by the sink that committed that turn), their request bodies
// recorded as the bytes around the messages, is imported with every call's request,
// history and body as the engine sent them.
func TestSlidJournalImported(t *testing.T) {
	ctx := context.Background()
	const n, window = 12, 4
	s := openTemp(t)
	mustConv(t, s, "S")
	sink := s.Sink("S", MainBranch)
	for i := range n {
		if _, err := runTurn(ctx, sink, fixtureTurn(i, window, true)); err != nil {
			t.Fatal(err)
		}
	}
	br, err := s.Branch(ctx, "S", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	key, sent, err := recordAsEngine(ctx, sink, fixtureTurn(n, window, true), false)
	if err != nil {
		t.Fatal(err)
	}
	slid, bodies := 0, 0
	for _, rc := range journalRecords(t, s, br) {
		if rc.Base != nil && rc.Base.MsgsLen > 0 && rc.Base.HistLen > 0 {
			slid++
		}
		if rc.RawMessages != "" && rc.Call.RawRequest == "" {
			bodies++ // the body as the bytes around its messages (runCall.RawMessages)
		}
	}
	if slid != 3 {
		t.Fatalf("%d of the 3 records name a slide of their base; the case tests nothing", slid)
	}
	if bodies != 3 {
		t.Errorf("%d of the 3 records hold their request body as its messages' surroundings, want all", bodies)
	}
	crash(t, s, sink, key)
	got, err := s.LoadTurn(ctx, key) // imported on the way
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != trace.StatusInterrupted {
		t.Fatalf("the turn whose process died is %s, want interrupted", got.Status)
	}
	sameCalls(t, "imported", got.Calls, sent)
}

// A damaged journal's base that asks for more than the stored call has is refused, not
// taken (nor a panic).
func TestJournalBaseFits(t *testing.T) {
	base := fixtureCall(3, 1, "agent.answer", 2, false) // 6 messages, 2 history entries
	if base.Messages.Len() != 6 || len(base.History.Messages) != 2 {
		t.Fatalf("fixture: %d messages, %d entries", base.Messages.Len(), len(base.History.Messages))
	}
	cases := []struct {
		name string
		ref  journalBase
		fits bool
	}{
		{"prefix and slide", journalBase{Msgs: 1, MsgsFrom: 3, MsgsLen: 3, Hist: 0, HistFrom: 1, HistLen: 1}, true},
		{"all of it", journalBase{Msgs: 6, Hist: 2}, true},
		{"nothing", journalBase{}, true},
		{"a prefix too long", journalBase{Msgs: 7}, false},
		{"a slide past the end", journalBase{Msgs: 1, MsgsFrom: 4, MsgsLen: 3}, false},
		{"an empty slide past the end", journalBase{MsgsFrom: 9}, false},
		{"an empty history slide past the end", journalBase{HistFrom: 3}, false},
		{"a negative length", journalBase{MsgsFrom: 2, MsgsLen: -1}, false},
		{"a length that overflows", journalBase{MsgsFrom: 2, MsgsLen: int(^uint(0) >> 1)}, false},
	}
	for _, tc := range cases {
		if got := tc.ref.fits(base); got != tc.fits {
			t.Errorf("%s: fits = %v, want %v", tc.name, got, tc.fits)
		}
	}
}
