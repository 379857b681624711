package storage

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/redact"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// jsonOf renders a value map as JSON (key order and number kinds kept); nil is NULL.
func jsonOf(m *sig.Map) (sql.NullString, error) {
	if m == nil {
		return sql.NullString{}, nil
	}
	b, err := m.MarshalJSON()
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

func mapOf(s sql.NullString) (*sig.Map, error) {
	if !s.Valid {
		return nil, nil
	}
	m := sig.NewMap()
	if err := m.UnmarshalJSON([]byte(s.String)); err != nil {
		return nil, err
	}
	return m, nil
}

// historyItems renders a history's entries as list elements (JSON objects). A history
// repeats the one stored before it under the same list key (a conversation's history
// grows by an entry a turn; a window also drops its first), so an entry that was
// rendered then and still holds the same values (entryJSON) is not rendered again;
// wc may be nil.
func historyItems(wc *writeCache, key string, h sig.History) elems {
	var prev []entryJSON
	if wc != nil && wc.entries != nil {
		prev = wc.entries[key]
	}
	// read before any entry is: a map changed while this runs is seen by the next commit
	drops := sig.RenderingsDropped()
	off := 0 // h.Messages[i] is prev[off+i] when it did not change
	if len(h.Messages) > 0 {
		for off < len(prev) && !prev[off].same(h.Messages[0]) {
			off++
		}
	}
	// next is prev's own entries so far while shared (only ever extended past prev's end,
	// which no reader of prev sees); otherwise an array of its own: prev, and lists
	// made of it, stay as they were.
	next, shared := prev[:0], off == 0
	if !shared {
		next = make([]entryJSON, 0, len(h.Messages))
	}
	// the first entries, known unchanged without reading their maps, in one tight pass:
	// the whole history but the last turn's entry, when no map changed
	start := 0
	if shared {
		for start < min(len(h.Messages), len(prev)) && prev[start].quiet(h.Messages[start], drops) {
			start++
		}
		next = prev[:start]
	}
	for i := start; i < len(h.Messages); i++ {
		m := h.Messages[i]
		j := off + i
		fast := j < len(prev) && prev[j].quiet(m, drops)
		reused := fast || j < len(prev) && prev[j].same(m)
		refreshed := false // reused, with a witness for the next commit's fast check
		var e entryJSON
		if reused {
			e = prev[j]
			if r := m.Rendering(); !fast && r != nil && e.keys != nil {
				e.m, e.rend, e.at, refreshed = m, r, drops, true // in a copy: prev is shared
			}
		} else {
			b, err := m.MarshalJSON()
			if err != nil {
				b = []byte("{}")
			}
			e = snapshot(m, string(b))
			if e.keys != nil {
				e.m, e.rend, e.at = m, m.Rendering(), drops
			}
		}
		switch {
		case shared && reused && !refreshed:
			next = next[:i+1]
		case shared && i >= len(prev):
			next = append(next, e) // past prev's end: prev stays as it was
		default:
			if shared {
				next, shared = append(make([]entryJSON, 0, len(h.Messages)), prev[:i]...), false
			}
			next = append(next, e)
		}
	}
	if shared && len(next) < len(prev) {
		// a shorter view of prev's array (after an undo): capped, so that extending it
		// copies instead of writing over entries that prev, and lists made of it, hold
		next = next[:len(next):len(next)]
	}
	if wc != nil && wc.entries != nil {
		wc.entries[key] = next
	}
	return entriesOf(next)
}

// entryJSON is a history entry's JSON and the keys and values it was rendered from, when
// those are all scalars (keys nil otherwise: not kept).
type entryJSON struct {
	keys []string
	vals []any
	json string
	// m is the map rendered, and rend the adapter's rendering it carried then (nil if
	// none): a map that still carries that very rendering has not changed since (Set,
	// Delete and UnmarshalJSON drop a map's rendering, and each rendering kept is a new
	// value), so same need not compare its values, which at 10,000 turns cost a commit
	// 4 ms of its 8.
	m    *sig.Map
	rend *sig.Rendering
	// at is sig.RenderingsDropped when m was last seen carrying rend: while no map has
	// dropped a rendering since, m still carries it (quiet), which needs no read of m
	// itself, spread over memory with the other entries' maps (at 10,000 turns reading
	// them was a commit's largest cost, 0.47 ms a Send).
	at uint64
}

// quiet says in O(1), without reading m, that m is the map e was rendered from and has
// not changed since: it carried e's rendering when drops was the count of renderings
// dropped, which it still is (a change to m would have dropped it).
func (e entryJSON) quiet(m *sig.Map, drops uint64) bool {
	return e.rend != nil && e.m == m && e.at == drops
}

func snapshot(m *sig.Map, json string) entryJSON {
	e := entryJSON{json: json, keys: make([]string, m.Len()), vals: make([]any, m.Len())}
	for i := range m.Len() {
		k, v := m.Entry(i)
		if !scalar(v) {
			return entryJSON{json: json}
		}
		e.keys[i], e.vals[i] = k, v
	}
	return e
}

// unchanged says in O(1) that m is the map e was rendered from and has not changed
// since; false says nothing.
func (e entryJSON) unchanged(m *sig.Map) bool {
	return e.rend != nil && e.m == m && m.Rendering() == e.rend
}

// same says whether m still holds what e was rendered from.
func (e entryJSON) same(m *sig.Map) bool {
	if e.unchanged(m) {
		return true
	}
	if e.keys == nil || m.Len() != len(e.keys) {
		return false
	}
	for i, k := range e.keys {
		mk, v := m.Entry(i)
		if mk != k || !scalar(v) || v != e.vals[i] {
			return false
		}
	}
	return true
}

// scalar says whether v is a value compared by ==: a string, number, boolean or null.
func scalar(v any) bool {
	switch v.(type) {
	case nil, string, int64, float64, bool:
		return true
	}
	return false
}

func messageItems(msgs lm.MessageList) []listItem {
	items := make([]listItem, msgs.Len())
	for i, m := range msgs.All() {
		items[i] = listItem{Role: m.Role, Body: m.Content, Extra: m.Extra}
	}
	return items
}

func insertCallIfMissing(ctx context.Context, wc *writeCache, tx *wtx, turnID int64, parentKey string, c *trace.Call) error {
	if c == nil {
		return nil
	}
	if c.ID != "" {
		var n int
		if f := tx.fresh[turnID]; f != nil {
			if f.keys[c.ID] {
				n = 1
			}
		} else if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM calls WHERE turn_id = ? AND call_key = ?", turnID, c.ID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			for _, ch := range c.Children {
				if err := insertCallIfMissing(ctx, wc, tx, turnID, c.ID, ch); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return insertCall(ctx, wc, tx, turnID, parentKey, c, false)
}

// insertCall stores c under parentKey, and those of its children not stored yet.
func insertCall(ctx context.Context, wc *writeCache, tx *wtx, turnID int64, parentKey string, c *trace.Call, replace bool) error {
	var seq int
	fresh := tx.fresh[turnID]
	if fresh != nil {
		seq = fresh.seq + 1
	} else if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) + 1 FROM calls WHERE turn_id = ?", turnID).Scan(&seq); err != nil {
		return err
	}
	key := c.ID
	if key == "" {
		key = fmt.Sprintf("#%d", seq)
	}
	if replace && (fresh == nil || fresh.keys[key]) {
		if _, err := tx.ExecContext(ctx, "DELETE FROM calls WHERE turn_id = ? AND call_key = ?", turnID, key); err != nil {
			return err
		}
	}
	in, err := jsonOf(c.Inputs)
	if err != nil {
		return fmt.Errorf("storage: call %s inputs: %w", key, err)
	}
	out, err := jsonOf(c.Outputs)
	if err != nil {
		return fmt.Errorf("storage: call %s outputs: %w", key, err)
	}
	hist, err := putList(ctx, wc, tx, "h\x00"+c.Path, historyItems(wc, "h\x00"+c.Path, c.History))
	if err != nil {
		return err
	}
	var io sql.NullInt64
	ioBody, ioSplit, joined := joinIO(in, out)
	if joined {
		// of the kind of the predictor's history entries, which it usually is
		if io, err = nullContent(ctx, wc, tx, "h\x00"+c.Path+"\x00h", ioBody); err != nil {
			return err
		}
		in, out = sql.NullString{}, sql.NullString{}
	}
	msgs, err := putList(ctx, wc, tx, "m\x00"+c.Path, messagesOf(c.Messages))
	if err != nil {
		return err
	}
	params, err := json.Marshal(c.Params)
	if err != nil {
		return fmt.Errorf("storage: call %s params: %w", key, err)
	}
	var attempts sql.NullString
	if len(c.Tries) > 0 {
		b, err := json.Marshal(c.Tries)
		if err != nil {
			return fmt.Errorf("storage: call %s attempts: %w", key, err)
		}
		attempts = sql.NullString{String: redact.String(string(b)), Valid: true}
	}
	completion, err := nullContent(ctx, wc, tx, "c\x00"+c.Path, c.Completion)
	if err != nil {
		return err
	}
	rawMode, rawBody := encodeRequestBody(c.RawRequest, c.Messages)
	rawReq, err := nullContent(ctx, wc, tx, "", rawBody)
	if err != nil {
		return err
	}
	respMode, respBody := encodeResponseBody(redact.String(c.RawResponse))
	rawResp, err := nullContent(ctx, wc, tx, "", respBody)
	if err != nil {
		return err
	}
	started := c.Started
	if started.IsZero() {
		started = now()
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO calls(turn_id, call_key, parent_key, seq, path, predictor_type, adapter, model,
			inputs, outputs, history_node, messages_node, params, completion_id,
			prompt_tokens, completion_tokens, cached_tokens, total_tokens, started_at, latency_ns, error, attempts, score,
			raw_request_mode, raw_request_id, raw_response_id, recovered, usage_estimated,
			messages_tail, messages_tail_len, history_tail, history_tail_len, raw_response_mode, io_id, io_split)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		turnID, key, parentKey, seq, c.Path, c.PredictorType, c.Adapter, c.Model,
		in, out, hist.head, msgs.head, string(params), completion,
		c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.CachedTokens, c.Usage.TotalTokens,
		fmtTime(started), int64(c.Latency), redact.String(c.Error), attempts, c.Score, rawMode, rawReq, rawResp, c.Recovered, c.Usage.Estimated,
		msgs.tail, msgs.tailLen, hist.tail, hist.tailLen, respMode, io, ioSplit)
	if err != nil {
		return fmt.Errorf("storage: record call %s (%s): %w", key, c.Path, err)
	}
	if fresh != nil {
		fresh.seq, fresh.keys[key] = seq, true
	}
	for _, ch := range c.Children {
		if err := insertCallIfMissing(ctx, wc, tx, turnID, key, ch); err != nil {
			return err
		}
	}
	return nil
}

