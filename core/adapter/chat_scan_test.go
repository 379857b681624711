package adapter

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// sameParse compares the scan with the line-by-line parse: whenever the scan answers,
// its values must be exactly the general path's (kinds included).
func sameParse(t *testing.T, s *sig.Signature, completion string) (scanned bool) {
	t.Helper()
	got, ok := scanChat(s, completion)
	if !ok {
		return false
	}
	want, err := parseChatLines(s, completion)
	if err != nil {
		t.Fatalf("%q: the scan parsed %s, the line parse failed: %v", completion, py.Repr(got), err)
	}
	if py.Repr(got) != py.Repr(want) || !py.Same(got, want) {
		t.Fatalf("%q: scan %s, line parse %s", completion, py.Repr(got), py.Repr(want))
	}
	got.Range(func(k string, v any) bool {
		w, _ := want.Get(k)
		if sig.KindName(v) != sig.KindName(w) {
			t.Fatalf("%q: field %s is %s by the scan, %s by the line parse", completion, k, sig.KindName(v), sig.KindName(w))
		}
		return true
	})
	return true
}

func TestScanChatMatchesLines(t *testing.T) {
	num := sig.New("N", "", []sig.Field{field("q", "str", "")}, []sig.Field{
		field("a", "str", ""), field("n", "int", ""), field("x", "float", ""), field("ok", "bool", ""),
	})
	cases := []struct {
		name       string
		completion string
		scanned    bool // whether the scan is expected to answer itself
	}{
		{"plain", "[[ ## a ## ]]\nhello\n\n[[ ## n ## ]]\n3\n\n[[ ## x ## ]]\n0.5\n\n[[ ## ok ## ]]\n1\n\n[[ ## completed ## ]]\n", true},
		{"text on the header line", "[[ ## a ## ]] hello\nworld\n[[ ## n ## ]] 3\n[[ ## x ## ]] 2\n[[ ## ok ## ]] 0", true},
		{"header line ends in blanks, text follows", "[[ ## a ## ]] hello  \nworld\n[[ ## n ## ]]\n3\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n0", false},
		{"header line ends in blanks, nothing follows", "[[ ## a ## ]] hello  \n\n[[ ## n ## ]]\n3\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n0", true},
		{"prose before and unknown sections", "Sure!\n[[ ## zz ## ]]\nno\n[[ ## a ## ]]\n  hi  \n[[ ## n ## ]]\n-7\n[[ ## x ## ]]\n1e3\n[[ ## ok ## ]]\n1", true},
		{"first section wins", "[[ ## a ## ]]\none\n[[ ## a ## ]]\ntwo\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n-0.0\n[[ ## ok ## ]]\n1", true},
		{"indented header", "[[ ## a ## ]]\nx\n  [[ ## n ## ]]\n1\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", false},
		{"header in the middle of a line", "[[ ## a ## ]]\nsee [[ ## n ## ]] here\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1.5\n[[ ## ok ## ]]\n0", true},
		{"crlf", "[[ ## a ## ]]\r\nx\r\n[[ ## n ## ]]\r\n1\r\n[[ ## x ## ]]\r\n1\r\n[[ ## ok ## ]]\r\n1", false},
		{"line separator", "[[ ## a ## ]]\nx\u2028y\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", false},
		{"next line", "[[ ## a ## ]]\nx\u0085y\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", false},
		{"unicode text and blanks", "[[ ## a ## ]]\n\u3000héllo wörld\u3000\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", true},
		{"non-ASCII name", "[[ ## aé ## ]]\nx\n[[ ## a ## ]]\ny\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", false},
		{"missing field", "[[ ## a ## ]]\nx\n[[ ## n ## ]]\n1", false},
		{"leading zero", "[[ ## a ## ]]\nx\n[[ ## n ## ]]\n007\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", false},
		{"float for an int", "[[ ## a ## ]]\nx\n[[ ## n ## ]]\n2.0\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", false},
		{"word for a bool", "[[ ## a ## ]]\nx\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\nTrue", false},
		{"int too large", "[[ ## a ## ]]\nx\n[[ ## n ## ]]\n99999999999999999999\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", false},
		{"float overflow", "[[ ## a ## ]]\nx\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1e400\n[[ ## ok ## ]]\n1", false},
		{"empty text", "[[ ## a ## ]]\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]\n1", true},
		{"headers only at the end", "[[ ## a ## ]]\nx\n[[ ## n ## ]]\n1\n[[ ## x ## ]]\n1\n[[ ## ok ## ]]", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sameParse(t, num, c.completion); got != c.scanned {
				t.Errorf("scanned = %v, want %v", got, c.scanned)
			}
			// ParseChat gives the line parse's answer or error either way.
			got, err := ParseChat(num, c.completion)
			want, werr := parseChatLines(num, c.completion)
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || py.Repr(got) != py.Repr(want) {
				t.Errorf("ParseChat = %s, %v; want %s, %v", py.Repr(got), err, py.Repr(want), werr)
			}
		})
	}
}

