package llm

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// gen makes plausible typed values from a call's inputs. Choices come from a seeded
// sequence, so the same inputs always produce the same values.
type gen struct {
	state  uint64
	inputs *sig.Map
	words  []string // content words of the inputs, in order
	main   string   // the first non-empty string input
	all    string   // every input value, lowercased, for matching options
}

func newGen(seed uint64, inputs *sig.Map) *gen {
	g := &gen{state: seed, inputs: inputs}
	var texts []string
	inputs.Range(func(k string, v any) bool {
		if _, isHist := v.(sig.History); isHist {
			return true
		}
		s := py.Text(v)
		if str, ok := v.(string); ok && g.main == "" && strings.TrimSpace(str) != "" {
			g.main = strings.TrimSpace(str)
		}
		texts = append(texts, s)
		return true
	})
	joined := strings.Join(texts, "\n")
	g.all = strings.ToLower(joined)
	g.words = keywords(joined, 6)
	return g
}

// next is splitmix64: a well-mixed sequence from the seed.
func (g *gen) next() uint64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (g *gen) intn(n int) int { return int(g.next() % uint64(n)) }

func (g *gen) word(i int) string {
	if len(g.words) == 0 {
		return []string{"request", "details", "issue", "context"}[i%4]
	}
	return g.words[i%len(g.words)]
}

// some returns up to n content words, never none.
func (g *gen) some(n int) []string {
	if len(g.words) == 0 {
		return []string{g.word(0)}
	}
	return g.words[:min(n, len(g.words))]
}

func (g *gen) topic() string {
	switch len(g.words) {
	case 0:
		return "your request"
	case 1:
		return g.words[0]
	}
	return g.words[0] + " and " + g.words[1]
}

// value makes a value that fits the field's type.
func (g *gen) value(f sig.Field) any {
	t := f.Type
	if t == nil {
		t = sig.TStr
	}
	return g.typed(f, t, 0)
}

func (g *gen) typed(f sig.Field, t *sig.Type, depth int) any {
	switch t.Kind {
	case sig.KindStr, sig.KindAny:
		if depth > 0 {
			return g.word(g.intn(8))
		}
		return g.str(f)
	case sig.KindInt:
		return g.integer(f)
	case sig.KindFloat:
		return g.float(f)
	case sig.KindBool:
		return g.intn(4) != 0 // mostly True: checks in demos usually pass
	case sig.KindNone:
		return nil
	case sig.KindHistory:
		return sig.History{}
	case sig.KindLiteral:
		return g.literal(t.Lits)
	case sig.KindUnion, sig.KindPipeUnion:
		for _, a := range t.Args {
			if a.Kind != sig.KindNone {
				return g.typed(f, a, depth)
			}
		}
		return nil
	case sig.KindList, sig.KindSet:
		elem := sig.TStr
		if len(t.Args) > 0 {
			elem = t.Args[0]
		}
		n := 2 + g.intn(2)
		out := make([]any, 0, n)
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			var v any
			if elem.Kind == sig.KindStr {
				v = g.listItem(f, i)
			} else {
				v = g.typed(f, elem, depth+1)
			}
			if k := py.CompactJSON(v); !seen[k] {
				seen[k] = true
				out = append(out, v)
			}
		}
		return out
	case sig.KindTuple:
		out := make([]any, len(t.Args))
		for i, a := range t.Args {
			out[i] = g.typed(f, a, depth+1)
		}
		return out
	case sig.KindDict:
		val := sig.TStr
		if len(t.Args) == 2 {
			val = t.Args[1]
		}
		m := sig.NewMap()
		for i := 0; i < 2; i++ {
			key := g.word(i)
			if len(t.Args) == 2 && t.Args[0].Kind == sig.KindInt {
				key = fmt.Sprint(i + 1)
			}
			m.Set(key, g.typed(f, val, depth+1))
		}
		return m
	}
	return g.str(f)
}

