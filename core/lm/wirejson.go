package lm

import "unicode/utf8"

// A chat message's JSON as OpenAI clients put it on the wire: the go-openai client
// marshals a message with encoding/json, so {"role":…,"content":…}, content left out
// when empty, strings with encoding/json's HTML escaping. llm writes request bodies with
// it (a 1,000-turn request is 2,000 messages: encoding/json took 4 ms for what this
// writes in a fraction of one), and storage keeps a body as a reference to its messages
// when they are exactly this (storage/rawbody.go). It is this package's own, so bodies
// stored by one Go version are rebuilt the same by another.

// AppendMessageJSON appends m (whose Extra must be empty: its keys are not written) as
// the OpenAI client encodes a chat message.
func AppendMessageJSON(dst []byte, m Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = AppendJSONString(dst, m.Role)
	if m.Content != "" {
		dst = append(dst, `,"content":`...)
		dst = AppendJSONString(dst, m.Content)
	}
	return append(dst, '}')
}

// plainASCII marks the ASCII bytes a JSON string holds as they are: not a control
// character, quote or backslash, nor <, > or & (escaped as encoding/json escapes HTML).
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// AppendJSONString appends s as a JSON string as encoding/json writes it with its HTML
// escaping: <, > and & as \u003c..., control characters as \n, \t... or \u00XX,
// U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if plainASCII[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