// The numbers the scan reads itself are read as literal_eval reads them.
func TestPlainNumber(t *testing.T) {
	for _, text := range []string{"0", "-0", "7", "-12", "9223372036854775807", "0.5", "-0.25", "1e3", "1E-3", "2.5e+10",
		"0.1", "123456789.123456789", "5e-324", "0.9", "-0.9", "3.14159", "1.7976931348623157e308", "4.9e-324",
		"123456789012345.6", "1234567890123456.7", "0.000001", "1e22", "1e23", "9007199254740993", "9007199254740993.0",
		"2.2250738585072011e-308", "1e-22", "1e-23", "123e-20", "99999999999999999", "999999999999999999",
		"1000000000000000000", "-9223372036854775807", "0.1e1", "12.5E-1", "1e0005", "1e-0005"} {
		f, n, isFloat, ok := plainNumber(text)
		if !ok {
			t.Fatalf("%q: not plain", text)
		}
		want, err := py.LiteralEval(text, newDict)
		if err != nil {
			t.Fatal(err)
		}
		var got any = n
		if isFloat {
			got = f
		}
		if !py.Same(got, want) || sig.KindName(got) != sig.KindName(want) {
			t.Errorf("%q: %v (%s), literal_eval %v (%s)", text, got, sig.KindName(got), want, sig.KindName(want))
		}
		if isFloat {
			if want, _ := strconv.ParseFloat(text, 64); math.Float64bits(f) != math.Float64bits(want) {
				t.Errorf("%q: %v, strconv %v", text, f, want)
			}
		}
		if RepairLoads(text) != "" {
			t.Errorf("%q: json_repair finds structure in a bare number", text)
		}
	}
	for _, text := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1_000", "0x10", "inf", "NaN", " 1", "1 ", "9223372036854775808", "1e400"} {
		if _, _, _, ok := plainNumber(text); ok {
			t.Errorf("%q: read as a plain number", text)
		}
	}
	if f, _, _, _ := plainNumber("-0.0"); !math.Signbit(f) {
		t.Error("-0.0 lost its sign")
	}
}

// FuzzScanChat: on any completion the scan either defers or agrees with the line parse.
func FuzzScanChat(f *testing.F) {
	for _, seed := range []string{
		"[[ ## a ## ]]\nx\n[[ ## n ## ]]\n1\n[[ ## completed ## ]]",
		"[[ ## a ## ]] x  \ny\n[[ ## n ## ]]\n-1e5", "\n[[ ## a ## ]]\n\n[[ ## n ## ]]\n0\n", "[[ ## a ## ]]\tx\n[[ ## n ## ]] 3",
	} {
		f.Add(seed)
	}
	s := sig.New("S", "", []sig.Field{field("q", "str", "")}, []sig.Field{field("a", "str", ""), field("n", "float", "")})
	f.Fuzz(func(t *testing.T, completion string) {
		if strings.Count(completion, "\n") > 200 {
			return
		}
		sameParse(t, s, completion)
	})
}

