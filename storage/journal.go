package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A turn in flight lives in a journal beside the database, not in it, until it ends: the
// database sees the whole turn in one transaction (one commit per turn), and the journal
// keeps what a killed process would otherwise lose.
//
//   - The journal of branch B is <db>-runs/b<B>. The process running a turn on B holds
//     an exclusive lock on it (tryLock) for the turn's whole life: another process finds
//     the branch busy, and reads who runs what from the journal itself. The kernel drops
//     the lock when the process dies, however it dies, so a journal with content and no
//     lock is a turn whose process is gone: it is imported as interrupted (importRun).
//   - Records are appended with one write each and never rewritten: the header when the
//     turn begins, then every finished call, then, when the turn completed, its end
//     (runEnd, commitlater.go): the turn is committed from then on, and the database
//     transaction follows beside the caller. A write that returned is in the kernel's
//     page cache, so it survives the process being killed (not the machine crashing: only
//     the turn's commit is fsynced, as before). Each record is its length and CRC-32
//     before its JSON, so a record cut short by a kill is recognised and dropped.
//   - The turn's id is one its branch has reserved in the database beforehand
//     (turnids.go), so its key is the same in flight, in the journal and once stored.
//   - When the turn's transaction has committed, the journal is emptied while still
//     locked, beside the caller (retire.go): an empty journal is no turn. Emptying, not
//     removing: creating and removing a file cost a turn 0.3 ms of kernel time on ext4,
//     an eighth of a first Send; the files go when the store closes (sweepJournals). A
//     journal whose turn is already stored (the process died between the commit and the
//     emptying) is only emptied.

// runHeader is a journal's first record: the turn being run.
type runHeader struct {
	V        int       `json:"v"`
	ID       int64     `json:"id"`
	Conv     string    `json:"conversation"`
	Branch   string    `json:"branch"`
	BranchID int64     `json:"branch_id"`
	Parent   int64     `json:"parent,omitempty"` // the branch tip the turn follows; 0 for none
	Depth    int       `json:"index"`
	Inputs   string    `json:"inputs"` // JSON
	RetryOf  int64     `json:"retry_of,omitempty"`
	InPlace  bool      `json:"in_place,omitempty"` // takes up interrupted turn ID where it is
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Started  time.Time `json:"started"`

	end *runEnd // the journal's end record, when it has one (readJournal)
}

// runCall is every later record: one finished inner call, as RecordCall got it. A call's
// request and history mostly repeat those of the same predictor's call in the turn before
// (the conversation so far, or under a sliding window most of it): when Base is set, Call
// holds only what follows what it takes of that stored call (journalBase), so a record
// costs what is new in the call, not the length of the conversation or of the window.
//
// A request body that is its messages array between a few bytes (an OpenAI-compatible
// model's, whose messages lm.AppendMessageJSON writes) is recorded as those bytes in
// RawMessages (the store's own encoding of it, rawRequestMessages), Call.RawRequest left
// out: at 1,000 turns a body is 600 KB, which escaped again into every call's record cost
// a Send 1.5 ms a call. Reading the journal rebuilds it (resolveBases).
type runCall struct {
	Parent      string       `json:"parent,omitempty"`
	Call        *trace.Call  `json:"call,omitempty"`
	Base        *journalBase `json:"base,omitempty"`
	RawMessages string       `json:"raw_messages,omitempty"`
	End         *runEnd      `json:"end,omitempty"` // the last record, alone (readJournal puts it in the header)
}

// recordBody returns jc, the call c as its record holds it (c itself, or its
// continuation), without its request body when that is its messages array between a few
// bytes, and those bytes ("" when the body is kept whole). c is not changed.
func recordBody(c, jc *trace.Call) (*trace.Call, string) {
	if c.RawRequest == "" {
		return jc, ""
	}
	parts, ok := encodeMessagesBody(c.RawRequest, c.Messages.Slice())
	if !ok {
		return jc, ""
	}
	out := *jc
	out.RawRequest = ""
	return &out, parts
}

// journalBase names a stored call, and how much of its request and history a journaled call
// begins with: the first Msgs messages, then (a window that slid on) the MsgsLen from
// MsgsFrom; the same for its history entries. Journals of version 1 have no slides.
type journalBase struct {
	Turn     int64  `json:"turn"`
	Call     string `json:"call"`
	Msgs     int    `json:"msgs"`
	Hist     int    `json:"hist"`
	MsgsFrom int    `json:"msgs_from,omitempty"`
	MsgsLen  int    `json:"msgs_len,omitempty"`
	HistFrom int    `json:"hist_from,omitempty"`
	HistLen  int    `json:"hist_len,omitempty"`
}

// maxSlide bounds how far past the shared prefix journalCall looks for the run a sliding
// window goes on with (a window holds a few turns), so that a record costs O(1) to make.
const maxSlide = 64

