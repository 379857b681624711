package demo

import (
	"regexp"
	"strings"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/llm"
)

// The ResearchAgent's demo scripts. The plan names two knowledge-base topics (the best
// matches for the question; "Support hours" when there is only one), each query picks
// the first topic the notes do not cover yet, the summary lists what was found with its
// source and the answer leads with the first finding. Any question gets a sensible,
// deterministic dialogue; one the knowledge base does not cover says so.

const researchPlanPrefix = "Search the knowledge base for: "

var (
	planTopicRe   = regexp.MustCompile(`(?m)^\s*\d+\.\s*` + regexp.QuoteMeta(researchPlanPrefix) + `(.+?)\s*$`)
	findingLineRe = regexp.MustCompile(`^- \[([^\]]+)\] (.+)$`)
)

func researchScripts() []llm.Script {
	// The demo model shares every agent's scripts, and "plan", "query", "summarize" and
	// "answer" are common names: each script also wants exactly its own inputs.
	return scripts(
		script{pred: "plan", typ: "Predict", outputs: []string{"plan"}, inputs: []string{"question"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			a, b := researchTopics(in.String("question"))
			return sig.NewMap("plan", "1. "+researchPlanPrefix+a+"\n2. "+researchPlanPrefix+b+
				"\n3. Answer from the findings, citing each source."), true
		}},
		script{pred: "query", typ: "Predict", outputs: []string{"query"}, inputs: []string{"question", "plan", "notes"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			return sig.NewMap("query", nextQuery(in.String("question"), in.String("plan"), in.String("notes"))), true
		}},
		script{pred: "summarize", typ: "Predict", outputs: []string{"findings"}, inputs: []string{"question", "notes"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			return sig.NewMap("findings", summarizeNotes(in.String("notes"))), true
		}},
		script{pred: "answer", typ: "Predict", outputs: []string{"answer"}, inputs: []string{"question", "findings"}, answer: func(in *sig.Map) (*sig.Map, bool) {
			return sig.NewMap("answer", answerFromFindings(in.String("question"), in.String("findings"))), true
		}},
	)
}

// researchTopics are the two topics to search: the knowledge base's best two titles
// for the question, completed with "Support hours" (who can help further) or, when
// nothing matches, the question itself.
func researchTopics(question string) (string, string) {
	var topics []string
	for _, d := range Search(question, 2) {
		title, _, _ := strings.Cut(d, ": ")
		topics = append(topics, title)
	}
	if len(topics) == 0 {
		topics = append(topics, questionTopic(question))
	}
	if len(topics) == 1 {
		if topics[0] == "Support hours" {
			topics = append(topics, "help centre")
		} else {
			topics = append(topics, "Support hours")
		}
	}
	return topics[0], topics[1]
}

// questionTopic is the question's first line without final punctuation, at most 60
// characters.
func questionTopic(q string) string {
	q, _, _ = strings.Cut(strings.TrimSpace(q), "\n")
	q = strings.TrimRight(strings.TrimSpace(q), "?.! ")
	if r := []rune(q); len(r) > 60 {
		q = strings.TrimSpace(string(r[:60]))
	}
	if q == "" {
		return "help centre"
	}
	return q
}

// nextQuery is the first plan topic not searched yet (the notes mark each search as
// "[query]"); once all are searched, the last one again.
func nextQuery(question, plan, notes string) string {
	var topics []string
	for _, m := range planTopicRe.FindAllStringSubmatch(plan, -1) {
		topics = append(topics, m[1])
	}
	if len(topics) == 0 {
		return questionTopic(question)
	}
	for _, t := range topics {
		if !strings.Contains(notes, "["+t+"]") {
			return t
		}
	}
	return topics[len(topics)-1]
}

// summarizeNotes lists each knowledge-base entry found, once, as "- [Title] text".
func summarizeNotes(notes string) string {
	seen := map[string]bool{}
	var out []string
	for i, line := range strings.Split(notes, "\n") {
		line = strings.TrimSpace(line)
		if i == 0 || line == "" || strings.HasPrefix(line, "[") {
			continue // the header and the query markers
		}
		title, text, ok := strings.Cut(line, ": ")
		if !ok || seen[title] {
			continue
		}
		seen[title] = true
		out = append(out, "- ["+title+"] "+text)
	}
	if len(out) == 0 {
		return "Nothing in the knowledge base answers this question."
	}
	return strings.Join(out, "\n")
}

// answerFromFindings leads with the first finding and mentions the others, each with
// its source. Findings that share no word with the question do not count as an answer.
func answerFromFindings(question, findings string) string {
	type finding struct{ title, text string }
	var fs []finding
	relevant := false
	q := map[string]bool{}
	for _, w := range words(question) {
		q[w] = true
	}
	for _, line := range strings.Split(findings, "\n") {
		if m := findingLineRe.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			fs = append(fs, finding{m[1], m[2]})
			for _, w := range words(m[1] + " " + m[2]) {
				relevant = relevant || q[w]
			}
		}
	}
	cite := func(f finding) string { return f.text + " [" + f.title + "]" }
	var b strings.Builder
	switch {
	case len(fs) == 0:
		return "I could not find this in the knowledge base, so I would rather not guess."
	case !relevant:
		b.WriteString("The knowledge base does not cover this, so I would rather not guess.\n\nWhat I did find:")
		for _, f := range fs {
			b.WriteString("\n- " + cite(f))
		}
		return b.String()
	}
	b.WriteString(cite(fs[0]))
	if len(fs) > 1 {
		b.WriteString("\n\nSee also:")
		for _, f := range fs[1:] {
			b.WriteString("\n- " + cite(f))
		}
	}
	return b.String()
}