// hasOtherLineBreaks looks at sixteen and eight bytes at a time and at the last eight:
// every boundary Python's splitlines knows besides \n is found wherever it sits in a
// text of any length (each offset in a word, across two words, in the tail), and text
// of \n, \t and other bytes is not mistaken for one.
func TestHasOtherLineBreaks(t *testing.T) {
	breaks := []string{"\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\u0085", "\u2028", "\u2029"}
	plain := []string{"\n", "\t", "\x1f", "\x00", "\x7f", " ", "é", "\u2027", "\u202a", "\u0084", "\x0e", "\x1b",
		"\x0a", "\x2b", "\x2d", "\x3c", "\x4d", "\u00a0", "\u00c2", "\u0142", "\u2000", "\ue285", "\x8b", "\x9d", "\xc2", "\xe2\x80"}
	filler := strings.Repeat("a\nb\t", 12)
	for n := range 41 {
		for pad := 0; pad <= n; pad++ {
			for _, br := range breaks {
				if s := filler[:pad] + br + filler[:n-pad]; !hasOtherLineBreaks(s) {
					t.Fatalf("%q: the break %q at %d is not found", s, br, pad)
				}
			}
			for _, p := range plain {
				if s := filler[:pad] + p + filler[:n-pad]; hasOtherLineBreaks(s) {
					t.Fatalf("%q: %q at %d taken for a line break", s, p, pad)
				}
			}
		}
	}
}

// mayBreakLine flags exactly its bytes, whatever their neighbours: every byte value at
// every position of a word filled with every other value.
func TestMayBreakLineBytes(t *testing.T) {
	flagged := func(c byte) bool {
		switch c {
		case 0x0b, 0x0c, 0x0d, 0x0e, 0x1b, 0x1c, 0x1d, 0x1e, 0xc2, 0xe2:
			return true
		}
		return false
	}
	for c := range 256 {
		for fill := range 256 {
			for p := range 8 {
				x := uint64(0)
				for q := range 8 {
					b := uint64(fill)
					if q == p {
						b = uint64(c)
					}
					x |= b << (8 * q)
				}
				got := mayBreakLine(x)
				for q := range 8 {
					b := byte(fill)
					if q == p {
						b = byte(c)
					}
					if (got>>(8*q+7))&1 == 1 != flagged(b) {
						t.Fatalf("byte %#x at %d among %#x: flagged %v", b, q, fill, !flagged(b))
					}
				}
			}
		}
	}
}

// strip is py.Strip: every text of up to three pieces among blanks, letters, controls
// and non-ASCII spaces and letters.
func TestStripIsPythons(t *testing.T) {
	pieces := []string{"", "a", "x y", " ", "\t", "\n", "\v", "\f", "\r", "\x1c", "\x1f", "\x00", "\x0e", "\x7f", "\u0085",
		"\u00a0", "\u3000", "\u2028", "é", "\xff", "!"}
	for c := 0; c < 256; c++ {
		pieces = append(pieces, string([]byte{byte(c)}))
	}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range []string{"", " ", "\u3000", "z", "\x1e"} {
				for _, s := range []string{a + b + c, c + a + b, a + c + b} {
					if got, want := strip(s), py.Strip(s); got != want {
						t.Fatalf("strip(%q) = %q, py.Strip %q", s, got, want)
					}
				}
			}
		}
	}
}

// indexHeader finds what strings.Index finds, before and after it gives up on brackets.
func TestIndexHeader(t *testing.T) {
	texts := []string{"", "[", "[[ ## ", "x[[ ## a", "[[[ ## ", "[[ #", "a [b] [[c]] [[ ## x ## ]]",
		strings.Repeat("[", 20) + " ## ", strings.Repeat("[x", 7) + "[[ ## n", strings.Repeat("[x", 8) + "[[ ## n",
		strings.Repeat("[x", 9) + "[[ ## n", strings.Repeat("[[ #", 30) + "[[ ## end", strings.Repeat("[ ", 40)}
	for _, text := range texts {
		for start := range 9 {
			misses := start
			if got, want := indexHeader(text, &misses), strings.Index(text, headerOpen); got != want {
				t.Errorf("indexHeader(%q) after %d misses = %d, want %d", text, start, got, want)
			}
		}
	}
}

