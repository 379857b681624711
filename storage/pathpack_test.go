package storage

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// packedTurn is fixture turn i with what a pack must give back besides: attempts, an
// explicit history, a failed call, values of every kind.
func packedTurn(i int) *trace.Turn {
	t := fixtureTurn(i, 0, false)
	t.Inputs.Set("tags", []any{"a", int64(i), 1.5, nil, true, sig.NewMap("deep", []any{})})
	t.Inputs.Set("big", json.Number("123456789012345678901234567890"))
	t.Calls[1].Error = "boom"
	t.Calls[1].Outputs = nil
	t.Calls[1].Recovered = trace.RecoveredInexact
	if i%3 == 0 {
		t.Explicit = true
		t.History = sig.History{Messages: []*sig.Map{sig.NewMap("question", "given", "answer", "by hand")}}
	}
	if i%4 == 0 {
		t.Attempts = []*trace.Attempt{
			{Step: "answer", N: 1, Score: 0.25, Time: fixtureEpoch, Summary: "first", Details: sig.NewMap("answer", "x"), Calls: []string{"t1.c1"}},
			{Step: "answer", N: 2, Score: 0.75, Time: fixtureEpoch.Add(time.Second), Best: true, Error: "", Calls: []string{}},
		}
	}
	return t
}

