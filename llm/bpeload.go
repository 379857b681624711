package llm

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// bpeLoader is tiktoken-go's BpeLoader over the tables tiktoken-go-loader embeds, read
// as its OfflineLoader reads them (one "base64-token rank" pair a line) but in one pass:
// no copy of the file split into lines, the tokens decoded into one buffer that a single
// string then holds, the map sized for them. Building an encoder waits on this, and
// `run` with the demo model or a server that reports no usage counts tokens before its
// first answer: the o200k table loads in about a third of the time.
type bpeLoader struct{}

func (bpeLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	name := path.Base(file)
	data, err := assets.Assets.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("token table %s: %w", name, err)
	}
	return parseBPE(name, data)
}

// parseBPE reads a tiktoken table: "base64 rank" lines, empty ones ignored.
func parseBPE(name string, data []byte) (map[string]int, error) {
	n := bytes.Count(data, []byte{'\n'}) + 1
	type token struct{ end, rank int } // of buf
	toks := make([]token, 0, n)
	buf := make([]byte, 0, len(data)) // decoded tokens are shorter than their base64
	for line := 1; len(data) > 0; line++ {
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(l) == 0 {
			continue
		}
		sp := bytes.IndexByte(l, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("token table %s line %d: want a token and a rank", name, line)
		}
		var err error
		if buf, err = base64.StdEncoding.AppendDecode(buf, l[:sp]); err != nil {
			return nil, fmt.Errorf("token table %s line %d: %w", name, line, err)
		}
		rank, ok := atoi(l[sp+1:])
		if !ok {
			return nil, fmt.Errorf("token table %s line %d: rank %q is not a number", name, line, l[sp+1:])
		}
		toks = append(toks, token{len(buf), rank})
	}
	all := string(buf)
	ranks := make(map[string]int, len(toks))
	start := 0
	for _, t := range toks {
		ranks[all[start:t.end]] = t.rank
		start = t.end
	}
	return ranks, nil
}

// atoi reads a non-negative decimal number.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
