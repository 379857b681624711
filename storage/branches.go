package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sessionbench/sessionbench/core/trace"
)

// MainBranch exists in every conversation and cannot be deleted.
const MainBranch = "main"

// Branch is a named pointer to a tip turn; the turns from the root to the tip are the
// branch's conversation. Sibling and ancestry fields follow HPD-Agent (reference
// hpd-agent-branches.md §3.1-3.2) and are computed, never stored, so they cannot go stale.
type Branch struct {
	ID          int64  `json:"-"`
	ConvID      string `json:"conversation"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Tip         string `json:"tip,omitempty"` // turn key; "" for an empty branch
	Length      int    `json:"turns"`         // turns on the path, tip included
	ForkedFrom  string `json:"forked_from,omitempty"`
	// ForkIndex is the index of the last shared turn (the first diverging turn is at +1).
	ForkIndex       *int              `json:"fork_index,omitempty"`
	ForkTurn        string            `json:"fork_turn,omitempty"`
	SiblingIndex    int               `json:"sibling_index"`
	TotalSiblings   int               `json:"total_siblings"`
	PreviousSibling string            `json:"previous_sibling,omitempty"`
	NextSibling     string            `json:"next_sibling,omitempty"`
	Children        []string          `json:"children"`
	Ancestors       map[string]string `json:"ancestors"` // {"0":"main","1":"f1"}
	Redo            int               `json:"redo"`      // turns that redo can bring back
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`

	parentID sql.NullInt64
	tipID    sql.NullInt64
	// idsNext and idsEnd are the turn ids reserved for the branch's next turns
	// (turnids.go), tipStarted the tip's start time and agent the conversation's agent:
	// read by branchForTurn alone.
	idsNext, idsEnd int64
	tipStarted      sql.NullString
	agent           string
}

// IsOriginal reports whether the branch was not forked from another.
func (b *Branch) IsOriginal() bool { return b.ForkedFrom == "" }

func turnKey(id int64) string { return strconv.FormatInt(id, 10) }

func parseTurnKey(k string) (int64, error) {
	id, err := strconv.ParseInt(k, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("storage: %q is not a turn key: %w", k, ErrInvalid)
	}
	return id, nil
}

func nullKey(v sql.NullInt64) string {
	if !v.Valid {
		return ""
	}
	return turnKey(v.Int64)
}

// ValidateBranchName checks a new branch name.
func ValidateBranchName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("branch name is empty: %w", ErrInvalid)
	}
	if len(name) > 200 {
		return fmt.Errorf("branch name is longer than 200 bytes: %w", ErrInvalid)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("branch name %q contains a control character: %w", name, ErrInvalid)
		}
	}
	return nil
}

// branchByName reads one branch row (without the computed fields).
func branchByName(ctx context.Context, q querier, convID, name string) (*Branch, error) {
	b, _, _, err := scanBranch(ctx, q, convID, name, false)
	return b, err
}

// branchForTurn is branchByName with what a turn beginning on the branch needs to know
// besides, in the same query: its conversation's status, and how many turns are left
// running or interrupted on it.
func branchForTurn(ctx context.Context, q querier, convID, name string) (*Branch, trace.Status, int, error) {
	return scanBranch(ctx, q, convID, name, true)
}

