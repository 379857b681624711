package demo

import (
	"context"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
)

// RAGAgent is seed 000 §5.4: a retriever proposes documents and an answerer answers
// from them. The retriever gets no history (excluded from recursion) and the documents
// never enter the answerer's history (exclude_fields), so history stays small.
type RAGAgent struct {
	Retriever *core.Predict // question -> documents: list[str]
	Answerer  *core.Predict // question, documents: list[str] -> answer
}

// NewRAGAgent builds the agent.
func NewRAGAgent() *RAGAgent {
	docs := sig.Field{Name: "documents", Type: sig.MustType("list[str]")}
	return &RAGAgent{
		Retriever: &core.Predict{Signature: sig.New("Retrieve", "Find the knowledge-base passages that answer the question.",
			[]sig.Field{str("question", "")}, []sig.Field{docs})},
		Answerer: &core.Predict{Signature: sig.New("AnswerFromDocuments", "Answer the question using only the documents.",
			[]sig.Field{str("question", ""), docs}, []sig.Field{str("answer", "")})},
	}
}

// Submodules names the predictors for sessions.
func (a *RAGAgent) Submodules() []core.Sub {
	return []core.Sub{{Name: "retriever", Module: a.Retriever}, {Name: "answerer", Module: a.Answerer}}
}

// Forward retrieves, then answers; it returns the answerer's prediction.
func (a *RAGAgent) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	v, err := need("RAGAgent", in, "question")
	if err != nil {
		return nil, err
	}
	d, err := a.Retriever.Forward(ctx, sig.NewMap("question", v[0]))
	if err != nil {
		return nil, err
	}
	return a.Answerer.Forward(ctx, sig.NewMap("question", v[0], "documents", d.Get("documents")))
}

// RAGOptions are the seed's §5.4 settings.
func RAGOptions() core.Options {
	o := SupportOptions()
	o.Exclude = []string{"retriever"}
	o.ChildConfigs = map[string]core.ChildConfig{"answerer": {ExcludeFields: []string{"documents"}}}
	return o
}

func ragAgent() Agent {
	return goAgent("RAGAgent",
		"Retrieves passages from a small product knowledge base, then answers from them. Documents are kept out of the history.",
		[]string{"question"}, []string{"answer"},
		func() (core.Module, core.Options) { return NewRAGAgent(), RAGOptions() },
		ragScripts()...)
}

// Orchestrator is seed 000 §4.2/§5.3: pre-sessionified planner, researcher and writer
// in a SessionContainer, composed by a flow. Wrapped with nested_sessions=inherit, the
// inner sessions see the outer conversation and record no turns of their own; every
// intermediate field is returned so that their ChatAdapter history is complete (§6.3:
// "ensure forward() returns ALL intermediate fields").
type Orchestrator struct {
	Sessions *core.Container
}

// NewOrchestrator builds the three sessions and the container.
func NewOrchestrator() *Orchestrator {
	mk := func(name, instr string, in []sig.Field, out sig.Field) *core.Session {
		return core.MustSessionify(&core.Predict{Signature: sig.New(name, instr, in, []sig.Field{out})}, core.Options{Name: strings.ToLower(name)})
	}
	planner := mk("Planner", "Break the task into a short numbered plan.", []sig.Field{str("task", "")}, str("plan", ""))
	researcher := mk("Researcher", "Summarise the notes that matter for the plan.", []sig.Field{str("plan", ""), str("notes", "")}, str("research", ""))
	writer := mk("Writer", "Write the deliverable from the plan and the research.", []sig.Field{str("plan", ""), str("research", "")}, str("draft", ""))
	c, err := core.NewContainer([]string{"planner", "researcher", "writer"}, []*core.Session{planner, researcher, writer})
	if err != nil {
		panic(err) // fixed, distinct names: cannot happen
	}
	return &Orchestrator{Sessions: c}
}

// Submodules exposes the container's sessions, so their paths are "planner",
// "researcher" and "writer".
func (o *Orchestrator) Submodules() []core.Sub { return o.Sessions.Submodules() }

// Forward plans, looks the plan up in the knowledge base, researches and writes.
func (o *Orchestrator) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	v, err := need("Orchestrator", in, "task")
	if err != nil {
		return nil, err
	}
	p, err := core.Call(ctx, o.Sessions.Get("planner"), sig.NewMap("task", v[0]))
	if err != nil {
		return nil, err
	}
	notes := strings.Join(Search(p.String("plan"), 2), "\n")
	r, err := core.Call(ctx, o.Sessions.Get("researcher"), sig.NewMap("plan", p.Get("plan"), "notes", notes))
	if err != nil {
		return nil, err
	}
	w, err := core.Call(ctx, o.Sessions.Get("writer"), sig.NewMap("plan", p.Get("plan"), "research", r.Get("research")))
	if err != nil {
		return nil, err
	}
	return core.NewPrediction("plan", p.Get("plan"), "research", r.Get("research"), "draft", w.Get("draft")), nil
}

// OrchestratorOptions: the inner sessions inherit the outer conversation (§5.3).
func OrchestratorOptions() core.Options {
	return core.Options{NestedSessions: core.NestedInherit, Record: core.RecordAll}
}

func orchestratorAgent() Agent {
	return goAgent("Orchestrator",
		"A planner, a researcher (with knowledge-base notes) and a writer, composed from separate sessions; they all see the outer conversation.",
		[]string{"task"}, []string{"plan", "research", "draft"},
		func() (core.Module, core.Options) { return NewOrchestrator(), OrchestratorOptions() },
		orchestratorScripts()...)
}