// wordLen is the table's count, eight bytes at a time: every byte value after runs of
// every length, and notWordBytes flags exactly the other bytes whatever their neighbours.
func TestWordLen(t *testing.T) {
	for c := range 256 {
		for n := range 20 {
			s := strings.Repeat("aZ_09", 4)[:n] + string([]byte{byte(c)}) + "tail"
			want := n
			if wordByte[c] {
				want = n + 1 + len("tail")
			}
			if got := wordLen(s); got != want {
				t.Fatalf("wordLen(%q) = %d, want %d", s, got, want)
			}
		}
		for fill := range 256 {
			for p := range 8 {
				var x uint64
				for q := range 8 {
					b := uint64(fill)
					if q == p {
						b = uint64(c)
					}
					x |= b << (8 * q)
				}
				got := notWordBytes(x)
				for q := range 8 {
					b := byte(fill)
					if q == p {
						b = byte(c)
					}
					if (got>>(8*q+7))&1 == 1 == wordByte[b] {
						t.Fatalf("byte %#x at %d among %#x: flagged %v", b, q, fill, wordByte[b])
					}
				}
			}
		}
	}
}

// Every value text the scan reads itself or leaves to ParseValue parses as the line
// parse does it, for each scalar type: the same value of the same kind, or the same error.
func TestScanChatValues(t *testing.T) {
	texts := []string{"0.9", " 0.90 ", "1e3", "1E3", "-0", "-0.0", "0", "1", "2", "-7", "007", "0.1e1", "12.5E-1", "1e-400",
		"1e400", "-1e400", "nan", "NaN", "inf", "-inf", "Infinity", "99999999999999999999", "9223372036854775807",
		"9223372036854775808", "-9223372036854775807", "123456789012345678", "1234567890123456.7", "0.30000000000000004",
		"5e-324", "2.2250738585072011e-308", "0x10", "1_000", "+1", ".5", "5.", "1e", "True", "false", "None", "", "\t",
		"１２", "\u00a01.5\u00a0", "\u30001\u3000", "1.5\n", "3 apples", "[1]", "'1'", "\"2\""}
	for _, typ := range []string{"str", "int", "float", "bool"} {
		s := sig.New("S", "", []sig.Field{field("q", "str", "")}, []sig.Field{field("a", "str", ""), field("v", typ, "")})
		for _, text := range texts {
			completion := "[[ ## a ## ]]\nx\n\n[[ ## v ## ]]\n" + text + "\n\n[[ ## completed ## ]]\n"
			sameParse(t, s, completion)
			got, err := ParseChat(s, completion)
			want, werr := parseChatLines(s, completion)
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || py.Repr(got) != py.Repr(want) {
				t.Errorf("%s %q: ParseChat = %s, %v; want %s, %v", typ, text, py.Repr(got), err, py.Repr(want), werr)
			}
			if err == nil {
				g, _ := got.Get("v")
				w, _ := want.Get("v")
				gf, gok := g.(float64)
				wf, wok := w.(float64)
				if sig.KindName(g) != sig.KindName(w) || gok && wok && math.Float64bits(gf) != math.Float64bits(wf) {
					t.Errorf("%s %q: %#v (%s), line parse %#v (%s)", typ, text, g, sig.KindName(g), w, sig.KindName(w))
				}
			}
		}
	}
	// -2**63 is an int64 to the scan; the line parse's literal_eval negates 2**63, too
	// large for an int64, and keeps it as a json.Number. The same Python int either way.
	s := sig.New("S", "", []sig.Field{field("q", "str", "")}, []sig.Field{field("v", "int", "")})
	if got, err := ParseChat(s, "[[ ## v ## ]]\n-9223372036854775808"); err != nil || !py.Same(got, sig.NewMap("v", int64(math.MinInt64))) {
		t.Errorf("-2**63: %s, %v", py.Repr(got), err)
	}
}
