package demo

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/workflow"
)

// The built-in tools are deliberately small and safe: pure functions over their text
// input (plus the clock for the date). There is no shell, no file and no network tool.

// Doc is one entry of the in-memory knowledge base.
type Doc struct {
	Title string
	Text  string
}

// KnowledgeBase is the small fictional product manual the demo tools search.
var KnowledgeBase = []Doc{
	{"Password reset", "To reset your password, choose 'Forgot password' on the sign-in page; a reset link valid for 30 minutes is emailed to you."},
	{"Reset email missing", "Reset emails can take up to 5 minutes and often land in the spam folder; support can resend them to the address on file."},
	{"Refund policy", "Refunds are available within 30 days of purchase and are paid back to the original card within 5 to 10 business days."},
	{"Billing cycle", "Plans are billed monthly on the day you subscribed; invoices are available under Settings > Billing."},
	{"Two-factor authentication", "Two-factor authentication can be enabled under Settings > Security with any authenticator app."},
	{"Data export", "Workspace owners can export all data as JSON or CSV from Settings > Export; large exports are emailed as a link."},
	{"Support hours", "Human support is available Monday to Friday, 8:00 to 18:00 CET; the help centre is open around the clock."},
	{"Team offsites", "A good offsite has a clear goal, a venue booked early, a budget per person and a simple agenda with free time."},
}

// stopWords are ignored by the knowledge-base search.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "is": true, "are": true, "do": true, "does": true, "i": true,
	"my": true, "our": true, "your": true, "to": true, "of": true, "for": true, "how": true, "what": true,
	"can": true, "it": true, "in": true, "on": true, "and": true, "or": true, "me": true, "we": true,
	"you": true, "with": true, "about": true, "long": true, "take": true, "there": true, "this": true,
}

