// Package termtexttest holds, for tests, the text a model, a file or a server could use
// to act on a terminal, and a check that output carries none of it.
package termtexttest

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Hostile holds one sample of each kind of sequence that could act on a terminal or
// hide what text says.
var Hostile = []string{
	"\x1b]52;c;ZWNobyBwd25lZA==\x07",          // OSC 52: write the clipboard
	"\x1b]0;pwned title\x1b\\",                // OSC 0: set the window title (ST-terminated)
	"\x1b]2;title\x07",                        // OSC 2: the title, BEL-terminated
	"\x1b]8;;http://evil\x07link\x1b]8;;\x07", // OSC 8: a hyperlink
	"\x1bP+q544e\x1b\\",                       // DCS: request termcap
	"\x1b[2J\x1b[H",                           // CSI: clear screen, home
	"\x1b[31mred",                             // SGR from the model
	"\x1b[6n",                                 // CSI: report the cursor (answers on stdin)
	"\x9b31m",                                 // 8-bit CSI
	"\x9d0;t\x07",                             // 8-bit OSC
	"\xc2\x9b2J",                              // C1 CSI as UTF-8 (U+009B)
	"\x1b_apc\x1b\\",                          // APC
	"bell\x07back\x08space\rreturn\x7fdel",
	"user\u202Efdp.exe",       // RLO: reads "user" + "exe.pdf" reversed
	"\u2066isolate\u2069",     // LRI ... PDI
	"bad\xff\xfeutf8\xe2\x82", // invalid UTF-8, a sequence cut short
}

// Payload is every Hostile sample in one text, between words a test can find again.
var Payload = "before " + strings.Join(Hostile, " ") + " after"

// Problems lists every control sequence, control character, bidi formatting character
// or invalid UTF-8 byte in s. SGR (colours) is allowed when sgr is set (the workbench
// colours its own text); newlines and tabs always are.
func Problems(s string, sgr bool) []string {
	var out []string
	if !utf8.ValidString(s) {
		out = append(out, "invalid UTF-8")
	}
	p := ansi.GetParser()
	defer ansi.PutParser(p)
	state := byte(0)
	for len(s) > 0 {
		seq, width, n, newState := ansi.DecodeSequence(s, state, p)
		state = newState
		if width == 0 && len(seq) > 0 {
			switch {
			case seq == "\n" || seq == "\t":
			case sgr && strings.HasPrefix(seq, "\x1b[") && strings.HasSuffix(seq, "m"):
			default:
				out = append(out, fmt.Sprintf("control sequence %q", seq))
			}
		}
		for _, r := range seq {
			if r >= 0x80 && r <= 0x9f || r < 0x20 && r != '\n' && r != '\t' && r != 0x1b || r == 0x7f ||
				r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 {
				out = append(out, fmt.Sprintf("control %U in %q", r, seq))
			}
		}
		s = s[n:]
	}
	return out
}
