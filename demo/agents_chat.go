package demo

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
)

// str is a plain text field.
func str(name, desc string) sig.Field { return sig.Field{Name: name, Desc: desc, Type: sig.TStr} }

// need returns the named input or an error saying which agent lacks it.
func need(agent string, in *sig.Map, names ...string) ([]any, error) {
	out := make([]any, len(names))
	for i, n := range names {
		v, ok := in.Get(n)
		if !ok {
			return nil, fmt.Errorf("%s: missing input %q", agent, n)
		}
		out[i] = v
	}
	return out, nil
}

// SupportAgent is seed 000's scenario A: classify the question's intent, then reply.
// The reply is a ChainOfThought: its reasoning stays in respond's own history (keep),
// while the outer history the agent returns has none, so from the second turn on keep
// and inherit send respond different requests (inherit shows `reasoning: None`).
type SupportAgent struct {
	Classify *core.Predict // question -> intent
	Respond  *core.Predict // question, intent -> reasoning, reply
}

// NewSupportAgent builds the agent with the seed's ClassifyIntent and GenerateReply
// signatures.
func NewSupportAgent() *SupportAgent {
	return &SupportAgent{
		Classify: &core.Predict{Signature: sig.New("ClassifyIntent", "Classify the customer's intent.",
			[]sig.Field{str("question", "")}, []sig.Field{str("intent", "One of: billing, technical, general")})},
		Respond: core.ChainOfThought(sig.New("GenerateReply", "Generate a helpful support reply.",
			[]sig.Field{str("question", ""), str("intent", "")}, []sig.Field{str("reply", "")})),
	}
}

// Submodules names the predictors for sessions.
func (a *SupportAgent) Submodules() []core.Sub {
	return []core.Sub{{Name: "classify", Module: a.Classify}, {Name: "respond", Module: a.Respond}}
}

// Forward classifies, then replies; it returns the reply and the intent.
func (a *SupportAgent) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	v, err := need("SupportAgent", in, "question")
	if err != nil {
		return nil, err
	}
	c, err := a.Classify.Forward(ctx, sig.NewMap("question", v[0]))
	if err != nil {
		return nil, err
	}
	r, err := a.Respond.Forward(ctx, sig.NewMap("question", v[0], "intent", c.Get("intent")))
	if err != nil {
		return nil, err
	}
	return core.NewPrediction("reply", r.Get("reply"), "intent", c.Get("intent")), nil
}

// SupportOptions are the seed's recommendation (§6.1): every predictor keeps its own
// history across turns (keep, cross_turn), all calls recorded.
func SupportOptions() core.Options {
	return core.Options{Recursive: core.Predictors, NestedSessions: core.NestedKeep, InnerScope: core.CrossTurn, Record: core.RecordAll}
}

func supportAgent() Agent {
	return goAgent("SupportAgent",
		"Customer support: classifies the question's intent (billing, technical, general), then writes a reply. Each step keeps its own history.",
		[]string{"question"}, []string{"reply", "intent"},
		func() (core.Module, core.Options) { return NewSupportAgent(), SupportOptions() },
		supportScripts()...)
}

// CorrectThenTranslate is seed 000's scenario B: fix the text, then translate it. The
// two predictors share no field, which is why each keeps its own history.
type CorrectThenTranslate struct {
	TargetLanguage string
	Corrector      *core.Predict // text -> corrected
	Translator     *core.Predict // corrected, target_language -> translated
}

// NewCorrectThenTranslate builds the pipeline for a target language ("French").
func NewCorrectThenTranslate(targetLanguage string) *CorrectThenTranslate {
	return &CorrectThenTranslate{
		TargetLanguage: targetLanguage,
		Corrector: &core.Predict{Signature: sig.New("CorrectText", "",
			[]sig.Field{str("text", "")}, []sig.Field{str("corrected", "")})},
		Translator: &core.Predict{Signature: sig.New("TranslateText", "",
			[]sig.Field{str("corrected", ""), str("target_language", "")}, []sig.Field{str("translated", "")})},
	}
}

// Submodules names the predictors for sessions.
func (a *CorrectThenTranslate) Submodules() []core.Sub {
	return []core.Sub{{Name: "corrector", Module: a.Corrector}, {Name: "translator", Module: a.Translator}}
}

// Forward corrects, then translates; it returns both texts.
func (a *CorrectThenTranslate) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	v, err := need("CorrectThenTranslate", in, "text")
	if err != nil {
		return nil, err
	}
	c, err := a.Corrector.Forward(ctx, sig.NewMap("text", v[0]))
	if err != nil {
		return nil, err
	}
	t, err := a.Translator.Forward(ctx, sig.NewMap("corrected", c.Get("corrected"), "target_language", a.TargetLanguage))
	if err != nil {
		return nil, err
	}
	return core.NewPrediction("corrected", c.Get("corrected"), "translated", t.Get("translated")), nil
}

// TranslateOptions: keep, cross_turn (seed §6.4 scope A/C: the translator keeps its
// terminology consistent because it sees its own earlier translations).
func TranslateOptions() core.Options { return SupportOptions() }

func translateAgent(lang string) Agent {
	return goAgent("CorrectThenTranslate",
		"Fixes spelling and grammar, then translates into "+lang+". Corrector and translator each remember their own earlier calls.",
		[]string{"text"}, []string{"corrected", "translated"},
		func() (core.Module, core.Options) { return NewCorrectThenTranslate(lang), TranslateOptions() },
		translateScripts()...)
}
