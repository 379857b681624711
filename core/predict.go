package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Predict is DSPy's Predict: a signature rendered by an adapter and sent to a model.
type Predict struct {
	Signature *sig.Signature
	Adapter   adapter.Adapter // nil means ChatAdapter
	LM        lm.LM           // nil means the model in the context (WithLM)
	Demos     []*sig.Map
	Params    lm.Params
	Type      string // "Predict" (default) or "ChainOfThought"
	// NoJSONFallback turns off the retry with the JSONAdapter after a ChatAdapter
	// failure (DSPy's use_json_adapter_fallback=False).
	NoJSONFallback bool

	// requests keeps what the predictor's next request repeats of its last
	// (adapter.RequestCache)
	requests adapter.RequestCache
}

// NewPredict parses a signature string ("question -> answer") into a predictor.
func NewPredict(signature string) (*Predict, error) {
	s, err := sig.Parse(signature)
	if err != nil {
		return nil, err
	}
	return &Predict{Signature: s}, nil
}

// MustPredict is NewPredict for signatures known to be valid.
func MustPredict(signature string) *Predict {
	p, err := NewPredict(signature)
	if err != nil {
		panic(err)
	}
	return p
}

// ChainOfThought returns a predictor whose signature gains a `reasoning` output first,
// as DSPy's ChainOfThought does (instructions unchanged, no description).
func ChainOfThought(s *sig.Signature) *Predict {
	return &Predict{Signature: s.PrependOutput(sig.Field{Name: "reasoning", Type: sig.TStr}), Type: "ChainOfThought"}
}

// MustChainOfThought parses a signature string into a ChainOfThought predictor.
func MustChainOfThought(signature string) *Predict {
	s, err := sig.Parse(signature)
	if err != nil {
		panic(err)
	}
	return ChainOfThought(s)
}

// TypeName is "Predict" or "ChainOfThought".
func (p *Predict) TypeName() string {
	if p.Type == "" {
		return "Predict"
	}
	return p.Type
}

func (p *Predict) adapterOrDefault() adapter.Adapter {
	if p.Adapter != nil {
		return p.Adapter
	}
	return adapter.Chat{}
}

// Forward runs the predictor. Inside a session the session decides the history it sees
// and records the call; outside, a History value under the signature's history field is used
// as given.
func (p *Predict) Forward(ctx context.Context, inputs *sig.Map) (*Prediction, error) {
	if f := frameFrom(ctx); f != nil {
		return f.root.predictorCall(ctx, f, p, inputs)
	}
	c, err := p.invoke(ctx, p.Signature, inputs.Clone(), "", nil)
	if err != nil {
		return nil, err
	}
	return &Prediction{Fields: c.Outputs}, nil
}

type lmKey struct{}

// WithLM sets the model predictors use when they have none of their own.
func WithLM(ctx context.Context, m lm.LM) context.Context { return context.WithValue(ctx, lmKey{}, m) }

// LMFrom returns the context's model, or nil.
func LMFrom(ctx context.Context) lm.LM {
	m, _ := ctx.Value(lmKey{}).(lm.LM)
	return m
}

// ErrNoLM is returned when a predictor has no model and the context carries none.
var ErrNoLM = errors.New("no language model: set Predict.LM or use core.WithLM")

// invoke renders, calls the model and parses, filling a call record. The record is
// returned even on error (with Error set) so failed calls are visible too. in holds the
// inputs plus, when history is injected, the history value under its field.
//
// Like DSPy's ChatAdapter, a ChatAdapter call that fails in format or parse (not in the
// model call: that would pay twice for a network failure) is retried once with the
// JSONAdapter, unless NoJSONFallback is set. The record then describes the JSON request;
// the failed chat request stays in its Attempts.
func (p *Predict) invoke(ctx context.Context, eff *sig.Signature, in *sig.Map, path string, hist *sig.History) (*trace.Call, error) {
	ad := p.adapterOrDefault()
	model := p.LM
	if model == nil {
		model = LMFrom(ctx)
	}
	// The call's inputs without the history (which is shared, never copied: it holds
	// the whole conversation); the rest is the caller's to change later, so copied.
	hf := eff.HistoryField()
	callIn := copyMap(in, func(k string) bool { return hf == "" || k != hf }, "", nil)
	c := &trace.Call{Path: path, PredictorType: p.TypeName(), Inputs: callIn, Adapter: ad.Name(), Params: p.Params, Started: time.Now().UTC()}
	if hist != nil {
		c.History = hist.Share()
	}
	fail := func(err error) (*trace.Call, error) {
		c.Error = err.Error()
		c.Latency = time.Since(c.Started)
		return c, err
	}
	if model == nil {
		return fail(fmt.Errorf("predictor %s: %w", displayPath(path), ErrNoLM))
	}
	x := exchange{p: p, model: model, eff: eff, in: in, path: path, callIn: callIn}
	err := x.run(ctx, c, ad)
	if err != nil && x.stage != stageCall && p.fallsBack(ad) {
		failed := c.Tries
		if len(failed) == 0 {
			failed = []lm.Try{{N: 1}}
		}
		last := &failed[len(failed)-1]
		last.Err, last.Retrying = err.Error(), true
		for i := range failed {
			failed[i].Adapter = ad.Name()
		}
		last.Messages, last.Completion = c.Messages.Slice(), c.Completion
		usage := c.Usage
		*c = trace.Call{ID: c.ID, Path: c.Path, PredictorType: c.PredictorType, Inputs: c.Inputs, History: c.History,
			Params: c.Params, Started: c.Started}
		c.Adapter = adapter.JSON{}.Name()
		err2 := x.run(ctx, c, adapter.JSON{})
		for i := range c.Tries {
			c.Tries[i].N += len(failed)
		}
		c.Tries = append(failed, c.Tries...)
		c.Usage = addUsage(usage, c.Usage)
		if err2 != nil {
			err = fmt.Errorf("%w (after the JSON adapter fallback, which also failed: %w)", err, err2)
		} else {
			err = nil
		}
	}
	if err != nil {
		return fail(err)
	}
	c.Latency = time.Since(c.Started)
	return c, nil
}