// journalCall is c as its record holds it, given base, the same predictor's call in the
// stored turn baseTurn (nil when there is none).
func journalCall(c, base *trace.Call, baseTurn int64) (*trace.Call, *journalBase) {
	if base == nil {
		return c, nil
	}
	ref := journalBase{Turn: baseTurn, Call: base.ID}
	ref.Msgs = c.Messages.CommonPrefix(base.Messages)
	ref.MsgsFrom, ref.MsgsLen = slideOf(c.Messages.Len(), base.Messages.Len(), ref.Msgs, func(i, j int) int {
		return c.Messages.Sub(i, c.Messages.Len()).CommonPrefix(base.Messages.Sub(j, base.Messages.Len()))
	})
	ch, bh := c.History.Messages, base.History.Messages
	same := func(i, j int) int { // mostly the same pointers (a history is shared structure), else equal entries
		n := 0
		for i+n < len(ch) && j+n < len(bh) && (ch[i+n] == bh[j+n] || ch[i+n].Equal(bh[j+n])) {
			n++
		}
		return n
	}
	ref.Hist = same(0, 0)
	ref.HistFrom, ref.HistLen = slideOf(len(ch), len(bh), ref.Hist, same)
	return continuation(c, ref)
}

// slideOf finds where a list of n elements goes on, past the k it shares with a base list
// of m, with a later run of the base's (a sliding window dropped the ones between): the
// first base position within maxSlide after k from which common(k, j) elements match, and
// how many; 0, 0 when none does. A run of one is taken only when it ends both lists (most
// windows slide by a turn of two messages or one entry; a single match elsewhere is
// likelier chance than a slide).
func slideOf(n, m, k int, common func(i, j int) int) (from, length int) {
	if k >= n || k >= m {
		return 0, 0
	}
	for j := k + 1; j < m && j <= k+maxSlide; j++ {
		if l := common(k, j); l >= 2 || l == 1 && j+1 == m {
			return j, l
		}
	}
	return 0, 0
}

// continuation is c as its record holds it when it begins with what ref takes of call
// ref.Call of the stored turn ref.Turn (journalBase).
func continuation(c *trace.Call, ref journalBase) (*trace.Call, *journalBase) {
	if ref.Msgs == 0 && ref.Hist == 0 && ref.MsgsLen == 0 && ref.HistLen == 0 {
		return c, nil
	}
	jc := *c
	jc.Messages = c.Messages.Sub(ref.Msgs+ref.MsgsLen, c.Messages.Len())
	jc.History = sig.History{Messages: c.History.Messages[ref.Hist+ref.HistLen:]}
	return &jc, &ref
}

// resolveBases gives the calls read from a journal the requests and histories their
// records share with stored calls, read through q (only read), each base turn once.
// The records are whole afterwards (no Base).
func resolveBases(ctx context.Context, q querier, calls []runCall) error {
	bases := map[int64]map[string]*trace.Call{} // by turn, then call id
	for i := range calls {
		ref := calls[i].Base
		if ref == nil {
			continue
		}
		byID, ok := bases[ref.Turn]
		if !ok {
			loaded, err := loadCalls(ctx, q, []int64{ref.Turn}, baseOptions(calls, ref.Turn), newDecoder())
			if err != nil {
				return err
			}
			byID = map[string]*trace.Call{}
			trace.WalkCalls(loaded[ref.Turn], func(c *trace.Call, _ int) { byID[c.ID] = c })
			bases[ref.Turn] = byID
		}
		base, c := byID[ref.Call], calls[i].Call
		if base == nil || !ref.fits(base) {
			return fmt.Errorf("storage: turn journal: call %s begins as call %s of turn %d, which is not stored as it was: %w",
				c.ID, ref.Call, ref.Turn, ErrInvalid)
		}
		bm, bh := base.Messages, base.History.Messages
		c.Messages = bm.Sub(0, ref.Msgs).Concat(bm.Sub(ref.MsgsFrom, ref.MsgsFrom+ref.MsgsLen)).Concat(c.Messages)
		h := append(bh[:ref.Hist:ref.Hist], bh[ref.HistFrom:ref.HistFrom+ref.HistLen]...)
		c.History = sig.History{Messages: append(h, c.History.Messages...)}
		calls[i].Base = nil
	}
	for i := range calls {
		if p, c := calls[i].RawMessages, calls[i].Call; p != "" && c != nil {
			raw, err := decodeMessagesBody(p, c.Messages.Slice())
			if err != nil {
				return fmt.Errorf("storage: turn journal: call %s: %w", c.ID, err)
			}
			c.RawRequest = raw
			calls[i].RawMessages = ""
		}
	}
	return nil
}

