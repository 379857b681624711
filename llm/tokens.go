package llm

import (
	"fmt"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"

	"github.com/sessionbench/sessionbench/core/lm"
)

// The BPE tables come from those tiktoken-go-loader embeds so that counting never
// touches the network (tiktoken-go's default loader downloads them on first use), read
// by bpeLoader (bpeload.go), which loads them faster than the package's own loader.
func init() { tiktoken.SetBpeLoader(bpeLoader{}) }

// Chat-format overhead, as OpenAI documents it for its chat models (the "How to count
// tokens with tiktoken" cookbook): every message costs 3 tokens of framing
// (<|start|>{role}<|message|>...<|end|>, minus the role text which is counted
// separately), and every reply is primed with 3 more (<|start|>assistant<|message|>).
// Other providers frame messages differently, so counts for non-OpenAI models are
// estimates.
const (
	TokensPerMessage = 3
	TokensReplyPrime = 3
)

var (
	encMu    sync.Mutex
	encCache = map[string]*tiktoken.Tiktoken{}
)

// EncodingFor names the tiktoken encoding used for a model: cl100k_base for the older
// OpenAI chat and embedding models (gpt-4, gpt-4-*, gpt-3.5-*, text-embedding-*),
// o200k_base for everything else, including unknown and newer models. A routing prefix
// such as "openai/" (OpenRouter) is ignored.
func EncodingFor(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case m == "gpt-4", strings.HasPrefix(m, "gpt-4-"), strings.HasPrefix(m, "gpt-3.5"),
		strings.HasPrefix(m, "gpt-35"), strings.HasPrefix(m, "text-embedding-"):
		return tiktoken.MODEL_CL100K_BASE
	}
	return tiktoken.MODEL_O200K_BASE
}

// encoder returns the (cached) encoder for an encoding; building one parses the whole
// BPE table, which takes a noticeable fraction of a second.
func encoder(name string) (*tiktoken.Tiktoken, error) {
	encMu.Lock()
	defer encMu.Unlock()
	if e, ok := encCache[name]; ok {
		return e, nil
	}
	e, err := tiktoken.GetEncoding(name)
	if err != nil {
		return nil, fmt.Errorf("token counting: loading encoding %s: %w", name, err)
	}
	encCache[name] = e
	return e, nil
}

// CountText counts the tokens of a plain text for a model (no chat framing). Special
// token spellings such as "<|endoftext|>" in the text count as ordinary text.
func CountText(model, text string) (int, error) {
	c, err := counterFor(EncodingFor(model))
	if err != nil {
		return 0, err
	}
	return c.count(text), nil
}

// CountTokens counts a chat request: perMessage[i] is message i's tokens including its
// framing (TokensPerMessage + role + content), and total adds the reply priming
// (TokensReplyPrime), which is what OpenAI reports as prompt_tokens for plain messages.
func CountTokens(model string, msgs []lm.Message) (perMessage []int, total int, err error) {
	c, err := counterFor(EncodingFor(model))
	if err != nil {
		return nil, 0, err
	}
	perMessage = make([]int, len(msgs))
	for i, m := range msgs {
		n := TokensPerMessage + c.count(m.Role) + c.count(m.Content)
		perMessage[i] = n
		total += n
	}
	return perMessage, total + TokensReplyPrime, nil
}

// A conversation's requests repeat it: each request carries every earlier message again,
// and the wire pane counts the same history under five strategies. Encoding is by far
// the costly part of counting, so every encoding keeps the counts of the texts it saw.
// The cache holds the texts themselves (Go strings are immutable, so this is a
// reference, not a copy) and is bounded by their total size: when the newer generation
// fills up, the older one is dropped, so what is still in use survives (it is promoted
// on its next lookup) and a text nobody counts any more is released.
type tokenCounter struct {
	enc *tiktoken.Tiktoken

	mu       sync.Mutex
	cur, old map[string]int
	curBytes int
	limit    int // bytes per generation
}

// maxCountedBytes bounds the texts one generation of the cache references.
const maxCountedBytes = 64 << 20

var (
	countersMu sync.Mutex
	counters   = map[string]*tokenCounter{}
)

func counterFor(encoding string) (*tokenCounter, error) {
	countersMu.Lock()
	defer countersMu.Unlock()
	if c, ok := counters[encoding]; ok {
		return c, nil
	}
	e, err := encoder(encoding)
	if err != nil {
		return nil, err
	}
	c := &tokenCounter{enc: e, cur: map[string]int{}, limit: maxCountedBytes}
	counters[encoding] = c
	return c, nil
}

// count is len(EncodeOrdinary(text)), from the cache when text was counted before. A long
// text is counted line by line (see countLines), so one that grows (a system message
// holding the history as text) costs only its new lines.
func (c *tokenCounter) count(text string) int {
	if n, ok := c.lookup(text); ok {
		return n
	}
	var n int
	switch {
	case len(text) >= countByLinesFrom:
		n = c.countLines(text)
	case len(text) >= countByWordsFrom:
		n = c.countWords(text)
	default:
		n = len(c.enc.EncodeOrdinary(text))
	}
	c.mu.Lock()
	c.put(text, n)
	c.mu.Unlock()
	return n
}

