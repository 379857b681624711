package demo

import (
	"context"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
)

// ResearchAgent answers questions about the knowledge base through a nested research
// module, so every turn's call tree has depth: plan, then research (a module-level
// record whose children are research.query twice and research.summarize), then answer.
//
// The outer session is recursive over modules (seed 000 §3.2): the Research module is
// a keep-child with a module-level turn of its own per outer turn (cross_turn), and its
// two predictors are keep, per_turn children — each turn's research is a fresh episode
// in which the second query sees the first. plan and answer keep their own history
// across turns, as in SupportAgent.
type ResearchAgent struct {
	Planner  *core.Predict // question -> plan
	Research *Research     // plan, question -> findings
	Answerer *core.Predict // question, findings -> answer
}

// Research is the nested sub-agent: it asks for a search query, looks it up in the
// knowledge base, repeats with what it found so far, then summarises the findings.
type Research struct {
	Query     *core.Predict // question, plan, notes -> query
	Summarize *core.Predict // question, notes -> findings
	Searches  int
}

// researchNotesStart is the research notes before any search; each search appends
// "\n[query]\n" and the hits, one per line.
const researchNotesStart = "Search results:"

// NewResearchAgent builds the agent with two searches per question.
func NewResearchAgent() *ResearchAgent {
	return &ResearchAgent{
		Planner: &core.Predict{Signature: sig.New("PlanResearch",
			"Plan the research for the question: two knowledge-base topics to search, then how to answer.",
			[]sig.Field{str("question", "")}, []sig.Field{str("plan", "")})},
		Research: &Research{
			Query: &core.Predict{Signature: sig.New("NextQuery",
				"Write the next knowledge-base search query: the first topic of the plan that the notes do not cover yet.",
				[]sig.Field{str("question", ""), str("plan", ""), str("notes", "")}, []sig.Field{str("query", "")})},
			Summarize: &core.Predict{Signature: sig.New("SummarizeFindings",
				"Summarise the notes that help answer the question, one finding per line with its source title in brackets.",
				[]sig.Field{str("question", ""), str("notes", "")}, []sig.Field{str("findings", "")})},
			Searches: 2,
		},
		Answerer: &core.Predict{Signature: sig.New("AnswerWithSources",
			"Answer the question from the findings only, citing each source title in brackets.",
			[]sig.Field{str("question", ""), str("findings", "")}, []sig.Field{str("answer", "")})},
	}
}

// Submodules names the parts: "plan", "research" (with "research.query" and
// "research.summarize" below it) and "answer".
func (a *ResearchAgent) Submodules() []core.Sub {
	return []core.Sub{{Name: "plan", Module: a.Planner}, {Name: "research", Module: a.Research}, {Name: "answer", Module: a.Answerer}}
}

// Forward plans, runs the research module (through core.Call, so a session records it
// as one module-level call around its inner calls) and answers from its findings.
func (a *ResearchAgent) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	v, err := need("ResearchAgent", in, "question")
	if err != nil {
		return nil, err
	}
	p, err := a.Planner.Forward(ctx, sig.NewMap("question", v[0]))
	if err != nil {
		return nil, err
	}
	// Inputs in the order the agent file's step gives them (its inputs table, sorted).
	r, err := core.Call(ctx, a.Research, sig.NewMap("plan", p.Get("plan"), "question", v[0]))
	if err != nil {
		return nil, err
	}
	ans, err := a.Answerer.Forward(ctx, sig.NewMap("question", v[0], "findings", r.Get("findings")))
	if err != nil {
		return nil, err
	}
	return core.NewPrediction("answer", ans.Get("answer")), nil
}

// TypeName is the module's type in call records.
func (r *Research) TypeName() string { return "Research" }

// Submodules names the research predictors.
func (r *Research) Submodules() []core.Sub {
	return []core.Sub{{Name: "query", Module: r.Query}, {Name: "summarize", Module: r.Summarize}}
}

// Forward searches Searches times, each query chosen with the notes so far, then
// summarises; it returns the findings.
func (r *Research) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	v, err := need("Research", in, "plan", "question")
	if err != nil {
		return nil, err
	}
	plan, question := v[0], v[1]
	notes := researchNotesStart
	for range max(r.Searches, 1) {
		q, err := r.Query.Forward(ctx, sig.NewMap("question", question, "plan", plan, "notes", notes))
		if err != nil {
			return nil, err
		}
		query := q.String("query")
		notes += "\n[" + query + "]\n" + strings.Join(Search(query, 2), "\n")
	}
	s, err := r.Summarize.Forward(ctx, sig.NewMap("question", question, "notes", notes))
	if err != nil {
		return nil, err
	}
	return core.NewPrediction("findings", s.Get("findings")), nil
}

// ResearchOptions: recursive over modules so that the research module is recorded
// around its calls; its predictors start every turn afresh (keep, per_turn).
func ResearchOptions() core.Options {
	perTurn := core.ChildConfig{Nested: core.NestedKeep, Scope: core.PerTurn}
	return core.Options{Recursive: core.Modules, NestedSessions: core.NestedKeep, InnerScope: core.CrossTurn, Record: core.RecordAll,
		ChildConfigs: map[string]core.ChildConfig{"research.query": perTurn, "research.summarize": perTurn}}
}

func researchAgent() Agent {
	return goAgent("ResearchAgent",
		"Plans, then runs a nested research module (two knowledge-base searches and a summary) and answers with sources. Each turn's calls form a tree.",
		[]string{"question"}, []string{"answer"},
		func() (core.Module, core.Options) { return NewResearchAgent(), ResearchOptions() },
		researchScripts()...)
}