// joinIO is a call's inputs and outputs (JSON objects) as one object, and the length of
// the inputs in it (splitIO), when both have keys: ok is false otherwise.
func joinIO(in, out sql.NullString) (string, int, bool) {
	i, o := in.String, out.String
	if !in.Valid || !out.Valid || len(i) < 3 || len(o) < 3 || i[0] != '{' || i[len(i)-1] != '}' || o[0] != '{' || o[len(o)-1] != '}' {
		return "", 0, false
	}
	body := i[:len(i)-1] + "," + o[1:]
	if bi, bo, ok := splitIO(body, len(i)); !ok || bi != i || bo != o {
		return "", 0, false
	}
	return body, len(i), true
}

// splitIO gives back the inputs and outputs joinIO joined.
func splitIO(body string, n int) (in, out string, ok bool) {
	if n < 3 || n >= len(body) || body[n-1] != ',' {
		return "", "", false
	}
	return body[:n-1] + "}", "{" + body[n:], true
}

// callRow is a stored call before its lists and contents are attached.
type callRow struct {
	turn                        int64
	seq                         int
	parentKey                   string
	call                        *trace.Call
	hist, msgs                  sql.NullInt64
	histTail, msgsTail          tailRef
	completion, rawReq, rawResp sql.NullInt64
	rawMode, respMode           int
	io                          sql.NullInt64 // inputs and outputs (joinIO)
	ioSplit                     int
}