// scanBranch reads branch name of convID, with branchForTurn's columns when forTurn is
// set.
func scanBranch(ctx context.Context, q querier, convID, name string, forTurn bool) (*Branch, trace.Status, int, error) {
	b := &Branch{ConvID: convID, Name: name}
	var forkIdx, forkTurn sql.NullInt64
	var created, updated string
	var st trace.Status
	var open int
	cols, from := "", "branches b"
	dest := []any{&b.ID, &b.Description, &b.tipID, &b.parentID, &forkIdx, &forkTurn, &created, &updated, &b.Length}
	if forTurn {
		cols = `, c.status, (SELECT count(*) FROM turns o WHERE o.conv_id = b.conv_id AND o.status IN ('running', 'interrupted')
			AND o.branch_id = b.id), b.ids_next, b.ids_end, t.started_at, c.agent`
		from = "branches b JOIN conversations c ON c.id = b.conv_id"
		dest = append(dest, &st, &open, &b.idsNext, &b.idsEnd, &b.tipStarted, &b.agent)
	}
	err := q.QueryRowContext(ctx, `SELECT b.id, b.description, b.tip_id, b.forked_from, b.fork_index, b.fork_turn_id,
			b.created_at, b.updated_at, coalesce(t.depth + 1, 0)`+cols+`
		FROM `+from+` LEFT JOIN turns t ON t.id = b.tip_id WHERE b.conv_id = ? AND b.name = ?`, convID, name).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		var n int
		if q.QueryRowContext(ctx, "SELECT count(*) FROM conversations WHERE id = ?", convID).Scan(&n); n == 0 {
			return nil, "", 0, fmt.Errorf("storage: conversation %q: %w", convID, ErrNotFound)
		}
		return nil, "", 0, fmt.Errorf("storage: branch %q not found in conversation %q: %w", name, convID, ErrNotFound)
	}
	if err != nil {
		return nil, "", 0, fmt.Errorf("storage: branch %q of %q: %w", name, convID, err)
	}
	b.Tip = nullKey(b.tipID)
	b.ForkTurn = nullKey(forkTurn)
	if forkIdx.Valid {
		i := int(forkIdx.Int64)
		b.ForkIndex = &i
	}
	b.CreatedAt, b.UpdatedAt = parseTime(created), parseTime(updated)
	return b, st, open, nil
}

// turnPos is a turn's place in the tree.
type turnPos struct {
	id, parent, jump int64 // parent 0 for a root turn; jump == id for a root turn
	depth, jumpDepth int
	conv             string
	status           trace.Status
}

func readPos(ctx context.Context, q querier, id int64) (turnPos, error) {
	p := turnPos{id: id}
	var parent, jump sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT parent_id, jump_id, depth, jump_depth, conv_id, status FROM turns WHERE id = ?", id).
		Scan(&parent, &jump, &p.depth, &p.jumpDepth, &p.conv, &p.status)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("storage: turn %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("storage: turn %d: %w", id, err)
	}
	p.parent, p.jump = parent.Int64, jump.Int64
	if !jump.Valid {
		p.jump = id
	}
	return p, nil
}