// fits says whether base has what ref takes of it (a damaged journal may say otherwise).
func (ref *journalBase) fits(base *trace.Call) bool {
	fit := func(k, from, n, m int) bool {
		return k >= 0 && from >= 0 && n >= 0 && k <= m && from <= m && n <= m-from
	}
	return fit(ref.Msgs, ref.MsgsFrom, ref.MsgsLen, base.Messages.Len()) && fit(ref.Hist, ref.HistFrom, ref.HistLen, len(base.History.Messages))
}

// baseOptions reads of the stored turn the records of calls take as their base only
// what they take: no requests when none begins with one, the history of the one call
// whose history they continue.
func baseOptions(calls []runCall, turn int64) LoadOptions {
	o := LoadOptions{NoRequests: true, NoHistories: true}
	for _, rc := range calls {
		ref := rc.Base
		if ref == nil || ref.Turn != turn {
			continue
		}
		if ref.Msgs > 0 || ref.MsgsLen > 0 {
			o.NoRequests = false
		}
		if ref.Hist > 0 || ref.HistLen > 0 {
			switch {
			case o.NoHistories:
				o.NoHistories, o.HistoryOf = false, ref.Call
			case o.HistoryOf != ref.Call:
				o.HistoryOf = "" // several: all of them
			}
		}
	}
	return o
}

const (
	journalVersion = 4       // 2: journalBase's slides; 3: the end record; 4: raw_messages; earlier versions are read as well
	maxRecord      = 1 << 30 // a length beyond this is a damaged journal, not a record
)

// runsDir is the directory of the journals of the turns in flight.
func (s *Store) runsDir() string { return s.path + "-runs" }

func (s *Store) runPath(branchID int64) string {
	return filepath.Join(s.runsDir(), "b"+strconv.FormatInt(branchID, 10))
}

// branchOfRun reads the branch id out of a journal's file name.
func branchOfRun(name string) (int64, bool) {
	id, err := strconv.ParseInt(strings.TrimPrefix(name, "b"), 10, 64)
	return id, err == nil && strings.HasPrefix(name, "b") && id > 0
}

// holderWait is how long a turn beginning or a tip moving waits for a holder of the
// branch's journal that has written no turn: one beginning a turn, moving the branch's
// tip or sweeping the empty journal, which is a moment's work, not a turn in flight.
const holderWait = time.Second

// waitHolder waits before the next try for such a holder, and reports false once
// holderWait has passed.
type waitHolder struct {
	waited, pause time.Duration
}

func (w *waitHolder) again(ctx context.Context) (bool, error) {
	if w.waited >= holderWait {
		return false, nil
	}
	w.pause = min(max(2*w.pause, time.Millisecond), 50*time.Millisecond)
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(w.pause):
	}
	w.waited += w.pause
	return true, nil
}

// lockRun opens branchID's journal and takes its exclusive lock. When another open file
// holds it, it returns no file and what the journal says of the turn running (nil if its
// header is still not written after holderWait; a holder whose turn has ended, retiring
// the journal, is waited for as long). A file that has content once locked is a turn
// whose process is gone, for the caller to import.
func (s *Store) lockRun(ctx context.Context, branchID int64) (*os.File, *runHeader, error) {
	var w waitHolder
	for {
		f, _, h, err := s.tryJournal(branchID)
		if f != nil || err != nil || h != nil && !s.endedHolder(ctx, h) {
			return f, h, err
		}
		if again, err := w.again(ctx); !again {
			return nil, h, err
		}
	}
}

// tryRun is lockRun without waiting: no file and no header when the holder has written
// no turn.
func (s *Store) tryRun(branchID int64) (*os.File, *runHeader, error) {
	path := s.runPath(branchID)
	for {
		f, err := s.openJournal(path)
		if err != nil {
			return nil, nil, err
		}
		ok, err := tryLock(f, true)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("storage: lock turn journal %s: %w", path, err)
		}
		if !ok {
			h, _, _ := readJournal(f)
			f.Close()
			return nil, h, nil
		}
		if stillAt(f, path) {
			return f, nil, nil
		}
		f.Close()
	}
}

