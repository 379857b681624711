package ui

import (
	"context"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// The list filters in a command per key typed, and commands answer in any order: the
// rows shown are those the filter typed matches, whatever order its matches come back
// in (the matches for "e" coming after those for "e2e" once showed "untitled" under the
// filter "e2e").
func TestConvListFilterMatchesComeInAnyOrder(t *testing.T) {
	th := themes.Dark()
	e := &env{ctx: context.Background(), keys: DefaultKeys(), st: &stylesheet{theme: th, s: th.Styles()}, status: &statusBar{}}
	now := time.Now()
	c := newConvList(e, []sessions.ConversationInfo{
		{ID: "c1", Title: "e2e story", Agent: "SupportAgent", Updated: now},
		{ID: "c2", Title: "untitled", Agent: "SupportAgent", Updated: now.Add(-time.Minute)},
	})
	c.SetSize(100, 20)
	var late []tea.Cmd
	for _, k := range []tea.KeyPressMsg{{Code: '/', Text: "/"}, {Code: 'e', Text: "e"}, {Code: '2', Text: "2"}, {Code: 'e', Text: "e"}} {
		if cmd := c.Update(k); cmd != nil {
			late = append(late, cmd)
		}
	}
	// the commands' messages, the last typed first
	for _, cmd := range slices.Backward(late) {
		for _, msg := range drain(cmd) {
			c.Update(msg)
		}
	}
	c.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	var shown []string
	for _, it := range c.list.VisibleItems() {
		shown = append(shown, it.(convItem).c.Title)
	}
	if !slices.Equal(shown, []string{"e2e story"}) {
		t.Errorf("under the filter %q the list shows %q, want only \"e2e story\"", c.list.FilterValue(), shown)
	}
}
