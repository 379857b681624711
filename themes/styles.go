package themes

import "charm.land/lipgloss/v2"

// Styles are the lipgloss styles of every element the workbench draws, derived from a
// theme's palette once (styles are values; copying them is cheap).
type Styles struct {
	Text, Muted, Accent, Title lipgloss.Style
	Error, Warning, Success    lipgloss.Style
	Header, Status, StatusErr  lipgloss.Style
	HelpKey, HelpDesc, HelpSep lipgloss.Style

	Pane, PaneFocused lipgloss.Style // bordered boxes
	PaneTitle         lipgloss.Style

	UserLabel, AssistantLabel, SystemLabel lipgloss.Style
	Selected, Cursor                       lipgloss.Style
	TreeBranch, TreePath, TreeMeta         lipgloss.Style
	DiffAdd, DiffDel                       lipgloss.Style
	Tip                                    lipgloss.Style
}

// Styles derives the element styles from t's palette.
func (t Theme) Styles() Styles {
	p := t.Colors
	fg := lipgloss.NewStyle().Foreground(C(p.Fg))
	border := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(C(p.Border))
	return Styles{
		Text:    fg,
		Muted:   lipgloss.NewStyle().Foreground(C(p.Muted)),
		Accent:  lipgloss.NewStyle().Foreground(C(p.Accent)),
		Title:   lipgloss.NewStyle().Foreground(C(p.Title)).Bold(true),
		Error:   lipgloss.NewStyle().Foreground(C(p.Error)).Bold(true),
		Warning: lipgloss.NewStyle().Foreground(C(p.Warning)),
		Success: lipgloss.NewStyle().Foreground(C(p.Success)),

		Header:    lipgloss.NewStyle().Foreground(C(p.StatusFg)).Background(C(p.StatusBg)).Bold(true),
		Status:    lipgloss.NewStyle().Foreground(C(p.StatusFg)).Background(C(p.StatusBg)),
		StatusErr: lipgloss.NewStyle().Foreground(C(p.Error)).Background(C(p.StatusBg)).Bold(true),
		HelpKey:   lipgloss.NewStyle().Foreground(C(p.Accent)),
		HelpDesc:  lipgloss.NewStyle().Foreground(C(p.Muted)),
		HelpSep:   lipgloss.NewStyle().Foreground(C(p.Border)),

		Pane:        border,
		PaneFocused: border.BorderForeground(C(p.BorderFocus)),
		PaneTitle:   lipgloss.NewStyle().Foreground(C(p.Title)).Bold(true),

		UserLabel:      lipgloss.NewStyle().Foreground(C(p.User)).Bold(true),
		AssistantLabel: lipgloss.NewStyle().Foreground(C(p.Assistant)).Bold(true),
		SystemLabel:    lipgloss.NewStyle().Foreground(C(p.System)).Bold(true),
		Selected:       lipgloss.NewStyle().Foreground(C(p.SelectionFg)).Background(C(p.SelectionBg)),
		Cursor:         lipgloss.NewStyle().Foreground(C(p.Accent)).Bold(true),
		TreeBranch:     lipgloss.NewStyle().Foreground(C(p.Border)),
		TreePath:       fg,
		TreeMeta:       lipgloss.NewStyle().Foreground(C(p.Muted)),
		DiffAdd:        lipgloss.NewStyle().Foreground(C(p.DiffAdd)),
		DiffDel:        lipgloss.NewStyle().Foreground(C(p.DiffDel)),
		Tip:            lipgloss.NewStyle().Foreground(C(p.Tip)).Bold(true),
	}
}