// words lower-cases text and splits it into searchable words.
func words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-'
	}) {
		w = strings.TrimSuffix(w, "s")
		if len(w) > 1 && !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// Search returns up to k knowledge-base entries ranked by shared words (title words
// count double), best first; ties keep the knowledge-base order; entries scoring less
// than half the best are dropped. Each result is "Title: text".
func Search(query string, k int) []string {
	q := words(query)
	type hit struct {
		i, score int
	}
	var hits []hit
	for i, d := range KnowledgeBase {
		title, body := words(d.Title), words(d.Text)
		score := 0
		for _, w := range q {
			for _, t := range title {
				if t == w {
					score += 2
				}
			}
			for _, t := range body {
				if t == w {
					score++
				}
			}
		}
		if score > 0 {
			hits = append(hits, hit{i, score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	out := []string{}
	for _, h := range hits {
		// Weak matches (less than half the best score) are noise, not results.
		if len(out) == k || h.score*2 < hits[0].score {
			break
		}
		d := KnowledgeBase[h.i]
		out = append(out, d.Title+": "+d.Text)
	}
	return out
}

// Calculate evaluates an arithmetic expression: numbers, + - * / % ^, parentheses and
// unary minus. Results that are whole numbers print without a decimal point.
func Calculate(expr string) (string, error) {
	p := &calc{src: expr}
	v, err := p.expr()
	if err == nil {
		p.space()
		if p.pos < len(p.src) {
			err = fmt.Errorf("unexpected %q at position %d", p.src[p.pos], p.pos+1)
		}
	}
	if err != nil {
		return "", fmt.Errorf("calculator: %q: %w", expr, err)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "", fmt.Errorf("calculator: %q: result is not a number", expr)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10), nil
	}
	return strconv.FormatFloat(v, 'g', 12, 64), nil
}

// calc is a recursive-descent parser over the expression text.
type calc struct {
	src   string
	pos   int
	depth int
}

func (p *calc) space() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

func (p *calc) peek() byte {
	p.space()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *calc) expr() (float64, error) {
	v, err := p.term()
	for err == nil {
		op := p.peek()
		if op != '+' && op != '-' {
			return v, nil
		}
		p.pos++
		var r float64
		if r, err = p.term(); op == '+' {
			v += r
		} else {
			v -= r
		}
	}
	return v, err
}

func (p *calc) term() (float64, error) {
	v, err := p.power()
	for err == nil {
		op := p.peek()
		if op != '*' && op != '/' && op != '%' && op != 'x' {
			return v, nil
		}
		p.pos++
		var r float64
		if r, err = p.power(); err != nil {
			return v, err
		}
		switch op {
		case '*', 'x':
			v *= r
		case '/':
			if r == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			v /= r
		case '%':
			if r == 0 {
				return 0, fmt.Errorf("modulo by zero")
			}
			v = math.Mod(v, r)
		}
	}
	return v, err
}

func (p *calc) power() (float64, error) {
	base, err := p.unary()
	if err != nil || p.peek() != '^' {
		return base, err
	}
	p.pos++
	exp, err := p.power() // right-associative
	return math.Pow(base, exp), err
}

func (p *calc) unary() (float64, error) {
	if p.peek() == '-' {
		p.pos++
		v, err := p.unary()
		return -v, err
	}
	return p.atom()
}

func (p *calc) atom() (float64, error) {
	c := p.peek()
	switch {
	case c == '(':
		if p.depth++; p.depth > 64 {
			return 0, fmt.Errorf("too deeply nested")
		}
		p.pos++
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, fmt.Errorf("missing ')' at position %d", p.pos+1)
		}
		p.pos++
		p.depth--
		return v, nil
	case c >= '0' && c <= '9' || c == '.':
		start := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || p.src[p.pos] == '.') {
			p.pos++
		}
		return strconv.ParseFloat(p.src[start:p.pos], 64)
	case c == 0:
		return 0, fmt.Errorf("unexpected end of expression")
	}
	return 0, fmt.Errorf("unexpected %q at position %d", c, p.pos+1)
}

// Today renders a date for the date tool: "2025-01-15 (Wednesday)".
func Today(now time.Time) string {
	return now.Format("2006-01-02") + " (" + now.Weekday().String() + ")"
}

// Action is the result of carrying out one thinker action.
type Action struct {
	Observation string
	Done        bool
	Answer      string // the final answer for "finish"; else the observation
}

// Act carries out an action written as "tool: argument": "calculator: 17 * 23",
// "search: refund policy", "date", or "finish: the answer". An unknown tool or a
// failing tool is an observation, not an error, so the thinker can correct itself.
func Act(action string, now time.Time) Action {
	name, arg, _ := strings.Cut(py.Strip(action), ":")
	name, arg = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(arg)
	var obs string
	switch name {
	case "finish":
		return Action{Observation: "Finished.", Done: true, Answer: arg}
	case "calculator", "calculate", "calc":
		r, err := Calculate(arg)
		if err != nil {
			obs = "Error: " + err.Error()
		} else {
			obs = arg + " = " + r
		}
	case "search":
		if docs := Search(arg, 2); len(docs) > 0 {
			obs = strings.Join(docs, "\n")
		} else {
			obs = "No knowledge-base entry matches " + strconv.Quote(arg) + "."
		}
	case "date", "today":
		obs = "Today is " + Today(now) + "."
	default:
		obs = "Unknown tool " + strconv.Quote(name) + ": use calculator, search, date or finish."
	}
	return Action{Observation: obs, Answer: obs}
}

// Tools are the built-in tools agent files may run (tool = "..."), each the safe
// function above behind the fields it reads and writes.
func Tools() map[string]workflow.Tool {
	return map[string]workflow.Tool{
		"calculator": {Inputs: []string{"expression"}, Outputs: []string{"result"},
			Run: func(in *sig.Map, _ time.Time) (*sig.Map, error) {
				r, err := Calculate(in.String("expression"))
				if err != nil {
					return nil, err
				}
				return sig.NewMap("result", r), nil
			}},
		"search": {Inputs: []string{"query"}, Outputs: []string{"documents", "text"},
			Run: func(in *sig.Map, _ time.Time) (*sig.Map, error) {
				docs := Search(in.String("query"), 2)
				list := make([]any, len(docs))
				for i, d := range docs {
					list[i] = d
				}
				return sig.NewMap("documents", list, "text", strings.Join(docs, "\n")), nil
			}},
		"date": {Outputs: []string{"date"},
			Run: func(_ *sig.Map, now time.Time) (*sig.Map, error) { return sig.NewMap("date", Today(now)), nil }},
		"act": {Inputs: []string{"action"}, Outputs: []string{"observation", "done", "answer"},
			Run: func(in *sig.Map, now time.Time) (*sig.Map, error) {
				a := Act(in.String("action"), now)
				return sig.NewMap("observation", a.Observation, "done", a.Done, "answer", a.Answer), nil
			}},
	}
}
