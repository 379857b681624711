package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/capture"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// The text forms of session ls, show, branches and pending.

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func printConversations(w io.Writer, list []storage.ConversationSummary) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no conversations")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tAGENT\tSTATUS\tMAIN\tTURNS\tBRANCHES\tUPDATED")
	for _, c := range list {
		st := string(c.Status)
		if k := keptSummary(c.Kept); k != "" {
			st += " (" + k + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", c.ID, clip(c.Title, 40), dash(c.Agent), st, c.MainLength, c.Turns, c.Branches, when(c.UpdatedAt))
	}
	tw.Flush()
}

// turnAttempts are the stored attempts of the turns shown (seed 003), in the order made.
func turnAttempts(ctx context.Context, s *storage.Store, conv string, turns []*storage.TurnNode, kept []keptTurn) ([]*storage.Attempt, error) {
	shown := map[string]bool{}
	for _, t := range turns {
		shown[t.Key] = true
	}
	for _, k := range kept {
		shown[k.Key] = true
	}
	all, err := s.Attempts(ctx, conv)
	if err != nil {
		return nil, err
	}
	out := []*storage.Attempt{}
	for _, a := range all {
		if shown[a.TurnKey] {
			out = append(out, a)
		}
	}
	return out, nil
}

// printAttempts lists a turn's attempts under it: number, step, score, the best mark and
// the summary (or why it failed).
func printAttempts(w io.Writer, key string, attempts []*storage.Attempt) {
	for _, a := range attempts {
		if a.TurnKey != key {
			continue
		}
		mark := ""
		if a.Best {
			mark = "  best"
		}
		fmt.Fprintf(w, "         attempt #%d of %s  score %s%s  %s\n", a.N, a.Step, strconv.FormatFloat(a.Score, 'g', -1, 64), mark, clip(a.Summary, 100))
	}
}

// printShow is 'session show' as text; db is the --db flag its retry hints repeat.
func printShow(w io.Writer, c *storage.Conversation, bs []*storage.Branch, branch string, turns []*storage.TurnNode, kept []keptTurn, attempts []*storage.Attempt, db string) {
	fmt.Fprintf(w, "%s  %s\n", c.ID, c.Title)
	fmt.Fprintf(w, "agent: %s   status: %s   created: %s   updated: %s\n", dash(c.Agent), c.Status, when(c.CreatedAt), when(c.UpdatedAt))
	for _, k := range c.MetadataKeys() {
		b, _ := json.Marshal(c.Metadata[k])
		fmt.Fprintf(w, "  %s = %s\n", k, b)
	}
	if c.BestAttempt != nil {
		fmt.Fprintf(w, "best attempt: #%d of %s in turn %s, score %s\n", c.BestAttempt.N, c.BestAttempt.Step, c.BestAttempt.TurnKey,
			strconv.FormatFloat(c.BestAttempt.Score, 'g', -1, 64))
	}
	fmt.Fprintln(w)
	printBranches(w, bs)
	fmt.Fprintf(w, "\nturns on %s:\n", branch)
	if len(turns) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	retriedAs := map[string]string{} // a kept turn's key -> the turn that retried it
	for _, t := range turns {
		if t.RetryOf != "" {
			retriedAs[t.RetryOf] = t.Key
		}
		score := ""
		if t.Score != nil {
			score = "  score " + strconv.FormatFloat(*t.Score, 'g', -1, 64)
		}
		retry := ""
		if t.RetryOf != "" {
			retry = ", retry of " + t.RetryOf
		}
		fmt.Fprintf(w, "  %s %3d  [%s] %s -> %s  (%d calls%s%s)\n", t.Status.Mark(), t.Index, t.Key, clip(string(t.Inputs), 60),
			clip(string(t.Outputs), 60), t.Calls, score, retry)
		printAttempts(w, t.Key, attempts)
	}
	if len(kept) == 0 {
		return
	}
	fmt.Fprintf(w, "\nkept beside %s (not in its history):\n", branch)
	for _, k := range kept {
		fmt.Fprintf(w, "  %s %3d  [%s] %s  %s  (%d calls)\n", k.Status.Mark(), k.Index, k.Key, k.Status, clip(string(k.Inputs), 50), k.Calls)
		if k.Owner != nil && k.Status == trace.StatusRunning {
			fmt.Fprintf(w, "         running in %s since %s\n", k.Owner, when(k.Started))
		}
		if k.FailedCall != "" {
			fmt.Fprintf(w, "         failed call: %s\n", k.FailedCall)
		}
		if k.Error != "" {
			fmt.Fprintf(w, "         %s\n", clip(k.Error, 200))
		}
		printAttempts(w, k.Key, attempts)
		switch {
		case capture.Recorded(c.Agent):
			// its program runs outside sessionbench: nothing here can run the turn again
			fmt.Fprintln(w, "         recorded by the proxy: not retried here")
		case retriedAs[k.Key] != "":
			fmt.Fprintf(w, "         retried as [%s] on %s\n", retriedAs[k.Key], branch)
		case k.Status.Retryable():
			fmt.Fprintf(w, "         retry: sessionbench session retry %s%s\n", k.Key, db)
		}
	}
}