// countByLinesFrom is the length from which a text is counted by its lines;
// countByWordsFrom the length from which one is counted by its words.
const (
	countByLinesFrom = 2048
	countByWordsFrom = 64
)

// countWords counts text in pieces cut before every space that a printable ASCII
// character other than a space follows, each piece's count cached (copied, so the text
// is not kept alive by it). A conversation's texts are new sentences made of words seen
// before: a history rendered under another strategy, a turn's question quoted in its
// reply, so counting a text never seen costs mostly lookups, not encoding (tiktoken's
// pattern matching was most of a cold preview). The cut is exact for cl100k_base's and
// o200k_base's patterns: the piece holding that character is a word (letters after at
// most one leading character), a contraction, a number of up to three digits or a run
// of punctuation (with line breaks or slashes after it, never a space), so it ends right
// before the space; the next piece starts there, and nothing looks behind. So matching
// restarts at the cut in both texts and the counts add up (TestCountWords holds the two
// to it).
func (c *tokenCounter) countWords(text string) int {
	total, start := 0, 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] > ' ' && text[i-1] < 0x7f {
			total += c.piece(text[start:i])
			start = i
		}
	}
	return total + c.piece(text[start:])
}

// piece is the count of a piece of a longer text, cached as a copy.
func (c *tokenCounter) piece(p string) int {
	if n, ok := c.lookup(p); ok {
		return n
	}
	n := len(c.enc.EncodeOrdinary(p))
	c.mu.Lock()
	c.put(strings.Clone(p), n)
	c.mu.Unlock()
	return n
}

// countLines counts text in pieces cut after a line break that a printable ASCII
// character other than a space and '/' follows. tiktoken splits a text into pieces with
// its pattern before encoding each piece alone, and no piece of cl100k_base's or
// o200k_base's pattern runs across such a cut: a word's optional first character is
// never \r or \n, numbers and contractions hold no newline, punctuation takes only
// newlines after it (o200k_base also slashes: hence '/'), and whitespace pieces end
// before the non-space character; no alternative looks behind, and the only lookahead,
// \s+(?!\S), never ends a piece on a newline (\s*[\r\n]+ comes first and takes the
// run). So matching restarts at the cut in both texts and the pieces' counts add up to
// the text's count (TestCountLines holds the two to it). The cut after "\n-" and
// "\n[" matters: history rendered as YAML or as sections starts its entries there.
// Each piece is cached, copied, so the text is not kept alive by it.
func (c *tokenCounter) countLines(text string) int {
	total, start := 0, 0
	piece := func(end int) {
		p := text[start:end]
		n, ok := c.lookup(p)
		if !ok {
			// a line not seen: its words likely were
			n = c.countWords(p)
			c.mu.Lock()
			c.put(strings.Clone(p), n)
			c.mu.Unlock()
		}
		total += n
		start = end
	}
	for i := 1; i < len(text); i++ {
		if text[i-1] == '\n' && startsPiece(text[i]) {
			piece(i)
		}
	}
	piece(len(text))
	return total
}

// startsPiece reports whether a cut after a line break may fall before byte b (see
// countLines).
func startsPiece(b byte) bool {
	return b > ' ' && b < 0x7f && b != '/'
}

// lookup finds a count in either generation, moving one found in the older generation
// to the newer.
func (c *tokenCounter) lookup(text string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.cur[text]
	if !ok {
		if n, ok = c.old[text]; ok {
			c.put(text, n)
		}
	}
	return n, ok
}

// put records a count (caller holds c.mu), starting a new generation when this one is full.
func (c *tokenCounter) put(text string, n int) {
	if _, ok := c.cur[text]; ok {
		return
	}
	if c.curBytes+len(text) > c.limit {
		c.old, c.cur, c.curBytes = c.cur, map[string]int{}, 0
	}
	c.cur[text] = n
	c.curBytes += len(text)
}

// ForgetCounts drops every cached token count; the encoders stay loaded. Benchmarks use
// it to measure what a fresh process pays for its first counts (the workbench loads the
// encoders in the background at start: PreloadEncodings).
func ForgetCounts() {
	countersMu.Lock()
	defer countersMu.Unlock()
	for _, c := range counters {
		c.mu.Lock()
		c.cur, c.old, c.curBytes = map[string]int{}, nil, 0
		c.mu.Unlock()
	}
}

// PreloadEncodings builds the encoders for these models in the background, so the first
// count (the wire pane, the demo model's usage, hence its recorded latency) does not pay
// for parsing a BPE table.
func PreloadEncodings(models ...string) {
	go func() {
		for _, m := range models {
			_, _ = encoder(EncodingFor(m))
		}
	}()
}

// EstimateUsage counts a call's tokens when the server reported none: the prompt as
// CountTokens does, the answer as plain text, marked Estimated. A count that cannot be
// made (no encoder) stays zero, still marked, so it is never shown as a real 0.
func EstimateUsage(model string, msgs []lm.Message, completion string) lm.Usage {
	u := lm.Usage{Estimated: true}
	if _, p, err := CountTokens(model, msgs); err == nil {
		u.PromptTokens = p
	}
	if c, err := CountText(model, completion); err == nil {
		u.CompletionTokens = c
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}