// bounds reads ge/gt/le/lt constraints, falling back to lo..hi.
func bounds(f sig.Field, lo, hi float64) (float64, float64) {
	num := func(k string) (float64, bool) {
		v, ok := f.Constraints.Get(k)
		switch n := v.(type) {
		case int64:
			return float64(n), ok
		case float64:
			return n, ok
		}
		return 0, false
	}
	if v, ok := num("ge"); ok {
		lo = v
	} else if v, ok := num("gt"); ok {
		lo = v + 1
	}
	if v, ok := num("le"); ok {
		hi = v
	} else if v, ok := num("lt"); ok {
		hi = v - 1
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func (g *gen) integer(f sig.Field) int64 {
	lo, hi := 1.0, 10.0
	if has(f.Name, "score", "rating", "rank", "priority", "level") {
		hi = 5
	}
	lo, hi = bounds(f, lo, hi)
	return int64(lo) + int64(g.intn(int(hi-lo)+1))
}

func (g *gen) float(f sig.Field) float64 {
	lo, hi := bounds(f, 0.6, 0.95)
	v := lo + float64(g.intn(1000))/1000*(hi-lo)
	return math.Round(v*100) / 100
}

// literal prefers a value the inputs mention, else a seeded choice.
func (g *gen) literal(lits []any) any {
	if len(lits) == 0 {
		return nil
	}
	for _, l := range lits {
		if s, ok := l.(string); ok && s != "" && g.mentions(s) {
			return l
		}
	}
	return lits[g.intn(len(lits))]
}

// optionHints are words that suggest a common classification label.
var optionHints = map[string][]string{
	"billing":   {"bill", "charge", "refund", "invoice", "payment", "price", "subscription", "card", "paid"},
	"technical": {"error", "crash", "log in", "login", "password", "reset", "bug", "broken", "install", "email", "server"},
	"positive":  {"great", "love", "thanks", "excellent", "happy", "good"},
	"negative":  {"bad", "hate", "terrible", "angry", "broken", "awful"},
	"urgent":    {"urgent", "asap", "immediately", "down", "outage", "critical"},
	"high":      {"urgent", "asap", "immediately", "down", "outage", "critical"},
}

func (g *gen) mentions(option string) bool {
	o := strings.ToLower(option)
	if strings.Contains(g.all, o) {
		return true
	}
	for _, hint := range optionHints[o] {
		if strings.Contains(g.all, hint) {
			return true
		}
	}
	return false
}

var oneOf = regexp.MustCompile(`(?i)one of:\s*(.+)$`)

// str makes a string value shaped by the field's name and description.
func (g *gen) str(f sig.Field) string {
	if m := oneOf.FindStringSubmatch(f.Desc); m != nil {
		var opts []any
		for _, o := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ';' || r == '|' }) {
			if o = strings.Trim(strings.TrimSpace(o), ".'\"`"); o != "" && !strings.EqualFold(o, "or") {
				opts = append(opts, strings.TrimPrefix(o, "or "))
			}
		}
		if len(opts) > 0 {
			return g.literal(opts).(string)
		}
	}
	n := strings.ToLower(f.Name)
	topic := g.topic()
	switch {
	case has(n, "reason", "rationale", "thought", "thinking", "explanation", "analysis"):
		return g.choose(
			fmt.Sprintf("The input is about %s. The key point is %s, so the answer should address it directly.", topic, g.word(0)),
			fmt.Sprintf("Looking at %s: the request centres on %s, and nothing suggests a different reading.", topic, g.word(0)),
			fmt.Sprintf("First identify what is asked (%s), then answer it concisely.", topic))
	case has(n, "correct", "fix", "rewrit", "clean", "edit", "improv", "normaliz", "polish"):
		return tidy(g.main)
	case has(n, "translat"):
		lang := g.inputs.String("target_language")
		if lang == "" {
			lang = g.inputs.String("language")
		}
		if lang == "" {
			lang = "translated"
		}
		return "[" + lang + "] " + tidy(g.main)
	case has(n, "summar", "tldr", "abstract"):
		return fmt.Sprintf("Summary: %s.", capitalize(joinAnd(g.some(3))))
	case has(n, "title", "subject", "heading", "headline"):
		return titleCase(g.word(0) + " " + g.word(1))
	case has(n, "intent", "category", "label", "class", "topic", "kind", "sentiment", "tag"):
		return g.word(0)
	case has(n, "query", "search", "keyword"):
		return strings.Join(g.some(3), " ")
	case has(n, "plan", "steps"):
		return fmt.Sprintf("1. Clarify %s. 2. Gather what is known about %s. 3. Answer and confirm.", g.word(0), g.word(1))
	case has(n, "feedback", "critique", "review", "comment", "suggestion"):
		return g.choose(
			fmt.Sprintf("Looks reasonable; it could say more about %s.", g.word(1)),
			fmt.Sprintf("Clear overall. Consider mentioning %s explicitly.", g.word(0)))
	case has(n, "question"):
		return fmt.Sprintf("Could you tell me more about %s?", topic)
	}
	return g.choose(
		fmt.Sprintf("Thanks for the details about %s. Short answer: start with %s, then follow up if needed.", topic, g.word(0)),
		fmt.Sprintf("Regarding %s: the key point is %s. Let me know if that helps.", topic, g.word(0)),
		fmt.Sprintf("I looked at %s. A good next step is to review %s.", topic, g.word(1)))
}

func (g *gen) listItem(f sig.Field, i int) string {
	if has(strings.ToLower(f.Name), "quer", "search", "keyword", "tag") {
		return g.word(i)
	}
	return capitalize(g.choose("check ", "review ", "confirm ")) + g.word(i)
}

func (g *gen) choose(options ...string) string { return options[g.intn(len(options))] }

func has(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// tidy is the demo's "correction": capital first letter, final punctuation.
func tidy(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "(nothing to correct)"
	}
	s = capitalize(s)
	if !strings.ContainsAny(s[len(s)-1:], ".!?") {
		s += "."
	}
	return s
}

func capitalize(s string) string {
	for i, r := range s {
		return strings.ToUpper(string(r)) + s[i+len(string(r)):]
	}
	return s
}

func titleCase(s string) string {
	ws := strings.Fields(s)
	for i, w := range ws {
		ws[i] = capitalize(w)
	}
	return strings.Join(ws, " ")
}