// keptTurn is a turn kept beside a branch, with the call that failed it.
type keptTurn struct {
	*storage.TurnNode
	FailedCall string `json:"failed_call,omitempty"` // "c2 respond"
}

// keptTurns lists the turns begun on branch that did not complete, each with its
// failing call.
func keptTurns(ctx context.Context, s *storage.Store, conv, branch string) ([]keptTurn, error) {
	nodes, err := s.KeptTurns(ctx, conv, branch)
	if err != nil {
		return nil, err
	}
	out := make([]keptTurn, len(nodes))
	keys := make([]string, len(nodes))
	for i, n := range nodes {
		out[i].TurnNode, keys[i] = n, n.Key
	}
	turns, err := s.LoadTurnsWith(ctx, keys, storage.LoadOptions{NoRequests: true})
	if err != nil {
		return nil, err
	}
	for i, t := range turns {
		if c := trace.FailedCall(t.Calls); c != nil {
			out[i].FailedCall = c.ID + " " + dash(c.Path)
		}
	}
	return out, nil
}

// keptSummary counts a conversation's turns that did not complete, by status
// ("1 failed, 2 interrupted"); "" when there are none.
func keptSummary(kept map[trace.Status]int) string {
	var parts []string
	for _, st := range trace.TurnStatuses {
		if n := kept[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ")
}

func printBranches(w io.Writer, bs []*storage.Branch) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BRANCH\tTURNS\tFORKED FROM\tAT\tSIBLING\tCHILDREN\tREDO")
	for _, b := range bs {
		at, from := "-", dash(b.ForkedFrom)
		if b.ForkIndex != nil {
			at = strconv.Itoa(*b.ForkIndex)
		}
		name := strings.Repeat("  ", len(b.Ancestors)) + b.Name
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d/%d\t%s\t%d\n", name, b.Length, from, at, b.SiblingIndex, b.TotalSiblings,
			dash(strings.Join(b.Children, ",")), b.Redo)
	}
	tw.Flush()
}

// printPending lists in-flight turns; db is the --db flag their retry hints repeat.
func printPending(w io.Writer, ps []*storage.PendingTurn, db string) {
	if len(ps) == 0 {
		fmt.Fprintln(w, "no in-flight turns")
		return
	}
	for _, p := range ps {
		state := "interrupted, resumable: sessionbench session retry " + p.Key + db
		switch {
		case p.Status == trace.StatusRunning:
			state = fmt.Sprintf("running in %s", p.Owner)
		case p.Stale:
			state = "interrupted, stale (branch moved; discard only)"
		}
		fmt.Fprintf(w, "turn %s  %s/%s  index %d  started %s  %s recorded  %s\n", p.Key, p.ConvID, dash(p.Branch), p.Index, when(p.Started), termtext.Count(len(p.Calls), "call"), state)
	}
}

// clip folds s to one line (a column of a listing) and cuts it to n runes; on a
// terminal the writer Main installs sanitises it (terminal.go).
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