// fallsBack says whether a failure with ad is retried with the JSONAdapter (DSPy's
// use_json_adapter_fallback, on by default for the ChatAdapter only).
func (p *Predict) fallsBack(ad adapter.Adapter) bool {
	if p.NoJSONFallback {
		return false
	}
	switch ad.(type) {
	case adapter.Chat, *adapter.Chat:
		return true
	}
	return false
}

func addUsage(a, b lm.Usage) lm.Usage {
	return lm.Usage{PromptTokens: a.PromptTokens + b.PromptTokens, CompletionTokens: a.CompletionTokens + b.CompletionTokens,
		CachedTokens: a.CachedTokens + b.CachedTokens, TotalTokens: a.TotalTokens + b.TotalTokens}
}

// Stages of one request, so a failure can be told apart (only format and parse
// failures fall back to another adapter).
const (
	stageFormat = iota
	stageCall
	stageParse
)

// exchange is one request of a call with one adapter: format, call, parse.
type exchange struct {
	p      *Predict
	model  lm.LM
	eff    *sig.Signature
	in     *sig.Map
	path   string
	callIn *sig.Map
	stage  int // where the last run stopped
}

// run fills c with the request, the answer and the outputs; it returns a wrapped error
// naming the predictor when a stage fails.
func (x *exchange) run(ctx context.Context, c *trace.Call, ad adapter.Adapter) error {
	path := x.path
	x.stage = stageFormat
	msgs, shared, err := adapter.FormatList(ad, adapter.Request{Signature: x.eff, Demos: x.p.Demos, Inputs: x.in, OuterHistory: outerHistoryFrom(ctx), Cache: &x.p.requests})
	if err != nil {
		return fmt.Errorf("predictor %s: format: %w", displayPath(path), err)
	}
	c.Messages = recordedRequest(ctx, path, msgs, shared)
	c.Model = x.model.Name()
	req := lm.Request{Messages: msgs, Params: x.p.Params, Meta: lm.Meta{
		Path: path, PredictorType: x.p.TypeName(), Adapter: ad.Name(), Signature: x.eff, Inputs: x.callIn,
	}}
	if pm, ok := ad.(interface{ ParseModeName() string }); ok {
		req.Meta.ParseMode = pm.ParseModeName()
	}
	if obs := observerFrom(ctx); obs != nil {
		obs.CallStarted(path, c)
		req.OnDelta = func(d string) { obs.Delta(path, d) }
		req.OnTry = func(t lm.Try) { obs.Try(path, t) }
	}
	x.stage = stageCall
	resp, err := x.model.Call(ctx, req)
	c.Tries = resp.Tries
	c.Usage = resp.Usage
	c.RawRequest = string(resp.RequestBody)
	c.RawResponse = string(resp.ResponseBody)
	if err != nil {
		var pe *lm.PartialError
		if errors.As(err, &pe) {
			c.Completion = pe.Partial
		}
		return fmt.Errorf("predictor %s: %w", displayPath(path), err)
	}
	c.Completion = resp.Text
	if resp.Model != "" {
		c.Model = resp.Model
	}
	x.stage = stageParse
	out, err := ad.Parse(x.eff, resp.Text)
	if err != nil {
		return fmt.Errorf("predictor %s: %w", displayPath(path), err)
	}
	c.Outputs = out
	return nil
}

func displayPath(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// Observer watches inner calls live (the workbench shows streaming text and retries).
// Methods may be called from several goroutines at once.
type Observer interface {
	CallStarted(path string, c *trace.Call)
	Delta(path, delta string)
	Try(path string, t lm.Try)
	CallFinished(path string, c *trace.Call)
}

type observerKey struct{}

// WithObserver attaches an observer to every call made under ctx.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

func observerFrom(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}