// openJournal opens (creating it if need be) the journal at path, unlocked.
func (s *Store) openJournal(path string) (*os.File, error) {
	for try := 0; ; try++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		if errors.Is(err, os.ErrNotExist) && try < 100 {
			// The directory is made by the first turn of a store and removed when a
			// store closes with no journal in it, maybe just now by another process.
			if err := os.Mkdir(s.runsDir(), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, fmt.Errorf("storage: turn journals: %w", err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: turn journal: %w", err)
		}
		return f, nil
	}
}

// OpenJournal opens the journal of the branch a turn is about to begin on (the branch
// its last head read found), and keeps it for the turn's lock (keepOpen): creating it
// (and its directory) is most of what taking the lock costs the first turn of a process
// on a branch, about 0.2 ms, for a caller ahead of the turn to spend instead
// (ui/sessions' Prefetch and RestoreAhead, in the background). It locks nothing: a turn
// that never begins leaves an empty journal, which Close removes as it removes the
// others.
func (s *Store) OpenJournal(convID, branch string) {
	v, ok := s.branchIDs.Load(branchKey(convID, branch))
	if !ok || s.readOnly != "" {
		return
	}
	id := v.(int64)
	s.runMu.Lock()
	open := s.idle[id] != nil
	s.runMu.Unlock()
	if open {
		return
	}
	leave, ok := s.warm.join() // Close waits for it, and sweeps the journals after
	if !ok {
		return
	}
	defer leave()
	if f, err := s.openJournal(s.runPath(id)); err == nil {
		s.keepOpen(id, f) // the lock checks it is still the journal's file (tryJournal)
	}
}

// appendRecord writes v as one journal record, in one write.
func appendRecord(f *os.File, v any) error {
	body, err := recordJSON(v)
	if err != nil {
		return fmt.Errorf("storage: turn journal record: %w", err)
	}
	rec := make([]byte, 8, 8+len(body))
	binary.LittleEndian.PutUint32(rec, uint32(len(body)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.ChecksumIEEE(body))
	if _, err := f.Write(append(rec, body...)); err != nil {
		return fmt.Errorf("storage: write turn journal %s: %w", f.Name(), err)
	}
	return nil
}

// readJournal reads a journal from its start: its header (nil when there is none: an
// empty file, or one whose header write never completed), with its end record when it
// has one (h.end), and its complete call records. A record cut short or damaged ends the
// journal there: nothing after it was returned to the engine as recorded.
func readJournal(f *os.File) (*runHeader, []runCall, error) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return nil, nil, fmt.Errorf("storage: read turn journal %s: %w", f.Name(), err)
	}
	var h *runHeader
	var calls []runCall
	for len(data) >= 8 {
		n := binary.LittleEndian.Uint32(data)
		if n > maxRecord || int(n) > len(data)-8 || crc32.ChecksumIEEE(data[8:8+n]) != binary.LittleEndian.Uint32(data[4:]) {
			break
		}
		body := data[8 : 8+n]
		data = data[8+n:]
		if h == nil {
			h = &runHeader{}
			if err := json.Unmarshal(body, h); err != nil || h.V < 1 || h.V > journalVersion || h.ID <= 0 {
				return nil, nil, fmt.Errorf("storage: turn journal %s: not a journal this program wrote (version %d): %w", f.Name(), h.V, ErrInvalid)
			}
			continue
		}
		var c runCall
		err := json.Unmarshal(body, &c)
		if err == nil && c.End != nil && c.Call == nil && h.end == nil {
			h.end = c.End
			continue
		}
		if err != nil || c.Call == nil || h.end != nil {
			return nil, nil, fmt.Errorf("storage: turn journal %s: a call record of turn %d is unreadable: %v: %w", f.Name(), h.ID, err, ErrInvalid)
		}
		calls = append(calls, c)
	}
	return h, calls, nil
}

// errJournalGone is lockRun's answer, through lockDead, when the journal is not there.
var errJournalGone = errors.New("journal gone")

// lockDead opens path and takes its lock when no live process holds it: the journal of a
// turn whose process is gone. It returns errJournalGone when the file is not there (any
// more) and a nil file when a live process holds it.
func lockDead(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errJournalGone
	}
	if err != nil {
		return nil, fmt.Errorf("storage: turn journal: %w", err)
	}
	ok, err := tryLock(f, true)
	if err != nil || !ok {
		f.Close()
		return nil, err
	}
	if !stillAt(f, path) {
		f.Close()
		return nil, errJournalGone
	}
	return f, nil
}

// stillAt reports whether path still names the file f, just locked: its last owner may
// have retired it between our open and our lock.
func stillAt(f *os.File, path string) bool {
	fi, err1 := f.Stat()
	pi, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(fi, pi)
}

// sweepJournals removes the empty journals no process holds, then the directory when
// nothing is left in it: what a closing store does, so that nothing stays beside the
// database. A journal is removed while locked, so a process that opened it meanwhile
// finds, once it has the lock, that the path no longer names its file (stillAt) and
// starts over.
func (s *Store) sweepJournals() {
	ents, err := os.ReadDir(s.runsDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		if _, ok := branchOfRun(e.Name()); !ok {
			continue
		}
		if fi, err := e.Info(); err != nil || fi.Size() != 0 {
			continue
		}
		path := filepath.Join(s.runsDir(), e.Name())
		f, err := lockDead(path)
		if err != nil || f == nil {
			continue
		}
		if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
			os.Remove(path)
		}
		f.Close()
	}
	os.Remove(s.runsDir()) // only when empty
}
