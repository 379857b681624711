package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// hostile holds the sequences a model or file could use to act on the terminal.
var hostile = []string{
	"\x1b]52;c;ZWNobyBwd25lZA==\x07", // OSC 52: write the clipboard
	"\x1b]0;pwned title\x1b\\",       // OSC 0: set the window title (ST-terminated)
	"\x1b]8;;http://evil\x07link\x1b]8;;\x07",
	"\x1bP+q544e\x1b\\", // DCS: request termcap
	"\x1b[2J\x1b[H",     // CSI: clear screen, home
	"\x1b[31mred",       // SGR from the model
	"\x9b31m",           // 8-bit CSI
	"\x9d0;t\x07",       // 8-bit OSC
	"\x1b_apc\x1b\\",    // APC
	"bell\x07back\x08space\rreturn\x7fdel",
}

func TestSanitizeRemovesEveryControl(t *testing.T) {
	for _, h := range hostile {
		got := ui.Sanitize("before " + h + " after")
		for _, r := range got {
			if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f {
				t.Errorf("Sanitize(%q) kept control %U: %q", h, r, got)
			}
		}
		if !strings.Contains(got, "before") || !strings.Contains(got, "after") {
			t.Errorf("Sanitize(%q) lost the text: %q", h, got)
		}
	}
	cases := map[string]string{
		"plain":         "plain",
		"a\tb":          "a    b",
		"crlf\r\nline":  "crlf\nline",
		"esc\x1b[1m":    "esc␛[1m",
		"bad\xffutf8":   "bad\uFFFDutf8",
		"emoji 👍 ok":    "emoji 👍 ok",
		"two\nlines":    "two\nlines",
		"nul\x00":       "nul␀",
		"c1\u0085 next": "c1\uFFFD next",
	}
	for in, want := range cases {
		if got := ui.Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// Model text with escape sequences, shown everywhere the workbench draws it (transcript,
// call tree, call detail, wire pane, navigator, conversation list), never reaches the
// terminal: the only sequences in the frame are the workbench's own colours (SGR).
func TestHostileModelTextNeverReachesOutput(t *testing.T) {
	payload := strings.Join(hostile, " ")
	b := uitest.New()
	ctx := context.Background()
	if _, err := b.NewConversation(ctx, "support", "title "+payload); err != nil {
		t.Fatal(err)
	}
	call := uitest.CallTree("t0", 3)
	call.Path = "agent." + payload
	call.Error = "failed: " + payload
	call.Completion = payload
	call.Outputs = sig.NewMap("answer", payload)
	call.Messages = []lm.Message{{Role: "system", Content: payload}, {Role: "user" + payload, Content: payload}}
	call.History = sig.History{Messages: []*sig.Map{sig.NewMap("question", payload)}}
	turn := &trace.Turn{Inputs: sig.NewMap("question", "q "+payload), Outputs: sig.NewMap("reply", "# heading "+payload+"\n\n- item "+payload),
		Calls: []*trace.Call{call}}
	if _, err := b.AddTurn("c1", "main", turn); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, b, 140, 60)
	hs.press("enter")
	screens := []string{hs.raw()}
	for _, keys := range [][]string{{"esc", "enter"}, {"enter"}, {"esc", "esc", "s", "c"}, {"esc", "b"}, {"esc", "L"}} {
		hs.press(keys...)
		screens = append(screens, hs.raw())
	}
	hs.press("esc", "esc", "esc", "E")
	screens = append(screens, hs.raw())
	for i, s := range screens {
		checkOnlySGR(t, i, s)
	}
	if !strings.Contains(ansi.Strip(screens[0]), "␛]52;c;") {
		t.Errorf("the hostile text should stay visible in its harmless form:\n%s", ansi.Strip(screens[0]))
	}
}

// checkOnlySGR walks every escape sequence in s and fails on anything but SGR.
func checkOnlySGR(t *testing.T, screen int, s string) {
	t.Helper()
	p := ansi.GetParser()
	defer ansi.PutParser(p)
	state := byte(0)
	for len(s) > 0 {
		seq, width, n, newState := ansi.DecodeSequence(s, state, p)
		state = newState
		if width == 0 && len(seq) > 0 {
			switch {
			case seq == "\n":
			case strings.HasPrefix(seq, "\x1b[") && strings.HasSuffix(seq, "m"):
			default:
				t.Errorf("screen %d: control sequence %q reached the output", screen, seq)
			}
		}
		for _, r := range seq {
			if r >= 0x80 && r <= 0x9f || r == 0x07 || r == 0x08 || r == 0x7f || r == '\r' {
				t.Errorf("screen %d: control %U reached the output in %q", screen, r, seq)
			}
		}
		s = s[n:]
	}
}