// childPos reads turn id's place and computes the jump pointer of a new child of it
// (skew-binary links: the jump skips 2^k-1 turns, so reaching any ancestor takes
// O(log depth) steps), reading the turn its own jump points to in the same query.
func childPos(ctx context.Context, q querier, id int64) (p turnPos, jump int64, jumpDepth int, err error) {
	p.id = id
	var parent, pjump, jid, jjump, jdepth sql.NullInt64
	err = q.QueryRowContext(ctx, `SELECT p.parent_id, p.jump_id, p.depth, p.jump_depth, p.conv_id, p.status, j.id, j.jump_id, j.jump_depth
		FROM turns p LEFT JOIN turns j ON j.id = p.jump_id WHERE p.id = ?`, id).
		Scan(&parent, &pjump, &p.depth, &p.jumpDepth, &p.conv, &p.status, &jid, &jjump, &jdepth)
	if errors.Is(err, sql.ErrNoRows) {
		return p, 0, 0, fmt.Errorf("storage: turn %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return p, 0, 0, fmt.Errorf("storage: turn %d: %w", id, err)
	}
	p.parent, p.jump = parent.Int64, pjump.Int64
	if !pjump.Valid {
		p.jump = id
	}
	if p.jump != p.id {
		if !jid.Valid {
			return p, 0, 0, fmt.Errorf("storage: turn %d: %w", p.jump, ErrNotFound)
		}
		jj := jjump.Int64
		if !jjump.Valid {
			jj = jid.Int64
		}
		if p.depth-p.jumpDepth == p.jumpDepth-int(jdepth.Int64) {
			return p, jj, int(jdepth.Int64), nil
		}
	}
	return p, p.id, p.depth, nil
}

// ancestorAt returns the ancestor of turn id (or id itself) at the given depth.
func ancestorAt(ctx context.Context, q querier, id int64, depth int) (int64, error) {
	p, err := readPos(ctx, q, id)
	if err != nil {
		return 0, err
	}
	for p.depth > depth {
		next := p.parent
		if p.jumpDepth >= depth && p.jump != p.id {
			next = p.jump
		}
		if p, err = readPos(ctx, q, next); err != nil {
			return 0, err
		}
	}
	return p.id, nil
}

// CreateBranch adds an empty branch (no turns) to a conversation.
func (s *Store) CreateBranch(ctx context.Context, convID, name string) (*Branch, error) {
	if err := ValidateBranchName(name); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	err := s.write(ctx, func(tx *wtx) error {
		if err := touch(ctx, tx, convID); err != nil {
			return err
		}
		if err := nameFree(ctx, tx, convID, name); err != nil {
			return err
		}
		t := fmtTime(now())
		_, err := tx.ExecContext(ctx, "INSERT INTO branches(conv_id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", convID, name, t, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.Branch(ctx, convID, name)
}

func nameFree(ctx context.Context, tx *wtx, convID, name string) error {
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM branches WHERE conv_id = ? AND name = ?", convID, name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("storage: branch %q already exists in conversation %q: %w", name, convID, ErrConflict)
	}
	return nil
}

// Fork creates branch name from source, sharing source's turns 0..at (at is the index of the
// last shared turn, HPD-Agent's ForkedAtMessageIndex). Nothing is copied: the new branch is
// one row whose tip is the existing turn at index at, found in O(log n) lookups. An empty
// source can only be forked at 0, giving an empty branch.
func (s *Store) Fork(ctx context.Context, convID, source, name string, at int) (*Branch, error) {
	if err := s.ForkOnly(ctx, convID, source, name, at); err != nil {
		return nil, err
	}
	return s.Branch(ctx, convID, name)
}

// ForkOnly is Fork without reading the new branch back: its computed fields (siblings,
// children, ancestry) come from every branch of the conversation, and a fork from the
// workbench needs only its name, so its cost stays flat however many branches there are.
func (s *Store) ForkOnly(ctx context.Context, convID, source, name string, at int) error {
	if err := ValidateBranchName(name); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if at < 0 {
		return fmt.Errorf("storage: turn index cannot be negative (got %d): %w", at, ErrInvalid)
	}
	return s.write(ctx, func(tx *wtx) error {
		src, err := branchByName(ctx, tx, convID, source)
		if err != nil {
			return err
		}
		if err := nameFree(ctx, tx, convID, name); err != nil {
			return err
		}
		var tip sql.NullInt64
		switch {
		case src.Length == 0 && at != 0:
			return fmt.Errorf("storage: cannot fork empty branch %q at index %d (must be 0): %w", source, at, ErrInvalid)
		case src.Length == 0:
		case at >= src.Length:
			return fmt.Errorf("storage: turn index %d out of range (0-%d) on branch %q: %w", at, src.Length-1, source, ErrInvalid)
		default:
			id, err := ancestorAt(ctx, tx, src.tipID.Int64, at)
			if err != nil {
				return err
			}
			tip = sql.NullInt64{Int64: id, Valid: true}
		}
		t := fmtTime(now())
		if _, err := tx.ExecContext(ctx, `INSERT INTO branches(conv_id, name, tip_id, forked_from, fork_turn_id, fork_index, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, convID, name, tip, src.ID, tip, at, t, t); err != nil {
			return fmt.Errorf("storage: fork %q from %q: %w", name, source, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE branches SET updated_at = ? WHERE id = ?", t, src.ID); err != nil {
			return err
		}
		return touch(ctx, tx, convID)
	})
}

// BranchRow is one branch's own fields (tip, length, redo depth, fork point) without the
// computed ones (siblings, children, ancestry: Branches computes those from every branch):
// what a pane's header needs after its branch moved, in indexed lookups.
func (s *Store) BranchRow(ctx context.Context, convID, name string) (*Branch, error) {
	b, err := branchByName(ctx, s.r, convID, name)
	if err != nil {
		return nil, err
	}
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM redo WHERE branch_id = ?", b.ID).Scan(&b.Redo); err != nil {
		return nil, fmt.Errorf("storage: redo of branch %q: %w", name, err)
	}
	return b, nil
}

// FreeBranchName is a name base-N no branch of the conversation has, N one more than
// the branches named base-<something> (the next free one after it when that is taken):
// an index range count and a lookup or two, not a read of every branch.
func (s *Store) FreeBranchName(ctx context.Context, convID, base string) (string, error) {
	var n int
	// names from "base-" up to (not including) "base." ('.' follows '-'): the prefix range
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM branches WHERE conv_id = ? AND name >= ? AND name < ?",
		convID, base+"-", base+".").Scan(&n); err != nil {
		return "", fmt.Errorf("storage: branch names of %q: %w", convID, err)
	}
	for i := n + 1; ; i++ {
		name := fmt.Sprintf("%s-%d", base, i)
		var taken int
		if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM branches WHERE conv_id = ? AND name = ?", convID, name).Scan(&taken); err != nil {
			return "", fmt.Errorf("storage: branch names of %q: %w", convID, err)
		}
		if taken == 0 {
			return name, nil
		}
	}
}

// DeleteBranch removes a branch. main is protected; a branch with child branches is refused
// (naming them) unless recursive, which deletes the subtree children first. Turns that
// only the deleted branches reached are deleted with their calls, attempts and the
// message contents nothing else uses; turns another branch still reaches (shared path,
// redo list, fork point) stay. It returns the deleted branch names in deletion order.
func (s *Store) DeleteBranch(ctx context.Context, convID, name string, recursive bool) ([]string, error) {
	if name == MainBranch {
		return nil, fmt.Errorf("storage: cannot delete the 'main' branch: %w", ErrInvalid)
	}
	runs, err := s.liveRuns(ctx)
	if err != nil {
		return nil, err
	}
	var deleted []string
	locks := s.deleteLocks()
	err = s.write(ctx, func(tx *wtx) error {
		deleted = deleted[:0]
		b, err := branchByName(ctx, tx, convID, name)
		if err != nil {
			return err
		}
		var gone reach
		var del func(id int64, name string) error
		del = func(id int64, name string) error {
			kids, err := childBranches(ctx, tx, id)
			if err != nil {
				return err
			}
			if len(kids) > 0 && !recursive {
				names := make([]string, len(kids))
				for i, k := range kids {
					names[i] = k.name
				}
				return fmt.Errorf("storage: cannot delete branch %q with %d child branches; delete children first: %s: %w",
					name, len(kids), strings.Join(names, ", "), ErrConflict)
			}
			for _, k := range kids {
				if err := del(k.id, k.name); err != nil {
					return err
				}
			}
			for _, r := range runs {
				if r.h.BranchID == id {
					return fmt.Errorf("%w; the branch was not deleted", busyError(name, r.h.Depth, r.h.ID, r.owner(), r.h.Started))
				}
			}
			if err := locks.take(id, name); err != nil {
				return err
			}
			if err := gone.add(ctx, tx, id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM branches WHERE id = ?", id); err != nil {
				return fmt.Errorf("storage: delete branch %q: %w", name, err)
			}
			deleted = append(deleted, name)
			return nil
		}
		if err := del(b.ID, b.Name); err != nil {
			return err
		}
		if _, err := prune(ctx, tx, convID, gone); err != nil {
			return err
		}
		return touch(ctx, tx, convID)
	})
	locks.release(err == nil)
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

type branchRef struct {
	id   int64
	name string
}

func childBranches(ctx context.Context, q querier, id int64) ([]branchRef, error) {
	return branchRefs(ctx, q, "SELECT id, name FROM branches WHERE forked_from = ? ORDER BY created_at, id", id)
}

// branchRefs runs query, which selects branches' id and name.
func branchRefs(ctx context.Context, q querier, query string, arg any) ([]branchRef, error) {
	rows, err := q.QueryContext(ctx, query, arg)
	if err != nil {
		return nil, fmt.Errorf("storage: branches: %w", err)
	}
	defer rows.Close()
	var out []branchRef
	for rows.Next() {
		var r branchRef
		if err := rows.Scan(&r.id, &r.name); err != nil {
			return nil, fmt.Errorf("storage: branches: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Branch returns one branch with its computed tree fields.
func (s *Store) Branch(ctx context.Context, convID, name string) (*Branch, error) {
	all, err := s.Branches(ctx, convID)
	if err != nil {
		return nil, err
	}
	for _, b := range all {
		if b.Name == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("storage: branch %q not found in conversation %q: %w", name, convID, ErrNotFound)
}

// Branches lists a conversation's branches (main first, then by creation) with sibling
// groups, children, ancestry and redo depth, from two queries.
func (s *Store) Branches(ctx context.Context, convID string) ([]*Branch, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT b.id, b.name, b.description, b.tip_id, b.forked_from, b.fork_index, b.fork_turn_id,
			b.created_at, b.updated_at, coalesce(t.depth + 1, 0), (SELECT count(*) FROM redo r WHERE r.branch_id = b.id)
		FROM branches b LEFT JOIN turns t ON t.id = b.tip_id WHERE b.conv_id = ?
		ORDER BY b.name <> 'main', b.created_at, b.id`, convID)
	if err != nil {
		return nil, fmt.Errorf("storage: branches of %q: %w", convID, err)
	}
	defer rows.Close()
	var out []*Branch
	byID := map[int64]*Branch{}
	for rows.Next() {
		b := &Branch{ConvID: convID, Children: []string{}, Ancestors: map[string]string{}}
		var forkIdx, forkTurn sql.NullInt64
		var created, updated string
		if err := rows.Scan(&b.ID, &b.Name, &b.Description, &b.tipID, &b.parentID, &forkIdx, &forkTurn,
			&created, &updated, &b.Length, &b.Redo); err != nil {
			return nil, fmt.Errorf("storage: branches of %q: %w", convID, err)
		}
		b.Tip, b.ForkTurn = nullKey(b.tipID), nullKey(forkTurn)
		if forkIdx.Valid {
			i := int(forkIdx.Int64)
			b.ForkIndex = &i
		}
		b.CreatedAt, b.UpdatedAt = parseTime(created), parseTime(updated)
		out = append(out, b)
		byID[b.ID] = b
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if _, err := s.Conversation(ctx, convID); err != nil {
			return nil, err
		}
	}
	// Sibling groups: forks sharing a source and fork index, source at slot 0, forks by
	// creation. An original branch shows the group of its latest fork (HPD-Agent rewrites
	// the source's fields on every fork); a fork keeps its own group's position.
	type gkey struct {
		src int64
		idx int
	}
	groups := map[gkey][]*Branch{}
	latest := map[int64]gkey{}
	for _, b := range out {
		if p, ok := byID[b.parentID.Int64]; ok && b.parentID.Valid {
			b.ForkedFrom = p.Name
			p.Children = append(p.Children, b.Name)
			k := gkey{p.ID, *b.ForkIndex}
			if len(groups[k]) == 0 {
				groups[k] = []*Branch{p}
			}
			groups[k] = append(groups[k], b)
			latest[p.ID] = k
		}
	}
	for _, b := range out {
		b.SiblingIndex, b.TotalSiblings = 0, 1
		var g []*Branch
		if b.parentID.Valid {
			g = groups[gkey{b.parentID.Int64, *b.ForkIndex}]
		} else if k, ok := latest[b.ID]; ok {
			g = groups[k]
		}
		for i, m := range g {
			if m == b {
				b.SiblingIndex, b.TotalSiblings = i, len(g)
				if i > 0 {
					b.PreviousSibling = g[i-1].Name
				}
				if i+1 < len(g) {
					b.NextSibling = g[i+1].Name
				}
			}
		}
		// Ancestors: {"0": root, "1": next, ...} down to the direct parent.
		var chain []string
		for p := byID[b.parentID.Int64]; b.parentID.Valid && p != nil; {
			chain = append(chain, p.Name)
			if !p.parentID.Valid {
				break
			}
			p = byID[p.parentID.Int64]
		}
		for i := range chain {
			b.Ancestors[strconv.Itoa(i)] = chain[len(chain)-1-i]
		}
	}
	return out, nil
}

// Siblings returns the sibling group of forks of source at index at: source first, then
// its forks at that index by creation.
func (s *Store) Siblings(ctx context.Context, convID, source string, at int) ([]string, error) {
	all, err := s.Branches(ctx, convID)
	if err != nil {
		return nil, err
	}
	out := []string{source}
	found := false
	for _, b := range all {
		found = found || b.Name == source
		if b.ForkedFrom == source && b.ForkIndex != nil && *b.ForkIndex == at {
			out = append(out, b.Name)
		}
	}
	if !found {
		return nil, fmt.Errorf("storage: branch %q not found in conversation %q: %w", source, convID, ErrNotFound)
	}
	return out, nil
}