// rowsRead is the path as the rows give it, what every pack read is compared with.
func rowsRead(t *testing.T, s *Store, conv, branch string) *BranchPage {
	t.Helper()
	p, err := s.LoadBranchRangeWith(context.Background(), conv, branch, 0, 0, LoadOptions{ValuesOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// samePath fails unless pv is the path p read from the rows, turn for turn.
func samePath(t *testing.T, pv *PathValues, p *BranchPage) {
	t.Helper()
	if pv.Total != p.Total || !reflect.DeepEqual(pv.Keys, p.Keys) || len(pv.Turns) != len(p.Turns) {
		t.Fatalf("path of %d turns (%d keys, %d turns), want %d (%d keys)", pv.Total, len(pv.Keys), len(pv.Turns), p.Total, len(p.Keys))
	}
	for i := range p.Turns {
		if !pv.Started[i].Equal(p.Nodes[i].Started) {
			t.Fatalf("turn %d started %v, want %v", i, pv.Started[i], p.Nodes[i].Started)
		}
		if !reflect.DeepEqual(pv.Turns[i], p.Turns[i]) {
			t.Fatalf("turn %d differs from its rows:\n got %s\nwant %s", i, toJSON(t, pv.Turns[i]), toJSON(t, p.Turns[i]))
		}
	}
}

func TestPathPackRoundTrip(t *testing.T) {
	s := openTemp(t)
	mustConv(t, s, "c")
	bulkAppend(t, s, "c", MainBranch, packSegmentTurns+40, 100, packedTurn) // two segments
	p := rowsRead(t, s, "c", MainBranch)
	ids := make([]int64, len(p.Nodes))
	for i, n := range p.Nodes {
		ids[i] = n.id.Int64
	}
	body, err := encodePack(ids, p.Turns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{len(ids), len(ids) + 5, 17, 1} {
		gotIDs, turns, held, err := decodePack(body, want)
		if err != nil || held != len(ids) || len(turns) != min(want, len(ids)) {
			t.Fatalf("decoding %d: %d of %d turns, %v", want, len(turns), held, err)
		}
		for i, turn := range turns {
			if gotIDs[i] != ids[i] || !reflect.DeepEqual(turn, p.Turns[i]) {
				t.Fatalf("turn %d (id %d) differs:\n got %s\nwant %s", i, gotIDs[i], toJSON(t, turn), toJSON(t, p.Turns[i]))
			}
		}
	}
	// values the database turns into others (a History becomes an object) come back as
	// they went in
	v := sig.NewMap("h", sig.History{Messages: []*sig.Map{sig.NewMap("q", "a")}}, "none", sig.History{},
		"n", json.Number("1e999"), "list", []any(nil), "empty", []any{}, "f", math.Copysign(0, -1))
	in := &trace.Turn{Inputs: v, Calls: []*trace.Call{}, Attempts: []*trace.Attempt{}}
	body, err = encodePack([]int64{7}, []*trace.Turn{in})
	if err != nil {
		t.Fatal(err)
	}
	_, outs, _, err := decodePack(body, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out := outs[0]; !reflect.DeepEqual(out.Inputs, v) || out.Calls == nil || out.Attempts == nil {
		t.Fatalf("values:\n got %#v\nwant %#v", out.Inputs, v)
	}
}

func TestPathPackRefuses(t *testing.T) {
	full := fixtureTurn(0, 0, false) // with its requests: more than a pack gives back
	if _, err := encodePack([]int64{1}, []*trace.Turn{full}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a turn with requests: %v, want it refused", err)
	}
	odd := &trace.Turn{Inputs: sig.NewMap("x", struct{}{})}
	if _, err := encodePack([]int64{1}, []*trace.Turn{odd}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a value outside sig's set: %v, want it refused", err)
	}
	body, err := encodePack([]int64{1}, []*trace.Turn{packedTurnValues(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pack []byte
	}{
		{"empty", nil},
		{"truncated", body[:len(body)/2]},
		{"a byte changed", func() []byte { b := append([]byte{}, body...); b[len(b)/2] ^= 1; return b }()},
		{"another magic", append([]byte("XXXX"), body[4:]...)},
		// damage the checksum does not catch (as a bug writing packs would make)
		{"a segment cut short", withCRC(body[:len(body)-14])},
		{"a segment's turns miscounted", withCRC(func() []byte { b := append([]byte{}, body[:len(body)-4]...); b[7]++; return b }())},
		{"turns beyond their segment", withCRC(func() []byte {
			b := append([]byte{}, body[:len(body)-4]...)
			b[5]++ // two turns...
			b[7]++ // ...in the one segment, which holds one
			return b
		}())},
	} {
		if _, _, _, err := decodePack(c.pack, 100); !errors.Is(err, errPackCorrupt) {
			t.Errorf("%s: %v, want errPackCorrupt", c.name, err)
		}
	}
}

// withCRC is a pack's bytes but its checksum, checksummed.
func withCRC(b []byte) []byte {
	b = append([]byte{}, b...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// packedTurnValues is packedTurn 0 as a ValuesOnly read gives it.
func packedTurnValues(t *testing.T) *trace.Turn {
	s := openTemp(t)
	mustConv(t, s, "v")
	bulkAppend(t, s, "v", MainBranch, 1, 1, packedTurn)
	return rowsRead(t, s, "v", MainBranch).Turns[0]
}

// loadValues is LoadPathValues, compared with the rows; it returns how many turns came
// from the pack.
func loadValues(t *testing.T, s *Store, conv, branch string) int {
	t.Helper()
	ctx := context.Background()
	pv, err := s.LoadPathValues(ctx, conv, branch)
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsRead(t, s, conv, branch)
	samePath(t, pv, rows)
	// room for the next turns, whether read from the pack or from the rows
	n := len(pv.Keys)
	if room := pathRoom(n); cap(pv.Keys)-n < room || cap(pv.Started)-n < room || cap(pv.Turns)-n < room {
		t.Fatalf("a path of %d turns with room for %d, %d and %d more, want %d", n,
			cap(pv.Keys)-n, cap(pv.Started)-n, cap(pv.Turns)-n, room)
	}
	// the same read at the head just read, as a turn's restore makes it
	_, tip, total, err := s.BranchHead(ctx, conv, branch)
	if err != nil {
		t.Fatal(err)
	}
	at, err := s.LoadPathValuesAt(ctx, conv, branch, tip, total)
	if err != nil {
		t.Fatal(err)
	}
	samePath(t, at, rows)
	if at.Packed != pv.Packed {
		t.Fatalf("read at the head: %d turns packed, want %d as LoadPathValues", at.Packed, pv.Packed)
	}
	return pv.Packed
}

// longBranch is a store whose conversation "c" has a main branch long enough to pack,
// of n turns, and no pack yet.
func longBranch(t *testing.T) (*Store, int) {
	t.Helper()
	s := openTemp(t)
	mustConv(t, s, "c")
	const n = packMinTurns + 20
	bulkAppend(t, s, "c", MainBranch, n, 100, packedTurn)
	return s, n
}

// LoadPathValuesAt reads the path that ends at the head it is given, whatever the
// branch's tip is by then, from the pack as LoadPathValues does; a branch this store
// never read the head of is read whole.
func TestLoadPathValuesAt(t *testing.T) {
	ctx := context.Background()
	s, n := longBranch(t)
	loadValues(t, s, "c", MainBranch) // the path read is packed by the warm-up
	warmPack(t, s, "c", MainBranch)
	want := rowsRead(t, s, "c", MainBranch)

	// a new process's warm-up prepares both reads of a pack: neither parses a statement
	warmed, err := Open(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer warmed.Close()
	if err := warmed.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	_, tip, total, err := warmed.BranchHead(ctx, "c", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	w0, r0 := warmed.Parses()
	for _, read := range []func() (*PathValues, error){
		func() (*PathValues, error) { return warmed.LoadPathValuesAt(ctx, "c", MainBranch, tip, total) },
		func() (*PathValues, error) { return warmed.LoadPathValues(ctx, "c", MainBranch) },
	} {
		pv, err := read()
		if err != nil {
			t.Fatal(err)
		}
		samePath(t, pv, want)
		if pv.Packed != n {
			t.Fatalf("%d turns from the pack, want %d", pv.Packed, n)
		}
	}
	if w1, r1 := warmed.Parses(); w1 != w0 || r1 != r0 {
		t.Errorf("after Warm the pack's reads parsed %d statements on the writer and %d on the readers, want none", w1-w0, r1-r0)
	}

	// turns committed after the head read: the path still ends at the head
	bulkAppend(t, s, "c", MainBranch, 3, 3, packedTurn)
	pv, err := s.LoadPathValuesAt(ctx, "c", MainBranch, tip, total)
	if err != nil {
		t.Fatal(err)
	}
	samePath(t, pv, want)
	if pv.Packed != n {
		t.Fatalf("%d turns from the pack, want %d", pv.Packed, n)
	}

	// a store that has read no head of the branch: the branch as it is now
	other, err := Open(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	pv, err = other.LoadPathValuesAt(ctx, "c", MainBranch, tip, total)
	if err != nil {
		t.Fatal(err)
	}
	samePath(t, pv, rowsRead(t, s, "c", MainBranch))
}

func warmPack(t *testing.T, s *Store, conv, branch string) {
	t.Helper()
	if err := s.WarmBranch(context.Background(), conv, branch); err != nil {
		t.Fatal(err)
	}
}

// packHeld is the last turn and the number of turns of a branch's pack (0, 0 for none).
func packHeld(t *testing.T, s *Store, conv, branch string) (tip int64, turns int) {
	t.Helper()
	err := s.w.QueryRow(`SELECT p.tip_id, (SELECT sum(turns) FROM path_packs WHERE branch_id = b.id)
		FROM path_packs p JOIN branches b ON b.id = p.branch_id
		WHERE b.conv_id = ? AND b.name = ? ORDER BY p.seq DESC LIMIT 1`, conv, branch).Scan(&tip, &turns)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return tip, turns
}

// TestLoadPathValues follows a long branch's pack through what moves the branch: each
// read gives the rows' path exactly, from the pack where the pack is on the path.
func TestLoadPathValues(t *testing.T) {
	ctx := context.Background()
	s, n := longBranch(t)

	if got := loadValues(t, s, "c", MainBranch); got != 0 {
		t.Fatalf("first read: %d turns packed, want none (no pack yet)", got)
	}
	if _, c := packHeld(t, s, "c", MainBranch); c != 0 {
		t.Fatalf("a pack of %d turns written by the read; WarmBranch writes it", c)
	}
	warmPack(t, s, "c", MainBranch)
	if _, c := packHeld(t, s, "c", MainBranch); c != n {
		t.Fatalf("pack of %d turns after WarmBranch, want %d", c, n)
	}
	if got := loadValues(t, s, "c", MainBranch); got != n {
		t.Fatalf("second read: %d turns packed, want %d", got, n)
	}

	// turns after the pack come from their rows
	bulkAppend(t, s, "c", MainBranch, 5, 5, packedTurn)
	if got := loadValues(t, s, "c", MainBranch); got != n {
		t.Fatalf("after 5 more turns: %d packed, want %d", got, n)
	}
	// an undo into the pack: its first turns
	if _, err := s.Undo(ctx, "c", MainBranch, 15); err != nil {
		t.Fatal(err)
	}
	if got := loadValues(t, s, "c", MainBranch); got != n-10 {
		t.Fatalf("after undoing 15: %d packed, want %d", got, n-10)
	}
	// new turns from there: the pack's last row is off the path, whether the new line
	// is shorter than the pack, as long or longer; the rows before it are on it
	other := func(i int) *trace.Turn {
		tr := packedTurn(i)
		tr.Inputs.Set("question", fmt.Sprintf("another question %d", i))
		return tr
	}
	for _, more := range []int{5, 5, 2} {
		bulkAppend(t, s, "c", MainBranch, more, more, other)
		if got := loadValues(t, s, "c", MainBranch); got != packRowTurns*(n/packRowTurns) {
			t.Fatalf("after a new line of turns: %d packed, want the %d of the rows before the last", got, packRowTurns*(n/packRowTurns))
		}
	}
	warmPack(t, s, "c", MainBranch)
	if got := loadValues(t, s, "c", MainBranch); got != n+2 {
		t.Fatalf("repacked: %d packed, want %d", got, n+2)
	}
	// a line leaving the path before the pack's last row: none of the pack is used
	// (only the last two rows are tried), and the next WarmBranch repacks from there
	back := n + 2 - packRowTurns*(n/packRowTurns) + 10
	if _, err := s.Undo(ctx, "c", MainBranch, back); err != nil {
		t.Fatal(err)
	}
	bulkAppend(t, s, "c", MainBranch, back, back, other)
	if got := loadValues(t, s, "c", MainBranch); got != 0 {
		t.Fatalf("after a line from before the last row: %d packed, want none", got)
	}
	warmPack(t, s, "c", MainBranch)
	if got := loadValues(t, s, "c", MainBranch); got != n+2 {
		t.Fatalf("repacked: %d packed, want %d", got, n+2)
	}

	// a pack far behind its tip is written again
	bulkAppend(t, s, "c", MainBranch, packLagTurns, packLagTurns, packedTurn)
	if got := loadValues(t, s, "c", MainBranch); got != n+2 {
		t.Fatalf("lagging: %d packed, want %d", got, n+2)
	}
	warmPack(t, s, "c", MainBranch)
	if _, c := packHeld(t, s, "c", MainBranch); c != n+2+packLagTurns {
		t.Fatalf("pack of %d turns after a lag of %d, want it repacked", c, packLagTurns)
	}

	// a damaged pack is not used, and is written again
	if _, err := s.w.Exec(`UPDATE path_packs SET body = substr(body, 1, 100) || x'00' || substr(body, 102)`); err != nil {
		t.Fatal(err)
	}
	if got := loadValues(t, s, "c", MainBranch); got != 0 {
		t.Fatalf("damaged pack: %d packed, want none", got)
	}
	warmPack(t, s, "c", MainBranch)
	if got := loadValues(t, s, "c", MainBranch); got != n+2+packLagTurns {
		t.Fatalf("after the damaged pack was rewritten: %d packed", got)
	}
}

// TestPathPacksKept: a conversation keeps the packs of its last few branches packed, a
// deleted branch takes its pack along, and a short path gets none.
func TestPathPacksKept(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	bulkAppend(t, s, "c", MainBranch, packMinTurns, 100, lightTurn)
	names := []string{MainBranch}
	for i := range packsPerConversation {
		name := fmt.Sprintf("b%d", i)
		if _, err := s.Fork(ctx, "c", MainBranch, name, packMinTurns-1); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	for _, name := range names {
		loadValues(t, s, "c", name)
		warmPack(t, s, "c", name)
		time.Sleep(2 * time.Millisecond) // written_at orders them
	}
	var count int
	if err := s.w.QueryRow(`SELECT count(DISTINCT branch_id) FROM path_packs`).Scan(&count); err != nil || count != packsPerConversation {
		t.Fatalf("%d packs (%v), want the last %d", count, err, packsPerConversation)
	}
	if _, c := packHeld(t, s, "c", MainBranch); c != 0 {
		t.Fatalf("the first branch packed keeps its pack of %d turns", c)
	}
	last := names[len(names)-1]
	if _, err := s.DeleteBranch(ctx, "c", last, false); err != nil {
		t.Fatal(err)
	}
	if err := s.w.QueryRow(`SELECT count(DISTINCT branch_id) FROM path_packs`).Scan(&count); err != nil || count != packsPerConversation-1 {
		t.Fatalf("%d packs after deleting a branch (%v), want %d", count, err, packsPerConversation-1)
	}

	mustConv(t, s, "short")
	bulkAppend(t, s, "short", MainBranch, packMinTurns-1, 100, lightTurn)
	loadValues(t, s, "short", MainBranch)
	warmPack(t, s, "short", MainBranch)
	if _, c := packHeld(t, s, "short", MainBranch); c != 0 {
		t.Fatalf("a path of %d turns packed", c)
	}
}

func TestPackQueueBounded(t *testing.T) {
	var q packQueue
	for i := range maxPendingPacks + 2 {
		q.put(fmt.Sprint(i), &pendingPack{branchID: int64(i)})
	}
	q.put("3", &pendingPack{branchID: 33}) // queued again: the newest
	if len(q.pending) != maxPendingPacks || len(q.order) != maxPendingPacks {
		t.Fatalf("%d paths held (%d in order), want %d", len(q.pending), len(q.order), maxPendingPacks)
	}
	for _, c := range []struct {
		key  string
		want int64
	}{{"0", -1}, {"1", -1}, {"2", 2}, {"3", 33}, {"5", 5}, {"3", -1}} {
		p := q.take(c.key)
		if got := int64(-1); p != nil {
			got = p.branchID
			if got != c.want {
				t.Errorf("take %s: branch %d, want %d", c.key, got, c.want)
			}
		} else if c.want != -1 {
			t.Errorf("take %s: nothing, want branch %d", c.key, c.want)
		}
	}
}

// TestPathPackPruned: deleting a branch deletes the turns only it reached, and a pack of
// another branch that still copies them (they left its path by an undo) goes too.
func TestPathPackPruned(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	bulkAppend(t, s, "c", MainBranch, packMinTurns+10, 100, lightTurn)
	loadValues(t, s, "c", MainBranch)
	warmPack(t, s, "c", MainBranch)
	if _, err := s.Fork(ctx, "c", MainBranch, "b", packMinTurns+9); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Undo(ctx, "c", MainBranch, 10); err != nil {
		t.Fatal(err)
	}
	bulkAppend(t, s, "c", MainBranch, 1, 1, lightTurn) // main's last ten turns are b's alone
	if _, c := packHeld(t, s, "c", MainBranch); c != packMinTurns+10 {
		t.Fatalf("main's pack holds %d turns, want %d", c, packMinTurns+10)
	}
	if _, err := s.DeleteBranch(ctx, "c", "b", false); err != nil {
		t.Fatal(err)
	}
	if _, c := packHeld(t, s, "c", MainBranch); c != 0 {
		t.Fatalf("main's pack of %d turns outlives the turns deleted with b", c)
	}
	loadValues(t, s, "c", MainBranch)
}