// callValueColumns are the columns of a call LoadOptions.ValuesOnly reads, in callRow's
// scan order; callMoreColumns the others.
const (
	callValueColumns = `turn_id, seq, call_key, parent_key, path, predictor_type, adapter, model,
		inputs, outputs, started_at, latency_ns, error, recovered, io_id, io_split`
	callMoreColumns = `history_node, messages_node, params, completion_id,
		prompt_tokens, completion_tokens, cached_tokens, total_tokens, attempts, score,
		raw_request_mode, raw_request_id, raw_response_id, usage_estimated,
		coalesce(messages_tail, 0), messages_tail_len, coalesce(history_tail, 0), history_tail_len, raw_response_mode`
)

// loadCalls loads the call trees of the given turns in a fixed number of queries.
func loadCalls(ctx context.Context, q querier, turnIDs []int64, o LoadOptions, dec *decoder) (map[int64][]*trace.Call, error) {
	out := map[int64][]*trace.Call{}
	if len(turnIDs) == 0 {
		return out, nil
	}
	o = o.effective()
	cols := callValueColumns
	if !o.ValuesOnly {
		cols += ", " + callMoreColumns
	}
	// Ordered in Go (below), not by SQL: ORDER BY seq sorted whole rows in a temporary
	// b-tree, a fifth of the query's time.
	// A call's inputs and outputs stored as one content (joinIO) come in the same row: a
	// second query for them by id took about a sixth of a restore read's CPU.
	rows, err := q.QueryContext(ctx, "SELECT "+cols+`, io.body, io.base_id IS NOT NULL, iob.body FROM calls
		LEFT JOIN contents io ON io.id = calls.io_id LEFT JOIN contents iob ON iob.id = io.base_id
		WHERE turn_id IN (SELECT value FROM json_each(?))`, idsJSON(turnIDs))
	if err != nil {
		return nil, fmt.Errorf("storage: load calls: %w", err)
	}
	var all []*callRow
	var lists, hists, contents []int64
	var msgTails, histTails []tailRef
	for rows.Next() {
		r := &callRow{call: &trace.Call{}}
		c := r.call
		var in, out, attempts sql.NullString
		var params, started string
		var latency int64
		var ioBody, ioBase sql.RawBytes
		var ioDelta sql.NullBool
		dest := []any{&r.turn, &r.seq, &c.ID, &r.parentKey, &c.Path, &c.PredictorType, &c.Adapter, &c.Model,
			&in, &out, &started, &latency, &c.Error, &c.Recovered, &r.io, &r.ioSplit}
		if !o.ValuesOnly {
			dest = append(dest, &r.hist, &r.msgs, &params, &r.completion,
				&c.Usage.PromptTokens, &c.Usage.CompletionTokens, &c.Usage.CachedTokens, &c.Usage.TotalTokens,
				&attempts, &c.Score, &r.rawMode, &r.rawReq, &r.rawResp, &c.Usage.Estimated,
				&r.msgsTail.id, &r.msgsTail.n, &r.histTail.id, &r.histTail.n, &r.respMode)
		}
		dest = append(dest, &ioBody, &ioDelta, &ioBase)
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, fmt.Errorf("storage: load calls: %w", err)
		}
		if r.io.Valid {
			if in, out, err = callIO(r, ioBody, ioDelta.Bool, ioBase); err != nil {
				rows.Close()
				return nil, fmt.Errorf("storage: call %s of turn %d: %w", c.ID, r.turn, err)
			}
		}
		if c.Inputs, err = dec.mapOf(in); err == nil {
			c.Outputs, err = dec.mapOf(out)
		}
		if err == nil && !o.ValuesOnly {
			c.Params, err = dec.paramsOf(params)
		}
		if err == nil && attempts.Valid {
			err = json.Unmarshal([]byte(attempts.String), &c.Tries)
		}
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("storage: call %s of turn %d is corrupt: %w", c.ID, r.turn, err)
		}
		c.Started, c.Latency = parseTime(started), time.Duration(latency)
		if o.NoHistories || o.HistoryOf != "" && c.ID != o.HistoryOf {
			r.hist, r.histTail = sql.NullInt64{}, tailRef{}
		}
		if r.hist.Valid {
			hists = append(hists, r.hist.Int64)
		}
		if r.histTail.n > 0 {
			histTails = append(histTails, r.histTail)
		}
		if o.NoRequests {
			r.rawMode, r.msgsTail, r.rawResp = 0, tailRef{}, sql.NullInt64{}
		} else {
			if r.msgs.Valid {
				lists = append(lists, r.msgs.Int64)
			}
			if r.msgsTail.n > 0 {
				msgTails = append(msgTails, r.msgsTail)
			}
			for _, id := range []sql.NullInt64{r.completion, r.rawReq, r.rawResp} {
				if id.Valid {
					contents = append(contents, id.Int64)
				}
			}
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: load calls: %w", err)
	}
	message := func(role, body, extra string) (lm.Message, error) {
		return lm.Message{Role: role, Content: body, Extra: extra}, nil
	}
	msgLists, err := loadLists(ctx, q, lists, message)
	if err != nil {
		return nil, err
	}
	msgRuns, err := loadTails(ctx, q, msgTails, message)
	if err != nil {
		return nil, err
	}
	histLists, err := loadLists(ctx, q, hists, dec.historyEntry)
	if err != nil {
		return nil, err
	}
	histRuns, err := loadTails(ctx, q, histTails, dec.historyEntry)
	if err != nil {
		return nil, err
	}
	bodies, err := loadContents(ctx, q, contents)
	if err != nil {
		return nil, err
	}
	type tk struct {
		turn int64
		key  string
	}
	byKey := map[tk]*callRow{}
	for _, r := range all {
		c := r.call
		c.Messages = joinMessages(msgLists[r.msgs.Int64], r.msgsTail, msgRuns)
		c.History = sig.History{Messages: joinRun(histLists[r.hist.Int64], r.histTail, histRuns)}
		c.Completion = bodies[r.completion.Int64]
		if r.rawResp.Valid {
			if c.RawResponse, err = decodeResponseBody(r.respMode, bodies[r.rawResp.Int64]); err != nil {
				return nil, fmt.Errorf("storage: call %s of turn %d: %w", c.ID, r.turn, err)
			}
		}
		if c.RawRequest, err = decodeRequestBody(r.rawMode, bodies[r.rawReq.Int64], c.Messages); err != nil {
			return nil, fmt.Errorf("storage: call %s of turn %d: %w", c.ID, r.turn, err)
		}
		byKey[tk{r.turn, c.ID}] = r
	}
	// Children are recorded before their parents; siblings are put in start order, then
	// in the order they were recorded.
	slices.SortFunc(all, func(a, b *callRow) int {
		if c := cmp.Compare(a.turn, b.turn); c != 0 {
			return c
		}
		if c := a.call.Started.Compare(b.call.Started); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, r := range all {
		if p, ok := byKey[tk{r.turn, r.parentKey}]; ok && r.parentKey != "" {
			p.call.Children = append(p.call.Children, r.call)
		} else {
			out[r.turn] = append(out[r.turn], r.call)
		}
	}
	return out, nil
}

// callIO is the inputs and outputs of call row r stored as one content (joinIO): body
// as the row read it, a delta against base when delta is set.
func callIO(r *callRow, body sql.RawBytes, delta bool, base sql.RawBytes) (in, out sql.NullString, err error) {
	if body == nil {
		return in, out, fmt.Errorf("its inputs and outputs (content %d) are missing", r.io.Int64)
	}
	text := string(body)
	if delta {
		if text, err = undelta(base, body); err != nil {
			return in, out, fmt.Errorf("its inputs and outputs (content %d): %w", r.io.Int64, err)
		}
	}
	i, o, ok := splitIO(text, r.ioSplit)
	if !ok {
		return in, out, fmt.Errorf("its inputs and outputs (content %d) are corrupt", r.io.Int64)
	}
	return sql.NullString{String: i, Valid: true}, sql.NullString{String: o, Valid: true}, nil
}

func decodeHistoryEntry(_, body string) (*sig.Map, error) {
	m := sig.NewMap()
	if err := m.UnmarshalJSON([]byte(body)); err != nil {
		return nil, errors.New("history entry is not a JSON object")
	}
	return m, nil
}
