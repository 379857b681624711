package demo

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/llm"
)

// script answers one predictor of one agent for the demo model. It matches on the last
// segment of the predictor path, the predictor type and the signature's output fields,
// so a script never answers another agent's predictor of the same name.
type script struct {
	pred    string   // last path segment
	typ     string   // "Predict" or "ChainOfThought"
	outputs []string // the signature's outputs, in order
	inputs  []string // when set, the call's inputs must be exactly these, in order
	answer  func(in *sig.Map) (*sig.Map, bool)
}

// Answer implements llm.Script.
func (s script) Answer(meta lm.Meta, _ []lm.Message) (*sig.Map, bool) {
	path := meta.Path
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if path != s.pred || meta.Signature == nil || (s.typ != "" && meta.PredictorType != s.typ) {
		return nil, false
	}
	if len(meta.Signature.Outputs) != len(s.outputs) {
		return nil, false
	}
	for i, f := range meta.Signature.Outputs {
		if f.Name != s.outputs[i] {
			return nil, false
		}
	}
	if s.inputs != nil && !slices.Equal(meta.Inputs.Keys(), s.inputs) {
		return nil, false
	}
	return s.answer(meta.Inputs)
}

func scripts(ss ...script) []llm.Script {
	out := make([]llm.Script, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// norm makes a key for dialogue tables: lower case, curly apostrophes straightened,
// outer space and final punctuation removed.
func norm(s string) string {
	s = strings.ToLower(strings.TrimSpace(strings.ReplaceAll(s, "’", "'")))
	return strings.TrimRight(s, ".!?")
}

func hasAny(s string, subs ...string) bool {
	s = strings.ToLower(s)
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// docText drops a search result's "Title: " prefix.
func docText(doc string) string {
	if _, text, ok := strings.Cut(doc, ": "); ok {
		return text
	}
	return doc
}

// supportScripts follow seed 000's dialogue: "I can't log in" / "The reset email never
// arrives" / "It's in my spam folder"; other questions get an answer from the knowledge base.
func supportScripts() []llm.Script {
	replies := map[string]string{
		"i can't log in":                "Try resetting your password.",
		"the reset email never arrives": "Let's check your spam folder: reset emails can take up to 5 minutes and often land there. If it is not there, I can resend it to the address on file.",
		"reset email never arrives":     "Let's check your spam folder: reset emails can take up to 5 minutes and often land there. If it is not there, I can resend it to the address on file.",
		"it's in my spam folder":        "Great, that explains it. Mark it as not spam and use the link within 30 minutes to choose a new password.",
	}
	return scripts(
		script{pred: "classify", typ: "Predict", outputs: []string{"intent"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			return sig.NewMap("intent", classifyIntent(in.String("question"))), true
		}},
		script{pred: "respond", typ: "ChainOfThought", outputs: []string{"reasoning", "reply"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			q, intent := in.String("question"), in.String("intent")
			why := "The customer has a " + intent + " question"
			if r, ok := replies[norm(q)]; ok {
				return sig.NewMap("reasoning", why+" I have a known answer for.", "reply", r), true
			}
			if docs := Search(q, 1); len(docs) > 0 {
				return sig.NewMap("reasoning", why+"; the help centre covers it.", "reply", "Here is what our help centre says: "+docText(docs[0])), true
			}
			return sig.NewMap("reasoning", why+" too vague to answer yet, so I ask for details.",
				"reply", "Thanks for reaching out! Could you tell me a little more so I can route your "+intent+" question?"), true
		}},
	)
}

func classifyIntent(q string) string {
	switch {
	case hasAny(q, "refund", "charge", "invoice", "bill", "payment", "price", "subscription", "card"):
		return "billing"
	case hasAny(q, "log in", "login", "sign in", "password", "reset", "email", "spam", "error", "crash", "bug", "export", "two-factor", "2fa"):
		return "technical"
	}
	return "general"
}

// translateScripts follow seed 000's scenario B dialogue into French.
func translateScripts() []llm.Script {
	corrections := map[string]string{
		"this plant is red":                    "This plant is red.",
		"can i have it":                        "Can I have it?",
		"no it to precious, i want to keep it": "No, it's too precious. I want to keep it.",
	}
	french := map[string]string{
		"this plant is red":                        "Cette plante est rouge.",
		"can i have it":                            "Puis-je l'avoir ?",
		"no, it's too precious. i want to keep it": "Non, elle est trop précieuse. Je veux la garder.",
		"hello":     "Bonjour.",
		"thank you": "Merci.",
	}
	return scripts(
		script{pred: "corrector", typ: "Predict", outputs: []string{"corrected"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			t := in.String("text")
			if c, ok := corrections[norm(t)]; ok {
				return sig.NewMap("corrected", c), true
			}
			return sig.NewMap("corrected", tidySentence(t)), true
		}},
		script{pred: "translator", typ: "Predict", outputs: []string{"translated"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			if !strings.EqualFold(in.String("target_language"), "french") {
				return nil, false
			}
			fr, ok := french[norm(in.String("corrected"))]
			if !ok {
				return nil, false
			}
			return sig.NewMap("translated", fr), true
		}},
	)
}

// tidySentence is the corrector's fallback: trimmed, capitalised, with final punctuation.
func tidySentence(t string) string {
	t = strings.Join(strings.Fields(t), " ")
	if t == "" {
		return t
	}
	r := []rune(t)
	r[0] = unicode.ToUpper(r[0])
	t = string(r)
	if !strings.ContainsAny(t[len(t)-1:], ".!?") {
		t += "."
	}
	return t
}

const invalidMarker = "Previous attempt was invalid:"

// retryScripts make the first plan too thin and the retry concrete, so the dialogue
// shows a rejected attempt, the feedback and an accepted second attempt.
func retryScripts() []llm.Script {
	numbered := regexp.MustCompile(`(?m)^\s*\d+\.`)
	return scripts(
		script{pred: "planner", typ: "ChainOfThought", outputs: []string{"reasoning", "plan"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			task := in.String("task")
			goal, _, _ := strings.Cut(task, "\n")
			goal = strings.TrimRight(strings.TrimSpace(goal), ".")
			if !strings.Contains(task, invalidMarker) {
				return sig.NewMap("reasoning", "A quick first plan: do the whole task in one go.",
					"plan", "1. "+goal+"."), true
			}
			return sig.NewMap("reasoning", "The previous plan was rejected for being too thin, so I add a budget, a schedule and a check.",
				"plan", fmt.Sprintf("1. Agree on the goal and the budget for: %s.\n2. Draft a schedule with owners and dates.\n3. Carry it out, then check the result against the goal.", lowerFirst(goal))), true
		}},
		script{pred: "validator", typ: "Predict", outputs: []string{"is_valid", "score", "feedback"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			n := len(numbered.FindAllStringIndex(in.String("plan"), -1))
			if n >= 3 {
				return sig.NewMap("is_valid", true, "score", 0.9,
					"feedback", fmt.Sprintf("The plan has %d concrete steps, a budget and a final check.", n)), true
			}
			return sig.NewMap("is_valid", false, "score", 0.3,
				"feedback", "The plan has only one step: add a budget, a schedule and a way to check the result."), true
		}},
	)
}

func lowerFirst(s string) string {
	r := []rune(s)
	if len(r) > 1 && unicode.IsUpper(r[0]) && !unicode.IsUpper(r[1]) {
		r[0] = unicode.ToLower(r[0])
	}
	return string(r)
}

// arithmetic finds an arithmetic expression in a task ("What is 17 * 23 + 4?").
var arithmetic = regexp.MustCompile(`[-(]*\d[\d.]*(?:\s*[-+*/%^x]\s*[(]*\d[\d.]*[)]*)+`)

// stepScripts pick a tool for the task, then finish from the observation.
func stepScripts() []llm.Script {
	return scripts(script{pred: "thinker", typ: "Predict", outputs: []string{"thought", "action"}, answer: func(in *sig.Map) (*sig.Map, bool) {
		task, obs := in.String("task"), in.String("observation")
		if obs == NoObservation || obs == "" {
			switch {
			case arithmetic.MatchString(task):
				return sig.NewMap("thought", "This needs arithmetic, so I use the calculator.",
					"action", "calculator: "+arithmetic.FindString(task)), true
			case hasAny(task, "date", "today", "what day"):
				return sig.NewMap("thought", "I need today's date.", "action", "date"), true
			}
			return sig.NewMap("thought", "I look this up in the knowledge base.", "action", "search: "+strings.TrimRight(task, "?.!")), true
		}
		if hasAny(obs, "error:", "unknown tool", "no knowledge-base entry") {
			return sig.NewMap("thought", "The tool did not help; I say so.", "action", "finish: I could not work that out: "+obs), true
		}
		first, _, _ := strings.Cut(obs, "\n")
		return sig.NewMap("thought", "The observation answers the task.", "action", "finish: "+docText(first)), true
	}})
}

// ragScripts retrieve from the knowledge base and answer from the first document.
func ragScripts() []llm.Script {
	return scripts(
		script{pred: "retriever", typ: "Predict", outputs: []string{"documents"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			docs := []any{}
			for _, d := range Search(in.String("question"), 2) {
				docs = append(docs, d)
			}
			return sig.NewMap("documents", docs), true
		}},
		script{pred: "answerer", typ: "Predict", outputs: []string{"answer"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			docs, _ := in.Get("documents")
			list, _ := docs.([]any)
			if len(list) == 0 {
				return sig.NewMap("answer", "I could not find this in the knowledge base."), true
			}
			return sig.NewMap("answer", docText(py.Text(list[0]))), true
		}},
	)
}

// orchestratorScripts plan, research from the notes and write a short draft.
func orchestratorScripts() []llm.Script {
	return scripts(
		script{pred: "planner", typ: "Predict", outputs: []string{"plan"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			task := strings.TrimRight(strings.TrimSpace(in.String("task")), ".")
			return sig.NewMap("plan", fmt.Sprintf("1. Research: %s.\n2. Pick the three points that matter most.\n3. Write a short draft with next steps.", lowerFirst(task))), true
		}},
		script{pred: "researcher", typ: "Predict", outputs: []string{"research"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			var facts []string
			for _, line := range strings.Split(in.String("notes"), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					facts = append(facts, docText(line))
				}
			}
			if len(facts) == 0 {
				return sig.NewMap("research", "The knowledge base has nothing on this; the draft relies on the plan alone."), true
			}
			return sig.NewMap("research", "Key facts: "+strings.Join(facts, " ")), true
		}},
		script{pred: "writer", typ: "Predict", outputs: []string{"draft"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			research := strings.TrimPrefix(in.String("research"), "Key facts: ")
			plan := in.String("plan")
			last := plan
			if i := strings.LastIndex(plan, "\n"); i >= 0 {
				last = plan[i+1:]
			}
			return sig.NewMap("draft", fmt.Sprintf("Summary. %s\n\nNext step: %s", research, strings.TrimSpace(strings.TrimLeft(last, "0123456789. ")))), true
		}},
	)
}
